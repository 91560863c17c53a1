"""Paper-style figures (matplotlib, Agg; each saved as PNG and SVG): the one figure style of
every ``nandlab reproduce`` paper and of ``nandlab report``.

* :func:`grouped_bars` -- a metric per trace x scheme normalised to a reference scheme, with an
  "Average" group (Xia & Xiao Figs. 7, 8, 10); several panels side by side.
* :func:`stacked_bars` -- the share of operation classes per trace (Fig. 9).
* :func:`sweep_lines` -- a metric against a parameter, one line per trace (Figs. 5, 6).

The style, in one place:

* every bar series has its colour and hatch (:data:`PALETTE`, :data:`HATCHES`), so figures read
  in grey print;
* a normalised plot gives each group's reference value with its unit (``reference_unit``);
* a bar too short to see (near zero) carries its value as a label, so it is not mistaken for
  missing data (:func:`label_small_bars`);
* axes are never zoomed into noise: no offset labels ("+2.728e-1"), a nearly constant line is
  drawn on a range that shows it is flat, integer parameters get integer ticks
  (:func:`tidy_axis`);
* legends sit outside the axes, above or to the right, never on the data (:func:`legend_outside`).

The functions use :class:`matplotlib.figure.Figure` directly, so they neither need nor change
pyplot's global backend, and are safe in worker processes and headless CI. Each ``*_figure``
builder returns the figure (tests inspect it); the plain name builds and saves it.
"""

from __future__ import annotations

import math
from collections.abc import Collection, Mapping, Sequence
from pathlib import Path
from typing import Any

#: Paper-like greys/blues, one per scheme or class (cycled).
PALETTE = ("#9e9e9e", "#4c72b0", "#dd8452", "#55a868", "#c44e52", "#8172b2", "#937860")
HATCHES = ("", "//", "xx", "..", "\\\\", "++", "oo")

Number = float


def _figure(width: float, height: float) -> Any:
    from matplotlib.figure import Figure

    return Figure(figsize=(width, height), layout="constrained")


def save(fig: Any, out_base: str | Path) -> list[Path]:
    """Save ``fig`` as ``<out_base>.png`` and ``<out_base>.svg``; return both paths."""
    base = Path(out_base)
    base.parent.mkdir(parents=True, exist_ok=True)
    paths = []
    for ext in ("png", "svg"):
        p = base.with_name(base.name + "." + ext)
        kw: dict[str, Any] = {"metadata": {"Date": None}} if ext == "svg" else {"dpi": 150}
        fig.savefig(p, **kw)
        paths.append(p)
    return paths


#: Beside the figures of a directory: each figure's digest of what it was drawn from.
CACHE_FILE = ".figures.json"


def cached(out_base: str | Path, material: Any, build: Any) -> list[Path]:
    """Draw ``build()`` and save it as ``out_base``.png/.svg, unless both files exist and were
    drawn from the same ``material`` (data and options) by this module's code: a reproduction
    run again with nothing new redraws nothing (matplotlib's rendering is most of its time)."""
    import hashlib
    import json
    import os

    base = Path(out_base)
    paths = [base.with_name(base.name + ext) for ext in (".png", ".svg")]
    h = hashlib.sha256(Path(__file__).read_bytes())
    h.update(json.dumps(material, sort_keys=True, default=repr).encode())
    key = h.hexdigest()
    index = base.parent / CACHE_FILE
    try:
        known = json.loads(index.read_text(encoding="utf-8")) if index.is_file() else {}
    except (OSError, ValueError):
        known = {}
    if known.get(base.name) == key and all(p.is_file() for p in paths):
        return paths
    out = save(build(), base)
    known[base.name] = key
    tmp = index.with_name(f"{index.name}.tmp-{os.getpid()}")
    tmp.write_text(json.dumps(known, indent=0, sort_keys=True), encoding="utf-8")
    tmp.replace(index)
    return out


def _finite(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)


#: A bar shorter than this fraction of its axis' height gets its value as a label.
SMALL_BAR_FRACTION = 0.02
#: A line whose values vary by less than this fraction of their magnitude is drawn as flat:
#: the axis spans at least ±5 % around it (never a zoom into rounding noise).
FLAT_FRACTION = 1e-3


def fmt_value(v: float) -> str:
    """A value for a label: 3 significant digits, thousands separators, 0 as "0"."""
    if v == 0:
        return "0"
    if abs(v) >= 1000:
        return f"{v:,.0f}"
    return f"{v:.3g}"


def label_small_bars(ax: Any, bars: Any, values: Sequence[float]) -> None:
    """Write the value above every bar of ``bars`` too short to see (below
    :data:`SMALL_BAR_FRACTION` of the axis' height), so a zero reads as zero, not as a gap."""
    lo, hi = ax.get_ylim()
    span = hi - lo
    if span <= 0:
        return
    for b, v in zip(bars, values):
        if abs(v) < SMALL_BAR_FRACTION * span:
            ax.annotate(
                fmt_value(v),
                (b.get_x() + b.get_width() / 2, max(v, 0.0)),
                xytext=(0, 2),
                textcoords="offset points",
                ha="center",
                va="bottom",
                fontsize=6,
                rotation=90,
            )


def tidy_axis(ax: Any, xs: Sequence[float] = (), ys: Sequence[float] = ()) -> None:
    """Plain tick labels without an offset; integer ticks when every x is an integer; and for
    values that are (nearly) constant, a y range of ±5 % around them instead of a zoom into
    their last digits."""
    from matplotlib.ticker import MaxNLocator, ScalarFormatter

    for axis in (ax.xaxis, ax.yaxis):
        if axis.get_scale() == "linear":
            f = ScalarFormatter(useOffset=False)
            f.set_scientific(False)
            axis.set_major_formatter(f)
    if xs and all(float(x).is_integer() for x in xs):
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    ys = [float(y) for y in ys if _finite(y)]
    if ys and ax.get_yscale() == "linear":
        lo, hi = min(ys), max(ys)
        mag = max(abs(lo), abs(hi))
        if mag > 0 and hi - lo <= FLAT_FRACTION * mag:
            mid = (lo + hi) / 2
            ax.set_ylim(mid - 0.05 * mag, mid + 0.05 * mag)


def legend_outside(fig: Any, ax: Any, *, where: str = "top", ncols: int = 1, **kw: Any) -> None:
    """A legend outside the axes (``where``: "top" of the figure, or "right" of ``ax``), never
    over the data."""
    handles, names = ax.get_legend_handles_labels()
    if not handles:
        return
    if where == "top":
        fig.legend(
            handles, names, loc="outside upper center", ncols=max(1, ncols), frameon=False, **kw
        )
    else:
        ax.legend(
            handles,
            names,
            loc="upper left",
            bbox_to_anchor=(1.01, 1.0),
            frameon=False,
            **{"fontsize": 7, **kw},
        )


def normalise(
    data: Mapping[str, Mapping[str, Number | None]], reference: str
) -> dict[str, dict[str, Number | None]]:
    """Each trace's values divided by its ``reference`` scheme's (``None`` where undefined)."""
    out: dict[str, dict[str, Number | None]] = {}
    for trace, by_scheme in data.items():
        ref = by_scheme.get(reference)
        out[trace] = {
            s: (v / ref if _finite(v) and _finite(ref) and ref else None)  # type: ignore[operator]
            for s, v in by_scheme.items()
        }
    return out


def with_average(
    norm: Mapping[str, Mapping[str, Number | None]],
    schemes: Sequence[str],
    label: str = "Average",
    exclude: Collection[str] = (),
) -> dict[str, dict[str, Number | None]]:
    """``norm`` plus an average group (arithmetic mean of the defined ratios per scheme over the
    traces not in ``exclude``)."""
    out = {t: dict(v) for t, v in norm.items()}
    avg: dict[str, Number | None] = {}
    for s in schemes:
        vals = [v[s] for t, v in norm.items() if t not in exclude and _finite(v.get(s))]
        avg[s] = sum(vals) / len(vals) if vals else None  # type: ignore[arg-type]
    out[label] = avg
    return out


def grouped_bars(
    panels: Mapping[str, Mapping[str, Mapping[str, Number | None]]],
    schemes: Sequence[str],
    out_base: str | Path,
    *,
    reference: str | None = None,
    scheme_labels: Mapping[str, str] | None = None,
    ylabel: str = "normalised",
    title: str = "",
    average: bool = True,
    overloaded: Collection[str] = (),
    reference_unit: str | None = None,
) -> list[Path]:
    """Grouped bars, one group per trace and one bar per scheme, one panel per entry.

    ``panels`` maps a panel title to ``{trace: {scheme: value}}``. With ``reference`` the values
    are divided by that scheme's per trace (so its bars are 1.0) and a dashed line marks 1.0;
    with ``reference_unit`` (e.g. ``"µs"``) each group's label also gives the reference's
    absolute value. ``average`` appends an "Average" group over the traces not in
    ``overloaded``; those are drawn faded and labelled "overloaded" (not comparable,
    :mod:`nandlab.reproduce.load`). Missing values leave a gap; near-zero bars carry their
    value.
    """
    kw = dict(reference=reference, scheme_labels=scheme_labels, ylabel=ylabel, title=title,
              average=average, overloaded=sorted(overloaded),
              reference_unit=reference_unit)  # fmt: skip
    return cached(
        out_base, ("grouped_bars", panels, schemes, kw),
        lambda: grouped_bars_figure(panels, schemes, **kw),
    )  # fmt: skip


def grouped_bars_figure(
    panels: Mapping[str, Mapping[str, Mapping[str, Number | None]]],
    schemes: Sequence[str],
    *,
    reference: str | None = None,
    scheme_labels: Mapping[str, str] | None = None,
    ylabel: str = "normalised",
    title: str = "",
    average: bool = True,
    overloaded: Collection[str] = (),
    reference_unit: str | None = None,
) -> Any:
    """The figure of :func:`grouped_bars`, not saved."""
    n = max(1, len(panels))
    traces = sorted({t for d in panels.values() for t in d}, key=_trace_order(panels))
    width = max(6.0, 0.55 * (len(traces) + 1) * max(1, len(schemes)) / 2 + 2)
    fig = _figure(width, 3.2 * n)
    axes = fig.subplots(n, 1, squeeze=False)[:, 0]
    labels = scheme_labels or {}
    for ax, (ptitle, data) in zip(axes, panels.items()):
        vals = normalise(data, reference) if reference else {t: dict(v) for t, v in data.items()}
        n_ok = sum(1 for t in vals if t not in overloaded)
        avg_label = "Average" if not overloaded else f"Average ({n_ok} comparable)"
        if average:
            vals = with_average(vals, schemes, avg_label, exclude=overloaded)
        groups = [t for t in traces if t in vals] + ([avg_label] if average else [])
        bw = 0.8 / max(1, len(schemes))
        drawn: list[tuple[Any, list[float]]] = []
        for i, s in enumerate(schemes):
            xs, ys = [], []
            for g, t in enumerate(groups):
                v = vals.get(t, {}).get(s)
                if _finite(v):
                    xs.append(g - 0.4 + bw * (i + 0.5))
                    ys.append(v)
            bars = ax.bar(
                xs,
                ys,
                bw,
                label=labels.get(s, s),
                color=PALETTE[i % len(PALETTE)],
                hatch=HATCHES[i % len(HATCHES)],
                edgecolor="black",
                linewidth=0.5,
            )
            faded = {g for g, t in enumerate(groups) if t in overloaded}
            kept = [g for g, t in enumerate(groups) if _finite(vals.get(t, {}).get(s))]
            for b, g in zip(bars, kept):
                if g in faded:
                    b.set_alpha(0.35)
            drawn.append((bars, ys))
        if reference:
            ax.axhline(1.0, color="black", linestyle="--", linewidth=0.7)
        tidy_axis(ax)
        for bars, ys in drawn:
            label_small_bars(ax, bars, ys)
        ticks = []
        for t in groups:
            label = t + ("\n(overloaded)" if t in overloaded else "")
            ref_v = data.get(t, {}).get(reference) if reference else None
            if reference_unit and _finite(ref_v):
                label += f"\n{labels.get(reference, reference)} {_fmt_abs(ref_v)} {reference_unit}"
            ticks.append(label)
        ax.set_xticks(range(len(groups)))
        ax.set_xticklabels(ticks, rotation=30, ha="right", fontsize=8)
        ax.set_ylabel(ylabel)
        ax.set_title(ptitle, fontsize=10)
        ax.grid(axis="y", alpha=0.3)
        ax.set_axisbelow(True)
    if title:
        fig.suptitle(title)
    legend_outside(fig, axes[0], ncols=len(schemes))
    return fig


def _fmt_abs(v: float) -> str:
    """An absolute value for a tick label: 3 significant digits, thousands separators."""
    if abs(v) >= 1000:
        return f"{v:,.0f}"
    return f"{v:.3g}"


def _trace_order(panels: Mapping[str, Mapping[str, Any]]) -> Any:
    order: dict[str, int] = {}
    for d in panels.values():
        for t in d:
            order.setdefault(t, len(order))
    return lambda t: order[t]


def stacked_bars(
    data: Mapping[str, Mapping[str, Number | None]],
    categories: Sequence[str],
    out_base: str | Path,
    *,
    category_labels: Mapping[str, str] | None = None,
    fractions: bool = True,
    ylabel: str | None = None,
    title: str = "",
) -> list[Path]:
    """One stacked bar per trace of ``categories`` (as fractions of the bar's total)."""
    kw = dict(category_labels=category_labels, fractions=fractions, ylabel=ylabel, title=title)
    return cached(
        out_base, ("stacked_bars", data, categories, kw),
        lambda: stacked_bars_figure(data, categories, **kw),
    )  # fmt: skip


def stacked_bars_figure(
    data: Mapping[str, Mapping[str, Number | None]],
    categories: Sequence[str],
    *,
    category_labels: Mapping[str, str] | None = None,
    fractions: bool = True,
    ylabel: str | None = None,
    title: str = "",
) -> Any:
    """The figure of :func:`stacked_bars`, not saved."""
    traces = list(data)
    fig = _figure(max(6.0, 0.7 * len(traces) + 3), 3.6)
    ax = fig.subplots()
    bottoms = [0.0] * len(traces)
    labels = category_labels or {}
    for i, c in enumerate(categories):
        ys = []
        for t in traces:
            v = data[t].get(c)
            v = float(v) if _finite(v) else 0.0
            if fractions:
                tot = sum(float(x) for x in data[t].values() if _finite(x))
                v = v / tot if tot else 0.0
            ys.append(v)
        ax.bar(
            range(len(traces)),
            ys,
            0.6,
            bottom=bottoms,
            label=labels.get(c, c),
            color=PALETTE[i % len(PALETTE)],
            hatch=HATCHES[i % len(HATCHES)],
            edgecolor="black",
            linewidth=0.5,
        )
        bottoms = [b + y for b, y in zip(bottoms, ys)]
    ax.set_xticks(range(len(traces)))
    ax.set_xticklabels(traces, rotation=30, ha="right", fontsize=8)
    ax.set_ylabel(ylabel or ("fraction of operations" if fractions else "operations"))
    if fractions:
        ax.set_ylim(0, 1.0)
    tidy_axis(ax)
    legend_outside(fig, ax, where="right", fontsize=8)
    if title:
        ax.set_title(title, fontsize=10)
    return fig


def sweep_lines(
    panels: Mapping[str, Mapping[str, Sequence[tuple[Number, Number | None]]]],
    out_base: str | Path,
    *,
    xlabel: str,
    ylabel: str = "normalised",
    title: str = "",
    mark_x: Number | None = None,
) -> list[Path]:
    """Line plots of a parameter sweep: per panel, one line per trace of ``(x, y)`` points.

    ``mark_x`` draws a dotted vertical line at the chosen default (e.g. m = -1). Integer
    parameters get integer ticks; a flat line is shown flat (:func:`tidy_axis`).
    """
    kw = dict(xlabel=xlabel, ylabel=ylabel, title=title, mark_x=mark_x)
    return cached(
        out_base, ("sweep_lines", panels, kw), lambda: sweep_lines_figure(panels, **kw)
    )  # fmt: skip


def sweep_lines_figure(
    panels: Mapping[str, Mapping[str, Sequence[tuple[Number, Number | None]]]],
    *,
    xlabel: str,
    ylabel: str = "normalised",
    title: str = "",
    mark_x: Number | None = None,
) -> Any:
    """The figure of :func:`sweep_lines`, not saved."""
    n = max(1, len(panels))
    fig = _figure(4.0 * n, 3.4)
    axes = fig.subplots(1, n, squeeze=False)[0]
    markers = "os^vD<>px*h"
    for ax, (ptitle, lines) in zip(axes, panels.items()):
        all_x: list[float] = []
        all_y: list[float] = []
        for i, (trace, pts) in enumerate(lines.items()):
            good = sorted((x, y) for x, y in pts if _finite(y))
            if not good:
                continue
            all_x += [float(p[0]) for p in good]
            all_y += [float(p[1]) for p in good]  # type: ignore[arg-type]
            ax.plot(
                [p[0] for p in good],
                [p[1] for p in good],
                marker=markers[i % len(markers)],
                markersize=4,
                linewidth=1,
                label=trace,
                color=PALETTE[(i + 1) % len(PALETTE)] if i < len(PALETTE) - 1 else None,
            )
        if mark_x is not None:
            ax.axvline(mark_x, color="black", linestyle=":", linewidth=0.8)
        ax.set_xlabel(xlabel)
        ax.set_ylabel(ylabel)
        ax.set_title(ptitle, fontsize=10)
        ax.grid(alpha=0.3)
        tidy_axis(ax, all_x, all_y)
    legend_outside(fig, axes[-1], where="right")
    if title:
        fig.suptitle(title)
    return fig
