"""`nandlab reproduce xia-diffecc`: trace selection, the run plan, the tables, the JSON, the CLI.

Most tests stand in for the schemes with `baseline` runs of different program latencies (the
runner's worker function is replaced in-process), so they exercise everything but the schemes
themselves; `test_quick_end_to_end` runs the real `agcr` and `diffecc_wa` once the core has them.
"""

from __future__ import annotations

import functools
import json
import sys
from pathlib import Path
from typing import Any

import pytest
from _helpers import generate
from click.testing import CliRunner

from nandlab import experiment
from nandlab.cli import cli
from nandlab.experiment import TraceDigests, run_key
from nandlab.reproduce import framework as fw
from nandlab.reproduce import xia_diffecc as xia

_REAL_EXECUTE = experiment._execute

#: Program latency (µs) that stands in for each scheme in the fake runs.
FAKE_PROGRAM_US = {"baseline": 1300.0, "agcr": 975.0, "diffecc_wa": 650.0}


def fake_execute(payload: dict[str, Any], program_us: dict[str, float]) -> dict[str, Any]:
    """Run `baseline` with the scheme's stand-in program latency; keep the planned identity."""
    p = dict(payload)
    p["overrides"] = {
        k: v for k, v in payload["overrides"].items() if not k.startswith("scheme.params")
    }
    p["overrides"]["timing.program_us"] = [program_us[payload["scheme"]]]
    p["scheme"] = "baseline"
    row = _REAL_EXECUTE(p)
    row["scheme"] = payload["scheme"]
    return row


@pytest.fixture
def traces_dir(tmp_path: Path) -> Path:
    """A --traces directory holding a small write-heavy stand-in for pgbench_wh."""
    d = tmp_path / "traces"
    d.mkdir()
    generate(
        d / "pgbench_wh.csv",
        requests=3000,
        span_bytes=1 << 30,
        iops=3000.0,
        seed=5,
        write_fraction=0.7,
        sizes_bytes=[8192, 16384],
    )
    return d


def test_select_traces_table_ii_and_ours(tmp_path: Path) -> None:
    (tmp_path / "msr").mkdir()
    (tmp_path / "msr" / "hm_0.csv.gz").write_bytes(b"")
    (tmp_path / "Financial1.spc").write_text("")
    (tmp_path / "CAMRESSDPA03-lvm0.csv").write_text("")  # src2_0, the paper's src0
    sel = xia.TRACES.select([tmp_path], quick=False, max_requests=None)
    names = {t.name: t for t in sel.traces}
    assert names["hm_0"].source == "Table II" and names["hm_0"].path.name == "hm_0.csv.gz"
    assert names["Financial1"].path.name == "Financial1.spc"
    assert names["src2_0"].path.name == "CAMRESSDPA03-lvm0.csv"
    assert names["hm_0"].max_requests is None  # whole traces by default
    capped = xia.TRACES.select([tmp_path], quick=False, max_requests=500_000)
    assert {t.name: t.max_requests for t in capped.traces}["hm_0"] == 500_000
    # excerpts of traces found in full are dropped; WebSearch1's is not in Table II and stays
    assert "hm_0 excerpt" not in names and "Financial1 excerpt" not in names
    assert names["WebSearch1 excerpt"].max_requests is None
    assert len(sel.missing) == 12 and xia.TRACES.missing_key == "missing_table_ii"
    assert "hm_1" in sel.missing and "hm_0" not in sel.missing
    # the MSR volumes' own names (the paper's hm0, src0 ...), as in every reproduction
    assert set(xia.TABLE_II) == {
        "Financial1", "hm_0", "hm_1", "mds_0", "proj_0", "rsrch_0", "rsrch_2", "src2_0",
        "stg_0", "ts_0", "wdev_0", "wdev_2", "web_0", "web_1", "web_3",
    }  # fmt: skip


def test_select_traces_quick(traces_dir: Path) -> None:
    sel = xia.TRACES.select([traces_dir], quick=True, max_requests=None)
    assert [t.name for t in sel.traces] == ["pgbench_wh", "Financial1 excerpt", "hm_0 excerpt"]
    assert sel.traces[0].path == traces_dir / "pgbench_wh.csv"
    assert sel.traces[0].max_requests == xia.QUICK_MAX_REQUESTS


def _main(p: fw.Planned) -> bool:
    return p.variant.name in xia.SCHEMES


def test_plan_runs_counts(traces_dir: Path, tmp_path: Path) -> None:
    sel = xia.TRACES.select([traces_dir], quick=True, max_requests=None)
    runs = fw.plan_runs(xia.REPRODUCTION, sel.traces, True)
    assert sum(_main(r) for r in runs) == 3 * 3
    assert sum(r.variant.name.startswith("m=") for r in runs) == 3
    assert sum(r.variant.name.startswith("n=") for r in runs) == 2
    d = TraceDigests(tmp_path / "d.json")
    keys = {run_key(r.spec, d) for r in runs}
    # m=-1, n=3 of the n sweep is the main diffecc_wa run; 9 FIFO runs (the paper's DiskSim)
    assert len(keys) == 9 + 5 - 1 + 9
    fifo = [r for r in runs if r.variant.name.endswith(" fifo")]
    assert len(fifo) == 9 and all(r.spec.overrides["sched.priority"] == "fifo" for r in fifo)
    assert all(r.spec.overrides["sched.suspension"] is False for r in fifo)
    main = next(r for r in runs if r.variant.name == "diffecc_wa")
    assert main.spec.overrides["scheme.params.m"] == -1
    assert main.spec.overrides["scheme.params.n"] == 3
    base = next(r for r in runs if r.variant.name == "baseline")
    assert not any(k.startswith("scheme.params") for k in base.spec.overrides)

    full = fw.plan_runs(xia.REPRODUCTION, sel.traces, False)
    assert sum(not _main(r) for r in full) == 3 * (9 + 5 + 3)
    assert len({run_key(r.spec, d) for r in full}) == 3 * (3 + 9 + 5 - 2 + 3)


# --------------------------------------------------------------------------- analysis


def _report(mean: float, read: float, write: float, erases: int, **flash: Any) -> dict[str, Any]:
    return {
        "host": {
            "requests": 100,
            "reads": 30,
            "writes": 70,
            "mean_us": mean,
            "read_mean_us": read,
            "write_mean_us": write,
        },
        "flash": {
            "erases": erases,
            "reads_by_ecc": flash.get("by_ecc", {"default": 30, "ldpc_low_cost": 0}),
            "programs_by_mode": flash.get("by_mode", {"normal": 70, "low_cost": 0}),
            "programs_by_source": {"host": 70, "gc": 0},
        },
        "rewrites": flash.get("rewrites", 0),
    }


def _fake_report(p: fw.Planned) -> dict[str, Any]:
    if p.spec.scheme == "baseline":
        return _report(1000, 100, 2000, 10)
    if p.spec.scheme == "agcr":
        return _report(800, 120, 1500, 10)
    # sweep points: the mean is lowest at m = -1 and at n = 3
    axis, _, x = p.variant.name.partition("=")
    penalty = 0 if not x else abs(int(x) - (-1 if axis == "m" else 3)) * 10
    return _report(
        500 + penalty,
        90,
        1000,
        10,
        by_ecc={"default": 20, "ldpc_low_cost": 10},
        by_mode={"normal": 20, "low_cost": 50},
        rewrites=2,
    )


def test_analyse_tables_and_headline(traces_dir: Path) -> None:
    sel = xia.TRACES.select([traces_dir], quick=True, max_requests=None)
    an = fw.analyse_reports(xia.REPRODUCTION, sel.traces, _fake_report, quick=True)
    assert [r["trace"] for r in an.rows] == [
        "pgbench_wh",
        "Financial1 excerpt",
        "hm_0 excerpt",
        "Average",
        "Geo. mean",
    ]
    row = an.rows[0]
    assert row["diffecc_write_norm"] == pytest.approx(0.5)
    assert row["agcr_read_norm"] == pytest.approx(1.2)
    assert row["diffecc_read_vs_agcr"] == pytest.approx(0.75)
    assert row["diffecc_erases_norm"] == pytest.approx(1.0)
    assert row["diffecc_high_cost_reads"] == 10 and row["diffecc_low_cost_writes"] == 50
    assert row["diffecc_rewrites"] == 2
    avg, geo = an.rows[-2], an.rows[-1]
    assert avg["diffecc_write_norm"] == pytest.approx(0.5)
    assert geo["diffecc_write_norm"] == pytest.approx(0.5)
    hl = {h["metric"]: h for h in an.headline}
    assert hl["write response vs normal"]["mean"] == pytest.approx(-50.0)
    assert hl["write response vs normal"]["geomean"] == pytest.approx(-50.0)
    assert hl["write response vs normal"]["paper"] == -48
    assert hl["write response vs normal"]["verdict"] == "matches"  # within ±30 % of -48 %
    assert hl["read response vs AGCR"]["mean"] == pytest.approx(-25.0)
    assert hl["read response vs AGCR"]["traces"] == 3
    assert hl["read response vs AGCR"]["verdict"] == "differs"
    (p,) = xia.param_study(an)["param_study"]
    assert (p["trace"], p["best_m"], p["best_n"]) == ("pgbench_wh", -1, 3)
    assert p["m_default_near_best"] and p["n_default_near_best"]
    fig5 = xia.REPRODUCTION.figures[-2].data(an)["(a) overall"]["pgbench_wh"]
    assert [x for x, y in fig5 if y is not None] == [-2.0, -1.0, 2.0]
    assert an.res.errors == []
    (check,) = an.checks
    assert check["passed"] and check["kind"] == "sanity"
    assert "diffecc_wa mean write response" in check["detail"]


# --------------------------------------------------------------------------- the command


def _invoke_fake(
    monkeypatch: Any, traces_dir: Path, out: Path, program_us: dict[str, float]
) -> Any:
    monkeypatch.setattr(
        experiment, "_execute", functools.partial(fake_execute, program_us=program_us)
    )
    args = ["reproduce", "xia-diffecc", "--quick", "--traces", str(traces_dir)]
    args += ["--out", str(out), "--json", str(out / "xia.json"), "--processes", "1"]
    return CliRunner().invoke(cli, args, catch_exceptions=False)


def test_cli_quick_with_stand_in_schemes(
    monkeypatch: Any, traces_dir: Path, tmp_path: Path
) -> None:
    out = tmp_path / "out"
    res = _invoke_fake(monkeypatch, traces_dir, out, FAKE_PROGRAM_US)
    assert res.exit_code == 0, res.output
    assert "check passed" in res.output
    assert "Headline" in res.output and "-48 %" in res.output
    doc = json.loads((out / "xia.json").read_text())
    assert doc["paper"] == "xia-diffecc"
    assert len(doc["runs"]) == 22
    run = doc["runs"][0]
    assert set(run) >= {"trace", "scheme", "params", "report"}
    assert isinstance(run["params"], dict) and isinstance(run["report"], dict)
    assert run["report"]["host"]["requests"] > 0
    assert {r["scheme"] for r in doc["runs"]} == {"baseline", "agcr", "diffecc_wa"}
    assert [r["trace"] for r in doc["table"]][-2:] == ["Average", "Geo. mean"]
    assert doc["table"][0]["diffecc_write_norm"] < 1.0
    assert [c["passed"] for c in doc["checks"]] == [True]
    # The load-level probes already ran the baselines at the chosen K (same keys).
    assert doc["grid"]["executed"] + doc["grid"]["skipped"] == 22
    for fig in ("fig5_sweep_m", "fig6_sweep_n", "fig7_mean_response", "fig8_read_write_response"):
        for ext in ("png", "svg"):
            assert (out / f"{fig}.{ext}").stat().st_size > 0
    assert (out / "fig9_operation_distribution.png").is_file()

    # re-running the same reproduction skips every finished run
    res2 = _invoke_fake(monkeypatch, traces_dir, out, FAKE_PROGRAM_US)
    assert res2.exit_code == 0, res2.output
    doc2 = json.loads((out / "xia.json").read_text())
    assert (doc2["grid"]["executed"], doc2["grid"]["skipped"]) == (0, 22)
    assert doc2["table"] == doc["table"]


def test_cli_quick_fails_when_direction_is_wrong(
    monkeypatch: Any, traces_dir: Path, tmp_path: Path
) -> None:
    slow = dict(FAKE_PROGRAM_US, diffecc_wa=2600.0)
    res = _invoke_fake(monkeypatch, traces_dir, tmp_path / "out", slow)
    assert res.exit_code == 1
    assert "check FAILED" in res.output and "expected below baseline" in res.output


def test_cli_help_lists_reproduce() -> None:
    res = CliRunner().invoke(cli, ["reproduce", "--help"])
    assert res.exit_code == 0 and "xia-diffecc" in res.output
    res = CliRunner().invoke(cli, ["reproduce", "xia-diffecc", "--help"])
    assert res.exit_code == 0
    for opt in ("--traces", "--quick", "--out", "--json", "--processes", "--scheduler"):
        assert opt in res.output


def test_cli_scheduler_without_dask(traces_dir: Path, tmp_path: Path, monkeypatch: Any) -> None:
    monkeypatch.setitem(sys.modules, "dask.distributed", None)  # as if not installed
    args = ["reproduce", "xia-diffecc", "--quick", "--traces", str(traces_dir)]
    args += ["--out", str(tmp_path / "o"), "--scheduler", "tcp://127.0.0.1:8786"]
    res = CliRunner().invoke(cli, args)
    assert res.exit_code == 2
    assert "pip install 'nandlab[dask]'" in res.output
