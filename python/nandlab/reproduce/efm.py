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
* Pre-written data: the paper does not say in which region SSDsim's pre-written pages sit, and
  it decides the read latency of data the trace only reads. The main runs put it in the middle
  region (every scheme's ``fill_region`` default); the study traces also run every scheme with
  it in Region-1 and in Region-3 (:data:`FILL_REGIONS`).

Flash time per request (host reads and programs plus migrations, GC and erases, from the
report's Fig. 6 breakdown) is reported next to the host response, per scheme: the paper's
losses for HOTIS and TOS18 are migration overhead counted in the latency (§V-B, Fig. 6).

Migration behaviour (our reconstruction of §V-B, ``scheme/migration.rs``): the main runs
migrate in the background (TOS18 one page per read of read-only data; HOTIS none; EFM by its
checker). The "sync" runs (:data:`SYNC_VARIANT`) give TOS18 and HOTIS the behaviour the paper
describes -- eager, by logical block, with the triggering read waiting -- and EFM the same
synchrony, and are reported as a second comparison, labelled as ours.

**Load level** (:mod:`nandlab.reproduce.load`): each trace runs at the time scale K chosen from
the largest offered die load of the paper's baselines (HOTIS, WARM, TOS18) at K = 1; EFM's
period T is in trace time and stretches with K. A comparison "EFM vs B" is left out of the
headline when B's run is overloaded.

Traces: every trace of the paper's Table I found under ``--traces`` (its OLTP1 / OLTP2 are the
UMass Financial1 / Financial2 traces; syn1 / syn2 are the paper's own synthetic traces) and the
real traces we have (captured PostgreSQL / developer-tree traces and the bundled MSR hm_0,
UMass Financial1 and WebSearch1 excerpts). ``--quick``: the Financial1 and hm_0 excerpts and a
30,000-request slice of the bundled pgbench_rw trace, Figs. 7, 8 and 10 on Financial1 only.
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
    load_info,
    mean_of,
    print_headline,
    print_load_table,
    ratio,
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
#: Regions the pre-written data is put in (``scheme.params.fill_region``); 1 (the middle
#: region, every scheme's default) is the main run.
FILL_REGIONS: tuple[int, ...] = (0, 1, 2)
#: Overrides of the "sync" runs: migrations by logical block that the triggering read waits for
#: (our reconstruction of EFM §V-B for TOS18 and HOTIS; EFM keeps its checker, made
#: synchronous too). WARM migrates nothing.
SYNC_VARIANT: dict[str, dict[str, object]] = {
    "efm": {"scheme.params.migration_sync": True},
    "tos18": {
        "scheme.params.migration_granularity": "block",
        "scheme.params.migration_sync": True,
    },
    "hotis": {
        "scheme.params.read_migration": True,
        "scheme.params.migration_granularity": "block",
        "scheme.params.migration_sync": True,
    },
}
#: The paper's baselines: their largest offered die load sets a trace's automatic load level.
BASELINES: tuple[str, ...] = ("hotis", "warm", "tos18")


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
    # the paper's OLTP1 / OLTP2, under their own names as in every nandlab reproduction
    "Financial1": ["Financial1.spc*", "Financial1.csv*", "Financial1.ascii*", "Financial1.trace*"],
    "Financial2": ["Financial2.spc*", "Financial2.csv*", "Financial2.ascii*", "Financial2.trace*"],
}
CAPTURED = CAPTURED_PATTERNS
#: Excerpt name -> (file patterns, the Table I trace that supersedes it).
EXCERPTS: dict[str, tuple[list[str], str | None]] = {
    HM0_EXCERPT_NAME: (HM0_EXCERPT, "hm_0"),
    FINANCIAL1_EXCERPT_NAME: (FINANCIAL1_EXCERPT, "Financial1"),
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
        ex, _ = find_traces(
            search, {k: EXCERPTS[k][0] for k in (FINANCIAL1_EXCERPT_NAME, HM0_EXCERPT_NAME)}
        )
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
    kind: str  # "main", "stage", "lifetime", "regions", "fill", "sync"
    trace: str
    scheme: str
    spec: RunSpec
    stage: int = PRESET_STAGE
    regions: int = 3
    fill: int = 1
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


def run_spec(t: TraceChoice, scheme: str, ov: Mapping[str, object], label: str) -> RunSpec:
    """The run of ``scheme`` on trace instance ``t`` (its cut and time scale) with ``ov``."""
    from nandlab.experiment import RunSpec

    return RunSpec(t.path, t.name, scheme, CONFIG, {**t.overrides(), **ov}, label)


def probe_specs(t: TraceChoice) -> list[RunSpec]:
    """The paper's baselines at K = 1: the largest offered die load sets the load level."""
    return [run_spec(t, s, {}, s) for s in BASELINES]


def plan_runs(sel: Selection) -> list[PlannedRun]:
    spec = run_spec
    runs: list[PlannedRun] = []
    for t in sel.traces:
        for s in SCHEMES:
            runs.append(PlannedRun("main", t.name, s, spec(t, s, {}, s)))
        for s, ov in SYNC_VARIANT.items():
            runs.append(PlannedRun("sync", t.name, s, spec(t, s, ov, f"{s} sync")))
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
            for f in FILL_REGIONS:
                if f == 1:
                    continue  # the main run
                runs.append(
                    PlannedRun(
                        "fill",
                        t.name,
                        s,
                        spec(t, s, {"scheme.params.fill_region": f}, f"{s} fill R{f + 1}"),
                        fill=f,
                    )
                )
    return runs


# --------------------------------------------------------------------------- analysis


def run_metrics(report: Mapping[str, Any] | None) -> dict[str, Any]:
    """The numbers the paper reports, from one run's report."""
    if not report:
        return {}
    host = report.get("host", {})
    rg = report.get("regions") or {}
    bd = rg.get("breakdown_us") or {}
    ss = report.get("scheme_stats") or {}
    req = finite(host.get("requests"))
    flash_us = sum(v for v in (finite(x) for x in bd.values()) if v is not None) if bd else None
    return {
        "requests": req,
        "mean_us": finite(host.get("mean_us")),
        # Flash time per host request, µs: host reads/programs, migrations, GC and erases.
        "flash_us_per_request": flash_us / req if flash_us is not None and req else None,
        "migration_us_per_request": (
            finite(bd.get("migration")) / req
            if finite(bd.get("migration")) is not None and req
            else None
        ),
        "load": load_info(report),
        "read_us": finite(host.get("read_mean_us")),
        "write_us": finite(host.get("write_mean_us")),
        "optimal_rw": finite(bd.get("optimal_rw")),
        "nonoptimal_read": finite(bd.get("nonoptimal_read")),
        "nonoptimal_write": finite(bd.get("nonoptimal_write")),
        "migration": finite(bd.get("migration")),
        "lifetime_gain": finite(rg.get("lifetime_gain_by_programs")),
        "stage": rg.get("stage_at_start"),
        "migrations": finite(ss.get("migrations", ss.get("region_migrations"))),
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
    #: trace instance -> the most loaded baseline's load (:func:`load_info`)
    loads: dict[str, dict[str, Any]] = field(default_factory=dict)

    @property
    def overloaded(self) -> set[str]:
        return {t for t, li in self.loads.items() if li.get("overloaded")}


#: Headline metrics: (text, paper, row ratio key, scheme whose run decides overload).
#: "EFM delivers x % latency reduction compared to B" = B / EFM - 1 (§V-B).
HEADLINE_METRICS: tuple[tuple[str, str, str, str], ...] = (
    ("mean latency reduction vs HOTIS (B/EFM - 1)", "53.9 %", "ratio_vs_hotis", "hotis"),
    ("mean latency reduction vs WARM (B/EFM - 1)", "87 %", "ratio_vs_warm", "warm"),
    ("mean latency reduction vs TOS18 (B/EFM - 1)", "296 %", "ratio_vs_tos18", "tos18"),
    (
        "… vs HOTIS, migrations by block, synchronous (our reconstruction)",
        "53.9 %",
        "ratio_vs_hotis_sync",
        "hotis",
    ),
    (
        "… vs WARM, EFM's migrations synchronous (our reconstruction)",
        "87 %",
        "ratio_vs_warm_sync",
        "warm",
    ),
    (
        "… vs TOS18, migrations by block, synchronous (our reconstruction)",
        "296 %",
        "ratio_vs_tos18_sync",
        "tos18",
    ),
    ("wear-out aware gain over EFM-static", "17.3 %", "ratio_wear_aware", "efm_static"),
    ("lifetime gain, EFM", "17.7 %", "ratio_lifetime_efm", "efm"),
    ("lifetime gain, TOS18", "7.5 %", "ratio_lifetime_tos18", "tos18"),
    ("lifetime gain, HOTIS", "5.6 %", "ratio_lifetime_hotis", "hotis"),
    ("lifetime gain, WARM", "5.1 %", "ratio_lifetime_warm", "warm"),
)


def _minus1(v: float | None) -> float | None:
    return None if v is None else v - 1.0


def _tag(r: PlannedRun) -> str:
    if r.kind == "stage":
        return f"stage{r.stage}"
    if r.kind == "regions":
        return f"{r.regions}R"
    if r.kind == "fill":
        return f"fill{r.fill}"
    return r.kind


def analyse(
    runs: Sequence[PlannedRun],
    reports: Mapping[str, Any],
    level_groups: Mapping[str, Sequence[str]] | None = None,
) -> Analysis:
    """Per trace instance: mean response and flash time per request of every scheme, the
    reductions, wear-stage and lifetime gains; the headline over comparable instances."""
    from nandlab.reproduce.load import headline_rows

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
            metrics[("fill1", r.trace, r.scheme)] = m
    rows: list[dict[str, Any]] = []
    loads: dict[str, dict[str, Any]] = {}
    for t in traces:
        row: dict[str, Any] = {"trace": t}
        base_loads = [metrics.get(("main", t, b), {}).get("load") or {} for b in BASELINES]
        worst = max(
            base_loads,
            key=lambda li: (bool(li.get("overloaded")), li.get("offered_die_load") or 0.0),
            default={},
        )
        loads[t] = worst
        row.update(worst)
        efm = metrics.get(("main", t, "efm"), {}).get("mean_us")
        row["requests"] = metrics.get(("main", t, "efm"), {}).get("requests")
        for s in SCHEMES:
            m = metrics.get(("main", t, s), {})
            row[f"{s}_mean_us"] = m.get("mean_us")
            row[f"{s}_read_us"] = m.get("read_us")
            row[f"{s}_write_us"] = m.get("write_us")
            row[f"{s}_flash_us_per_request"] = m.get("flash_us_per_request")
            row[f"{s}_migration_us_per_request"] = m.get("migration_us_per_request")
            row[f"{s}_die_utilization"] = (m.get("load") or {}).get("die_utilization")
            row[f"{s}_overloaded"] = (m.get("load") or {}).get("overloaded")
            if s != "efm":
                # "EFM delivers x % latency reduction compared to B" = B / EFM - 1 (§V-B: the
                # paper's 296 % can only be read this way).
                r_ = ratio(m.get("mean_us"), efm)
                row[f"ratio_vs_{s}"] = r_
                row[f"reduction_vs_{s}"] = None if r_ is None else r_ - 1.0
            lt = metrics.get(("lifetime", t, s), {})
            row[f"{s}_lifetime_gain"] = lt.get("lifetime_gain")
            g = lt.get("lifetime_gain")
            row[f"ratio_lifetime_{s}"] = None if g is None else 1.0 + g
            for f in FILL_REGIONS:
                row[f"{s}_fill{f}_mean_us"] = metrics.get((f"fill{f}", t, s), {}).get("mean_us")
            # The "sync" comparison: WARM migrates nothing, so its main run stands in.
            ms = metrics.get(("sync" if s in SYNC_VARIANT else "main", t, s), {})
            row[f"{s}_sync_mean_us"] = ms.get("mean_us")
            row[f"{s}_sync_flash_us_per_request"] = ms.get("flash_us_per_request")
            row[f"{s}_sync_migration_us_per_request"] = ms.get("migration_us_per_request")
        efm_sync = row.get("efm_sync_mean_us")
        for s in SCHEMES[1:]:
            row[f"ratio_vs_{s}_sync"] = ratio(row.get(f"{s}_sync_mean_us"), efm_sync)
        gains = []
        for st in range(1, len(STAGE_PE) + 1):
            a = metrics.get((f"stage{st}", t, "efm"), {}).get("mean_us")
            b = metrics.get((f"stage{st}", t, "efm_static"), {}).get("mean_us")
            g = ratio(b, a)
            row[f"wear_aware_gain_stage{st}"] = None if g is None else g - 1.0
            if g is not None:
                gains.append(g - 1.0)
        row["wear_aware_gain"] = mean_of(gains) if gains else None
        row["ratio_wear_aware"] = None if not gains else 1.0 + row["wear_aware_gain"]
        rows.append(row)
    over = {t for t, li in loads.items() if li.get("overloaded")}
    avg: dict[str, Any] = {"trace": "Average"}
    for k in rows[0] if rows else []:
        if k in ("trace", "requests") or not k.startswith(("reduction", "wear_aware", "ratio")):
            continue
        avg[k] = mean_of([finite(r.get(k)) for r in rows if r["trace"] not in over])
    all_rows = [*rows, avg] if rows else rows
    groups = level_groups or {"auto": [r["trace"] for r in rows]}
    headline: list[dict[str, Any]] = []
    for text, paper, key, decider in HEADLINE_METRICS:
        ratios = {r["trace"]: finite(r.get(key)) for r in rows}
        flags = {
            r["trace"]: bool(r.get(f"{decider}_overloaded")) or r["trace"] in over for r in rows
        }
        headline += headline_rows([(text, paper, key)], {key: ratios}, flags, groups)
    return Analysis(all_rows, headline, metrics, traces, study, errors, loads)


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
        over = " [red](overloaded)[/]" if r.get("overloaded") else ""
        t.add_row(
            r["trace"] + over,
            *(fmt_num(r.get(f"{s}_mean_us")) for s in SCHEMES),
            *(fmt_pct(r.get(f"reduction_vs_{s}")) for s in SCHEMES[1:]),
        )
    c.print(t)

    tf = Table(
        title="Host response next to flash time per request (µs; flash time = host reads and "
        "programs + migrations + GC + erases) and die utilisation, per scheme",
        title_justify="left",
    )
    for col in ("trace", "scheme", "response", "flash time", "of which migration", "die util."):
        tf.add_column(col, justify="left" if col in ("trace", "scheme") else "right")
    for tr in an.traces:
        for s in SCHEMES:
            m = an.metrics.get(("main", tr, s), {})
            li = m.get("load") or {}
            tf.add_row(
                tr if s == SCHEMES[0] else "",
                LABELS[s] + (" [red](overloaded)[/]" if li.get("overloaded") else ""),
                fmt_num(m.get("mean_us")),
                fmt_num(m.get("flash_us_per_request")),
                fmt_num(m.get("migration_us_per_request")),
                fmt_pct(li.get("die_utilization"), signed=False),
                end_section=s == SCHEMES[-1],
            )
    c.print(tf)

    ts = Table(
        title="Migration behaviour (our reconstruction of §V-B): mean response (µs) and flash "
        "time per request with migrations by logical block that the triggering read waits for "
        "(TOS18, HOTIS; EFM's checker made synchronous); WARM migrates nothing",
        title_justify="left",
    )
    ts.add_column("trace")
    for s in SCHEMES:
        ts.add_column(LABELS[s], justify="right")
    for s in SCHEMES[1:]:
        ts.add_column(f"vs {LABELS[s]}", justify="right")
    for r in an.rows:
        if r["trace"] == "Average":
            continue
        ts.add_row(
            r["trace"],
            *(
                f"{fmt_num(r.get(f'{s}_sync_mean_us'))} "
                f"({fmt_num(r.get(f'{s}_sync_flash_us_per_request'))})"
                for s in SCHEMES
            ),
            *(fmt_pct(_minus1(r.get(f"ratio_vs_{s}_sync"))) for s in SCHEMES[1:]),
        )
    c.print(ts)

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

    fill_rows = [r for r in an.rows if r["trace"] in an.study_traces]
    if fill_rows:
        t6 = Table(
            title="Where the pre-written data sits: mean response (µs) with it in Region-1 / "
            "Region-2 (default) / Region-3",
            title_justify="left",
        )
        t6.add_column("trace")
        t6.add_column("scheme")
        for f in FILL_REGIONS:
            t6.add_column(f"R{f + 1}", justify="right")
        for r in fill_rows:
            for s in SCHEMES:
                t6.add_row(
                    r["trace"] if s == SCHEMES[0] else "",
                    LABELS[s],
                    *(fmt_num(r.get(f"{s}_fill{f}_mean_us")) for f in FILL_REGIONS),
                    end_section=s == SCHEMES[-1],
                )
        c.print(t6)
    print_headline(an.headline, "Headline: EFM, the paper vs ours (over comparable traces)")
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
        overloaded=an.overloaded,
        reference_unit="µs",
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
        # in percent, as the table prints it (and the paper's Fig. 8)
        gain = data("lifetime", "lifetime_gain", SCHEMES, an.study_traces)
        gain_pct = {
            t: {s: (None if v is None else 100.0 * v) for s, v in by.items()}
            for t, by in gain.items()
        }
        paths += figures.grouped_bars(
            {"Lifetime gain from reduced effective wearing": gain_pct},
            SCHEMES,
            out / "fig8_lifetime",
            scheme_labels=LABELS,
            ylabel="lifetime gain (%)",
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
    reds = {s: finite(avg.get(f"reduction_vs_{s}")) for s in SCHEMES[1:]}
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
    study = set(sel.study_traces)
    sel.traces, load_plan = expand(sel.traces, opts, probe_specs)
    sel.study_traces = [t.name for t in sel.traces if t.base_name in study]
    runs = plan_runs(sel)
    df, st = run_planned(
        runs,
        opts,
        label=f"efm: {plural(len(sel.traces), 'trace')} ({', '.join(t.name for t in sel.traces)})",
    )
    reports = reports_by_key(df)
    an = analyse(runs, reports, groups(load_plan, sel.traces))
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
        load=load_plan.to_json(),
        loads=an.loads,
    )
    if not opts.quiet:
        print_load_table(
            sel.traces, an.loads, "Load level: the most loaded baseline (HOTIS/WARM/TOS18)"
        )
        print_tables(an, caption, sel)
        out_console.print(runs_line(st, t0, len(figs), opts.out))
    exit_on_failures(an.errors, check, opts.out)
