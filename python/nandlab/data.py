"""Bundled trace samples (``nandlab/data``; see ``PROVENANCE.md`` there) and the one resolver
that turns what a user types after ``--trace`` (a file, or a bundled trace's name) into a file.
"""

from __future__ import annotations

from importlib import resources
from pathlib import Path

DEFAULT_TRACE = "pgbench_rw_slice.csv.gz"

#: Files in the data directory that are not traces.
_NOT_TRACES = {"PROVENANCE.md", "README.md", ".gitkeep", "__init__.py"}

#: Where each bundled trace comes from, in one line (the long form is ``PROVENANCE.md``; a
#: test checks that every bundled trace has a line here and a row there).
BUNDLED_SOURCES: dict[str, str] = {
    "pgbench_rw_slice.csv.gz": "PostgreSQL pgbench read/write, captured for nandlab "
    "(2026-11-22): first 300,000 requests of pgbench_rw",
    "msr_hm_0_sample1000.csv": "MSR Cambridge hm_0 (SNIA IOTTA): 1,000 consecutive requests",
    "Financial1_first10000.ssdsim.ascii.gz": "UMass SPC Financial1 (OLTP), SSDsim ASCII: "
    "first 10,000 records, 22 ASUs",
    "WebSearch1_first24783.mqsim.trace.gz": "UMass SPC WebSearch1, MQSim's wsrch-small.trace: "
    "first ~60 s, 6 ASUs",
}


def data_dir() -> Path:
    """The directory of the bundled data (a real directory: nandlab is never zip-imported)."""
    return Path(str(resources.files("nandlab") / "data"))


def default_trace() -> Path:
    """Path of the bundled default trace (a slice of a pgbench read/write run).

    Raises ``FileNotFoundError`` if the package was installed without its data.
    """
    path = data_dir() / DEFAULT_TRACE
    if not path.is_file():
        raise FileNotFoundError(f"bundled default trace missing: {path}")
    return path


def bundled_traces() -> list[Path]:
    """All bundled trace files, sorted by name."""
    d = data_dir()
    if not d.is_dir():
        return []
    return sorted(
        p
        for p in d.iterdir()
        if p.is_file() and p.name not in _NOT_TRACES and not p.name.endswith((".md", ".py"))
    )


def trace_name(path: Path) -> str:
    """A trace's short name: its file name up to the first dot (``hm_0.csv.gz`` -> ``hm_0``)."""
    return path.name.split(".", 1)[0] or path.name


def bundled_by_name() -> dict[str, Path]:
    """The bundled traces by short name (``pgbench_rw_slice``)."""
    return {trace_name(p): p for p in bundled_traces()}


def resolve_trace(spec: str | Path, base: Path | None = None) -> Path:
    """The trace file ``spec`` names: a file (relative to ``base``, default the working
    directory) when one exists there, else a bundled trace by its short name
    (``pgbench_rw_slice``) or file name (``pgbench_rw_slice.csv.gz``).

    Every command and function that takes a trace resolves it here. Raises
    ``FileNotFoundError`` naming the bundled traces when neither exists.
    """
    p = Path(spec).expanduser()
    if base is not None and not p.is_absolute():
        p = base / p
    if p.is_file():
        return p
    if p.exists():
        raise FileNotFoundError(f"trace is not a file: {p}")
    text = str(spec)
    for path in bundled_traces():
        if text in (trace_name(path), path.name):
            return path
    names = ", ".join(sorted(bundled_by_name()))
    raise FileNotFoundError(
        f"trace file not found: {p} (nor a bundled trace name; bundled: {names}; "
        "`nandlab trace list` lists them)"
    )
