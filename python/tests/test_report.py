"""`nandlab report DIR`: one self-contained HTML file for a sweep, a compare or a reproduce
output, its figures beside it as PNG and SVG, and the page checked in headless Chromium."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from _browser import Browser, ensure_chromium
from _helpers import generate

import nandlab
from nandlab.cli import cli
from nandlab.experiment import RunSpec, run_grid
from nandlab.report import build_report


@pytest.fixture(scope="module")
def sweep_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A finished 8-run sweep with time series and CDFs (one run failed on purpose)."""
    d = tmp_path_factory.mktemp("report")
    trace = generate(d / "gen.csv", requests=3000, iops=3000.0, span_bytes=1 << 28, seed=9)
    grid = {
        "configs": ["xia-diffecc"],
        "schemes": ["baseline", "diffecc_wa"],
        "traces": ["msr_hm_0_sample1000", str(trace)],
        "set": {"device.dies_per_chip": [1, 2]},
        "outputs": {"timeseries_interval_ms": 100},
    }
    out = d / "sweep"
    nandlab.sweep(grid, out, workers=2)
    return out


def _check_self_contained(text: str) -> None:
    assert not re.search(r"""(src|href)\s*=\s*["']?(https?:)?//""", text), "external resource"
    assert "<link" not in text and "<script src" not in text
    assert text.count("<script>") == 1


def test_sweep_report(sweep_dir: Path, runner) -> None:
    res = runner.invoke(cli, ["report", str(sweep_dir)])
    assert res.exit_code == 0, res.output
    html = sweep_dir / "report.html"
    text = html.read_text()
    _check_self_contained(text)
    files = sweep_dir / "report_files"
    pngs = sorted(p.stem for p in files.glob("*.png"))
    assert pngs == sorted(p.stem for p in files.glob("*.svg"))
    # summary, a CDF and a time series per trace
    assert pngs == sorted(
        [
            "summary-response",
            "cdf-msr_hm_0_sample1000",
            "cdf-gen",
            "timeseries-msr_hm_0_sample1000",
            "timeseries-gen",
        ]
    )
    assert text.count('<img src="data:image/png;base64,') == len(pngs)
    # the runs table: one row per run, labels and the grid
    table = text[text.index('id="runs"') :]
    assert table.count("<tr>") == 1 + 8
    assert "baseline device.dies_per_chip=2" in table
    assert "<h2>Grid</h2>" in text and "set.device.dies_per_chip" in text
    assert "nandlab sweep" in text
    # CDFs came from the reports' host.cdf (no percentile markers needed)
    assert "drawn from p50" not in text


def test_compare_and_reproduce_reports(tmp_path: Path) -> None:
    from nandlab.reproduce.common import write_result

    # compare (twice in the same directory: the report shows the last one's runs)
    out = tmp_path / "cmp"
    nandlab.compare(
        "pgbench_rw_slice", ["baseline"], "xia-diffecc", {"host.max_requests": 500}, out
    )
    nandlab.compare("msr_hm_0_sample1000", ["baseline", "agcr"], "xia-diffecc", out=out)
    r = build_report(out)
    text = r.html.read_text()
    assert r.kind == "compare" and r.runs == 2
    assert "1 other runs in runs.parquet" in text
    assert "<h2>Compare</h2>" in text and "flash time / request" in text and "x)" in text
    _check_self_contained(text)

    # a reproduce output: runs.parquet, the result JSON and the command's own figures
    rep = tmp_path / "repro"
    spec = RunSpec(nandlab.default_trace(), "pg", "baseline", "default", {"host.max_requests": 800})
    df = run_grid([spec], rep, processes=1, progress=False)
    from nandlab.reproduce.headline import Headline, headline_rows

    head = headline_rows(
        [Headline("write response vs normal", "Fig. 8(a)", -30, "ratio", deciders=())],
        [{"trace": "pg", "ratio": 0.75}],
        lambda t, n: None,
        {"auto": ["pg"]},
    )
    write_result(
        str(rep / "result.json"),
        {
            "paper": "xia-diffecc",
            "title": "Xia & Xiao",
            "checks": [{"name": "diffecc_wa below baseline", "passed": True, "detail": "x",
                        "kind": "sanity"}],
            "headline": head,
            "tables": [{"title": "Response", "columns": ["trace", "mean"], "rows": [["pg", "1"]]}],
            "table": [{"trace": "pg", "scheme": "baseline", "mean": 1.0}],
        },
        df,
    )  # fmt: skip
    from nandlab.figures import _figure, save

    fig = _figure(3, 2)
    fig.subplots().plot([0, 1], [1, 0])
    save(fig, rep / "fig7_mean_response")
    r = build_report(rep, tmp_path / "elsewhere" / "r.html")
    text = r.html.read_text()
    assert r.kind == "reproduce"
    assert "Paper: Xia &amp; Xiao" in text and "write response vs normal" in text
    assert "diffecc_wa below baseline" in text and "-25 %" in text and "matches" in text
    assert 'id="fig7_mean_response"' in text
    # CDFs from percentiles when the reports have no host.cdf, and said so
    assert "drawn from p50" in text
    assert (tmp_path / "elsewhere" / "r_files" / "cdf-pg.svg").is_file()


def test_report_of_an_empty_dir_is_exit_2(runner, tmp_path: Path) -> None:
    res = runner.invoke(cli, ["report", str(tmp_path)])
    assert res.exit_code == 2
    assert "no runs.parquet and no reproduce result JSON" in res.output


@pytest.fixture(scope="module")
def chromium() -> str:
    exe, why = ensure_chromium()
    if exe is None:
        pytest.skip(f"headless Chromium unavailable: {why}")
    return exe


def test_report_in_headless_chromium(sweep_dir: Path, chromium: str, tmp_path: Path) -> None:
    r = build_report(sweep_dir, tmp_path / "report.html")
    with Browser(chromium) as b:
        load_s = b.open(r.html)
        n_img = b.evaluate("document.images.length")
        assert n_img == len(r.figures) == 5
        # every figure decoded and has a size (broken images have naturalWidth 0)
        widths = b.evaluate(
            "Promise.all(Array.from(document.images).map(i => i.decode()))"
            ".then(() => Array.from(document.images).map(i => [i.naturalWidth, i.naturalHeight]))",
            await_promise=True,
        )
        assert all(w > 100 and h > 100 for w, h in widths), widths
        assert b.evaluate("document.body.dataset.figuresOk") == str(n_img)
        # the runs table sorts by a clicked column
        col = b.evaluate(
            "Array.from(document.querySelectorAll('#runs th')).findIndex(th => "
            "th.textContent === 'mean µs')"
        )
        assert col > 0
        js_col = (
            f"Array.from(document.querySelectorAll('#runs tbody tr'))"
            f".map(r => +r.cells[{col}].getAttribute('data-v'))"
        )
        b.evaluate(f"document.querySelectorAll('#runs th')[{col}].click()")
        asc = b.evaluate(js_col)
        assert asc == sorted(asc) and len(asc) == 8
        b.evaluate(f"document.querySelectorAll('#runs th')[{col}].click()")
        assert b.evaluate(js_col) == sorted(asc, reverse=True)
        shot = b.screenshot(tmp_path / "report.png")
        errors = b.console_errors()
    assert errors == []
    assert shot.stat().st_size > 20_000
    assert load_s < 30
    (tmp_path / "timing.json").write_text(json.dumps({"load_s": load_s}))


def test_plot_bins_keep_totals() -> None:
    import polars as pl

    from nandlab.report import _plot_bins

    n = 1000
    df = pl.DataFrame(
        {
            "start_s": [i * 0.01 for i in range(n)],
            "duration_s": [0.01] * n,
            "reads": [i % 3 for i in range(n)],
            "writes": [i % 2 for i in range(n)],
            "mean_us": [None if (i % 3 + i % 2) == 0 else 100.0 + i for i in range(n)],
            "p99_us": [None if (i % 3 + i % 2) == 0 else 200.0 + i for i in range(n)],
            "queue_depth": [0.5] * n,
            "gc_moves": [1] * n,
            "erases": [0] * n,
            "die_utilization": [0.25] * n,
        }
    )
    b, k = _plot_bins(df, max_points=300)
    assert k == 4 and b.height == 250
    done = (df["reads"] + df["writes"]).sum()
    assert (b["throughput_rps"] * 0.04).sum() == pytest.approx(done)
    assert b["queue_depth"].to_list() == pytest.approx([0.5] * 250)
    assert b["gc_per_s"].to_list() == pytest.approx([100.0] * 250)
    assert b["p99_us"][0] == 203.0  # the highest interval p99 of the bin
    resp = (df["mean_us"].fill_null(0) * (df["reads"] + df["writes"])).sum()
    assert (b["mean_us"] * b["throughput_rps"] * 0.04).sum() == pytest.approx(resp)


def test_docs_example_script_runs(tmp_path: Path) -> None:
    """docs/examples/sweep_example.py runs top to bottom (workers start without re-running it)."""
    import os
    import subprocess
    import sys

    script = Path(__file__).resolve().parents[2] / "docs" / "examples" / "sweep_example.py"
    r = subprocess.run(
        [sys.executable, str(script)],
        env={**os.environ, "NANDLAB_EXAMPLE_OUT": str(tmp_path)},
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
        cwd=tmp_path,
    )
    assert r.returncode == 0, r.stderr[-3000:]
    assert "BrokenProcessPool" not in r.stdout
    assert (tmp_path / "sweep" / "report.html").is_file()
    assert (tmp_path / "compare" / "report.html").is_file()
