"""`nandlab.simulate` and `nandlab run` end to end through the core's engine."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from _helpers import run_cli

import nandlab
from nandlab.result import STABLE_KEYS, flatten


def _comparable(report: dict) -> dict:
    """The report without wall-clock fields."""
    return {k: v for k, v in flatten(report).items() if "wall" not in k and "per_s" not in k}


def test_simulate_report_has_stable_keys(small_trace: Path) -> None:
    res = nandlab.simulate("default", small_trace)
    assert isinstance(res, nandlab.RunResult)
    flat = flatten(res.report)
    missing = [k for k in STABLE_KEYS if k not in flat]
    assert not missing, missing
    s = res.summary
    assert s["host.requests"] == 4000
    assert s["host.reads"] + s["host.writes"] == 4000
    assert s["host.mean_us"] > 0
    assert s["flash.programs"] > 0
    assert s["write_amplification"] >= 1.0
    df = res.to_frame()
    assert df.height == 1
    assert "host.mean_us" in df.columns


def test_simulate_deterministic(small_trace: Path) -> None:
    a = nandlab.simulate("default", small_trace)
    b = nandlab.simulate("default", small_trace)
    assert _comparable(a.report) == _comparable(b.report)


def test_fewer_channels_slower_on_busy_trace(busy_trace: Path) -> None:
    channels = nandlab.load_config("default")["device"]["channels"]
    assert channels >= 2
    base = nandlab.simulate("default", busy_trace)
    half = nandlab.simulate("default", busy_trace, overrides={"device.channels": channels // 2})
    assert half.summary["host.mean_us"] > base.summary["host.mean_us"]


def test_dict_config_equals_preset(small_trace: Path) -> None:
    cfg = nandlab.load_config("default")
    a = nandlab.simulate("default", small_trace)
    b = nandlab.simulate(cfg, small_trace)
    assert _comparable(a.report) == _comparable(b.report)


def test_progress_callback(small_trace: Path) -> None:
    calls: list[tuple[int, int]] = []
    nandlab.simulate("default", small_trace, progress=lambda d, t: calls.append((d, t)))
    assert calls
    dones = [d for d, _ in calls]
    assert dones == sorted(dones)
    assert all(t == 0 or d <= t for d, t in calls)


def test_progress_callback_exception_propagates(small_trace: Path) -> None:
    class Stop(Exception):
        pass

    def cb(done: int, total: int) -> None:
        raise Stop(done)

    with pytest.raises(Stop):
        nandlab.simulate("default", small_trace, progress=cb)


def test_missing_trace_raises() -> None:
    with pytest.raises(FileNotFoundError):
        nandlab.simulate({"device": {"channels": 1}}, "/nonexistent/trace.csv")


def test_cli_run_json(small_trace: Path, tmp_path: Path) -> None:
    out = tmp_path / "r.json"
    res = run_cli("run", "--trace", small_trace, "--json", out)
    assert res.returncode == 0, res.stderr
    assert json.loads(out.read_text())["host"]["requests"] == 4000
    assert "write amplification" in res.stdout
    assert "host requests" in res.stdout


def test_cli_run_default_trace(tmp_path: Path) -> None:
    """`nandlab run` with no arguments replays the bundled trace on the default config."""
    out = tmp_path / "r.json"
    res = run_cli("run", "--quiet", "--json", out, timeout=300)
    assert res.returncode == 0, res.stderr
    assert json.loads(out.read_text())["host"]["requests"] > 0


def test_cli_set_changes_result(busy_trace: Path, tmp_path: Path) -> None:
    channels = nandlab.load_config("default")["device"]["channels"]
    a, b = tmp_path / "a.json", tmp_path / "b.json"
    assert run_cli("run", "-q", "--trace", busy_trace, "--json", a).returncode == 0
    r = run_cli(
        "run", "-q", "--trace", busy_trace, "--set", f"device.channels={channels // 2}", "--json", b
    )
    assert r.returncode == 0, r.stderr
    mean = lambda p: json.loads(p.read_text())["host"]["mean_us"]  # noqa: E731
    assert mean(b) > mean(a)


def test_bench_small(tmp_path: Path) -> None:
    out, keep = tmp_path / "bench.json", tmp_path / "keep"
    res = run_cli("bench", "--requests", "3000", "--keep", keep, "--json", out, timeout=300)
    assert res.returncode == 0, res.stderr
    rows = json.loads(out.read_text())["results"]
    assert [(r["trace"], r["start"]) for r in rows] == [
        ("default", "touched"),
        ("synthetic-3000", "empty"),
        ("synthetic-3000", "touched"),
    ]
    for synth in rows[1:]:
        assert synth["requests"] == 3000
        for k in (
            "host_requests_per_s",
            "host_requests_per_cpu_s",
            "sim_cpu_s",
            "events_per_request",
            "flash_ops_per_s",
            "sim_peak_rss_mib",
            "parse_wall_s",
            "parse_cpu_s",
        ):
            assert synth[k] > 0, k
        assert synth["sim_over_parse"] > 0 and synth["sim_over_parse_cpu"] > 0
        # The set-up (pre-pass, preconditioning) is measured apart; the replay is the rest.
        assert 0 < synth["setup_cpu_s"] <= synth["sim_cpu_s"] + 0.05
        assert synth["replay_cpu_s"] >= 0
    # The empty start writes nothing before the replay; both replay the same requests.
    assert rows[1]["write_amplification"] >= 1.0
    assert (keep / "synthetic_3000_seed42.csv").is_file()


def test_bench_cache(busy_trace: Path, tmp_path: Path) -> None:
    # Issue 14: the cache layer's cost = the same tagged SSD operations replayed with and
    # without the cache layer (a scheme that ignores tags: the same simulation).
    out, keep = tmp_path / "bench.json", tmp_path / "keep"
    res = run_cli(
        "bench", "--cache", "--trace", busy_trace, "--keep", keep, "--json", out, timeout=300
    )
    assert res.returncode == 0, res.stderr
    b = json.loads(out.read_text())
    assert b["config"] == "flexecc" and b["scheme"] == "baseline"
    cache, plain = b["results"]
    assert cache["case"] == "cache layer" and plain["case"] == "same SSD ops, plain"
    assert b["same_simulation"] is True
    assert cache["ssd_ops"] == plain["ssd_ops"] == sum(b["ops_by_tag"]) > 0
    assert cache["mean_us"] == plain["mean_us"]
    assert b["cache_over_plain_cpu"] > 0
    assert Path(plain["path"]).is_file() and Path(plain["path"]).parent == keep
    # A scheme that reads the tags (flexecc) is not the same simulation without them. A cache
    # key set on the command line applies to the cache layer only (the plain replay, and its
    # set-up measurement, run without [cache]).
    res = run_cli(
        "bench",
        "--cache",
        "-s",
        "flexecc",
        "--trace",
        busy_trace,
        "--set",
        "cache.size_fraction_of_footprint=0.5",
        "--set",
        "cache.size_bytes=0",
        "--json",
        out,
        timeout=300,
    )
    assert res.returncode == 0, res.stderr
    b = json.loads(out.read_text())
    assert b["results"][0]["ssd_ops"] == b["results"][1]["ssd_ops"]
    # --trace belongs to --cache.
    res = run_cli("bench", "--trace", busy_trace)
    assert res.returncode != 0 and "--cache" in res.stderr
