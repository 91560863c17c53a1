"""The strict trace input of issue 28 from the front end: a file cut inside its last number is a
one-line error naming `--allow-unterminated`; with it the line is read as written, with a
one-line warning and the report's counter (docs/traces.md)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from _helpers import run_cli

import nandlab

#: A canonical trace cut inside the size of its last request (was 16384 bytes).
CUT = "time_ns,op,offset_bytes,size_bytes\n0,R,16903168000,8192\n1000,W,8192,16"


@pytest.fixture
def cut_trace(tmp_path: Path) -> Path:
    p = tmp_path / "cut.csv"
    p.write_text(CUT)
    return p


def _lines(text: str) -> list[str]:
    return [ln for ln in text.splitlines() if ln.strip()]


@pytest.mark.parametrize("cmd", [["run", "--trace"], ["trace", "stats"]])
def test_a_cut_last_number_is_one_error_line(cmd: list[str], cut_trace: Path) -> None:
    extra = ["--no-progress"] if cmd[0] == "run" else ["--json", "-"]
    res = run_cli(*cmd, cut_trace, *extra)
    assert res.returncode == 2, res.stderr
    assert len(_lines(res.stderr)) == 1, res.stderr
    (line,) = _lines(res.stderr)
    assert line.startswith("error:")
    for part in ("cut.csv", "line 3", '"16"', "no line ending", "--allow-unterminated"):
        assert part in line, line


def test_allow_unterminated_reads_it_as_written_with_a_warning(
    cut_trace: Path, tmp_path: Path
) -> None:
    out = tmp_path / "r.json"
    res = run_cli("run", "--trace", cut_trace, "--allow-unterminated", "--json", out, "-q")
    assert res.returncode == 0, res.stderr
    assert len(_lines(res.stderr)) == 1, res.stderr
    (line,) = _lines(res.stderr)
    assert line.startswith("warning:") and "cut.csv" in line and "line 3" in line, line
    report = json.loads(out.read_text())
    assert report["trace"]["counters"]["unterminated_last_line"] == 1
    assert report["host"]["write_bytes"] == 16  # as written, and said so
    res = run_cli("trace", "stats", cut_trace, "--allow-unterminated", "--json", "-")
    assert res.returncode == 0, res.stderr
    assert json.loads(res.stdout)["counters"]["unterminated_last_line"] == 1
    assert "warning:" in res.stderr
    conv = tmp_path / "c.csv"
    res = run_cli("trace", "convert", cut_trace, conv, "--allow-unterminated")
    assert res.returncode == 0, res.stderr
    assert conv.read_text().splitlines()[-1] == "1000,W,8192,16"


def test_simulate_takes_allow_unterminated(cut_trace: Path) -> None:
    with pytest.raises(nandlab.TraceError, match="allow-unterminated"):
        nandlab.simulate("default", cut_trace, overrides={"precondition.fill": "none"})
    r = nandlab.simulate(
        "default", cut_trace, overrides={"precondition.fill": "none"}, allow_unterminated=True
    )
    assert r.report["trace"]["counters"]["unterminated_last_line"] == 1


def test_a_complete_file_has_no_warning_and_no_counter(tmp_path: Path) -> None:
    p = tmp_path / "ok.csv"
    p.write_text(CUT + "384\n")
    out = tmp_path / "r.json"
    res = run_cli("run", "--trace", p, "--json", out, "-q")
    assert res.returncode == 0 and not res.stderr.strip(), res.stderr
    counters = json.loads(out.read_text())["trace"]["counters"]
    assert "unterminated_last_line" not in counters
