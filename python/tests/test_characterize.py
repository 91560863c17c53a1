"""`nandlab characterize` (issue 29): the figures against closed-form bounds of the geometry.

One quick characterization of a reduced default drive (4 dies, small blocks, 512 MiB logical,
1 MiB of DRAM so that read hits stay negligible) is shared by the tests. The bounds are
computed here from each run's report, independently of the module's own `geometry_bounds`:

* sequential write ≤ dies x planes x page x bits per cell / one-shot program time (and the
  channels' rate), plus what the DRAM write cache can hold;
* flash page programs ≤ the same program ceiling in pages (any write test);
* random read IOPS ≤ dies x planes / (tR + planes x transfer) and ≤ channels / transfer (a 4 KiB
  read moves its whole page), plus DRAM read hits;
* QD1 read latency ≥ tR + transfer + decode.

Each is also checked from the other side where the model should come close (a fresh drive's
sequential write reaches half its program ceiling; a QD1 read costs no more than the slowest
page type's read), so a wrong program time or read path fails either way.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from _helpers import run_cli
from click.testing import CliRunner

from nandlab.characterize import TEST_NAMES, steady_state
from nandlab.cli import cli

REDUCED = [
    "device.channels=2",
    "device.chips_per_channel=2",
    "device.pages_per_block=96",
    "device.min_logical_capacity_bytes=512MiB",
    "dram.capacity_bytes=1MiB",
]
BITS = {"slc": 1, "mlc": 2, "tlc": 3, "qlc": 4}


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    d = tmp_path_factory.mktemp("characterize")
    args = ["characterize", "--quick", "--json", str(d / "c.json"), "--plot", str(d / "c.png")]
    for s in REDUCED:
        args += ["--set", s]
    res = CliRunner().invoke(cli, args)
    assert res.exit_code == 0, res.output
    out = json.loads((d / "c.json").read_text())
    out["_stdout"] = res.output
    out["_png"] = d / "c.png"
    return out


def _tests(run: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {t["name"]: t for t in run["tests"]}


def _geometry(rep: dict[str, Any]) -> dict[str, float]:
    dev, cfg = rep["device"], rep["config"]
    planes = dev["planes_per_die"] if cfg["sched"]["multi_plane"] else 1
    per_program = planes * (BITS[dev["cell"]] if cfg["timing"]["one_shot_program"] else 1)
    # transfer_us and every flash count are per FTL page: the mapping unit when it is smaller
    xfer = dev["transfer_us"] / 1e6
    t_prog = min(dev["program_modes"][0]["program_us"]) / 1e6
    unit = dev.get("mapping_unit_bytes", dev["page_size_bytes"])
    units = dev["page_size_bytes"] // unit
    return {
        "page": dev["page_size_bytes"],
        "unit": unit,
        "program_pages_per_s": dev["dies"] * per_program / t_prog,
        "program_units_per_s": dev["dies"] * per_program * units / t_prog,
        "channel_bytes_per_s": dev["channels"] * unit / xfer,
        "channel_pages_per_s": dev["channels"] / xfer,
        "die_read_pages_per_s": dev["dies"] * planes / (min(dev["read_us"]) / 1e6 + planes * xfer),
        "read_floor_us": min(dev["read_us"]) + dev["transfer_us"] + dev["ecc"][0]["decode_us"],
        "read_slowest_us": max(dev["read_us"]) + dev["transfer_us"] + dev["ecc"][0]["decode_us"],
        "dram_bytes": float(cfg["dram"]["capacity_bytes"]),
    }  # fmt: skip


def test_every_test_ran_with_its_drive_state(run: dict[str, Any]) -> None:
    t = _tests(run)
    assert list(t) == list(TEST_NAMES)
    assert run["logical_bytes"] >= 512 << 20
    for name, x in t.items():
        rep = x["report"]
        assert rep["config"]["host"]["mode"] == "closed", name
        assert rep["config"]["host"]["queue_depth"] == x["queue_depth"], name
        assert rep["device"]["logical_bytes"] == run["logical_bytes"], name
        assert x["run"]["requests"] == x["ios"], name
        # the log the window comes from is the report's run: same mean response
        assert x["log_mean_us"] == pytest.approx(rep["host"]["all"]["mean_us"], rel=1e-9), name
        assert 0 < x["window_ios"] < x["ios"], name
    assert t["seq_write"]["precondition"]["filled_pages"] == 0
    assert (
        t["rand_read_qd32"]["precondition"]["filled_pages"]
        * _geometry(t["seq_write"]["report"])["unit"]
        == run["logical_bytes"]
    )
    steady = t["rand_write_steady"]["precondition"]
    assert steady["aging_rounds"] > 0 and steady["aging_steady"]
    assert t["rand_read_qd32"]["precondition"]["aging_rounds"] == 0
    # the fresh random write stays fresh: GC never ran
    assert t["rand_write_fresh"]["report"]["gc"]["pages_moved"] == 0
    assert t["rand_write_steady"]["report"]["gc"]["pages_moved"] > 0
    # the sequential fill covers the whole logical space once
    assert t["seq_write"]["report"]["host"]["write_bytes"] == run["logical_bytes"]
    mixed = t["mixed_70_30"]["report"]["host"]
    assert 0.65 < mixed["reads"] / mixed["requests"] < 0.75


def test_sequential_write_within_the_program_ceiling(run: dict[str, Any]) -> None:
    x = _tests(run)["seq_write"]
    g = _geometry(x["report"])
    ceiling = min(g["program_pages_per_s"] * g["page"], g["channel_bytes_per_s"])
    window_bytes = x["mb_s"] * 1e6 * x["window_s"]
    assert window_bytes <= ceiling * x["window_s"] + g["dram_bytes"]
    # and close to it: a purged drive written sequentially programs whole word lines
    assert x["mb_s"] * 1e6 >= 0.5 * ceiling, (x["mb_s"], ceiling / 1e6)


@pytest.mark.parametrize("name", ["seq_write", "rand_write_fresh", "rand_write_steady"])
def test_flash_programs_within_the_program_ceiling(run: dict[str, Any], name: str) -> None:
    rep = _tests(run)[name]["report"]
    g = _geometry(rep)
    assert rep["flash"]["programs"] <= g["program_units_per_s"] * rep["sim"]["span_s"] * 1.0001


@pytest.mark.parametrize("name", ["rand_read_qd32", "rand_read_qd256"])
def test_random_read_iops_within_the_read_ceiling(run: dict[str, Any], name: str) -> None:
    x = _tests(run)[name]
    rep = x["report"]
    g = _geometry(rep)
    ceiling = min(g["die_read_pages_per_s"], g["channel_pages_per_s"])
    flash_reads = rep["flash"]["reads_by_source"]["host"]
    assert flash_reads <= ceiling * rep["sim"]["last_completion_s"] * 1.0001
    hits = rep["sim"].get("dram_read_hits", 0)
    assert x["iops"] * x["window_s"] <= ceiling * x["window_s"] + hits


def test_qd1_read_latency_between_floor_and_slowest_page(run: dict[str, Any]) -> None:
    x = _tests(run)["rand_read_qd1"]
    g = _geometry(x["report"])
    lat = x["latency"]["read"]
    assert lat["p50_us"] >= g["read_floor_us"] * 0.999
    assert lat["mean_us"] <= g["read_slowest_us"] * 1.05
    # QD1: IOPS is one over the mean latency (Little's law)
    assert x["iops"] == pytest.approx(1e6 / lat["mean_us"], rel=0.02)


def test_table_json_and_plot(run: dict[str, Any]) -> None:
    out = run["_stdout"]
    for label in ("4 KiB random read, QD1", "128 KiB sequential write", "steady state, QD32"):
        assert label in out
    assert "p99.9 µs" in out and "bound" in out
    png = Path(run["_png"])
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert png.stat().st_size < 200_000
    for t in run["tests"]:
        for k in ("iops", "mb_s", "steady_state", "round_iops", "latency", "run", "bound"):
            assert k in t, (t["name"], k)
        assert len(t["round_iops"]) == run["rounds"]
    series = {t["name"] for t in run["tests"] if "series" in t}
    assert series == {"seq_write", "rand_write_steady"}


def test_steady_state_criterion() -> None:
    assert steady_state([100, 101, 99, 100, 100])["reached"]
    ramp = steady_state([100, 105, 110, 115, 120])  # range 18 % but slope 18 %
    assert not ramp["reached"] and ramp["excursion_fraction"] < 0.2
    assert not steady_state([100, 130, 100, 100, 100])["reached"]  # range 29 %


def test_a_managed_key_is_refused_in_one_line() -> None:
    res = run_cli("characterize", "--set", "host.queue_depth=4", "--quick")
    assert res.returncode == 2
    err = res.stderr.strip()
    assert len(err.splitlines()) == 1 and "host.queue_depth" in err and "characterize" in err


def test_an_unknown_test_is_refused() -> None:
    res = run_cli("characterize", "--tests", "seq_read,fast_write")
    assert res.returncode == 2
    assert "fast_write" in res.stderr and "rand_read_qd1" in res.stderr
