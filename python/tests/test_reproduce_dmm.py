"""``nandlab reproduce dmm --quick``: DMMbench (Fig. 39-41) and the captured file-level traces
(Fig. 42-45) on the object device, with the headline beside the thesis's."""

from __future__ import annotations

from pathlib import Path

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
