"""Experiment runner: a grid of (trace x scheme x overrides) runs, resumable, in Parquet.

Every ``nandlab reproduce <paper>``, ``nandlab sweep`` and ``nandlab compare`` builds a list of
:class:`RunSpec` and hands it to :func:`run_grid`, which

* keys each run by :func:`run_key` -- a SHA-256 over the config *text* (a preset resolved to its
  file), the scheme, the sorted overrides and the trace file's content digest;
* skips keys already in ``<out>/runs.parquet`` (a run recorded as an error is retried);
* runs the rest in a local process pool, or on Dask (``scheduler="tcp://host:port"``, a
  ``distributed.Client``, or ``"slurm"``: a ``dask_jobqueue.SLURMCluster`` built from a
  ``[cluster]`` table, see :mod:`nandlab.cluster`), each worker calling
  :func:`nandlab.simulate`;
* records each finished run at once: one JSON line appended (and fsync'ed) to
  ``<out>/.runs.journal.jsonl``, folded into ``runs.parquet`` (rewritten atomically: temp file +
  ``os.replace``) every few seconds and at the end. A killed experiment (SIGKILL included)
  loses only the runs in flight; :func:`load_runs` reads the Parquet file and the journal.

Each row carries the run's identity (key, trace, scheme, config, label, params), its full JSON
report (or its one-line error), headline numbers as columns, when and where it ran
(``started_at``, ``finished_at`` in UTC ISO 8601, ``worker`` = host:pid) and, when
:class:`RunOutputs` asks for them, the paths (relative to ``out``) of its per-request log and
time series, both Parquet (``runs/<key[:16]>/requests.parquet``, ``timeseries.parquet``).
Per-run outputs do not enter the key: they do not change the simulation.

Traces are found by their usual file names with :func:`find_traces` in the directories of
:func:`default_trace_dirs` (bundled samples and the workspace's captured traces) or a user's own.
"""

from __future__ import annotations

import concurrent.futures as cf
import contextlib
import fnmatch
import hashlib
import json
import multiprocessing
import os
import socket
import sys
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from nandlab import cluster as cl
from nandlab.api import simulate
from nandlab.config import config_text
from nandlab.data import data_dir
from nandlab.errors import ExperimentError

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
    # the runner's wall time of the run (the report's own is `timing.wall_s`)
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
#: When and where a run ran, and its per-run output files (relative to the out directory).
META_COLUMNS: tuple[str, ...] = (
    "started_at",
    "finished_at",
    "worker",
    "request_log",
    "timeseries",
)
JOURNAL_FILE = ".runs.journal.jsonl"
LOCK_FILE = ".lock"
#: Fold the journal into runs.parquet at most this often while a grid runs, seconds.
COMPACT_EVERY_S = 5.0


def _schema() -> dict[str, Any]:
    import polars as pl

    schema: dict[str, Any] = {c: pl.Utf8 for c in (*_TEXT_COLUMNS, *META_COLUMNS)}
    schema.update({c: pl.Float64 for c in HEADLINE_FLOAT})
    schema.update({c: pl.Int64 for c in HEADLINE_INT})
    return schema


class FailedRunsWarning(UserWarning):
    """Some runs of a grid failed: their rows have ``error`` set and null numbers (the CLI
    commands report failures themselves and silence this warning)."""


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
    #: concurrent flows (docs/multi-tenant.md): with two or more traces the run replays them
    #: together (``trace`` is then the first); each enters the run key by its digest
    flow_traces: tuple[Path, ...] = ()

    def __post_init__(self) -> None:
        if not isinstance(self.trace, Path):
            self.trace = Path(self.trace)
        self.flow_traces = tuple(Path(t) for t in self.flow_traces)
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
    d = digests or _PROCESS_DIGESTS
    identity: dict[str, Any] = {
        "config": text,
        "scheme": spec.scheme,
        "overrides": json.loads(spec.params_json()),
        "trace_sha256": d.digest(spec.trace),
    }
    if spec.flow_traces:
        # only runs of concurrent flows carry it (other keys unchanged)
        identity["flow_traces_sha256"] = [d.digest(t) for t in spec.flow_traces]
    material = json.dumps(identity, sort_keys=True)
    return hashlib.sha256(material.encode("utf-8")).hexdigest()


# --------------------------------------------------------------------------- one run


@dataclass(frozen=True)
class RunOutputs:
    """Optional per-run outputs (all off by default; none of them enters the run key).

    * ``request_log``: every host request (``stats.request_log``: arrival_ns, op, offset_bytes,
      len_bytes, wait_ns, service_ns, response_ns) as ``runs/<key[:16]>/requests.parquet``;
    * ``timeseries_interval_ms``: the per-interval time series (``stats.timeseries``: throughput,
      mean / p99 / max response, queue depth, GC moves, erases, die utilisation; columns in
      ``docs/outputs.md``) as ``runs/<key[:16]>/timeseries.parquet``;
    * ``latency_cdf``: response-time CDFs in the report (``host.cdf``, ``stats.latency_cdf``),
      which ``nandlab report`` draws.
    """

    request_log: bool = False
    timeseries_interval_ms: float | None = None
    latency_cdf: bool = False

    def as_dict(self) -> dict[str, Any]:
        return {
            "request_log": self.request_log,
            "timeseries_interval_ms": self.timeseries_interval_ms,
            "latency_cdf": self.latency_cdf,
        }


def run_dir(key: str) -> str:
    """Directory of a run's output files, relative to the out directory."""
    return f"runs/{key[:16]}"


def _payload(
    key: str, spec: RunSpec, out_dir: Path | None = None, outputs: RunOutputs | None = None
) -> dict[str, Any]:
    p: dict[str, Any] = {
        "key": key,
        "trace": spec.trace_name,
        "trace_path": str(spec.trace),
        "scheme": spec.scheme,
        "config": str(spec.config),
        "label": spec.label,
        "overrides": dict(spec.overrides),
        "params": spec.params_json(),
    }
    if spec.flow_traces:
        p["flow_traces"] = [str(t) for t in spec.flow_traces]
    if outputs is not None and out_dir is not None:
        p["outputs"] = outputs.as_dict()
        p["out_dir"] = str(Path(out_dir).resolve())
    return p


def _now_iso() -> str:
    from datetime import datetime, timezone

    return datetime.now(timezone.utc).isoformat(timespec="microseconds")


def _execute(payload: dict[str, Any]) -> dict[str, Any]:
    """Run one spec (in a worker) and return its row; never raises for a failed run."""
    from nandlab.result import lookup

    row: dict[str, Any] = {k: payload[k] for k in _TEXT_COLUMNS if k in payload}
    row["started_at"] = _now_iso()
    row["worker"] = f"{socket.gethostname()}:{os.getpid()}"
    t0 = time.perf_counter()
    overrides = dict(payload["overrides"])
    outs = payload.get("outputs") or {}
    # per-run files: (stats key, CSV the core writes, Parquet we keep, its relative path)
    files: list[tuple[str, Path, Path, str]] = []
    if outs:
        rel = run_dir(payload["key"])
        d = Path(payload["out_dir"]) / rel
        if outs.get("request_log"):
            files.append(("request_log", d / ".requests.csv", d / "requests.parquet", rel))
        if outs.get("timeseries_interval_ms"):
            files.append(("timeseries", d / ".timeseries.csv", d / "timeseries.parquet", rel))
            overrides["stats.timeseries_interval_ms"] = float(outs["timeseries_interval_ms"])
        if outs.get("latency_cdf"):
            overrides["stats.latency_cdf"] = True
        for stat, csv, _, _ in files:
            overrides[f"stats.{stat}"] = str(csv)
        if files:
            d.mkdir(parents=True, exist_ok=True)
    try:
        flow_traces = payload.get("flow_traces")
        res = simulate(
            payload["config"],
            flow_traces if flow_traces else payload["trace_path"],
            scheme=payload["scheme"],
            overrides=overrides,
        )
        from nandlab.outputs import request_log_to_parquet, timeseries_to_parquet

        for stat, csv, pq, rel in files:
            conv = request_log_to_parquet if stat == "request_log" else timeseries_to_parquet
            conv(csv, pq)
            csv.unlink()
            row[stat] = f"{rel}/{pq.name}"
            # the report names the file that is kept
            res.report.setdefault("config", {}).setdefault("stats", {})[stat] = str(pq)
    except Exception as e:  # recorded as an error row; retried on resume
        msg = " ".join(str(e).split())
        row.update({"report": None, "error": f"{type(e).__name__}: {msg}"})
        row["wall_s"] = time.perf_counter() - t0
        row["finished_at"] = _now_iso()
        for _, csv, _, _ in files:
            csv.unlink(missing_ok=True)
        return row
    row["report"] = json.dumps(res.report)
    row["error"] = None
    for col in (*HEADLINE_FLOAT, *HEADLINE_INT):
        v = lookup(res.report, col)
        row[col] = v if isinstance(v, (int, float)) and not isinstance(v, bool) else None
    row["wall_s"] = time.perf_counter() - t0
    row["finished_at"] = _now_iso()
    return row


# --------------------------------------------------------------------------- parquet store


def _atomic_write_text(path: Path, text: str) -> None:
    tmp = path.with_name(f".{path.name}.tmp-{os.getpid()}")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, path)


def _normalise_row(row: Mapping[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for c in (*_TEXT_COLUMNS, *META_COLUMNS):
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


def _read_journal(path: Path) -> list[dict[str, Any]]:
    """Rows of a journal, oldest first; a torn last line (a kill mid-write) is skipped."""
    if not path.is_file():
        return []
    rows = []
    with path.open("r", encoding="utf-8", errors="replace") as f:
        for line in f:
            try:
                row = json.loads(line)
            except ValueError:
                continue
            if isinstance(row, dict) and isinstance(row.get("key"), str):
                rows.append(row)
    return rows


def load_runs(out_dir: str | Path) -> pl.DataFrame:
    """All rows of ``<out_dir>/runs.parquet`` and its journal (an empty frame if none)."""
    import polars as pl

    out = Path(out_dir)
    path = out / RUNS_FILE
    journal = _read_journal(out / JOURNAL_FILE)
    if not path.is_file():
        df = rows_frame([])
    else:
        try:
            df = pl.read_parquet(path)
        except Exception as e:
            why = " ".join(str(e).split())  # one line, whatever the reader's message
            raise ExperimentError(
                f"{path}: cannot read results ({why}); move it away to start over"
            ) from None
        missing = [c for c in _schema() if c not in df.columns]
        if missing:
            df = df.with_columns([pl.lit(None, dtype=_schema()[c]).alias(c) for c in missing])
    if journal:
        newer = {r["key"]: r for r in journal}
        keep = df.filter(~pl.col("key").is_in(list(newer)))
        df = pl.concat([keep, rows_frame(newer.values()).select(keep.columns)], how="vertical")
    return df


def _write_runs(path: Path, rows: Mapping[str, Mapping[str, Any]]) -> None:
    df = rows_frame(rows.values())
    tmp = path.with_name(f".{path.name}.tmp-{os.getpid()}")
    df.write_parquet(tmp)
    os.replace(tmp, path)


class _Store:
    """The rows of an out directory: a journal appended per finished run, compacted into
    ``runs.parquet`` every :data:`COMPACT_EVERY_S` and on :meth:`close`."""

    def __init__(self, out: Path) -> None:
        self.out = out
        self.runs_path = out / RUNS_FILE
        self.journal_path = out / JOURNAL_FILE
        for stale in out.glob(f".{RUNS_FILE}.tmp-*"):  # a kill mid-rewrite
            stale.unlink(missing_ok=True)
        self.rows: dict[str, dict[str, Any]] = {
            r["key"]: r for r in load_runs(out).iter_rows(named=True)
        }
        self._journal: Any = None
        self._last_compact = time.monotonic()
        if self.journal_path.is_file():
            self.compact()

    def add(self, row: dict[str, Any]) -> None:
        self.rows[row["key"]] = row
        if self._journal is None:
            self._journal = self.journal_path.open("a", encoding="utf-8")
        self._journal.write(json.dumps(_normalise_row(row)) + "\n")
        self._journal.flush()
        os.fsync(self._journal.fileno())
        if time.monotonic() - self._last_compact >= COMPACT_EVERY_S:
            self.compact()

    def compact(self) -> None:
        _write_runs(self.runs_path, self.rows)
        if self._journal is not None:
            self._journal.close()
            self._journal = None
        self.journal_path.unlink(missing_ok=True)
        self._last_compact = time.monotonic()

    def close(self) -> None:
        if self._journal is not None or self.journal_path.is_file():
            self.compact()


class _DirLock:
    """An exclusive lock on an out directory (released by the OS if the process dies)."""

    def __init__(self, out: Path) -> None:
        self.path = out / LOCK_FILE
        self._f: Any = None

    def __enter__(self) -> _DirLock:
        try:
            import fcntl
        except ImportError:  # pragma: no cover - not on POSIX: no lock
            return self
        f = self.path.open("a+", encoding="utf-8")
        try:
            fcntl.flock(f.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            f.seek(0)
            who = f.read().strip() or "another process"
            f.close()
            raise ExperimentError(
                f"{self.path.parent}: in use by {who}; wait for it or use another --out"
            ) from None
        f.seek(0)
        f.truncate()
        f.write(f"nandlab pid {os.getpid()} on {socket.gethostname()}")
        f.flush()
        self._f = f
        return self

    def __exit__(self, *exc: object) -> None:
        if self._f is not None:
            self._f.close()
            self._f = None


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
    #: where the runs went: "local (N processes)", "inline", a Dask scheduler address
    where: str = ""


def _default_workers() -> int:
    return max(1, os.cpu_count() or 1)


def _mp_context() -> multiprocessing.context.BaseContext:
    # forkserver: workers are forked from a clean single-threaded server, never from this
    # process (which may be running a progress-bar thread).
    if "forkserver" in multiprocessing.get_all_start_methods():
        return multiprocessing.get_context("forkserver")
    return multiprocessing.get_context()


def _exit_with_parent(parent_pid: int, interval_s: float = 0.5) -> None:
    """Worker initializer: end this worker when the process that started the pool is gone.

    Workers are forked from the forkserver, not from that process, so they would otherwise
    finish their run after a SIGKILL/SIGTERM of ``nandlab reproduce`` or ``sweep`` and then
    block forever, holding its stdout/stderr (a ``| tee`` never ends). A daemon thread checks
    the parent every ``interval_s`` seconds and exits hard when it has disappeared.
    """
    import threading

    def watch() -> None:
        while True:
            time.sleep(interval_s)
            try:
                os.kill(parent_pid, 0)
            except ProcessLookupError:
                os._exit(1)
            except PermissionError:  # the pid was reused by another user's process
                os._exit(1)

    threading.Thread(target=watch, name="nandlab-parent-watch", daemon=True).start()


def _lost_row(payload: Mapping[str, Any], e: BaseException) -> dict[str, Any]:
    """The row of a run whose worker died (killed, out of memory) or was lost."""
    row = {k: payload[k] for k in _TEXT_COLUMNS if k in payload}
    row["error"] = f"{type(e).__name__}: {' '.join(str(e).split())}"
    row["finished_at"] = _now_iso()
    return row


@contextlib.contextmanager
def _main_not_reimported() -> Iterator[None]:
    """Start worker processes without re-running the caller's ``__main__`` in them.

    forkserver / spawn children normally import the parent's main script first, so a script
    that calls :func:`run_grid` at top level (a notebook-style script, ``docs/examples``)
    would run again in every worker. The workers only run :func:`_execute`, so the main
    module's ``__file__`` / ``__spec__`` are hidden while they start, and restored after.
    """
    main = sys.modules.get("__main__")
    if main is None:
        yield
        return
    saved = {a: main.__dict__[a] for a in ("__file__", "__spec__") if a in main.__dict__}
    main.__dict__.pop("__file__", None)
    main.__dict__["__spec__"] = None
    try:
        yield
    finally:
        main.__dict__.pop("__spec__", None)
        main.__dict__.update(saved)


class _Runner:
    """Runs payloads somewhere and yields their rows as they finish; ``slots`` is how many
    can run at once (for the progress bar's "running")."""

    where = ""

    def slots(self) -> int:
        return 1

    def rows(self, payloads: list[dict[str, Any]]) -> Iterator[dict[str, Any]]:
        raise NotImplementedError

    def close(self) -> None:
        return None


class _LocalRunner(_Runner):
    def __init__(self, processes: int) -> None:
        self.processes = processes
        self.where = "inline" if processes <= 1 else f"local ({processes} processes)"

    def slots(self) -> int:
        return self.processes

    def rows(self, payloads: list[dict[str, Any]]) -> Iterator[dict[str, Any]]:
        if self.processes <= 1:
            for p in payloads:
                yield _execute(p)
            return
        ex = cf.ProcessPoolExecutor(
            max_workers=min(self.processes, len(payloads)),
            mp_context=_mp_context(),
            initializer=_exit_with_parent,
            initargs=(os.getpid(),),
        )
        try:
            # the workers start during the submits
            with _main_not_reimported():
                futs = {ex.submit(_execute, p): p for p in payloads}
            for fut in cf.as_completed(futs):
                try:
                    yield fut.result()
                except Exception as e:  # the worker died (e.g. killed, out of memory)
                    yield _lost_row(futs[fut], e)
        finally:
            ex.shutdown(wait=True, cancel_futures=True)


class _DaskRunner(_Runner):
    #: Seconds between two calls of ``watch`` while runs are outstanding.
    WATCH_EVERY_S = 5.0

    def __init__(
        self, client: Any, owned: list[Any], watch: Callable[[], str | None] | None = None
    ) -> None:
        self.client = client
        self.owned = owned  # closed by close(): our own client / cluster
        self.watch = watch  # why no run can ever finish (e.g. Slurm jobs ended), or None
        self.where = f"dask {getattr(client.scheduler, 'address', '')}".strip()

    def slots(self) -> int:
        """Worker threads connected now (0 while a Slurm job waits in the queue)."""
        try:
            return sum(self.client.nthreads().values())
        except Exception:
            return 1

    def rows(self, payloads: list[dict[str, Any]]) -> Iterator[dict[str, Any]]:
        from dask.distributed import as_completed

        futs = {
            self.client.submit(_execute, p, pure=False, key=f"nandlab-{p['key']}"): p
            for p in payloads
        }
        try:
            # polled, not blocking: Ctrl-C is seen at once, and `watch` can end a sweep whose
            # workers will never come
            ac = as_completed(list(futs))
            next_watch = time.monotonic() + self.WATCH_EVERY_S
            while not ac.is_empty():
                batch = ac.next_batch(block=False)
                if not batch:
                    if self.watch is not None and time.monotonic() >= next_watch:
                        why = self.watch()
                        if why:
                            raise ExperimentError(why)
                        next_watch = time.monotonic() + self.WATCH_EVERY_S
                    time.sleep(0.05)
                    continue
                for fut in batch:
                    try:
                        yield fut.result()
                    except Exception as e:  # e.g. KilledWorker
                        yield _lost_row(futs[fut], e)
        finally:
            for fut in futs:
                with contextlib.suppress(Exception):
                    fut.release()

    def close(self) -> None:
        for obj in self.owned:
            with contextlib.suppress(Exception):  # closing is best effort
                obj.close()


def _runner(scheduler: Any, processes: int | None, cluster: Mapping[str, Any] | None) -> _Runner:
    """The runner ``scheduler`` names: ``None``/``"local"`` (a process pool of ``processes``),
    a Dask address (``tcp://host:port``), ``"slurm"`` (a SLURMCluster from ``cluster``) or a
    ``distributed.Client``."""
    if scheduler is None or scheduler == "local":
        return _LocalRunner(processes if processes is not None else _default_workers())
    if isinstance(scheduler, str):
        if scheduler == "slurm":
            client, owned, watch = cl.slurm_client(cluster, jobs=processes)
            return _DaskRunner(client, owned, watch)
        else:
            if processes is not None:
                raise ExperimentError(
                    f"--workers applies to --scheduler local or slurm; the Dask cluster at "
                    f"{scheduler} has its own workers"
                )
            client, owned = cl.address_client(scheduler)
        return _DaskRunner(client, owned)
    if hasattr(scheduler, "submit") and hasattr(scheduler, "nthreads"):
        return _DaskRunner(scheduler, [])
    raise ExperimentError(
        f"scheduler {scheduler!r}: expected 'local', 'slurm', a Dask scheduler address "
        "(tcp://HOST:PORT) or a distributed.Client"
    )


def _has_outputs(row: Mapping[str, Any], outputs: RunOutputs | None, out: Path) -> bool:
    """Whether a finished row has the per-run outputs asked for now (a run asked for a time
    series it did not write before runs again)."""
    if outputs is None:
        return True
    for col, want in (
        ("request_log", outputs.request_log),
        ("timeseries", outputs.timeseries_interval_ms is not None),
    ):
        if want and not (row.get(col) and (out / str(row[col])).is_file()):
            return False
    if outputs.timeseries_interval_ms is None and not outputs.latency_cdf:
        return True
    try:
        rep = json.loads(row.get("report") or "{}")
    except ValueError:
        return False
    stats = (rep.get("config") or {}).get("stats") or {}
    if outputs.timeseries_interval_ms is not None and stats.get("timeseries_interval_ms") != float(
        outputs.timeseries_interval_ms
    ):
        return False
    return not (outputs.latency_cdf and "cdf" not in (rep.get("host") or {}))


def run_grid(
    specs: Sequence[RunSpec],
    out_dir: str | Path,
    processes: int | None = None,
    scheduler: Any = None,
    progress: bool = True,
    *,
    stats: GridStats | None = None,
    console: Console | None = None,
    outputs: RunOutputs | None = None,
    cluster: Mapping[str, Any] | None = None,
) -> pl.DataFrame:
    """Run every spec not already in ``<out_dir>/runs.parquet`` and return the specs' rows.

    Specs with the same :func:`run_key` run once. ``processes=1`` runs inline; the default is
    one worker per CPU. ``scheduler`` picks where runs go: ``None`` or ``"local"`` (the process
    pool), ``"tcp://host:port"`` (a running Dask cluster; trace paths and ``out_dir`` must be
    readable / writable on the workers), ``"slurm"`` (a ``dask_jobqueue.SLURMCluster`` built
    from ``cluster``, the grid's ``[cluster]`` table, with ``processes`` jobs when given) or a
    ``distributed.Client``. ``outputs`` adds per-run files (:class:`RunOutputs`). A failed run
    becomes a row with ``error`` set and is retried next time. Returns one row per distinct
    key, in spec order.

    Raises :class:`ExperimentError` when the out directory is in use by another run, Dask is
    missing, or the scheduler cannot be reached -- all before any run starts.
    """
    t0 = time.perf_counter()
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    st = stats if stats is not None else GridStats()

    with _DirLock(out):
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

        store = _Store(out)
        rows = store.rows
        todo = [
            _payload(k, s, out, outputs)
            for k, s in unique.items()
            if k not in rows
            or rows[k].get("error") is not None
            or not _has_outputs(rows[k], outputs, out)
        ]
        st.skipped = st.total - len(todo)

        if todo:
            runner = _runner(scheduler, processes, cluster)
            st.where = runner.where
            try:
                with _GridProgress(st, runner, enabled=progress, console=console) as bar:
                    for row in runner.rows(todo):
                        store.add(row)
                        st.executed += 1
                        if row.get("error"):
                            st.failed += 1
                        bar.advance(row)
            finally:
                store.close()
                runner.close()
        else:
            store.close()
    st.wall_s = time.perf_counter() - t0

    # the current specs name the runs (a resumed row may have been labelled differently)
    df = rows_frame(
        {**rows[k], "trace": s.trace_name, "label": s.label} for k, s in unique.items() if k in rows
    )
    failed = [r for r in df.iter_rows(named=True) if r.get("error")]
    if failed:
        import warnings

        warnings.warn(
            f"{len(failed)} of {df.height} runs failed (rows with `error` set, numbers null); "
            f"first: {failed[0]['label']}: {failed[0]['error']}",
            FailedRunsWarning,
            stacklevel=2,
        )
    return df


class _GridProgress:
    """A rich progress bar over the runs of a grid: done / failed / running and an ETA (a
    no-op when disabled)."""

    def __init__(
        self, st: GridStats, runner: _Runner, *, enabled: bool, console: Console | None
    ) -> None:
        self.st = st
        self.runner = runner
        self.enabled = enabled
        self.console = console
        self._prog: Any = None
        self._task: Any = None
        self._lines: Any = None

    def _status(self) -> str:
        st = self.st
        done = st.skipped + st.executed - st.failed
        left = st.total - st.skipped - st.executed
        running = min(self.runner.slots(), left)
        s = f"[green]{done} done[/]"
        if st.skipped:
            s += f" ({st.skipped} before)"
        return s + f" [red]{st.failed} failed[/] [yellow]{running} running[/]"

    def __enter__(self) -> _GridProgress:
        if not self.enabled:
            return self
        from rich.console import Console

        console = self.console or Console(stderr=True)
        if not console.is_terminal:
            # a log: one plain line every few seconds instead of a bar
            from nandlab._progress import LineProgress

            self._lines = LineProgress(console, "runs", "runs")
            self._lines_status()
            return self
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
            BarColumn(bar_width=20),
            MofNCompleteColumn(),
            TextColumn("runs: {task.fields[status]}"),
            TimeElapsedColumn(),
            TextColumn("ETA"),
            TimeRemainingColumn(),
            TextColumn("[dim]{task.fields[last]}"),  # last: cut first on a narrow terminal
            console=console,
            transient=False,
        )
        self._prog.__enter__()
        self._task = self._prog.add_task(
            "runs",
            total=self.st.total,
            completed=self.st.skipped,
            status=self._status(),
            last="",
        )
        return self

    def _lines_status(self, force: bool = False, last: str = "") -> None:
        st = self.st
        done = st.skipped + st.executed
        left = st.total - done
        running = min(self.runner.slots(), left)
        extra = f"{st.failed} failed, {running} running" + (f"; last: {last}" if last else "")
        self._lines.update(done, st.total, extra, force=force)

    def advance(self, row: Mapping[str, Any]) -> None:
        if self._lines is not None:
            last = f"{row.get('trace')} {row.get('label')}" + (
                " (failed)" if row.get("error") else ""
            )
            self._lines_status(last=last)
            return
        if self._prog is None:
            return
        last = f"{row.get('trace')} {row.get('label')}"
        if row.get("error"):
            last += " [red]failed"
        self._prog.update(self._task, advance=1, status=self._status(), last=last)

    def __exit__(self, *exc: object) -> None:
        if self._lines is not None:
            self._lines_status(force=True)
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
