"""`nandlab rber` and `nandlab ecc`: JSON output carries the model's numbers."""

from __future__ import annotations

import json
from pathlib import Path

from _helpers import run_cli


def test_ecc_json_ratios() -> None:
    res = run_cli("ecc", "--t", "6,12", "--rber", "1e-4", "--json", "-")
    assert res.returncode == 0, res.stderr
    rows = {r.get("t"): r for r in json.loads(res.stdout)["rows"] if r["code"] == "bch"}
    # Decode latency from operation counts (FlexECC eq. 4-5): linear in t.
    ratio = rows[12]["decode_corrupted_us"] / rows[6]["decode_corrupted_us"]
    assert 1.9 < ratio < 2.1
    assert abs(rows[6]["decode_corrupted_us"] - 10.0) < 1e-6  # the reference point
    assert abs(rows[6]["crc_speedup_correct"] - 6.0) < 0.05
    assert abs(rows[12]["crc_speedup_error"] - 24.0) < 0.1
    # A stronger code has a lower UBER at the same RBER.
    assert rows[12]["uber"][0]["uber"] < rows[6]["uber"][0]["uber"]


def test_rber_json_rises_with_pe_and_retention(tmp_path: Path) -> None:
    args = ["rber", "--pe", "1000,6000", "--retention", "0,1mo", "--levels", "normal"]
    res = run_cli(*args, "--cache-dir", str(tmp_path), "--json", "-")
    assert res.returncode == 0, res.stderr
    out = json.loads(res.stdout)
    assert out["table_cache"] == "built"
    v = {(r["pe"], r["retention_s"]): r["rber"] for r in out["rows"]}
    assert v[(6000.0, 0.0)] > v[(1000.0, 0.0)]
    assert v[(6000.0, 2592000.0)] > v[(6000.0, 0.0)]
    assert len(out["soft_sensing"]["cells"]) == 25
    again = json.loads(run_cli(*args, "--cache-dir", str(tmp_path), "--json", "-").stdout)
    assert again["table_cache"] == "hit"
    assert again["rows"] == out["rows"]


def test_rber_bad_level_is_one_line_error(tmp_path: Path) -> None:
    res = run_cli("rber", "--levels", "nunma9", "--cache-dir", str(tmp_path))
    assert res.returncode == 2
    assert "nunma9" in res.stderr and "allowed" in res.stderr
    assert len(res.stderr.strip().splitlines()) == 1
