"""``nandlab report DIR``: one self-contained HTML file for a sweep, a compare or a reproduce
output directory.

What goes in (each part only when the directory has what it needs):

* a summary (what the directory is, runs, failures, where they ran);
* the paper's headline and result tables (a reproduce output's ``result.json``, or any JSON file
  in DIR written by ``reproduce --json``);
* the compare table with ratios to the first scheme (``compare.json``);
* figures: mean and p99 response per run for each trace; latency CDFs per trace (from the
  reports' ``host.cdf`` when the runs recorded it, else from their p50 / p90 / p99 / p99.9 /
  max, marked as such); per-interval time series per trace (throughput, mean and p99 response,
  queue depth, GC moves and erases, die utilisation) for runs that wrote one; and a reproduce
  command's own figures. A trace with up to :data:`MAX_LINES` runs is drawn a line per run (a
  colour per scheme, a dash pattern per setting); one with more, in figures that aggregate: a
  line per scheme (the median over its runs) with a band from its fastest to its slowest run
  over the grid's other axes, which the caption names, and the summary as a dot per run in a
  row per scheme;
* the runs table (click a column header to sort), with each run's error.

Figures are embedded as PNG (the file opens anywhere, offline, with no other file) and also
written beside the HTML as PNG and SVG (``<name>_files/``). The page uses no external resource
and a few lines of inline JavaScript (table sorting only).
"""

from __future__ import annotations

import base64
import html
import json
import math
import re
import time
from collections.abc import Mapping, Sequence
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


# --------------------------------------------------------------------------- figures


def _slug(s: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "-", s).strip("-") or "x"


def _color(i: int) -> Any:
    from matplotlib import colormaps

    cmap = colormaps["tab10" if i < 10 else "tab20"]
    return cmap(i % (10 if i < 10 else 20))


_DASHES: tuple[Any, ...] = (
    "-",
    "--",
    ":",
    "-.",
    (0, (5, 1)),
    (0, (3, 1, 1, 1, 1, 1)),
    (0, (1, 3)),
    (0, (8, 2, 1, 2)),
)


def _styles(runs: Sequence[_Run]) -> list[tuple[Any, Any]]:
    """(colour, line style) per run: one colour per scheme, one dash pattern per setting of
    that scheme (so a 5-scheme x 5-setting sweep reads as five families of lines)."""
    schemes: dict[str, int] = {}
    seen: dict[str, int] = {}
    out = []
    for r in runs:
        sc = str(r.row.get("scheme"))
        ci = schemes.setdefault(sc, len(schemes))
        di = seen.get(sc, 0)
        seen[sc] = di + 1
        out.append((_color(ci), _DASHES[di % len(_DASHES)]))
    return out


def _by_trace(runs: Sequence[_Run]) -> dict[str, list[_Run]]:
    out: dict[str, list[_Run]] = {}
    for r in runs:
        if r.report is not None:
            out.setdefault(r.trace, []).append(r)
    return out


def _legend(ax: Any, n: int) -> None:
    """Outside the axes, on the right of the figure (the shared figure style: never over the
    data); a figure-level legend, so the constrained layout makes room for it."""
    if n == 0:
        return
    handles, names = ax.get_legend_handles_labels()
    ax.figure.legend(
        handles, names, loc="outside right upper", frameon=False, fontsize=7 if n <= 8 else 6
    )


def _legend_inches(labels: Sequence[str]) -> float:
    """The width a right-hand legend of ``labels`` takes (at 6-7 pt, about 0.055 in a
    character, plus the line sample): added to the figure, so the panels keep their width
    however long the runs' labels are."""
    return 0.8 + 0.055 * max((len(x) for x in labels), default=0)


def _legend_top(fig: Any, axes: Sequence[Any], ncols: int) -> None:
    """One legend above the panels for the entries of all of ``axes`` (each label once)."""
    seen: dict[str, Any] = {}
    for ax in axes:
        for h, name in zip(*ax.get_legend_handles_labels()):
            seen.setdefault(name, h)
    if seen:
        fig.legend(
            list(seen.values()),
            list(seen),
            loc="outside upper center",
            ncols=max(1, min(ncols, len(seen))),
            frameon=False,
            fontsize=8,
        )


@dataclass
class _Groups:
    """How a large trace's runs are aggregated: one line per group (``by``: "scheme", or
    with a single scheme the config or the first varying setting), a band over ``over``."""

    by: str
    groups: dict[str, list[_Run]]
    over: list[str]

    def caption_over(self) -> str:
        return ", ".join(self.over) if self.over else "the runs' other settings"


def _param(r: _Run, key: str) -> Any:
    try:
        params = json.loads(r.row.get("params") or "{}")
    except ValueError:
        params = {}
    v = params.get(key) if isinstance(params, dict) else None
    return v if v is not None else r.row.get(key)


def _group_runs(runs: Sequence[_Run], varying: Sequence[str] = ()) -> _Groups:
    """A line per scheme when the runs have several; else per config, else per value of the
    first varying setting with at most 10 values; else one group."""
    schemes = list(dict.fromkeys(str(r.row.get("scheme")) for r in runs))
    configs = list(dict.fromkeys(Path(str(r.row.get("config"))).stem for r in runs))
    varying = [k for k in varying if len({json.dumps(_param(r, k)) for r in runs}) > 1]
    over = list(varying) + (["config"] if len(configs) > 1 else [])
    if len(schemes) > 1:
        key: Any = lambda r: str(r.row.get("scheme"))  # noqa: E731
        by = "scheme"
    elif len(configs) > 1:
        key = lambda r: Path(str(r.row.get("config"))).stem  # noqa: E731
        by, over = "config", list(varying)
    else:
        small = [k for k in varying if len({json.dumps(_param(r, k)) for r in runs}) <= 10]
        if small:
            by = small[0]
            key = lambda r: f"{by}={_param(r, by)}"  # noqa: E731
            over = [k for k in over if k != by]
        else:
            by, key = "scheme", lambda r: str(r.row.get("scheme"))
    groups: dict[str, list[_Run]] = {}
    for r in runs:
        groups.setdefault(key(r), []).append(r)
    return _Groups(by, groups, over)


def _fig_summary(by_trace: Mapping[str, list[_Run]], files: Path) -> Figure | None:
    from nandlab.figures import _figure, legend_outside, save
    from nandlab.result import lookup

    if not by_trace:
        return None
    n_max = max(len(v) for v in by_trace.values())
    fig = _figure(9.0, 0.6 + 0.22 * n_max * len(by_trace) + 0.5 * len(by_trace))
    axes = fig.subplots(len(by_trace), 1, squeeze=False)[:, 0]
    for ax, (trace, runs) in zip(axes, by_trace.items()):
        labels = [r.label for r in runs]
        mean = [lookup(r.report, "host.mean_us") or 0.0 for r in runs]
        p99 = [lookup(r.report, "host.all.p99_us") or 0.0 for r in runs]
        y = list(range(len(runs)))
        ax.barh([v + 0.2 for v in y], mean, height=0.4, color="#4c72b0", label="mean")
        ax.barh([v - 0.2 for v in y], p99, height=0.4, color="#dd8452", label="p99")
        ax.set_yticks(y, labels, fontsize=7)
        ax.invert_yaxis()
        ax.set_title(f"{trace}: response time (µs)", fontsize=9, loc="left")
        pos = [v for v in mean + p99 if v > 0]
        if pos and max(pos) / min(pos) > 100:
            ax.set_xscale("log")
            _plain_log_ticks(ax.xaxis)
        ax.grid(axis="x", alpha=0.3)
    legend_outside(fig, axes[0], ncols=2)
    base = files / "summary-response"
    png, svg = save(fig, base)
    return Figure(
        "summary-response",
        "Response time per run",
        "Mean and p99 response time (all requests) of every run, per trace.",
        png,
        svg,
    )


def _fig_summary_agg(
    by_trace: Mapping[str, list[_Run]], groups: Mapping[str, _Groups], files: Path
) -> Figure | None:
    """The summary of a large sweep: a panel per trace, a row per scheme (or group), a dot per
    run (mean and p99 response) and the median of each as a bar."""
    import numpy as np

    from nandlab.figures import _figure, save
    from nandlab.result import lookup

    if not by_trace:
        return None
    traces = list(by_trace)
    ncols = 1 if len(traces) < 4 else 2
    nrows = -(-len(traces) // ncols)
    n_groups = max(len(groups[t].groups) for t in traces)
    fig = _figure(6.0 * ncols + 1.0, 0.9 + nrows * (0.9 + 0.42 * n_groups))
    axes = fig.subplots(nrows, ncols, squeeze=False).ravel()
    rng = np.random.default_rng(0)  # the jitter: the same figure every time
    for ax in axes[len(traces) :]:
        ax.set_visible(False)
    for ax, trace in zip(axes, traces):
        g = groups[trace]
        names = list(g.groups)
        pos: list[float] = []
        for yi, name in enumerate(names):
            for dy, path, color, mark, lab in (
                (-0.17, "host.mean_us", "#4c72b0", "o", "mean (a dot per run)"),
                (0.17, "host.all.p99_us", "#dd8452", "^", "p99 (a dot per run)"),
            ):
                vals = np.array(
                    [v for r in g.groups[name] if (v := lookup(r.report, path)) and v > 0],
                    dtype=float,
                )
                if not len(vals):
                    continue
                pos += list(vals)
                jit = rng.uniform(-0.1, 0.1, len(vals))
                ax.scatter(
                    vals,
                    yi + dy + jit,
                    s=16,
                    color=color,
                    marker=mark,
                    alpha=0.7,
                    linewidths=0,
                    label=lab if yi == 0 else None,
                )
                ax.plot(
                    [np.median(vals)] * 2,
                    [yi + dy - 0.16, yi + dy + 0.16],
                    color="black",
                    lw=1.6,
                    label="median over the runs" if yi == 0 and dy < 0 else None,
                )
        ax.set_yticks(range(len(names)), [f"{n} ({len(g.groups[n])})" for n in names], fontsize=7)
        ax.set_ylim(len(names) - 0.5, -0.5)
        ax.set_title(
            f"{trace}: response time (µs), {len(by_trace[trace])} runs", fontsize=9, loc="left"
        )
        if pos and max(pos) / min(pos) > 20:
            ax.set_xscale("log")
            _plain_log_ticks(ax.xaxis)
        ax.tick_params(axis="x", labelsize=7)
        ax.grid(axis="x", alpha=0.3, which="both")
    _legend_top(fig, axes[:1], 3)
    base = files / "summary-response"
    png, svg = save(fig, base)
    by = {groups[t].by for t in traces}
    over = ", ".join(dict.fromkeys(o for t in traces for o in groups[t].over)) or "their settings"
    return Figure(
        "summary-response",
        "Response time per run",
        f"Mean (circles) and p99 (triangles) response time of every run (all requests), a "
        f"panel per trace and a row per {' / '.join(sorted(by))} (its number of runs in "
        f"brackets); each row's runs differ in {over}. The black bars are the medians over "
        "the row's runs. The runs table below has every run's numbers.",
        png,
        svg,
    )


def _cdf_points(rep: Mapping[str, Any], cls: str) -> tuple[list[float], list[float], bool]:
    """(latencies µs, fractions, exact) of class ``cls`` (``read``/``write``/``all``)."""
    host = rep.get("host") or {}
    cdf = host.get("cdf")
    if isinstance(cdf, Mapping) and cdf.get(f"{cls}_us"):
        return list(cdf[f"{cls}_us"]), list(cdf["quantiles"]), True
    summ = host.get(cls) or {}
    pts = [(summ.get(k), q) for k, q in (("p50_us", 0.5), ("p90_us", 0.9), ("p99_us", 0.99))]
    pts += [(summ.get("p999_us"), 0.999), (summ.get("max_us"), 1.0)]
    if not summ.get("count"):
        return [], [], False
    xs = [float(v) for v, _ in pts if isinstance(v, (int, float))]
    ys = [q for v, q in pts if isinstance(v, (int, float))]
    return xs, ys, False


def _plain_log_ticks(axis: Any) -> None:
    """Log-axis tick labels as plain numbers (100, 1000, 1e+04), no minor labels."""
    from matplotlib.ticker import FuncFormatter, NullFormatter

    axis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
    axis.set_minor_formatter(NullFormatter())


def _fig_cdf(trace: str, runs: Sequence[_Run], files: Path) -> Figure | None:
    """A line per run (at most :data:`MAX_LINES` runs)."""
    from nandlab.figures import _figure, save

    runs = list(runs)
    classes = [c for c in ("read", "write") if any(_cdf_points(r.report or {}, c)[0] for r in runs)]
    if not classes:
        return None
    fig = _figure(5.0 * len(classes) + _legend_inches([r.label for r in runs]), 3.6)
    axes = fig.subplots(1, len(classes), squeeze=False)[0]
    approx = False
    styles = _styles(runs)
    for ax, cls in zip(axes, classes):
        n = 0
        for r, (color, dash) in zip(runs, styles):
            xs, ys, exact = _cdf_points(r.report or {}, cls)
            if not xs:
                continue
            approx |= not exact
            style = {"drawstyle": "steps-post"} if exact else {"marker": "o", "markersize": 3}
            ax.plot(xs, ys, color=color, ls=dash, lw=1.2, label=r.label, **style)
            n += 1
        _cdf_axis(ax, trace, cls)
        if cls == classes[-1]:
            _legend(ax, n)
    name = f"cdf-{_slug(trace)}"
    png, svg = save(fig, files / name)
    cap = (
        f"Response-time CDF of {trace}, one line per run (a colour per scheme, a dash pattern "
        "per setting)."
    )
    if approx:
        cap += (
            " Markers: runs without host.cdf in their report, drawn from p50 / p90 / p99 / "
            "p99.9 / max only."
        )
    return Figure(name, f"Latency CDF — {trace}", cap, png, svg)


def _cdf_axis(ax: Any, trace: str, cls: str) -> None:
    ax.set_xscale("log")
    _plain_log_ticks(ax.xaxis)
    ax.set_ylim(0, 1.005)
    ax.set_xlabel(f"{cls} response time (µs)")
    ax.set_ylabel("fraction of requests")
    ax.set_title(f"{trace}: {cls}s", fontsize=9, loc="left")
    ax.grid(alpha=0.3, which="both")


def _fig_cdf_agg(trace: str, runs: Sequence[_Run], g: _Groups, files: Path) -> Figure | None:
    """A line per group: the median over its runs of the response time at each quantile, and
    a band from the fastest to the slowest run at that quantile."""
    import numpy as np

    from nandlab.figures import _figure, save

    classes = [c for c in ("read", "write") if any(_cdf_points(r.report or {}, c)[0] for r in runs)]
    if not classes:
        return None
    fig = _figure(5.0 * len(classes), 4.0)
    axes = fig.subplots(1, len(classes), squeeze=False)[0]
    approx = False
    for ax, cls in zip(axes, classes):
        for gi, (name, rs) in enumerate(g.groups.items()):
            curves = [_cdf_points(r.report or {}, cls) for r in rs]
            curves = [c for c in curves if c[0]]
            if not curves:
                continue
            exact = [c for c in curves if c[2]]
            approx |= len(exact) < len(curves)
            # a common quantile grid: the reports' own (all the same for host.cdf)
            qs = np.asarray((exact or curves)[0][1], dtype=float)
            arr = np.vstack(
                [np.interp(qs, np.asarray(y, float), np.asarray(x, float)) for x, y, _ in curves]
            )
            arr = np.where(arr > 0, arr, np.nan)
            with np.errstate(all="ignore"):
                import warnings

                with warnings.catch_warnings():
                    warnings.simplefilter("ignore", RuntimeWarning)  # an all-NaN column
                    med, lo, hi = (np.nanmedian(arr, 0), np.nanmin(arr, 0), np.nanmax(arr, 0))
            color = _color(gi)
            if len(curves) > 1:
                ax.fill_betweenx(qs, lo, hi, color=color, alpha=0.18, linewidth=0)
            style = {"drawstyle": "steps-post"} if exact else {"marker": "o", "markersize": 3}
            ax.plot(med, qs, color=color, lw=1.4, label=f"{name} ({len(curves)} runs)", **style)
        _cdf_axis(ax, trace, cls)
    _legend_top(fig, axes, 6)
    name = f"cdf-{_slug(trace)}"
    png, svg = save(fig, files / name)
    cap = (
        f"Response-time CDF of {trace}, aggregated over its {len(runs)} runs: a line per "
        f"{g.by} (its number of runs in brackets) — the median over its runs of the response "
        "time at each fraction of requests — and a shaded band from its fastest to its slowest "
        f"run at that fraction; the band spans {g.caption_over()}. The runs table below has "
        "every run."
    )
    if approx:
        cap += (
            " Markers: some runs have no host.cdf in their report and are drawn from p50 / p90 "
            "/ p99 / p99.9 / max only."
        )
    return Figure(name, f"Latency CDF — {trace}", cap, png, svg)


#: Time-series panels: column, title (what is drawn), short y label.
_TS_PANELS = (
    ("throughput_rps", "requests completed per second", "req/s"),
    ("latency", "response time: mean (solid), p99 (dashed)", "µs"),
    ("queue_depth", "host requests in the device (time average)", "requests"),
    ("gc", "GC page moves (solid), block erases (dashed) per second", "per s"),
    ("die_utilization", "share of die time busy", "utilisation"),
)


#: Most points per time-series line; longer series are drawn in bins of whole intervals.
MAX_POINTS = 600


def _plot_bins(
    df: Any, max_points: int = MAX_POINTS, k: int | None = None, by: str | None = None
) -> tuple[Any, int]:
    """The time series in bins of ``k`` consecutive intervals (given, or the fewest that keep
    it within ``max_points``; ``k = 1`` when short enough):
    rates and means recomputed over each bin, p99 as the highest interval p99 in it. Returns
    ``(frame, k)`` with columns start_s, throughput_rps, mean_us, p99_us, queue_depth,
    gc_per_s, erases_per_s, die_utilization. With ``by`` (a column naming the run of each
    row, for many runs' series in one frame) each run is binned alone, and the frame also has
    ``by`` and ``bin`` (the bin's number in its run) and keeps nulls where a bin has no
    requests."""
    import polars as pl

    k = k if k is not None else max(1, -(-df.height // max_points))
    done = pl.col("reads") + pl.col("writes")
    dur = pl.col("duration_s")
    idx = pl.int_range(pl.len()).over(by) if by else pl.int_range(pl.len())
    keys = [by, "bin"] if by else ["bin"]
    g = (
        df.with_columns((idx // k).alias("bin"), done.alias("done"))
        .group_by(keys, maintain_order=True)
        .agg(
            pl.col("start_s").first(),
            dur.sum().alias("dur"),
            pl.col("done").sum(),
            (pl.col("mean_us") * pl.col("done")).sum().alias("resp"),
            pl.col("p99_us").max(),
            (pl.col("queue_depth") * dur).sum().alias("qd"),
            pl.col("gc_moves").sum(),
            pl.col("erases").sum(),
            (pl.col("die_utilization") * dur).sum().alias("busy"),
        )
    )
    out = g.select(
        *([by, "bin"] if by else []),
        "start_s",
        (pl.col("done") / pl.col("dur")).alias("throughput_rps"),
        pl.when(pl.col("done") > 0).then(pl.col("resp") / pl.col("done")).alias("mean_us"),
        "p99_us",
        (pl.col("qd") / pl.col("dur")).alias("queue_depth"),
        (pl.col("gc_moves") / pl.col("dur")).alias("gc_per_s"),
        (pl.col("erases") / pl.col("dur")).alias("erases_per_s"),
        (pl.col("busy") / pl.col("dur")).alias("die_utilization"),
    )
    return (out if by else out.fill_null(float("nan"))), k


def _read_series(runs: Sequence[_Run], d: Path) -> list[tuple[int, _Run, Any]]:
    import polars as pl

    series = []
    for i, r in enumerate(runs):
        rel = r.row.get("timeseries")
        if rel and (d / rel).is_file():
            try:
                series.append((i, r, pl.read_parquet(d / rel)))
            except Exception:  # a damaged file: the table still lists the run
                continue
    return series


def _ts_axes(axes: Sequence[Any], trace: str) -> None:
    for ax, (col, title, ylabel) in zip(axes, _TS_PANELS):
        ax.set_ylabel(ylabel, fontsize=8)
        ax.set_title(title, fontsize=8, loc="left")
        ax.tick_params(labelsize=7)
        ax.grid(alpha=0.3)
        if col == "latency":
            ax.set_yscale("symlog", linthresh=10.0)
        _, hi = ax.get_ylim()  # every measure is >= 0: no axis below zero
        ax.set_ylim(0, hi if hi > 0 else 1)
    axes[-1].set_xlabel("simulated time (s)")
    axes[0].set_title(f"{trace}: {_TS_PANELS[0][1]}", fontsize=8, loc="left")


def _ts_caption(trace: str, series: Sequence[tuple[int, _Run, Any]], binned: int) -> str:
    iv = series[0][2]["duration_s"][0] if series[0][2].height else float("nan")
    cap = (
        f"Per-interval time series of {trace} ({iv * 1000:g} ms intervals): requests completed "
        "per second; mean and p99 response of the requests completed in the interval; "
        "time-averaged host requests in the device; GC page moves and block erases per second; "
        "share of die time busy."
    )
    if binned > 1:
        cap += (
            f" Long series are drawn in bins of up to {binned} intervals (rates and means over "
            "the bin, p99 the highest interval p99 in it); the Parquet files have every interval."
        )
    return cap


def _fig_timeseries(trace: str, runs: Sequence[_Run], d: Path, files: Path) -> Figure | None:
    """A line per run (at most :data:`MAX_LINES` runs)."""
    from nandlab.figures import _figure, save

    series = _read_series(runs, d)
    if not series:
        return None
    fig = _figure(10.0 + _legend_inches([r.label for _, r, _ in series]), 10.0)
    axes = fig.subplots(len(_TS_PANELS), 1, sharex=True)
    binned = 1
    for i, r, raw in series:
        df, k = _plot_bins(raw)
        binned = max(binned, k)
        t = df["start_s"].to_list()
        c = _color(i)
        step: dict[str, Any] = {"drawstyle": "steps-post"}
        # short series get markers, so a lone interval between empty ones still shows
        kw = {**step, "marker": ".", "markersize": 2} if df.height <= 200 else step
        for ax, (col, _, _) in zip(axes, _TS_PANELS):
            if col == "latency":
                ax.plot(t, df["mean_us"].to_list(), color=c, lw=1.0, **kw)
                ax.plot(t, df["p99_us"].to_list(), color=c, lw=0.8, ls="--", **kw)
            elif col == "gc":
                ax.plot(t, df["gc_per_s"].to_list(), color=c, lw=1.0, **step)
                ax.plot(t, df["erases_per_s"].to_list(), color=c, lw=0.8, ls="--", **step)
            else:
                label = r.label if col == "throughput_rps" else None
                ax.plot(t, df[col].to_list(), color=c, lw=1.0, label=label, **step)
    _ts_axes(axes, trace)
    _legend(axes[0], len(series))
    name = f"timeseries-{_slug(trace)}"
    png, svg = save(fig, files / name)
    cap = _ts_caption(trace, series, binned) + " One colour per run."
    return Figure(name, f"Time series — {trace}", cap, png, svg)


def _fig_timeseries_agg(
    trace: str, runs: Sequence[_Run], g: _Groups, d: Path, files: Path
) -> Figure | None:
    """A line per group: the median over its runs in each interval, and a band from the
    lowest to the highest of its runs (the p99 and erase lines: the median only)."""
    import polars as pl

    from nandlab.figures import _figure, save

    series = _read_series(runs, d)
    if not series:
        return None
    longest = max(raw.height for _, _, raw in series)
    k = max(1, -(-longest // MAX_POINTS))  # the same bins for every run: they line up
    cols = ["start_s", "duration_s", "reads", "writes", "mean_us", "p99_us", "queue_depth",
            "gc_moves", "erases", "die_utilization"]  # fmt: skip
    in_group = {id(r): name for name, rs in g.groups.items() for r in rs}
    frames = [
        raw.select(cols).with_columns(pl.lit(in_group.get(id(r), "")).alias("group"),
                                      pl.lit(j).alias("run"))
        for j, (_, r, raw) in enumerate(series)
    ]  # fmt: skip
    long = pl.concat(frames, how="vertical_relaxed")
    binned, _ = _plot_bins(long, k=k, by="run")
    group_of_run = pl.DataFrame(
        {"run": list(range(len(frames))), "group": [f["group"][0] for f in frames]}
    )
    binned = binned.join(group_of_run, on="run")
    t_axis = binned.group_by("bin").agg(pl.col("start_s").min()).sort("bin")
    fig = _figure(10.0, 10.0)
    axes = fig.subplots(len(_TS_PANELS), 1, sharex=True)
    names = list(g.groups)
    step = {"drawstyle": "steps-post"}
    measures = ["throughput_rps", "mean_us", "p99_us", "queue_depth", "gc_per_s",
                "erases_per_s", "die_utilization"]  # fmt: skip
    for gi, name in enumerate(names):
        mine = binned.filter(pl.col("group") == name)
        if not mine.height:
            continue
        n_runs = mine["run"].n_unique()
        # per bin over the group's runs: median, lowest, highest (nulls: no request there)
        agg = (
            mine.group_by("bin")
            .agg(
                *[pl.col(c).median().alias(f"{c}.med") for c in measures],
                *[pl.col(c).min().alias(f"{c}.lo") for c in measures],
                *[pl.col(c).max().alias(f"{c}.hi") for c in measures],
            )
            .join(t_axis, on="bin", how="right")
            .sort("bin")
            .fill_null(float("nan"))
        )
        t = agg["start_s"].to_numpy()
        c = _color(gi)
        for ax, (col, _, _) in zip(axes, _TS_PANELS):
            main, extra = {"latency": ("mean_us", "p99_us"),
                           "gc": ("gc_per_s", "erases_per_s")}.get(col, (col, None))  # fmt: skip
            if n_runs > 1:
                ax.fill_between(t, agg[f"{main}.lo"].to_numpy(), agg[f"{main}.hi"].to_numpy(),
                                color=c, alpha=0.15, linewidth=0, step="post")  # fmt: skip
            label = f"{name} ({n_runs} runs)" if col == "throughput_rps" else None
            ax.plot(t, agg[f"{main}.med"].to_numpy(), color=c, lw=1.1, label=label, **step)
            if extra:
                ax.plot(t, agg[f"{extra}.med"].to_numpy(), color=c, lw=0.8, ls="--", **step)
    _ts_axes(axes, trace)
    _legend_top(fig, axes[:1], 6)
    name = f"timeseries-{_slug(trace)}"
    png, svg = save(fig, files / name)
    cap = _ts_caption(trace, series, k) + (
        f" Aggregated over the {len(series)} runs that wrote a time series: a line per {g.by} "
        "(its number of runs in brackets), the median over its runs in each interval, and a "
        f"shaded band from the lowest to the highest of them; the band spans "
        f"{g.caption_over()}. The dashed p99 and erase lines are medians only."
    )
    return Figure(name, f"Time series — {trace}", cap, png, svg)


# --------------------------------------------------------------------------- HTML

_CSS = """
body{font-family:system-ui,-apple-system,Segoe UI,Roboto,sans-serif;margin:24px auto;
max-width:1300px;padding:0 16px;color:#222;line-height:1.4}
h1{font-size:1.5em;margin-bottom:4px}h2{font-size:1.2em;margin-top:32px;
border-bottom:1px solid #ddd;padding-bottom:4px}h3{font-size:1.02em;margin-bottom:4px}
.meta{color:#666;font-size:.9em}table{border-collapse:collapse;font-size:.82em;margin:8px 0}
th,td{border:1px solid #ddd;padding:3px 7px;vertical-align:top}th{background:#f4f4f4;
text-align:left}td.n{text-align:right;font-variant-numeric:tabular-nums}
table.sortable th{cursor:pointer;user-select:none}table.sortable th:hover{background:#e8eef8}
th.asc::after{content:" ▲"}th.desc::after{content:" ▼"}td.err{color:#b00;max-width:420px}
figure{margin:16px 0}figure img{max-width:100%;box-sizing:border-box;border:1px solid #eee}
figcaption{font-size:.85em;color:#444;max-width:1000px}.ok{color:#060}.bad{color:#b00}
.wrap{overflow-x:auto}
"""

_JS = """
(function(){
  function key(td){var v=td.getAttribute('data-v');return v===null?td.textContent:v;}
  document.querySelectorAll('table.sortable').forEach(function(t){
    t.querySelectorAll('th').forEach(function(th,i){
      th.addEventListener('click',function(){
        var body=t.tBodies[0],rows=Array.prototype.slice.call(body.rows);
        var asc=!th.classList.contains('asc');
        t.querySelectorAll('th').forEach(function(h){h.classList.remove('asc','desc');});
        th.classList.add(asc?'asc':'desc');
        var num=rows.every(function(r){var v=r.cells[i].getAttribute('data-v');
          return v!==null&&v!==''&&!isNaN(+v);});
        rows.sort(function(a,b){var x=key(a.cells[i]),y=key(b.cells[i]);
          var c=num?(+x)-(+y):String(x).localeCompare(String(y),undefined,{numeric:true});
          return asc?c:-c;});
        rows.forEach(function(r){body.appendChild(r);});
      });
    });
  });
  var imgs=document.images,ok=0;
  for(var i=0;i<imgs.length;i++){if(imgs[i].complete&&imgs[i].naturalWidth>0)ok++;}
  document.body.setAttribute('data-figures',String(imgs.length));
  document.body.setAttribute('data-figures-ok',String(ok));
})();
"""


def _e(v: Any) -> str:
    return html.escape(str(v), quote=True)


def _num_cell(v: Any, digits: int = 3) -> str:
    from nandlab.reproduce.fmt import fmt_num

    if isinstance(v, bool) or v is None:
        return f"<td>{_e(fmt_num(v))}</td>"
    if isinstance(v, (int, float)):
        if isinstance(v, float) and not math.isfinite(v):
            return "<td class=n>—</td>"
        return f'<td class=n data-v="{v!r}">{_e(fmt_num(v, digits))}</td>'
    return f"<td>{_e(v)}</td>"


def _dict_table(rows: Sequence[Mapping[str, Any]], *, sortable: bool = True) -> str:
    """A list of flat dicts as an HTML table (columns in first-seen order)."""
    cols: list[str] = []
    for r in rows:
        for k in r:
            if k not in cols and not isinstance(r[k], (dict, list)):
                cols.append(k)
    cls = ' class="sortable"' if sortable else ""
    out = [f"<div class=wrap><table{cls}><thead><tr>"]
    out += [f"<th>{_e(c)}</th>" for c in cols]
    out.append("</tr></thead><tbody>")
    for r in rows:
        out.append("<tr>" + "".join(_num_cell(r.get(c)) for c in cols) + "</tr>")
    out.append("</tbody></table></div>")
    return "".join(out)


_RUN_COLS: tuple[tuple[str, str], ...] = (
    ("mean µs", "host.mean_us"),
    ("read mean µs", "host.read_mean_us"),
    ("write mean µs", "host.write_mean_us"),
    ("read p99 µs", "host.read_p99_us"),
    ("write p99 µs", "host.write_p99_us"),
    ("p99.9 µs", "host.all.p999_us"),
    ("WA", "write_amplification"),
    ("erases", "flash.erases"),
    ("GC moves", "gc.pages_moved"),
    ("die util.", "flash.die_utilization"),
    ("requests", "host.requests"),
    ("wall s", "wall_s"),
)


def _runs_table(runs: Sequence[_Run]) -> str:
    from nandlab.result import lookup

    configs = {str(r.row.get("config")) for r in runs}
    head = ["trace", "scheme", "run"] + (["config"] if len(configs) > 1 else [])
    head += [c for c, _ in _RUN_COLS] + ["finished (UTC)", "error"]
    out = ['<div class=wrap><table class="sortable" id="runs"><thead><tr>']
    out += [f"<th>{_e(h)}</th>" for h in head]
    out.append("</tr></thead><tbody>")
    for r in runs:
        rep = r.report or {}
        cells = [f"<td>{_e(r.trace)}</td>", f"<td>{_e(r.row.get('scheme'))}</td>"]
        cells.append(f"<td>{_e(r.label)}</td>")
        if len(configs) > 1:
            cells.append(f"<td>{_e(Path(str(r.row.get('config'))).stem)}</td>")
        for _, path in _RUN_COLS:
            v = lookup(rep, path) if rep else None
            if v is None:
                v = r.row.get(path)
            cells.append(_num_cell(v))
        fin = str(r.row.get("finished_at") or "")[:19].replace("T", " ")
        cells.append(f"<td>{_e(fin)}</td>")
        cells.append(f"<td class=err>{_e(r.row.get('error') or '')}</td>")
        out.append("<tr>" + "".join(cells) + "</tr>")
    out.append("</tbody></table></div>")
    return "".join(out)


def _compare_table(cmp: Mapping[str, Any]) -> str:
    from nandlab.comparison import METRICS
    from nandlab.reproduce.fmt import fmt_num

    rows = cmp.get("rows") or []
    if not rows:
        return ""
    out = ["<div class=wrap><table><thead><tr><th>metric</th>"]
    out += [f"<th>{_e(r.get('scheme'))}</th>" for r in rows]
    out.append("</tr></thead><tbody>")
    for col, label, _, unit in METRICS:
        cells = []
        for i, r in enumerate(rows):
            v, ratio = r.get(col), r.get(f"{col}_ratio")
            s = fmt_num(v)
            if i and isinstance(ratio, (int, float)):
                s += f" ({ratio:.3f}x)"
            cells.append(f"<td class=n>{_e(s)}</td>")
        out.append(f"<tr><td>{_e((label + ' ' + unit).strip())}</td>{''.join(cells)}</tr>")
    out.append("</tbody></table></div>")
    return "".join(out)


def _img(path: Path, alt: str) -> str:
    data = base64.b64encode(path.read_bytes()).decode("ascii")
    return f'<img src="data:image/png;base64,{data}" alt="{_e(alt)}" loading="eager">'


def _figure_html(f: Figure, html_dir: Path) -> str:
    def rel(p: Path) -> str:
        try:
            return str(p.relative_to(html_dir))
        except ValueError:
            return str(p)

    return (
        f'<figure id="{_e(f.name)}"><h3>{_e(f.title)}</h3>{_img(f.png, f.title)}'
        f"<figcaption>{_e(f.caption)} Files: "
        f'<a href="{_e(rel(f.png))}">PNG</a>, <a href="{_e(rel(f.svg))}">SVG</a>.'
        "</figcaption></figure>"
    )


# --------------------------------------------------------------------------- reproductions


def _verdict_class(v: str) -> str:
    return {"matches": "ok", "differs": "bad"}.get(v, "meta")


def _per_trace(r: Mapping[str, Any], loads: Mapping[str, Any]) -> str:
    """Ours per trace with each trace's load level (K) where the result has it."""
    from nandlab.reproduce.headline import with_unit

    over = set(r.get("overloaded") or ())
    out = []
    for t, v in (r.get("per_trace") or {}).items():
        k = (loads.get(t) or {}).get("time_scale")
        lvl = f" (K={k:g})" if isinstance(k, (int, float)) else ""
        out.append(f"{t}{lvl}: {with_unit(v, r)}" + (" — overloaded" if t in over else ""))
    return "<br>".join(_e(x) for x in out) or "—"


def headline_table(
    rows: Sequence[Mapping[str, Any]],
    loads: Mapping[str, Mapping[str, Any]] | None = None,
    *,
    paper_column: bool = False,
    table_id: str = "",
) -> str:
    """Headline rows (:mod:`nandlab.reproduce.headline`) as an HTML table: the paper's value
    with its table or figure, ours per trace (with K) and the means in the same unit, the load
    level and the verdict."""
    from nandlab.reproduce.headline import with_unit

    loads = loads or {}
    head = ["paper"] * paper_column + ["metric", "paper's value", "ours per trace",
                                       "ours: mean", "geo. mean", "level", "verdict"]  # fmt: skip
    tid = f' id="{_e(table_id)}"' if table_id else ""
    out = [f"<div class=wrap><table{tid}><thead><tr>"]
    out += [f"<th>{_e(h)}</th>" for h in head]
    out.append("</tr></thead><tbody>")
    for r in rows:
        paper = str(r.get("paper_name", ""))
        lo = loads.get(paper, loads) if paper_column else loads
        cells = [f"<td>{_e(paper)}</td>"] * paper_column + [
            f"<td>{_e(r['metric'])}</td>",
            f"<td>{_e(r['paper_text'])} <span class=meta>({_e(r['where'])})</span></td>",
            f"<td>{_per_trace(r, lo)}</td>",
            f"<td class=n>{_e(with_unit(r.get('mean'), r))}</td>",
            f"<td class=n>{_e(with_unit(r.get('geomean'), r))}</td>",
            f"<td>{_e(r.get('level', ''))}</td>",
            f"<td class={_verdict_class(r['verdict'])}>{_e(r['verdict'])}"
            + (f": {_e(r['reason'])}" if r.get("reason") else "") + "</td>",
        ]  # fmt: skip
        attrs = f' data-paper="{_e(paper)}" data-metric="{_e(r["metric"])}"'
        out.append(f"<tr{attrs}>" + "".join(cells) + "</tr>")
    out.append("</tbody></table></div>")
    return "".join(out)


def _rendered_table(t: Mapping[str, Any]) -> str:
    """A table as the reproduction printed it (``{"title", "columns", "rows"}``)."""
    out = [f"<h3>{_e(t.get('title', ''))}</h3><div class=wrap><table><thead><tr>"]
    out += [f"<th>{_e(c)}</th>" for c in t.get("columns") or []]
    out.append("</tr></thead><tbody>")
    for row in t.get("rows") or []:
        out.append(
            "<tr>"
            + "".join(f"<td{' class=n' if i else ''}>{_e(c)}</td>" for i, c in enumerate(row))
            + "</tr>"
        )
    out.append("</tbody></table></div>")
    return "".join(out)


def _checks_table(checks: Sequence[Mapping[str, Any]]) -> str:
    rows = []
    for c in checks:
        ok = c.get("passed")
        res = "n/a" if ok is None else ("pass" if ok else "FAIL")
        cls = "meta" if ok is None else ("ok" if ok else "bad")
        rows.append(
            f"<tr><td>{_e(c.get('name', ''))}</td><td>{_e(c.get('kind', ''))}</td>"
            f"<td class={cls}>{res}</td><td>{_e(c.get('detail', ''))}</td></tr>"
        )
    return ("<h3>Checks</h3><p class=meta>sanity: a failure is an exit status of 1; paper: a "
            "comparison with the paper, reported.</p><div class=wrap><table><thead><tr>"
            "<th>check</th><th>kind</th><th>result</th><th>detail</th></tr></thead><tbody>"
            + "".join(rows) + "</tbody></table></div>")  # fmt: skip


def paper_section(res: Mapping[str, Any]) -> str:
    """A reproduction's result (``result.json``): caption, checks, headline and its tables;
    a result of an older layout shows its raw tables."""
    parts = []
    if res.get("caption"):
        parts.append(f"<p class=meta>{_e(res['caption'])}</p>")
    if isinstance(res.get("checks"), list) and res["checks"]:
        parts.append(_checks_table(res["checks"]))
    head = res.get("headline")
    if isinstance(head, list) and head and "verdict" in head[0]:
        parts.append("<h3>Headline: the paper vs ours</h3>"
                     + headline_table(head, res.get("loads") or {}))  # fmt: skip
    elif isinstance(head, list) and head:
        parts.append("<h3>Headline: paper vs ours</h3>" + _dict_table(head))
    if isinstance(res.get("tables"), list):
        parts += [_rendered_table(t) for t in res["tables"] if isinstance(t, Mapping)]
    elif isinstance(res.get("table"), list) and res["table"]:
        parts.append("<h3>Results table</h3>" + _dict_table(res["table"]))
    return "".join(parts)


def _fig_number(stem: str) -> str | None:
    m = re.match(r"fig(\d+)", stem)
    return m.group(1) if m else None


def build_all_report(out_dir: str | Path, output: str | Path | None = None) -> ReportResult:
    """The report of ``nandlab reproduce all``'s ``out_dir``: a first page with one row per
    paper headline, then a section per paper with its checks, headline, tables and figures,
    each figure beside the paper's numbers of that figure. Raises :class:`ReportError` when no
    paper has a result."""
    from nandlab import __version__
    from nandlab.reproduce.headline import PAPERS, headline_of

    t0 = time.perf_counter()
    d = Path(out_dir)
    out = Path(output) if output is not None else d / REPORT_FILE
    index = _read_json(d / "all.json") or {}
    results = {p: r for p in PAPERS if isinstance(r := _read_json(d / p / "result.json"), dict)}
    if not results:
        raise ReportError(f"{d}: no <paper>/result.json: run nandlab reproduce all --out {d}")
    rows = headline_of(d)
    loads = {p: r.get("loads") or {} for p, r in results.items()}
    title = "nandlab reproduce all" + (" --quick" if index.get("quick") else "")
    parts = [
        "<!DOCTYPE html><html lang=en><head><meta charset=utf-8>",
        '<meta name="viewport" content="width=device-width,initial-scale=1">',
        f"<title>{_e(title)}</title><style>{_CSS}.fig{{display:flex;gap:16px;"
        "align-items:flex-start;flex-wrap:wrap}.fig figure{flex:1 1 560px;margin:8px 0}"
        ".fig .side{flex:1 1 360px}</style></head><body>",
        f"<h1>{_e(title)}: every paper next to ours</h1>",
        f"<p class=meta>{_e(d.resolve())} · nandlab {_e(__version__)} · generated "
        f"{_e(time.strftime('%Y-%m-%d %H:%M:%S UTC', time.gmtime()))}</p>",
    ]
    ran = index.get("ran") or {}
    status = []
    for p in PAPERS:
        s = ran.get(p)
        if p not in results:
            status.append(f"<a href='#{p}'>{_e(p)}</a>: <span class=bad>no result</span>")
        else:
            code = (s or {}).get("exit_status", 0)
            cls = "ok" if not code else "bad"
            wall = f", {s['wall_s']:.0f} s" if s and "wall_s" in s else ""
            status.append(f"<a href='#{p}'>{_e(p)}</a>: <span class={cls}>exit {code}</span>"
                          f"{wall}")  # fmt: skip
    parts.append("<p>" + " · ".join(status) + "</p>")
    counts = {v: sum(r["verdict"] == v for r in rows) for v in ("matches", "differs",
                                                                 "not comparable")}  # fmt: skip
    parts.append(
        f"<h2 id=headline-section>Headline: {len(rows)} numbers of {len(results)} papers</h2>"
        f"<p>{counts['matches']} match (same direction, within ±30 % of the paper's value), "
        f"{counts['differs']} differ (with the reason), {counts['not comparable']} are not "
        "comparable (with why). Ours: the mean over the comparable traces (load level: each "
        "trace's time scale K, chosen from the baseline's load; docs/reproductions.md).</p>"
    )
    parts.append(headline_table(rows, loads, paper_column=True, table_id="headline"))
    n_figs = 0
    for p, res in results.items():
        parts.append(f"<h2 id='{_e(p)}'>{_e(res.get('title') or p)}</h2>")
        parts.append(paper_section(res))
        for f in res.get("figures") or []:
            png = Path(f)
            if png.suffix != ".png":
                continue
            if not png.is_file():
                png = d / p / png.name
            if not png.is_file():
                continue
            n = _fig_number(png.stem)
            side = [r for r in res.get("headline") or []
                    if n and re.search(rf"Fig\. {n}(?!\d)", str(r.get("where", "")))
                    and r.get("level") == (res["headline"][0]["level"])]  # fmt: skip
            side_html = (
                "<div class=side><h3>The paper's numbers of this figure</h3>"
                + headline_table(side, res.get("loads") or {})
                + "</div>"
                if side
                else ""
            )
            parts.append(
                f"<div class=fig><figure id='{_e(p)}-{_e(png.stem)}'><h3>{_e(png.stem)}</h3>"
                f"{_img(png, png.stem)}<figcaption>{_e(png.name)}</figcaption></figure>"
                f"{side_html}</div>"
            )
            n_figs += 1
    parts.append(f"<script>{_JS}</script></body></html>")
    text = "\n".join(parts)
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_name(f".{out.name}.tmp")
    tmp.write_text(text, encoding="utf-8")
    tmp.replace(out)
    return ReportResult(out, "reproduce all", 0, [], out.stat().st_size, time.perf_counter() - t0)


def build_report(
    directory: str | Path, output: str | Path | None = None, *, title: str | None = None
) -> ReportResult:
    """Write the HTML report of ``directory`` (a sweep, compare or reproduce output) to
    ``output`` (default ``DIR/report.html``) and its figures as PNG and SVG to
    ``<output stem>_files/`` beside it. Raises :class:`ReportError` when ``directory`` has no
    runs and no paper results."""
    t0 = time.perf_counter()
    d = Path(directory)
    if not d.is_dir():
        raise ReportError(f"{d}: not a directory")
    if (d / "all.json").is_file() and not (d / "runs.parquet").is_file():
        return build_all_report(d, output)
    out = Path(output) if output is not None else d / REPORT_FILE
    files = out.parent / f"{out.stem}_files"
    files.mkdir(parents=True, exist_ok=True)

    sweep_meta = _read_json(d / "sweep.json")
    cmp_meta = _read_json(d / "compare.json")
    papers = _paper_results(d)
    runs = _load_runs(d)
    # the grid's (or the compare's) order where it is known
    order: list[str] = []
    if isinstance(sweep_meta, dict):
        order = [str(k) for k in sweep_meta.get("keys") or []]
    elif isinstance(cmp_meta, dict):
        order = [str(r.get("key")) for r in cmp_meta.get("rows") or []]
    other = 0
    if order:
        # only this sweep's / compare's runs (DIR may hold runs of an earlier, different grid)
        pos = {k: i for i, k in enumerate(order)}
        kept = [r for r in runs if str(r.row.get("key")) in pos]
        other = len(runs) - len(kept)
        runs = sorted(kept, key=lambda r: pos[str(r.row.get("key"))])
    if not runs and not papers:
        raise ReportError(
            f"{d}: no runs.parquet and no reproduce result JSON: give the --out directory of "
            "nandlab sweep, compare or reproduce"
        )
    if isinstance(sweep_meta, dict):
        kind = "sweep"
    elif isinstance(cmp_meta, dict):
        kind = "compare"
    elif papers:
        kind = "reproduce"
    else:
        kind = "runs"

    # keep the order of the grid: by trace as first seen, then as stored
    by_trace = _by_trace(runs)
    varying = list(sweep_meta.get("varying") or []) if isinstance(sweep_meta, dict) else []
    # a trace with many runs: figures that aggregate (a line per scheme, a band over the rest)
    large = {t: _group_runs(trs, varying) for t, trs in by_trace.items() if len(trs) > MAX_LINES}
    figs: list[Figure] = []
    for trace, trs in by_trace.items():
        f = (
            _fig_cdf_agg(trace, trs, large[trace], files)
            if trace in large
            else _fig_cdf(trace, trs, files)
        )
        if f:
            figs.append(f)
    for trace, trs in by_trace.items():
        f = (
            _fig_timeseries_agg(trace, trs, large[trace], d, files)
            if trace in large
            else _fig_timeseries(trace, trs, d, files)
        )
        if f:
            figs.append(f)
    if large:
        groups = {t: large.get(t) or _group_runs(trs, varying) for t, trs in by_trace.items()}
        f = _fig_summary_agg(by_trace, groups, files)
    else:
        f = _fig_summary(by_trace, files)
    if f:
        figs.append(f)
    own_figs: list[tuple[Path, Path | None]] = []
    for png in sorted(d.glob("*.png")):
        svg = png.with_suffix(".svg")
        own_figs.append((png, svg if svg.is_file() else None))

    from nandlab import __version__

    failed = [r for r in runs if r.row.get("error")]
    if title is None:
        if kind == "sweep":
            title = f"nandlab sweep — {Path(str(sweep_meta.get('grid', d.name))).name}"
        elif kind == "compare":
            title = f"nandlab compare — {cmp_meta.get('trace')}"
        elif kind == "reproduce":
            title = f"nandlab reproduce {papers[0]['paper']}"
        else:
            title = f"nandlab runs — {d.name}"
    parts = [
        "<!DOCTYPE html><html lang=en><head><meta charset=utf-8>",
        '<meta name="viewport" content="width=device-width,initial-scale=1">',
        f"<title>{_e(title)}</title><style>{_CSS}</style></head><body>",
        f"<h1>{_e(title)}</h1>",
        f"<p class=meta>{_e(d.resolve())} · nandlab {_e(__version__)} · generated "
        f"{_e(time.strftime('%Y-%m-%d %H:%M:%S UTC', time.gmtime()))}</p>",
    ]
    from nandlab.reproduce.fmt import plural

    traces = list(dict.fromkeys(r.trace for r in runs))
    schemes = list(dict.fromkeys(str(r.row.get("scheme")) for r in runs))
    status = (
        f"<span class=bad>{len(failed)} failed</span>"
        if failed
        else "<span class=ok>0 failed</span>"
    )
    parts.append(
        f"<p>{plural(len(runs), 'run')} ({status}) · {plural(len(traces), 'trace')}: "
        f"{_e(', '.join(traces))} · schemes: {_e(', '.join(schemes))}</p>"
    )
    if other:
        parts.append(
            f"<p class=meta>{other} other runs in runs.parquet (from an earlier {kind} in this "
            "directory) are not shown.</p>"
        )
    toc = [("Runs", "runs-section")] if runs else []
    if figs or own_figs:
        toc.insert(0, ("Figures", "figures"))
    toc += [(f.title, f.name) for f in figs]
    if len(toc) > 2:
        parts.append(
            "<p class=meta>Contents: "
            + " · ".join(f'<a href="#{_e(a)}">{_e(t)}</a>' for t, a in toc)
            + "</p>"
        )
    if kind == "sweep":
        axes = sweep_meta.get("axes") or {}
        rows = [{"axis": k, "values": ", ".join(map(str, v))} for k, v in axes.items()]
        parts.append("<h2>Grid</h2>" + _dict_table(rows, sortable=False))
    if kind == "compare":
        ov = cmp_meta.get("overrides")
        with_ov = f" with {_e(json.dumps(ov))}" if ov else ""
        parts.append(
            f"<h2>Compare</h2><p>{_e(cmp_meta.get('trace'))} on {_e(cmp_meta.get('config'))}"
            f"{with_ov}"
            f"; ratios to {_e((cmp_meta.get('schemes') or ['?'])[0])}.</p>"
            + _compare_table(cmp_meta)
        )
    for res in papers:
        parts.append(f"<h2>Paper: {_e(res.get('title') or res['paper'])} ({_e(res['_file'])})</h2>")
        parts.append(paper_section(res))
    if figs or own_figs:
        parts.append('<h2 id="figures">Figures</h2>')
        parts += [_figure_html(f, out.parent) for f in figs]
        for png, svg in own_figs:
            links = f'<a href="{_e(png.name)}">PNG</a>'
            if svg is not None:
                links += f', <a href="{_e(svg.name)}">SVG</a>'
            parts.append(
                f'<figure id="{_e(_slug(png.stem))}"><h3>{_e(png.stem)}</h3>{_img(png, png.stem)}'
                f"<figcaption>Figure written by the command ({_e(png.name)}). Files: {links}."
                "</figcaption></figure>"
            )
    if runs:
        parts.append(
            '<h2 id="runs-section">Runs</h2><p class=meta>Click a column header to sort.</p>'
        )
        parts.append(_runs_table(runs))
    parts.append(f"<script>{_JS}</script></body></html>")
    text = "\n".join(parts)
    tmp = out.with_name(f".{out.name}.tmp")
    tmp.write_text(text, encoding="utf-8")
    tmp.replace(out)
    return ReportResult(
        out,
        kind,
        len(runs),
        figs,
        out.stat().st_size,
        time.perf_counter() - t0,
    )
