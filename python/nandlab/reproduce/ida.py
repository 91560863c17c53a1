"""``nandlab reproduce ida``: Kim et al., "Improving the Read Performance of TLC/MLC Flash with
IDA Coding" (MICRO'18): Fig. 4, Table III's last column, Fig. 8, Table IV, Fig. 9, Fig. 10,
Fig. 11 and Table V.

Setup: preset ``ida-tlc`` (Table II). Schemes: ``baseline`` (periodic refresh that moves every
valid page) and ``ida`` with E0/E20/E50/E80 (``scheme.params.error_fraction``).

**Refresh (our methodology).** The paper refreshes every 3 days to 3 months over week-long MSR
traces (0.08-2.3 refresh cycles per trace), so refresh traffic is a small background load and
most reads find their data in the state the last refresh left. Our real traces last minutes.
Two modes (``--refresh``):

* ``before`` (default): every full block is refreshed once, untimed, before the replay
  (``precondition.refresh_before_replay``: IDA adjusts its word lines, E% of the adjusted pages
  are rewritten), the period is the paper's shortest (3 days) and data ages are spread over one
  period. The replay measures reads in the refreshed state, with no refresh traffic in the
  latencies. Table IV's extra reads/writes come from that refresh.
* ``timed``: the period is compressed to ``duration / --cycles`` (default one cycle per trace,
  inside the paper's range) with ages spread over one period, so due blocks are refreshed
  during the replay and refresh traffic competes with host I/O at the compressed rate in both
  systems. The duration comes from a probe run (baseline, refresh off).

Runs per trace: baseline and IDA-E0/E20/E50/E80 at ΔtR = 50 µs (Fig. 8, Fig. 4, Table IV);
ΔtR = 30..70 µs for baseline and E20 (Fig. 9: read latencies 50, 50+ΔtR, 50+2ΔtR); closed-loop
throughput at queue depth 32 (Fig. 10; refresh period = 10 closed-loop probe spans / --cycles,
so a replay sees 0.1 cycles and only that share of blocks is refreshed); late life
(Fig. 11): 3000 P/E cycles, the TLC Vth model's RBER and an LDPC whose extra levels are read
retries (``level_cost = "page_read"``, §V-F); MLC (Table V): LSB/MSB 65/115 µs.
"""

from __future__ import annotations

import resource
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click
from rich.table import Table

from nandlab.reproduce.common import (
    CAPTURED_PATTERNS,
    WEBSEARCH1_EXCERPT,
    CommonOptions,
    TraceChoice,
    common_options,
    err_console,
    exit_on_failures,
    fmt_num,
    fmt_pct,
    msr_patterns,
    out_console,
    reports_by_key,
    run_planned,
    traces_json,
    write_json,
)

if TYPE_CHECKING:
    from nandlab.experiment import RunSpec

PAPER = "ida"
CONFIG = "ida-tlc"
ERROR_FRACTIONS: tuple[int, ...] = (0, 20, 50, 80)
DTR_SWEEP: tuple[int, ...] = (30, 40, 50, 60, 70)
QUICK_DTR_SWEEP: tuple[int, ...] = (30, 50, 70)
LSB_READ_US = 50.0
MLC_READ_US = (65.0, 115.0)
LATE_PE = 3000
#: LDPC RBER limits per extra level (the Guo Table 6 fit of ``xia-diffecc``), hard decode =
#: Table II's 20 µs ECC decode; each extra level is a read retry.
LATE_CODE = {
    "code": "ldpc",
    "hard_decode_us": 20.0,
    "thresholds": [4e-3, 5e-3, 6e-3, 7e-3, 8e-3, 9e-3, 1e-2],
    "level_cost": "page_read",
}
CLOSED_QD = 32
#: Closed-loop runs (Fig. 10) refresh with a period of this many closed-loop spans: a replay
#: then sees 0.1 refresh cycles, inside the paper's 0.08-2.3. One cycle per closed-loop span
#: (a period of ~1 s) is a refresh load the device cannot sustain: refreshed blocks fall due
#: again before the host finishes, and the run spirals.
CLOSED_PERIOD_SPANS = 10.0
#: ``--refresh before``: the paper's shortest refresh period, 3 days (§IV-B).
PAPER_PERIOD_S = 3 * 86_400.0
DEFAULT_MAX_REQUESTS = 1_000_000
QUICK_MAX_REQUESTS = 30_000

#: The paper's headline (§V): read response reduction vs baseline; throughput gain.
PAPER_HEADLINE = {
    "E20": 0.28,
    "E0": 0.31,
    "E50": 0.202,
    "E80": 0.07,  # "< 7 %"
    "throughput": 0.10,
    "mlc": 0.149,
    "late": 0.423,
}


#: Table III's read-intensive MSR volumes, with the paper's "MSB whose LSB/CSB invalid" share.
TABLE_III: dict[str, tuple[list[str], float]] = {
    "proj_1": (msr_patterns("proj", 1, "CAM-02-SRV"), 0.2212),
    "proj_2": (msr_patterns("proj", 2, "CAM-02-SRV"), 0.3247),
    "proj_3": (msr_patterns("proj", 3, "CAM-02-SRV"), 0.2081),
    "proj_4": (msr_patterns("proj", 4, "CAM-02-SRV"), 0.2463),
    "hm_1": (msr_patterns("hm", 1, "CAMRESHMSA01"), 0.2054),
    "src1_0": (msr_patterns("src1", 0, "CAMRESSDPA03"), 0.3331),
    "src1_1": (msr_patterns("src1", 1, "CAMRESSDPA03"), 0.3479),
    "src2_0": (msr_patterns("src2", 0, "CAMRESSDPA03"), 0.2127),
    "stg_1": (msr_patterns("stg", 1, "CAMRESSTGA01"), 0.3876),
    "usr_1": (msr_patterns("usr", 1, "CAMRESUSRA01"), 0.4544),
    "usr_2": (msr_patterns("usr", 2, "CAMRESUSRA01"), 0.2143),
}
#: The read-dominated real traces we have.
OURS: dict[str, list[str]] = {
    "pgbench_ro": CAPTURED_PATTERNS["pgbench_ro"],
    "devtree": CAPTURED_PATTERNS["devtree"],
    "WebSearch1 excerpt": WEBSEARCH1_EXCERPT,
}
QUICK_TRACE = "WebSearch1 excerpt"


@dataclass
class Selection:
    traces: list[TraceChoice]
    missing_table_iii: list[str]
    notes: list[str] = field(default_factory=list)


def select_traces(dirs: Sequence[Path], *, quick: bool, max_requests: int | None) -> Selection:
    """Table III traces under ``dirs`` plus the read-dominated real traces we have."""
    from nandlab.experiment import default_trace_dirs, find_traces

    search = list(dict.fromkeys([*map(Path, dirs), *default_trace_dirs()]))
    if quick:
        found, _ = find_traces(search, {QUICK_TRACE: OURS[QUICK_TRACE]})
        if not found:
            raise FileNotFoundError("--quick needs the bundled WebSearch1 excerpt")
        cap = max_requests if max_requests is not None else QUICK_MAX_REQUESTS
        sel = Selection([TraceChoice(QUICK_TRACE, found[QUICK_TRACE], "bundled", cap or None)], [])
        sel.notes.append("--quick: the WebSearch1 excerpt only; Table III traces not searched")
        return sel
    cap = max_requests if max_requests is not None else DEFAULT_MAX_REQUESTS
    t3, missing = find_traces(list(map(Path, dirs)), {k: v[0] for k, v in TABLE_III.items()})
    sel = Selection([], missing)
    sel.traces += [TraceChoice(n, p, "Table III", cap or None) for n, p in t3.items()]
    ours, _ = find_traces(search, OURS)
    sel.traces += [TraceChoice(n, p, "ours", cap or None) for n, p in ours.items()]
    return sel


@dataclass
class PlannedRun:
    trace: str
    label: str
    spec: RunSpec
    key: str = ""


def _timing(dtr: float) -> dict[str, object]:
    return {"timing.read_us": [LSB_READ_US, LSB_READ_US + dtr, LSB_READ_US + 2 * dtr]}


def _scheme(label: str) -> tuple[str, dict[str, object]]:
    if label == "baseline":
        return "baseline", {}
    e = int(label.removeprefix("E"))
    return "ida", {"scheme.params.error_fraction": e / 100}


def probe_runs(sel: Selection) -> list[PlannedRun]:
    """Baseline with refresh off, open loop (trace duration) and closed loop (span)."""
    from nandlab.experiment import RunSpec

    out = []
    for t in sel.traces:
        cap: dict[str, object] = {"host.max_requests": t.max_requests} if t.max_requests else {}
        off = {**cap, "refresh.period_s": 0.0}
        out.append(
            PlannedRun(t.name, "probe", RunSpec(t.path, t.name, "baseline", CONFIG, off, "probe"))
        )
        closed = {**off, "host.mode": "closed", "host.queue_depth": CLOSED_QD}
        out.append(
            PlannedRun(
                t.name,
                "probe closed",
                RunSpec(t.path, t.name, "baseline", CONFIG, closed, "probe closed"),
            )
        )
    return out


def plan_runs(
    sel: Selection,
    periods: Mapping[str, tuple[float, float]],
    *,
    quick: bool,
    cycles: float,
    mode: str = "before",
) -> list[PlannedRun]:
    """All measured runs. ``mode="timed"``: ``periods[trace]`` = (open-loop duration,
    closed-loop span), s, set the compressed refresh periods; ``"before"``: refresh once before
    the replay, period 3 days (``periods`` unused)."""
    from nandlab.experiment import RunSpec

    runs: list[PlannedRun] = []
    dtrs = QUICK_DTR_SWEEP if quick else DTR_SWEEP
    for t in sel.traces:
        if mode == "timed" and t.name not in periods:
            continue
        dur, span = periods.get(t.name, (PAPER_PERIOD_S, PAPER_PERIOD_S))
        cap: dict[str, object] = {"host.max_requests": t.max_requests} if t.max_requests else {}

        def add(
            label: str,
            kind: str,
            ov: Mapping[str, object],
            period: float,
            t: TraceChoice = t,
            cap: dict[str, object] = cap,
        ) -> None:
            scheme, sov = _scheme(label)
            if mode == "before":
                rf: dict[str, object] = {
                    "precondition.refresh_before_replay": True,
                    "refresh.period_s": PAPER_PERIOD_S,
                    "precondition.initial_age_window_s": PAPER_PERIOD_S,
                }
            else:
                p = max(period / cycles, 1.0)
                rf = {"refresh.period_s": p, "precondition.initial_age_window_s": p}
            o = {**cap, **rf, **sov, **ov}
            name = f"{label} {kind}".strip()
            runs.append(PlannedRun(t.name, name, RunSpec(t.path, t.name, scheme, CONFIG, o, name)))

        for lab in ("baseline", *(f"E{e}" for e in ERROR_FRACTIONS)):
            add(lab, "", {}, dur)
        for d in dtrs:
            if d == 50:
                continue
            for lab in ("baseline", "E20"):
                add(lab, f"dtR={d}", _timing(d), dur)
        late = {
            "precondition.initial_pe_cycles": LATE_PE,
            "reliability.model": "vth",
            "reliability.codes": [LATE_CODE],
        }
        mlc = {"device.cell": "mlc", "timing.read_us": list(MLC_READ_US)}
        closed = {"host.mode": "closed", "host.queue_depth": CLOSED_QD}
        for lab in ("baseline", "E20"):
            add(lab, "late", late, dur)
            add(lab, "mlc", mlc, dur)
            add(lab, "closed", closed, span * CLOSED_PERIOD_SPANS)
    return runs


# --------------------------------------------------------------------------- analysis


def _get(rep: Mapping[str, Any] | None, path: str) -> Any:
    cur: Any = rep
    for k in path.split("."):
        if not isinstance(cur, Mapping):
            return None
        cur = cur.get(k)
    return cur


def _reduction(base: float | None, new: float | None) -> float | None:
    if base is None or new is None or base <= 0:
        return None
    return 1.0 - new / base


def _mean(vals: Sequence[float | None]) -> float | None:
    xs = [v for v in vals if v is not None]
    return sum(xs) / len(xs) if xs else None


def msb_lower_invalid_share(rep: Mapping[str, Any] | None) -> float | None:
    """Share of host MSB reads whose LSB and/or CSB is invalid (Table III's last column)."""
    m = _get(rep, "refresh.host_msb_reads")
    if not isinstance(m, Mapping):
        return None
    inv = sum(int(m.get(k, 0)) for k in ("lsb_invalid_csb_valid", "lsb_valid_csb_invalid"))
    inv += int(m.get("lower_all_invalid", 0))
    tot = inv + int(m.get("lower_all_valid", 0))
    return inv / tot if tot else None


@dataclass
class Analysis:
    rows: list[dict[str, Any]]
    headline: list[dict[str, Any]]
    errors: list[tuple[str, str, str]]


def analyse(
    runs: Sequence[PlannedRun], reports: Mapping[str, tuple[dict[str, Any] | None, str | None]]
) -> Analysis:
    """One row per trace with every figure's number; the headline averages over traces."""
    by: dict[tuple[str, str], dict[str, Any] | None] = {}
    errors: list[tuple[str, str, str]] = []
    for r in runs:
        rep, err = reports.get(r.key, (None, "not run"))
        by[(r.trace, r.label)] = rep
        if err:
            errors.append((r.trace, r.label, err))
    rows: list[dict[str, Any]] = []
    for trace in dict.fromkeys(r.trace for r in runs):

        def rd(label: str, trace: str = trace) -> float | None:
            v = _get(by.get((trace, label)), "host.read_mean_us")
            return float(v) if isinstance(v, (int, float)) else None

        def thr(label: str, trace: str = trace) -> float | None:
            v = _get(by.get((trace, label)), "sim.host_throughput_rps")
            return float(v) if v else None

        base = by.get((trace, "baseline"))
        e20 = by.get((trace, "E20"))
        row: dict[str, Any] = {
            "trace": trace,
            "refresh_period_s": _get(base, "refresh.period_s"),
            "read_us_probe": rd("probe"),
            "read_us_baseline": rd("baseline"),
            "msb_lower_invalid_share": msb_lower_invalid_share(base),
            "msb_reads_by_lower_valid": _get(base, "refresh.host_msb_reads"),
            "blocks_refreshed": _get(base, "refresh.blocks_refreshed"),
        }
        for e in ERROR_FRACTIONS:
            row[f"read_us_E{e}"] = rd(f"E{e}")
            row[f"reduction_E{e}"] = _reduction(rd("baseline"), rd(f"E{e}"))
        # The device's own read time (service, no queueing): IDA's sensing gain by itself.
        svc = {
            lab: _get(by.get((trace, lab)), "host.service.read.mean_us")
            for lab in ("baseline", "E20")
        }
        row["service_reduction_E20"] = _reduction(svc["baseline"], svc["E20"])
        row["read_wait_share_baseline"] = None
        wait = _get(base, "host.wait.read.mean_us")
        if isinstance(wait, (int, float)) and rd("baseline"):
            row["read_wait_share_baseline"] = wait / rd("baseline")
        # Table IV: additional reads and writes per refreshed block (IDA-E20 vs baseline), from
        # the timed refreshes or, with --refresh before, from the refresh before the replay.
        pre_blocks = _get(e20, "precondition.refreshed_blocks")
        if pre_blocks:
            row["E20_extra_reads_per_block"] = (
                _get(e20, "precondition.refresh_readbacks") or 0
            ) / pre_blocks
            row["E20_extra_writes_per_block"] = (
                _get(e20, "precondition.refresh_rewrites") or 0
            ) / pre_blocks
            row["E20_pages_adjusted"] = _get(e20, "precondition.refresh_adjusted_pages")
            row["E20_pages_moved"] = _get(e20, "precondition.refresh_moves")
            row["baseline_pages_moved"] = _get(base, "precondition.refresh_moves")
        else:
            for k in ("extra_reads_per_block", "extra_writes_per_block", "pages_adjusted"):
                row[f"E20_{k}"] = _get(e20, f"refresh.{k}")
            row["E20_pages_moved"] = _get(e20, "refresh.pages_moved")
            row["baseline_pages_moved"] = _get(base, "refresh.pages_moved")
        row["dtr"] = {}
        for d in DTR_SWEEP:
            b = rd("baseline" if d == 50 else f"baseline dtR={d}")
            i = rd("E20" if d == 50 else f"E20 dtR={d}")
            if b is not None and i is not None:
                row["dtr"][str(d)] = _reduction(b, i)
        row["throughput_baseline"] = thr("baseline closed")
        row["throughput_E20"] = thr("E20 closed")
        tb, ti = row["throughput_baseline"], row["throughput_E20"]
        row["throughput_gain"] = ti / tb - 1.0 if tb and ti else None
        row["reduction_mlc"] = _reduction(rd("baseline mlc"), rd("E20 mlc"))
        row["reduction_late"] = _reduction(rd("baseline late"), rd("E20 late"))
        row["late_read_retries_per_read"] = None
        late = by.get((trace, "baseline late"))
        retries, reads = (
            _get(late, "reliability.read_retries"),
            _get(late, "reliability.reads"),
        )
        if isinstance(retries, int) and reads:
            row["late_read_retries_per_read"] = retries / reads
        row["late_mean_rber"] = _get(late, "reliability.mean_rber")
        rows.append(row)

    def avg(k: str) -> float | None:
        return _mean([r.get(k) for r in rows])

    headline = [
        {"metric": "read response reduction, IDA-E20", "paper": 0.28, "ours": avg("reduction_E20")},
        {"metric": "read response reduction, IDA-E0", "paper": 0.31, "ours": avg("reduction_E0")},
        {
            "metric": "read response reduction, IDA-E50",
            "paper": 0.202,
            "ours": avg("reduction_E50"),
        },
        {
            "metric": "read response reduction, IDA-E80",
            "paper": "< 0.07",
            "ours": avg("reduction_E80"),
        },
        {
            "metric": "read service-time reduction, IDA-E20 (no queueing)",
            "paper": "—",
            "ours": avg("service_reduction_E20"),
        },
        {"metric": "throughput gain, IDA-E20", "paper": 0.10, "ours": avg("throughput_gain")},
        {"metric": "MLC read reduction, IDA-E20", "paper": 0.149, "ours": avg("reduction_mlc")},
        {
            "metric": "late-life read reduction, IDA-E20",
            "paper": 0.423,
            "ours": avg("reduction_late"),
        },
        {
            "metric": "MSB reads with invalid LSB/CSB",
            "paper": 0.2915,  # Table III average
            "ours": avg("msb_lower_invalid_share"),
        },
    ]
    return Analysis(rows, headline, errors)


def print_tables(an: Analysis, sel: Selection) -> None:
    t = Table(
        title="IDA coding vs baseline refresh: read response reduction (Fig. 8, 9, 11, Table V) "
        "and throughput (Fig. 10)",
        title_justify="left",
    )
    cols = [
        ("trace", "trace"),
        ("period s", "refresh_period_s"),
        ("base read µs", "read_us_baseline"),
        ("E0", "reduction_E0"),
        ("E20", "reduction_E20"),
        ("E50", "reduction_E50"),
        ("E80", "reduction_E80"),
        ("E20 svc", "service_reduction_E20"),
        ("base wait share", "read_wait_share_baseline"),
        ("thrpt", "throughput_gain"),
        ("MLC", "reduction_mlc"),
        ("late", "reduction_late"),
        ("MSB w/ inv. lower", "msb_lower_invalid_share"),
    ]
    for name, _ in cols:
        t.add_column(name, justify="left" if name == "trace" else "right")
    pct = {k for _, k in cols[3:]}
    for r in an.rows:
        t.add_row(
            *(fmt_pct(r.get(k), signed=False) if k in pct else fmt_num(r.get(k)) for _, k in cols)
        )
    out_console.print(t)
    t4 = Table(title="Table IV: per refreshed block (IDA-E20)", title_justify="left")
    for c in ("trace", "extra reads", "extra writes", "pages adjusted", "moved E20/base"):
        t4.add_column(c, justify="right")
    for r in an.rows:
        t4.add_row(
            r["trace"],
            fmt_num(r.get("E20_extra_reads_per_block")),
            fmt_num(r.get("E20_extra_writes_per_block")),
            fmt_num(r.get("E20_pages_adjusted")),
            f"{fmt_num(r.get('E20_pages_moved'))} / {fmt_num(r.get('baseline_pages_moved'))}",
        )
    out_console.print(t4)
    t9 = Table(title="Fig. 9: IDA-E20 read reduction by ΔtR (µs)", title_justify="left")
    t9.add_column("trace")
    for d in DTR_SWEEP:
        t9.add_column(str(d), justify="right")
    for r in an.rows:
        t9.add_row(r["trace"], *(fmt_pct(r["dtr"].get(str(d)), signed=False) for d in DTR_SWEEP))
    out_console.print(t9)
    th = Table(title="Headline: paper vs ours (mean over traces)", title_justify="left")
    for c in ("metric", "paper", "ours"):
        th.add_column(c, justify="left" if c == "metric" else "right")
    for h in an.headline:
        p = h["paper"]
        th.add_row(
            h["metric"],
            p if isinstance(p, str) else fmt_pct(p, signed=False),
            fmt_pct(h["ours"], signed=False),
        )
    out_console.print(th)
    if sel.missing_table_iii:
        out_console.print(
            "Table III traces not found (pass --traces DIR): " + ", ".join(sel.missing_table_iii)
        )
    for n in sel.notes:
        out_console.print(n)


def make_figures(an: Analysis, out: Path) -> list[Path]:
    """Fig. 4, 8, 9, 10, 11 as PNG files in ``out``."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    paths: list[Path] = []
    traces = [r["trace"] for r in an.rows]
    if not traces:
        return paths
    x = range(len(traces))

    def save(fig: Any, name: str) -> None:
        p = out / name
        fig.tight_layout()
        fig.savefig(p, dpi=120)
        plt.close(fig)
        paths.append(p)

    # Fig. 4: MSB reads by lower-page validity (baseline).
    fig, ax = plt.subplots(figsize=(6, 3.5))
    keys = [
        "lower_all_valid",
        "lsb_invalid_csb_valid",
        "lsb_valid_csb_invalid",
        "lower_all_invalid",
    ]
    bottom = [0.0] * len(traces)
    for k in keys:
        vals = []
        for r in an.rows:
            m = r.get("msb_reads_by_lower_valid") or {}
            tot = sum(int(m.get(q, 0)) for q in keys) or 1
            vals.append(int(m.get(k, 0)) / tot)
        ax.bar(list(x), vals, bottom=bottom, label=k.replace("_", " "))
        bottom = [b + v for b, v in zip(bottom, vals, strict=True)]
    ax.set_xticks(list(x), traces, rotation=20)
    ax.set_ylabel("share of host MSB reads")
    ax.set_title("Fig. 4: MSB reads by lower-page validity (baseline)")
    ax.legend(fontsize=7)
    save(fig, "fig4_msb_reads.png")

    # Fig. 8: normalised read response for E0/E20/E50/E80.
    fig, ax = plt.subplots(figsize=(6, 3.5))
    w = 0.8 / len(ERROR_FRACTIONS)
    for i, e in enumerate(ERROR_FRACTIONS):
        vals = [
            (r[f"read_us_E{e}"] / r["read_us_baseline"])
            if r.get(f"read_us_E{e}") and r.get("read_us_baseline")
            else 0.0
            for r in an.rows
        ]
        ax.bar([j + i * w for j in x], vals, width=w, label=f"IDA-E{e}")
    ax.axhline(1.0, color="k", lw=0.8)
    ax.set_xticks([j + 0.4 - w / 2 for j in x], traces, rotation=20)
    ax.set_ylabel("read response / baseline")
    ax.set_title("Fig. 8: read response, normalised to baseline")
    ax.set_ylim(0, 1.35)
    ax.legend(fontsize=7, loc="upper right", ncol=4)
    save(fig, "fig8_read_response.png")

    # Fig. 9: ΔtR sweep.
    fig, ax = plt.subplots(figsize=(5, 3.5))
    for r in an.rows:
        ds = [d for d in DTR_SWEEP if r["dtr"].get(str(d)) is not None]
        ax.plot(ds, [100 * r["dtr"][str(d)] for d in ds], marker="o", label=r["trace"])
    ax.set_xlabel("ΔtR (µs)")
    ax.set_ylabel("IDA-E20 read reduction (%)")
    ax.set_title("Fig. 9: sensitivity to ΔtR")
    ax.legend(fontsize=7)
    save(fig, "fig9_dtr.png")

    # Fig. 10 and 11: throughput; early vs late life.
    fig, (a1, a2) = plt.subplots(1, 2, figsize=(9, 3.5))
    a1.bar(list(x), [(r.get("throughput_gain") or 0.0) * 100 + 100 for r in an.rows])
    a1.axhline(100, color="k", lw=0.8)
    a1.set_xticks(list(x), traces, rotation=20)
    a1.set_ylabel("IDA-E20 throughput (% of baseline)")
    a1.set_title("Fig. 10: closed-loop throughput")
    early = [1 - (r.get("reduction_E20") or 0.0) for r in an.rows]
    late = [1 - (r.get("reduction_late") or 0.0) for r in an.rows]
    a2.bar([j - 0.2 for j in x], early, width=0.4, label="early life")
    a2.bar([j + 0.2 for j in x], late, width=0.4, label=f"late life ({LATE_PE} P/E, read retry)")
    a2.set_xticks(list(x), traces, rotation=20)
    a2.set_ylabel("IDA-E20 read response / baseline")
    a2.set_title("Fig. 11: early vs late lifetime")
    a2.set_ylim(0, 1.35)
    a2.axhline(1.0, color="k", lw=0.8)
    a2.legend(fontsize=7, loc="upper right")
    save(fig, "fig10_fig11.png")
    return paths


@click.command("ida")
@common_options(PAPER)
@click.option(
    "--max-requests",
    type=click.IntRange(min=0),
    default=None,
    help="Cut every trace to its first N requests; 0 = whole traces "
    f"[default: {DEFAULT_MAX_REQUESTS:,}; {QUICK_MAX_REQUESTS:,} with --quick].",
)
@click.option(
    "--cycles",
    type=click.FloatRange(min=0.01),
    default=1.0,
    show_default=True,
    help="With --refresh timed: refresh cycles per trace; the period is the trace's "
    "duration / CYCLES (the paper's 3-day..3-month periods over week-long traces are "
    "0.08..2.3 cycles).",
)
@click.option(
    "--refresh",
    "refresh_mode",
    type=click.Choice(["before", "timed"]),
    default="before",
    show_default=True,
    help="before: refresh every block once before the replay (3-day period, no refresh "
    "traffic in the replay); timed: compressed period, refreshes during the replay "
    "(see --cycles).",
)
def ida(opts: CommonOptions, max_requests: int | None, cycles: float, refresh_mode: str) -> None:
    """IDA coding (MICRO'18): Figs. 4, 8-11, Tables III (last column), IV and V.

    Baseline refresh vs IDA-E0/E20/E50/E80 on the Table II TLC SSD (preset ida-tlc), over the
    read-intensive MSR traces of Table III found under --traces and the read-dominated real
    traces we have (captured pgbench_ro and devtree, the WebSearch1 excerpt). --quick: the
    WebSearch1 excerpt only; exits non-zero unless IDA-E20's mean read response is below the
    baseline's.
    """
    from nandlab.experiment import GridStats

    t0 = time.perf_counter()
    sel = select_traces(opts.traces, quick=opts.quick, max_requests=max_requests)
    if not sel.traces:
        raise FileNotFoundError("no traces found")

    def grid(runs: list[PlannedRun]) -> tuple[dict[str, Any], GridStats]:
        df, st = run_planned(runs, opts)
        return {"df": df, "reports": reports_by_key(df)}, st

    probes = probe_runs(sel) if refresh_mode == "timed" else []
    g1, st1 = grid(probes) if probes else ({"df": None, "reports": {}}, GridStats())
    periods: dict[str, tuple[float, float]] = {}
    for t in sel.traces:
        by = {
            r.label: g1["reports"].get(r.key, (None, None))[0] for r in probes if r.trace == t.name
        }
        dur = _get(by.get("probe"), "sim.last_arrival_s")
        span = _get(by.get("probe closed"), "sim.last_completion_s")
        if dur and span:
            periods[t.name] = (float(dur), float(span))
    runs = plan_runs(sel, periods, quick=opts.quick, cycles=cycles, mode=refresh_mode)
    if not opts.quiet:
        err_console.print(
            f"ida: {len(sel.traces)} traces ({', '.join(t.name for t in sel.traces)}), "
            f"{len(runs)} runs -> {opts.out}"
        )
    g2, st2 = grid(runs)
    an = analyse(probes + runs, {**g1["reports"], **g2["reports"]})
    figs = make_figures(an, opts.out)
    peak_rss_mib = (
        max(
            resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss,
            resource.getrusage(resource.RUSAGE_SELF).ru_maxrss,
        )
        / 1024
    )
    check = None
    if opts.quick:
        r = an.rows[0] if an.rows else {}
        red = r.get("reduction_E20")
        check = {
            "passed": red is not None and red > 0,
            "message": f"{r.get('trace')}: IDA-E20 read response reduction "
            f"{fmt_pct(red, signed=False)}; expected > 0",
        }
    import polars as pl

    write_json(
        opts.json_out,
        PAPER,
        pl.concat([d for d in (g1["df"], g2["df"]) if d is not None], how="vertical_relaxed"),
        an.rows,
        headline=an.headline,
        traces=traces_json(sel.traces),
        missing_table_iii=sel.missing_table_iii,
        paper_table_iii_msb_share={k: v[1] for k, v in TABLE_III.items()},
        cycles=cycles if refresh_mode == "timed" else None,
        refresh_mode=refresh_mode,
        figures=[str(p) for p in figs],
        peak_rss_mib_of_workers=peak_rss_mib,
        check=check,
    )
    if not opts.quiet:
        print_tables(an, sel)
        out_console.print(
            f"runs: {st1.total + st2.total} ({st1.executed + st2.executed} executed) in "
            f"{time.perf_counter() - t0:.1f} s; peak RSS of a worker {peak_rss_mib:.0f} MiB; "
            f"results {opts.out / 'runs.parquet'}; {len(figs)} figures in {opts.out}"
        )
    exit_on_failures(an.errors, check, opts.out)
