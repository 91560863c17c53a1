"""Dask clients for :func:`nandlab.experiment.run_grid`: a running cluster by address, or a
Slurm cluster through ``dask_jobqueue.SLURMCluster`` built from a grid's ``[cluster]`` table.

Dask is an optional extra (``pip install 'nandlab[dask]'``); without it these functions raise
:class:`~nandlab.experiment.ExperimentError` naming the extra. The ``[cluster]`` keys
(:data:`CLUSTER_KEYS`) are dask-jobqueue's own ``SLURMCluster`` arguments, except ``jobs``: how
many Slurm jobs to start (``cluster.scale(jobs=...)``). Each job runs ``processes`` Dask workers
that share ``cores`` cores and ``memory``; every worker runs one simulation at a time, so give
``processes = cores`` for one simulation per core (a run is single-threaded). Trace paths and the
out directory must be on a file system the compute nodes share.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

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


def _experiment_error(msg: str) -> Exception:
    from nandlab.experiment import ExperimentError

    return ExperimentError(msg)


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


def _need_distributed(what: str) -> None:
    try:
        import dask.distributed  # noqa: F401
    except ImportError:
        raise _experiment_error(
            f"{what} needs dask.distributed: pip install 'nandlab[dask]'"
        ) from None


def address_client(address: str) -> tuple[Any, list[Any]]:
    """A client of the Dask scheduler at ``address`` (``tcp://host:port``)."""
    _need_distributed(f"--scheduler {address}")
    if "://" not in address:
        raise _experiment_error(
            f"--scheduler {address}: expected local, slurm or a Dask scheduler address "
            "like tcp://HOST:PORT"
        )
    from dask.distributed import Client

    try:
        client = Client(address, timeout="20s")
    except (OSError, TimeoutError) as e:
        raise _experiment_error(
            f"--scheduler {address}: cannot reach the Dask scheduler ({' '.join(str(e).split())})"
        ) from None
    return client, [client]


def slurm_cluster(table: Mapping[str, Any] | None) -> Any:
    """A ``dask_jobqueue.SLURMCluster`` from a ``[cluster]`` table (no job is started)."""
    _need_distributed("--scheduler slurm")
    try:
        from dask_jobqueue import SLURMCluster
    except ImportError:
        raise _experiment_error(
            "--scheduler slurm needs dask-jobqueue: pip install 'nandlab[dask]'"
        ) from None
    if not table:
        raise _experiment_error(
            "--scheduler slurm needs a [cluster] table in the grid (keys: "
            + ", ".join(CLUSTER_KEYS)
            + ")"
        )
    try:
        kw = validate_cluster(table)
    except ValueError as e:
        raise _experiment_error(str(e)) from None
    kw.pop("jobs", None)
    if "cores" in kw and "processes" not in kw:
        kw["processes"] = kw["cores"]
    if "cores" not in kw or "memory" not in kw:
        raise _experiment_error("[cluster]: give cores and memory (dask-jobqueue needs both)")
    return SLURMCluster(**kw)


def slurm_client(table: Mapping[str, Any] | None, jobs: int | None = None) -> tuple[Any, list[Any]]:
    """A client of a new SLURMCluster scaled to ``jobs`` (default ``[cluster] jobs``, or 1)."""
    cluster = slurm_cluster(table)
    from dask.distributed import Client

    n = jobs if jobs is not None else int((table or {}).get("jobs", 1))
    cluster.scale(jobs=n)
    client = Client(cluster)
    return client, [client, cluster]
