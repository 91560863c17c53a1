"""Per-run output files: the per-request log and the per-interval time series as Parquet.

The Rust core writes both as CSV while it replays (``stats.request_log``, ``stats.timeseries``;
streaming, nothing kept in memory for the log); these functions convert them to Parquet with
fixed column types (polars, streaming: constant memory for a log of any length) and read them
back. ``docs/outputs.md`` lists the columns and their units.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import polars as pl


def request_log_schema() -> dict[str, pl.DataType]:
    """Columns of the per-request log (all times ns since the trace's first request)."""
    import polars as pl

    return {
        "arrival_ns": pl.Int64(),
        "op": pl.Utf8(),  # "R" or "W"
        "offset_bytes": pl.Int64(),
        "len_bytes": pl.Int64(),
        "wait_ns": pl.Int64(),
        "service_ns": pl.Int64(),
        "response_ns": pl.Int64(),
    }


def timeseries_schema() -> dict[str, pl.DataType]:
    """Columns of the time series (see ``stats::timeseries`` in the core for definitions)."""
    import polars as pl

    f, i = pl.Float64(), pl.Int64()
    return {
        "start_s": f,
        "duration_s": f,
        "reads": i,
        "writes": i,
        "bytes": i,
        "throughput_rps": f,
        "throughput_mib_s": f,
        "mean_us": f,
        "p99_us": f,
        "max_us": f,
        "queue_depth": f,
        "gc_moves": i,
        "erases": i,
        "die_utilization": f,
    }


def _csv_to_parquet(csv: Path, out: Path, schema: dict[str, pl.DataType]) -> None:
    import polars as pl

    tmp = out.with_name(f".{out.name}.tmp-{os.getpid()}")
    lf = pl.scan_csv(csv, schema=schema, has_header=True)
    if schema.get("op") is not None:
        lf = lf.with_columns(pl.col("op").cast(pl.Categorical))
    lf.sink_parquet(tmp)
    os.replace(tmp, out)


def request_log_to_parquet(csv: str | Path, out: str | Path) -> Path:
    """Convert the core's per-request CSV log to Parquet at ``out`` (atomically)."""
    _csv_to_parquet(Path(csv), Path(out), request_log_schema())
    return Path(out)


def timeseries_to_parquet(csv: str | Path, out: str | Path) -> Path:
    """Convert the core's time-series CSV to Parquet at ``out`` (atomically)."""
    _csv_to_parquet(Path(csv), Path(out), timeseries_schema())
    return Path(out)
