# %% [markdown]
# # nandlab sweeps from Python
#
# A notebook-style script (cells separated by `# %%`; VS Code, Jupytext and Spyder run them one
# by one, or run the whole file with `python docs/examples/sweep_example.py`). It uses only the
# bundled traces and takes well under a minute on a laptop. Everything lands in
# `nandlab-out/example` (or `$NANDLAB_EXAMPLE_OUT`); running it again reuses the finished runs.

# %%
import json
import os
from pathlib import Path

import polars as pl

import nandlab
from nandlab.report import build_report

OUT = Path(os.environ.get("NANDLAB_EXAMPLE_OUT", "nandlab-out/example"))

# %% [markdown]
# ## 1. A grid: 3 schemes x 2 traces x 2 device sizes
#
# The same structure as a grid TOML file (docs/sweep.md), here as a dict. `[set]` lists are
# combined; `host.max_requests` keeps the runs short. `[outputs]` asks every run for a
# per-interval time series (Parquet) besides its report.

# %%
grid = {
    "configs": ["xia-diffecc"],
    "schemes": ["baseline", "diffecc_wa", "agcr"],
    "traces": ["Financial1_first10000", "pgbench_rw_slice"],
    "set": {"host.max_requests": 20_000, "device.dies_per_chip": [1, 2]},
    "outputs": {"timeseries_interval_ms": 250},
}
runs = nandlab.sweep(grid, OUT / "sweep", progress=True)
print(runs.select("trace", "label", "host.mean_us", "host.write_p99_us", "error"))

# %% [markdown]
# One row per run. Columns: the run's identity (`key`, `trace`, `scheme`, `label`, `params`),
# the full JSON report, headline numbers, timestamps, the paths of per-run outputs, and one
# column per varying setting (`device.dies_per_chip`). Failed runs have `error` set (and run
# again next time).

# %%
summary = (
    runs.filter(pl.col("error").is_null())
    .group_by("trace", "device.dies_per_chip", maintain_order=True)
    .agg(
        pl.col("scheme"),
        pl.col("host.mean_us"),
        (pl.col("host.mean_us") / pl.col("host.mean_us").first()).alias("vs first"),
    )
    .sort("trace", "device.dies_per_chip")
)
print(summary)

# %% [markdown]
# Anything else is in the report JSON, e.g. GC and the erase-count spread:

# %%
for r in runs.head(3).iter_rows(named=True):
    rep = json.loads(r["report"])
    print(r["label"], rep["gc"]["pages_moved"], rep["wear"]["erase_count"])

# %% [markdown]
# ## 2. A run's time series
#
# Per 250 ms of simulated time: throughput, mean and p99 response, queue depth, GC moves,
# erases, die utilisation (docs/outputs.md lists the columns).

# %%
first = runs.row(0, named=True)
ts = pl.read_parquet(OUT / "sweep" / first["timeseries"])
print(first["label"], ts.height, "intervals")
print(ts.sort("p99_us", descending=True, nulls_last=True).head(5))

# %% [markdown]
# ## 3. Compare schemes on one trace
#
# One row per scheme; every metric also as a ratio to the first scheme.

# %%
cmp = nandlab.compare(
    "msr_hm_0_sample1000",
    ["baseline", "diffecc_wa", "agcr"],
    "xia-diffecc",
    out=OUT / "compare",
)
print(cmp.select("scheme", "write_mean_us", "write_mean_us_ratio", "read_p99_us_ratio"))

# %% [markdown]
# ## 4. One HTML report per directory
#
# Runs table (sortable), response per run, latency CDFs, time series; figures also as PNG and
# SVG beside the HTML. `nandlab report DIR` does the same from the shell.

# %%
for d in ("sweep", "compare"):
    rep = build_report(OUT / d)
    print(f"{rep.html}: {rep.size_bytes / 1024:.0f} KiB, {len(rep.figures)} figures")
