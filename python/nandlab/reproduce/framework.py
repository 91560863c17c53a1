"""The declarative reproduction (issue 31): one description per paper, one runner.

A paper's reproduction is a :class:`Reproduction`: its preset, the traces it runs
(:class:`Traces`: the paper's trace table by usual file names, the stand-ins we have, the
``--quick`` subset), the runs per trace (:class:`Variant`), the metrics of one run's report,
the per-trace rows, the headline (:class:`~nandlab.reproduce.headline.Headline`: the paper's
value beside ours), the tables (:class:`Table`), the figures to draw (:class:`Fig`) and the
``--quick`` check. :func:`run` does what every reproduction does with it:

1. select the traces (:meth:`Traces.select`);
2. pick each trace's load level from the baseline (:func:`expand`, docs/reproductions.md);
3. plan and run the grid (resumable: finished runs are kept in ``OUT/runs.parquet``);
4. analyse: metrics per run, rows per trace, the headline over the comparable traces;
5. draw the figures, write the JSON, print the tables, exit with the documented status.

:func:`command` turns a description into its ``nandlab reproduce <paper>`` command (with the
paper's own :attr:`~Reproduction.options`). A paper's module keeps only what is truly its own
(its rows, its checks); a study of its own that does not run on the grid (DPA's codec and
lifetime model, DMM's DMMbench) is a :class:`Study` in a module of its own, which :func:`run`
runs before the trace runs and files in the same result. Figures also draw from rows made
without the grid (:class:`TraceRows`: DMM's object-device runs, :mod:`.osd_runs`). The recipe
is in ``docs/reproducing.md``.

The framework is three files, and this module re-exports the names of the other two (a
reproduction writes ``fw.bars``, ``fw.Col``, ``fw.pick``): this one holds the description, the
runs, the results, the runner, the study and the command; :mod:`~nandlab.reproduce.rows` what
the rows are made of (a run's metrics, ratios, the summary rows, changes, checks);
:mod:`~nandlab.reproduce.present` the tables and figures.
"""

from __future__ import annotations

import inspect
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from nandlab.reproduce.common import (
    CommonOptions,
    TraceChoice,
    common_options,
    exit_on_failures,
    grid_json,
    reports_by_key,
    run_planned,
    runs_line,
    traces_json,
)
from nandlab.reproduce.fmt import (
    EXIT_CHECK_FAILED,
    err_console,
    out_console,
    plural,
)
from nandlab.reproduce.headline import Headline, headline_rows, print_rows
from nandlab.reproduce.load import (
    AUTO,
    MAX_AUTO_SCALE,
    MAX_AUTO_STEPS,
    LoadPlan,
    auto_scale,
    groups,
    load_info,
    next_scale,
    offered_load,
    print_load_table,
    scale_label,
)
from nandlab.reproduce.output import write_result
from nandlab.reproduce.present import (
    Col,
    Fig,
    Getter,
    RowSource,
    Table,
    TraceRows,
    bars,
    cdfs,
    cell,
    get,
    lines,
    print_checks,
    print_table,
    render,
    run_ratio,
    run_value,
    scheme_cols,
    size_sweep,
    stacked,
)
from nandlab.reproduce.rows import (
    HOST_METRICS,
    SCHEME_KEYS,
    as_int,
    as_ratio,
    below,
    change,
    check,
    host_metrics,
    load_of,
    monotone,
    pick,
    ratios,
    reduction,
    with_means,
)
from nandlab.reproduce.traces import Selection, Traces
from nandlab.reproduce.traces import TraceDef as TraceDef
from nandlab.reproduce.traces import standin as standin

if TYPE_CHECKING:
    import polars as pl

    from nandlab.experiment import GridStats, RunSpec

Row = dict[str, Any]


# --------------------------------------------------------------------------- runs


@dataclass(frozen=True)
class Variant:
    """One run on a trace: its ``name`` within the trace's row (how the analysis asks for it),
    the scheme and the overrides. ``label`` names the run in ``runs.parquet`` (default: the
    name); ``suffix`` files it under another row (``"<trace><suffix>"``: the same trace on
    another device); ``scaled = False`` runs it without the trace's time scale (closed loop)."""

    name: str
    scheme: str
    overrides: Mapping[str, object] = field(default_factory=dict)
    label: str | None = None
    suffix: str = ""
    scaled: bool = True

    def derive(self, suffix: str, overrides: Mapping[str, object]) -> Variant:
        """This run with more ``overrides``, its name (and label) followed by ``suffix``."""
        label = None if self.label is None else f"{self.label} {suffix}"
        ov = {**self.overrides, **overrides}
        return replace(self, name=f"{self.name} {suffix}", overrides=ov, label=label)


@dataclass(frozen=True)
class Sweep:
    """A parameter swept over runs (a P/E, a timing, a data age): value ``x`` of ``values``
    (``quick`` with ``--quick``) adds ``overrides(x)`` to a run and `` <label.format(x=x)>`` to
    its name; the ``preset`` value is the run itself (no run of its own)."""

    label: str
    values: tuple[Any, ...]
    overrides: Callable[[Any], Mapping[str, object]]
    preset: Any = None
    quick: tuple[Any, ...] | None = None

    def xs(self, quick: bool) -> tuple[Any, ...]:
        """The values swept (``quick``: with ``--quick``)."""
        return self.quick if quick and self.quick is not None else self.values

    def name(self, base: str, x: Any) -> str:
        """The name of run ``base`` at ``x``."""
        return base if x == self.preset else f"{base} {self.label.format(x=x)}"

    def variants(self, bases: Iterable[Variant], quick: bool) -> list[Variant]:
        """Every run of ``bases`` at every value swept but the preset (values outermost)."""
        vs = list(bases)
        return [v.derive(self.label.format(x=x), self.overrides(x))
                for x in self.xs(quick) if x != self.preset for v in vs]  # fmt: skip


@dataclass
class Planned:
    """A planned run: the row it belongs to, its variant, its spec and its key."""

    trace: str
    variant: Variant
    spec: RunSpec
    key: str = ""


def run_spec(config: str, t: TraceChoice, v: Variant) -> RunSpec:
    """The run of variant ``v`` on trace instance ``t`` (its cut and time scale)."""
    from nandlab.experiment import RunSpec

    ov = t.overrides()
    if not v.scaled:
        ov.pop("host.time_scale", None)  # closed loop: no arrival times to scale
    ov.update(v.overrides)
    return RunSpec(t.path, t.name, v.scheme, config, ov, v.label or v.name)


def expand(
    traces: Sequence[TraceChoice],
    opts: CommonOptions,
    probe: Callable[[TraceChoice], Sequence[RunSpec]],
) -> tuple[list[TraceChoice], LoadPlan]:
    """One :class:`TraceChoice` per (trace, load level). With ``auto`` among the levels, the
    ``probe`` specs of each trace (its baseline run(s) at K = 1) run first and K is chosen
    from the largest offered die load among them. With several levels per trace the instances
    are named ``"<trace> K=<k>"``; with one they keep the trace's name."""

    plan = LoadPlan(requested=list(opts.time_scales))
    if AUTO in plan.requested:

        @dataclass
        class _Probe:
            trace: str
            spec: RunSpec
            key: str = ""

        def probe_at(pending: Mapping[str, float]) -> dict[str, list[dict[str, Any] | None]]:
            probes = [
                _Probe(t.name, s)
                for t in traces
                if t.name in pending
                for s in probe(replace(t, time_scale=pending[t.name]))
            ]
            if not probes:
                return {}
            df, _ = run_planned(probes, opts)
            reports = reports_by_key(df)
            out: dict[str, list[dict[str, Any] | None]] = {}
            for p in probes:
                out.setdefault(p.trace, []).append(reports.get(p.key, (None, None))[0])
            return out

        # K from the mean offered die load at K = 1; then, while the baseline at K is still
        # overloaded (a hot die, a burst), the next K of the series.
        at1 = probe_at({t.name: 1.0 for t in traces})
        pending: dict[str, float] = {}
        for t in traces:
            known = [x for x in map(offered_load, at1.get(t.name, [])) if x is not None]
            plan.offered_at_1[t.name] = max(known) if known else None
            k = auto_scale(plan.offered_at_1[t.name])
            if k == 1.0 and any(load_info(r).get("overloaded") for r in at1.get(t.name, []) if r):
                k = next_scale(k)
                plan.raised.add(t.name)
            plan.auto[t.name] = k
            if k > 1.0:
                pending[t.name] = k
        for _ in range(MAX_AUTO_STEPS):
            if not pending:
                break
            got = probe_at(pending)
            nxt: dict[str, float] = {}
            for n, k in pending.items():
                still = any(load_info(r).get("overloaded") for r in got.get(n, []) if r)
                if still and k < MAX_AUTO_SCALE:
                    nxt[n] = plan.auto[n] = next_scale(k)
                    plan.raised.add(n)
            pending = nxt
        if not opts.quiet:
            err_console.print("load: " + ", ".join(_level_text(plan, t.name) for t in traces))
    out: list[TraceChoice] = []
    for t in traces:
        ks = plan.scales(t.name)
        for k in ks:
            name = t.name if len(ks) == 1 else f"{t.name} {scale_label(k)}"
            out.append(replace(t, name=name, base_name=t.name, time_scale=k))
    return out, plan


def _level_text(plan: LoadPlan, name: str) -> str:
    s = f"{name} {scale_label(plan.auto.get(name, 1.0))}"
    off = plan.offered_at_1.get(name)
    if off is None:
        return s
    raised = ", raised: the baseline was still overloaded" if name in plan.raised else ""
    return s + f" (baseline offered die load at K=1: {off:.1%}{raised})"


# --------------------------------------------------------------------------- results


@dataclass
class Results:
    """Every run's report, by (row, variant name), with the paper's metrics of each."""

    repro: Reproduction
    opts: CommonOptions
    selection: Selection
    instances: list[TraceChoice]
    plan: LoadPlan
    planned: list[Planned]
    reports: Mapping[str, tuple[dict[str, Any] | None, str | None]]
    #: load level -> the rows (trace instances) at that level
    groups: dict[str, list[str]]
    #: what the reproduction's ``prepare`` step recorded (e.g. how it generated a trace)
    extra: dict[str, Any] = field(default_factory=dict)
    _by: dict[tuple[str, str], str] = field(default_factory=dict)
    _metrics: dict[str, dict[str, Any]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        for p in self.planned:
            self._by.setdefault((p.trace, p.variant.name), p.key)

    @property
    def quick(self) -> bool:
        return self.opts.quick

    @property
    def traces(self) -> list[str]:
        """The rows (trace instances, then rows of the same trace on other devices), in plan
        order."""
        return list(dict.fromkeys(p.trace for p in self.planned))

    def has(self, trace: str, name: str) -> bool:
        return (trace, name) in self._by

    def report(self, trace: str, name: str) -> dict[str, Any] | None:
        key = self._by.get((trace, name))
        return None if key is None else self.reports.get(key, (None, None))[0]

    def get(self, trace: str, name: str) -> dict[str, Any]:
        """The paper's metrics (:attr:`Reproduction.metrics`) of a run; ``{}`` without one."""
        key = self._by.get((trace, name))
        if key is None:
            return {}
        if key not in self._metrics:
            rep = self.reports.get(key, (None, None))[0]
            self._metrics[key] = self.repro.metrics(rep) if rep else {}
        return self._metrics[key]

    def load(self, trace: str) -> dict[str, Any]:
        """The row's load: the most loaded of the probe runs (:attr:`Reproduction.probe`)."""
        loads = [load_info(self.report(trace, n)) for n in self.repro.probe if self.has(trace, n)]
        return max(
            loads,
            key=lambda li: (bool(li.get("overloaded")), li.get("offered_die_load") or 0.0),
            default={},
        )

    def overloaded_run(self, trace: str, name: str) -> bool | None:
        return load_info(self.report(trace, name)).get("overloaded")

    @property
    def errors(self) -> list[tuple[str, str, str]]:
        """``(trace, label, error)`` of every failed (or missing) run, once per key."""
        out, seen = [], set()
        for p in self.planned:
            err = self.reports.get(p.key, (None, "not run"))[1]
            if err and p.key not in seen:
                seen.add(p.key)
                out.append((p.trace, p.spec.label, err))
        return out


@dataclass
class Analysis:
    """What a reproduction found: the rows (per trace, then any summary rows), the headline,
    the loads and the check."""

    res: Results
    rows: list[Row]
    headline: list[Row] = field(default_factory=list)
    loads: dict[str, dict[str, Any]] = field(default_factory=dict)
    checks: list[dict[str, Any]] = field(default_factory=list)
    figures: list[Path] = field(default_factory=list)

    @property
    def overloaded(self) -> set[str]:
        return {t for t, li in self.loads.items() if li.get("overloaded")}

    @property
    def trace_rows(self) -> list[Row]:
        """The per-trace rows (without the summary rows)."""
        names = set(self.res.traces)
        return [r for r in self.rows if r.get("trace") in names]

    def row(self, trace: str) -> Row:
        return next((r for r in self.rows if r.get("trace") == trace), {})


# --------------------------------------------------------------------------- the description


@dataclass(frozen=True)
class Reproduction:
    """One paper's reproduction (see the module doc and ``docs/reproducing.md``)."""

    #: command name and the JSON's ``paper``
    paper: str
    #: the paper, in one line (authors, title, venue)
    title: str
    #: the command's help (its first line is the summary)
    help: str
    #: the preset every run starts from
    config: str
    traces: Traces
    #: ``(trace instances, quick) -> [(instance, variant)]`` in the order the runs are listed
    plan: Callable[[list[TraceChoice], bool], Iterable[tuple[TraceChoice, Variant]]]
    #: the report of one run -> the paper's numbers
    metrics: Callable[[Mapping[str, Any]], dict[str, Any]]
    #: results -> rows (one per trace, then any summary rows); each row has ``"trace"``
    rows: Callable[[Results], list[Row]]
    #: the variants whose load sets a trace's level (the most loaded of them)
    probe: tuple[str, ...] = ("baseline",)
    headline: Sequence[Headline] = ()
    tables: Sequence[Table] = ()
    figures: Sequence[Fig] = ()
    #: the --quick sanity checks: analysis -> [{"name", "passed", "detail"}]; a failure is an
    #: exit status of 1 (``docs/reproductions.md``, "Exit status")
    check: Callable[[Analysis], Sequence[Mapping[str, Any]]] | None = None
    #: the title of the load table (whose load sets the level)
    load_title: str = "Load level: the baseline per trace"
    caption: Callable[[Selection], str] | None = None
    #: entries of the result JSON of the paper's own: analysis -> {key: value}
    json_extra: Callable[[Analysis], Mapping[str, Any]] | None = None
    #: ``--max-requests`` help (None: no such option)
    max_requests_help: str | None = None
    #: traces the reproduction makes (generated stand-ins), before the runs: options ->
    #: (trace choices, a record of how they were made, in :attr:`Results.extra`)
    prepare: Callable[[CommonOptions], tuple[list[TraceChoice], dict[str, Any]]] | None = None
    #: run the check without ``--quick`` too
    check_always: bool = False
    #: the title of the printed headline (default: "Headline: <title>, the paper vs ours")
    headline_title: str = ""
    #: more options of the command (click decorators, listed as ``--help`` lists them, after
    #: the options of every reproduction); their values reach ``study`` and ``from_study``
    options: Sequence[Callable[[Any], Any]] = ()
    #: a study of the paper's own, run in this process before the trace runs (:class:`Study`):
    #: (options, the values of ``options`` by name) -> what it files in the result
    study: Callable[[CommonOptions, Mapping[str, Any]], Study] | None = None
    #: with a study: (this description, the study, the values of ``options``) -> the
    #: description the trace runs follow (e.g. variants made from the study's results), or
    #: ``None`` for no trace runs; default: this description
    from_study: Callable[[Reproduction, Study, Mapping[str, Any]], Reproduction | None] | None = (
        None
    )
    #: with a study: the result JSON's key of the trace runs' entries (:func:`study_json`)
    trace_key: str = "trace_runs"


def checks_of(items: Iterable[Mapping[str, Any]], kind: str = "sanity") -> list[dict[str, Any]]:
    """Checks in the result JSON's form: ``{"name", "passed", "detail", "kind", ...}``;
    ``kind`` is ``"sanity"`` (a failure exits 1) or ``"paper"`` (a comparison with the paper,
    reported: a difference is a result, not a failure)."""
    return [{"kind": kind, **c} for c in items]


def plan_runs(r: Reproduction, instances: list[TraceChoice], quick: bool) -> list[Planned]:
    """Every planned run of ``r`` over the trace instances."""
    return [
        Planned(t.name + v.suffix, v, run_spec(r.config, t, v)) for t, v in r.plan(instances, quick)
    ]


def probe_specs(r: Reproduction, t: TraceChoice) -> list[RunSpec]:
    """The runs of ``t`` that set its load level (the probe variants at K = 1)."""
    return [
        p.spec
        for p in plan_runs(r, [t], False)
        if p.variant.name in r.probe and not p.variant.suffix
    ]


def analyse(res: Results) -> Analysis:
    """Rows, loads, headline and (with --quick) the checks of a reproduction's results."""
    r = res.repro
    an = Analysis(res, r.rows(res))
    an.loads = {t: res.load(t) for t in res.traces if any(res.has(t, n) for n in r.probe)}
    an.headline = headline_rows(r.headline, an.trace_rows, res.overloaded_run, res.groups)
    if (res.quick or r.check_always) and r.check is not None:
        an.checks = checks_of(r.check(an))
    return an


def analyse_reports(
    r: Reproduction,
    instances: Sequence[TraceChoice],
    report: Callable[[Planned], dict[str, Any] | None],
    *,
    quick: bool = False,
) -> Analysis:
    """The analysis of ``r`` over trace ``instances`` with each planned run's report given by
    ``report`` instead of a run (tests; what a reproduction makes of given reports)."""
    planned = plan_runs(r, list(instances), quick)
    reports: dict[str, tuple[dict[str, Any] | None, str | None]] = {}
    for i, p in enumerate(planned):
        p.key = f"run{i}"
        rep = report(p)
        reports[p.key] = (rep, None if rep is not None else "no report")
    opts = CommonOptions(r.paper, [], quick, Path(), None, 1, None, False)
    rows = list(dict.fromkeys(p.trace for p in planned))
    sel = Selection(list(instances), [], [])
    plan = LoadPlan(requested=[AUTO])
    return analyse(Results(r, opts, sel, list(instances), plan, planned, reports, {AUTO: rows}))


def execute(
    r: Reproduction, opts: CommonOptions, *, max_requests: int | None = None
) -> tuple[Analysis, pl.DataFrame, GridStats]:
    """Select, pick load levels, run and analyse (no output): the reproduction's results."""
    sel = r.traces.select(opts.traces, quick=opts.quick, max_requests=max_requests)
    extra: dict[str, Any] = {}
    if r.prepare is not None:
        made, extra = r.prepare(opts)
        sel.traces += made
    if not sel.traces:
        raise FileNotFoundError("no traces found in " + ", ".join(map(str, sel.searched)))
    instances, plan = expand(sel.traces, opts, lambda t: probe_specs(r, t))
    planned = plan_runs(r, instances, opts.quick)
    names = ", ".join(t.name for t in instances)
    df, st = run_planned(
        planned, opts, label=f"{r.paper}: {plural(len(instances), 'trace')} ({names})"
    )
    level_groups = groups(plan, instances)
    # rows of a trace on another device (a variant's suffix) go with the trace's level
    for names_ in level_groups.values():
        names_ += [
            p.trace
            for p in planned
            if p.variant.suffix
            and p.trace not in names_
            and p.trace.removesuffix(p.variant.suffix) in names_
        ]
        names_[:] = list(dict.fromkeys(names_))
    res = Results(r, opts, sel, instances, plan, planned, reports_by_key(df), level_groups)
    res.extra = extra
    return analyse(res), df, st


def result_head(
    paper: str,
    title: str,
    quick: bool,
    checks: Sequence[Mapping[str, Any]],
    headline: Sequence[Mapping[str, Any]],
    tables: Sequence[Mapping[str, Any]],
    figures: Iterable[Path | str],
) -> dict[str, Any]:
    """The entries every reproduction's result JSON starts with, in this order (the paper, its
    title, ``quick``, the checks, the headline rows, the rendered tables, the figure files);
    ``table`` (the rows) and the reproduction's own entries follow."""
    return {
        "paper": paper,
        "title": title,
        "quick": quick,
        "checks": checks,
        "headline": headline,
        "tables": tables,
        "figures": [str(f) for f in figures],
    }


def result_json(r: Reproduction, an: Analysis, st: GridStats) -> dict[str, Any]:
    """The result JSON of a reproduction (every reproduction writes these entries; ``runs``,
    the runs with their full reports, are added last by
    :func:`~nandlab.reproduce.output.write_result`)."""
    res = an.res
    tables = [t for t in (x.render(an) for x in r.tables) if t]
    out = result_head(r.paper, r.title, res.quick, an.checks, an.headline, tables, an.figures)
    out["table"] = an.rows
    out["traces"] = traces_json(res.instances)
    out["missing_traces"] = {"table": r.traces.table, "names": res.selection.missing}
    out["notes"] = res.selection.notes
    if r.caption is not None:
        out["caption"] = r.caption(res.selection)
    out["grid"] = grid_json(st)
    out["load"] = res.plan.to_json()
    out["loads"] = an.loads
    if r.json_extra is not None:
        out.update(r.json_extra(an))
    return out


def run(
    r: Reproduction, opts: CommonOptions, *, max_requests: int | None = None, **kw: Any
) -> Analysis | None:
    """The whole reproduction: runs, figures, JSON, tables; exits 1 when a run failed or a
    sanity check did not pass (``docs/reproductions.md``, "Exit status"). ``kw``: the values
    of the reproduction's own :attr:`~Reproduction.options`. Returns the trace runs'
    analysis (``None`` when a study left no trace runs)."""
    if r.study is not None:
        return run_study(r, opts, max_requests=max_requests, **kw)
    t0 = time.perf_counter()
    an, df, st = execute(r, opts, max_requests=max_requests)
    for f in r.figures:
        an.figures += f.draw(an, opts.out)
    doc = result_json(r, an, st)
    write_result(opts.json_out, doc, df)
    if not opts.quiet:
        print_all(r, an, doc)
        out_console.print(runs_line(st, t0, len(an.figures), opts.out))
    exit_on_failures(an.res.errors, an.checks, opts.out)
    return an


def print_all(r: Reproduction, an: Analysis, doc: Mapping[str, Any]) -> None:
    """The load table, the paper's tables, the headline, the missing traces and the notes."""
    res = an.res
    print_load_table(res.instances, an.loads, r.load_title)
    for t in doc["tables"]:
        print_table(t)
    print_rows(an.headline, f"Headline: {r.title}, the paper vs ours")
    if res.selection.missing and r.traces.missing_note is None:
        out_console.print(
            f"[yellow]{r.traces.table} traces not found[/] (pass --traces DIR): "
            + ", ".join(res.selection.missing)
        )
    for note in res.selection.notes:
        out_console.print(f"[dim]note: {note}[/]")


# --------------------------------------------------------------------------- a paper's own study


@dataclass
class Study:
    """A paper's own study and what it adds to its reproduction's result: it runs in this
    process before the trace runs, not on the grid (DPA's codec and lifetime model,
    :mod:`~nandlab.reproduce.dpa_codec`; DMM's DMMbench, :mod:`~nandlab.reproduce.dmm_bench`,
    whose object-device command files it in the same order). Its checks, headline rows, tables
    and figures come first in the result JSON; its rows are the JSON's ``table`` (the trace
    runs' go under :attr:`Reproduction.trace_key`); ``json`` are its own entries, after the
    trace runs'."""

    #: checks in the result JSON's form (:func:`checks_of`)
    checks: list[dict[str, Any]] = field(default_factory=list)
    #: headline rows (:func:`~nandlab.reproduce.headline.headline_rows`)
    headline: list[Row] = field(default_factory=list)
    #: tables as printed (:meth:`Table.render`)
    tables: list[dict[str, Any]] = field(default_factory=list)
    figures: list[Path] = field(default_factory=list)
    #: other files it wrote (listed after every figure)
    files: list[Path] = field(default_factory=list)
    rows: list[Row] = field(default_factory=list)
    json: dict[str, Any] = field(default_factory=dict)
    #: prints its results (before the trace runs' tables)
    show: Callable[[], None] | None = None
    #: its part of the closing line
    summary: str = ""
    #: a part of it failed (exit status 1)
    failed: bool = False
    #: what the trace runs take from it (:attr:`Reproduction.from_study`)
    data: Any = None


def study_json(
    r: Reproduction,
    opts: CommonOptions,
    study: Study,
    part: tuple[Reproduction, Analysis, GridStats] | None,
) -> dict[str, Any]:
    """The result JSON of a reproduction with a study: the entries of every reproduction
    (the study's checks, headline rows, tables and figures, then the trace runs'), the
    study's rows as ``table``, the trace runs' rows, loads, load level, grid, traces and notes
    (and their ``json_extra``) under :attr:`Reproduction.trace_key`, then the study's own
    entries."""
    p, an = (part[0], part[1]) if part is not None else (None, None)
    tables = [t for t in (x.render(an) for x in p.tables) if t] if p and an else []
    out = result_head(
        r.paper,
        r.title,
        opts.quick,
        [*study.checks, *(an.checks if an else [])],
        [*study.headline, *(an.headline if an else [])],
        [*study.tables, *tables],
        [*study.figures, *(an.figures if an else []), *study.files],
    )
    out["table"] = study.rows
    if part is not None:
        p, an, st = part
        res = an.res
        runs: dict[str, Any] = {
            "table": an.rows,
            "loads": an.loads,
            "load": res.plan.to_json(),
            "grid": grid_json(st),
            "traces": traces_json(res.instances),
            "notes": res.selection.notes,
        }
        if p.json_extra is not None:
            runs.update(p.json_extra(an))
        out[r.trace_key] = runs
    out.update(study.json)
    return out


def run_study(
    r: Reproduction, opts: CommonOptions, *, max_requests: int | None = None, **kw: Any
) -> Analysis | None:
    """:func:`run` of a reproduction with a study: the study, then the trace runs it leaves
    (:attr:`Reproduction.from_study`), one result JSON (:func:`study_json`, with the wall
    time ``wall_s``), the study's tables, then the trace runs' load table, notes and tables,
    and the headline."""
    t0 = time.perf_counter()
    assert r.study is not None
    study = r.study(opts, kw)
    p = r.from_study(r, study, kw) if r.from_study is not None else r
    part, df = None, None
    if p is not None:
        an, df, st = execute(p, opts, max_requests=max_requests)
        for f in p.figures:
            an.figures += f.draw(an, opts.out)
        part = (p, an, st)
    doc = study_json(r, opts, study, part)
    doc["wall_s"] = time.perf_counter() - t0
    write_result(opts.json_out, doc, df)
    if not opts.quiet:
        if study.show is not None:
            study.show()
        if part is not None:
            p, an, _ = part
            print_load_table(an.res.instances, an.loads, p.load_title)
            for note in an.res.selection.notes:
                out_console.print(note)
            for t in doc["tables"][len(study.tables) :]:
                print_table(t)
        print_rows(doc["headline"], r.headline_title or f"Headline: {r.title}, the paper vs ours")
        n = len(study.figures) + (len(part[1].figures) if part else 0)
        files = "".join(f" and {f.name}" for f in study.files)
        out_console.print(
            f"{n} figure files{files} in {opts.out}; {study.summary}; "
            f"{time.perf_counter() - t0:.1f} s"
        )
    exit_on_failures(part[1].res.errors if part else [], doc["checks"], opts.out)
    if study.failed:
        raise click.exceptions.Exit(EXIT_CHECK_FAILED)
    return part[1] if part else None


# --------------------------------------------------------------------------- the command


def command(r: Reproduction) -> click.Command:
    """The ``nandlab reproduce <paper>`` command of ``r``: the options every reproduction
    takes (:func:`~nandlab.reproduce.common.common_options`), ``--max-requests`` and the
    reproduction's own :attr:`~Reproduction.options`."""

    def cmd(opts: CommonOptions, max_requests: int | None = None, **kw: Any) -> None:
        run(r, opts, max_requests=max_requests, **kw)

    f: Any = cmd
    for option in reversed(r.options):
        f = option(f)
    f = common_options(r.paper)(f)
    if r.max_requests_help is not None:
        f = click.option(
            "--max-requests",
            type=click.IntRange(min=0),
            default=None,
            help=r.max_requests_help,
        )(f)
    return click.command(r.paper, help=inspect.cleandoc(r.help))(f)


__all__ = [
    # the tables and figures (present.py) and what rows are made of (rows.py), re-exported
    "HOST_METRICS",
    "SCHEME_KEYS",
    "Analysis",
    "Col",
    "Fig",
    "Getter",
    "Planned",
    "Reproduction",
    "Results",
    "Row",
    "RowSource",
    "Selection",
    "Study",
    "Sweep",
    "Table",
    "TraceDef",
    "TraceRows",
    "Traces",
    "Variant",
    "analyse",
    "analyse_reports",
    "as_int",
    "as_ratio",
    "bars",
    "below",
    "cdfs",
    "cell",
    "change",
    "check",
    "checks_of",
    "command",
    "execute",
    "expand",
    "get",
    "host_metrics",
    "lines",
    "load_of",
    "monotone",
    "pick",
    "plan_runs",
    "print_all",
    "print_checks",
    "print_table",
    "probe_specs",
    "ratios",
    "reduction",
    "render",
    "result_head",
    "result_json",
    "run",
    "run_ratio",
    "run_spec",
    "run_study",
    "run_value",
    "scheme_cols",
    "size_sweep",
    "stacked",
    "standin",
    "study_json",
    "with_means",
]
