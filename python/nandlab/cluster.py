"""Dask clients for :func:`nandlab.experiment.run_grid`: a running cluster by address, or a
Slurm cluster through ``dask_jobqueue.SLURMCluster`` built from a grid's ``[cluster]`` table.

Dask is an optional extra (``pip install 'nandlab[dask]'``); without it these functions raise
:class:`~nandlab.errors.ExperimentError` naming the extra. The ``[cluster]`` keys
(:data:`CLUSTER_KEYS`) are dask-jobqueue's own ``SLURMCluster`` arguments, except ``jobs``: how
many Slurm jobs to start (``cluster.scale(jobs=...)``). Each job runs ``processes`` Dask workers
that share ``cores`` cores and ``memory``; every worker runs one simulation at a time, so give
``processes = cores`` for one simulation per core (a run is single-threaded). Trace paths and the
out directory must be on a file system the compute nodes share.
"""

from __future__ import annotations

import contextlib
import shutil
from collections.abc import Callable, Iterator, Mapping
from typing import Any

from nandlab.errors import ExperimentError

#: ``[cluster]`` keys: name -> (accepted types, description).
CLUSTER_KEYS: dict[str, tuple[tuple[type, ...], str]] = {
    "queue": ((str,), "Slurm partition (#SBATCH -p)"),
    "account": ((str,), "Slurm account to charge (#SBATCH -A)"),
    "cores": ((int,), "cores per job (#SBATCH --cpus-per-task)"),
    "processes": ((int,), "Dask worker processes per job (default: one per core)"),
    "memory": ((str,), "memory per job, e.g. '16GiB' (#SBATCH --mem)"),
    "walltime": ((str,), "time limit per job, e.g. '02:00:00' (#SBATCH -t)"),
    "jobs": ((int,), "Slurm jobs to start (default 1; --workers overrides)"),
    "job_name": ((str,), "Slurm job name (#SBATCH -J)"),
    "job_extra_directives": ((list,), "more #SBATCH lines, e.g. ['--exclusive']"),
    "job_script_prologue": ((list,), "shell lines before the worker starts, e.g. module loads"),
    "interface": ((str,), "network interface of the workers, e.g. 'ib0'"),
    "local_directory": ((str,), "workers' scratch directory"),
    "log_directory": ((str,), "where Slurm writes the jobs' logs"),
    "python": ((str,), "python executable on the compute nodes"),
}


def validate_cluster(table: Any, where: str = "[cluster]") -> dict[str, Any]:
    """Check a ``[cluster]`` table: known keys, right types, positive counts. Returns it as a
    plain dict; raises ``ValueError`` naming the key and the allowed keys or values."""
    if not isinstance(table, Mapping):
        raise ValueError(f"{where}: expected a table of {', '.join(CLUSTER_KEYS)}")
    out: dict[str, Any] = {}
    for k, v in table.items():
        if k not in CLUSTER_KEYS:
            raise ValueError(f"{where}: unknown key `{k}`; allowed: {', '.join(CLUSTER_KEYS)}")
        types, desc = CLUSTER_KEYS[k]
        if not isinstance(v, types) or isinstance(v, bool):
            want = " or ".join(t.__name__ for t in types)
            raise ValueError(f"{where}.{k} = {v!r}: expected {want} ({desc})")
        if isinstance(v, int) and v < 1:
            raise ValueError(f"{where}.{k} = {v}: must be at least 1 ({desc})")
        if isinstance(v, list) and not all(isinstance(x, str) for x in v):
            raise ValueError(f"{where}.{k}: expected a list of strings ({desc})")
        out[k] = v
    return out


def _import_jobqueue() -> Any:
    """``dask_jobqueue``, imported without its side effect on Ctrl-C: its ``runner`` module
    sets a SIGINT handler that calls ``sys.exit()``, so Ctrl-C ended a sweep with status 0 and
    no word. nandlab's own handling (one line, status 130) is put back."""
    import signal
    import threading

    main = threading.current_thread() is threading.main_thread()
    before = signal.getsignal(signal.SIGINT) if main else None
    try:
        import dask_jobqueue
    except ImportError:
        raise ExperimentError(
            "--scheduler slurm needs dask-jobqueue: pip install 'nandlab[dask]'"
        ) from None
    if main and before is not None and signal.getsignal(signal.SIGINT) is not before:
        signal.signal(signal.SIGINT, before)
    return dask_jobqueue


def _need_distributed(what: str) -> None:
    try:
        import dask.distributed  # noqa: F401
    except ImportError:
        raise ExperimentError(
            f"{what} needs dask.distributed: pip install 'nandlab[dask]'"
        ) from None


#: Seconds to wait for a Dask scheduler's TCP port to accept a connection.
CONNECT_TIMEOUT_S = 2.0


def _probe(address: str) -> None:
    """Fail fast, in one line, when nothing listens at ``address`` (``tcp://HOST:PORT``):
    ``distributed.Client`` would retry for its whole timeout and log tracebacks meanwhile."""
    import socket
    from urllib.parse import urlsplit

    try:
        u = urlsplit(address)
        host, port = u.hostname, u.port
    except ValueError:
        host, port = None, None
    if not host or port is None:
        raise ExperimentError(
            f"--scheduler {address}: expected a Dask scheduler address like tcp://HOST:PORT"
        )
    no_answer = ExperimentError(
        f"--scheduler {address}: no Dask scheduler answered within {CONNECT_TIMEOUT_S:g} s "
        "(is it running, and is the port open from here?)"
    )
    try:
        with socket.create_connection((host, port), timeout=CONNECT_TIMEOUT_S):
            pass
    except socket.timeout:
        raise no_answer from None
    except OSError as e:
        why = e.strerror or str(e)
        raise ExperimentError(
            f"--scheduler {address}: cannot reach the Dask scheduler ({why}); start one with "
            "`dask scheduler` or use --scheduler local"
        ) from None
    if not address.startswith("tcp://"):
        return  # tls:// needs the cluster's certificates for a handshake: Client checks it
    # something accepts connections there (a firewall or proxy may accept any): is it Dask?
    import asyncio
    import concurrent.futures

    from distributed.comm import connect

    async def handshake() -> None:
        comm = await connect(address, timeout=CONNECT_TIMEOUT_S)
        await comm.close()

    def run() -> None:  # on its own thread: the caller may be inside an event loop (Jupyter)
        with _quiet_dask():
            asyncio.run(asyncio.wait_for(handshake(), CONNECT_TIMEOUT_S))

    try:
        with concurrent.futures.ThreadPoolExecutor(1) as ex:
            ex.submit(run).result()
    except (asyncio.TimeoutError, TimeoutError):
        raise no_answer from None
    except Exception as e:
        raise ExperimentError(
            f"--scheduler {address}: the server there does not speak Dask's protocol "
            f"({type(e).__name__}); is it a Dask scheduler's address?"
        ) from None


def address_client(address: str) -> tuple[Any, list[Any]]:
    """A client of the Dask scheduler at ``address`` (``tcp://host:port``); an address where
    nothing answers is an :class:`~nandlab.errors.ExperimentError` within
    :data:`CONNECT_TIMEOUT_S` seconds."""
    _need_distributed(f"--scheduler {address}")
    if "://" not in address:
        raise ExperimentError(
            f"--scheduler {address}: expected local, slurm or a Dask scheduler address "
            "like tcp://HOST:PORT"
        )
    if address.startswith(("tcp://", "tls://")):
        _probe(address)
    from dask.distributed import Client

    try:
        with _quiet_dask():
            client = Client(address, timeout="10s")
    except (OSError, TimeoutError) as e:
        raise ExperimentError(
            f"--scheduler {address}: cannot reach the Dask scheduler ({' '.join(str(e).split())})"
        ) from None
    return client, [client]


@contextlib.contextmanager
def _quiet_dask() -> Iterator[None]:
    """Dask's and tornado's loggers silenced (their tracebacks would repeat, in many lines,
    the one-line error nandlab gives)."""
    import logging

    names = ("distributed", "tornado", "asyncio", "dask_jobqueue")
    saved = [(logging.getLogger(n), logging.getLogger(n).level) for n in names]
    for lg, _ in saved:
        lg.setLevel(logging.CRITICAL + 1)
    try:
        yield
    finally:
        for lg, level in saved:
            lg.setLevel(level)


def _slurm_kwargs(table: Mapping[str, Any] | None) -> dict[str, Any]:
    """SLURMCluster's arguments from a ``[cluster]`` table, checked."""
    if not table:
        raise ExperimentError(
            "--scheduler slurm needs a [cluster] table in the grid (keys: "
            + ", ".join(CLUSTER_KEYS)
            + ")"
        )
    try:
        kw = validate_cluster(table)
    except ValueError as e:
        raise ExperimentError(str(e)) from None
    kw.pop("jobs", None)
    if "cores" in kw and "processes" not in kw:
        kw["processes"] = kw["cores"]
    if "cores" not in kw or "memory" not in kw:
        raise ExperimentError("[cluster]: give cores and memory (dask-jobqueue needs both)")
    return kw


def slurm_cluster(table: Mapping[str, Any] | None) -> Any:
    """A ``dask_jobqueue.SLURMCluster`` from a ``[cluster]`` table (no job is started)."""
    _need_distributed("--scheduler slurm")
    SLURMCluster = _import_jobqueue().SLURMCluster
    kw = _slurm_kwargs(table)
    return SLURMCluster(**kw)


def _require_sbatch() -> None:
    if shutil.which("sbatch") is None:
        raise ExperimentError(
            "--scheduler slurm: sbatch not found on PATH (Slurm's commands are needed to "
            "submit the workers' jobs): run the sweep on a Slurm login node, or use "
            "--scheduler local or tcp://HOST:PORT"
        )


def check_scheduler(scheduler: str, table: Mapping[str, Any] | None = None) -> None:
    """What can be checked of ``scheduler`` (``"slurm"`` or an address) before anything
    starts, in a second or two: Dask installed, the grid's ``[cluster]`` ``table`` (Slurm),
    ``sbatch`` on PATH, a Dask scheduler answering at the address. Raises
    :class:`~nandlab.errors.ExperimentError` of one line."""
    if scheduler == "slurm":
        _need_distributed("--scheduler slurm")
        _slurm_kwargs(table)
        _require_sbatch()  # before importing dask_jobqueue (a second on a busy machine)
        _import_jobqueue()
        return
    _need_distributed(f"--scheduler {scheduler}")
    if "://" not in scheduler:
        raise ExperimentError(
            f"--scheduler {scheduler}: expected local, slurm or a Dask scheduler address "
            "like tcp://HOST:PORT"
        )
    if scheduler.startswith(("tcp://", "tls://")):
        _probe(scheduler)


def _command_error(e: BaseException) -> str:
    """The gist of a failed Slurm command (dask-jobqueue's RuntimeError quotes the command,
    its stdout and stderr over many lines): the last line of its stderr."""
    text = str(e)
    if "stderr:" in text:
        err = [ln.strip() for ln in text.split("stderr:", 1)[1].splitlines() if ln.strip()]
        if err:
            return err[-1]
    return " ".join(text.split())


#: Seconds ``sbatch`` may take to submit the sweep's jobs (a Slurm controller that does not
#: answer makes sbatch retry for minutes).
SUBMIT_TIMEOUT_S = 60.0


def slurm_client(
    table: Mapping[str, Any] | None, jobs: int | None = None
) -> tuple[Any, list[Any], Callable[[], str | None]]:
    """A client of a new SLURMCluster with ``jobs`` jobs submitted (default ``[cluster]
    jobs``, or 1), and a check for the runner (:func:`slurm_jobs_gone`).

    Everything that can fail before a run starts fails here, as an
    :class:`~nandlab.errors.ExperimentError` of one line: no ``sbatch`` on PATH (checked
    before the cluster's scheduler starts), or ``sbatch`` refusing the job (its error
    message). The jobs are submitted before this returns, not in the background."""
    _need_distributed("--scheduler slurm")
    _require_sbatch()
    with _quiet_dask():
        cluster = slurm_cluster(table)
    from dask.distributed import Client

    n = jobs if jobs is not None else int((table or {}).get("jobs", 1))
    # cluster.scale(jobs=n) would submit the jobs in the background, where a failing sbatch
    # is a logged traceback and the sweep waits for workers that never come
    while len(cluster.worker_spec) < n:
        cluster.worker_spec.update(cluster.new_worker_spec())
    try:
        with _quiet_dask():
            cluster.sync(cluster._correct_state, callback_timeout=SUBMIT_TIMEOUT_S)
    except (RuntimeError, ValueError, OSError, TimeoutError) as e:
        _abandon(cluster)
        if isinstance(e, TimeoutError):
            why = f"sbatch did not finish within {SUBMIT_TIMEOUT_S:g} s"
        else:
            why = _command_error(e)
        raise ExperimentError(f"--scheduler slurm: could not submit the jobs: {why}") from None
    client = Client(cluster)
    return client, [client, cluster], lambda: slurm_jobs_gone(cluster)


def _abandon(cluster: Any) -> None:
    """Close a cluster whose jobs did not all start: cancel those that were submitted (a
    failed job cannot be closed the usual way: SpecCluster asserts on its state)."""
    import subprocess

    from distributed.core import Status

    ids = job_ids(cluster)
    cluster.workers.clear()
    cluster.worker_spec.clear()
    for job in list(getattr(cluster, "_created", ())):
        if job.status == Status.created:  # its sbatch failed: the job never existed
            job.status = Status.failed
    with _quiet_dask(), contextlib.suppress(Exception):
        cluster.close(timeout=5)
    if ids and shutil.which("scancel"):
        with contextlib.suppress(OSError, subprocess.SubprocessError):
            subprocess.run(["scancel", *ids], capture_output=True, timeout=20, check=False)


#: squeue's short states of a job that has ended (squeue(1), JOB STATE CODES).
_ENDED = {"BF", "CA", "CD", "DL", "F", "NF", "OOM", "PR", "RV", "TO"}


def job_ids(cluster: Any) -> list[str]:
    """The Slurm job ids of ``cluster``'s jobs (those submitted so far)."""
    return [str(j.job_id) for j in cluster.workers.values() if getattr(j, "job_id", None)]


def slurm_jobs_gone(cluster: Any) -> str | None:
    """Why the sweep can never get a worker, or ``None``: all of ``cluster``'s jobs have
    ended (``squeue`` lists none of them as pending or running) while no Dask worker has
    connected. ``None`` too when ``squeue`` is missing or fails (no evidence either way)."""
    import subprocess

    ids = job_ids(cluster)
    if not ids or shutil.which("squeue") is None:
        return None
    try:
        if cluster.scheduler_info.get("workers"):
            return None
    except Exception:
        return None
    try:
        r = subprocess.run(
            ["squeue", "-h", "-j", ",".join(ids), "-o", "%i %t"],
            capture_output=True,
            text=True,
            timeout=20,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    if r.returncode != 0 and "Invalid job id" not in r.stderr:
        return None
    alive = []
    for line in r.stdout.splitlines():
        parts = line.split()
        if len(parts) >= 2 and parts[0] in ids and parts[1] not in _ENDED:
            alive.append(parts[0])
    if alive:
        return None
    logs = (cluster._dummy_job.log_directory if hasattr(cluster, "_dummy_job") else None) or (
        "slurm-<id>.out in the directory the sweep was started from"
    )
    return (
        f"--scheduler slurm: the Slurm job(s) {', '.join(ids)} ended before any Dask worker "
        f"connected; see the jobs' output ({logs})"
    )
