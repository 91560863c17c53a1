"""Bundled trace samples (``nandlab/data``; see ``PROVENANCE.md`` there)."""

from __future__ import annotations

from importlib import resources
from pathlib import Path

DEFAULT_TRACE = "pgbench_rw_slice.csv.gz"

#: Files in the data directory that are not traces.
_NOT_TRACES = {"PROVENANCE.md", "README.md", ".gitkeep", "__init__.py"}


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
