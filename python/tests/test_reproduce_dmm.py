"""``nandlab reproduce dmm --quick``: DMMbench (Fig. 39-41) and the captured file-level traces
(Fig. 42-45) on the object device, with the headline beside the thesis's."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from _helpers import run_cli

from nandlab.experiment import shared_traces_dir
from nandlab.reproduce.dmm import TRACE_PATTERNS, blocks_for, find_traces


def test_blocks_for_fills_70_percent() -> None:
    per_block = 16 * 256 * 2048
    b = blocks_for(3_218_494_972)
    assert b % 4 == 0
    assert 0.66 < 3_218_494_972 / (b * per_block) <= 0.70
    assert blocks_for(1) == 64  # the smallest device


def test_find_traces_by_real_names(tmp_path: Path) -> None:
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "TPCC_fs.jsonl.gz").write_bytes(b"")
    (tmp_path / "devtree_fs.jsonl").write_text("")
    found = find_traces([tmp_path])
    assert set(found) == {"TPCC", "devtree_fs"}
    assert set(TRACE_PATTERNS) >= {"pgbench_rw_fs", "devtree_fs", "DVORAK", "iMOVIE"}


def test_quick_reproduction(tmp_path: Path) -> None:
    d = shared_traces_dir()
    if d is None or not (d / "pgbench_rw_fs.jsonl.gz").is_file():
        pytest.skip("captured file-level traces not available")
    out = tmp_path / "out"
    res = run_cli("reproduce", "dmm", "--quick", "--out", out, timeout=300)
    assert res.returncode == 0, res.stderr
    for title in ("Fig. 39/40", "Fig. 41", "Headline", "Checks"):
        assert title in res.stdout
    r = json.loads((out / "result.json").read_text())
    assert set(r["traces"]) >= {"pgbench_rw_fs", "devtree_fs"}
    assert r["thesis_headline"]["page_writes_vs_obfs"] == -0.25
    pg = r["trace_results"]["pgbench_rw_fs"]
    assert 0.6 < pg["fill"] <= 0.70
    assert pg["runs"]["obfs"]["commands"] == 20_000
    assert set(r["headline"]["per_trace"]) >= {"pgbench_rw_fs", "devtree_fs"}
    for fig in ("fig39", "fig40", "fig41", "fig42", "fig43", "fig44", "fig45"):
        assert (out / f"{fig}.png").is_file(), fig
    names = {c["check"] for c in r["checks"]}
    assert "write response falls 4 -> 8 -> 16 channels (F41)" in names
    bands = [c for c in r["checks"] if c["check"].startswith("OBFS ")]
    assert len(bands) == 3 and all(c["pass"] in (True, False) for c in bands), bands
    # a second run takes every report from the cache
    res = run_cli("reproduce", "dmm", "--quick", "--out", out, "--json", "-", timeout=300)
    assert res.returncode == 0, res.stderr
    again = json.loads(res.stdout)
    assert again["runs"]["executed"] == 0 and again["runs"]["cached"] == r["runs"]["executed"]
    assert again["headline"] == r["headline"]
