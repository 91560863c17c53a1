"""`nandlab compare` and `nandlab.compare`: schemes side by side with ratios to the first."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import nandlab
from nandlab.cli import cli
from nandlab.comparison import METRICS, metrics_of
from nandlab.experiment import load_runs


def test_compare_api_ratios_and_metrics(tmp_path: Path) -> None:
    df = nandlab.compare(
        "Financial1_first10000",
        ["baseline", "diffecc_wa", "agcr"],
        "xia-diffecc",
        {"host.max_requests": 3000},
        tmp_path / "o",
    )
    assert df["scheme"].to_list() == ["baseline", "diffecc_wa", "agcr"]
    assert df["error"].null_count() == 3
    rows = df.to_dicts()
    for col, *_ in METRICS:
        assert rows[0][f"{col}_ratio"] in (1.0, None)
    base, dwa = rows[0], rows[1]
    # Xia & Xiao's direction on this write-heavy excerpt: faster writes with diffecc_wa
    assert dwa["write_mean_us"] < base["write_mean_us"]
    assert dwa["write_mean_us_ratio"] == pytest.approx(dwa["write_mean_us"] / base["write_mean_us"])
    # the metrics are the reports' (and flash time per request is die busy time / requests)
    reps = {r["scheme"]: json.loads(r["report"]) for r in load_runs(tmp_path / "o").to_dicts()}
    rep = reps["baseline"]
    assert base["read_p999_us"] == rep["host"]["read"]["p999_us"]
    assert base["erases"] == rep["flash"]["erases"]
    flash_us = (
        rep["flash"]["die_utilization"] * rep["device"]["dies"] * rep["sim"]["span_s"] * 1e6
    ) / rep["host"]["requests"]
    assert base["flash_us_per_request"] == pytest.approx(flash_us)
    assert metrics_of(rep)["all_p99_us"] == rep["host"]["all"]["p99_us"]
    meta = json.loads((tmp_path / "o" / "compare.json").read_text())
    assert meta["schemes"] == ["baseline", "diffecc_wa", "agcr"] and len(meta["rows"]) == 3


def test_compare_cli_table_and_json(runner, tmp_path: Path) -> None:
    out = tmp_path / "o"
    args = ["compare", "--trace", "msr_hm_0_sample1000", "--schemes", "baseline,agcr"]
    args += ["--config", "xia-diffecc", "--out", str(out), "--json", str(tmp_path / "c.json")]
    res = runner.invoke(cli, args)
    assert res.exit_code == 0, res.output
    for label in ("read mean µs", "write p99.9 µs", "write amplification", "die utilisation"):
        assert label in res.output
    assert "x)" in res.output  # ratios
    doc = json.loads((tmp_path / "c.json").read_text())
    assert [r["scheme"] for r in doc["rows"]] == ["baseline", "agcr"]
    # a second call reuses the runs
    res2 = runner.invoke(cli, args)
    assert res2.exit_code == 0
    assert load_runs(out).height == 2


@pytest.mark.parametrize(
    ("schemes", "trace", "msg"),
    [
        ("baseline,nope", "msr_hm_0_sample1000", "unknown scheme `nope`; allowed: baseline"),
        ("baseline,baseline", "msr_hm_0_sample1000", "scheme baseline given twice"),
        ("baseline", "no_such.csv", "is not a bundled trace name"),
    ],
)
def test_compare_errors_are_one_line_exit_2(
    runner, tmp_path: Path, schemes: str, trace: str, msg: str
) -> None:
    res = runner.invoke(
        cli, ["compare", "--trace", trace, "--schemes", schemes, "--out", str(tmp_path / "o")]
    )
    assert res.exit_code == 2, res.output
    assert msg in res.output and len(res.output.strip().splitlines()) == 1
    assert not (tmp_path / "o").exists()


def test_compare_bad_override_is_a_config_error(runner, tmp_path: Path) -> None:
    res = runner.invoke(
        cli,
        ["compare", "-t", "msr_hm_0_sample1000", "-s", "baseline", "--set", "ftl.nope=1"],
    )
    assert res.exit_code == 2
    assert res.output.startswith("error: ConfigError:") and "unknown field `nope`" in res.output
