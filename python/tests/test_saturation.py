"""Saturated runs are flagged (issue 33, item 2): every report carries the load block,
`nandlab run` warns on stderr, `nandlab compare` marks the overloaded columns and says which
ratios are queueing. The bundled slice on Xia & Xiao's drive (8 dies) at its own speed is
saturated (die utilisation 0.74, queue wait > 99 % of the response)."""

from __future__ import annotations

import json
from pathlib import Path

from _helpers import run_cli

import nandlab
from nandlab.load import load_block


def test_run_warns_and_reports_overloaded(tmp_path: Path) -> None:
    out = tmp_path / "r.json"
    res = run_cli("run", "-c", "xia-diffecc", "-t", "pgbench_rw_slice", "--json", out)
    assert res.returncode == 0, res.stderr
    warnings = [ln for ln in res.stderr.splitlines() if ln.startswith("warning:")]
    assert len(warnings) == 1, res.stderr
    w = warnings[0]
    assert "saturated" in w and "--set host.time_scale=" in w and "queueing" in w
    rep = json.loads(out.read_text())
    assert rep["load"]["overloaded"] is True
    assert rep["load"]["wait_share"] > 0.8 and rep["load"]["suggested_time_scale"] >= 2
    assert "overloaded (latencies = queueing)" in res.stdout
    # slowed down as the warning says, the same trace is not
    k = rep["load"]["suggested_time_scale"]
    res = run_cli(
        "run", "-c", "xia-diffecc", "-t", "pgbench_rw_slice", "--set", "host.time_scale=20", "-q"
    )
    assert res.returncode == 0 and "warning" not in res.stderr, res.stderr
    assert k <= 20


def test_unsaturated_run_is_quiet() -> None:
    r = nandlab.simulate("xia-diffecc", "msr_hm_0_sample1000")
    assert r.report["load"]["overloaded"] is False
    assert r.report["load"] == load_block(r.report)


def test_compare_marks_overloaded_columns(tmp_path: Path) -> None:
    res = run_cli(
        "compare", "-c", "xia-diffecc", "-t", "pgbench_rw_slice", "-s", "baseline,diffecc_wa",
        "--out", tmp_path / "cmp", "--json", tmp_path / "c.json",
    )  # fmt: skip
    assert res.returncode == 0, res.stderr
    assert "OVERLOADED" in res.stdout and "x*)" in res.stdout
    assert "queueing" in res.stderr and "baseline" in res.stderr
    rows = json.loads((tmp_path / "c.json").read_text())["rows"]
    assert [r["overloaded"] for r in rows] == [True, True]
    assert all(r["overload_reason"] for r in rows)


def test_cache_layer_counts_are_named(tmp_path: Path) -> None:
    """Behind the cache layer, the device's requests are SSD operations: `run` says so."""
    res = run_cli("run", "-c", "flexecc", "-t", "msr_hm_0_sample1000")
    assert res.returncode == 0, res.stderr
    assert "trace requests (into the cache layer)" in res.stdout
    assert "SSD operations (from the cache layer)" in res.stdout
    assert "host requests " not in res.stdout
