"""``nandlab reproduce efm``: Li, Yuan & Du, "EFM: Elastic Flash Management to Enhance
Performance of Hybrid Flash Memory" (Figs. 5-8, 10 and the headline numbers).

Preset ``efm`` (256 GB, 4 KiB pages, 128 pages per block, SSDsim's default parallelism, three
regions with the latencies of Tables II-III; see ``configs/efm.toml``). Schemes: ``efm`` (the
paper's), ``efm_static`` (Stage-1 latencies, Fig. 7), and the baselines ``hotis``, ``warm`` and
``tos18`` (the ``agcr`` scheme on regions).

Runs per trace:

* Fig. 5 / 6: the four schemes at the preset's wear stage (Stage 3 = Table II "regular").
* Fig. 7: every scheme plus ``efm_static`` at Stages 1-4 (initial P/E 0, 1000, 2000, 3000).
* Fig. 8: the four schemes with reduced effective wearing (Table II "effective wearing" row:
  weight 0.8 and +40 µs read on Region-1 for EFM, WARM, HOTIS; on Region-2 for TOS18, §V-D).
* Fig. 10: one region (Region-2 only) and two regions (Region-1 + Region-3), each half the
  blocks; three regions are the Fig. 5 runs.

Traces: every trace of the paper's Table I found under ``--traces`` (its OLTP1 / OLTP2 are the
UMass Financial1 / Financial2 traces; syn1 / syn2 are the paper's own synthetic traces) and the
real traces we have (captured PostgreSQL / developer-tree traces and the bundled MSR hm_0,
UMass Financial1 and WebSearch1 excerpts). ``--quick``: the Financial1 and hm_0 excerpts and a
30,000-request slice of the bundled pgbench_rw trace, Figs. 7, 8 and 10 on Financial1 only.
"""

from __future__ import annotations

import math
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
    HM0_EXCERPT,
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
    reports_by_key,
    run_planned,
    runs_line,
    traces_json,
    write_json,
)

if TYPE_CHECKING:
    from nandlab.experiment import RunSpec

PAPER = "efm"
CONFIG = "efm"
SCHEMES: tuple[str, ...] = ("efm", "hotis", "warm", "tos18")
STAGE_SCHEMES: tuple[str, ...] = ("efm", "efm_static", "hotis", "warm", "tos18")
LABELS = {
    "efm": "EFM",
    "efm_static": "EFM-static",
    "hotis": "HOTIS",
    "warm": "WARM",
    "tos18": "TOS18",
}
#: Initial P/E of each wear stage (the preset's regions.stage_pe); the preset starts in Stage 3.
STAGE_PE: tuple[int, ...] = (0, 1000, 2000, 3000)
PRESET_STAGE = 3
#: Table III read latencies (µs) per stage: Region-1, Region-2, Region-3.
READ_US = (
    (150.0, 210.0, 270.0, 350.0),
    (110.0, 150.0, 170.0, 210.0),
    (70.0, 70.0, 70.0, 70.0),
)
#: Table II "effective wearing (reduced 0.8)": +40 µs read on the reduced-Vth region (310 vs
#: 270 µs on Region-1, 210 vs 170 µs on Region-2 at Stage 3); applied at every stage.
EFFECTIVE_EXTRA_US = 40.0
EFFECTIVE_WEIGHT = 0.8
#: The paper's headline (§V-B, §V-C, §V-D).
PAPER_HEADLINE = {
    "hotis": 0.539,
    "warm": 0.87,
    "tos18": 2.96,
    "wear_aware": 0.173,
    "lifetime_efm": 0.177,
    "lifetime_tos18": 0.075,
    "lifetime_hotis": 0.056,
    "lifetime_warm": 0.051,
}
QUICK_SLICE = 30_000


#: Table I traces by their usual file names (SNIA IOTTA host names for MSR volumes).
TABLE_I: dict[str, list[str]] = {
    "mds_1": msr_patterns("mds", 1, "CAMRESWMSA03"),
    "web2": msr_patterns("web", 2, "CAMRESWEBA03"),
    "usr_1": msr_patterns("usr", 1, "CAMRESSDPA03-usr"),
    "usr_2": msr_patterns("usr", 2, "CAMRESSDPA03-usr"),
    "proj_1": msr_patterns("proj", 1, "CAM-02-SRV"),
    "ts_0": msr_patterns("ts", 0, "CAMRESTSA01"),
    "hm_0": msr_patterns("hm", 0, "CAMRESHMSA01"),
    "prxy_0": msr_patterns("prxy", 0, "CAM-01-SRV"),
    "syn1": ["syn1.csv*", "syn1.trace*"],
    "syn2": ["syn2.csv*", "syn2.trace*"],
    "OLTP1": ["Financial1.spc*", "Financial1.csv*", "Financial1.ascii*", "Financial1.trace*"],
    "OLTP2": ["Financial2.spc*", "Financial2.csv*", "Financial2.ascii*", "Financial2.trace*"],
}
CAPTURED = CAPTURED_PATTERNS
#: Excerpt name -> (file patterns, the Table I trace that supersedes it).
EXCERPTS: dict[str, tuple[list[str], str | None]] = {
    "hm_0 excerpt": (HM0_EXCERPT, "hm_0"),
    "OLTP1 excerpt": (FINANCIAL1_EXCERPT, "OLTP1"),
    "WebSearch1 excerpt": (WEBSEARCH1_EXCERPT, None),
}
QUICK_SLICE_TRACE = ("pgbench_rw slice", PGBENCH_RW_SLICE)


# --------------------------------------------------------------------------- planning


@dataclass
class Selection:
    traces: list[TraceChoice]
    missing_table_i: list[str]
    searched: list[Path]
    notes: list[str] = field(default_factory=list)
    #: traces of the wear-stage, lifetime and region-count studies
    study_traces: list[str] = field(default_factory=list)


def select_traces(dirs: Sequence[Path], *, quick: bool, max_requests: int | None) -> Selection:
    """Table I traces under ``dirs`` plus the real traces we have."""
    from nandlab.experiment import default_trace_dirs, find_traces

    search = list(dict.fromkeys([*map(Path, dirs), *default_trace_dirs()]))
    cap = max_requests if max_requests else None
    if quick:
        ex, _ = find_traces(search, {k: EXCERPTS[k][0] for k in ("OLTP1 excerpt", "hm_0 excerpt")})
        sl, _ = find_traces(search, {QUICK_SLICE_TRACE[0]: QUICK_SLICE_TRACE[1]})
        sel = Selection([], [], search)
        sel.traces += [TraceChoice(n, p, "bundled excerpt") for n, p in ex.items()]
        sel.traces += [
            TraceChoice(n, p, "bundled", max_requests or QUICK_SLICE) for n, p in sl.items()
        ]
        if not sel.traces:
            raise FileNotFoundError("--quick needs the bundled trace excerpts; none was found")
        sel.study_traces = [sel.traces[0].name]
        sel.notes.append("--quick: Table I and captured traces not searched")
        return sel
    t1, missing = find_traces(list(map(Path, dirs)), TABLE_I)
    sel = Selection([], missing, search)
    sel.traces += [TraceChoice(n, p, "Table I", cap) for n, p in t1.items()]
    cf, _ = find_traces(search, CAPTURED)
    sel.traces += [TraceChoice(n, p, "captured", cap) for n, p in cf.items()]
    exf, _ = find_traces(search, {k: v[0] for k, v in EXCERPTS.items()})
    for name, path in exf.items():
        full = EXCERPTS[name][1]
        if full is not None and full in t1:
            sel.notes.append(f"{name} skipped: the full {full} trace was found")
            continue
        sel.traces.append(TraceChoice(name, path, "bundled excerpt"))
    sel.study_traces = [t.name for t in sel.traces]
    return sel


@dataclass
class PlannedRun:
    kind: str  # "main", "stage", "lifetime", "regions"
    trace: str
    scheme: str
    spec: RunSpec
    stage: int = PRESET_STAGE
    regions: int = 3
    key: str = ""


def _effective_overrides(scheme: str) -> dict[str, object]:
    """Table II "effective wearing" on the scheme's reduced-Vth region (§V-D)."""
    reduced = 1 if scheme == "tos18" else 0
    read = [list(r) for r in READ_US]
    read[reduced] = [x + EFFECTIVE_EXTRA_US for x in read[reduced]]
    weight = [1.0, 1.0, 1.0]
    weight[reduced] = EFFECTIVE_WEIGHT
    return {"regions.read_us": read, "regions.wear_weight": weight}


def _region_overrides(n: int) -> dict[str, object]:
    """One region (Region-2 only) or two (Region-1 + Region-3), Fig. 10."""
    if n == 1:
        return {
            "regions.names": ["region2"],
            "regions.fractions": [1.0],
            "regions.program_modes": [0],
            "regions.read_us": [list(READ_US[1])],
            "regions.wear_weight": [1.0],
        }
    return {
        "regions.names": ["region1", "region3"],
        "regions.fractions": [0.5, 0.5],
        "regions.program_modes": [1, 2],
        "regions.read_us": [list(READ_US[0]), list(READ_US[2])],
        "regions.wear_weight": [1.0, 1.0],
    }


def plan_runs(sel: Selection) -> list[PlannedRun]:
    from nandlab.experiment import RunSpec

    def spec(t: TraceChoice, scheme: str, ov: dict[str, object], label: str) -> RunSpec:
        o = dict(ov)
        if t.max_requests:
            o["host.max_requests"] = t.max_requests
        return RunSpec(t.path, t.name, scheme, CONFIG, o, label)

    runs: list[PlannedRun] = []
    for t in sel.traces:
        for s in SCHEMES:
            runs.append(PlannedRun("main", t.name, s, spec(t, s, {}, s)))
    study = [t for t in sel.traces if t.name in sel.study_traces]
    for t in study:
        for s in STAGE_SCHEMES:
            for i, pe in enumerate(STAGE_PE, start=1):
                # Stage 3 is the preset: the same run as Fig. 5's (no override, one key).
                ov: dict[str, object] = (
                    {} if i == PRESET_STAGE else {"precondition.initial_pe_cycles": pe}
                )
                runs.append(
                    PlannedRun("stage", t.name, s, spec(t, s, ov, f"{s} stage {i}"), stage=i)
                )
        for s in SCHEMES:
            runs.append(
                PlannedRun(
                    "lifetime", t.name, s, spec(t, s, _effective_overrides(s), f"{s} eff. wear")
                )
            )
            for n in (1, 2):
                runs.append(
                    PlannedRun(
                        "regions",
                        t.name,
                        s,
                        spec(t, s, _region_overrides(n), f"{s} {n}R"),
                        regions=n,
                    )
                )
    return runs


# --------------------------------------------------------------------------- analysis


def _num(v: Any) -> float | None:
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        return None
    f = float(v)
    return f if math.isfinite(f) else None


def _ratio(a: float | None, b: float | None) -> float | None:
    if a is None or b is None or b == 0:
        return None
    return a / b


def _mean(vals: Sequence[float | None]) -> float | None:
    good = [v for v in vals if v is not None]
    return sum(good) / len(good) if good else None


def run_metrics(report: Mapping[str, Any] | None) -> dict[str, Any]:
    """The numbers the paper reports, from one run's report."""
    if not report:
        return {}
    host = report.get("host", {})
    rg = report.get("regions") or {}
    bd = rg.get("breakdown_us") or {}
    ss = report.get("scheme_stats") or {}
    return {
        "requests": _num(host.get("requests")),
        "mean_us": _num(host.get("mean_us")),
        "read_us": _num(host.get("read_mean_us")),
        "write_us": _num(host.get("write_mean_us")),
        "optimal_rw": _num(bd.get("optimal_rw")),
        "nonoptimal_read": _num(bd.get("nonoptimal_read")),
        "nonoptimal_write": _num(bd.get("nonoptimal_write")),
        "migration": _num(bd.get("migration")),
        "lifetime_gain": _num(rg.get("lifetime_gain_by_programs")),
        "stage": rg.get("stage_at_start"),
        "migrations": _num(ss.get("migrations", ss.get("region_migrations"))),
        "host_programs": rg.get("host_programs"),
        "host_reads": rg.get("host_reads"),
    }


@dataclass
class Analysis:
    rows: list[dict[str, Any]]
    headline: list[dict[str, Any]]
    metrics: dict[tuple[str, str, str], dict[str, Any]]  # (kind-tag, trace, scheme)
    traces: list[str]
    study_traces: list[str]
    errors: list[tuple[str, str, str]]


def _tag(r: PlannedRun) -> str:
    if r.kind == "stage":
        return f"stage{r.stage}"
    if r.kind == "regions":
        return f"{r.regions}R"
    return r.kind


def analyse(runs: Sequence[PlannedRun], reports: Mapping[str, Any]) -> Analysis:
    metrics: dict[tuple[str, str, str], dict[str, Any]] = {}
    errors: list[tuple[str, str, str]] = []
    seen: set[str] = set()
    traces: list[str] = []
    study: list[str] = []
    for r in runs:
        report, err = reports.get(r.key, (None, "not run"))
        if err and r.key not in seen:
            seen.add(r.key)
            errors.append((r.trace, r.spec.label, err))
        if r.trace not in traces:
            traces.append(r.trace)
        if r.kind != "main" and r.trace not in study:
            study.append(r.trace)
        m = run_metrics(report)
        metrics[(_tag(r), r.trace, r.scheme)] = m
        if r.kind == "main":
            metrics[("3R", r.trace, r.scheme)] = m
            metrics[(f"stage{PRESET_STAGE}", r.trace, r.scheme)] = m
    rows: list[dict[str, Any]] = []
    for t in traces:
        row: dict[str, Any] = {"trace": t}
        efm = metrics.get(("main", t, "efm"), {}).get("mean_us")
        row["requests"] = metrics.get(("main", t, "efm"), {}).get("requests")
        for s in SCHEMES:
            m = metrics.get(("main", t, s), {})
            row[f"{s}_mean_us"] = m.get("mean_us")
            row[f"{s}_read_us"] = m.get("read_us")
            row[f"{s}_write_us"] = m.get("write_us")
            if s != "efm":
                # "EFM delivers x % latency reduction compared to B" = B / EFM - 1 (§V-B: the
                # paper's 296 % can only be read this way).
                r_ = _ratio(m.get("mean_us"), efm)
                row[f"reduction_vs_{s}"] = None if r_ is None else r_ - 1.0
            lt = metrics.get(("lifetime", t, s), {})
            row[f"{s}_lifetime_gain"] = lt.get("lifetime_gain")
        gains = []
        for st in range(1, len(STAGE_PE) + 1):
            a = metrics.get((f"stage{st}", t, "efm"), {}).get("mean_us")
            b = metrics.get((f"stage{st}", t, "efm_static"), {}).get("mean_us")
            g = _ratio(b, a)
            row[f"wear_aware_gain_stage{st}"] = None if g is None else g - 1.0
            if g is not None:
                gains.append(g - 1.0)
        row["wear_aware_gain"] = _mean(gains) if gains else None
        rows.append(row)
    avg: dict[str, Any] = {"trace": "Average"}
    for k in rows[0] if rows else []:
        if k in ("trace", "requests"):
            continue
        avg[k] = _mean([_num(r.get(k)) for r in rows])
    all_rows = [*rows, avg] if rows else rows
    headline = [
        _hl("mean latency reduction vs HOTIS", PAPER_HEADLINE["hotis"], avg, "reduction_vs_hotis"),
        _hl("mean latency reduction vs WARM", PAPER_HEADLINE["warm"], avg, "reduction_vs_warm"),
        _hl("mean latency reduction vs TOS18", PAPER_HEADLINE["tos18"], avg, "reduction_vs_tos18"),
        _hl(
            "wear-out aware gain over EFM-static",
            PAPER_HEADLINE["wear_aware"],
            avg,
            "wear_aware_gain",
        ),
        _hl("lifetime gain, EFM", PAPER_HEADLINE["lifetime_efm"], avg, "efm_lifetime_gain"),
        _hl("lifetime gain, TOS18", PAPER_HEADLINE["lifetime_tos18"], avg, "tos18_lifetime_gain"),
        _hl("lifetime gain, HOTIS", PAPER_HEADLINE["lifetime_hotis"], avg, "hotis_lifetime_gain"),
        _hl("lifetime gain, WARM", PAPER_HEADLINE["lifetime_warm"], avg, "warm_lifetime_gain"),
    ]
    return Analysis(all_rows, headline, metrics, traces, study, errors)


def _hl(metric: str, paper: float, avg: Mapping[str, Any], key: str) -> dict[str, Any]:
    ours = _num(avg.get(key))
    return {
        "metric": metric + " (average)",
        "paper": f"{paper * 100:.1f} %",
        "ours": ours,
        "ours_text": fmt_pct(ours, signed=False),
    }


# --------------------------------------------------------------------------- output


def print_tables(an: Analysis, caption: str, sel: Selection) -> None:
    c = out_console
    t = Table(
        title="EFM — mean response time (µs) (Fig. 5); reduction = baseline / EFM - 1",
        caption=caption,
        title_justify="left",
        caption_justify="left",
    )
    t.add_column("trace")
    for s in SCHEMES:
        t.add_column(LABELS[s], justify="right")
    for s in SCHEMES[1:]:
        t.add_column(f"vs {LABELS[s]}", justify="right")
    for r in an.rows:
        t.add_row(
            r["trace"],
            *(fmt_num(r.get(f"{s}_mean_us")) for s in SCHEMES),
            *(fmt_pct(r.get(f"reduction_vs_{s}")) for s in SCHEMES[1:]),
        )
    c.print(t)

    t2 = Table(
        title="Flash-time breakdown (Fig. 6), fraction of host + migration flash time",
        title_justify="left",
    )
    for col in ("trace", "scheme", "optimal R+W", "non-opt. R", "non-opt. W", "migration"):
        t2.add_column(col, justify="left" if col in ("trace", "scheme") else "right")
    for tr in an.traces:
        for s in SCHEMES:
            m = an.metrics.get(("main", tr, s), {})
            parts = [m.get(k) for k in BREAKDOWN]
            tot = sum(p for p in parts if p) or 0.0
            t2.add_row(
                tr if s == SCHEMES[0] else "",
                LABELS[s],
                *(
                    fmt_pct(p / tot if (p is not None and tot) else None, signed=False)
                    for p in parts
                ),
                end_section=s == SCHEMES[-1],
            )
    c.print(t2)

    if an.study_traces:
        t3 = Table(title="Mean response (µs) across wear stages (Fig. 7)", title_justify="left")
        t3.add_column("trace")
        t3.add_column("scheme")
        for st in range(1, len(STAGE_PE) + 1):
            t3.add_column(f"stage {st}", justify="right")
        for tr in an.study_traces:
            for s in STAGE_SCHEMES:
                t3.add_row(
                    tr if s == STAGE_SCHEMES[0] else "",
                    LABELS[s],
                    *(
                        fmt_num(an.metrics.get((f"stage{st}", tr, s), {}).get("mean_us"))
                        for st in range(1, len(STAGE_PE) + 1)
                    ),
                    end_section=s == STAGE_SCHEMES[-1],
                )
        c.print(t3)
        t4 = Table(
            title="Lifetime gain with reduced effective wearing (Fig. 8) and mean "
            "response (µs) with 1 / 2 / 3 regions (Fig. 10)",
            title_justify="left",
        )
        t4.add_column("trace")
        t4.add_column("scheme")
        for col in ("lifetime gain", "1R", "2R", "3R"):
            t4.add_column(col, justify="right")
        for tr in an.study_traces:
            for s in SCHEMES:
                t4.add_row(
                    tr if s == SCHEMES[0] else "",
                    LABELS[s],
                    fmt_pct(
                        an.metrics.get(("lifetime", tr, s), {}).get("lifetime_gain"), signed=False
                    ),
                    *(
                        fmt_num(an.metrics.get((f"{n}R", tr, s), {}).get("mean_us"))
                        for n in (1, 2, 3)
                    ),
                    end_section=s == SCHEMES[-1],
                )
        c.print(t4)

    t5 = Table(title="Headline: EFM, the paper vs ours", title_justify="left")
    t5.add_column("metric")
    t5.add_column("paper", justify="right")
    t5.add_column("ours", justify="right")
    for h in an.headline:
        t5.add_row(h["metric"], h["paper"], h["ours_text"])
    c.print(t5)
    if sel.missing_table_i:
        c.print(
            f"[yellow]Table I traces not found[/] in {', '.join(map(str, sel.searched))}: "
            + ", ".join(sel.missing_table_i)
        )
    for note in sel.notes:
        c.print(f"[dim]note: {note}[/]")


BREAKDOWN = ("optimal_rw", "nonoptimal_read", "nonoptimal_write", "migration")


def make_figures(an: Analysis, out: Path) -> list[Path]:
    from nandlab import figures

    paths: list[Path] = []
    if not an.traces:
        return paths

    def data(tag: str, metric: str, schemes: Sequence[str], traces: Sequence[str]) -> Any:
        return {
            t: {s: an.metrics.get((tag, t, s), {}).get(metric) for s in schemes} for t in traces
        }

    paths += figures.grouped_bars(
        {"Mean response time, normalised to EFM": data("main", "mean_us", SCHEMES, an.traces)},
        SCHEMES,
        out / "fig5_mean_latency",
        reference="efm",
        scheme_labels=LABELS,
    )
    bd = {
        f"{t} {LABELS[s]}": {k: an.metrics.get(("main", t, s), {}).get(k) for k in BREAKDOWN}
        for t in an.traces
        for s in SCHEMES
    }
    paths += figures.stacked_bars(
        bd,
        list(BREAKDOWN),
        out / "fig6_breakdown",
        category_labels={
            "optimal_rw": "optimal R+W",
            "nonoptimal_read": "non-optimal R",
            "nonoptimal_write": "non-optimal W",
            "migration": "migration",
        },
        ylabel="fraction of flash time",
        title="Latency breakdown (host and migration flash time)",
    )
    if an.study_traces:
        panels = {}
        for t in an.study_traces:
            panels[t] = {
                LABELS[s]: [
                    (float(st), an.metrics.get((f"stage{st}", t, s), {}).get("mean_us"))
                    for st in range(1, len(STAGE_PE) + 1)
                ]
                for s in STAGE_SCHEMES
            }
        paths += figures.sweep_lines(
            panels,
            out / "fig7_wear_stages",
            xlabel="wear stage",
            ylabel="mean response (µs)",
            title="Mean response time as the flash wears out",
        )
        paths += figures.grouped_bars(
            {
                "Lifetime gain from reduced effective wearing": data(
                    "lifetime", "lifetime_gain", SCHEMES, an.study_traces
                )
            },
            SCHEMES,
            out / "fig8_lifetime",
            scheme_labels=LABELS,
            ylabel="lifetime gain",
        )
        r10 = {
            f"{LABELS[s]}": {
                t: {f"{n}R": an.metrics.get((f"{n}R", t, s), {}).get("mean_us") for n in (1, 2, 3)}
                for t in an.study_traces
            }
            for s in SCHEMES
        }
        paths += figures.grouped_bars(
            r10,
            ["1R", "2R", "3R"],
            out / "fig10_regions",
            ylabel="mean response (µs)",
        )
    return paths


def caption_text(sel: Selection) -> str:
    capped = [f"{t.name} (first {t.max_requests:,})" for t in sel.traces if t.max_requests]
    s = (
        "preset efm (256 GiB, 4 KiB pages, 128 pages/block, 2 ch x 2 chips x 2 dies x 2 planes, "
        "3 equal regions, Table II/III latencies, Stage 3 unless stated)"
    )
    return s + ("; " + ", ".join(capped) if capped else "; whole traces")


def quick_check(an: Analysis) -> dict[str, Any]:
    """Every run succeeded, every run reports its regions, and EFM's average mean response is
    below the worst baseline's (a sanity floor, not the paper's claim)."""
    avg = an.rows[-1] if an.rows else {}
    reds = {s: _num(avg.get(f"reduction_vs_{s}")) for s in SCHEMES[1:]}
    missing = [k for k, m in an.metrics.items() if m.get("mean_us") is None]
    best = max((v for v in reds.values() if v is not None), default=None)
    passed = not an.errors and not missing and best is not None and best > 0
    parts = ", ".join(f"{LABELS[s]} {fmt_pct(v)}" for s, v in reds.items())
    return {
        "passed": passed,
        "reductions": reds,
        "message": f"EFM latency reduction vs {parts}; expected all runs to succeed and EFM to "
        "beat at least one baseline on average",
    }


# --------------------------------------------------------------------------- command


@click.command("efm")
@common_options(PAPER)
@click.option(
    "--max-requests",
    type=click.IntRange(min=0),
    default=None,
    help="Cut every Table I / captured trace to its first N requests (0 = whole traces) "
    f"[default: whole traces; the pgbench_rw slice is cut to {QUICK_SLICE:,} with --quick].",
)
def efm(opts: CommonOptions, max_requests: int | None) -> None:
    """Li, Yuan & Du, EFM elastic flash management: Figs. 5-8, 10 and the headline table.

    Runs efm, hotis, warm and tos18 (plus efm_static across wear stages) on every trace of the
    paper's Table I found under --traces (the missing ones are listed) and on the real traces
    we have (captured PostgreSQL / developer-tree traces; MSR hm_0, Financial1 and WebSearch1
    excerpts). --quick: the Financial1 and hm_0 excerpts and a pgbench_rw slice; exits
    non-zero when a run fails or EFM beats no baseline on average.
    """

    t0 = time.perf_counter()
    sel = select_traces(opts.traces, quick=opts.quick, max_requests=max_requests)
    if not sel.traces:
        raise FileNotFoundError("no traces found in " + ", ".join(map(str, sel.searched)))
    runs = plan_runs(sel)
    df, st = run_planned(
        runs,
        opts,
        label=f"efm: {len(sel.traces)} traces ({', '.join(t.name for t in sel.traces)})",
    )
    reports = reports_by_key(df)
    an = analyse(runs, reports)
    caption = caption_text(sel)
    figs = make_figures(an, opts.out)
    check = quick_check(an) if opts.quick else None
    write_json(
        opts.json_out,
        PAPER,
        df,
        an.rows,
        caption=caption,
        headline=an.headline,
        traces=traces_json(sel.traces),
        missing_table_i=sel.missing_table_i,
        figures=[str(p) for p in figs],
        check=check,
        grid=grid_json(st),
    )
    if not opts.quiet:
        print_tables(an, caption, sel)
        out_console.print(runs_line(st, t0, len(figs), opts.out))
    exit_on_failures(an.errors, check, opts.out)
