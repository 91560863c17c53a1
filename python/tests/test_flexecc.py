"""FlexECC from Python (issue 14): the `[cache]` front end through `nandlab.simulate`, its
report section, determinism with faults on, one-line `[cache]` errors, and
`nandlab reproduce flexecc --quick` end to end."""

from __future__ import annotations

from typing import Any

import pytest

import nandlab

SMALL = {
    "host.max_requests": 20_000,
    "cache.size_bytes": 0,
    "cache.size_fraction_of_footprint": 0.0833,
    "device.blocks_per_plane": 256,
    "device.planes_per_die": 1,
    "host.time_scale": 10.0,
}


def _strip(rep: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in rep.items() if k != "timing"}


def test_cache_run_has_tags_table3_and_is_deterministic_with_faults() -> None:
    ov = {**SMALL, "faults.mode": "every_nth_bit", "faults.rber": 1e-6}
    a = nandlab.simulate("flexecc", overrides=ov).report
    b = nandlab.simulate("flexecc", overrides=ov).report
    assert _strip(a) == _strip(b)
    c = a["cache"]
    ops = c["manager"]["counters"]["ops_by_tag"]
    assert sum(ops) == a["host"]["requests"]
    share = 100.0 * (ops[1] + ops[2]) / sum(ops)
    assert c["manager"]["ssd_read_share_percent"] == pytest.approx(share)
    moved = sum(c["gc_moves_by_ecc"].values())
    assert moved == a["gc"]["pages_moved"]
    assert c["faults"]["planned"] == c["manager"]["slots"] // c["faults"]["period_pages"]
    assert a["scheme_stats"]["invariant_violations"] == 0


def test_bch_only_baseline_reads_no_crc() -> None:
    r = nandlab.simulate("flexecc", scheme="baseline", overrides=SMALL).report
    assert r["cache"]["host_reads_by_ecc"]["crc"] == 0
    assert r["cache"]["gc_moves_by_ecc"]["bch->crc"] == 0


@pytest.mark.parametrize(
    ("key", "value"),
    [("cache.disk_us", -1.0), ("cache.size_fraction_of_footprint", 3.0), ("cache.bogus", 1)],
)
def test_malformed_cache_is_one_line_naming_the_key(key: str, value: object) -> None:
    with pytest.raises(nandlab.ConfigError) as e:
        nandlab.simulate("flexecc", overrides={key: value})
    msg = str(e.value)
    assert key.split(".")[-1] in msg and "\n" not in msg.strip(), msg
