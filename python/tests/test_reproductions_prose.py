"""The prose of docs/reproductions.md quotes the quick run's numbers as they are in docs/data.

A number the prose takes from the headline data of ``nandlab reproduce all --quick``
(``docs/data/reproductions-headline.json``) is followed by a marker naming the row it comes
from (the convention is documented at the top of docs/reproductions.md)::

    -27.1 %<!-- q: xia-diffecc; read response vs normal; pgbench_wh -->

``q: PAPER; METRIC; WHAT`` names the row by its paper and metric (exactly as in the data) and
``WHAT`` is a trace of the row's ``per_trace``, ``mean`` or ``geomean``. The number right
before the marker (a unit between them is allowed) must equal the data's value rounded to
the digits the prose prints. When the data is regenerated and a quoted number moves, this
test names the marker, so the prose is updated (or its number flagged) instead of going
silently stale.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs" / "reproductions.md"
DOCS_DATA = ROOT / "docs" / "data" / "reproductions-headline.json"

#: A number, an optional unit, then the marker.
#: (The minus may be U+2212, the unit a multiplication sign.)
MARKED = re.compile(
    "(?P<num>[+\\-\u2212]?\\d[\\d,]*(?:\\.\\d+)?)"
    "\\s*(?:%|\u00d7|x|P/E)?\\s*<!-- q: (?P<key>[^>]*?) -->"
)
#: Any marker, to catch one that does not follow a number.
MARKER = re.compile(r"<!-- q: (?P<key>[^>]*?) -->")


def _rows() -> dict[tuple[str, str], dict[str, Any]]:
    rows = json.loads(DOCS_DATA.read_text(encoding="utf-8"))
    return {(r["paper_name"], r["metric"]): r for r in rows}


def _value(row: dict[str, Any], what: str) -> float | None:
    if what in ("mean", "geomean"):
        v = row.get(what)
    else:
        v = (row.get("per_trace") or {}).get(what, "missing")
        assert v != "missing", f"{what!r} is not a trace of {row['metric']!r}"
    return v if isinstance(v, (int, float)) else None


def _number(text: str) -> tuple[float, float]:
    """A printed number and half a unit of its last digit (the rounding it allows)."""
    t = text.replace("\u2212", "-").replace(",", "")
    decimals = len(t.split(".")[1]) if "." in t else 0
    return float(t), 0.5 * 10.0**-decimals


def test_every_marker_follows_a_number() -> None:
    text = DOCS.read_text(encoding="utf-8")
    assert len(MARKED.findall(text)) == len(MARKER.findall(text))


def test_prose_numbers_marked_q_are_the_quick_data() -> None:
    text = DOCS.read_text(encoding="utf-8")
    rows = _rows()
    found = list(MARKED.finditer(text))
    assert len(found) >= 20, "the prose quotes the quick data with markers"
    wrong = []
    for m in found:
        parts = [p.strip() for p in m["key"].split(";")]
        assert len(parts) == 3, f"marker {m['key']!r}: PAPER; METRIC; TRACE|mean|geomean"
        paper, metric, what = parts
        row = rows.get((paper, metric))
        assert row is not None, f"marker {m['key']!r}: no such row in {DOCS_DATA.name}"
        want = _value(row, what)
        got, half = _number(m["num"])
        if want is None or abs(got - want) > half * 1.0001:
            line = text.count("\n", 0, m.start()) + 1
            wrong.append(f"line {line}: {m['num']} for {m['key']!r}, data {want}")
    assert not wrong, "\n".join(wrong)


def test_marker_convention_is_documented() -> None:
    head = DOCS.read_text(encoding="utf-8").split("## ", 1)[0]
    assert "<!-- q: " in head and "test_reproductions_prose.py" in head
