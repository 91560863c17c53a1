"""Bad input: one clear line on stderr, exit status 2, naming the file/line/field or key."""

from __future__ import annotations

from pathlib import Path

import pytest
from _helpers import run_cli

import nandlab
from nandlab import _core


def _one_error_line(res) -> str:
    assert res.returncode == 2, (res.returncode, res.stdout, res.stderr)
    lines = [ln for ln in res.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1, res.stderr
    assert "Traceback" not in res.stderr
    return lines[0]


@pytest.fixture
def malformed(tmp_path: Path) -> Path:
    p = tmp_path / "bad_trace.csv"
    p.write_text("time_ns,op,offset_bytes,size_bytes\n0,W,0,4096\n1000,W,12x4,4096\n")
    return p


def test_malformed_line_stats(malformed: Path) -> None:
    line = _one_error_line(run_cli("trace", "stats", malformed, "--format", "canonical"))
    assert "bad_trace.csv" in line
    assert "line 3" in line
    assert "offset" in line
    assert "12x4" in line


def test_malformed_line_run(malformed: Path) -> None:
    line = _one_error_line(run_cli("run", "--trace", malformed, "--format", "canonical"))
    assert "bad_trace.csv" in line and "line 3" in line and "offset" in line


def test_malformed_line_python_api(malformed: Path) -> None:
    with pytest.raises(nandlab.TraceError, match="line 3"):
        _core.parse_only(str(malformed), '{"format": "canonical"}')


def test_unknown_op(tmp_path: Path) -> None:
    p = tmp_path / "op.csv"
    p.write_text("0,W,0,4096\n1,Q,0,4096\n")
    line = _one_error_line(run_cli("trace", "stats", p, "--format", "canonical"))
    assert "op.csv" in line and "line 2" in line and "op" in line


def test_missing_trace_file(tmp_path: Path) -> None:
    line = _one_error_line(run_cli("trace", "stats", tmp_path / "nope.csv"))
    assert "nope.csv" in line


def test_missing_trace_file_run(tmp_path: Path) -> None:
    line = _one_error_line(run_cli("run", "--trace", tmp_path / "nope.csv"))
    assert "nope.csv" in line


def test_bad_set_key(small_trace: Path) -> None:
    line = _one_error_line(run_cli("run", "--trace", small_trace, "--set", "device.no_such_key=3"))
    assert "no_such_key" in line


def test_bad_set_value(small_trace: Path) -> None:
    line = _one_error_line(run_cli("run", "--trace", small_trace, "--set", "device.channels=-4"))
    assert "device.channels" in line


def test_set_without_equals(small_trace: Path) -> None:
    line = _one_error_line(run_cli("run", "--trace", small_trace, "--set", "device.channels"))
    assert "device.channels" in line and "key=value" in line


def test_unknown_config_preset(small_trace: Path) -> None:
    line = _one_error_line(run_cli("run", "--trace", small_trace, "--config", "no_such_preset"))
    assert "no_such_preset" in line


def test_bad_toml_config(tmp_path: Path, small_trace: Path) -> None:
    """A TOML syntax error is the one error that keeps its lines: the quoted line with a caret
    under the column (issue 19)."""
    cfg = tmp_path / "broken.toml"
    cfg.write_text("[device\nchannels = 4\n")
    res = run_cli("run", "--trace", small_trace, "--config", cfg)
    assert res.returncode == 2 and "Traceback" not in res.stderr
    lines = res.stderr.splitlines()
    assert "broken.toml" in lines[0] and "line 1, column 8" in lines[0], res.stderr
    assert "1 | [device" in res.stderr, res.stderr
    caret = next(ln for ln in lines if ln.strip().endswith("^"))
    assert caret.index("^") == lines[lines.index(caret) - 1].index("[device") + len("[device")


def test_bad_generator_parameter(tmp_path: Path) -> None:
    with pytest.raises(nandlab.TraceError, match="write_fraction"):
        _core.trace_generate('{"write_fraction": 1.5}', str(tmp_path / "x.csv"))


def test_bad_trace_options_json(tmp_path: Path) -> None:
    with pytest.raises(nandlab.TraceError, match="bogus"):
        _core.parse_only(str(tmp_path / "x.csv"), '{"format": "bogus"}')


def test_exception_hierarchy() -> None:
    assert issubclass(nandlab.TraceError, ValueError)
    assert issubclass(nandlab.ConfigError, ValueError)
    assert issubclass(nandlab.SimError, RuntimeError)
    assert nandlab.TraceError is _core.TraceError


# --- issue 28: the smaller items -----------------------------------------------------------


def test_report_of_a_damaged_runs_parquet_is_one_line(tmp_path: Path) -> None:
    out = tmp_path / "sweep"
    out.mkdir()
    (out / "runs.parquet").write_bytes(b"PAR1\x00\x01truncated")
    line = _one_error_line(run_cli("report", out))
    assert "runs.parquet" in line and "move it away" in line


@pytest.mark.parametrize("kind", ["directory", "loop"])
def test_a_config_that_is_not_a_file_says_what_it_is(
    tmp_path: Path, small_trace: Path, kind: str
) -> None:
    p = tmp_path / "cfg.toml"
    if kind == "directory":
        p.mkdir()
    else:
        p.symlink_to(tmp_path / "cfg2.toml")
        (tmp_path / "cfg2.toml").symlink_to(p)
    line = _one_error_line(run_cli("run", "-c", p, "--trace", small_trace))
    assert str(p) in line
    assert ("a directory" if kind == "directory" else "a symlink loop") in line
    assert "not found" not in line


def test_setup_progress_is_shown_in_a_ci_log(tmp_path: Path) -> None:
    """`--progress` without a terminal prints lines for the set-up stages too (issue 28: a
    preconditioning of seconds showed nothing)."""
    import os
    import subprocess
    import sys

    env = {**os.environ, "NANDLAB_PROGRESS_INTERVAL_S": "0.01"}
    p = subprocess.run(
        [sys.executable, "-m", "nandlab", "run", "--progress", "--json", str(tmp_path / "r.json")],
        capture_output=True,
        text=True,
        env=env,
        timeout=600,
    )
    assert p.returncode == 0, p.stderr
    assert "preconditioning (untimed)" in p.stderr, p.stderr
    assert "page writes" in p.stderr


def test_bad_toml_grid(tmp_path: Path) -> None:
    """A TOML syntax error in a sweep grid reads like one in a config: file, line and column,
    then the line with a caret under the column (issue 33)."""
    grid = tmp_path / "grid.toml"
    grid.write_text('configs = ["default"]\nschemes = ["baseline"\ntraces = ["x"]\n')
    res = run_cli("sweep", grid)
    assert res.returncode == 2 and "Traceback" not in res.stderr, res.stderr
    lines = res.stderr.splitlines()
    assert "grid.toml" in lines[0] and "TOML parse error at line 3, column" in lines[0], lines
    shown = next(ln for ln in lines if ln.startswith("3 | "))
    caret = lines[lines.index(shown) + 1]
    col = int(lines[0].split("column ", 1)[1].split(":")[0])
    assert caret.rstrip().endswith("^"), caret
    assert caret.index("^") == shown.index("|") + 2 + col - 1, (shown, caret)
