"""The load-level methodology shared by every ``nandlab reproduce`` command
(:mod:`nandlab.reproduce.load`): time-scale parsing, the automatic choice from the baseline's
offered die load, the overloaded flag and the headline means."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import click
import pytest
from click.testing import CliRunner

import nandlab
from nandlab.cli import cli
from nandlab.data import data_dir
from nandlab.reproduce import load


def test_parse_time_scales() -> None:
    assert load.parse_time_scales("auto") == ["auto"]
    assert load.parse_time_scales("1, 10,100,10") == [1.0, 10.0, 100.0]
    assert load.parse_time_scales("auto,1") == ["auto", 1.0]
    for bad in ("", "x", "0", "-1", "2e6", "nan"):
        with pytest.raises(click.BadParameter):
            load.parse_time_scales(bad)


def test_auto_scale_follows_the_1_2_5_series() -> None:
    assert load.auto_scale(None) == 1.0
    assert load.auto_scale(0.15) == 1.0
    assert load.auto_scale(0.16) == 2.0
    assert load.auto_scale(1.6) == 20.0  # 1.6 / 20 = 8 %; / 10 = 16 % is above the band
    assert load.auto_scale(12.0) == 100.0
    ks = [1.0]
    for _ in range(6):
        ks.append(load.next_scale(ks[-1]))
    assert ks == [1.0, 2.0, 5.0, 10.0, 20.0, 50.0, 100.0]


def _rep(util: float, wait_us: float, mean_us: float, span: float = 10.0) -> dict[str, Any]:
    return {
        "config": {"host": {"time_scale": 1.0}},
        "flash": {"die_utilization": util},
        "sim": {"span_s": span, "last_arrival_s": span, "last_completion_s": span},
        "host": {
            "mean_us": mean_us,
            "reads": 1,
            "writes": 1,
            "wait": {"read": {"mean_us": wait_us}, "write": {"mean_us": wait_us}},
        },
    }


def test_load_info_flags_saturation_and_queue_wait() -> None:
    ok = load.load_info(_rep(0.1, 10.0, 100.0))
    assert ok["overloaded"] is False and ok["die_utilization"] == pytest.approx(0.1)
    busy = load.load_info(_rep(0.9, 10.0, 100.0))
    assert busy["overloaded"] is True and "utilisation" in busy["overload_reason"]
    waiting = load.load_info(_rep(0.3, 90.0, 100.0))
    assert waiting["overloaded"] is True and "queue wait" in waiting["overload_reason"]
    assert load.load_info(None)["overloaded"] is None


def test_summaries_leave_out_overloaded_traces() -> None:
    s = load.summarise_ratios({"a": 0.5, "b": 2.0, "c": 0.1}, {"c": True})
    assert s["n"] == 2 and s["overloaded"] == ["c"]
    assert s["mean"] == pytest.approx(1.25)
    assert s["geomean"] == pytest.approx(1.0)
    rows = load.headline_rows(
        [("write", "-48 %", "w")],
        {"w": {"a": 0.5, "b": 0.5, "c": 0.1}},
        {"c": True},
        {"auto": ["a", "b", "c"]},
    )
    assert rows[0]["ours_mean"] == pytest.approx(-0.5)
    assert rows[0]["overloaded"] == ["c"] and rows[0]["traces"] == 2


def test_dense_capture_at_time_scale_1_is_flagged() -> None:
    """The bundled pgbench_rw slice (a piece of the captured PostgreSQL trace, ~4,400 IOPS) on
    Xia & Xiao's device: at its own speed the baseline is saturated and flagged; stretched 20x
    it is not."""
    trace = data_dir() / "pgbench_rw_slice.csv.gz"
    k1 = load.load_info(nandlab.simulate("xia-diffecc", trace).report)
    assert k1["overloaded"] is True, k1
    k20 = load.load_info(
        nandlab.simulate("xia-diffecc", trace, overrides={"host.time_scale": 20}).report
    )
    assert k20["overloaded"] is False, k20
    assert k20["offered_die_load"] == pytest.approx(k1["offered_die_load"] / 20, rel=0.05)


def test_ida_quick_at_two_load_levels(tmp_path: Path) -> None:
    """`--time-scale 1,10`: one instance per level, each with its utilisation and flag in the
    JSON, and one headline group per level."""
    out, js = tmp_path / "out", tmp_path / "ida.json"
    res = CliRunner().invoke(
        cli,
        ["reproduce", "ida", "--quick", "--time-scale", "1,10", "--out", str(out),
         "--json", str(js), "-j", "2", "--max-requests", "5000"],
    )  # fmt: skip
    assert res.exit_code == 0, res.output
    doc = json.loads(js.read_text())
    names = [r["trace"] for r in doc["table"]]
    assert names == ["WebSearch1 excerpt K=1", "WebSearch1 excerpt K=10"]
    for r in doc["table"]:
        assert r["overloaded"] is False and r["die_utilization"] is not None
    assert doc["table"][1]["time_scale"] == 10.0
    assert {h["level"] for h in doc["headline"]} >= {"K=1", "K=10"}
    assert set(doc["loads"]) == set(names)
    # Every run carries its own utilisation and flag.
    for run in doc["runs"]:
        assert run["load"]["overloaded"] in (True, False)
        assert run["load"]["die_utilization"] is not None
