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

import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click
from rich.table import Table

from nandlab.reproduce.common import (
    CAPTURED_PATTERNS,
    FINANCIAL1_EXCERPT,
    FINANCIAL1_EXCERPT_NAME,
    HM0_EXCERPT,
    HM0_EXCERPT_NAME,
    PGBENCH_RW_SLICE,
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
    finite,
    groups,
    print_headline,
    print_load_table,
    ratio,
)

if TYPE_CHECKING:
    from nandlab.experiment import RunSpec

PAPER = "xia-diffecc"
CONFIG = "xia-diffecc"
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
#: The summary rows after the per-trace rows of :class:`Analysis`.
SUMMARY_ROWS = ("Average", "Geo. mean")
#: Within this fraction of the best value counts as "near-best" in the parameter study.
NEAR_BEST = 0.02

#: The paper's averages (§V-B, §VI): diffecc_wa vs normal and vs AGCR; erases within +2 %.
PAPER_HEADLINE = {
    "write_vs_normal": -0.48,
    "read_vs_normal": -0.11,
    "write_vs_agcr": -0.04,
    "read_vs_agcr": -0.11,
    "erases_vs_normal_max": 0.02,
}


#: The 15 workloads of Table II, by the file names they usually have, named as the MSR volumes
#: are in every nandlab reproduction (the paper writes hm0 for hm_0, and so on). The MSR host
#: names are those of the SNIA IOTTA msr-cambridge archive (hm = CAMRESHMSA01, mds =
#: CAMRESWMSA03, ...). The paper's "src0" is MSR src2_0: its Table II row (1,557,814 requests,
#: 11.34 % reads) is src2_0's, src1_0 being a much larger volume.
TABLE_II: dict[str, list[str]] = {
    "Financial1": [
        "Financial1.spc*",
        "Financial1.csv*",
        "Financial1.ascii*",
        "Financial1.trace*",
    ],
    "hm_0": msr_patterns("hm", 0, "CAMRESHMSA01"),
    "hm_1": msr_patterns("hm", 1, "CAMRESHMSA01"),
    "mds_0": msr_patterns("mds", 0, "CAMRESWMSA03"),
    "proj_0": msr_patterns("proj", 0, "CAM-02-SRV"),
    "rsrch_0": msr_patterns("rsrch", 0, "CAMRESIRA01"),
    "rsrch_2": msr_patterns("rsrch", 2, "CAMRESIRA01"),
    "src2_0": msr_patterns("src2", 0, "CAMRESSDPA03", "src0", "src_0"),
    "stg_0": msr_patterns("stg", 0, "CAMRESSTGA01"),
    "ts_0": msr_patterns("ts", 0, "CAMRESTSA01"),
    "wdev_0": msr_patterns("wdev", 0, "CAMWEBDEV"),
    "wdev_2": msr_patterns("wdev", 2, "CAMWEBDEV"),
    "web_0": msr_patterns("web", 0, "CAMRESWEBA03"),
    "web_1": msr_patterns("web", 1, "CAMRESWEBA03"),
    "web_3": msr_patterns("web", 3, "CAMRESWEBA03"),
}

#: Real traces we have: captured block-layer traces (capped) and bundled excerpts.
CAPTURED = CAPTURED_PATTERNS
#: Excerpt name -> (file patterns, the Table II trace that supersedes it when found).
EXCERPTS: dict[str, tuple[list[str], str | None]] = {
    HM0_EXCERPT_NAME: (HM0_EXCERPT, "hm_0"),
    FINANCIAL1_EXCERPT_NAME: (FINANCIAL1_EXCERPT, "Financial1"),
    "WebSearch1 excerpt": (WEBSEARCH1_EXCERPT, None),
}
#: ``--quick`` falls back to the bundled pgbench_rw slice when pgbench_wh is not found.
QUICK_FALLBACK = ("pgbench_rw slice", PGBENCH_RW_SLICE)


# --------------------------------------------------------------------------- planning


@dataclass
class Selection:
    traces: list[TraceChoice]
    missing_table_ii: list[str]
    searched: list[Path]
    notes: list[str] = field(default_factory=list)
    #: the trace whose write response must drop under diffecc_wa (``--quick``)
    check_trace: str | None = None


def select_traces(dirs: Sequence[Path], *, quick: bool, max_requests: int | None) -> Selection:
    """Which traces to run: Table II traces under ``dirs`` plus the real traces we have."""
    from nandlab.experiment import default_trace_dirs, find_traces

    search = list(dict.fromkeys([*map(Path, dirs), *default_trace_dirs()]))
    cap = max_requests if max_requests is not None else DEFAULT_MAX_REQUESTS
    cap_or_none = cap if cap > 0 else None
    if quick:
        qcap = max_requests if max_requests is not None else QUICK_MAX_REQUESTS
        found, _ = find_traces(search, {"pgbench_wh": CAPTURED["pgbench_wh"]})
        excerpts, _ = find_traces(
            search, {k: EXCERPTS[k][0] for k in (FINANCIAL1_EXCERPT_NAME, HM0_EXCERPT_NAME)}
        )
        sel = Selection([], [], search)
        if "pgbench_wh" in found:
            main = TraceChoice("pgbench_wh", found["pgbench_wh"], "captured", qcap or None)
        else:
            fb, _ = find_traces(search, {QUICK_FALLBACK[0]: QUICK_FALLBACK[1]})
            if not fb:
                raise FileNotFoundError(
                    "--quick needs pgbench_wh.csv.gz (shared/traces/captured) or the bundled "
                    "pgbench_rw_slice.csv.gz; neither was found"
                )
            name = QUICK_FALLBACK[0]
            main = TraceChoice(name, fb[name], "bundled", qcap or None)
            sel.notes.append("pgbench_wh not found: the check uses the bundled pgbench_rw slice")
        sel.traces.append(main)
        sel.traces += [TraceChoice(n, p, "bundled excerpt") for n, p in excerpts.items()]
        sel.check_trace = main.name
        sel.notes.append("--quick: Table II traces not searched")
        return sel

    t2, missing = find_traces(list(map(Path, dirs)), TABLE_II)
    sel = Selection([], missing, search)
    sel.traces += [TraceChoice(n, p, "Table II", cap_or_none) for n, p in t2.items()]
    cap_found, _ = find_traces(search, CAPTURED)
    sel.traces += [TraceChoice(n, p, "captured", cap_or_none) for n, p in cap_found.items()]
    ex_found, _ = find_traces(search, {k: v[0] for k, v in EXCERPTS.items()})
    for name, path in ex_found.items():
        full = EXCERPTS[name][1]
        if full is not None and full in t2:
            sel.notes.append(f"{name} skipped: the full {full} trace was found")
            continue
        sel.traces.append(TraceChoice(name, path, "bundled excerpt"))
    if "pgbench_wh" in cap_found:
        sel.check_trace = "pgbench_wh"
    return sel


@dataclass
class PlannedRun:
    kind: str  # "main", "sweep_m", "sweep_n"
    trace: str
    scheme: str
    spec: RunSpec
    m: int | None = None
    n: int | None = None
    key: str = ""


def diffecc_label(m: int, n: int) -> str:
    return f"diffecc_wa m={m} n={n}"


def run_spec(t: TraceChoice, scheme: str, m: int | None = None, n: int | None = None) -> RunSpec:
    """The run of ``scheme`` on trace instance ``t`` (its cut and time scale)."""
    from nandlab.experiment import RunSpec

    ov = t.overrides()
    label = scheme
    if scheme == "diffecc_wa" and m is not None and n is not None:
        ov["scheme.params.m"] = m
        ov["scheme.params.n"] = n
        label = diffecc_label(m, n)
    return RunSpec(t.path, t.name, scheme, CONFIG, ov, label)


def probe_specs(t: TraceChoice) -> list[RunSpec]:
    """The baseline ("normal") run at K = 1 that sets the trace's automatic load level."""
    return [run_spec(t, "baseline")]


def plan_runs(sel: Selection, *, quick: bool) -> list[PlannedRun]:
    """3 schemes x trace instances, then the m and n sweeps of diffecc_wa (one trace with
    --quick)."""
    spec = run_spec
    runs: list[PlannedRun] = []
    for t in sel.traces:
        for s in SCHEMES:
            m, n = (DEFAULT_M, DEFAULT_N) if s == "diffecc_wa" else (None, None)
            runs.append(PlannedRun("main", t.name, s, spec(t, s, m, n), m, n))
    sweep_traces = sel.traces[:1] if quick else sel.traces
    ms = QUICK_M_SWEEP if quick else M_SWEEP
    ns = QUICK_N_SWEEP if quick else N_SWEEP
    for t in sweep_traces:
        for m in ms:
            runs.append(
                PlannedRun("sweep_m", t.name, "diffecc_wa", spec(t, "diffecc_wa", m, M_SWEEP_N), m)
            )
            runs[-1].n = M_SWEEP_N
        for n in ns:
            runs.append(
                PlannedRun(
                    "sweep_n",
                    t.name,
                    "diffecc_wa",
                    spec(t, "diffecc_wa", N_SWEEP_M, n),
                    N_SWEEP_M,
                    n,
                )
            )
    return runs


# --------------------------------------------------------------------------- analysis


def run_metrics(report: Mapping[str, Any] | None) -> dict[str, float | None]:
    """The numbers the paper reports, from one run's report."""
    if not report:
        return {}
    host = report.get("host", {})
    flash = report.get("flash", {})
    device = report.get("device", {})
    by_ecc = flash.get("reads_by_ecc") or {}
    by_mode = flash.get("programs_by_mode") or {}
    # ECC 0 (BCH) and program mode 0 (normal cost) are the device's first entries.
    ecc0 = _first_name(device.get("ecc"), by_ecc, ("bch", "default"))
    mode0 = _first_name(device.get("program_modes"), by_mode, ("normal",))
    normal_reads = finite(by_ecc.get(ecc0)) if ecc0 else None
    high_reads = sum(float(v) for k, v in by_ecc.items() if k != ecc0) if by_ecc else None
    rewrites = finite(report.get("rewrites"))
    # A rewrite is a normal-cost program (source "migration"); Fig. 9 counts it in its own class.
    normal_writes = finite(by_mode.get(mode0)) if mode0 else None
    if normal_writes is not None and rewrites:
        normal_writes = max(0.0, normal_writes - rewrites)
    return {
        "requests": finite(host.get("requests")),
        "reads": finite(host.get("reads")),
        "writes": finite(host.get("writes")),
        "mean_us": finite(host.get("mean_us")),
        "read_us": finite(host.get("read_mean_us")),
        "write_us": finite(host.get("write_mean_us")),
        "erases": finite(flash.get("erases")),
        "normal_reads": normal_reads,
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


@dataclass
class Analysis:
    rows: list[dict[str, Any]]  # per trace instance, then the "Average" and "Geo. mean" rows
    headline: list[dict[str, Any]]
    param_rows: list[dict[str, Any]]
    sweeps: dict[str, dict[str, dict[str, list[tuple[float, float | None]]]]]
    metrics: dict[tuple[str, str], dict[str, float | None]]
    errors: list[tuple[str, str, str]]  # (trace, label, error)
    #: trace instance -> the baseline's load (:func:`nandlab.reproduce.load.load_info`)
    loads: dict[str, dict[str, Any]] = field(default_factory=dict)

    @property
    def overloaded(self) -> set[str]:
        return {t for t, li in self.loads.items() if li.get("overloaded")}


#: Headline metrics: (text, paper value, ratio key of a trace row).
HEADLINE_METRICS: tuple[tuple[str, str, str], ...] = (
    ("write response vs normal", "-48 %", "diffecc_write_norm"),
    ("read response vs normal", "-11 %", "diffecc_read_norm"),
    ("write response vs AGCR", "-4 %", "diffecc_write_vs_agcr"),
    ("read response vs AGCR", "-11 %", "diffecc_read_vs_agcr"),
    ("overall response vs normal", "—", "diffecc_mean_norm"),
)


def analyse(
    runs: Sequence[PlannedRun],
    reports: Mapping[str, Any],
    level_groups: Mapping[str, Sequence[str]] | None = None,
) -> Analysis:
    """Tables and figure data from the planned runs and ``{key: (report | None, error)}``;
    ``level_groups`` (load level -> trace instances) splits the headline by load level."""
    from nandlab.reproduce.load import headline_rows, load_info, summarise_ratios

    metrics: dict[tuple[str, str], dict[str, float | None]] = {}
    loads: dict[str, dict[str, Any]] = {}
    sweep_pts: dict[tuple[str, str], dict[str, float | None]] = {}
    errors: list[tuple[str, str, str]] = []
    seen_err: set[str] = set()
    traces: list[str] = []
    for r in runs:
        report, err = reports.get(r.key, (None, "not run"))
        if err and r.key not in seen_err:
            seen_err.add(r.key)
            errors.append((r.trace, r.spec.label, err))
        if r.trace not in traces:
            traces.append(r.trace)
        met = run_metrics(report)
        if r.kind == "main":
            metrics[(r.trace, r.scheme)] = met
            if r.scheme == "baseline":
                loads[r.trace] = load_info(report)
        else:
            x = r.m if r.kind == "sweep_m" else r.n
            sweep_pts[(r.trace, f"{r.kind}:{x}")] = met

    rows: list[dict[str, Any]] = []
    for t in traces:
        base = metrics.get((t, "baseline"), {})
        agcr = metrics.get((t, "agcr"), {})
        dwa = metrics.get((t, "diffecc_wa"), {})
        row: dict[str, Any] = {
            "trace": t,
            "requests": base.get("requests") or dwa.get("requests"),
            "read_ratio": ratio(base.get("reads"), base.get("requests")),
            **loads.get(t, {}),
        }
        for metric in ("mean", "read", "write"):
            for s, met in (("baseline", base), ("agcr", agcr), ("diffecc_wa", dwa)):
                row[f"{SHORT[s]}_{metric}_us"] = met.get(f"{metric}_us")
            for s, met in (("agcr", agcr), ("diffecc_wa", dwa)):
                row[f"{SHORT[s]}_{metric}_norm"] = ratio(
                    met.get(f"{metric}_us"), base.get(f"{metric}_us")
                )
            row[f"diffecc_{metric}_vs_agcr"] = ratio(
                dwa.get(f"{metric}_us"), agcr.get(f"{metric}_us")
            )
        row["normal_erases"] = base.get("erases")
        row["agcr_erases"] = agcr.get("erases")
        row["diffecc_erases"] = dwa.get("erases")
        row["agcr_erases_norm"] = ratio(agcr.get("erases"), base.get("erases"))
        row["diffecc_erases_norm"] = ratio(dwa.get("erases"), base.get("erases"))
        for k in ("normal_reads", "high_cost_reads", "normal_writes", "low_cost_writes"):
            row[f"diffecc_{k}"] = dwa.get(k)
        row["diffecc_rewrites"] = dwa.get("rewrites")
        rows.append(row)

    over = {t for t, li in loads.items() if li.get("overloaded")}
    avg: dict[str, Any] = {"trace": "Average"}
    geo: dict[str, Any] = {"trace": "Geo. mean"}
    norm_keys = [k for k in (rows[0] if rows else {}) if k.endswith(("_norm", "_vs_agcr"))]
    for k in norm_keys:
        sm = summarise_ratios({r["trace"]: r.get(k) for r in rows}, {t: True for t in over})
        avg[k], geo[k] = sm["mean"], sm["geomean"]
    avg["comparable_traces"] = geo["comparable_traces"] = sum(
        1 for r in rows if r["trace"] not in over
    )
    all_rows = [*rows, avg, geo] if rows else rows

    def rel(v: float | None) -> float | None:
        return None if v is None else v - 1.0

    erases_max = max(
        (r["diffecc_erases_norm"] for r in rows if r.get("diffecc_erases_norm") is not None),
        default=None,
    )
    groups = level_groups or {"auto": [r["trace"] for r in rows]}
    ratios = {key: {r["trace"]: r.get(key) for r in rows} for _, _, key in HEADLINE_METRICS}
    headline = headline_rows(HEADLINE_METRICS, ratios, {t: True for t in over}, groups)
    headline.append(
        {
            "level": "all",
            "metric": "erases vs normal (max over traces)",
            "paper": f"≤ {PAPER_HEADLINE['erases_vs_normal_max'] * 100:+.0f} %",
            "ours_mean": rel(erases_max),
            "ours_geomean": None,
            "per_trace": {r["trace"]: rel(r.get("diffecc_erases_norm")) for r in rows},
            "traces": sum(1 for r in rows if r.get("diffecc_erases_norm") is not None),
            "overloaded": [],
        }
    )

    # parameter study: normalised to the trace's baseline
    sweeps: dict[str, dict[str, dict[str, list[tuple[float, float | None]]]]] = {
        "m": {"overall": {}, "read": {}, "write": {}},
        "n": {"overall": {}, "read": {}, "write": {}},
    }
    param_rows: list[dict[str, Any]] = []
    for t in traces:
        base = metrics.get((t, "baseline"), {})
        prow: dict[str, Any] = {"trace": t}
        any_pts = False
        for axis, kind, default in (("m", "sweep_m", DEFAULT_M), ("n", "sweep_n", DEFAULT_N)):
            pts = {
                int(k.split(":")[1]): v
                for (tr, k), v in sweep_pts.items()
                if tr == t and k.startswith(kind + ":")
            }
            if not pts:
                continue
            any_pts = True
            for panel, metric in (
                ("overall", "mean_us"),
                ("read", "read_us"),
                ("write", "write_us"),
            ):
                sweeps[axis][panel][t] = [
                    (float(x), ratio(pts[x].get(metric), base.get(metric))) for x in sorted(pts)
                ]
            means = {x: pts[x].get("mean_us") for x in pts if pts[x].get("mean_us") is not None}
            if means:
                best = min(means, key=lambda x: (means[x], abs(x - default)))
                prow[f"best_{axis}"] = best
                dv = means.get(default)
                prow[f"{axis}{default}_vs_best"] = ratio(dv, means[best])
                prow[f"{axis}_default_near_best"] = (
                    None if dv is None else dv <= means[best] * (1 + NEAR_BEST)
                )
        if any_pts:
            param_rows.append(prow)
    return Analysis(all_rows, headline, param_rows, sweeps, metrics, errors, loads)


# --------------------------------------------------------------------------- output


def print_tables(an: Analysis, caption: str, sel: Selection) -> None:
    c = out_console
    t = Table(
        title="Xia & Xiao — mean response time (µs), normalised to normal (/n) (Figs. 7, 8, 10)",
        caption=caption,
        title_justify="left",
        caption_justify="left",
    )
    for col in ("trace", "scheme", "mean", "read", "write", "mean/n", "read/n", "write/n"):
        t.add_column(col, justify="left" if col in ("trace", "scheme") else "right")
    t.add_column("erases", justify="right")
    t.add_column("erases/n", justify="right")
    t.add_column("die util.", justify="right")
    for r in an.rows:
        last = r is an.rows[-1]
        if r["trace"] in SUMMARY_ROWS:
            t.add_row(
                f"{r['trace']} ({r.get('comparable_traces', 0)} comparable)",
                "AGCR / diffecc",
                "",
                "",
                "",
                *(
                    f"{fmt_num(r.get(f'agcr_{m}_norm'))} / {fmt_num(r.get(f'diffecc_{m}_norm'))}"
                    for m in ("mean", "read", "write")
                ),
                "",
                f"{fmt_num(r.get('agcr_erases_norm'))} / {fmt_num(r.get('diffecc_erases_norm'))}",
                "",
            )
            continue
        for s in ("normal", "agcr", "diffecc"):
            scheme = {"normal": "baseline", "agcr": "agcr", "diffecc": "diffecc_wa"}[s]
            norm = (
                ["1", "1", "1"]
                if s == "normal"
                else [fmt_num(r.get(f"{s}_{m}_norm")) for m in ("mean", "read", "write")]
            )
            er_n = "1" if s == "normal" else fmt_num(r.get(f"{s}_erases_norm"))
            name = r["trace"] + (" [red](overloaded)[/]" if r.get("overloaded") else "")
            t.add_row(
                name if s == "normal" else "",
                SCHEME_LABELS[scheme],
                *(fmt_num(r.get(f"{s}_{m}_us")) for m in ("mean", "read", "write")),
                *norm,
                fmt_num(_int(r.get(f"{s}_erases"))),
                er_n if r.get("normal_erases") else "—",
                fmt_pct(r.get("die_utilization"), signed=False) if s == "normal" else "",
                end_section=s == "diffecc" and not last,
            )
    c.print(t)

    t2 = Table(
        title="diffecc_wa: flash operations by cost (Fig. 9)",
        title_justify="left",
    )
    dist = ("normal_reads", "high_cost_reads", "normal_writes", "low_cost_writes", "rewrites")
    t2.add_column("trace")
    for col in dist:
        t2.add_column(col.replace("_", " "), justify="right")
    for r in an.rows:
        if r["trace"] not in SUMMARY_ROWS:
            t2.add_row(r["trace"], *(fmt_num(_int(r.get(f"diffecc_{k}"))) for k in dist))
    c.print(t2)

    print_headline(
        an.headline,
        "Headline: diffecc_wa, the paper vs ours (means over the comparable traces)",
    )

    if an.param_rows:
        t4 = Table(
            title=f"Parameter study (Figs. 5, 6): best m (n = {M_SWEEP_N}) and n "
            f"(m = {N_SWEEP_M}) by mean response; paper: m = {DEFAULT_M}, n = {DEFAULT_N}",
            title_justify="left",
        )
        for col in ("trace", "best m", f"m={DEFAULT_M} / best", "best n", f"n={DEFAULT_N} / best"):
            t4.add_column(col, justify="left" if col == "trace" else "right")
        for p in an.param_rows:
            t4.add_row(
                p["trace"],
                fmt_num(p.get("best_m")),
                fmt_num(p.get(f"m{DEFAULT_M}_vs_best")),
                fmt_num(p.get("best_n")),
                fmt_num(p.get(f"n{DEFAULT_N}_vs_best")),
            )
        c.print(t4)

    if sel.missing_table_ii:
        c.print(
            f"[yellow]Table II traces not found[/] in {', '.join(map(str, sel.searched))}: "
            + ", ".join(sel.missing_table_ii)
        )
    for note in sel.notes:
        c.print(f"[dim]note: {note}[/]")


def _int(v: float | None) -> int | None:
    return None if v is None else round(v)


def make_figures(an: Analysis, out: Path) -> list[Path]:
    """Figs. 5-10 as PNG and SVG in ``out``."""
    from nandlab import figures

    per_trace = [r for r in an.rows if r["trace"] not in SUMMARY_ROWS]
    paths: list[Path] = []

    def data(metric: str) -> dict[str, dict[str, float | None]]:
        return {
            r["trace"]: {s: an.metrics.get((r["trace"], s), {}).get(metric) for s in SCHEMES}
            for r in per_trace
        }

    if not per_trace:
        return paths
    paths += figures.grouped_bars(
        {"Normalised overall mean response time": data("mean_us")},
        SCHEMES,
        out / "fig7_mean_response",
        reference="baseline",
        scheme_labels=SCHEME_LABELS,
        overloaded=an.overloaded,
        reference_unit="µs",
    )
    paths += figures.grouped_bars(
        {
            "(a) Normalised write mean response time": data("write_us"),
            "(b) Normalised read mean response time": data("read_us"),
        },
        SCHEMES,
        out / "fig8_read_write_response",
        reference="baseline",
        scheme_labels=SCHEME_LABELS,
        overloaded=an.overloaded,
        reference_unit="µs",
    )
    dist = {
        r["trace"]: {
            k: r.get(f"diffecc_{k}")
            for k in (
                "normal_reads",
                "high_cost_reads",
                "normal_writes",
                "low_cost_writes",
                "rewrites",
            )
        }
        for r in per_trace
    }
    paths += figures.stacked_bars(
        dist,
        ["normal_reads", "high_cost_reads", "normal_writes", "low_cost_writes", "rewrites"],
        out / "fig9_operation_distribution",
        category_labels={
            "normal_reads": "normal-cost read (BCH)",
            "high_cost_reads": "high-cost read (LDPC)",
            "normal_writes": "normal-cost write",
            "low_cost_writes": "low-cost write",
            "rewrites": "rewrite",
        },
        title="diffecc_wa: distribution of flash operations",
    )
    erases = {t: v for t, v in data("erases").items() if v.get("baseline")}
    if erases:
        paths += figures.grouped_bars(
            {"Normalised number of erases": erases},
            SCHEMES,
            out / "fig10_erases",
            reference="baseline",
            scheme_labels=SCHEME_LABELS,
            overloaded=an.overloaded,
            reference_unit="erases",
        )
    for axis, fig, xlabel, title in (
        ("m", "fig5_sweep_m", "m", f"diffecc_wa, n = {M_SWEEP_N}; normalised to normal"),
        ("n", "fig6_sweep_n", "n", f"diffecc_wa, m = {N_SWEEP_M}; normalised to normal"),
    ):
        panels = an.sweeps[axis]
        if any(panels[p] for p in panels):
            paths += figures.sweep_lines(
                {
                    "(a) overall": panels["overall"],
                    "(b) read": panels["read"],
                    "(c) write": panels["write"],
                },
                out / fig,
                xlabel=xlabel,
                title=title,
                mark_x=DEFAULT_M if axis == "m" else DEFAULT_N,
            )
    return paths


def caption_text(sel: Selection) -> str:
    caps = sorted({t.max_requests for t in sel.traces if t.max_requests})
    capped = [t.name for t in sel.traces if t.max_requests]
    s = (
        "preset xia-diffecc (8 KiB pages, 1 MiB blocks, 8 packages, 15 % OP, 5 % GC threshold, "
        "capacity from each trace's address space)"
    )
    if not capped:
        s += "; whole traces"
    else:
        s += (
            f"; {', '.join(capped)} cut to the first "
            f"{' / '.join(f'{c:,}' for c in caps)} requests (host.max_requests)"
        )
    return s


# --------------------------------------------------------------------------- command


@click.command("xia-diffecc")
@common_options(PAPER)
@click.option(
    "--max-requests",
    type=click.IntRange(min=0),
    default=None,
    help="Cut long traces (Table II, captured) to their first N requests; 0 = whole traces "
    f"[default: whole traces; {QUICK_MAX_REQUESTS:,} with --quick].",
)
def xia_diffecc(opts: CommonOptions, max_requests: int | None) -> None:
    """Xia & Xiao, workload-aware differentiated ECC: Figs. 5-10 and the headline table.

    Runs baseline ("normal"), agcr and diffecc_wa on every trace of the paper's Table II found
    under --traces (the missing ones are listed) and on the real traces we have (captured
    PostgreSQL/developer-tree traces; MSR hm_0, Financial1 and WebSearch1 excerpts), plus the
    m / n parameter study. --quick: a 100,000-request slice of pgbench_wh and the Financial1
    and hm_0 excerpts with a reduced parameter study, and exits non-zero unless diffecc_wa's
    mean write response on the pgbench_wh slice is below baseline's.
    """

    t0 = time.perf_counter()
    sel = select_traces(opts.traces, quick=opts.quick, max_requests=max_requests)
    if not sel.traces:
        raise FileNotFoundError("no traces found in " + ", ".join(map(str, sel.searched)))
    traces = sel.traces
    sel.traces, load_plan = expand(traces, opts, probe_specs)
    if sel.check_trace is not None:
        sel.check_trace = next(
            (t.name for t in sel.traces if t.base_name == sel.check_trace), sel.check_trace
        )
    runs = plan_runs(sel, quick=opts.quick)
    df, st = run_planned(
        runs,
        opts,
        label=f"xia-diffecc: {plural(len(sel.traces), 'trace')} "
        f"({', '.join(t.name for t in sel.traces)})",
    )
    reports = reports_by_key(df)
    an = analyse(runs, reports, groups(load_plan, sel.traces))
    caption = caption_text(sel)
    figs = make_figures(an, opts.out)
    check = quick_check(an, sel.check_trace) if opts.quick else None

    write_json(
        opts.json_out,
        PAPER,
        df,
        an.rows,
        caption=caption,
        headline=an.headline,
        param_study=an.param_rows,
        traces=traces_json(sel.traces),
        missing_table_ii=sel.missing_table_ii,
        figures=[str(p) for p in figs],
        check=check,
        grid=grid_json(st),
        load=load_plan.to_json(),
        loads=an.loads,
    )
    if not opts.quiet:
        print_load_table(sel.traces, an.loads, "Load level: the baseline (normal) per trace")
        print_tables(an, caption, sel)
        out_console.print(runs_line(st, t0, len(figs), opts.out))
    exit_on_failures(an.errors, check, opts.out)


def quick_check(an: Analysis, trace: str | None) -> dict[str, Any]:
    """The headline direction: diffecc_wa's mean write response below baseline's on ``trace``."""
    if trace is None:
        return {"passed": False, "trace": None, "message": "no write-dominated trace to check"}
    base = an.metrics.get((trace, "baseline"), {}).get("write_us")
    dwa = an.metrics.get((trace, "diffecc_wa"), {}).get("write_us")
    if base is None or dwa is None:
        return {
            "passed": False,
            "trace": trace,
            "baseline_write_us": base,
            "diffecc_write_us": dwa,
            "message": f"{trace}: cannot compare write response (baseline "
            f"{fmt_num(base)} µs, diffecc_wa {fmt_num(dwa)} µs): a run failed",
        }
    passed = dwa < base
    rel = dwa / base - 1.0 if base else float("nan")
    return {
        "passed": passed,
        "trace": trace,
        "baseline_write_us": base,
        "diffecc_write_us": dwa,
        "message": f"{trace}: diffecc_wa mean write response {fmt_num(dwa)} µs vs baseline "
        f"{fmt_num(base)} µs ({fmt_pct(rel)}); expected below baseline",
    }
