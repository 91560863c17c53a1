"""Options and outputs shared by every ``nandlab reproduce <paper>`` command."""

from __future__ import annotations

import functools
import json
import math
import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

import click

from nandlab._console import make_console

if TYPE_CHECKING:
    import polars as pl

    from nandlab.experiment import GridStats, RunSpec

F = TypeVar("F", bound=Callable[..., Any])

#: Tables go to stdout; when it is not a terminal (a log, CI) they are plain text at full width
#: (:mod:`nandlab._console`).
out_console = make_console()
err_console = make_console(stderr=True)

#: Exit status when the reproduction ran but its check failed (or runs failed).
EXIT_CHECK_FAILED = 1
#: Exit status of a user error (as everywhere in the CLI): bad input, missing dependency.
EXIT_USER_ERROR = 2
#: The result JSON a reproduction writes into its out directory when no --json is given.
RESULT_FILE = "result.json"


@dataclass
class CommonOptions:
    """The options every ``reproduce`` command takes."""

    paper: str
    traces: list[Path]
    quick: bool
    out: Path
    json_out: str | None
    processes: int | None
    scheduler: str | None
    progress: bool
    #: load levels: ``"auto"`` and/or time scales (see :mod:`nandlab.reproduce.load`)
    time_scales: list[float | str] = field(default_factory=lambda: ["auto"])

    @property
    def quiet(self) -> bool:
        """True when the JSON goes to stdout (tables are then not printed)."""
        return self.json_out == "-"


def common_options(paper: str) -> Callable[[F], F]:
    """Decorator adding ``--traces --quick --out --json --processes --scheduler --progress
    --time-scale`` to a command and passing them on as one :class:`CommonOptions` argument
    named ``opts``."""
    from nandlab.reproduce.load import TARGET_BAND, time_scale_callback

    def deco(fn: F) -> F:
        @click.option(
            "--time-scale",
            "time_scales",
            default="auto",
            show_default=True,
            metavar="K[,K...]",
            callback=time_scale_callback,
            help="Load level: trace timestamps (and periods in trace time) x K. 'auto' picks K "
            "per trace so that the baseline's offered die load is at most "
            f"{TARGET_BAND[1]:.0%} (the smallest of 1, 2, 5, 10, 20, ...); a list such as "
            "1,10,100 or auto,1 sweeps levels. Runs whose baseline is saturated are marked "
            "overloaded and left out of the headline means (docs/reproductions.md).",
        )
        @click.option(
            "--traces",
            "traces",
            multiple=True,
            type=click.Path(file_okay=False, exists=True, path_type=Path),
            metavar="DIR",
            help="Directory of traces, searched recursively by their usual file names "
            "(repeatable). Default: the bundled samples and the workspace's captured traces.",
        )
        @click.option("--quick", is_flag=True, help="A small CI-sized subset (minutes).")
        @click.option(
            "--out",
            "out",
            type=click.Path(file_okay=False, path_type=Path),
            default=None,
            help=f"Results, figures and runs.parquet (default: ./nandlab-out/{paper}). "
            "Re-running with the same --out skips finished runs.",
        )
        @click.option(
            "--json",
            "json_out",
            metavar="OUT",
            default=None,
            help="Write paper, runs (full reports) and table as JSON to OUT ('-': stdout; "
            "default: OUT_DIR/result.json).",
        )
        @click.option(
            "--processes",
            "-j",
            type=click.IntRange(min=1),
            default=None,
            help="Worker processes (default: one per CPU; 1 runs inline).",
        )
        @click.option(
            "--scheduler",
            metavar="ADDR",
            default=None,
            help="Run on a Dask cluster at ADDR (tcp://host:port) instead of local processes "
            "(needs pip install 'nandlab[dask]'; traces must be readable on the workers).",
        )
        @click.option(
            "--progress/--no-progress",
            default=None,
            help="Progress bar over runs (default: on when stderr is a terminal).",
        )
        @functools.wraps(fn)
        def wrapper(
            traces: tuple[Path, ...],
            quick: bool,
            out: Path | None,
            json_out: str | None,
            processes: int | None,
            scheduler: str | None,
            progress: bool | None,
            time_scales: list[float | str],
            **kw: Any,
        ) -> Any:
            from nandlab.experiment import default_trace_dirs

            out = out if out is not None else Path("nandlab-out") / paper
            opts = CommonOptions(
                paper=paper,
                traces=list(traces) if traces else default_trace_dirs(),
                quick=quick,
                out=out,
                # without --json the result (tables, headline) still goes to OUT/result.json,
                # where `nandlab report OUT` finds it
                json_out=json_out if json_out is not None else str(out / RESULT_FILE),
                processes=processes,
                scheduler=scheduler,
                progress=progress if progress is not None else err_console.is_terminal,
                time_scales=time_scales,
            )
            from nandlab._interrupt import on_interrupt
            from nandlab.experiment import ExperimentError

            on_interrupt(
                f"finished runs stay in {out / 'runs.parquet'}; the same command resumes; "
                f"{RESULT_FILE} and the figures are written at the end"
            )

            try:
                return fn(opts=opts, **kw)
            except ExperimentError as e:
                click.secho(f"error: {e}", fg="red", err=True)
                raise click.exceptions.Exit(EXIT_USER_ERROR) from None

        return wrapper  # type: ignore[return-value]

    return deco


# --------------------------------------------------------------------------- traces


def msr_patterns(short: str, vol: int, host: str, *alias: str) -> list[str]:
    """Usual file names of an MSR Cambridge volume: ``hm_0.csv.gz``, ``hm0.csv``, the SNIA
    IOTTA archive's ``CAMRESHMSA01-lvm0.csv``, and any ``alias.csv``."""
    pats = [f"{short}_{vol}.csv*", f"{short}{vol}.csv*", f"{host}-lvm{vol}.csv*"]
    for a in alias:
        pats += [f"{a}.csv*"]
    return pats


#: The captured real-application traces (``shared/traces/captured``) by file name.
CAPTURED_PATTERNS: dict[str, list[str]] = {
    "pgbench_wh": ["pgbench_wh.csv*"],
    "pgbench_rw": ["pgbench_rw.csv*"],
    "pgbench_ro": ["pgbench_ro.part1.csv*", "pgbench_ro.csv*"],
    "devtree": ["devtree.csv*"],
}
#: The bundled excerpts' names: the same in every reproduction.
HM0_EXCERPT_NAME = "hm_0 excerpt"
FINANCIAL1_EXCERPT_NAME = "Financial1 excerpt"
#: The bundled excerpts (``nandlab/data``) by file name.
HM0_EXCERPT = ["msr_hm_0_sample1000.csv*"]
FINANCIAL1_EXCERPT = ["Financial1_first10000*"]
WEBSEARCH1_EXCERPT = ["WebSearch1_first24783*"]
PGBENCH_RW_SLICE = ["pgbench_rw_slice.csv*"]


@dataclass
class TraceChoice:
    """A trace a reproduction runs: its name, file, where it came from (e.g. "Table II",
    "captured", "bundled excerpt"), an optional cut to its first requests and the load level
    (time scale K, :mod:`nandlab.reproduce.load`). ``name`` names the (trace, K) instance;
    ``base_name`` the trace itself."""

    name: str
    path: Path
    source: str
    max_requests: int | None = None
    time_scale: float = 1.0
    base_name: str = ""

    def __post_init__(self) -> None:
        if not self.base_name:
            self.base_name = self.name

    def overrides(self) -> dict[str, object]:
        """Config overrides of this instance: the request cut and the time scale (omitted at
        K = 1 so that the run's key is that of an unscaled run)."""
        ov: dict[str, object] = {}
        if self.max_requests:
            ov["host.max_requests"] = self.max_requests
        if self.time_scale != 1.0:
            ov["host.time_scale"] = self.time_scale
        return ov


# --------------------------------------------------------------------------- outputs


def _clean(v: Any) -> Any:
    """JSON-safe: NaN/inf become null, Paths strings, tuples lists."""
    if isinstance(v, float) and not math.isfinite(v):
        return None
    if isinstance(v, Mapping):
        return {str(k): _clean(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [_clean(x) for x in v]
    if isinstance(v, Path):
        return str(v)
    return v


def runs_json(df: pl.DataFrame) -> list[dict[str, Any]]:
    """One object per run: trace, scheme, label, params, its load (die utilisation, offered
    load, queue-wait share, ``overloaded``: :func:`nandlab.reproduce.load.load_info`), full
    report (and error, key)."""
    from nandlab.reproduce.load import load_info

    out = []
    for r in df.iter_rows(named=True):
        report = json.loads(r["report"]) if r["report"] else None
        out.append(
            {
                "trace": r["trace"],
                "scheme": r["scheme"],
                "label": r["label"],
                "params": json.loads(r["params"]) if r["params"] else {},
                "load": load_info(report),
                "report": report,
                "error": r["error"],
                "key": r["key"],
            }
        )
    return out


def write_json(
    target: str | None,
    paper: str,
    runs: pl.DataFrame,
    table: Sequence[Mapping[str, Any]],
    **extra: Any,
) -> dict[str, Any] | None:
    """Write ``{"paper", "runs", "table", **extra}`` to ``target`` (``-``: stdout)."""
    if target is None:
        return None
    obj: dict[str, Any] = {"paper": paper, "runs": runs_json(runs), "table": list(table)}
    obj.update(extra)
    obj = _clean(obj)
    text = json.dumps(obj, indent=1)
    if target == "-":
        click.echo(text)
    else:
        p = Path(target)
        if p.parent != Path():
            p.parent.mkdir(parents=True, exist_ok=True)
        tmp = p.with_name(f".{p.name}.tmp-{os.getpid()}")
        tmp.write_text(text + "\n", encoding="utf-8")
        os.replace(tmp, p)
    return obj


def plural(n: int, noun: str, nouns: str | None = None) -> str:
    """``1 trace``, ``2 traces`` (``nouns``: an irregular plural)."""
    return f"{n:,} {noun if n == 1 else (nouns or noun + 's')}"


def fmt_num(v: Any, digits: int = 3) -> str:
    """A table cell: ``—`` for missing, thousands separators, ``digits`` significant-ish."""
    if v is None or (isinstance(v, float) and not math.isfinite(v)):
        return "—"
    if isinstance(v, bool):
        return str(v).lower()
    if isinstance(v, int):
        return f"{v:,}"
    if isinstance(v, float):
        if abs(v) >= 1000:
            return f"{v:,.0f}"
        if abs(v) >= 100:
            return f"{v:.1f}"
        return f"{v:.{digits}f}" if abs(v) < 10 else f"{v:.2f}"
    return str(v)


def fmt_pct(v: float | None, signed: bool = True) -> str:
    """A relative change as ``-12.3 %``; ``—`` when undefined."""
    if v is None or not math.isfinite(v):
        return "—"
    return f"{v * 100:+.1f} %" if signed else f"{v * 100:.1f} %"


# --------------------------------------------------------------------------- run results


def reports_by_key(df: pl.DataFrame) -> dict[str, tuple[dict[str, Any] | None, str | None]]:
    """``key -> (report or None, error or None)`` for the rows of a grid's DataFrame."""
    out: dict[str, tuple[dict[str, Any] | None, str | None]] = {}
    for r in df.iter_rows(named=True):
        out[r["key"]] = (json.loads(r["report"]) if r["report"] else None, r["error"])
    return out


def exit_on_failures(
    errors: Sequence[tuple[str, str, str]], check: Mapping[str, Any] | None, out: Path
) -> None:
    """Report failed runs (``(trace, label, error)``) and the ``--quick`` check, and exit with
    :data:`EXIT_CHECK_FAILED` if a run failed or the check did not pass."""
    import sys

    failed = False
    if errors:
        failed = True
        first = errors[0]
        err_console.print(
            f"[red]{len(errors)} run(s) failed[/] (re-run to retry; see the error column of "
            f"{out / 'runs.parquet'}); first: {first[0]} {first[1]}: {first[2]}"
        )
    if check is not None:
        if check["passed"]:
            err_console.print(f"[green]check passed:[/] {check['message']}")
        else:
            failed = True
            err_console.print(f"[red]check FAILED:[/] {check['message']}")
    if failed:
        sys.exit(EXIT_CHECK_FAILED)


class Planned(Protocol):
    """A planned run of a reproduction: its :class:`~nandlab.experiment.RunSpec` and the key
    :func:`run_planned` fills in."""

    spec: RunSpec
    key: str


def run_planned(
    runs: Sequence[Planned], opts: CommonOptions, *, label: str | None = None
) -> tuple[pl.DataFrame, GridStats]:
    """Key every run (trace digests cached in ``opts.out``), say what will run (``label``:
    ``"<paper>: ..."`` unless quiet) and run the grid. Returns its rows and statistics."""
    from nandlab.experiment import DIGESTS_FILE, GridStats, TraceDigests, run_grid, run_key

    opts.out.mkdir(parents=True, exist_ok=True)
    digests = TraceDigests(opts.out / DIGESTS_FILE)
    for r in runs:
        r.key = run_key(r.spec, digests)
    digests.save()
    if label is not None and not opts.quiet:
        err_console.print(f"{label}, {plural(len({r.key for r in runs}), 'run')} -> {opts.out}")
    st = GridStats()
    df = run_grid(
        [r.spec for r in runs],
        opts.out,
        processes=opts.processes,
        scheduler=opts.scheduler,
        progress=opts.progress and not opts.quiet,
        stats=st,
        console=err_console,
    )
    return df, st


def traces_json(traces: Sequence[Any]) -> list[dict[str, Any]]:
    """The chosen traces (objects with name, path, source, max_requests) for the JSON."""
    return [
        {
            "name": t.name,
            "trace": getattr(t, "base_name", t.name),
            "path": str(t.path),
            "source": t.source,
            "max_requests": t.max_requests,
            "time_scale": getattr(t, "time_scale", 1.0),
        }
        for t in traces
    ]


def grid_json(st: GridStats) -> dict[str, Any]:
    """A grid's run counts and wall time for the JSON."""
    return {
        "runs": st.total,
        "executed": st.executed,
        "skipped": st.skipped,
        "failed": st.failed,
        "wall_s": st.wall_s,
    }


def runs_line(st: GridStats, t0: float, n_figs: int, out: Path) -> str:
    """The closing line: runs executed / reused, wall time, where the results are."""
    import time

    return (
        f"{plural(st.total, 'run')} ({st.executed} executed, {st.skipped} already done, "
        f"{st.failed} failed) in {time.perf_counter() - t0:.1f} s; "
        f"results {out / 'runs.parquet'}; {plural(n_figs, 'figure file')} in {out}"
    )
