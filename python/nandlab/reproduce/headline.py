"""The paper's headline numbers next to ours: one row format for every reproduction.

A :class:`Headline` names a number the paper reports (its value, unit and table or figure)
and how ours is computed from a reproduction's per-trace rows. :func:`headline_rows` gives
one row per load level with ours per trace, the arithmetic and geometric mean over the
comparable traces (``docs/reproductions.md``, "How every reproduction is run") and a verdict:

* **matches** -- same direction and within ±30 % of the paper's value (:data:`TOLERANCE`,
  relative to the paper's value), or inside the bound the paper gives ("≤ +2 %");
* **differs** -- with the one-line reason the reproduction documents (:attr:`Headline.why`);
* **not comparable** -- with why: the paper gives no number, or no trace is comparable.

Values are in the row's unit: a relative change or a share in percent (``-48.0`` is -48 %),
anything else as it is (a ratio ``"x"``, ``"P/E"``). :func:`markdown` renders the rows as the
table of ``docs/reproductions.md`` (a test checks that the docs' table is the data's).
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from nandlab.reproduce.fmt import RESULT_FILE, out_console
from nandlab.reproduce.load import geo_mean, mean_of

Row = dict[str, Any]
#: The reproductions of ``nandlab reproduce all``, in the order of its report.
PAPERS: tuple[str, ...] = ("xia-diffecc", "ida", "efm", "flexecc", "flexlevel", "dpa", "dmm")
#: Ours within this fraction of the paper's value (same sign) counts as a match.
TOLERANCE = 0.30
MATCHES, DIFFERS, NOT_COMPARABLE = "matches", "differs", "not comparable"


def value_of(row: Mapping[str, Any], key: str | Callable[[Mapping[str, Any]], Any]) -> Any:
    """A row's value: a key (``"a.b"`` looks into nested dicts) or a function of the row."""
    if callable(key):
        return key(row)
    cur: Any = row
    for part in key.split("."):
        cur = cur.get(part) if isinstance(cur, Mapping) else None
    return cur


@dataclass(frozen=True)
class Headline:
    """A number of the paper and how ours is computed.

    ``kind`` says what ``ours`` gives per trace: ``"change"`` a ratio (scheme / reference),
    summarised by its arithmetic and geometric mean and shown as a relative change in percent;
    ``"share"`` a fraction, shown in percent; ``"value"`` a number in ``unit``. ``paper`` is
    the paper's value in the same unit (``None`` when it gives none: ``paper_text`` says what
    it gives); ``bound`` (``"<="``, ``">="``) makes it a bound. A trace is left out of the
    means when a run named in ``deciders`` is overloaded (``comparable_only``), or when
    ``when`` says its value does not measure the metric. ``stat = "max"`` takes the largest
    value instead of the mean. ``why`` is the one-line reason shown when ours differs,
    ``missing`` the reason when no trace has a value."""

    metric: str
    where: str
    paper: float | None
    ours: str | Callable[[Mapping[str, Any]], float | None]
    kind: str = "change"
    unit: str = "%"
    paper_text: str = ""
    bound: str | None = None
    why: str = ""
    deciders: tuple[str, ...] = ("baseline",)
    comparable_only: bool = True
    when: Callable[[Mapping[str, Any]], bool] | None = None
    stat: str = "mean"
    missing: str = ""

    def scale(self, v: float | None) -> float | None:
        """A per-trace value of ``ours`` in the row's unit."""
        if v is None or not math.isfinite(v):
            return None
        if self.kind == "change":
            return (v - 1.0) * 100.0
        return v * 100.0 if self.kind == "share" else v

    def text(self) -> str:
        """The paper's statement: ``paper_text`` or its value with the unit."""
        if self.paper_text:
            return self.paper_text
        if self.paper is None:
            return "—"
        bound = {"<=": "≤ ", ">=": "≥ "}.get(self.bound or "", "")
        sign = "+" if self.kind == "change" and self.paper > 0 else ""
        return f"{bound}{sign}{fmt_value(self.paper)} {self.unit}".rstrip()


def fmt_value(v: float | None) -> str:
    """A headline value: three significant digits, thousands separators; ``—`` if missing."""
    if v is None or not math.isfinite(v):
        return "—"
    if abs(v) >= 1000:
        return f"{v:,.0f}"
    if abs(v) >= 100 or v == int(v):
        return f"{v:.0f}" if abs(v) >= 100 else f"{v:g}"
    return f"{v:.3g}" if abs(v) >= 1 else f"{v:.2g}"


def verdict(h: Headline, mean: float | None, overloaded: Sequence[str]) -> tuple[str, str]:
    """(verdict, reason) of ours (``mean``, in the row's unit) against the paper's value."""
    if h.paper is None:
        return NOT_COMPARABLE, f"the paper gives {h.paper_text or 'no number'}"
    if mean is None:
        if overloaded:
            return NOT_COMPARABLE, f"no comparable trace ({', '.join(overloaded)} overloaded)"
        return NOT_COMPARABLE, h.missing or "no trace of this run measures it"
    if h.bound == "<=":
        ok = mean <= h.paper
    elif h.bound == ">=":
        ok = mean >= h.paper
    else:
        same = (mean > 0) == (h.paper > 0) or mean == h.paper
        ok = same and abs(mean - h.paper) <= TOLERANCE * abs(h.paper)
    if ok:
        return MATCHES, ""
    return DIFFERS, h.why or "see docs/reproductions.md"


def headline_rows(
    specs: Sequence[Headline],
    rows: Sequence[Mapping[str, Any]],
    overloaded_run: Callable[[str, str], bool | None],
    levels: Mapping[str, Sequence[str]],
) -> list[Row]:
    """One row per (load level, headline), levels outer: ours per trace of the level, the
    means over its comparable traces and the verdict. ``overloaded_run(trace, run)`` says
    whether a run is overloaded (:attr:`Headline.deciders`)."""
    by = {r["trace"]: r for r in rows}
    out: list[Row] = []
    for level, names in levels.items():
        for h in specs:
            raw, flag = {}, {}
            for t in names:
                r = by.get(t)
                if r is None:
                    continue
                if h.when is not None and not h.when(r):
                    continue  # this trace does not measure the metric
                v = value_of(r, h.ours)
                raw[t] = v if isinstance(v, (int, float)) and not isinstance(v, bool) else None
                flag[t] = h.comparable_only and any(bool(overloaded_run(t, d)) for d in h.deciders)
            use = [v for t, v in raw.items() if v is not None and not flag[t]]
            over = sorted(t for t in raw if flag[t])
            if h.stat == "max":
                mean, geo = h.scale(max(use, default=None)), None
            else:
                mean = h.scale(mean_of(use))
                geo = h.scale(geo_mean(use)) if h.kind == "change" else None
            v, why = verdict(h, mean, over)
            out.append({
                "metric": h.metric, "where": h.where, "level": level, "kind": h.kind,
                "unit": h.unit,
                "paper": h.paper, "paper_text": h.text(),
                "mean": mean, "geomean": geo,
                "per_trace": {t: h.scale(x) for t, x in raw.items()},
                "traces": len(use), "overloaded": over, "verdict": v, "reason": why,
            })  # fmt: skip
    return out


# --------------------------------------------------------------------------- rendering

#: Columns of a headline table: (header, row -> text).
COLUMNS: tuple[tuple[str, Callable[[Mapping[str, Any]], str]], ...] = (
    ("metric", lambda r: str(r["metric"])),
    ("paper", lambda r: f"{r['paper_text']} ({r['where']})"),
    ("ours: mean", lambda r: with_unit(r["mean"], r)),
    ("geo. mean", lambda r: with_unit(r.get("geomean"), r)),
    ("traces", lambda r: str(r["traces"])),
    ("verdict", lambda r: r["verdict"] + (f": {r['reason']}" if r.get("reason") else "")),
)


def with_unit(v: float | None, r: Mapping[str, Any]) -> str:
    if v is None:
        return "—"
    sign = "+" if r["unit"] == "%" and v > 0 and r.get("kind", "change") == "change" else ""
    return f"{sign}{fmt_value(v)} {r['unit']}".rstrip()


def per_trace_text(r: Mapping[str, Any]) -> str:
    """Ours per trace as ``trace value`` pairs (overloaded traces marked)."""
    over = set(r.get("overloaded") or ())
    return "; ".join(
        f"{t} {with_unit(v, r)}" + (" (overloaded)" if t in over else "")
        for t, v in (r.get("per_trace") or {}).items()
    )


def print_rows(rows: Sequence[Mapping[str, Any]], title: str) -> None:
    """The headline rows as a terminal table (one block per load level)."""
    from rich.table import Table

    levels = list(dict.fromkeys(r["level"] for r in rows))
    for level in levels:
        t = Table(title=title + (f" — level {level}" if len(levels) > 1 else ""),
                  title_justify="left")  # fmt: skip
        for i, (h, _) in enumerate(COLUMNS):
            t.add_column(h, justify="right" if i in (2, 3, 4) else "left")
        for r in rows:
            if r["level"] == level:
                t.add_row(*(f(r) for _, f in COLUMNS))
        out_console.print(t)


def markdown(rows: Sequence[Mapping[str, Any]], *, paper_column: bool = True) -> str:
    """The headline rows as a Markdown table (``docs/reproductions.md``): paper, metric, the
    paper's value, ours per trace, the mean, the load level and the verdict."""
    head = ["paper"] * paper_column + ["metric", "paper's value", "ours per trace", "ours: mean",
                                       "level", "verdict"]  # fmt: skip
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for r in rows:
        cells = [str(r.get("paper_name", ""))] * paper_column + [
            str(r["metric"]), f"{r['paper_text']} ({r['where']})", per_trace_text(r) or "—",
            with_unit(r["mean"], r), str(r["level"]),
            r["verdict"] + (f": {r['reason']}" if r.get("reason") else ""),
        ]  # fmt: skip
        lines.append("| " + " | ".join(c.replace("|", "\\|") for c in cells) + " |")
    return "\n".join(lines) + "\n"


def headline_of(out: Path) -> list[Row]:
    """Every paper's headline rows in ``out/<paper>/result.json`` (of its first load level),
    each with ``paper_name``: the rows of ``reproduce all``'s first page and of the table in
    ``docs/reproductions.md``."""
    rows: list[Row] = []
    for paper in PAPERS:
        p = out / paper / RESULT_FILE
        if not p.is_file():
            continue
        doc = json.loads(p.read_text(encoding="utf-8"))
        head = [r for r in doc.get("headline") or [] if isinstance(r, dict) and "verdict" in r]
        first = head[0]["level"] if head else None
        rows += [{"paper_name": paper, **r} for r in head if r.get("level") == first]
    return rows
