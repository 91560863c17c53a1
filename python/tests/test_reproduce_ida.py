"""`nandlab reproduce ida`: the run plan (untimed and timed refresh) and the page-read bound
(the --quick run is in test_reproduce_all.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from nandlab.reproduce import framework as fw
from nandlab.reproduce import ida
from nandlab.reproduce.common import TraceChoice


def test_plan_covers_every_figure() -> None:
    t = TraceChoice("t", Path("x.csv"), "ours", time_scale=10.0)
    runs = fw.plan_runs(ida.REPRODUCTION, [t], False)
    labels = {r.spec.label for r in runs}
    for e in ida.ERROR_FRACTIONS:
        assert f"E{e}" in labels
    assert {"baseline mlc", "E20 mlc", "E20 closed", "baseline timed", "E0 timed"} <= labels
    assert not any("late" in lab for lab in labels)  # Fig. 11 dropped: TLC model uncalibrated
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
    # timed: refresh also during the replay, scanned every second of trace time
    assert by["E20 timed"]["refresh.check_interval_s"] == ida.TIMED_SCAN_S
    assert by["E20 timed"]["refresh.period_s"] == ida.PAPER_PERIOD_S
    assert "refresh.check_interval_s" not in by["E20"]
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


def test_page_bound_of_table_ii() -> None:
    """The untimed mode's bound with Table II's timings (50/100/150 µs, 24.6 µs transfer,
    20 µs decode): 23.0 % with every moved LSB page on an LSB page, 16.1 % at 60 %."""
    rep = {"device": {"read_us": [50.0, 100.0, 150.0], "transfer_us": 24.6,
                      "ecc": [{"decode_us": 20.0}]}}  # fmt: skip
    assert ida.page_bound(rep, 1.0) == pytest.approx(0.2305, abs=5e-4)
    assert ida.page_bound(rep, 0.6) == pytest.approx(0.1611, abs=5e-4)
    assert ida.page_bound({}, 1.0) is None
