"""`nandlab reproduce flexlevel`: the run plan (configurations, P/E sweep, data-age sweep, the
device in GC, load level); the --quick run is in test_reproduce_all.py."""

from __future__ import annotations

from pathlib import Path

from nandlab.reproduce import flexlevel as fl
from nandlab.reproduce import framework as fw
from nandlab.reproduce.common import TraceChoice


def test_plan_covers_every_figure() -> None:
    t = TraceChoice("t", Path("x.csv"), "ours", time_scale=5.0)
    runs = fw.plan_runs(fl.REPRODUCTION, [t], False)
    labels = {r.spec.label for r in runs}
    assert {"baseline", "level_adjust_only", "access_eval", "mbf"} <= labels
    assert {
        f"{c} pe={pe}" for c in ("baseline", "access_eval") for pe in (3000, 4000, 5000)
    } <= labels
    by = {r.spec.label: r.spec for r in runs}
    la = by["level_adjust_only"].overrides
    assert la["regions.bits_per_cell"] == [1.5] and la["device.op_percent_of_logical"] == 40.0
    assert by["baseline"].overrides["regions.fractions"] == [1.0]
    assert by["mbf"].overrides["scheme.params.identifier"] == "mbf"
    assert by["access_eval pe=3000"].overrides["precondition.initial_pe_cycles"] == 3000
    assert all(s.overrides["host.time_scale"] == 5.0 for s in by.values())
    # the data-age sweep (the thesis does not state the age) and Fig. 25 on a device in GC
    for days in (1, 7, 14, 30, 60):
        assert {
            f"{c} age={days}d" for c in ("baseline", "level_adjust_only", "access_eval")
        } <= labels
    assert "baseline age=4d" not in labels  # 4 days is the preset: the main runs
    gc = by["access_eval gc"].overrides
    assert gc["precondition.fill_fraction"] == 0.7 and gc["precondition.age_overwrites"] == 1.0
    assert "level_adjust_only gc" not in labels
    assert fl.lifetime_change(1.0) == 0.0
    assert abs(fl.lifetime_change(1.19) - (-0.0532)) < 1e-3  # (4000 + 2000/1.19)/6000 - 1
