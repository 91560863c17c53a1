"""The report's figures other than time series: how runs are styled (a colour per scheme, a
dash pattern per setting) and grouped when a trace has too many to draw one by one, the
summary (mean and p99 response per run) and the latency CDFs."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from nandlab.report.runs import MAX_LINES, Figure, _Run


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


def _cdf_line(
    ax: Any, rep: Mapping[str, Any], cls: str, color: str, dash: str, label: str
) -> tuple[bool, bool]:
    """Draw class ``cls`` of report (or flow block) ``rep`` on ``ax``: steps from its
    ``host.cdf``, else markers at its percentiles. Returns (drawn, exact)."""
    xs, ys, exact = _cdf_points(rep, cls)
    if not xs:
        return False, exact
    style = {"drawstyle": "steps-post"} if exact else {"marker": "o", "markersize": 3}
    ax.plot(xs, ys, color=color, ls=dash, lw=1.2, label=label, **style)
    return True, exact


def _plain_log_ticks(axis: Any) -> None:
    """Log-axis tick labels as plain numbers (100, 1000, 1e+04), no minor labels."""
    from matplotlib.ticker import FuncFormatter, NullFormatter

    axis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
    axis.set_minor_formatter(NullFormatter())


#: one line of a CDF figure: (report or flow block, colour, dash pattern, label)
_CdfLine = tuple[Mapping[str, Any], str, str, str]


def _cdf_figure(
    trace: str, lines: Sequence[_CdfLine], files: Path, name: str, title: str, cap: str, what: str
) -> Figure | None:
    """A panel per class (read, write) with the ``lines`` that have it; ``what`` names what a
    line is in the caption's note on lines drawn from percentiles."""
    from nandlab.figures import _figure, save

    classes = [c for c in ("read", "write") if any(_cdf_points(ln[0], c)[0] for ln in lines)]
    if not classes:
        return None
    fig = _figure(5.0 * len(classes) + _legend_inches([ln[3] for ln in lines]), 3.6)
    axes = fig.subplots(1, len(classes), squeeze=False)[0]
    approx = False
    for ax, cls in zip(axes, classes):
        n = 0
        for rep, color, dash, label in lines:
            drawn, exact = _cdf_line(ax, rep, cls, color, dash, label)
            n += drawn
            approx |= drawn and not exact
        _cdf_axis(ax, trace, cls)
        if cls == classes[-1]:
            _legend(ax, n)
    png, svg = save(fig, files / name)
    if approx:
        cap += (
            f" Markers: {what} without host.cdf in their report, drawn from p50 / p90 / p99 / "
            "p99.9 / max only."
        )
    return Figure(name, title, cap, png, svg)


def _fig_cdf(trace: str, runs: Sequence[_Run], files: Path) -> Figure | None:
    """A line per run (at most :data:`MAX_LINES` runs)."""
    runs = list(runs)
    lines = [
        (r.report or {}, color, dash, r.label) for r, (color, dash) in zip(runs, _styles(runs))
    ]
    cap = (
        f"Response-time CDF of {trace}, one line per run (a colour per scheme, a dash pattern "
        "per setting)."
    )
    return _cdf_figure(
        trace, lines, files, f"cdf-{_slug(trace)}", f"Latency CDF — {trace}", cap, "runs"
    )


def _fig_flow_cdf(trace: str, runs: Sequence[_Run], files: Path) -> Figure | None:
    """Runs of concurrent flows (``flows`` in the report): a line per flow of each run (at
    most :data:`MAX_LINES` lines), a colour per flow, a dash pattern per run."""
    lines: list[_CdfLine] = []
    flow_names: list[str] = []
    dashes = ["-", "--", ":", "-."]
    with_flows = [r for r in runs if isinstance((r.report or {}).get("flows"), list)]
    for ri, r in enumerate(with_flows):
        for f in (r.report or {}).get("flows") or []:
            name = str(f.get("name"))
            if name not in flow_names:
                flow_names.append(name)
            label = f"{name}" if len(with_flows) == 1 else f"{r.label} · {name}"
            color = f"C{flow_names.index(name) % 10}"
            lines.append((f, color, dashes[ri % 4], label))
    cap = (
        f"Response-time CDF of each concurrent flow of {trace} (docs/multi-tenant.md), a colour "
        "per flow, a dash pattern per run; the report's flows[].slowdown and fairness say how "
        "much the flows slowed each other."
    )
    return _cdf_figure(
        trace,
        lines[:MAX_LINES],
        files,
        f"cdf-flows-{_slug(trace)}",
        f"Latency CDF per flow — {trace}",
        cap,
        "flows",
    )


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
