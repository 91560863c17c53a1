"""Experiment runner: a grid of (trace x scheme x overrides) runs, resumable, in Parquet.

Every ``nandlab reproduce <paper>`` builds a list of :class:`RunSpec` and hands it to
:func:`run_grid`, which

* keys each run by :func:`run_key` -- a SHA-256 over the config *text* (a preset resolved to its
  file), the scheme, the sorted overrides and the trace file's content digest;
* skips keys already in ``<out>/runs.parquet`` (a run recorded as an error is retried);
* runs the rest in a process pool (or on a Dask cluster with ``scheduler=``), each worker calling
  :func:`nandlab.simulate`;
* appends each finished run as one row and rewrites the Parquet file atomically (temp file +
  ``os.replace``) right away, so an interrupted experiment loses at most the runs in flight.

Traces are found by their usual file names with :func:`find_traces` in the directories of
:func:`default_trace_dirs` (bundled samples and the workspace's captured traces) or a user's own.
"""

from __future__ import annotations

import concurrent.futures as cf
import fnmatch
import hashlib
import json
import multiprocessing
import os
import time
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from nandlab.config import config_text
from nandlab.data import data_dir

if TYPE_CHECKING:
    import polars as pl
    from rich.console import Console

RUNS_FILE = "runs.parquet"
DIGESTS_FILE = ".trace_digests.json"

#: Report fields copied into their own (numeric) columns of ``runs.parquet``.
HEADLINE_FLOAT: tuple[str, ...] = (
    "host.mean_us",
    "host.read_mean_us",
    "host.write_mean_us",
    "host.read_p99_us",
    "host.write_p99_us",
    "write_amplification",
    "wall_s",
)
HEADLINE_INT: tuple[str, ...] = (
    "host.requests",
    "flash.erases",
    "flash.reads",
    "flash.programs",
    "rewrites",
)
_TEXT_COLUMNS: tuple[str, ...] = (
    "key",
    "trace",
    "trace_path",
    "scheme",
    "config",
    "label",
    "params",
    "report",
    "error",
)


def _schema() -> dict[str, Any]:
    import polars as pl

    schema: dict[str, Any] = {c: pl.Utf8 for c in _TEXT_COLUMNS}
    schema.update({c: pl.Float64 for c in HEADLINE_FLOAT})
    schema.update({c: pl.Int64 for c in HEADLINE_INT})
    return schema


class ExperimentError(RuntimeError):
    """A problem with the experiment itself (not with one run): missing dask, bad out dir."""


# --------------------------------------------------------------------------- specs and keys


@dataclass
class RunSpec:
    """One run of a grid: a trace replayed with a scheme on a config plus overrides."""

    trace: Path
    trace_name: str
    scheme: str
    config: str = "default"
    #: dotted config keys, e.g. ``{"scheme.params.m": -1, "host.max_requests": 100_000}``
    overrides: dict[str, object] = field(default_factory=dict)
    #: human-readable, e.g. ``"diffecc_wa m=-1 n=3"``; defaults to the scheme name
    label: str = ""

    def __post_init__(self) -> None:
        self.trace = Path(self.trace)
        if not self.label:
            self.label = self.scheme

    def params_json(self) -> str:
        """The overrides as canonical JSON (sorted keys): the ``params`` column."""
        return json.dumps(dict(sorted(self.overrides.items())), sort_keys=True, default=str)


class TraceDigests:
    """SHA-256 of trace files, cached in a JSON file keyed by (abs path, size, mtime_ns)."""

    def __init__(self, cache_file: Path | None = None) -> None:
        self.cache_file = cache_file
        self._cache: dict[str, dict[str, Any]] = {}
        self._dirty = False
        if cache_file is not None and cache_file.is_file():
            try:
                loaded = json.loads(cache_file.read_text(encoding="utf-8"))
                if isinstance(loaded, dict):
                    self._cache = loaded
            except (OSError, ValueError):
                self._cache = {}  # a damaged cache is only a cache

    def digest(self, path: Path) -> str:
        p = Path(path).resolve()
        st = p.stat()
        hit = self._cache.get(str(p))
        if hit and hit.get("size") == st.st_size and hit.get("mtime_ns") == st.st_mtime_ns:
            return str(hit["sha256"])
        h = hashlib.sha256()
        with p.open("rb") as f:
            for chunk in iter(lambda: f.read(1 << 20), b""):
                h.update(chunk)
        d = h.hexdigest()
        self._cache[str(p)] = {"size": st.st_size, "mtime_ns": st.st_mtime_ns, "sha256": d}
        self._dirty = True
        return d

    def save(self) -> None:
        if self.cache_file is None or not self._dirty:
            return
        _atomic_write_text(self.cache_file, json.dumps(self._cache, indent=1, sort_keys=True))
        self._dirty = False


_PROCESS_DIGESTS = TraceDigests(None)


def run_key(spec: RunSpec, digests: TraceDigests | None = None) -> str:
    """The run's identity: SHA-256 over (config text, scheme, sorted overrides, trace digest).

    The config text is that of the resolved file, so a preset name and the path of the same
    preset give the same key, and editing the file changes it.
    """
    text, _ = config_text(spec.config)
    digest = (digests or _PROCESS_DIGESTS).digest(spec.trace)
    material = json.dumps(
        {
            "config": text,
            "scheme": spec.scheme,
            "overrides": json.loads(spec.params_json()),
            "trace_sha256": digest,
        },
        sort_keys=True,
    )
    return hashlib.sha256(material.encode("utf-8")).hexdigest()


# --------------------------------------------------------------------------- one run


def _payload(key: str, spec: RunSpec) -> dict[str, Any]:
    return {
        "key": key,
        "trace": spec.trace_name,
        "trace_path": str(spec.trace),
        "scheme": spec.scheme,
        "config": str(spec.config),
        "label": spec.label,
        "overrides": dict(spec.overrides),
        "params": spec.params_json(),
    }


def _execute(payload: dict[str, Any]) -> dict[str, Any]:
    """Run one spec (in a worker) and return its row; never raises for a failed run."""
    import nandlab
    from nandlab.result import lookup

    row: dict[str, Any] = {k: payload[k] for k in _TEXT_COLUMNS if k in payload}
    t0 = time.perf_counter()
    try:
        res = nandlab.simulate(
            payload["config"],
            payload["trace_path"],
            scheme=payload["scheme"],
            overrides=payload["overrides"],
        )
    except Exception as e:  # recorded as an error row; retried on resume
        msg = " ".join(str(e).split())
        row.update({"report": None, "error": f"{type(e).__name__}: {msg}"})
        row["wall_s"] = time.perf_counter() - t0
        return row
    row["report"] = json.dumps(res.report)
    row["error"] = None
    for col in (*HEADLINE_FLOAT, *HEADLINE_INT):
        v = lookup(res.report, col)
        row[col] = v if isinstance(v, (int, float)) and not isinstance(v, bool) else None
    if row.get("wall_s") is None:
        row["wall_s"] = time.perf_counter() - t0
    return row


# --------------------------------------------------------------------------- parquet store


def _atomic_write_text(path: Path, text: str) -> None:
    tmp = path.with_name(f".{path.name}.tmp-{os.getpid()}")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, path)


def _normalise_row(row: Mapping[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for c in _TEXT_COLUMNS:
        v = row.get(c)
        out[c] = None if v is None else str(v)
    for c in HEADLINE_FLOAT:
        v = row.get(c)
        out[c] = None if v is None else float(v)
    for c in HEADLINE_INT:
        v = row.get(c)
        out[c] = None if v is None else int(v)
    return out


def rows_frame(rows: Iterable[Mapping[str, Any]]) -> pl.DataFrame:
    """Rows (dicts) as a DataFrame with the runs schema."""
    import polars as pl

    return pl.DataFrame([_normalise_row(r) for r in rows], schema=_schema(), orient="row")


def load_runs(out_dir: str | Path) -> pl.DataFrame:
    """All rows of ``<out_dir>/runs.parquet`` (an empty frame if there is none)."""
    import polars as pl

    path = Path(out_dir) / RUNS_FILE
    if not path.is_file():
        return rows_frame([])
    try:
        df = pl.read_parquet(path)
    except Exception as e:
        raise ExperimentError(
            f"{path}: cannot read results ({e}); move it away to start over"
        ) from None
    missing = [c for c in _schema() if c not in df.columns]
    if missing:
        df = df.with_columns([pl.lit(None, dtype=_schema()[c]).alias(c) for c in missing])
    return df


def _write_runs(path: Path, rows: Mapping[str, Mapping[str, Any]]) -> None:
    df = rows_frame(rows.values())
    tmp = path.with_name(f".{path.name}.tmp-{os.getpid()}")
    df.write_parquet(tmp)
    os.replace(tmp, path)


# --------------------------------------------------------------------------- the grid


@dataclass
class GridStats:
    """What :func:`run_grid` did (pass one in to read it back)."""

    total: int = 0
    skipped: int = 0
    executed: int = 0
    failed: int = 0
    duplicates: int = 0
    wall_s: float = 0.0
    keys: list[str] = field(default_factory=list)


def _default_workers() -> int:
    return max(1, os.cpu_count() or 1)


def _mp_context() -> multiprocessing.context.BaseContext:
    # forkserver: workers are forked from a clean single-threaded server, never from this
    # process (which may be running a progress-bar thread).
    if "forkserver" in multiprocessing.get_all_start_methods():
        return multiprocessing.get_context("forkserver")
    return multiprocessing.get_context()


def _iter_local(payloads: list[dict[str, Any]], processes: int) -> Iterator[dict[str, Any]]:
    if processes <= 1:
        for p in payloads:
            yield _execute(p)
        return
    ex = cf.ProcessPoolExecutor(max_workers=min(processes, len(payloads)), mp_context=_mp_context())
    try:
        futs = {ex.submit(_execute, p): p for p in payloads}
        for fut in cf.as_completed(futs):
            try:
                yield fut.result()
            except Exception as e:  # the worker died (e.g. killed, out of memory)
                row = {k: futs[fut][k] for k in _TEXT_COLUMNS if k in futs[fut]}
                row["error"] = f"{type(e).__name__}: {e}"
                yield row
    finally:
        ex.shutdown(wait=True, cancel_futures=True)


def _iter_dask(payloads: list[dict[str, Any]], scheduler: str) -> Iterator[dict[str, Any]]:
    try:
        from dask.distributed import Client, as_completed
    except ImportError:
        raise ExperimentError(
            f"--scheduler {scheduler} needs dask.distributed: pip install 'nandlab[dask]'"
        ) from None
    client = Client(scheduler)
    try:
        futs = {
            client.submit(_execute, p, pure=False, key=f"nandlab-{p['key']}"): p for p in payloads
        }
        for fut in as_completed(list(futs)):
            try:
                yield fut.result()
            except Exception as e:
                row = {k: futs[fut][k] for k in _TEXT_COLUMNS if k in futs[fut]}
                row["error"] = f"{type(e).__name__}: {e}"
                yield row
    finally:
        client.close()


def run_grid(
    specs: Sequence[RunSpec],
    out_dir: str | Path,
    processes: int | None = None,
    scheduler: str | None = None,
    progress: bool = True,
    *,
    stats: GridStats | None = None,
    console: Console | None = None,
) -> pl.DataFrame:
    """Run every spec not already in ``<out_dir>/runs.parquet`` and return the specs' rows.

    Specs with the same :func:`run_key` run once. ``processes=1`` runs inline; the default is
    one worker per CPU. ``scheduler="tcp://host:port"`` submits to a Dask cluster instead (the
    trace paths must be readable on the workers). A failed run becomes a row with ``error`` set
    and is retried next time. Returns one row per distinct key, in spec order.
    """
    t0 = time.perf_counter()
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    runs_path = out / RUNS_FILE
    st = stats if stats is not None else GridStats()

    digests = TraceDigests(out / DIGESTS_FILE)
    unique: dict[str, RunSpec] = {}
    for spec in specs:
        key = run_key(spec, digests)
        if key in unique:
            st.duplicates += 1
        else:
            unique[key] = spec
    digests.save()
    st.total = len(unique)
    st.keys = list(unique)

    existing = load_runs(out)
    rows: dict[str, dict[str, Any]] = {r["key"]: r for r in existing.iter_rows(named=True)}
    todo = [
        _payload(k, s)
        for k, s in unique.items()
        if k not in rows or rows[k].get("error") is not None
    ]
    st.skipped = st.total - len(todo)

    if todo:
        workers = processes if processes is not None else _default_workers()
        it = _iter_dask(todo, scheduler) if scheduler else _iter_local(todo, workers)
        with _GridProgress(st, enabled=progress, console=console) as bar:
            for row in it:
                rows[row["key"]] = row
                _write_runs(runs_path, rows)
                st.executed += 1
                if row.get("error"):
                    st.failed += 1
                bar.advance(row)
    st.wall_s = time.perf_counter() - t0

    # the current specs name the runs (a resumed row may have been labelled differently)
    return rows_frame(
        {**rows[k], "trace": s.trace_name, "label": s.label} for k, s in unique.items() if k in rows
    )


class _GridProgress:
    """A rich progress bar over the runs of a grid (a no-op when disabled)."""

    def __init__(self, st: GridStats, *, enabled: bool, console: Console | None) -> None:
        self.st = st
        self.enabled = enabled
        self.console = console
        self._prog: Any = None
        self._task: Any = None

    def _desc(self) -> str:
        d = f"runs ({self.st.skipped} skipped"
        if self.st.failed:
            d += f", {self.st.failed} failed"
        return d + ")"

    def __enter__(self) -> _GridProgress:
        if not self.enabled:
            return self
        from rich.console import Console
        from rich.progress import (
            BarColumn,
            MofNCompleteColumn,
            Progress,
            SpinnerColumn,
            TextColumn,
            TimeElapsedColumn,
            TimeRemainingColumn,
        )

        self._prog = Progress(
            SpinnerColumn(),
            TextColumn("{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TextColumn("[dim]{task.fields[last]}"),
            TimeElapsedColumn(),
            TimeRemainingColumn(),
            console=self.console or Console(stderr=True),
            transient=False,
        )
        self._prog.__enter__()
        self._task = self._prog.add_task(
            self._desc(), total=self.st.total, completed=self.st.skipped, last=""
        )
        return self

    def advance(self, row: Mapping[str, Any]) -> None:
        if self._prog is None:
            return
        last = f"{row.get('trace')} {row.get('label')}"
        if row.get("error"):
            last += " [red]failed"
        self._prog.update(self._task, advance=1, description=self._desc(), last=last)

    def __exit__(self, *exc: object) -> None:
        if self._prog is not None:
            self._prog.__exit__(*exc)


# --------------------------------------------------------------------------- finding traces


def find_traces(
    dirs: Iterable[str | Path], wanted: Mapping[str, Sequence[str]]
) -> tuple[dict[str, Path], list[str]]:
    """Locate traces by their usual file names under ``dirs`` (searched recursively).

    ``wanted`` maps a trace name to glob patterns of its file names, most preferred first
    (matched case-insensitively against the file name), e.g.
    ``{"hm_0": ["hm_0.csv*", "CAMRESHMSA01-lvm0.csv*"]}``. Earlier directories win over later
    ones; within a directory, an earlier pattern wins. Returns ``(found, missing)``.
    """
    files: list[list[Path]] = []
    for d in dirs:
        root = Path(d)
        if not root.is_dir():
            files.append([])
            continue
        found_here: list[Path] = []
        for dirpath, dirnames, filenames in os.walk(root):
            dirnames[:] = sorted(n for n in dirnames if not n.startswith("."))
            found_here.extend(Path(dirpath) / f for f in sorted(filenames))
        files.append(found_here)

    found: dict[str, Path] = {}
    for name, patterns in wanted.items():
        pats = [p.lower() for p in patterns]
        hit: Path | None = None
        for dir_files in files:
            for pat in pats:
                hit = next((f for f in dir_files if fnmatch.fnmatchcase(f.name.lower(), pat)), None)
                if hit is not None:
                    break
            if hit is not None:
                break
        if hit is not None:
            found[name] = hit
    missing = [n for n in wanted if n not in found]
    return found, missing


def shared_traces_dir() -> Path | None:
    """The workspace's captured traces: ``$NANDLAB_SHARED_TRACES``, or a ``shared/traces``
    directory beside one of the package's ancestors (its ``captured`` subdirectory)."""
    env = os.environ.get("NANDLAB_SHARED_TRACES")
    if env:
        p = Path(env)
        return p / "captured" if (p / "captured").is_dir() else p
    for parent in Path(__file__).resolve().parents:
        cand = parent / "shared" / "traces"
        if cand.is_dir():
            cap = cand / "captured"
            return cap if cap.is_dir() else cand
    return None


def default_trace_dirs() -> list[Path]:
    """Where ``reproduce`` looks for traces when no ``--traces`` is given: the bundled samples
    (``nandlab/data``) and the workspace's captured traces when present."""
    dirs = [data_dir()]
    shared = shared_traces_dir()
    if shared is not None and shared.is_dir():
        dirs.append(shared)
    return dirs
