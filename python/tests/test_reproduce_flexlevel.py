"""`nandlab reproduce flexlevel --quick`: the run plan (configurations, P/E sweep, load level)
and one real end-to-end run on the bundled excerpts."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from nandlab.cli import cli
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
    assert fl.lifetime_change(1.0) == 0.0
    assert abs(fl.lifetime_change(1.19) - (-0.0532)) < 1e-3  # (4000 + 2000/1.19)/6000 - 1


def test_quick_end_to_end(tmp_path: Path) -> None:
    out, js = tmp_path / "out", tmp_path / "fl.json"
    res = CliRunner().invoke(
        cli, ["reproduce", "flexlevel", "--quick", "--out", str(out), "--json", str(js), "-j", "2"]
    )
    assert res.exit_code == 0, res.output
    doc = json.loads(js.read_text())
    assert doc["check"]["passed"]
    rows = {r["trace"]: r for r in doc["table"]}
    fin = rows["Financial1 excerpt"]
    # Capacity loss exactly 6.25 % (AccessEval) and 25 % (LevelAdjust-only) of the raw pages.
    assert abs(fin["access_eval_capacity_loss_percent"] - 6.25) < 0.1
    assert abs(fin["level_adjust_only_capacity_loss_percent"] - 25.0) < 1e-9
    assert fin["read_ratio_level_adjust_only"] < fin["read_ratio_access_eval"] < 1.0
    assert fin["false_id_iwfr"] is not None and fin["migrations"] > 0
    for fig in ("fig24ab_response", "fig24c_gain_by_pe", "fig25_writes_erases",
                "fig23_false_identification"):  # fmt: skip
        assert (out / f"{fig}.png").is_file() and (out / f"{fig}.svg").is_file()
