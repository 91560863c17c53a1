"""``nandlab osd``: file-level traces on the object device (Guo ch. 4) from Python and the CLI."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from _helpers import run_cli

import nandlab
from nandlab import osd
from nandlab.experiment import shared_traces_dir

#: A small file-level trace: a pre-existing file (first op is not create), a new file written
#: and fsynced, a rename over an existing target, a delete of an unknown path.
TINY_FS = "\n".join(
    [
        '{"t_ns":0,"op":"open","path":"db/old","offset":null,"size":null,"pid":1,"lat_ns":1}',
        '{"t_ns":1000,"op":"read","path":"db/old","offset":0,"size":8192,"pid":1,"lat_ns":1}',
        '{"t_ns":2000,"op":"create","path":"db/new","offset":null,"size":null,"pid":1,"lat_ns":1}',
        '{"t_ns":3000,"op":"write","path":"db/new","offset":0,"size":20000,"pid":1,"lat_ns":1}',
        '{"t_ns":4000,"op":"fsync","path":"db/new","offset":null,"size":null,"pid":1,'
        '"lat_ns":1,"kind":"fsync"}',
        '{"t_ns":5000,"op":"rename","path":"db/new","new_path":"db/old","offset":null,'
        '"size":null,"pid":1,"lat_ns":1}',
        '{"t_ns":6000,"op":"delete","path":"db/ghost","offset":null,"size":null,"pid":1,'
        '"lat_ns":1}',
        '{"t_ns":7000,"op":"write","path":"db/old","offset":65536,"size":4096,"pid":1,"lat_ns":1}',
    ]
)


@pytest.fixture
def tiny(tmp_path: Path) -> Path:
    p = tmp_path / "tiny_fs.jsonl"
    p.write_text(TINY_FS + "\n")
    return p


def test_run_reports_device_and_host_layer(tiny: Path) -> None:
    rep = osd.run("obfs", tiny)
    assert rep["design"]["name"] == "obfs"
    fs = rep["objfs"]
    assert fs["preconditioned_objects"] == 1
    assert fs["preconditioned_bytes"] == 8192
    assert fs["deletes_skipped"] == 1
    assert fs["renames_over_existing"] == 1
    assert fs["writebacks_fsync"] == 1 and fs["writebacks_end"] == 1
    # the measured commands are the timed ones objfs sent
    assert rep["commands"] == sum(fs["commands"].values())
    assert rep["commands_by_type"]["remove"] == 1
    assert rep["page_writes"]["data"]["host"] > 0
    assert rep["trace"]["records"] == 8
    assert rep["precondition"]["commands"] == 2  # CREATE + one WRITE of 8 KiB


def test_run_is_deterministic_and_designs_differ(tiny: Path) -> None:
    a = osd.run("dmm", tiny)
    b = osd.run("dmm", tiny)
    for r in (a, b):
        r.pop("wall_s")
        r.pop("commands_per_s")
    assert a == b
    y = osd.run("yaffs2", tiny)
    assert y["design"]["name"] == "yaffs2"
    assert y["page_writes"]["index"]["total"] == 0  # YAFFS2 keeps its file index in RAM


def test_objfs_overrides_apply(tiny: Path) -> None:
    rep = osd.run("obfs", tiny, overrides={"objfs.host_cache": "sync", "objfs.atime": "noatime"})
    fs = rep["objfs"]
    assert fs["writebacks_fsync"] == 0 and fs["host_dirty_peak_bytes"] == 0
    assert fs["commands"]["set_attr"] >= 2  # each write's size/mtime update at once


def test_bad_objfs_key_is_a_config_error(tiny: Path) -> None:
    with pytest.raises(nandlab.ConfigError, match="atime"):
        osd.run("obfs", tiny, overrides={"objfs.atime": "sometimes"})


def test_block_config_is_refused(tiny: Path) -> None:
    with pytest.raises(nandlab.ConfigError, match=r"\[osd\]"):
        osd.run("default", tiny)


def test_malformed_trace_is_one_line_error(tmp_path: Path) -> None:
    p = tmp_path / "broken_fs.jsonl"
    p.write_text(TINY_FS.splitlines()[0] + '\n{"t_ns":5,"op":"read","path":"x","offset":-3}\n')
    with pytest.raises(nandlab.TraceError, match=r"broken_fs.jsonl: line 2: field `offset`"):
        osd.run("obfs", p)
    res = run_cli("osd", "run", "-c", "obfs", "--trace", p)
    assert res.returncode == 2, (res.stdout, res.stderr)
    lines = [ln for ln in res.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1 and "Traceback" not in res.stderr, res.stderr
    assert "broken_fs.jsonl" in lines[0] and "line 2" in lines[0] and "offset" in lines[0]
    res = run_cli("osd", "stats", p)
    assert res.returncode == 2 and "line 2" in res.stderr


def test_cli_run_json_and_tables(tiny: Path, tmp_path: Path) -> None:
    out = tmp_path / "r.json"
    res = run_cli("osd", "run", "-c", "dmm", "--trace", tiny, "--json", out)
    assert res.returncode == 0, res.stderr
    rep = json.loads(out.read_text())
    assert rep["design"]["name"] == "dmm"
    for title in ("page writes by type and source", "response time per command", "DRAM use"):
        assert title in res.stdout
    res = run_cli("osd", "run", "-c", "obfs", "--trace", tiny, "--json", "-")
    assert res.returncode == 0, res.stderr
    assert json.loads(res.stdout)["design"]["name"] == "obfs"


def test_cli_stats(tiny: Path) -> None:
    res = run_cli("osd", "stats", tiny, "--json", "-")
    assert res.returncode == 0, res.stderr
    st = json.loads(res.stdout)
    assert st["files"] == 2 and st["writes"] == 2 and st["reads"] == 1
    assert st["preexisting_paths"] == 2  # db/old and db/ghost


def _captured(name: str) -> Path:
    d = shared_traces_dir()
    p = d / name if d is not None else None
    if p is None or not p.is_file():
        pytest.skip(f"{name} not available")
    return p


def test_captured_trace_prefix_runs() -> None:
    p = _captured("pgbench_rw_fs.jsonl.gz")
    rep = osd.run("dmm", p, max_commands=3000)
    assert rep["commands"] == 3000
    assert rep["objfs"]["preconditioned_objects"] == 201
    st = osd.trace_stats(p)
    assert st["files"] == 150 and abs(st["write_percent"] - 46.3) < 0.05


def test_bench_runs_dmmbench() -> None:
    rep = osd.bench("obfs", "seq_write", 4096, 1 << 20)
    assert rep["bench"]["pattern"] == "seq_write"
    # 256 accesses, each GET_ATTRIBUTE + WRITE + SET_ATTRIBUTE
    assert rep["commands_by_type"]["write"] == 256
    assert rep["commands_by_type"]["get_attr"] == 256
    assert rep["page_writes"]["data"]["gc"] == 0
    with pytest.raises(nandlab.ConfigError, match="pattern"):
        osd.bench("obfs", "zigzag", 4096, 1 << 20)


def test_cli_bench(tmp_path: Path) -> None:
    res = run_cli("osd", "run", "-c", "dmm", "--bench", "rand_read:4KiB:256KiB", "--json", "-")
    assert res.returncode == 0, res.stderr
    rep = json.loads(res.stdout)
    assert rep["bench"]["pattern"] == "rand_read" and rep["commands_by_type"]["read"] == 64
    res = run_cli("osd", "run", "--bench", "zigzag")
    assert res.returncode == 2 and "seq_write" in res.stderr
    res = run_cli("osd", "run")
    assert res.returncode == 2 and "exactly one" in res.stderr


def test_crash_test_full_and_broken() -> None:
    rep = osd.crash_test("dmm", bench=("rand_write", 4096, 256 << 10), cuts=20, seed=3)
    assert rep["cuts"] == 20 and rep["failures"] == 0, rep.get("failure_examples")
    assert rep["variant_name"] == "full"
    with pytest.raises(nandlab.ConfigError, match="variant"):
        osd.crash_test("dmm", cuts=1, variant="sloppy")


def test_crash_test_cut_only_targets_one_class_of_operation() -> None:
    bench = ("rand_write", 4096, 256 << 10)
    rep = osd.crash_test("obfs", bench=bench, cuts=10, seed=3, cut_only="program_onode")
    assert rep["cut_only"] == "program_onode" and rep["cuts"] == 10
    assert 0 < rep["cut_candidates"] < rep["flash_ops"]
    assert set(rep["cuts_by_op"]) == {"program_onode_host"}, rep["cuts_by_op"]
    with pytest.raises(nandlab.ConfigError, match="the window has program_data_host"):
        osd.crash_test("obfs", bench=bench, cuts=1, cut_only="program_nothing")
    res = run_cli(
        "osd",
        "crash-test",
        "-c",
        "obfs",
        "--bench",
        "rand_write:4KiB:64KiB",
        "--cuts",
        "3",
        "--cut-only",
        "program_index",
    )
    assert res.returncode == 0, res.stderr
    assert "of a class containing 'program_index'" in res.stdout


def test_crash_test_cli_on_a_trace(tiny: Path) -> None:
    res = run_cli("osd", "crash-test", "-c", "obfs", "--trace", tiny, "--cuts", "10", "--json", "-")
    assert res.returncode == 0, res.stderr
    rep = json.loads(res.stdout)
    assert rep["cuts"] == 10 and rep["failures"] == 0
    assert rep["objfs"]["preconditioned_objects"] == 1


@pytest.mark.parametrize(
    "cmd",
    [["osd", "run", "--trace"], ["osd", "crash-test", "--cuts", "5", "--trace"], ["osd", "stats"]],
)
def test_an_empty_trace_is_an_error_as_for_a_block_device(tmp_path: Path, cmd: list[str]) -> None:
    """Issue 28: an empty file-level trace exited 0 with 0 commands (crash-test: 0 lost of 0
    cuts, a test that tested nothing); a block trace's 'no requests' error applies."""
    p = tmp_path / "empty_fs.jsonl"
    p.write_text("\n\n")
    res = run_cli(*cmd, p)
    assert res.returncode == 2, (res.stdout, res.stderr)
    lines = [ln for ln in res.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1 and "no requests" in lines[0] and "empty_fs.jsonl" in lines[0], lines


@pytest.mark.parametrize("seed", ["-5", str(2**64)])
def test_crash_test_seed_out_of_range_is_a_usage_error(seed: str) -> None:
    """Issue 28: `--seed -5` ended in an OverflowError traceback."""
    res = run_cli("osd", "crash-test", "--cuts", "1", "--seed", seed)
    assert res.returncode == 2 and "Traceback" not in res.stderr, res.stderr
    assert "--seed" in res.stderr and "0<=x<=18446744073709551615" in res.stderr, res.stderr


@pytest.mark.parametrize("offset", [1 << 50, 1 << 62])
def test_a_write_far_beyond_any_object_is_one_line_error(tmp_path: Path, offset: int) -> None:
    """Issue 28: a write at offset 2^50 or 2^62 must be a one-line error, not an abort."""
    p = tmp_path / "far_fs.jsonl"
    p.write_text(
        '{"t_ns":0,"op":"create","path":"a","offset":null,"size":null}\n'
        f'{{"t_ns":1000,"op":"write","path":"a","offset":{offset},"size":4096}}\n'
    )
    res = run_cli("osd", "run", "--trace", p, "-q")
    assert res.returncode == 2, (res.stdout, res.stderr)
    lines = [ln for ln in res.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1 and f"offset {offset}" in lines[0], lines
