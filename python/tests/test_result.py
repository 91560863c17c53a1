"""RunResult on a synthetic report (pure Python)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from nandlab.result import STABLE_KEYS, RunResult, flatten, lookup

REPORT = {
    "host": {
        "requests": 10,
        "reads": 4,
        "writes": 6,
        "mean_us": 100.5,
        "read_mean_us": 50.0,
        "write_mean_us": 134.0,
        "read_p99_us": 80.0,
        "write_p99_us": 300.0,
        "all": {"p50_us": 90.0, "p99.9_us": 400.0, "max_us": 410.0},
    },
    "flash": {"reads": 5, "programs": 12, "erases": 1},
    "gc": {"invocations": 1, "pages_moved": 3},
    "write_amplification": 2.0,
    "timing": {"wall_s": 0.01, "host_requests_per_s": 1000.0},
    "wear": {"erase_count_hist": [0, 1, 0]},
}


def test_flatten_and_lookup() -> None:
    flat = flatten(REPORT)
    assert flat["host.requests"] == 10
    assert flat["host.all.p99.9_us"] == 400.0
    assert flat["wear.erase_count_hist"] == [0, 1, 0]
    assert lookup(REPORT, "gc.pages_moved") == 3
    assert lookup(REPORT, "host.all.p99.9_us") == 400.0
    assert lookup(REPORT, "nope.x") is None


def test_summary_has_stable_keys_and_percentiles() -> None:
    s = RunResult(REPORT).summary
    for k in STABLE_KEYS:
        assert k in s
    assert s["flash.programs"] == 12
    assert s["host.all.p50_us"] == 90.0
    assert s["host.all.p99.9_us"] == 400.0


def test_to_frame_one_row() -> None:
    df = RunResult(REPORT).to_frame()
    assert df.height == 1
    assert "host.mean_us" in df.columns
    assert df["gc.pages_moved"][0] == 3


def test_to_json_roundtrip(tmp_path: Path) -> None:
    r = RunResult(REPORT, trace=Path("t.csv"))
    p = tmp_path / "r.json"
    text = r.to_json(p)
    assert json.loads(text) == REPORT == json.loads(p.read_text())
    assert "t.csv" in repr(r) and "requests=10" in repr(r)
    assert r["host.reads"] == 4
    with pytest.raises(KeyError):
        r["host.nothing"]


def test_cli_summary_rows_from_report_layout() -> None:
    from nandlab.cli.run import summary_rows

    def lat(m: float) -> dict:
        return {"mean_us": m, "p50_us": m, "p90_us": m, "p99_us": m, "p999_us": m, "max_us": m}

    rep = {
        **REPORT,
        "host": {
            **REPORT["host"],
            "all": lat(1.0),
            "read": lat(2.0),
            "write": lat(3.0),
            "wait": {"all": lat(0.5)},
            "service": {"all": lat(0.75)},
        },
        "wear": {"erase_count": {"min": 0, "mean": 0.5, "max": 2}},
        "sim_time_ns": 2_500_000_000,
    }
    rows = dict(summary_rows(rep))
    assert rows["host requests"] == "10"
    # mean and p99 come from the stable fields host.write_mean_us / host.write_p99_us
    write_row = rows["response write µs (mean/p50/p90/p99/p99.9/max)"].split(" / ")
    assert write_row == ["134.000", "3.000", "3.000", "300.000", "3.000", "3.000"]
    assert rows["mean queue wait / service µs"] == "0.500 / 0.750"
    assert rows["flash reads / programs / erases"] == "5 / 12 / 1"
    assert rows["erase count min / mean / max"] == "0 / 0.500 / 2"
    assert rows["simulated span s"] == "2.500"
    assert rows["write amplification"] == "2.000"


def test_saturation_warning() -> None:
    from nandlab.load import load_block, saturation_warning

    busy = {
        "host": {
            "mean_us": 5100.0,
            "reads": 10,
            "writes": 10,
            "wait": {"read": {"mean_us": 5000.0}, "write": {"mean_us": 5000.0}},
        },
        "flash": {"die_utilization": 0.93},
        "sim": {"span_s": 10.0, "last_completion_s": 10.0, "last_arrival_s": 5.0},
        "config": {"host": {"time_scale": 1.0}},
    }
    ld = load_block(busy)
    assert ld["overloaded"] is True and ld["die_utilization"] == 0.93
    assert ld["offered_die_load"] == 0.93 * 10 / 5 and ld["wait_share"] > 0.9
    assert ld["suggested_time_scale"] == 20.0  # 1.86 / 20 <= 15 %
    busy["load"] = ld
    warning = saturation_warning(busy)
    assert warning is not None and "\n" not in warning
    assert "die utilisation 93%" in warning and "--set host.time_scale=20" in warning
    calm = {
        "host": {"mean_us": 110.0, "reads": 1, "writes": 0, "wait": {"read": {"mean_us": 10.0}}},
        "flash": {"die_utilization": 0.05},
        "sim": {"span_s": 10.0, "last_completion_s": 10.0, "last_arrival_s": 10.0},
    }
    assert load_block(calm)["overloaded"] is False and saturation_warning(calm) is None
    # two requests a microsecond apart say nothing about the device's load: not judged
    tiny = {**busy, "host": {**busy["host"], "requests": 2}}
    del tiny["load"]
    assert load_block(tiny)["overloaded"] is None and saturation_warning(tiny) is None
    assert "not judged" in load_block(tiny)["overload_reason"]
