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
    "wall_s": 0.01,
    "host_requests_per_s": 1000.0,
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
