"""The report's time-series figures: per-interval throughput, response, queue depth, GC and
die utilisation of the runs that wrote a time series, binned to at most :data:`MAX_POINTS`
points."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from nandlab.report.plots import _color, _Groups, _legend, _legend_inches, _legend_top, _slug
from nandlab.report.runs import Figure, _Run

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
