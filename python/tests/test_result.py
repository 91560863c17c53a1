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
    from nandlab.cli import summary_rows

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


def test_saturation_note() -> None:
    from nandlab.cli import saturation_note

    busy = {
        "host": {"wait": {"all": {"mean_us": 5000.0}}, "service": {"all": {"mean_us": 100.0}}},
        "flash": {"die_utilization": 0.93},
        "device": {"dies": 8},
    }
    note = saturation_note(busy)
    assert note is not None and "50x" in note and "93 %" in note
    calm = {"host": {"wait": {"all": {"mean_us": 10.0}}, "service": {"all": {"mean_us": 100.0}}}}
    assert saturation_note(calm) is None
