"""`nandlab reproduce efm`: trace selection, the run plan, the analysis, and the --quick run end
to end with the real schemes."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from _helpers import run_cli
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
    assert hl["lifetime gain, EFM"]["ours_mean"] == pytest.approx(0.2)
    assert hl["mean latency reduction vs TOS18 (B/EFM - 1)"]["paper"] == "296 %"
    assert hl["mean latency reduction vs WARM (B/EFM - 1)"]["ours_mean"] == pytest.approx(1.0)
    assert hl["mean latency reduction vs WARM (B/EFM - 1)"]["ours_geomean"] == pytest.approx(1.0)
    # Flash time per request: the breakdown's 4 µs over 10 requests.
    assert an.rows[0]["tos18_flash_us_per_request"] == pytest.approx(0.4)
    assert an.check is not None and an.check["passed"]


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


def test_quick_end_to_end(tmp_path: Path) -> None:
    """The CI check: `nandlab reproduce efm --quick` with the real schemes."""
    out = tmp_path / "efm"
    res = run_cli(
        "reproduce", "efm", "--quick", "--out", out, "--json", out / "e.json", timeout=300,
    )  # fmt: skip
    assert res.returncode == 0, res.stdout + res.stderr
    doc = json.loads((out / "e.json").read_text())
    assert doc["paper"] == "efm"
    assert doc["check"]["passed"] is True
    assert all(r["error"] is None for r in doc["runs"])
    assert len(doc["headline"]) == len(e.REPRODUCTION.headline) == 11
    for fig in ("fig5_mean_latency", "fig6_breakdown", "fig7_wear_stages", "fig8_lifetime",
                "fig10_regions"):  # fmt: skip
        assert (out / f"{fig}.png").stat().st_size > 0
    assert "Headline" in res.stdout
