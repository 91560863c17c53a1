"""Concurrent flows from Python and the CLI (issue 35): `nandlab run -t A -t B`, slowdown and
fairness from cached runs alone, `compare` and `sweep` with flows, the per-flow CDF figure."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from _helpers import generate
from click.testing import CliRunner

import nandlab
from nandlab.cli import cli
from nandlab.experiment import load_runs
from nandlab.flows import alone_key

XIA = "xia-diffecc"


@pytest.fixture()
def flows(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, Path]:
    """A light and a heavy synthetic flow; the alone-run cache in the test's directory."""
    monkeypatch.setenv("NANDLAB_CACHE_DIR", str(tmp_path / "cache"))
    light = generate(tmp_path / "light.csv", requests=1500, span_bytes=1 << 28, iops=300.0, seed=1)
    heavy = generate(tmp_path / "heavy.csv", requests=3000, span_bytes=1 << 28, iops=600.0, seed=2)
    return light, heavy


def test_two_flows_report_per_flow_stats_slowdown_and_fairness(
    flows: tuple[Path, Path], tmp_path: Path
) -> None:
    light, heavy = flows
    res = nandlab.simulate(XIA, [light, heavy])
    rep = res.report
    fl = rep["flows"]
    assert [f["name"] for f in fl] == ["light.csv", "heavy.csv"]
    assert sum(f["host"]["requests"] for f in fl) == rep["host"]["requests"] == 4500
    for f in fl:
        # sharing the device does not make a flow faster beyond run-to-run noise
        assert f["slowdown"] >= 0.95, f
        assert f["slowdown"] == pytest.approx(f["host"]["all"]["mean_us"] / f["alone_mean_us"])
    assert 0 < rep["fairness"] <= 1
    sd = [f["slowdown"] for f in fl]
    assert rep["fairness"] == pytest.approx(min(sd) / max(sd))
    assert rep["flows_alone_cached"] == 0
    # the alone runs are cached per flow: a second run makes none
    again = nandlab.simulate(XIA, [light, heavy])
    assert again.report["flows_alone_cached"] == 2
    assert [f["slowdown"] for f in again.report["flows"]] == sd
    # the arbitration cannot change a flow's run alone: still cached
    wrr = nandlab.simulate(
        XIA, [light, heavy], overrides={"host.arbitration": "weighted_round_robin"}
    )
    assert wrr.report["flows_alone_cached"] == 2
    # without slowdowns: no alone runs
    bare = nandlab.simulate(XIA, [light, heavy], slowdown=False)
    assert "fairness" not in bare.report
    assert "slowdown" not in bare.report["flows"][0]


def test_the_alone_key_leaves_out_what_cannot_change_a_run_alone(
    flows: tuple[Path, Path],
) -> None:
    light, heavy = flows
    rep = nandlab.simulate(XIA, [light, heavy], slowdown=False).report
    paths = [str(light), str(heavy)]
    k = alone_key(rep, 0, paths, "{}")
    changed = json.loads(json.dumps(rep))
    changed["config"]["host"]["arbitration"] = "weighted_round_robin"
    assert alone_key(changed, 0, paths, "{}") == k
    changed["config"]["seed"] = 99
    assert alone_key(changed, 0, paths, "{}") != k
    assert alone_key(rep, 1, paths, "{}") != k


def test_cli_run_prints_the_flows_and_writes_them(flows: tuple[Path, Path], tmp_path: Path) -> None:
    light, heavy = flows
    out = tmp_path / "r.json"
    r = CliRunner().invoke(
        cli, ["run", "-c", XIA, "-t", str(light), "-t", str(heavy), "--json", str(out)]
    )
    assert r.exit_code == 0, r.output
    assert "light.csv" in r.output and "heavy.csv" in r.output
    assert "fairness (least slowdown / greatest)" in r.output
    assert "2 flows: light.csv, heavy.csv" in r.output
    rep = json.loads(out.read_text())
    assert len(rep["flows"]) == 2 and rep["fairness"] is not None
    # one trace: no flows
    r = CliRunner().invoke(cli, ["run", "-c", XIA, "-t", str(light), "--json", str(out)])
    assert r.exit_code == 0, r.output
    assert "flows" not in json.loads(out.read_text())


def test_compare_sweep_and_report_take_flows(flows: tuple[Path, Path], tmp_path: Path) -> None:
    light, heavy = flows
    df = nandlab.compare(
        [light, heavy], ["baseline", "diffecc_wa"], XIA, {"host.max_requests": 1000}, tmp_path / "c"
    )
    rows = df.to_dicts()
    assert all(r["error"] is None for r in rows)
    assert all(0 < r["fairness"] <= 1 for r in rows)
    assert all(r["slowdown light.csv"] is not None for r in rows)
    # a sweep: a list inside `traces` is one multi-flow run, its traces in the run key
    grid = tmp_path / "grid.toml"
    grid.write_text(
        f'configs = ["{XIA}"]\ntraces = ["{light}", ["{light}", "{heavy}"]]\n'
        '[set]\n"host.max_requests" = 1000\n'
    )
    r = CliRunner().invoke(cli, ["sweep", str(grid), "--out", str(tmp_path / "s")])
    assert r.exit_code == 0, r.output
    runs = load_runs(tmp_path / "s").to_dicts()
    assert sorted(x["trace"] for x in runs) == ["light", "light + heavy"]
    multi = next(json.loads(x["report"]) for x in runs if "+" in x["trace"])
    assert [f["name"] for f in multi["flows"]] == ["light.csv", "heavy.csv"]
    # the HTML report draws each flow's CDF
    r = CliRunner().invoke(cli, ["report", str(tmp_path / "c")])
    assert r.exit_code == 0, r.output
    html = (tmp_path / "c" / "report.html").read_text()
    assert "Latency CDF per flow" in html
