"""Options and outputs shared by every ``nandlab reproduce <paper>`` command."""

from __future__ import annotations

import functools
import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

import click

from nandlab.reproduce.fmt import (
    EXIT_CHECK_FAILED,
    EXIT_USER_ERROR,
    RESULT_FILE,
    err_console,
    fmt_num,
    fmt_pct,
    out_console,
    plural,
)
from nandlab.reproduce.load import TARGET_BAND, time_scale_callback
from nandlab.reproduce.output import runs_json, write_json, write_result

if TYPE_CHECKING:
    import polars as pl

    from nandlab.experiment import GridStats, RunSpec

F = TypeVar("F", bound=Callable[..., Any])

__all__ = [
    "EXIT_CHECK_FAILED",
    "EXIT_USER_ERROR",
    "RESULT_FILE",
    "CommonOptions",
    "TraceChoice",
    "common_options",
    "err_console",
    "fmt_num",
    "fmt_pct",
    "out_console",
    "plural",
    "run_planned",
    "runs_json",
    "write_json",
    "write_result",
]


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


def traces_option(
    help: str = "Directory of traces, searched recursively by their usual file names "
    "(repeatable). Default: the bundled samples and the workspace's captured traces.",
) -> Callable[[F], F]:
    """``--traces DIR`` (repeatable; existing directories)."""
    return click.option(
        "--traces",
        "traces",
        multiple=True,
        type=click.Path(file_okay=False, exists=True, path_type=Path),
        metavar="DIR",
        help=help,
    )


def processes_option() -> Callable[[F], F]:
    """``--processes / -j N``."""
    return click.option(
        "--processes",
        "-j",
        type=click.IntRange(min=1),
        default=None,
        help="Worker processes (default: one per CPU; 1 runs inline).",
    )


def progress_option() -> Callable[[F], F]:
    """``--progress/--no-progress`` (default: on when stderr is a terminal)."""
    return click.option(
        "--progress/--no-progress",
        default=None,
        help="Progress of the runs (default: on when stderr is a terminal).",
    )


def out_option(what: str) -> Callable[[F], F]:
    """``--out DIR`` (default ``None``: the command's ``./nandlab-out/<paper>``); ``what``: what
    goes there and the default."""
    return click.option(
        "--out",
        "out",
        type=click.Path(file_okay=False, path_type=Path),
        default=None,
        help=f"{what} Re-running with the same --out skips finished runs.",
    )


def json_option(what: str) -> Callable[[F], F]:
    """``--json OUT`` (``-``: stdout; default ``None``: ``OUT_DIR/result.json``); ``what``: what
    is written."""
    return click.option(
        "--json",
        "json_out",
        metavar="OUT",
        default=None,
        help=f"{what} ('-': stdout; default: OUT_DIR/{RESULT_FILE}).",
    )


def common_options(paper: str) -> Callable[[F], F]:
    """Decorator adding ``--traces --quick --out --json --processes --scheduler --progress
    --time-scale`` to a command and passing them on as one :class:`CommonOptions` argument
    named ``opts``."""

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
        @traces_option()
        @click.option("--quick", is_flag=True, help="A small CI-sized subset (minutes).")
        @out_option(f"Results, figures and runs.parquet (default: ./nandlab-out/{paper}).")
        @json_option("Write paper, runs (full reports) and table as JSON to OUT")
        @processes_option()
        @click.option(
            "--scheduler",
            metavar="ADDR",
            default=None,
            help="Run on a Dask cluster at ADDR (tcp://host:port) instead of local processes "
            "(needs pip install 'nandlab[dask]'; traces must be readable on the workers).",
        )
        @progress_option()
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


#: MSR Cambridge servers in the SNIA IOTTA archive by volume prefix (``CAMRESHMSA01-lvm0.csv`` is
#: hm_0; two names where both are in use).
MSR_HOSTS: dict[str, tuple[str, ...]] = {
    "hm": ("CAMRESHMSA01",),
    "mds": ("CAMRESWMSA03",),
    "proj": ("CAM-02-SRV",),
    "prxy": ("CAM-01-SRV",),
    "rsrch": ("CAMRESIRA01",),
    "src1": ("CAMRESSDPA03",),
    "src2": ("CAMRESSDPA03",),
    "stg": ("CAMRESSTGA01",),
    "ts": ("CAMRESTSA01",),
    "usr": ("CAMRESUSRA01", "CAMRESSDPA03-usr"),
    "wdev": ("CAMWEBDEV",),
    "web": ("CAMRESWEBA03",),
}


def msr_patterns(short: str, vol: int, *alias: str) -> list[str]:
    """Usual file names of an MSR Cambridge volume: ``hm_0.csv.gz``, ``hm0.csv``, the SNIA
    IOTTA archive's ``CAMRESHMSA01-lvm0.csv``, and any ``alias.csv``."""
    pats = [f"{short}_{vol}.csv*", f"{short}{vol}.csv*"]
    pats += [f"{host}-lvm{vol}.csv*" for host in MSR_HOSTS[short]]
    return pats + [f"{a}.csv*" for a in alias]


def known_traces(*names: str, **aliases: Sequence[str]) -> dict[str, list[str]]:
    """A paper's trace table by the usual file names of each trace: an MSR Cambridge volume
    (``hm_0``, :func:`msr_patterns`; ``aliases`` adds other names, e.g. the paper's ``src0``)
    or a UMass SPC trace (``Financial1.spc`` and its conversions)."""
    out: dict[str, list[str]] = {}
    for name in names:
        short, _, vol = name.rpartition("_")
        if short in MSR_HOSTS and vol.isdigit():
            out[name] = msr_patterns(short, int(vol), *aliases.get(name, ()))
        else:
            out[name] = [f"{name}{ext}" for ext in (".spc*", ".csv*", ".ascii*", ".trace*")]
    return out


#: Our stand-ins by name: the captured real-application traces (``shared/traces/captured``)
#: and the bundled excerpts (``nandlab/data``): file names, and the paper trace an excerpt is
#: cut from (a reproduction that finds the full trace runs it instead).
STANDINS: dict[str, tuple[list[str], str | None]] = {
    "pgbench_wh": (["pgbench_wh.csv*"], None),
    "pgbench_rw": (["pgbench_rw.csv*"], None),
    "pgbench_ro": (["pgbench_ro.part1.csv*", "pgbench_ro.csv*"], None),
    "devtree": (["devtree.csv*"], None),
    "hm_0 excerpt": (["msr_hm_0_sample1000.csv*"], "hm_0"),
    "Financial1 excerpt": (["Financial1_first10000*"], "Financial1"),
    "WebSearch1 excerpt": (["WebSearch1_first24783*"], "WebSearch1"),
    "pgbench_rw slice": (["pgbench_rw_slice.csv*"], None),
}
CAPTURED = ("pgbench_wh", "pgbench_rw", "pgbench_ro", "devtree")
EXCERPTS = ("hm_0 excerpt", "Financial1 excerpt", "WebSearch1 excerpt")


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


def reports_by_key(df: pl.DataFrame) -> dict[str, tuple[dict[str, Any] | None, str | None]]:
    """``key -> (report or None, error or None)`` for the rows of a grid's DataFrame."""
    out: dict[str, tuple[dict[str, Any] | None, str | None]] = {}
    for r in df.iter_rows(named=True):
        out[r["key"]] = (json.loads(r["report"]) if r["report"] else None, r["error"])
    return out


def exit_on_failures(
    errors: Sequence[tuple[str, str, str]], checks: Sequence[Mapping[str, Any]], out: Path
) -> None:
    """Report failed runs (``(trace, label, error)``) and the checks, and exit with
    :data:`EXIT_CHECK_FAILED` if a run failed or a sanity check did not pass (a comparison
    with the paper, kind ``"paper"``, is a result: it is reported, never an exit status)."""
    import sys

    failed = False
    if errors:
        failed = True
        first = errors[0]
        err_console.print(
            f"[red]{len(errors)} run(s) failed[/] (re-run to retry; see the error column of "
            f"{out / 'runs.parquet'}); first: {first[0]} {first[1]}: {first[2]}"
        )
    for c in checks:
        if c.get("kind", "sanity") != "sanity" or c.get("passed") is None:
            continue
        if c["passed"]:
            err_console.print(f"[green]check passed:[/] {c['name']}: {c['detail']}")
        else:
            failed = True
            err_console.print(f"[red]check FAILED:[/] {c['name']}: {c['detail']}")
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
