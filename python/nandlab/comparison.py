"""``nandlab compare`` and :func:`nandlab.compare`: several schemes on one trace, side by side.

The schemes run in parallel through :func:`nandlab.experiment.run_grid` (so results are keyed
and reused like a sweep's) and come back as one table: response time mean / p50 / p99 / p99.9
for reads, writes and all requests, write amplification, erases, die utilisation and flash
time per request, each with its ratio to the first scheme.

Flash time per request (µs) = total die busy time / host requests, where total die busy time =
``flash.die_utilization x device.dies x sim.span_s`` of the report (the busy time of every die
operation: host, GC, refresh, migrations).

The command itself (options, table, exit status) is :mod:`nandlab.cli.compare`.
"""

from __future__ import annotations

import json
import math
import sys
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

if TYPE_CHECKING:
    import polars as pl
    from rich.console import Console

    from nandlab.experiment import GridStats, RunOutputs

COMPARE_FILE = "compare.json"

#: (column, label, report path or None for a derived metric, unit)
METRICS: tuple[tuple[str, str, str | None, str], ...] = (
    *(
        (f"{cls}_{st}_us", f"{cls} {st.replace('p999', 'p99.9')}", f"host.{cls}.{st}_us", "µs")
        for cls in ("read", "write", "all")
        for st in ("mean", "p50", "p99", "p999")
    ),
    ("write_amplification", "write amplification", "write_amplification", ""),
    ("erases", "erases", "flash.erases", ""),
    ("die_utilization", "die utilisation", "flash.die_utilization", ""),
    ("flash_us_per_request", "flash time / request", None, "µs"),
)


def metrics_of(report: Mapping[str, Any]) -> dict[str, float | None]:
    """The compared metrics of one report (``None`` where the report lacks one)."""
    from nandlab.result import lookup

    out: dict[str, float | None] = {}
    for col, _, path, _ in METRICS:
        if path is None:
            continue
        v = lookup(report, path)
        out[col] = float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else None
    util = out.get("die_utilization")
    dies = lookup(report, "device.dies")
    span = lookup(report, "sim.span_s")
    req = lookup(report, "host.requests")
    out["flash_us_per_request"] = (
        util * dies * span * 1e6 / req
        if util is not None and dies and span is not None and req
        else None
    )
    return out


#: The load columns of a compare row (from the report's load block, :mod:`nandlab.load`).
LOAD_COLUMNS = ("offered_die_load", "wait_share", "overloaded", "overload_reason")

#: Metrics whose ratio measures the backlog, not the scheme, when either run is overloaded.
QUEUEING_METRICS = tuple(col for col, *_ in METRICS if col.endswith("_us") and "flash" not in col)


def _load_columns(report: Mapping[str, Any] | None) -> dict[str, Any]:
    from nandlab.load import load_block

    if not report:
        return {c: None for c in LOAD_COLUMNS}
    ld = report.get("load")
    if not isinstance(ld, Mapping):  # a run kept before reports carried the block
        ld = load_block(report)
    return {c: ld.get(c) for c in LOAD_COLUMNS}


def queueing_note(rows: Sequence[Mapping[str, Any]]) -> str | None:
    """One line naming the overloaded runs of a comparison and which of its ratios measure
    queueing, not the scheme (None when no run is overloaded)."""
    over = [r for r in rows if r.get("overloaded")]
    if not over:
        return None
    names = ", ".join(f"{r['scheme']} ({r.get('overload_reason')})" for r in over)
    which = (
        "every response time and its ratio"
        if rows and rows[0].get("overloaded")
        else "the response times and ratios of " + ", ".join(r["scheme"] for r in over)
    )
    return (
        f"overloaded: {names}. {which} (marked *) measure queueing backlogs, not the "
        "schemes; write amplification and erases still compare. Slow the trace "
        "(--set host.time_scale=K) or use a config with more dies."
    )


def _ratio(v: float | None, base: float | None) -> float | None:
    if v is None or base is None or base == 0 or not math.isfinite(base):
        return None
    return v / base


def compare(
    trace: str | Path | Sequence[str | Path],
    schemes: Sequence[str],
    config: str | Path = "default",
    overrides: Mapping[str, Any] | Sequence[str] | None = None,
    out: str | Path | None = None,
    *,
    scheduler: Any = None,
    workers: int | None = None,
    outputs: RunOutputs | None = None,
    progress: bool = False,
    stats: GridStats | None = None,
    console: Console | None = None,
) -> pl.DataFrame:
    """Run ``schemes`` on ``trace`` (a file or a bundled name) with ``config`` + ``overrides``
    and return one row per scheme, in the given order: ``scheme``, ``error``, ``key``, every
    metric of :data:`METRICS` and its ratio to the first scheme (``<metric>_ratio``), and the
    run's load (:data:`LOAD_COLUMNS`: ``overloaded`` true means its response times, and their
    ratios, measure queueing, not the scheme).

    ``out`` keeps the runs (``runs.parquet``, ``compare.json``; default: a temporary directory,
    deleted). ``scheduler``/``workers`` as in :func:`nandlab.sweep`; ``outputs`` adds per-run
    files (:class:`~nandlab.experiment.RunOutputs`; needs ``out``). Raises ``ValueError`` for
    an empty or repeated scheme list, an unknown scheme or a missing trace, and
    :class:`nandlab.ConfigError` for a bad config or override, before any run starts.
    """
    import polars as pl

    from nandlab import _core
    from nandlab.config import cli_override, config_text, format_overrides
    from nandlab.experiment import RunOutputs, RunSpec, run_grid
    from nandlab.grid import resolve_traces

    schemes = [s.strip() for s in schemes if s.strip()]
    if not schemes:
        raise ValueError("compare: give at least one scheme")
    dup = sorted({s for s in schemes if schemes.count(s) > 1})
    if dup:
        raise ValueError(f"compare: scheme {dup[0]} given twice")
    known = list(_core.scheme_names())
    for s in schemes:
        if s not in known:
            raise ValueError(f"compare: unknown scheme `{s}`; allowed: {', '.join(known)}")
    many = not isinstance(trace, (str, Path))
    wanted = [str(t) for t in trace] if many else [str(trace)]  # type: ignore[union-attr]
    try:
        resolved = resolve_traces(wanted, Path.cwd(), "--trace")
    except ValueError as e:
        raise ValueError(str(e)) from None
    tname, tpath = resolved[0]
    flow_traces: tuple[Path, ...] = ()
    if len(resolved) > 1:
        # concurrent flows (docs/multi-tenant.md): every scheme runs them together
        tname = " + ".join(n for n, _ in resolved)
        flow_traces = tuple(Path(p) for _, p in resolved)
    if overrides is None:
        ov: dict[str, Any] = {}
    elif isinstance(overrides, Mapping):
        ov = dict(overrides)
    else:  # ["key=value", ...] as given to --set
        ov = {}
        for o in overrides:
            k, v = cli_override(o).split("=", 1)
            ov[k.strip()] = tomllib.loads(f"v = {v}")["v"]
    text, path = config_text(config)
    for s in schemes:
        _core.check_config(text, str(path) if path else None, format_overrides(ov), s)
    if outputs is not None and out is None:
        raise ValueError("compare: per-run outputs need an out directory (out=...)")

    specs = [
        RunSpec(tpath, tname, s, str(config), dict(ov), s, flow_traces=flow_traces) for s in schemes
    ]
    tmp = None
    if out is None:
        tmp = tempfile.TemporaryDirectory(prefix="nandlab-compare-")
        out = tmp.name
    try:
        outp = Path(out)
        outp.mkdir(parents=True, exist_ok=True)
        df = run_grid(
            specs,
            outp,
            processes=workers if workers is not None else (None if scheduler else len(specs)),
            scheduler=scheduler,
            progress=progress,
            stats=stats,
            console=console,
            outputs=outputs or RunOutputs(latency_cdf=True),
        )
    finally:
        if tmp is not None:
            tmp.cleanup()
    rows: list[dict[str, Any]] = []
    for r in df.iter_rows(named=True):
        rep = json.loads(r["report"]) if r["report"] else None
        row: dict[str, Any] = {"scheme": r["scheme"], "error": r["error"], "key": r["key"]}
        row.update(metrics_of(rep) if rep else {c: None for c, *_ in METRICS})
        row.update(_load_columns(rep))
        if flow_traces:
            # concurrent flows: the run's fairness and each flow's slowdown
            row["fairness"] = rep.get("fairness") if rep else None
            for f in (rep or {}).get("flows") or []:
                row[f"slowdown {f.get('name')}"] = f.get("slowdown")
        rows.append(row)
    base = rows[0]
    for row in rows:
        for col, *_ in METRICS:
            row[f"{col}_ratio"] = _ratio(row[col], base[col])
    res = pl.DataFrame(rows, infer_schema_length=None)
    if tmp is None:
        from nandlab.experiment import _atomic_write_text

        obj = {
            "kind": "compare",
            "trace": tname,
            "trace_path": str(tpath),
            "config": str(config),
            "overrides": ov,
            "schemes": schemes,
            "rows": rows,
        }
        _atomic_write_text(outp / COMPARE_FILE, json.dumps(obj, indent=1, default=str) + "\n")
    return res
