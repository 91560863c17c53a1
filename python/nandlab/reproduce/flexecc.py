"""``nandlab reproduce flexecc``: Huang et al., "FlexECC: Partially Relaxing ECC of MLC SSD for
Better Cache Performance" (USENIX ATC'14): Table 1, Figs. 3-6, Tables 3-4 and the headline.

Preset ``flexecc`` (Table 2). The SSD is a write-back LRU cache (``[cache]``) in front of a
1.5 ms disk; every primary trace goes through the cache manager, which tags each 4 KiB SSD
operation; ``baseline`` (every page BCH: the paper's BCH-SSD) and ``flexecc`` see the same
tagged stream. Stand-ins under their own names (OLTP: pgbench_rw, File: pgbench_wh, Web:
devtree; R_75 / R_90: generated with Table 3's read mix, :mod:`~.flexecc_standins`), scaled
as spec §2 says. Every trace also runs with a near-zero page transfer (:data:`FAST`, the
reading §4.2's arithmetic implies). Metric (§4.2): mean response of all SSD-level requests;
gain = 1 - RT_Flex / RT_BCH, with the decode time FlexECC saves directly beside it. Faults
(Table 4, Fig. 6): every 1/RBER-th bit, at each workload's first load level. What differs and
why: docs/reproductions.md, FlexECC.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from nandlab.reproduce import framework as fw
from nandlab.reproduce.common import TraceChoice
from nandlab.reproduce.flexecc_standins import PAPER_TABLE3, footprint, prepare, scaling
from nandlab.reproduce.headline import Headline as H
from nandlab.reproduce.load import load_info, ratio, report_value

PAPER = "flexecc"
#: The paper's workload of each stand-in (``synthetic R_75`` is made here).
WORKLOAD = {"pgbench_wh": "File", "devtree": "Web", "pgbench_rw": "OLTP",
            "Financial1 excerpt": "OLTP", "synthetic R_75": "R_75",
            "synthetic R_90": "R_90"}  # fmt: skip
#: Table 1: SSD-level read % per workload.
PAPER_READ_PCT = {"File": 15.2, "Web": 17.8, "Mail": 21.9, "OLTP": 8.6, "R_75": 75.0, "R_90": 90.0}
#: Fig. 3: mean response-time gains, %.
PAPER_GAIN = {"File": 30.2, "Mail": 30.1, "Web": 30.8, "OLTP": 28.5, "R_75": 49.0, "R_90": 63.5}
#: Fig. 5: cleaning-time reductions, %.
PAPER_CLEANING = {"File": 21.8, "Mail": 21.8, "Web": 21.7, "OLTP": 21.7, "R_75": 17.8}
#: Table 4 at RBER 1e-7: corruptions, disk access, prefetched, BCH decoded.
PAPER_TABLE4 = {"File": (4107, 0, 2720, 195), "R_75": (4107, 8, 3917, 34),
                "R_90": (4107, 7, 4024, 10)}  # fmt: skip
FIG6_RBER = (1e-8, 1e-7, 1e-6, 1e-5)
#: The reading of the page transfer that §4.2's arithmetic implies (near zero), beside the
#: preset's DiskSim default (102.4 µs per 4 KiB page).
FAST = "near-zero transfer"
TRACES = fw.Traces(
    table="Table 1",
    ours=tuple(fw.standin(n, capped=False) for n in ("pgbench_wh", "devtree", "pgbench_rw")),
    quick=(fw.standin("Financial1 excerpt"),),
    quick_note="--quick: the Financial1 excerpt (OLTP) and 60,000-request synthetic traces",
)


def plan(traces: list[TraceChoice], quick: bool) -> list[tuple[TraceChoice, fw.Variant]]:
    """BCH-SSD and FlexECC on every trace instance; the faults runs (Table 4, Fig. 6) at each
    workload's first load level."""
    out, first = [], set()
    for t in traces:
        ov = scaling(footprint(t.path), t.time_scale)
        out += [(t, fw.Variant(s, s, ov)) for s in ("baseline", "flexecc")]
        # §4.2's arithmetic reading: near-zero page transfer (0.04 µs) instead of DiskSim's
        out += [(t, fw.Variant(f"{s} {FAST}", s, {**ov, "timing.channel_mt_s": 1e5}))
                for s in ("baseline", "flexecc")]  # fmt: skip
        wl = WORKLOAD.get(t.base_name)
        if wl in ("File", "OLTP", "R_75", "R_90") and t.base_name not in first:
            first.add(t.base_name)
            for rber in FIG6_RBER if wl in ("File", "OLTP") and not quick else (1e-7,):
                f = {**ov, "faults.mode": "every_nth_bit", "faults.rber": rber,
                     "stats.latency_cdf": False}  # fmt: skip
                out += [
                    (t, fw.Variant(f"{s} rber={rber:g}", s, f)) for s in ("flexecc", "baseline")
                ]
    return out


def table3(rep: Mapping[str, Any]) -> dict[str, int]:
    c = rep["cache"]
    m = c["gc_moves_by_ecc"]
    return {
        "bch_read": int(c["host_reads_by_ecc"].get("bch", 0)),
        "crc_read": int(c["host_reads_by_ecc"].get("crc", 0)),
        "crc_moved": int(m.get("crc->crc", 0)),
        "bch2crc": int(m.get("bch->crc", 0)),
        "bch_moved": int(m.get("bch->bch", 0)),
    }


def decode_saved_us(rep: Mapping[str, Any]) -> float:
    """Decode time FlexECC saves directly per SSD request, µs: every CRC read and every GC move
    to CRC costs (BCH decode - CRC check) less."""
    ecc = {e["name"]: e["decode_us"] for e in rep["device"]["ecc"]}
    t3 = table3(rep)
    n = rep["host"]["requests"] or 1
    return (t3["crc_read"] + t3["crc_moved"] + t3["bch2crc"]) * (ecc["bch"] - ecc["crc"]) / n


def side(rep: Mapping[str, Any]) -> dict[str, Any]:
    """One scheme's numbers of a row."""
    return {
        "mean_us": rep["host"]["mean_us"],
        "read_mean_us": rep["host"]["read_mean_us"],
        "write_mean_us": rep["host"]["write_mean_us"],
        "cleaning_us": rep["cache"]["cleaning_us"],
        "gc_invocations": report_value(rep, "gc.invocations"),
        "table3": table3(rep),
        "invariant_violations": (rep.get("scheme_stats") or {}).get("invariant_violations"),
    }


def rows(res: fw.Results) -> list[dict[str, Any]]:
    out = []
    for t in res.instances:
        b, f = res.report(t.name, "baseline"), res.report(t.name, "flexecc")
        if b is None or f is None:
            continue
        rb, rf = b["host"]["mean_us"], f["host"]["mean_us"]
        cb, cf = b["cache"]["cleaning_us"], f["cache"]["cleaning_us"]
        saved = decode_saved_us(f)
        t3 = table3(f)
        reads = t3["bch_read"] + t3["crc_read"]
        out.append({
            "trace": t.name, "workload": WORKLOAD.get(t.base_name, t.base_name),
            "footprint_pages": footprint(t.path), "time_scale": t.time_scale, **load_info(b),
            "read_share_percent": b["cache"]["manager"]["ssd_read_share_percent"],
            "bch_ssd": side(b), "flexecc": side(f),
            "gain": fw.reduction(rf, rb), "mean_ratio": ratio(rf, rb),
            "crc_read_share": t3["crc_read"] / reads if reads else None,
            "decode_saved_us_per_request": saved,
            "decode_share_of_gain": saved / (rb - rf) if rb and rb != rf else None,
            "cleaning_reduction": fw.reduction(cf, cb), "cleaning_ratio": ratio(cf, cb),
            "cdf": {"bch_ssd": report_value(b, "host.cdf"), "flexecc": report_value(f, "host.cdf")},
            **fast_reading(res, t.name),
            "per_page_gain": per_page_gain(f),
        })  # fmt: skip
    return out


def fast_reading(res: fw.Results, trace: str) -> dict[str, Any]:
    """The gain with a near-zero page transfer (:data:`FAST`)."""
    b, f = res.report(trace, f"baseline {FAST}"), res.report(trace, f"flexecc {FAST}")
    if b is None or f is None:
        return {}
    rb, rf = b["host"]["mean_us"], f["host"]["mean_us"]
    return {"fast_bch_ssd_mean_us": rb, "fast_flexecc_mean_us": rf,
            "fast_mean_ratio": ratio(rf, rb), "fast_gain": fw.reduction(rf, rb),
            "fast_decode_saved_us_per_request": decode_saved_us(f)}  # fmt: skip


def per_page_gain(rep: Mapping[str, Any]) -> dict[str, float]:
    """§4.2's "about 25 % performance gain for individual page decoding" as the device's
    arithmetic: a page read's time saved by a CRC check instead of a BCH decode, with the
    run's transfer and with none (sense + decode only), and with the corrupted-page decode."""
    d = rep["device"]
    ecc = {e["name"]: e["decode_us"] for e in d["ecc"]}
    sense = d["read_us"][0] if isinstance(d.get("read_us"), list) else 25.0
    xfer = d["transfer_us"]
    saved = ecc["bch"] - ecc["crc"]
    return {"transfer_us": xfer,
            "with_transfer": saved / (sense + ecc["bch"] + xfer),
            "no_transfer": saved / (sense + ecc["bch"])}  # fmt: skip


def faults(an: fw.Analysis) -> dict[str, Any]:
    """Table 4 / Fig. 6 (every 1/RBER-th bit), normalised to the error-free BCH-SSD."""
    res, out = an.res, []
    for r in an.trace_rows:
        base = r["bch_ssd"]["mean_us"]
        for rber in FIG6_RBER:
            f, b = (res.report(r["trace"], f"{s} rber={rber:g}") for s in ("flexecc", "baseline"))
            if f is None or b is None:
                continue
            c = f["cache"]
            out.append({
                "trace": r["trace"], "workload": r["workload"], "rber": rber,
                "corruptions": c["faults"]["corruptions"],
                "disk_access": c["backend"]["disk_accesses"],
                "prefetched": c["backend"]["prefetched"],
                "bch_decoded": c["faults"]["corrected_reads"],
                "flexecc_norm": ratio(f["host"]["mean_us"], base),
                "bch_ssd_norm": ratio(b["host"]["mean_us"], base),
                "bch_ssd_disk_access": b["cache"]["backend"]["disk_accesses"],
                "paper_1e-7": PAPER_TABLE4.get(r["workload"]) if rber == 1e-7 else None,
            })  # fmt: skip
    return {"faults": out, **an.res.extra}


def quick_check(an: fw.Analysis) -> list[dict[str, Any]]:
    """FlexECC is never slower on the mean, never has a CRC read on BCH-SSD, keeps its page-state
    invariants, and no fault reaches the host on BCH-SSD."""
    rows_ = an.trace_rows
    flt = faults(an)["faults"]
    return [
        fw.check("FlexECC never slower than BCH-SSD (0.1 % tolerance)",
                 all(r["mean_ratio"] <= 1.001 for r in rows_),
                 ", ".join(f"{r['trace']} {r['gain']:+.4%}" for r in rows_)),
        fw.check("CRC reads only on FlexECC; its invariants hold",
                 all(r["bch_ssd"]["table3"]["crc_read"] == 0
                     and r["flexecc"]["table3"]["crc_read"] > 0
                     and r["flexecc"]["invariant_violations"] == 0 for r in rows_),
                 ", ".join(f"{r['trace']} {r['flexecc']['table3']['crc_read']:,} CRC reads"
                           for r in rows_)),
        fw.check("no corrupted page reaches the host on BCH-SSD",
                 all(f["bch_ssd_disk_access"] == 0 for f in flt), f"{len(flt)} faults runs"),
    ]  # fmt: skip


def _gain(wl: str) -> H:
    return H(f"mean response, {wl}", "§4.2, Fig. 3", -PAPER_GAIN[wl], "mean_ratio",
             when=lambda r: r["workload"] == wl, why=WHY_GAIN)  # fmt: skip


WHY_FAST = ("even with no transfer a CRC read saves 4.2 of 30 µs (14 %) and queueing at "
            "5-15 % die utilisation does not multiply it")  # fmt: skip
WHY_GAIN = ("a CRC read saves 4.2 of 132 µs (3 %) with DiskSim's 102.4 µs transfer, and "
            "queueing at 5-15 % die utilisation does not multiply it")  # fmt: skip
_SCH = {"bch_ssd": "BCH-SSD", "flexecc": "FlexECC"}

# fmt: off
REPRODUCTION = fw.Reproduction(
    paper=PAPER,
    title="Huang et al., FlexECC: partially relaxing ECC of MLC SSD for better cache "
    "performance, USENIX ATC'14",
    help="""FlexECC (Huang et al., ATC'14): Table 1, Figs. 3-6, Tables 3-4 on the spec's stand-ins.

    BCH-SSD (every page BCH) vs FlexECC on the SSD of a write-back cache in front of a disk,
    over the captured pgbench and devtree traces (File, OLTP, Web) and synthetic R_75 / R_90
    traces calibrated to Table 1's SSD-level read share. --quick: the Financial1 excerpt as
    OLTP and 60,000-request synthetic traces; exits non-zero unless FlexECC is never slower,
    reads CRC pages only on FlexECC, and no fault reaches the host on BCH-SSD.
    """,
    config="flexecc",
    traces=TRACES,
    prepare=prepare,
    plan=plan,
    metrics=dict,  # the rows read the reports themselves
    rows=rows,
    headline=(
        *(_gain(wl) for wl in ("File", "Web", "OLTP", "R_75", "R_90")),
        *(H(f"mean response, {wl}, near-zero transfer (§4.2's arithmetic)", "§4.2, Fig. 3",
            -PAPER_GAIN[wl], "fast_mean_ratio", deciders=("baseline", f"baseline {FAST}"),
            when=lambda r, wl=wl: r["workload"] == wl, why=WHY_FAST)
          for wl in ("File", "Web", "OLTP", "R_75", "R_90")),
        *(H(f"cleaning time, {wl}", "§4.3, Fig. 5", -PAPER_CLEANING[wl], "cleaning_ratio",
            when=lambda r, wl=wl: r["workload"] == wl,
            why="greedy GC finds mostly invalid victims at 1/1.7 fill: it hardly converts")
          for wl in ("File", "Web", "OLTP", "R_75")),
        *(H(f"host reads served from CRC pages, {wl}", "§4.3, Table 3", 100 * crc / (bch + crc),
            "crc_read_share", kind="share", deciders=(),
            when=lambda r, wl=wl: r["workload"] == wl)
          for wl, (bch, crc, _, _) in PAPER_TABLE3.items() if wl in ("R_75", "R_90", "OLTP")),
    ),
    tables=(
        fw.Table("Table 1 / Fig. 3 / Fig. 5: BCH-SSD vs FlexECC (SSD-level mean response)", [
            fw.Col("trace", "trace", "text"), fw.Col("workload", "workload", "text"),
            fw.Col("K", "time_scale", "k"), fw.Col("die util.", "die_utilization", "share"),
            fw.Col("read %", "read_share_percent"),
            fw.Col("paper read %", lambda r: PAPER_READ_PCT.get(r["workload"])),
            fw.Col("BCH-SSD µs", "bch_ssd.mean_us"), fw.Col("FlexECC µs", "flexecc.mean_us"),
            fw.Col("gain", "gain", "pct"),
            fw.Col("paper gain %", lambda r: PAPER_GAIN.get(r["workload"])),
            fw.Col("decode saved µs/req", "decode_saved_us_per_request"),
            fw.Col("gain, near-zero transfer", "fast_gain", "pct"),
            fw.Col("per-page saving (transfer / none)", lambda r: "{:.1%} / {:.1%}".format(
                r["per_page_gain"]["with_transfer"], r["per_page_gain"]["no_transfer"]), "text"),
            fw.Col("cleaning", "cleaning_reduction", "pct"),
            fw.Col("paper cleaning %", lambda r: PAPER_CLEANING.get(r["workload"]))]),
        fw.Table("Table 3: host reads and GC moves by code (FlexECC), and the paper's", [
            fw.Col("trace", "trace", "text"), fw.Col("K", "time_scale", "k"),
            *(fw.Col(k.upper(), f"flexecc.table3.{k}", "int") for k in
              ("bch_read", "crc_read", "crc_moved", "bch2crc", "bch_moved")),
            fw.Col("CRC share of reads", "crc_read_share", "share"),
            fw.Col("paper (BCH_READ, CRC_READ, CRC_MOVED, BCH2CRC)",
                   lambda r: " / ".join(f"{v:,}" for v in PAPER_TABLE3.get(r["workload"], ())),
                   "text")]),
        fw.Table("Table 4 / Fig. 6: faults (every 1/RBER-th bit); response / error-free BCH-SSD", [
            fw.Col("trace", "trace", "text"), fw.Col("RBER", lambda r: f"{r['rber']:g}", "text"),
            *(fw.Col(k.replace("_", " "), k, "int") for k in
              ("corruptions", "disk_access", "prefetched", "bch_decoded")),
            fw.Col("FlexECC", "flexecc_norm"), fw.Col("BCH-SSD", "bch_ssd_norm"),
            fw.Col("paper (1e-7)", lambda r: " / ".join(map(str, r["paper_1e-7"] or ())), "text")],
            lambda an: faults(an)["faults"]),
    ),
    figures=(
        fw.bars("fig3_mean_response", {"Fig. 3 (stand-ins): SSD-level mean response time (µs)":
                                       "{s}.mean_us"}, list(_SCH), scheme_labels=_SCH,
                reference="bch_ssd", reference_unit="µs", average=False),
        fw.cdfs("fig4_cdf", "cdf.{s}", {"bch_ssd": "--", "flexecc": "-"},
                "Fig. 4 (stand-ins): response-time CDF of all SSD requests"),
        fw.bars("fig5_cleaning_time", {"Fig. 5 (stand-ins): total cleaning time (µs)":
                                       "{s}.cleaning_us"}, list(_SCH), scheme_labels=_SCH,
                reference="bch_ssd", reference_unit="µs", average=False),
        fw.Fig("fig6_faults", "lines", lambda an: {
            f"Fig. 6: {who} response / error-free BCH-SSD": {
                r["trace"]: [(math.log10(x["rber"]), x[key]) for x in faults(an)["faults"]
                             if x["trace"] == r["trace"]] for r in an.trace_rows}
            for who, key in (("FlexECC", "flexecc_norm"), ("BCH-SSD", "bch_ssd_norm"))},
            {"xlabel": "log10 RBER", "ylabel": "normalised response"}),
    ),
    check=quick_check,
    load_title="Load level: BCH-SSD per trace",
    json_extra=faults,
)
# fmt: on

flexecc = fw.command(REPRODUCTION)
