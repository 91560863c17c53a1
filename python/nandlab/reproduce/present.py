"""The tables and figures of a reproduction (:mod:`~nandlab.reproduce.framework` re-exports
every name): a table's columns and cells (:class:`Col`, :func:`cell`; a column per scheme:
:func:`scheme_cols`), a table of the output (:class:`Table`, :func:`render`,
:func:`print_table`), the checks as a table (:func:`print_checks`), and a figure file
(:class:`Fig`) drawn from the rows of an analysis or of :class:`TraceRows` (:func:`bars`,
:func:`lines`, :func:`stacked`, :func:`cdfs`, :func:`size_sweep`; values by :data:`Getter`:
:func:`run_value`, :func:`run_ratio`).
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from nandlab.reproduce.fmt import KIB, fmt_num, fmt_pct, out_console
from nandlab.reproduce.headline import value_of
from nandlab.reproduce.load import ratio

Row = dict[str, Any]


class _Traces(Protocol):
    @property
    def traces(self) -> list[str]: ...


class TableSource(Protocol):
    """What a :class:`Table` renders: an analysis (its per-trace rows, and its results' trace
    rows, whose overloaded rows are marked)."""

    @property
    def trace_rows(self) -> list[Row]: ...

    @property
    def res(self) -> _Traces: ...


class RowSource(Protocol):
    """What the figures (:class:`Fig`) draw from: an analysis of the grid's runs
    (:class:`~nandlab.reproduce.framework.Analysis`), or :class:`TraceRows` made otherwise."""

    @property
    def trace_rows(self) -> list[Row]: ...

    @property
    def overloaded(self) -> set[str]: ...

    def row(self, trace: str) -> Row: ...


@dataclass
class TraceRows:
    """Rows per trace made without the grid (``reproduce dmm``: the object device's
    closed-loop runs, where no trace is overloaded), for the same figures (:class:`Fig`)."""

    rows: list[Row]
    overloaded: set[str] = field(default_factory=set)

    @property
    def trace_rows(self) -> list[Row]:
        return self.rows

    def row(self, trace: str) -> Row:
        return next((r for r in self.rows if r.get("trace") == trace), {})


# --------------------------------------------------------------------------- tables, figures


@dataclass(frozen=True)
class Col:
    """A table column: header, value (row key or function) and format: ``"num"``,
    ``"change"`` (a ratio shown as a relative change), ``"pct"`` (a relative change as a
    fraction), ``"share"`` (a fraction), ``"int"``, ``"k"`` (a time scale), ``"text"``."""

    header: str
    value: str | Callable[[Mapping[str, Any]], Any]
    fmt: str = "num"


def scheme_cols(
    key: str, schemes: Iterable[str], labels: Mapping[str, str], fmt: str = "num", suffix: str = ""
) -> list[Col]:
    """A column per scheme ``s``: row key ``key.format(s=s)``, headed by its label and
    ``suffix``."""
    return [Col(f"{labels[s]}{suffix}", key.format(s=s), fmt) for s in schemes]


def cell(v: Any, fmt: str) -> str:
    """A table cell in format ``fmt`` (see :class:`Col`)."""
    if fmt == "text":
        return "—" if v is None else str(v)
    if fmt == "change":
        return fmt_pct(None if v is None else v - 1.0)
    if fmt == "pct":
        return fmt_pct(v)
    if fmt == "share":
        return fmt_pct(v, signed=False)
    if fmt == "int":
        return fmt_num(None if v is None else round(v))
    if fmt == "k":
        return "—" if v is None else f"{v:g}"
    return fmt_num(v)


@dataclass(frozen=True)
class Table:
    """A table of the output (printed, and in the result JSON as it is printed): one line per
    row of ``rows`` (default: the per-trace rows)."""

    title: str
    columns: Sequence[Col]
    #: analysis -> the rows (default: its per-trace rows)
    rows: Callable[[Any], Sequence[Mapping[str, Any]]] | None = None

    def render(self, an: TableSource) -> dict[str, Any] | None:
        """``{"title", "columns", "rows"}`` with every cell as text; ``None`` without rows."""
        rows = self.rows(an) if self.rows is not None else an.trace_rows
        return render(self.title, self.columns, rows, an.res.traces) if rows else None


def render(
    title: str,
    columns: Sequence[Col],
    rows: Iterable[Mapping[str, Any]],
    traces: Collection[str] = (),
) -> dict[str, Any]:
    """A table as printed and filed (``{"title", "columns", "rows"}``, every cell as text, see
    :func:`cell`): one line per row; the first cell of a row of ``traces`` that is overloaded
    says so. :meth:`Table.render` of an analysis, and tables of rows made without the grid."""
    lines = []
    for r in rows:
        cells = [cell(value_of(r, c.value), c.fmt) for c in columns]
        if r.get("overloaded") and r.get("trace") in traces:
            cells[0] += " (overloaded)"
        lines.append(cells)
    return {"title": title, "columns": [c.header for c in columns], "rows": lines}


def print_table(t: Mapping[str, Any] | None) -> None:
    """A rendered table (:meth:`Table.render`) on the terminal."""
    from rich.table import Table as RichTable

    if not t:
        return
    rt = RichTable(title=t["title"], title_justify="left")
    for i, c in enumerate(t["columns"]):
        rt.add_column(c, justify="left" if i == 0 else "right")
    for cells in t["rows"]:
        rt.add_row(*(c.replace(" (overloaded)", " [red](overloaded)[/]") for c in cells))
    out_console.print(rt)


def print_checks(checks: Sequence[Mapping[str, Any]], title: str) -> None:
    """Checks in the result JSON's form as a table on the terminal (``passed`` None: not
    answered, a run failed)."""
    from rich.table import Table as RichTable

    t = RichTable(title=title)
    for c in ("check", "result", "values"):
        t.add_column(c)
    for c in checks:
        res = "n/a (a run failed)" if c["passed"] is None else ("pass" if c["passed"] else "FAIL")
        t.add_row(c["name"], res, c["detail"])
    out_console.print(t)


@dataclass(frozen=True)
class Fig:
    """A figure file (PNG and SVG) of :mod:`nandlab.figures`: ``kind`` is ``"bars"``
    (:func:`~nandlab.figures.grouped_bars`), ``"stacked"`` or ``"lines"``; ``data`` gives its
    first argument from the analysis (a :class:`RowSource`; ``None``: the figure is not
    drawn), ``options`` the rest; ``"custom"``: ``data`` draws the figure itself (a matplotlib
    figure). Bar charts fade and leave out of the average the overloaded traces."""

    name: str
    kind: str
    #: (analysis or :class:`TraceRows`) -> the figure's data
    data: Callable[[Any], Any]
    options: Mapping[str, Any] = field(default_factory=dict)

    def draw(self, an: RowSource, out: Path) -> list[Path]:
        from nandlab import figures

        data = self.data(an)
        if not data:
            return []
        if self.kind == "bars":
            opts = {"overloaded": an.overloaded, **self.options}
            schemes = opts.pop("schemes")
            return figures.grouped_bars(data, schemes, out / self.name, **opts)
        if self.kind == "custom":  # data gave a matplotlib figure (nandlab.figures._figure)
            return figures.save(data, out / self.name)
        if self.kind == "stacked":
            opts = dict(self.options)
            return figures.stacked_bars(data, opts.pop("categories"), out / self.name, **opts)
        return figures.sweep_lines(data, out / self.name, **self.options)


#: A value of a figure or a table: a row key pattern (``"{s}_mean_us"``, formatted with the
#: scheme ``s`` or the parameter ``x``; a dotted key looks into nested dicts) or a function
#: ``(analysis, trace, **kw) -> value``.
Getter = str | Callable[..., Any]


def get(an: RowSource, trace: str, key: Getter, **kw: Any) -> Any:
    """The value ``key`` (a :data:`Getter`) of ``trace``."""
    if callable(key):
        return key(an, trace, **kw)
    return value_of(an.row(trace), key.format(**kw))


def _traces(an: RowSource, traces: Callable[[Any], Sequence[str]] | None) -> Sequence[str]:
    return traces(an) if traces is not None else [r["trace"] for r in an.trace_rows]


def bars(
    name: str,
    panels: Mapping[str, Getter],
    schemes: Sequence[str],
    *,
    traces: Callable[[Any], Sequence[str]] | None = None,
    keep: Callable[[Mapping[str, Any]], bool] | None = None,
    **options: Any,
) -> Fig:
    """Grouped bars (:func:`~nandlab.figures.grouped_bars`): per panel title, a group per trace
    (``traces``, default every trace row; ``keep`` filters a trace by its values) and a bar per
    scheme, the value ``panels[title]`` with ``s`` = the scheme."""

    def data(an: RowSource) -> dict[str, Any]:
        out = {}
        for title, key in panels.items():
            d = {t: {s: get(an, t, key, s=s) for s in schemes} for t in _traces(an, traces)}
            out[title] = {t: v for t, v in d.items() if keep is None or keep(v)}
        return out if any(out.values()) else {}

    return Fig(name, "bars", data, {"schemes": list(schemes), **options})


def lines(
    name: str,
    panels: Mapping[str, Getter],
    xs: Sequence[float],
    *,
    traces: Callable[[Any], Sequence[str]] | None = None,
    series: Sequence[str] | None = None,
    **options: Any,
) -> Fig:
    """Lines against a parameter (:func:`~nandlab.figures.sweep_lines`): per panel a line per
    trace of ``(x, value)`` with ``x`` from ``xs``; with ``series`` a panel per trace and a line
    per series (the value's ``s``) instead."""

    def data(an: RowSource) -> dict[str, Any]:
        ts = _traces(an, traces)
        if series is not None:
            (key,) = panels.values()
            return {t: {s: [(float(x), get(an, t, key, s=s, x=x)) for x in xs] for s in series}
                    for t in ts}  # fmt: skip
        out = {p: {t: [(float(x), get(an, t, k, x=x)) for x in xs] for t in ts}
               for p, k in panels.items()}  # fmt: skip
        return out if any(ts) else {}

    return Fig(name, "lines", data, dict(options))


def stacked(
    name: str,
    key: Getter,
    categories: Sequence[str],
    *,
    groups: Callable[[Any], Sequence[tuple[str, str, dict[str, Any]]]] | None = None,
    **options: Any,
) -> Fig:
    """Stacked shares (:func:`~nandlab.figures.stacked_bars`): a bar per trace (or per
    ``(label, trace, kw)`` of ``groups``) of the ``categories`` (the value's ``k``)."""

    def data(an: RowSource) -> dict[str, Any]:
        gs = groups(an) if groups is not None else [(t, t, {}) for t in _traces(an, None)]
        return {lab: {k: get(an, t, key, k=k, **kw) for k in categories} for lab, t, kw in gs}

    return Fig(name, "stacked", data, {"categories": list(categories), **options})


def run_value(name: str, metric: str) -> Callable[..., Any]:
    """A :data:`Getter` of a run's metric: ``name`` (formatted with the scheme ``s``, ``x``)
    names the run in the trace's row."""
    return lambda an, t, **kw: an.res.get(t, name.format(**kw)).get(metric.format(**kw))


def cdfs(name: str, key: str, styles: Mapping[str, str], title: str) -> Fig:
    """Response-time CDFs on a log time axis: a line per trace row and scheme ``s`` of
    ``styles`` (its matplotlib line style) from the row's ``key.format(s=s)`` (a report's
    ``host.cdf``: ``all_us`` against ``quantiles``); no line where the row has no CDF."""

    def draw(an: RowSource) -> Any:
        from nandlab.figures import _figure, legend_outside

        fig = _figure(7, 3.5)
        ax = fig.subplots()
        for r in an.trace_rows:
            for s, style in styles.items():
                cdf = value_of(r, key.format(s=s))
                if isinstance(cdf, Mapping) and cdf.get("all_us") and cdf.get("quantiles"):
                    ax.plot(cdf["all_us"], cdf["quantiles"], style, label=f"{r['trace']} {s}")
        ax.set_xscale("log")
        ax.set(xlabel="response time (µs)", ylabel="cumulative fraction")
        ax.set_title(title, fontsize=10)
        legend_outside(fig, ax, where="right", fontsize=6)
        return fig

    return Fig(name, "custom", draw)


def size_sweep(
    name: str, prefix: str, panels: Mapping[str, tuple[str, str | None]], **options: Any
) -> Fig:
    """Lines over a size sweep from :class:`TraceRows` whose rows hold the runs by key
    (``"<prefix><bytes>"``): per panel ``(metric, reference run)``, per trace the sweep's runs
    as (size in KiB, the metric / the reference run's; the metric itself without one)."""

    def points(t: Mapping[str, Any], m: str, ref: str | None) -> list[tuple[int, float]]:
        base = t[ref][m] if ref else 1
        return [(int(k.split("_")[1]) // KIB, r[m] / base) for k, r in t.items()
                if k.startswith(prefix) and r[m] is not None and base]  # fmt: skip

    def data(rs: TraceRows) -> dict[str, Any]:
        return rs.trace_rows and {title: {t["trace"]: points(t, m, ref) for t in rs.trace_rows}
                                  for title, (m, ref) in panels.items()}  # fmt: skip

    return Fig(name, "lines", data, options)


def run_ratio(name: str, metric: str, ref: str) -> Callable[..., Any]:
    """A :data:`Getter` of a run's metric over that of the trace's run ``ref``: ``name`` and
    ``metric`` as :func:`run_value`'s (e.g. a sweep point normalised to the baseline)."""

    def f(an: Any, t: str, **kw: Any) -> float | None:
        m = metric.format(**kw)
        return ratio(an.res.get(t, name.format(**kw)).get(m), an.res.get(t, ref).get(m))

    return f
