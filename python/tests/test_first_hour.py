"""What a new user trips over in the first hour (issue 19): one test (or more) per item.

Items 9 (docs) and 10 (figures) are in test_docs.py and test_figures.py.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from _helpers import generate, run_cli
from click.testing import CliRunner

import nandlab
from nandlab import _core
from nandlab.cli import cli
from nandlab.cli.run import summary_rows
from nandlab.cli.trace import TRACE_STATS_UNITS
from nandlab.config import config_text

ROOT = Path(__file__).resolve().parents[2]

# --------------------------------------------------------------------------- 1. Tencent CBS

TIB = 1 << 40


@pytest.fixture
def tencent(tmp_path: Path) -> Path:
    """A Tencent-CBS-format trace (timestamp s, offset and size in sectors, 0 = read, volume)
    of two volumes whose merged address space (40 TiB and a few KiB) is beyond a 32-bit PPN."""
    far = 40 * TIB // 512
    rows = []
    for i in range(40):
        vol = 1063 if i % 4 else 58
        off = far - 128 if vol == 58 and i % 8 == 0 else i * 64
        rows.append(f"{1538323200 + i // 10},{off},16,{i % 3 % 2},{vol}")
    p = tmp_path / "cbs.csv"
    p.write_text("\n".join(rows) + "\n")
    return p


def test_trace_stats_lists_the_volumes_of_a_multi_device_trace(tencent: Path) -> None:
    res = run_cli("trace", "stats", tencent, "--json", "-")
    assert res.returncode == 0, res.stderr
    devs = json.loads(res.stdout)["devices"]
    assert [d["device"] for d in devs] == [58, 1063]
    assert [d["requests"] for d in devs] == [10, 30]
    assert [d["size_bytes"] for d in devs] == [40 * TIB - 112 * 512, 39 * 64 * 512 + 16 * 512]
    table = run_cli("trace", "stats", tencent).stdout
    assert "2 devices" in table and "--device ID" in table and "1063" in table


def test_a_merged_address_space_runs_on_the_compact_map_and_says_so(tencent: Path) -> None:
    """Issue 28: a merged 40 TiB span runs in bounded memory (the touched chunks packed), with
    a note; the dense map (offsets as written) still refuses it, in one line naming the way out."""
    res = run_cli("run", "--trace", tencent, "--json", "-", "--no-progress")
    assert res.returncode == 0, res.stderr
    amap = json.loads(res.stdout)["device"]["address_map"]
    assert amap["mode"] == "compact" and amap["trace_span_bytes"] > 39 * TIB
    assert "compact address map" in res.stderr, res.stderr
    dense = run_cli("run", "--trace", tencent, "-q", "--set", "device.address_map=dense")
    assert dense.returncode == 2
    err = dense.stderr.strip()
    assert len(err.splitlines()) == 1, err
    # 40 TiB of 4 KiB mapping units do not fit the 32-bit PPN (16 TiB): the way out is named
    assert "device.address_map" in err and "compact" in err and "TiB" in err, err
    assert "blocks_per_plane" not in err  # a key the user never set


def test_a_device_that_is_not_in_the_trace_lists_those_that_are(tencent: Path) -> None:
    res = run_cli("run", "--trace", tencent, "--device", "0", "-q")
    assert res.returncode == 2
    assert "device 0 is not in this trace" in res.stderr and "1063" in res.stderr, res.stderr
    ok = run_cli(
        "run",
        "--trace",
        tencent,
        "--device",
        "1063",
        "--json",
        "-",
        "--set",
        "device.logical_capacity_bytes=32GiB",
    )
    assert ok.returncode == 0, ok.stderr
    assert json.loads(ok.stdout)["host"]["requests"] == 30


# --------------------------------------------------------------------------- 2. OP definitions


def test_set_of_the_physical_op_definition_replaces_the_logical_one(small_trace: Path) -> None:
    res = run_cli(
        "run", "-t", small_trace, "--set", "device.op_percent_of_physical=10", "--json", "-"
    )
    assert res.returncode == 0, res.stderr
    dev = json.loads(res.stdout)["device"]
    assert dev["op_percent_of_physical"] == pytest.approx(10.0)
    assert dev["op_percent_of_logical"] == pytest.approx(100 / 9)


# --------------------------------------------------------------------------- 3. redirected output


def test_redirected_tables_are_plain_full_width_and_never_cut_a_number() -> None:
    res = run_cli("ecc")
    assert res.returncode == 0, res.stderr
    assert "…" not in res.stdout and "\x1b[" not in res.stdout
    assert "8.97e-11" in res.stdout  # was "8.97…" at 80 columns
    assert max(len(ln) for ln in res.stdout.splitlines()) > 120


def test_a_terminal_table_folds_rather_than_cuts() -> None:
    from rich.table import Table

    from nandlab._console import _Console

    c = _Console(width=30, force_terminal=True, record=True, color_system=None)
    t = Table("metric", "value")
    t.add_row("x" * 25, "1.1779e+06")
    c.print(t)
    text = c.export_text()
    assert "…" not in text and "1.1779e" in text.replace("\n", "").replace("│", ""), text


# --------------------------------------------------------------------------- 4. no samples


@pytest.fixture
def read_only_trace(tmp_path: Path) -> Path:
    return generate(tmp_path / "ro.csv", requests=500, span_bytes=1 << 28, write_fraction=0.0)


def test_statistics_without_samples_are_null_and_dashes(read_only_trace: Path) -> None:
    r = nandlab.simulate("default", read_only_trace)
    assert r.report["host"]["writes"] == 0
    for k in ("mean_us", "p50_us", "p90_us", "p99_us", "p999_us", "max_us"):
        assert r.report["host"]["write"][k] is None, k
        assert r.report["host"]["wait"]["write"][k] is None, k
    assert r.report["host"]["write_mean_us"] is None
    assert r.report["write_amplification"] is None
    assert r.report["gc"]["victim_valid_mean"] is None
    assert r.report["host"]["read"]["mean_us"] > 0
    rows = dict(summary_rows(r.report))
    assert rows["write amplification"] == "—"
    assert rows["response write µs (mean/p50/p90/p99/p99.9/max)"] == " / ".join(["—"] * 6)
    res = run_cli("run", "-t", read_only_trace, "--json", "-")
    assert '"write_amplification": null' in res.stdout


# --------------------------------------------------------------------------- 5. units


def test_trace_stats_formats_by_declared_unit(small_trace: Path) -> None:
    stats = json.loads(_core.trace_stats(str(small_trace), "{}", 8192))
    from nandlab.result import flatten

    stats.pop("devices")
    undeclared = sorted(set(flatten(stats)) - set(TRACE_STATS_UNITS))
    assert not undeclared, f"declare the unit of these trace stats fields: {undeclared}"
    out = CliRunner().invoke(cli, ["trace", "stats", str(small_trace)]).output
    line = next(ln for ln in out.splitlines() if "duration_s" in ln)
    assert "%" not in line and line.rstrip(" │").endswith("s"), line  # was "100.00 %"
    ratio = next(ln for ln in out.splitlines() if "read_ratio" in ln)
    assert "%" in ratio


# --------------------------------------------------------------------------- 6. --set errors, sizes


def test_a_bad_set_is_named_as_the_source(small_trace: Path) -> None:
    res = run_cli("run", "-t", small_trace, "--set", "device.channels=-3")
    assert res.returncode == 2
    assert "--set device.channels=-3:" in res.stderr and "default.toml" not in res.stderr


def test_sizes_with_units_are_accepted_by_every_bytes_key(small_trace: Path) -> None:
    text, _ = config_text("default")
    _core.check_config(text, None, ["device.logical_capacity_bytes=64GiB"])
    _core.check_config(text, None, ['device.page_size_bytes="4 KiB"'])
    res = run_cli(
        "run", "-t", small_trace, "--set", "device.logical_capacity_bytes=32GiB", "--json", "-"
    )
    assert res.returncode == 0, res.stderr
    assert json.loads(res.stdout)["device"]["logical_bytes"] >= 32 << 30
    res = run_cli(
        "trace",
        "generate",
        Path(small_trace).parent / "g.csv",
        "-n",
        "10",
        "--span-bytes",
        "1.5GiB",
    )
    assert res.returncode == 0, res.stderr


# --------------------------------------------------------------------------- 7. Ctrl-C


def test_ctrl_c_exits_130_with_one_line_and_no_json(tmp_path: Path) -> None:
    trace = generate(tmp_path / "long.csv", requests=3_000_000, span_bytes=1 << 30, iops=5e5)
    out = tmp_path / "out.json"
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "nandlab",
            "run",
            "-t",
            str(trace),
            "--json",
            str(out),
            "--progress",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "NANDLAB_PROGRESS_INTERVAL_S": "0.1"},
    )
    assert proc.stderr is not None
    first = proc.stderr.readline()  # set-up, then the replay (progress lines in a log)
    setup = ("reading the trace", "preconditioning")
    while first.startswith(setup):
        first = proc.stderr.readline()
    assert first.startswith("replaying long.csv: "), first
    proc.send_signal(signal.SIGINT)
    rest, err = proc.communicate(timeout=120)
    assert proc.returncode == 130, (proc.returncode, err)
    lines = [
        ln for ln in err.splitlines() if ln.strip() and not ln.startswith(("replaying", *setup))
    ]
    assert len(lines) == 1 and lines[0].startswith("interrupted: nandlab run"), err
    assert "Aborted" not in err and "Traceback" not in err
    assert str(out) in lines[0]
    assert not out.exists() and not list(tmp_path.glob(".out.json*"))
    assert rest == ""  # no summary table either


# --------------------------------------------------------------------------- 8. rber Table 6


def test_rber_table6_block_is_always_on_the_full_grid(tmp_path: Path) -> None:
    cache = str(tmp_path / "cache")
    full = json.loads(run_cli("rber", "--cache-dir", cache, "--json", "-", timeout=300).stdout)
    one = json.loads(
        run_cli(
            "rber",
            "--pe",
            "6000",
            "--retention",
            "1mo",
            "--cache-dir",
            cache,
            "--json",
            "-",
            timeout=300,
        ).stdout
    )
    a, b = full["soft_sensing"], one["soft_sensing"]
    assert len(b["cells"]) == 25 and a["cells"] == b["cells"]
    assert (a["exact"], a["within_one"]) == (b["exact"], b["within_one"])
    # the docs quote what the command prints
    docs = (ROOT / "docs" / "reproductions.md").read_text(encoding="utf-8")
    said = f"{a['exact']}/25 exact, {a['within_one']}/25 within one level"
    assert said in docs, said
    alt = json.loads(
        run_cli(
            "rber",
            "--pe",
            "2000",
            "--retention",
            "0",
            "--read-ref-margin",
            "0",
            "--cache-dir",
            cache,
            "--json",
            "-",
            timeout=300,
        ).stdout
    )["soft_sensing"]
    said = f"{alt['exact']}/25 exact, {alt['within_one']}/25 within one level"
    assert f"`nandlab rber --read-ref-margin 0`): {said}" in docs, said


# --------------------------------------------------------------------------- 11. small ones


def test_top_level_help_keeps_whole_descriptions() -> None:
    out = CliRunner().invoke(cli, ["--help"]).output
    assert "(FlexECC eq. 4-5)" in " ".join(out.split())


def test_a_binary_file_as_a_trace_shows_at_most_40_characters(tmp_path: Path) -> None:
    p = tmp_path / "blob.bin"
    p.write_bytes(bytes(range(256)) * 8)
    res = run_cli("run", "-t", p)
    assert res.returncode == 2
    quoted = res.stderr.split("first line: ", 1)[1].split('"')[1]
    assert len(quoted) <= 41, quoted  # 40 characters and the ellipsis
    assert "binary data" in res.stderr


def test_ecc_bad_t_names_the_option() -> None:
    res = run_cli("ecc", "--t", "-5")
    assert res.returncode == 2
    assert "--t" in res.stderr and "<ecc request>" not in res.stderr and "column" not in res.stderr


def test_excerpt_names_are_the_same_in_every_paper() -> None:
    from nandlab.reproduce import efm, xia_diffecc
    from nandlab.reproduce.common import EXCERPTS

    for r in (efm.REPRODUCTION, xia_diffecc.REPRODUCTION):
        assert set(EXCERPTS) <= {t.name for t in r.traces.ours}
    assert "OLTP1" not in efm.TABLE_I  # the file's name, the paper's alias in the source


def test_counts_are_pluralised() -> None:
    from nandlab.reproduce.common import plural

    assert plural(1, "trace") == "1 trace" and plural(2, "trace") == "2 traces"


def test_run_table_shows_p90_and_the_scheme(small_trace: Path) -> None:
    args = ["run", "-t", str(small_trace), "-c", "xia-diffecc", "-s", "diffecc_wa"]
    out = CliRunner().invoke(cli, args).output
    assert "p90" in out
    assert any("scheme" in ln and "diffecc_wa" in ln for ln in out.splitlines()), out


def test_progress_in_a_ci_log_prints_lines(tmp_path: Path) -> None:
    trace = generate(tmp_path / "p.csv", requests=1_500_000, span_bytes=1 << 30, iops=5e5)
    env = {**os.environ, "NANDLAB_PROGRESS_INTERVAL_S": "0.5"}
    res = subprocess.run(
        [sys.executable, "-m", "nandlab", "run", "-t", str(trace), "--progress"],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
        check=False,
    )
    assert res.returncode == 0, res.stderr
    lines = [ln for ln in res.stderr.splitlines() if ln.startswith("replaying p.csv: ")]
    assert len(lines) >= 2, res.stderr
    assert "1,500,000 / 1,500,000 requests (100%)" in lines[-1]
    assert "\x1b[" not in res.stderr
