"""`nandlab reproduce efm`: trace selection, the run plan, the analysis, and the --quick run end
to end with the real schemes."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

import nandlab
from nandlab.cli import cli
from nandlab.data import data_dir
from nandlab.experiment import TraceDigests, run_key
from nandlab.reproduce import efm as e
from nandlab.reproduce import framework as fw


def test_select_traces_table_i_and_ours(tmp_path: Path) -> None:
    (tmp_path / "msr").mkdir()
    (tmp_path / "msr" / "hm_0.csv.gz").write_bytes(b"")
    (tmp_path / "CAM-01-SRV-lvm0.csv").write_text("")  # prxy_0
    (tmp_path / "Financial2.spc").write_text("")  # the paper's OLTP2
    sel = e.TRACES.select([tmp_path], quick=False, max_requests=None)
    names = {t.name: t for t in sel.traces}
    assert names["hm_0"].source == "Table I"
    assert names["prxy_0"].path.name == "CAM-01-SRV-lvm0.csv"
    assert names["Financial2"].path.name == "Financial2.spc"
    assert "hm_0 excerpt" not in names  # superseded by the full hm_0
    assert "Financial1 excerpt" in names and "WebSearch1 excerpt" in names
    assert set(sel.missing) == set(e.TABLE_I) - {"hm_0", "prxy_0", "Financial2"}
    runs = fw.plan_runs(e.REPRODUCTION, sel.traces, False)
    # every trace is a study trace without --quick
    assert {r.trace for r in runs if r.variant.name == "efm stage 1"} == set(names)


def _kind(p: fw.Planned) -> str:
    name = p.variant.name
    for k, tag in (("stage", " stage "), ("lifetime", " eff. wear"), ("fill", " fill R"),
                   ("sync", " sync")):  # fmt: skip
        if tag in name:
            return k
    return "regions" if name.endswith("R") else "main"


def test_plan_runs_quick(tmp_path: Path) -> None:
    sel = e.TRACES.select([tmp_path], quick=True, max_requests=None)
    assert [t.name for t in sel.traces] == [
        "Financial1 excerpt",
        "hm_0 excerpt",
        "pgbench_rw slice",
    ]
    assert sel.traces[2].max_requests == e.QUICK_SLICE
    runs = fw.plan_runs(e.REPRODUCTION, sel.traces, True)
    kinds = {
        k: sum(_kind(r) == k for r in runs)
        for k in ("main", "stage", "lifetime", "regions", "fill")
    }
    assert kinds == {"main": 3 * 4, "stage": 5 * 4, "lifetime": 4, "regions": 4 * 2, "fill": 8}
    fills = {r.spec.overrides.get("scheme.params.fill_region") for r in runs if _kind(r) == "fill"}
    assert fills == {0, 2}
    d = TraceDigests(tmp_path / "d.json")
    keys = {run_key(r.spec, d) for r in runs}
    # Stage 3 of efm, hotis, warm, tos18 is the Fig. 5 run (same key).
    assert len(keys) == len(runs) - 4
    eff = next(r for r in runs if r.variant.name == "tos18 eff. wear")
    assert eff.spec.overrides["regions.wear_weight"] == [1.0, 0.8, 1.0]
    assert eff.spec.overrides["regions.read_us"][1][2] == 210.0  # Table II: 170 -> 210 µs
    eff = next(r for r in runs if r.variant.name == "efm eff. wear")
    assert eff.spec.overrides["regions.read_us"][0][2] == 310.0  # Table II: 270 -> 310 µs


def _report(mean: float, lifetime: float = 0.0) -> dict[str, Any]:
    return {
        "host": {"requests": 10, "mean_us": mean, "read_mean_us": mean, "write_mean_us": mean},
        "regions": {
            "breakdown_us": {
                "optimal_rw": 1.0,
                "nonoptimal_read": 1.0,
                "nonoptimal_write": 1.0,
                "migration": 1.0,
            },
            "lifetime_gain_by_programs": lifetime,
            "stage_at_start": 2,
        },
        "scheme_stats": {"migrations": 0},
    }


def test_analyse_headline(tmp_path: Path) -> None:
    sel = e.TRACES.select([tmp_path], quick=True, max_requests=None)
    mean = {"efm": 100.0, "efm_static": 120.0, "hotis": 150.0, "warm": 200.0, "tos18": 400.0}

    def report(p: fw.Planned) -> dict[str, Any]:
        s = p.spec.scheme
        lt = {"efm": 0.2, "hotis": 0.05}.get(s, 0.1) if _kind(p) == "lifetime" else 0.0
        return _report(mean[s], lt)

    an = fw.analyse_reports(e.REPRODUCTION, sel.traces, report, quick=True)
    assert [r["trace"] for r in an.rows][-1] == "Average"
    avg = an.rows[-1]
    assert avg["reduction_vs_hotis"] == pytest.approx(0.5)
    assert avg["reduction_vs_tos18"] == pytest.approx(3.0)
    assert avg["wear_aware_gain"] == pytest.approx(0.2)
    hl = {h["metric"]: h for h in an.headline}
    assert hl["lifetime gain, EFM"]["mean"] == pytest.approx(20.0)
    assert hl["mean latency reduction vs TOS18 (B/EFM - 1)"]["paper"] == 296
    assert hl["mean latency reduction vs WARM (B/EFM - 1)"]["mean"] == pytest.approx(100.0)
    assert hl["mean latency reduction vs WARM (B/EFM - 1)"]["geomean"] == pytest.approx(100.0)
    # Flash time per request: the breakdown's 4 µs over 10 requests.
    assert an.rows[0]["tos18_flash_us_per_request"] == pytest.approx(0.4)
    assert an.checks and an.checks[0]["passed"]


def test_cli_help_lists_efm() -> None:
    res = CliRunner().invoke(cli, ["reproduce", "--help"])
    assert res.exit_code == 0 and "efm" in res.output
    res = CliRunner().invoke(cli, ["reproduce", "efm", "--help"])
    assert res.exit_code == 0 and "--quick" in res.output


def test_schemes_run_on_the_preset() -> None:
    trace = data_dir() / "msr_hm_0_sample1000.csv"
    for s in ("efm", "efm_static", "warm", "hotis", "tos18"):
        r = nandlab.simulate("efm", trace, scheme=s, overrides={"host.max_requests": 200})
        assert r.report["regions"]["count"] == 3
        assert r.report["regions"]["read_latency_source"].startswith("table")


def test_a_saturated_synchronous_run_is_left_out_on_its_own(tmp_path: Path) -> None:
    """Every comparison has its own overload check (issue 32): HOTIS-sync saturating on one
    trace leaves that trace out of the synchronous HOTIS row, not out of the background one."""
    sel = e.TRACES.select([tmp_path], quick=True, max_requests=None)
    mean = {"efm": 100.0, "efm_static": 120.0, "hotis": 150.0, "warm": 200.0, "tos18": 400.0}
    hot = sel.traces[2].name  # the pgbench_rw slice

    def report(p: fw.Planned) -> dict[str, Any]:
        rep = _report(mean[p.spec.scheme])
        busy = p.variant.name == "hotis sync" and p.trace == hot
        rep["flash"] = {"die_utilization": 0.95 if busy else 0.05}
        rep["sim"] = {"span_s": 10.0, "last_arrival_s": 10.0, "last_completion_s": 10.0}
        rep["host"] = {**rep["host"], "requests": 1000}  # enough to be judged for overload
        if busy:
            rep["host"] = {**rep["host"], "mean_us": 873_000.0}
        return rep

    an = fw.analyse_reports(e.REPRODUCTION, sel.traces, report, quick=True)
    hl = {h["metric"]: h for h in an.headline}
    sync = hl["… vs HOTIS, migrations by block, synchronous (our reconstruction)"]
    assert sync["overloaded"] == [hot] and sync["traces"] == 2
    assert sync["mean"] == pytest.approx(50.0)  # the saturated 873 ms is not averaged in
    background = hl["mean latency reduction vs HOTIS (B/EFM - 1)"]
    assert background["overloaded"] == [] and background["traces"] == 3
    row = next(r for r in an.rows if r["trace"] == hot)
    assert row["hotis_sync_overloaded"] is True and row["hotis_overloaded"] is False
