"""Object-device runs of a reproduction (``nandlab reproduce dmm``): each run in this process
(each takes seconds), its report cached in ``OUT/runs`` under a hash of what it ran, so an
interrupted reproduction resumes; every run also goes into ``OUT/runs.parquet``, the runs
table of every reproduction. The object device's runs are closed-loop at queue depth 1, so no
load level has to be chosen (``docs/reproductions.md``, "How every reproduction is run"): they
do not go through the grid of the block device (:func:`~nandlab.reproduce.framework.run`).
"""

from __future__ import annotations

import hashlib
import inspect
import json
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import click

from nandlab import osd as _osd
from nandlab._core import SimError
from nandlab.reproduce.common import json_option, out_option, progress_option, traces_option
from nandlab.reproduce.fmt import (
    EXIT_CHECK_FAILED,
    EXIT_USER_ERROR,
    RESULT_FILE,
    err_console,
    out_console,
    size_label,
)
from nandlab.reproduce.framework import print_checks, print_table
from nandlab.reproduce.headline import print_rows
from nandlab.reproduce.output import emit


class Runner:
    """Runs (in this process: each is seconds) with a per-run JSON cache in OUT/runs, so an
    interrupted reproduction resumes. A run is a dict: ``kind`` (``"trace"``: a file-level
    trace, :func:`nandlab.osd.run`; ``"bench"``: DMMbench, :func:`nandlab.osd.bench`), the
    preset, its overrides (pairs), ``label`` and what the kind takes."""

    def __init__(self, out: Path, progress: bool) -> None:
        self.dir = out / "runs"
        self.dir.mkdir(parents=True, exist_ok=True)
        self.progress = progress
        self.done = 0
        self.cached = 0
        self.failed: list[str] = []
        #: every run of this reproduction: (key, what, report), for runs.parquet
        self.runs: list[tuple[str, dict[str, Any], dict[str, Any]]] = []
        self.t0 = time.time()

    def result_json(self) -> dict[str, Any]:
        """The result's ``failed_runs`` and ``grid`` (runs executed, cached, wall time)."""
        grid = {"executed": self.done, "cached": self.cached, "wall_s": time.time() - self.t0}
        return {"failed_runs": self.failed, "grid": grid}

    def _key(self, what: dict[str, Any]) -> Path:
        h = hashlib.sha256(json.dumps(what, sort_keys=True, default=str).encode()).hexdigest()
        return self.dir / f"{h[:20]}.json"

    def trace_stats(self, path: Path) -> dict[str, Any]:
        """The file-level trace's statistics, cached beside the runs (by size and mtime)."""
        st = path.stat()
        p = self._key({"stats": str(path.resolve()), "size": st.st_size, "mtime": st.st_mtime_ns})
        if p.is_file():
            cached: dict[str, Any] = json.loads(p.read_text())
            return cached
        stats = dict(_osd.trace_stats(path))
        tmp = p.with_suffix(".tmp")
        tmp.write_text(json.dumps(stats))
        tmp.replace(p)
        return stats

    def run(self, what: dict[str, Any]) -> dict[str, Any]:
        rep = self._run(what)
        self.runs.append((self._key(what).stem, what, rep))
        return rep

    def _run(self, what: dict[str, Any]) -> dict[str, Any]:
        p = self._key(what)
        if p.is_file():
            self.cached += 1
            rep: dict[str, Any] = json.loads(p.read_text())
            return rep
        t0 = time.time()
        ov = dict(what["overrides"])
        try:
            if what["kind"] == "trace":
                rep = _osd.run(
                    what["preset"], what["trace"], overrides=ov, max_commands=what["max_commands"]
                )
            else:
                rep = _osd.bench(
                    what["preset"],
                    what["pattern"],
                    what["request_bytes"],
                    what["total_bytes"],
                    overrides=ov,
                )
        except SimError as e:
            # a failed run is reported (and not cached: a fixed device reruns it)
            msg = " ".join(str(e).split())
            self.failed.append(f"{what.get('label', '')}: {msg}")
            if self.progress:
                click.echo(f"  {what.get('label', '')} FAILED: {msg}", err=True)
            return {"error": msg}
        tmp = p.with_suffix(".tmp")
        tmp.write_text(json.dumps(rep))
        tmp.replace(p)
        self.done += 1
        if self.progress:
            click.echo(f"  {what.get('label', '')} ({time.time() - t0:.1f} s)", err=True)
        return rep


def find_traces(dirs: Sequence[Path], patterns: Mapping[str, Sequence[str]]) -> dict[str, Path]:
    """Traces by name: the first file under ``dirs`` (searched recursively, in order) that
    matches one of the name's ``patterns``."""
    found: dict[str, Path] = {}
    for name, pats in patterns.items():
        for d in dirs:
            hit = next((p for pat in pats for p in sorted(Path(d).rglob(pat)) if p.is_file()), None)
            if hit is not None:
                found[name] = hit
                break
    return found


def response_ms(rep: dict[str, Any], cmd: str) -> float | None:
    """A run's mean response of command ``cmd`` (``write``, ``read``, ``all``), ms."""
    if "error" in rep:
        return None
    r = rep.get("response", {}).get(cmd)
    return r["mean_us"] / 1000 if r and r.get("count") else None


def page_writes(rep: dict[str, Any], ty: str | None = None, src: str = "total") -> int | None:
    """A run's page writes: of type ``ty`` (``data``, ``index``, ``onode``; ``None``: all)
    from source ``src`` (``total``, ``gc``, ...)."""
    if "error" in rep:
        return None
    pw = rep["page_writes"]
    if ty is None:
        return (
            int(pw["total"])
            if src == "total"
            else sum(int(pw[t][src]) for t in ("data", "index", "onode"))
        )
    return int(pw[ty][src])


def run_numbers(rep: dict[str, Any]) -> dict[str, Any]:
    """The numbers of a run's report: page writes (all, by type, by GC), erases, write and
    overall response (ms), the diff cache's hit rate, commands, DRAM and file-system
    statistics, the error of a failed run."""
    return {
        "page_writes": page_writes(rep),
        **{f"{t}_writes": page_writes(rep, t) for t in ("data", "index", "onode")},
        "gc_writes": page_writes(rep, None, "gc"),
        "erases": rep.get("erases", {}).get("total"),
        "write_response_ms": response_ms(rep, "write"),
        "all_response_ms": response_ms(rep, "all"),
        "hit_rate": rep.get("diff_cache", {}).get("hit_rate"),
        **{k: rep.get(k) for k in ("commands", "dram", "objfs", "error")},
    }


def write_runs(out: Path, runner: Runner) -> list[dict[str, Any]]:
    """Every run of this reproduction in ``OUT/runs.parquet`` (the runs table of every
    reproduction; the reports are the object device's); returns the runs for the result JSON
    (each with its report)."""
    from nandlab.experiment import RUNS_FILE, rows_frame

    rows = {}
    for key, what, rep in runner.runs:
        rows[key] = {
            "key": key, "trace": Path(what["trace"]).name if what["kind"] == "trace" else
            f"DMMbench {what['pattern']} {size_label(what['request_bytes'])}",
            "trace_path": what.get("trace"), "scheme": what["preset"], "config": what["preset"],
            "label": what["label"], "params": json.dumps(dict(what["overrides"]), sort_keys=True),
            "report": json.dumps(rep) if "error" not in rep else None, "error": rep.get("error"),
        }  # fmt: skip
    tmp = out / f".{RUNS_FILE}.tmp"
    rows_frame(rows.values()).write_parquet(tmp)
    tmp.replace(out / RUNS_FILE)
    return [
        {**r, "params": json.loads(r["params"]), "report": json.loads(r["report"] or "null")}
        for r in rows.values()
    ]


@dataclass
class OsdOptions:
    """The options of an object-device reproduction's command (:func:`command`)."""

    paper: str
    #: where its traces are searched (``--traces``, default: the workspace's captured traces)
    dirs: list[Path]
    quick: bool
    out: Path
    json_out: str
    progress: bool

    @property
    def quiet(self) -> bool:
        """True when the JSON goes to stdout (tables are then not printed)."""
        return self.json_out == "-"


def command(
    paper: str,
    body: Callable[[OsdOptions, Runner], dict[str, Any]],
    *,
    help: str,
    traces_help: str,
    quick_help: str,
    headline_title: str,
    checks_title: str,
    missing: str,
) -> click.Command:
    """The ``nandlab reproduce <paper>`` command of an object-device reproduction: ``--traces
    --quick --out --json --progress``. ``body(options, runner)`` runs it (a :class:`Runner`
    caching in ``OUT/runs``) and returns its result (the entries of every reproduction's
    result JSON, and ``traces``: the traces found); the command adds the runs
    (:func:`write_runs`), writes it, prints its tables, headline and checks (``missing``
    when no trace was found) and the closing line. Exits 1 when a run failed, 2 when
    ``--traces`` gave no trace."""

    @click.command(paper, help=inspect.cleandoc(help))
    @traces_option(traces_help)
    @click.option("--quick", is_flag=True, help=quick_help)
    @out_option(f"Results and the per-run cache (default: ./nandlab-out/{paper}).")
    @json_option("Write the tables and every run's report as JSON to OUT")
    @progress_option()
    def cmd(
        traces: tuple[Path, ...],
        quick: bool,
        out: Path | None,
        json_out: str | None,
        progress: bool | None,
    ) -> None:
        from nandlab._interrupt import on_interrupt
        from nandlab.experiment import shared_traces_dir

        out = out if out is not None else Path("nandlab-out") / paper
        dirs = list(traces)
        if not dirs:
            d = shared_traces_dir()
            dirs = [d] if d is not None and d.is_dir() else []
        json_target = json_out if json_out is not None else str(out / RESULT_FILE)
        show = progress if progress is not None else err_console.is_terminal
        o = OsdOptions(paper, dirs, quick, out, json_target, show)
        on_interrupt(f"finished runs stay in {out / 'runs'}; the same command resumes")
        runner = Runner(out, show)
        result = body(o, runner)
        result["runs"] = write_runs(out, runner)
        emit(json_target, result)
        if not o.quiet:
            for t in result["tables"]:
                print_table(t)
            print_rows(result["headline"], headline_title)
            print_checks(result["checks"], checks_title)
            if not result["traces"]:
                out_console.print(missing)
            out_console.print(
                f"{runner.done} runs executed, {runner.cached} from the cache in {out / 'runs'}; "
                f"{time.time() - runner.t0:.1f} s; result in {json_target}"
            )
        if runner.failed:
            for f in runner.failed:
                click.secho(f"run failed: {f}", fg="red", err=True)
            raise click.exceptions.Exit(EXIT_CHECK_FAILED)
        if not result["traces"] and traces:
            raise click.exceptions.Exit(EXIT_USER_ERROR)

    return cmd


__all__ = [
    "OsdOptions",
    "Runner",
    "command",
    "find_traces",
    "page_writes",
    "response_ms",
    "run_numbers",
    "write_runs",
]
