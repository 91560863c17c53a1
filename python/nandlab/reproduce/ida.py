"""``nandlab reproduce ida``: Kim et al., "Improving the Read Performance of TLC/MLC Flash with
IDA Coding" (MICRO'18): Fig. 4, Table III's last column, Fig. 8, Table IV, Fig. 9, Fig. 10,
Fig. 11 and Table V.

Setup: preset ``ida-tlc`` (Table II). Schemes: ``baseline`` (periodic refresh that moves every
valid page) and ``ida`` with E0/E20/E50/E80 (``scheme.params.error_fraction``).

**Refresh (our methodology).** The paper refreshes every 3 days to 3 months over week-long MSR
traces (0.08-2.3 refresh cycles per trace), so refresh traffic is a small background load and
most reads find their data in the state the last refresh left. Our real traces last minutes, so
every full block is refreshed once, untimed, before the replay
(``precondition.refresh_before_replay``: IDA adjusts its word lines, E% of the adjusted pages
are rewritten, moved data asks for its own page type so LSB data lands on LSB pages), the period
is the paper's shortest (3 days) and data ages are spread over one period. The replay measures
reads in the refreshed state, with no refresh traffic in the latencies; Table IV's extra
reads/writes come from that refresh. An earlier "timed" mode compressed the 3-day cycle into
the trace's minutes (~800x), so refresh traffic competed with the host at a rate the paper
never has and IDA won by moving fewer pages rather than by faster sensing; it was dropped.

**Load level** (:mod:`nandlab.reproduce.load`): each trace runs at the time scale K chosen
from the baseline's offered die load (``--time-scale``); closed-loop runs (Fig. 10) have no
time scale.

Runs per trace: baseline and IDA-E0/E20/E50/E80 at ΔtR = 50 µs (Fig. 8, Fig. 4, Table IV);
ΔtR = 30..70 µs for baseline and E20 (Fig. 9: read latencies 50, 50+ΔtR, 50+2ΔtR); closed-loop
throughput at queue depth 32 (Fig. 10); late life
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
    exit_on_failures,
    fmt_num,
    fmt_pct,
    grid_json,
    msr_patterns,
    out_console,
    plural,
    reports_by_key,
    run_planned,
    runs_line,
    traces_json,
    write_json,
)
from nandlab.reproduce.load import (
    expand,
    groups,
    mean_of,
    print_headline,
    print_load_table,
    report_value,
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
    # Table III's "src2" is src2_1 (Fig. 9 gives 97.86 % reads, src2_1's ratio), not src2_0.
    "src2_1": (msr_patterns("src2", 1, "CAMRESSDPA03"), 0.2127),
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


def run_spec(
    t: TraceChoice, label: str, kind: str = "", ov: Mapping[str, object] | None = None
) -> RunSpec:
    """The run ``label`` (baseline or E<n>) of variant ``kind`` on trace instance ``t``:
    refresh once before the replay with the paper's 3-day period (see the module doc)."""
    from nandlab.experiment import RunSpec

    scheme, sov = _scheme(label)
    rf: dict[str, object] = {
        "precondition.refresh_before_replay": True,
        "refresh.period_s": PAPER_PERIOD_S,
        "precondition.initial_age_window_s": PAPER_PERIOD_S,
    }
    base = t.overrides()
    if kind == "closed":
        base.pop("host.time_scale", None)  # closed loop: no arrival times to scale
    o = {**base, **rf, **sov, **(ov or {})}
    name = f"{label} {kind}".strip()
    return RunSpec(t.path, t.name, scheme, CONFIG, o, name)


def probe_specs(t: TraceChoice) -> list[RunSpec]:
    """The baseline run at K = 1 that sets the trace's automatic load level."""
    return [run_spec(t, "baseline")]


def plan_runs(sel: Selection, *, quick: bool) -> list[PlannedRun]:
    """All measured runs per trace instance."""
    runs: list[PlannedRun] = []
    dtrs = QUICK_DTR_SWEEP if quick else DTR_SWEEP
    for t in sel.traces:

        def add(label: str, kind: str, ov: Mapping[str, object], t: TraceChoice = t) -> None:
            spec = run_spec(t, label, kind, ov)
            runs.append(PlannedRun(t.name, spec.label, spec))

        for lab in ("baseline", *(f"E{e}" for e in ERROR_FRACTIONS)):
            add(lab, "", {})
        for d in dtrs:
            if d == 50:
                continue
            for lab in ("baseline", "E20"):
                add(lab, f"dtR={d}", _timing(d))
        late = {
            "precondition.initial_pe_cycles": LATE_PE,
            "reliability.model": "vth",
            "reliability.codes": [LATE_CODE],
        }
        mlc = {"device.cell": "mlc", "timing.read_us": list(MLC_READ_US)}
        closed = {"host.mode": "closed", "host.queue_depth": CLOSED_QD}
        for lab in ("baseline", "E20"):
            add(lab, "late", late)
            add(lab, "mlc", mlc)
            add(lab, "closed", closed)
    return runs


# --------------------------------------------------------------------------- analysis


def _reduction(base: float | None, new: float | None) -> float | None:
    if base is None or new is None or base <= 0:
        return None
    return 1.0 - new / base


def msb_lower_invalid_share(rep: Mapping[str, Any] | None) -> float | None:
    """Share of host MSB reads whose LSB and/or CSB is invalid (Table III's last column)."""
    m = report_value(rep, "refresh.host_msb_reads")
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
    #: trace instance -> the baseline's load (:func:`nandlab.reproduce.load.load_info`)
    loads: dict[str, dict[str, Any]] = field(default_factory=dict)

    @property
    def overloaded(self) -> set[str]:
        return {t for t, li in self.loads.items() if li.get("overloaded")}


#: Headline metrics: (text, the paper's value as a change, row key, the baseline run that
#: decides whether the comparison is overloaded; None: closed loop, saturated by design).
#: Reductions are shown as changes (-28 % = a 28 % reduction).
HEADLINE_METRICS: tuple[tuple[str, str, str, str | None], ...] = (
    ("read response, IDA-E20", "-28 %", "reduction_E20", "baseline"),
    ("read response, IDA-E0", "-31 %", "reduction_E0", "baseline"),
    ("read response, IDA-E50", "-20.2 %", "reduction_E50", "baseline"),
    ("read response, IDA-E80", "> -7 %", "reduction_E80", "baseline"),
    ("read service time, IDA-E20 (no queueing)", "—", "service_reduction_E20", "baseline"),
    ("throughput (closed loop, QD 32), IDA-E20", "+10 %", "throughput_gain", None),
    ("MLC read response (Table V), IDA-E20", "-14.9 %", "reduction_mlc", "baseline mlc"),
    ("late-life read response (Fig. 11), IDA-E20", "-42.3 %", "reduction_late", "baseline late"),
)


def analyse(
    runs: Sequence[PlannedRun],
    reports: Mapping[str, tuple[dict[str, Any] | None, str | None]],
    level_groups: Mapping[str, Sequence[str]] | None = None,
) -> Analysis:
    """One row per trace instance with every figure's number and the baseline's load; the
    headline over the comparable instances of each load level (arithmetic and geometric
    mean)."""
    from nandlab.reproduce.load import geo_mean, headline_rows, load_info

    by: dict[tuple[str, str], dict[str, Any] | None] = {}
    errors: list[tuple[str, str, str]] = []
    for r in runs:
        rep, err = reports.get(r.key, (None, "not run"))
        by[(r.trace, r.label)] = rep
        if err:
            errors.append((r.trace, r.label, err))
    rows: list[dict[str, Any]] = []
    loads: dict[str, dict[str, Any]] = {}
    for trace in dict.fromkeys(r.trace for r in runs):

        def rd(label: str, trace: str = trace) -> float | None:
            v = report_value(by.get((trace, label)), "host.read_mean_us")
            return float(v) if isinstance(v, (int, float)) else None

        def thr(label: str, trace: str = trace) -> float | None:
            v = report_value(by.get((trace, label)), "sim.host_throughput_rps")
            return float(v) if v else None

        base = by.get((trace, "baseline"))
        e20 = by.get((trace, "E20"))
        loads[trace] = load_info(base)
        row: dict[str, Any] = {
            "trace": trace,
            **loads[trace],
            "refresh_period_s": report_value(base, "refresh.period_s"),
            "read_us_baseline": rd("baseline"),
            "msb_lower_invalid_share": msb_lower_invalid_share(base),
            "msb_reads_by_lower_valid": report_value(base, "refresh.host_msb_reads"),
            "blocks_refreshed": report_value(base, "refresh.blocks_refreshed"),
        }
        for e in ERROR_FRACTIONS:
            row[f"read_us_E{e}"] = rd(f"E{e}")
            row[f"reduction_E{e}"] = _reduction(rd("baseline"), rd(f"E{e}"))
        # The device's own read time (service, no queueing): IDA's sensing gain by itself.
        svc = {
            lab: report_value(by.get((trace, lab)), "host.service.read.mean_us")
            for lab in ("baseline", "E20")
        }
        row["service_reduction_E20"] = _reduction(svc["baseline"], svc["E20"])
        row["read_wait_share_baseline"] = None
        wait = report_value(base, "host.wait.read.mean_us")
        if isinstance(wait, (int, float)) and rd("baseline"):
            row["read_wait_share_baseline"] = wait / rd("baseline")
        # Table IV: additional reads and writes per refreshed block (IDA-E20 vs baseline), from
        # the refresh before the replay.
        pre_blocks = report_value(e20, "precondition.refreshed_blocks")
        if pre_blocks:
            row["E20_extra_reads_per_block"] = (
                report_value(e20, "precondition.refresh_readbacks") or 0
            ) / pre_blocks
            row["E20_extra_writes_per_block"] = (
                report_value(e20, "precondition.refresh_rewrites") or 0
            ) / pre_blocks
        row["E20_pages_adjusted"] = report_value(e20, "precondition.refresh_adjusted_pages")
        row["E20_pages_moved"] = report_value(e20, "precondition.refresh_moves")
        row["baseline_pages_moved"] = report_value(base, "precondition.refresh_moves")
        # Where IDA's moved LSB data landed (§III-C: on the new blocks' LSB pages).
        lsb = report_value(e20, "precondition.refresh_moves_by_page_type.lsb")
        row["E20_moved_lsb_by_page_type"] = lsb
        if isinstance(lsb, Mapping) and sum(lsb.values()):
            row["E20_moved_lsb_on_lsb_share"] = lsb.get("lsb", 0) / sum(lsb.values())
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
            report_value(late, "reliability.read_retries"),
            report_value(late, "reliability.reads"),
        )
        if isinstance(retries, int) and reads:
            row["late_read_retries_per_read"] = retries / reads
        row["late_mean_rber"] = report_value(late, "reliability.mean_rber")
        rows.append(row)

    groups = level_groups or {"auto": [r["trace"] for r in rows]}
    headline: list[dict[str, Any]] = []
    for text, paper, key, base_label in HEADLINE_METRICS:
        ratios = {
            r["trace"]: (None if r.get(key) is None else 1.0 - r[key])
            if key.startswith(("reduction", "service_reduction"))
            else (None if r.get(key) is None else 1.0 + r[key])
            for r in rows
        }
        flags = {
            r["trace"]: (
                None
                if base_label is None
                else load_info(by.get((r["trace"], base_label))).get("overloaded")
            )
            for r in rows
        }
        headline += headline_rows([(text, paper, key)], {key: ratios}, flags, groups)
    share = {r["trace"]: r.get("msb_lower_invalid_share") for r in rows}
    vals = [v for v in share.values() if v is not None]
    headline.append(
        {
            "level": "all",
            "metric": "MSB reads with invalid LSB/CSB (share, not a change)",
            "paper": "29.2 %",  # Table III average
            "ours_mean": mean_of(vals),
            "ours_geomean": geo_mean(vals),
            "per_trace": share,
            "traces": len(vals),
            "overloaded": [],
            "is_share": True,
        }
    )
    return Analysis(rows, headline, errors, loads)


def print_tables(an: Analysis, sel: Selection) -> None:
    t = Table(
        title="IDA coding vs baseline refresh: read response change (Fig. 8, 9, 11, Table V) "
        "and throughput (Fig. 10); reductions as negative changes",
        title_justify="left",
    )
    cols = [
        ("trace", "trace"),
        ("K", "time_scale"),
        ("die util.", "die_utilization"),
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
    change = {k for _, k in cols if k.startswith(("reduction", "service_reduction"))}
    share = {"die_utilization", "read_wait_share_baseline", "msb_lower_invalid_share"}
    for r in an.rows:
        cells = []
        for _, k in cols:
            v = r.get(k)
            if k == "trace":
                cells.append(v + (" [red](overloaded)[/]" if r.get("overloaded") else ""))
            elif k in change:
                cells.append(fmt_pct(None if v is None else -v))
            elif k == "throughput_gain":
                cells.append(fmt_pct(v))
            elif k in share:
                cells.append(fmt_pct(v, signed=False))
            elif k == "time_scale":
                cells.append("—" if v is None else f"{v:g}")
            else:
                cells.append(fmt_num(v))
        t.add_row(*cells)
    out_console.print(t)
    t4 = Table(title="Table IV: per refreshed block (IDA-E20)", title_justify="left")
    for c in (
        "trace",
        "extra reads",
        "extra writes",
        "pages adjusted",
        "moved E20/base",
        "moved LSB data on LSB pages",
    ):
        t4.add_column(c, justify="right")
    for r in an.rows:
        t4.add_row(
            r["trace"],
            fmt_num(r.get("E20_extra_reads_per_block")),
            fmt_num(r.get("E20_extra_writes_per_block")),
            fmt_num(r.get("E20_pages_adjusted")),
            f"{fmt_num(r.get('E20_pages_moved'))} / {fmt_num(r.get('baseline_pages_moved'))}",
            fmt_pct(r.get("E20_moved_lsb_on_lsb_share"), signed=False),
        )
    out_console.print(t4)
    t9 = Table(title="Fig. 9: IDA-E20 read response change by ΔtR (µs)", title_justify="left")
    t9.add_column("trace")
    for d in DTR_SWEEP:
        t9.add_column(str(d), justify="right")
    for r in an.rows:
        t9.add_row(
            r["trace"],
            *(
                fmt_pct(None if r["dtr"].get(str(d)) is None else -r["dtr"][str(d)])
                for d in DTR_SWEEP
            ),
        )
    out_console.print(t9)
    print_headline(an.headline, "Headline: IDA, the paper vs ours (over comparable traces)")
    if sel.missing_table_iii:
        out_console.print(
            "Table III traces not found (pass --traces DIR): " + ", ".join(sel.missing_table_iii)
        )
    for n in sel.notes:
        out_console.print(n)


def make_figures(an: Analysis, out: Path) -> list[Path]:
    """Fig. 4, 8, 9, 10 and 11 as PNG and SVG in ``out`` (the shared figure style)."""
    from nandlab import figures

    paths: list[Path] = []
    if not an.rows:
        return paths
    over = an.overloaded

    # Fig. 4: MSB reads by lower-page validity (baseline).
    keys = [
        "lower_all_valid",
        "lsb_invalid_csb_valid",
        "lsb_valid_csb_invalid",
        "lower_all_invalid",
    ]
    dist = {
        r["trace"]: {k: (r.get("msb_reads_by_lower_valid") or {}).get(k) for k in keys}
        for r in an.rows
    }
    paths += figures.stacked_bars(
        dist,
        keys,
        out / "fig4_msb_reads",
        category_labels={k: k.replace("_", " ") for k in keys},
        ylabel="share of host MSB reads",
        title="Fig. 4: host MSB reads by lower-page validity (baseline)",
    )

    # Fig. 8: read response per error fraction, normalised to the baseline.
    labels = {"baseline": "baseline", **{f"E{e}": f"IDA-E{e}" for e in ERROR_FRACTIONS}}
    schemes = list(labels)
    data = {
        r["trace"]: {
            "baseline": r.get("read_us_baseline"),
            **{f"E{e}": r.get(f"read_us_E{e}") for e in ERROR_FRACTIONS},
        }
        for r in an.rows
    }
    paths += figures.grouped_bars(
        {"Fig. 8: read response, normalised to the baseline refresh": data},
        schemes,
        out / "fig8_read_response",
        reference="baseline",
        scheme_labels=labels,
        overloaded=over,
        reference_unit="µs",
    )

    # Fig. 9: ΔtR sweep.
    lines = {
        r["trace"]: [
            (float(d), None if r["dtr"].get(str(d)) is None else 1.0 - r["dtr"][str(d)])
            for d in DTR_SWEEP
        ]
        for r in an.rows
    }
    paths += figures.sweep_lines(
        {"IDA-E20 read response / baseline": lines},
        out / "fig9_dtr",
        xlabel="ΔtR (µs)",
        title="Fig. 9: sensitivity to ΔtR",
        mark_x=50,
    )

    # Fig. 10 and 11: closed-loop throughput; early vs late life.
    thr = {
        r["trace"]: {"baseline": r.get("throughput_baseline"), "E20": r.get("throughput_E20")}
        for r in an.rows
    }
    paths += figures.grouped_bars(
        {"Fig. 10: closed-loop throughput (QD 32), normalised to the baseline": thr},
        ["baseline", "E20"],
        out / "fig10_throughput",
        reference="baseline",
        scheme_labels={"baseline": "baseline", "E20": "IDA-E20"},
        reference_unit="req/s",
    )
    life = {
        r["trace"]: {
            "early": None if r.get("reduction_E20") is None else 1 - r["reduction_E20"],
            "late": None if r.get("reduction_late") is None else 1 - r["reduction_late"],
        }
        for r in an.rows
    }
    paths += figures.grouped_bars(
        {"Fig. 11: IDA-E20 read response / baseline, early vs late life": life},
        ["early", "late"],
        out / "fig11_lifetime",
        scheme_labels={
            "early": "early life",
            "late": f"late life ({LATE_PE} P/E, read retry)",
        },
        overloaded=over,
    )
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
def ida(opts: CommonOptions, max_requests: int | None) -> None:
    """IDA coding (MICRO'18): Figs. 4, 8-11, Tables III (last column), IV and V.

    Baseline refresh vs IDA-E0/E20/E50/E80 on the Table II TLC SSD (preset ida-tlc), over the
    read-intensive MSR traces of Table III found under --traces and the read-dominated real
    traces we have (captured pgbench_ro and devtree, the WebSearch1 excerpt), each refreshed
    once before the replay, at the load level of --time-scale. --quick: the WebSearch1 excerpt
    only; exits non-zero unless IDA-E20's mean read response is below the baseline's.
    """
    t0 = time.perf_counter()
    sel = select_traces(opts.traces, quick=opts.quick, max_requests=max_requests)
    if not sel.traces:
        raise FileNotFoundError("no traces found")
    sel.traces, load_plan = expand(sel.traces, opts, probe_specs)
    runs = plan_runs(sel, quick=opts.quick)
    df, st = run_planned(
        runs,
        opts,
        label=f"ida: {plural(len(sel.traces), 'trace')} ({', '.join(t.name for t in sel.traces)})",
    )
    an = analyse(runs, reports_by_key(df), groups(load_plan, sel.traces))
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
    write_json(
        opts.json_out,
        PAPER,
        df,
        an.rows,
        headline=an.headline,
        traces=traces_json(sel.traces),
        missing_table_iii=sel.missing_table_iii,
        paper_table_iii_msb_share={k: v[1] for k, v in TABLE_III.items()},
        refresh_mode="before",
        figures=[str(p) for p in figs],
        peak_rss_mib_of_workers=peak_rss_mib,
        check=check,
        grid=grid_json(st),
        load=load_plan.to_json(),
        loads=an.loads,
    )
    if not opts.quiet:
        print_load_table(sel.traces, an.loads, "Load level: the baseline refresh per trace")
        print_tables(an, sel)
        out_console.print(
            runs_line(st, t0, len(figs), opts.out)
            + f"; peak RSS of a worker {peak_rss_mib:.0f} MiB"
        )
    exit_on_failures(an.errors, check, opts.out)
