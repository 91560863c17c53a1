"""`nandlab trace stats` on a hand-written trace with known answers.

Pages at 8 KiB (see _helpers.TINY_CANONICAL):
  write-only {0, 1, 8}, read-only {4, 5}, overlapped {2, 6}  -> 3/7, 2/7, 2/7 of 7 pages;
  page accesses: write-only 3, read-only 2, overlapped 4     -> 3/9, 2/9, 4/9.
At 16 KiB pages: write-only {0, 4}, read-only {2}, overlapped {1, 3} -> 2/5, 1/5, 2/5.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from _helpers import run_cli

from nandlab.cli import cli


def _stats(runner, trace: Path, tmp_path: Path, *args: str) -> dict:
    out = tmp_path / "stats.json"
    res = runner.invoke(cli, ["trace", "stats", str(trace), "--json", str(out), *args])
    assert res.exit_code == 0, res.output
    return json.loads(out.read_text())


def test_known_answers_8k(runner, tiny_trace: Path, tmp_path: Path) -> None:
    s = _stats(runner, tiny_trace, tmp_path)
    assert s["requests"] == 8
    assert s["reads"] == 4 and s["writes"] == 4
    assert s["read_ratio"] == pytest.approx(0.5)
    assert s["mean_size_kib"] == pytest.approx(8.5)
    assert s["page_size_bytes"] == 8192
    assert s["pages_touched"] == 7
    assert (s["write_only_pages"], s["read_only_pages"], s["overlapped_pages"]) == (3, 2, 2)
    assert s["write_only_frac"] == pytest.approx(3 / 7)
    assert s["read_only_frac"] == pytest.approx(2 / 7)
    assert s["overlapped_frac"] == pytest.approx(2 / 7)
    assert s["page_accesses"] == 9
    assert s["write_only_access_frac"] == pytest.approx(3 / 9)
    assert s["read_only_access_frac"] == pytest.approx(2 / 9)
    assert s["overlapped_access_frac"] == pytest.approx(4 / 9)
    assert s["address_space_gib"] == pytest.approx(73728 / 2**30)


def test_page_size_option_honoured(runner, tiny_trace: Path, tmp_path: Path) -> None:
    s = _stats(runner, tiny_trace, tmp_path, "--page-size-bytes", "16384", "--format", "canonical")
    assert s["pages_touched"] == 5
    assert s["write_only_frac"] == pytest.approx(2 / 5)
    assert s["read_only_frac"] == pytest.approx(1 / 5)
    assert s["overlapped_frac"] == pytest.approx(2 / 5)


def test_table_output(tiny_trace: Path) -> None:
    res = run_cli("trace", "stats", tiny_trace)
    assert res.returncode == 0, res.stderr
    for field in ("requests", "read_ratio", "read_only_frac", "overlapped_frac"):
        assert field in res.stdout
    assert "28.57 %" in res.stdout  # 2/7 read-only pages


def test_json_to_stdout(tiny_trace: Path) -> None:
    res = run_cli("trace", "stats", tiny_trace, "--json", "-")
    assert res.returncode == 0, res.stderr
    assert json.loads(res.stdout)["requests"] == 8


def test_convert_roundtrip(runner, tiny_trace: Path, tmp_path: Path) -> None:
    out = tmp_path / "conv.csv.gz"
    res = runner.invoke(cli, ["trace", "convert", str(tiny_trace), str(out)])
    assert res.exit_code == 0, res.output
    assert _stats(runner, out, tmp_path)["overlapped_pages"] == 2
