"""``nandlab reproduce xia-diffecc``: Xia & Xiao, "Improving MLC Flash Performance with
Workload-Aware Differentiated ECC" (Figs. 5-10).

Three schemes on the paper's setup (preset ``xia-diffecc``): ``baseline`` ("normal": 1300 µs
program, BCH 45 µs read), ``agcr`` (Li et al., FAST'16) and ``diffecc_wa`` (the paper's scheme,
parameters ``scheme.params.m`` / ``scheme.params.n``, defaults m = -1, n = 3), plus the parameter
study of Figs. 5-6 (m from -4 to 4 with n = 2; n from 0 to 4 with m = -1).

Traces: every trace of the paper's Table II found under ``--traces`` (the rest are reported
missing) and the real traces we have -- the captured PostgreSQL/developer-tree traces and the
bundled MSR hm_0, UMass Financial1 and WebSearch1 excerpts. Traces are replayed whole unless
``--max-requests N`` cuts the long ones (Table II, captured) to their first N requests
(``host.max_requests``); ``--quick`` cuts pgbench_wh to 100,000.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from nandlab.reproduce import framework as fw
from nandlab.reproduce.common import CAPTURED, EXCERPTS, TraceChoice, known_traces
from nandlab.reproduce.fmt import fmt_num, fmt_pct
from nandlab.reproduce.headline import Headline as H
from nandlab.reproduce.load import finite, ratio

PAPER = "xia-diffecc"
SCHEMES: tuple[str, ...] = ("baseline", "agcr", "diffecc_wa")
SCHEME_LABELS = {"baseline": "normal", "agcr": "AGCR", "diffecc_wa": "diffecc (WA)"}
SHORT = {"baseline": "normal", "agcr": "agcr", "diffecc_wa": "diffecc"}
DEFAULT_M, DEFAULT_N = -1, 3
M_SWEEP, N_SWEEP_M = (-4, -3, -2, -1, 0, 1, 2, 3, 4), DEFAULT_M
N_SWEEP, M_SWEEP_N = (0, 1, 2, 3, 4), 2
QUICK_M_SWEEP, QUICK_N_SWEEP = (-2, -1, 2), (1, 3)
#: 0 = whole traces: all 105 runs over the captured traces take ~4 min on 2 cores, and only
#: whole traces write enough to start garbage collection (Fig. 10's erases); the first 1,000,000
#: requests of each captured trace erase nothing.
DEFAULT_MAX_REQUESTS = 0
QUICK_MAX_REQUESTS = 100_000
#: The summary rows after the per-trace rows.
SUMMARY_ROWS = ("Average", "Geo. mean")
#: Within this fraction of the best value counts as "near-best" in the parameter study.
NEAR_BEST = 0.02
#: The scheduling of the paper's device, DiskSim's SSD extension: FIFO, no suspension (the
#: preset inherits read-first scheduling with suspension from default.toml).
FIFO = {"sched.priority": "fifo", "sched.suspension": False}
#: The operation classes of Fig. 9 (row keys ``diffecc_<class>``).
DIST = ("normal_reads", "high_cost_reads", "normal_writes", "low_cost_writes", "rewrites")

#: The 15 workloads of Table II, named as the MSR volumes are in every nandlab reproduction (the
#: paper writes hm0 for hm_0, and so on). The paper's "src0" is MSR src2_0: its Table II row
#: (1,557,814 requests, 11.34 % reads) is src2_0's, src1_0 being a much larger volume.
TABLE_II = known_traces(
    "Financial1", "hm_0", "hm_1", "mds_0", "proj_0", "rsrch_0", "rsrch_2", "src2_0", "stg_0",
    "ts_0", "wdev_0", "wdev_2", "web_0", "web_1", "web_3", src2_0=("src0", "src_0"),
)  # fmt: skip
TRACES = fw.Traces(
    table="Table II",
    paper=TABLE_II,
    ours=tuple(fw.standin(n) for n in (*CAPTURED, *EXCERPTS)),
    # the check's write-dominated trace (the bundled pgbench_rw slice when it is missing)
    quick=(
        (fw.standin("pgbench_wh"), fw.standin("pgbench_rw slice", "bundled")),
        fw.standin("Financial1 excerpt"),
        fw.standin("hm_0 excerpt"),
    ),
    default_cap=DEFAULT_MAX_REQUESTS,
    quick_cap=QUICK_MAX_REQUESTS,
    quick_note="--quick: Table II traces not searched",
)


def diffecc_label(m: int, n: int) -> str:
    return f"diffecc_wa m={m} n={n}"


def _diffecc(name: str, m: int, n: int) -> fw.Variant:
    ov = {"scheme.params.m": m, "scheme.params.n": n}
    return fw.Variant(name, "diffecc_wa", ov, diffecc_label(m, n))


def plan(traces: list[TraceChoice], quick: bool) -> list[tuple[TraceChoice, fw.Variant]]:
    """3 schemes x trace instances, then the m and n sweeps of diffecc_wa (one trace with
    --quick); a sweep point is named ``m=<m>`` / ``n=<n>`` in its trace's row."""
    out = []
    for t in traces:
        out += [(t, fw.Variant("baseline", "baseline")), (t, fw.Variant("agcr", "agcr"))]
        out.append((t, _diffecc("diffecc_wa", DEFAULT_M, DEFAULT_N)))
        # the paper's device (DiskSim's SSD extension): FIFO, no program/erase suspension
        out += [(t, v.derive("fifo", FIFO)) for _, v in out[-3:]]
    for t in traces[:1] if quick else traces:
        out += [
            (t, _diffecc(f"m={m}", m, M_SWEEP_N)) for m in (QUICK_M_SWEEP if quick else M_SWEEP)
        ]
        out += [
            (t, _diffecc(f"n={n}", N_SWEEP_M, n)) for n in (QUICK_N_SWEEP if quick else N_SWEEP)
        ]
    return out


def run_metrics(report: Mapping[str, Any]) -> dict[str, float | None]:
    """The numbers the paper reports, from one run's report."""
    host = report.get("host", {})
    flash = report.get("flash", {})
    device = report.get("device", {})
    by_ecc = flash.get("reads_by_ecc") or {}
    by_mode = flash.get("programs_by_mode") or {}
    # ECC 0 (BCH) and program mode 0 (normal cost) are the device's first entries.
    ecc0 = _first_name(device.get("ecc"), by_ecc, ("bch", "default"))
    mode0 = _first_name(device.get("program_modes"), by_mode, ("normal",))
    high_reads = sum(float(v) for k, v in by_ecc.items() if k != ecc0) if by_ecc else None
    rewrites = finite(report.get("rewrites"))
    # A rewrite is a normal-cost program (source "migration"); Fig. 9 counts it in its own class.
    normal_writes = finite(by_mode.get(mode0)) if mode0 else None
    if normal_writes is not None and rewrites:
        normal_writes = max(0.0, normal_writes - rewrites)
    return {
        **fw.host_metrics(report),
        "writes": finite(host.get("writes")),
        "normal_reads": finite(by_ecc.get(ecc0)) if ecc0 else None,
        "high_cost_reads": high_reads,
        "normal_writes": normal_writes,
        "low_cost_writes": finite(by_mode.get("low_cost")),
        "high_cost_writes": finite(by_mode.get("high_cost")),
        "rewrites": rewrites,
    }


def _first_name(entries: Any, counts: Mapping[str, Any], fallbacks: Sequence[str]) -> str | None:
    """Name of entry 0 of a device list (``[{"name": ...}, ...]``), else a known name."""
    if isinstance(entries, list) and entries and isinstance(entries[0], Mapping):
        name = entries[0].get("name")
        if isinstance(name, str) and name in counts:
            return name
    return next((f for f in fallbacks if f in counts), next(iter(counts), None))


def rows(res: fw.Results) -> list[dict[str, Any]]:
    """Per trace: response times of the three schemes, normalised to normal and to AGCR,
    erases and diffecc_wa's operation mix (Fig. 9); then the Average and Geo. mean rows over
    the comparable traces."""
    out: list[dict[str, Any]] = []
    for t in res.traces:
        base, agcr, dwa = (res.get(t, s) for s in SCHEMES)
        fb, fa, fd = (res.get(t, f"{s} fifo") for s in SCHEMES)
        row: dict[str, Any] = {
            "trace": t,
            "requests": base.get("requests") or dwa.get("requests"),
            "read_ratio": ratio(base.get("reads"), base.get("requests")),
            **res.load(t),
        }
        for m in ("mean", "read", "write"):
            for s, met in (("baseline", base), ("agcr", agcr), ("diffecc_wa", dwa)):
                row[f"{SHORT[s]}_{m}_us"] = met.get(f"{m}_us")
            for s, met in (("agcr", agcr), ("diffecc_wa", dwa)):
                row[f"{SHORT[s]}_{m}_norm"] = ratio(met.get(f"{m}_us"), base.get(f"{m}_us"))
            row[f"diffecc_{m}_vs_agcr"] = ratio(dwa.get(f"{m}_us"), agcr.get(f"{m}_us"))
        for s, met in (("normal", base), ("agcr", agcr), ("diffecc", dwa)):
            row[f"{s}_erases"] = met.get("erases")
        row["agcr_erases_norm"] = ratio(agcr.get("erases"), base.get("erases"))
        row["diffecc_erases_norm"] = ratio(dwa.get("erases"), base.get("erases"))
        row.update(fw.pick(dwa, DIST, "diffecc_{k}"))
        for m in ("mean", "read", "write"):  # FIFO without suspension (the paper's DiskSim)
            k = f"{m}_us"
            row[f"fifo_normal_{m}_us"] = fb.get(k)
            row[f"fifo_diffecc_{m}_norm"] = ratio(fd.get(k), fb.get(k))
            row[f"fifo_agcr_{m}_norm"] = ratio(fa.get(k), fb.get(k))
            row[f"fifo_diffecc_{m}_vs_agcr"] = ratio(fd.get(k), fa.get(k))
        row["fifo_overloaded"] = fw.load_of(fb, "overloaded") if fb else None
        out.append(row)
    return fw.with_means(out, lambda k: k.endswith(("_norm", "_vs_agcr")), geomean=True, count=True)


def param_study(an: fw.Analysis) -> dict[str, Any]:
    """Per trace of the sweeps: the best m and n by mean response and the defaults against
    them."""
    res, prows = an.res, []
    for t in res.traces:
        prow: dict[str, Any] = {"trace": t}
        any_pts = False
        for axis, xs, default in (("m", M_SWEEP, DEFAULT_M), ("n", N_SWEEP, DEFAULT_N)):
            pts = {x: res.get(t, f"{axis}={x}") for x in xs if res.has(t, f"{axis}={x}")}
            any_pts |= bool(pts)
            means = {x: p["mean_us"] for x, p in pts.items() if p.get("mean_us") is not None}
            if means:
                best = min(means, key=lambda x: (means[x], abs(x - default)))
                prow[f"best_{axis}"] = best
                dv = means.get(default)
                prow[f"{axis}{default}_vs_best"] = ratio(dv, means[best])
                prow[f"{axis}_default_near_best"] = (
                    None if dv is None else dv <= means[best] * (1 + NEAR_BEST)
                )
        if any_pts:
            prows.append(prow)
    return {"param_study": prows}


WHY_AGCR = ("AGCR programs first writes of preconditioned pages at medium cost: a short trace "
            "gives it no write history")  # fmt: skip
WHY_FIFO_READ = ("reads still pay LDPC on low-cost pages; what FIFO adds is queueing behind "
                 "programs, which a short program cuts")  # fmt: skip


def quick_check(an: fw.Analysis) -> list[dict[str, Any]]:
    """The headline direction: diffecc_wa's mean write response below baseline's on the first
    trace (pgbench_wh, or the bundled pgbench_rw slice)."""
    t = an.res.instances[0].name
    b, d = (an.res.get(t, s).get("write_us") for s in ("baseline", "diffecc_wa"))
    if b is None or d is None:
        detail = (f"{t}: cannot compare write response (baseline {fmt_num(b)} µs, diffecc_wa "
                  f"{fmt_num(d)} µs): a run failed")  # fmt: skip
    else:
        rel = fmt_pct(fw.change(d, b))
        detail = (f"{t}: diffecc_wa mean write response {fmt_num(d)} µs vs baseline "
                  f"{fmt_num(b)} µs ({rel}); expected below baseline")  # fmt: skip
    return [fw.check("diffecc_wa writes faster than normal", fw.below(d, b) or False, detail)]


def caption(sel: fw.Selection) -> str:
    caps = " / ".join(
        f"{c:,}" for c in sorted({t.max_requests for t in sel.traces if t.max_requests})
    )
    capped = ", ".join(t.name for t in sel.traces if t.max_requests)
    cut = f"; {capped} cut to the first {caps} requests (host.max_requests)"
    return (
        "preset xia-diffecc (8 KiB pages, 1 MiB blocks, 8 packages, 15 % OP, 5 % GC threshold, "
        "capacity from each trace's address space)" + (cut if capped else "; whole traces")
    )


def _swept(an: fw.Analysis) -> list[str]:
    return [t for t in an.res.traces if an.res.has(t, f"m={DEFAULT_M}")]


_S = {"normal": "normal", "agcr": "AGCR", "diffecc": "diffecc (WA)"}
_BARS = {"reference": "normal", "scheme_labels": _S}
_PANELS = {"(a) overall": "mean_us", "(b) read": "read_us", "(c) write": "write_us"}
_DIST_LABELS = ("normal-cost read (BCH)", "high-cost read (LDPC)", "normal-cost write",
                "low-cost write", "rewrite")  # fmt: skip
_M = ("mean", "read", "write")

# fmt: off
REPRODUCTION = fw.Reproduction(
    paper=PAPER,
    title="Xia & Xiao, Improving MLC flash performance with workload-aware differentiated ECC",
    help="""Xia & Xiao, workload-aware differentiated ECC: Figs. 5-10 and the headline table.

    Runs baseline ("normal"), agcr and diffecc_wa on every trace of the paper's Table II found
    under --traces (the missing ones are listed) and on the real traces we have (captured
    PostgreSQL/developer-tree traces; MSR hm_0, Financial1 and WebSearch1 excerpts), plus the
    m / n parameter study. --quick: a 100,000-request slice of pgbench_wh and the Financial1
    and hm_0 excerpts with a reduced parameter study, and exits non-zero unless diffecc_wa's
    mean write response on the pgbench_wh slice is below baseline's.
    """,
    config="xia-diffecc",
    traces=TRACES,
    plan=plan,
    metrics=run_metrics,
    rows=rows,
    headline=(
        H("write response vs normal", "§VI, Fig. 8(a)", -48, "diffecc_write_norm"),
        H("read response vs normal", "§VI, Fig. 8(b)", -11, "diffecc_read_norm",
          why="low-cost pages are read with LDPC (145 vs 45 µs), and at the paper-like load "
              "reads barely queue behind programs, so no queueing gain offsets it"),
        H("write response vs AGCR", "§VI", -4, "diffecc_write_vs_agcr", why=WHY_AGCR),
        H("read response vs AGCR", "§VI", -11, "diffecc_read_vs_agcr",
          why="AGCR reads every page with LDPC; diffecc_wa only its low-cost pages"),
        H("overall response vs normal", "Fig. 7", None, "diffecc_mean_norm",
          paper_text="per-trace bars only"),
        H("erases vs normal (max over traces)", "§V-C, Fig. 10", 2, "diffecc_erases_norm",
          bound="<=", stat="max", comparable_only=False),
        *(H(f"{what}, FIFO without suspension (the paper's DiskSim)", where, p, key,
            deciders=("baseline", "baseline fifo"), why=why)
          for what, where, p, key, why in (
              ("write response vs normal", "§VI, Fig. 8(a)", -48, "fifo_diffecc_write_norm", ""),
              ("read response vs normal", "§VI, Fig. 8(b)", -11, "fifo_diffecc_read_norm",
               WHY_FIFO_READ),
              ("write response vs AGCR", "§VI", -4, "fifo_diffecc_write_vs_agcr", WHY_AGCR),
              ("read response vs AGCR", "§VI", -11, "fifo_diffecc_read_vs_agcr",
               "AGCR reads every page with LDPC; diffecc_wa only its low-cost pages"))),
    ),
    tables=(
        fw.Table("Xia & Xiao — mean response time (µs) (Figs. 7, 8) and erases (Fig. 10)", [
            fw.Col("trace", "trace", "text"), fw.Col("die util.", "die_utilization", "share"),
            *(fw.Col(f"{s} {m}", f"{s}_{m}_us") for m in _M for s in _S),
            *(fw.Col(f"{s} erases", f"{s}_erases", "int") for s in _S)]),
        fw.Table("Normalised to normal (/n) and diffecc vs AGCR; means over comparable traces", [
            fw.Col("trace", "trace", "text"),
            *(fw.Col(f"{s} {m}/n", f"{s}_{m}_norm") for m in (*_M, "erases")
              for s in ("agcr", "diffecc")),
            *(fw.Col(f"diffecc/AGCR {m}", f"diffecc_{m}_vs_agcr") for m in _M)],
            lambda an: an.rows),
        fw.Table("FIFO without suspension (the paper's DiskSim): normal's response (µs) and "
                 "diffecc_wa / AGCR normalised to it", [
            fw.Col("trace", "trace", "text"), fw.Col("overloaded", "fifo_overloaded", "text"),
            *(fw.Col(f"normal {m}", f"fifo_normal_{m}_us") for m in _M),
            *(fw.Col(f"{s} {m}/n", f"fifo_{s}_{m}_norm") for m in _M
              for s in ("agcr", "diffecc"))]),
        fw.Table("diffecc_wa: flash operations by cost (Fig. 9)", [
            fw.Col("trace", "trace", "text"),
            *(fw.Col(k.replace("_", " "), f"diffecc_{k}", "int") for k in DIST)]),
        fw.Table(f"Parameter study (Figs. 5, 6): best m (n = {M_SWEEP_N}) and n (m = "
                 f"{N_SWEEP_M}) by mean response; paper: m = {DEFAULT_M}, n = {DEFAULT_N}", [
            fw.Col("trace", "trace", "text"), fw.Col("best m", "best_m"),
            fw.Col(f"m={DEFAULT_M} / best", f"m{DEFAULT_M}_vs_best"), fw.Col("best n", "best_n"),
            fw.Col(f"n={DEFAULT_N} / best", f"n{DEFAULT_N}_vs_best")],
            lambda an: param_study(an)["param_study"]),
    ),
    figures=(
        fw.bars("fig7_mean_response", {"Normalised overall mean response time": "{s}_mean_us"},
                list(_S), **_BARS, reference_unit="µs"),
        fw.bars("fig8_read_write_response", {
            "(a) Normalised write mean response time": "{s}_write_us",
            "(b) Normalised read mean response time": "{s}_read_us"},
            list(_S), **_BARS, reference_unit="µs"),
        fw.stacked("fig9_operation_distribution", "diffecc_{k}", DIST,
                   category_labels=dict(zip(DIST, _DIST_LABELS)),
                   title="diffecc_wa: distribution of flash operations"),
        # (a trace whose baseline erases nothing has no bar: nothing to normalise to)
        fw.bars("fig10_erases", {"Normalised number of erases": "{s}_erases"}, list(_S),
                **_BARS, reference_unit="erases"),
        *(fw.lines(fig, {p: fw.run_ratio(axis + "={x}", m, "baseline") for p, m in _PANELS.items()},
                   xs, traces=_swept, xlabel=axis, title=f"diffecc_wa, {t}; normalised to normal",
                   mark_x=mark)
          for fig, axis, xs, t, mark in (
              ("fig5_sweep_m", "m", M_SWEEP, f"n = {M_SWEEP_N}", DEFAULT_M),
              ("fig6_sweep_n", "n", N_SWEEP, f"m = {N_SWEEP_M}", DEFAULT_N))),
    ),
    check=quick_check,
    load_title="Load level: the baseline (normal) per trace",
    caption=caption,
    json_extra=param_study,
    max_requests_help="Cut long traces (Table II, captured) to their first N requests; 0 = "
    f"whole traces [default: whole traces; {QUICK_MAX_REQUESTS:,} with --quick].",
)
# fmt: on

xia_diffecc = fw.command(REPRODUCTION)
