"""Which traces a reproduction runs (:mod:`~nandlab.reproduce.framework`): the paper's trace
table by the usual file names of each trace (searched in ``--traces`` only), our stand-ins
under their own names (:data:`~nandlab.reproduce.common.STANDINS`: the captured traces and the
bundled excerpts, an excerpt replaced by its full trace when a user has it) and the
``--quick`` subset (``docs/reproducing.md``, "1. The traces"). The framework re-exports
these names (``fw.Traces``, ``fw.standin``).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from nandlab.reproduce.common import STANDINS, TraceChoice


@dataclass(frozen=True)
class TraceDef:
    """A trace a reproduction runs when it is found: its name (the name it runs under), its
    usual file names (glob patterns, most preferred first), where it comes from
    (``"captured"``, ``"bundled excerpt"``, ``"ours"``...), whether the request cap applies to
    it, and the paper trace whose full file, when found, replaces it (an excerpt)."""

    name: str
    patterns: Sequence[str]
    source: str
    capped: bool = True
    superseded_by: str | None = None


def standin(name: str, source: str | None = None, *, capped: bool | None = None) -> TraceDef:
    """One of our stand-ins (:data:`~nandlab.reproduce.common.STANDINS`), under its own name:
    a captured trace (source ``"captured"``, cut to the request cap) or a bundled excerpt
    (``"bundled excerpt"``, whole, replaced by the paper's full trace when that is found)."""
    pats, full = STANDINS[name]
    src = source or ("bundled excerpt" if full else "captured")
    return TraceDef(name, pats, src, (full is None) if capped is None else capped, full)


@dataclass
class Selection:
    """The traces a run of a reproduction uses (before the load level is chosen)."""

    traces: list[TraceChoice]
    #: the paper's traces not found (a user has them or not)
    missing: list[str]
    searched: list[Path]
    notes: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class Traces:
    """Which traces a reproduction runs.

    Without ``--quick``: every trace of the paper's table (``paper``, searched in the
    ``--traces`` directories only) and our stand-ins (``ours``, also searched in the bundled
    samples and the workspace's captured traces), each under its own name. With ``--quick``:
    the ``quick`` list, where an entry that is a tuple takes the first alternative found.
    Traces that take a cap are cut to their first ``--max-requests`` requests (default
    ``default_cap``, ``quick_cap`` with ``--quick``; 0 = whole traces).
    """

    #: the paper's trace table ("Table II"); names the JSON key of the missing ones
    table: str = ""
    #: the paper's traces by their usual file names
    paper: Mapping[str, Sequence[str]] = field(default_factory=dict)
    ours: Sequence[TraceDef] = ()
    quick: Sequence[TraceDef | tuple[TraceDef, ...]] = ()
    default_cap: int = 0
    quick_cap: int = 0
    #: the note of a --quick run (what it leaves out)
    quick_note: str = ""
    #: when set, the missing paper traces are said in a note ("{missing}": their names)
    missing_note: str | None = None

    @property
    def missing_key(self) -> str:
        """The JSON key of the missing paper traces (``missing_table_ii``)."""
        return "missing_" + re.sub(r"[^a-z0-9]+", "_", self.table.lower()).strip("_")

    def select(self, dirs: Sequence[Path], *, quick: bool, max_requests: int | None) -> Selection:
        """The traces found under ``dirs`` (and the default directories for ours)."""
        from nandlab.experiment import default_trace_dirs, find_traces

        search = list(dict.fromkeys([*map(Path, dirs), *default_trace_dirs()]))
        sel = Selection([], [], search)
        if quick:
            cap = max_requests if max_requests is not None else self.quick_cap
            for entry in self.quick:
                alts = entry if isinstance(entry, tuple) else (entry,)
                for i, t in enumerate(alts):
                    found, _ = find_traces(search, {t.name: t.patterns})
                    if t.name in found:
                        sel.traces.append(self._choice(t, found[t.name], cap))
                        if i:
                            sel.notes.append(f"{alts[0].name} not found: {t.name} stands in")
                        break
                else:
                    if len(alts) > 1:
                        raise FileNotFoundError(
                            "--quick needs one of "
                            + " or ".join(a.patterns[0].rstrip("*") for a in alts)
                            + "; none was found"
                        )
            if not sel.traces:
                names = ", ".join((e if isinstance(e, TraceDef) else e[0]).name for e in self.quick)
                raise FileNotFoundError(f"--quick needs the bundled traces ({names}); none found")
            if self.quick_note:
                sel.notes.append(self.quick_note)
            return sel
        cap = max_requests if max_requests is not None else self.default_cap
        paper, sel.missing = find_traces(list(map(Path, dirs)), self.paper)
        sel.traces += [TraceChoice(n, p, self.table, cap or None) for n, p in paper.items()]
        found, _ = find_traces(search, {t.name: t.patterns for t in self.ours})
        for t in self.ours:
            if t.name not in found:
                continue
            if t.superseded_by is not None and t.superseded_by in paper:
                sel.notes.append(f"{t.name} skipped: the full {t.superseded_by} trace was found")
                continue
            sel.traces.append(self._choice(t, found[t.name], cap))
        if self.missing_note is not None and sel.missing:
            sel.notes.append(self.missing_note.format(missing=", ".join(sel.missing)))
        return sel

    @staticmethod
    def _choice(t: TraceDef, path: Path, cap: int) -> TraceChoice:
        return TraceChoice(t.name, path, t.source, (cap or None) if t.capped else None)


__all__ = ["Selection", "TraceDef", "Traces", "standin"]
