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

    from nandlab.report.timeseries import _plot_bins

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


# --------------------------------------------------------------------------- 1,000 runs

#: The text elements of a figure's SVG (matplotlib draws each label, tick label, title and
#: legend entry as a ``<g id="text_N">`` group, its text in a comment) that are not inside the
#: figure's own box (the SVG viewport), with a pixel of tolerance, and the pairs of them that
#: overlap each other (a y label running into the next panel's, a title under a legend).
_CLIPPED_JS = """
(function(){
  var root = document.documentElement, R = root.getBoundingClientRect(), out = [], boxes = [];
  function name(g){
    var c = Array.prototype.find.call(g.childNodes, function(n){ return n.nodeType === 8; });
    return c ? c.data.trim() : g.id;
  }
  document.querySelectorAll('g[id^="text_"], g[id^="legend_"]').forEach(function(g){
    var b = g.getBoundingClientRect();
    if (b.width === 0 && b.height === 0) return;
    if (g.id.indexOf('text_') === 0) boxes.push([name(g), b]);
    if (b.left < R.left - 1 || b.top < R.top - 1 || b.right > R.right + 1 ||
        b.bottom > R.bottom + 1) {
      out.push([g.id, name(g), [b.left, b.top, b.right, b.bottom],
                [R.left, R.top, R.right, R.bottom]]);
    }
  });
  var overlaps = [];
  for (var i = 0; i < boxes.length; i++) for (var j = i + 1; j < boxes.length; j++) {
    var a = boxes[i][1], b = boxes[j][1];
    var w = Math.min(a.right, b.right) - Math.max(a.left, b.left);
    var h = Math.min(a.bottom, b.bottom) - Math.max(a.top, b.top);
    if (w > 1 && h > 1) overlaps.push([boxes[i][0], boxes[j][0]]);
  }
  return {n: boxes.length, clipped: out, overlaps: overlaps};
})()
"""


def _svg_texts_inside(b: Browser, svgs: list[Path]) -> dict[str, int]:
    """Open each SVG in the browser; assert no text element reaches outside its figure or
    into another. Returns the number of text elements per figure."""
    counts = {}
    for svg in svgs:
        b.open(svg)
        res = b.evaluate(_CLIPPED_JS)
        assert res["clipped"] == [], (svg.name, res["clipped"][:5])
        assert res["overlaps"] == [], (svg.name, res["overlaps"][:5])
        counts[svg.stem] = res["n"]
    return counts


def _svg_texts(svg: Path) -> list[str]:
    """The texts of a matplotlib SVG (each text group's comment)."""
    return re.findall(r'<g id="text_\d+">\s*<!-- (.*?) -->', svg.read_text())


SCHEMES_1000 = ("baseline", "tos18", "warm", "hotis", "efm")
TRACES_1000 = (
    "Financial1_first10000",
    "WebSearch1_first24783",
    "msr_hm_0_sample1000",
    "pgbench_rw_slice",
)


@pytest.fixture(scope="module")
def sweep_1000(sweep_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A 1,000-run sweep directory: 4 traces x 5 schemes x 2 die counts x 5 GC thresholds x 5
    seeds, labelled as the sweep labels them (``hotis device.dies_per_chip=2
    ftl.gc_threshold_pct=25 seed=4``: long legend entries, as in issue 33's 432-run grid).

    Running 1,000 simulations takes too long for a test, so the runs are synthesised from the
    8 real runs of ``sweep_dir`` (whose reports have ``host.cdf`` and whose time series are
    Parquet files), the way a sweep stores them: ``runs.parquet`` rows with the same columns,
    a report JSON each (the template's, with its response times, CDF and time-series latencies
    scaled by a factor per scheme and setting, so schemes differ and settings spread), a time
    series file per run, and ``sweep.json`` with the keys in grid order, the axes and the
    varying settings."""
    import hashlib
    import itertools
    import random

    import polars as pl

    from nandlab.experiment import RUNS_FILE, load_runs, rows_frame

    d = tmp_path_factory.mktemp("report1000") / "sweep"
    (d / "timeseries").mkdir(parents=True)
    templates = [r for r in load_runs(sweep_dir).iter_rows(named=True) if r["report"]]
    series = {r["key"]: pl.read_parquet(sweep_dir / r["timeseries"]) for r in templates}
    rng = random.Random(1000)
    rows, keys = [], []
    for ti, trace in enumerate(TRACES_1000):
        for si, scheme in enumerate(SCHEMES_1000):
            for dies, gc, seed in itertools.product((1, 2), (5, 10, 15, 20, 25), range(5)):
                t = templates[(ti * 2 + si) % len(templates)]
                f = (1.0 + 0.35 * si) * (1 + 0.01 * gc) / dies * rng.uniform(0.95, 1.05)
                rep = json.loads(t["report"])
                host = rep["host"]
                for k in (
                    "mean_us",
                    "read_mean_us",
                    "write_mean_us",
                    "read_p99_us",
                    "write_p99_us",
                ):
                    if host.get(k) is not None:
                        host[k] *= f
                for cls in ("all", "read", "write"):
                    for k, v in list((host.get(cls) or {}).items()):
                        if k.endswith("_us") and v is not None:
                            host[cls][k] = v * f
                cdf = host["cdf"]
                for k in ("all_us", "read_us", "write_us"):
                    cdf[k] = [v * f for v in cdf[k]]
                params = {"device.dies_per_chip": dies, "ftl.gc_threshold_pct": gc, "seed": seed}
                key = hashlib.sha256(f"{trace}/{scheme}/{dies}/{gc}/{seed}".encode()).hexdigest()
                ts = series[t["key"]].with_columns(pl.col("mean_us") * f, pl.col("p99_us") * f)
                rel = f"timeseries/{key[:16]}.parquet"
                ts.write_parquet(d / rel)
                row = dict(t)
                row.update(
                    key=key,
                    trace=trace,
                    scheme=scheme,
                    label=f"{scheme} device.dies_per_chip={dies} ftl.gc_threshold_pct={gc} "
                    f"seed={seed}",
                    params=json.dumps(params),
                    report=json.dumps(rep),
                    timeseries=rel,
                    request_log=None,
                    error=None,
                )
                row["host.mean_us"] = host["mean_us"]
                rows.append(row)
                keys.append(key)
    rows_frame(rows).write_parquet(d / RUNS_FILE)
    axes = {
        "configs": ["xia-diffecc"],
        "schemes": list(SCHEMES_1000),
        "traces": list(TRACES_1000),
        "seeds": list(range(5)),
        "set.device.dies_per_chip": [1, 2],
        "set.ftl.gc_threshold_pct": [5, 10, 15, 20, 25],
    }
    (d / "sweep.json").write_text(
        json.dumps(
            {
                "kind": "sweep",
                "grid": "grid1000.toml",
                "runs": len(keys),
                "keys": keys,
                "axes": axes,
                "varying": ["device.dies_per_chip", "ftl.gc_threshold_pct", "seed"],
                "outputs": {},
                "cluster": None,
            }
        )
    )
    return d


def test_report_of_1000_runs_aggregates_and_nothing_is_clipped(
    sweep_1000: Path, chromium: str, tmp_path: Path
) -> None:
    r = build_report(sweep_1000)
    assert r.runs == 1000
    names = sorted(f.name for f in r.figures)
    assert names == sorted(
        [f"cdf-{t}" for t in TRACES_1000] + [f"timeseries-{t}" for t in TRACES_1000]
        + ["summary-response"]
    )  # fmt: skip
    text = r.html.read_text()
    assert "First 40" not in text and "first 40" not in text
    for f in r.figures:
        svg_texts = _svg_texts(f.svg)
        if f.name.startswith(("cdf-", "timeseries-")):
            # what the figure shows: a line per scheme, the band over the other axes
            assert "aggregated over" in f.caption.lower(), f.caption
            assert "a line per scheme" in f.caption, f.caption
            assert "device.dies_per_chip, ftl.gc_threshold_pct, seed" in f.caption, f.caption
            # the legend: every scheme, with its number of runs
            for s in SCHEMES_1000:
                assert f"{s} (50 runs)" in svg_texts, (f.name, svg_texts)
        else:
            assert "a row per scheme" in f.caption
            for s in SCHEMES_1000:
                assert f"{s} (50)" in svg_texts, svg_texts
    with Browser(chromium) as b:
        load_s = b.open(r.html)
        decoded = b.evaluate(
            "Promise.all(Array.from(document.images).map(i => i.decode())).then(() => "
            "Array.from(document.images).filter(i => i.naturalWidth > 100).length)",
            await_promise=True,
        )
        assert decoded == len(r.figures) == 9
        assert b.evaluate("document.querySelectorAll('#runs tbody tr').length") == 1000
        # every figure fits the page's width (no image wider than its figure)
        over = b.evaluate(
            "Array.from(document.querySelectorAll('figure img')).filter(i => "
            "i.getBoundingClientRect().right > i.closest('figure').getBoundingClientRect().right"
            " + 1).length"
        )
        assert over == 0
        errors = b.console_errors()
        counts = _svg_texts_inside(b, [f.svg for f in r.figures])
    assert errors == []
    assert all(n > 20 for n in counts.values()), counts
    assert load_s < 10, load_s
    # 50-90 s on a 2-core machine shared with other builds (the old per-run figures: 161 s)
    assert r.build_s < 240, r.build_s
    (tmp_path / "timing.json").write_text(
        json.dumps({"load_s": load_s, "build_s": r.build_s, "bytes": r.size_bytes})
    )
    print(
        f"1,000 runs: report built in {r.build_s:.1f} s, {r.size_bytes / 2**20:.1f} MiB, "
        f"loaded in Chromium in {load_s:.2f} s"
    )


def test_small_sweep_figures_have_no_clipped_text(
    sweep_dir: Path, chromium: str, tmp_path: Path
) -> None:
    """The per-run figures of a small sweep (a line per run, legend on the right): every text
    element, legends included, inside its figure."""
    r = build_report(sweep_dir, tmp_path / "report.html")
    with Browser(chromium) as b:
        counts = _svg_texts_inside(b, [f.svg for f in r.figures])
    assert len(counts) == 5 and all(n > 10 for n in counts.values()), counts
    cdf = next(f for f in r.figures if f.name == "cdf-gen")
    assert "one line per run" in cdf.caption
    # its legend: every run of the trace that has a report, by label
    from nandlab.experiment import load_runs

    rows = load_runs(sweep_dir).iter_rows(named=True)
    labels = [r["label"] for r in rows if r["trace"] == "gen" and r["report"]]
    assert len(labels) >= 2 and set(labels) <= set(_svg_texts(cdf.svg))


def test_long_run_labels_fit_their_figures(sweep_dir: Path, chromium: str, tmp_path: Path) -> None:
    """Runs labelled by many varying settings (a legend entry of 100 characters, as
    ``diffecc_wa device.dies_per_chip=2 ftl.gc_threshold_pct=10 device.channels=8
    device.chips_per_channel=1 seed=3``): the figures grow to hold the legend."""
    import shutil

    import polars as pl

    d = tmp_path / "sweep"
    shutil.copytree(sweep_dir, d, ignore=shutil.ignore_patterns("report*"))
    df = pl.read_parquet(d / "runs.parquet")
    long = " ftl.gc_threshold_pct=10 device.channels=8 device.chips_per_channel=1 seed=3"
    df.with_columns(pl.col("label") + long).write_parquet(d / "runs.parquet")
    r = build_report(d)
    with Browser(chromium) as b:
        counts = _svg_texts_inside(b, [f.svg for f in r.figures])
    assert len(counts) == 5
    cdf = next(f for f in r.figures if f.name == "cdf-gen")
    assert any(t.endswith(long) for t in _svg_texts(cdf.svg))
