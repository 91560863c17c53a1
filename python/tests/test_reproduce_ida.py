"""`nandlab reproduce ida --quick`: the run plan and one real end-to-end run on the bundled
WebSearch1 excerpt (IDA-E20 must read faster than the baseline refresh)."""

from __future__ import annotations

from pathlib import Path

from nandlab.reproduce import framework as fw
from nandlab.reproduce import ida
from nandlab.reproduce.common import TraceChoice


def test_plan_covers_every_figure() -> None:
    t = TraceChoice("t", Path("x.csv"), "ours", time_scale=10.0)
    runs = fw.plan_runs(ida.REPRODUCTION, [t], False)
    labels = {r.spec.label for r in runs}
    for e in ida.ERROR_FRACTIONS:
        assert f"E{e}" in labels
    assert {"baseline late", "E20 late", "baseline mlc", "E20 mlc", "E20 closed"} <= labels
    assert {f"E20 dtR={d}" for d in ida.DTR_SWEEP if d != 50} <= labels
    by = {r.spec.label: r.spec.overrides for r in runs}
    # Refresh once before the replay with the paper's 3-day period, ages over one period.
    assert by["baseline"]["refresh.period_s"] == ida.PAPER_PERIOD_S
    assert by["baseline"]["precondition.refresh_before_replay"] is True
    assert by["baseline"]["precondition.initial_age_window_s"] == ida.PAPER_PERIOD_S
    assert by["E20 closed"]["precondition.refresh_before_replay"] is True
    # The load level scales open-loop runs only.
    assert by["E20"]["host.time_scale"] == 10.0
    assert "host.time_scale" not in by["E20 closed"]
    assert by["E50"]["scheme.params.error_fraction"] == 0.5
    assert by["E20 dtR=30"]["timing.read_us"] == [50.0, 80.0, 110.0]
    assert by["E20 late"]["reliability.codes"][0]["level_cost"] == "page_read"
    # At K = 1 the override is omitted (the run's key is that of an unscaled run).
    t1 = TraceChoice("t", Path("x.csv"), "ours")
    assert "host.time_scale" not in fw.plan_runs(ida.REPRODUCTION, [t1], True)[0].spec.overrides
    assert "src2_1" in ida.TRACES.paper and "src2_0" not in ida.TRACES.paper


def test_msb_share() -> None:
    rep = {
        "refresh": {
            "host_msb_reads": {
                "lower_all_valid": 6,
                "lsb_invalid_csb_valid": 2,
                "lsb_valid_csb_invalid": 1,
                "lower_all_invalid": 1,
            }
        }
    }
    assert ida.msb_lower_invalid_share(rep) == 0.4
    assert ida.msb_lower_invalid_share({}) is None
