"""The report's inputs and results: the runs and paper results read from the directory, and the
:class:`Figure`, :class:`ReportResult` and :class:`ReportError` the other report modules share."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

REPORT_FILE = "report.html"
#: Most runs of a trace drawn one line (or bar) each; a trace with more gets figures that
#: aggregate: a line per scheme (the median over its runs) with a band over the other axes.
MAX_LINES = 12


@dataclass
class Figure:
    """A figure of the report: its id, caption and files."""

    name: str
    title: str
    caption: str
    png: Path
    svg: Path


@dataclass
class ReportResult:
    """What :func:`build_report` wrote."""

    html: Path
    kind: str
    runs: int
    figures: list[Figure] = field(default_factory=list)
    size_bytes: int = 0
    build_s: float = 0.0


class ReportError(ValueError):
    """DIR holds nothing a report can be made of."""


# --------------------------------------------------------------------------- reading DIR


def _read_json(p: Path) -> Any:
    try:
        return json.loads(p.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


def _paper_results(d: Path) -> list[dict[str, Any]]:
    """JSON files in ``d`` written by ``reproduce`` (they have ``paper`` and ``table``)."""
    out = []
    for p in sorted(d.glob("*.json")):
        if p.name.startswith("."):
            continue
        obj = _read_json(p)
        if isinstance(obj, dict) and "paper" in obj and "table" in obj and obj["paper"] != "sweep":
            obj["_file"] = p.name
            out.append(obj)
    return out


@dataclass
class _Run:
    row: dict[str, Any]
    report: dict[str, Any] | None

    @property
    def trace(self) -> str:
        return str(self.row.get("trace") or "")

    @property
    def label(self) -> str:
        return str(self.row.get("label") or self.row.get("scheme") or "")


def _load_runs(d: Path) -> list[_Run]:
    from nandlab.experiment import load_runs

    df = load_runs(d)
    runs = []
    for r in df.iter_rows(named=True):
        rep = None
        if r.get("report"):
            try:
                rep = json.loads(r["report"])
            except ValueError:
                rep = None
        runs.append(_Run(r, rep))
    return runs
