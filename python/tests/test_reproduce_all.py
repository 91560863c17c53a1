"""`nandlab reproduce all --quick` (issue 32): every reproduction once, then one HTML report.

One module-scoped run serves every paper's end-to-end assertions (they used to run each
reproduction's --quick separately); a second run resumes (no run executed) and the report
opens in headless Chromium with every figure decoded and a row for every headline number of
``docs/reproductions.md``.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from _browser import Browser, ensure_chromium
from _helpers import run_cli

from nandlab.reproduce.headline import PAPERS, markdown

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs" / "reproductions.md"
DOCS_DATA = ROOT / "docs" / "data" / "reproductions-headline.json"
#: The figures each reproduction's help promises (file stems).
FIGURES = {
    "xia-diffecc": ["fig5_sweep_m", "fig6_sweep_n", "fig7_mean_response",
                    "fig8_read_write_response", "fig9_operation_distribution", "fig10_erases"],
    "ida": ["fig4_msb_reads", "fig8_read_response", "fig8b_timed", "fig9_dtr",
            "fig10_throughput"],
    "efm": ["fig5_mean_latency", "fig6_breakdown", "fig7_wear_stages", "fig8_lifetime",
            "fig10_regions"],
    "flexecc": ["fig3_mean_response", "fig4_cdf", "fig5_cleaning_time", "fig6_faults"],
    "flexlevel": ["fig23_false_identification", "fig24ab_response", "fig24c_gain_by_pe",
                  "fig24d_data_age", "fig25_writes_erases", "fig25_gc"],
    "dpa": ["fig9_decorrelation", "fig10abc_scrambling", "fig10d_dpa_ppu", "fig11_levels",
            "fig12_failure_rates", "fig13_tolerable_reads", "fig14_overheads"],
    "dmm": ["fig39", "fig40", "fig41", "fig42", "fig43", "fig44", "fig45"],
}  # fmt: skip


@pytest.fixture(scope="module")
def out(tmp_path_factory: pytest.TempPathFactory) -> Path:
    d = tmp_path_factory.mktemp("all")
    res = run_cli("reproduce", "all", "--quick", "--out", d, "-j", "2", "--no-progress",
                  timeout=1800)  # fmt: skip
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-3000:]
    return d


def doc(out: Path, paper: str) -> dict[str, Any]:
    return json.loads((out / paper / "result.json").read_text())


def test_every_reproduction_writes_the_same_kinds_of_output(out: Path) -> None:
    from nandlab.report import build_report

    for paper in PAPERS:
        d = doc(out, paper)
        assert d["paper"] == paper and d["title"] and d["quick"] is True
        for key in ("checks", "headline", "tables", "figures", "table", "runs"):
            assert key in d, (paper, key)
        assert (out / paper / "runs.parquet").is_file(), paper
        assert d["headline"] and all(
            r["verdict"] in ("matches", "differs", "not comparable") and r["unit"] is not None
            for r in d["headline"]
        ), paper
        # a difference always says why
        assert all(r["reason"] for r in d["headline"] if r["verdict"] != "matches"), paper
        for c in d["checks"]:
            assert {"name", "passed", "detail", "kind"} <= set(c), (paper, c)
            if c["kind"] == "sanity":
                assert c["passed"], (paper, c)
        for stem in FIGURES[paper]:
            for ext in ("png", "svg"):
                assert (out / paper / f"{stem}.{ext}").stat().st_size > 0, (paper, stem)
        # `nandlab report DIR` accepts every reproduction's output
        r = build_report(out / paper, out / f"{paper}.html")
        assert r.kind == "reproduce" and "Headline: the paper vs ours" in r.html.read_text()
    assert (out / "headline.md").read_text() == markdown(
        json.loads((out / "headline.json").read_text())
    )


def test_xia_diffecc(out: Path) -> None:
    d = doc(out, "xia-diffecc")
    assert all(r["error"] is None for r in d["runs"])
    hl = {h["metric"]: h for h in d["headline"]}
    assert hl["write response vs normal"]["paper"] == -48
    assert hl["write response vs normal"]["mean"] < 0


def test_ida(out: Path) -> None:
    row = doc(out, "ida")["table"][0]
    assert row["reduction_E0"] > row["reduction_E20"] > row["reduction_E80"]
    assert row["E20_extra_writes_per_block"] > 0 and row["E20_pages_adjusted"] > 0
    # IDA §III-C: moved LSB data lands on LSB pages (most of it, while blocks have them).
    assert row["E20_moved_lsb_on_lsb_share"] > 0.5
    assert row["overloaded"] is False and row["die_utilization"] is not None
    # the untimed mode's bound holds (a sanity check of the run), both modes are reported
    assert row["reduction_E0"] <= row["bound_all_lsb_on_lsb"] < 0.24
    assert row["reduction_E20_timed"] is not None


def test_efm(out: Path) -> None:
    d = doc(out, "efm")
    assert all(r["error"] is None for r in d["runs"])
    assert len(d["headline"]) == 11


def test_flexlevel(out: Path) -> None:
    fin = {r["trace"]: r for r in doc(out, "flexlevel")["table"]}["Financial1 excerpt"]
    # Capacity loss exactly 6.25 % (AccessEval) and 25 % (LevelAdjust-only) of the raw pages.
    assert abs(fin["access_eval_capacity_loss_percent"] - 6.25) < 0.1
    assert abs(fin["level_adjust_only_capacity_loss_percent"] - 25.0) < 1e-9
    assert fin["read_ratio_level_adjust_only"] < fin["read_ratio_access_eval"] < 1.0
    assert fin["false_id_iwfr"] is not None and fin["migrations"] > 0
    # the data-age sweep and Fig. 25 on a device GC works on
    assert fin["age_sweep"]["30"]["read_ratio_access_eval"] < fin["read_ratio_access_eval"]
    assert fin["gc_baseline_erases"] > 0 and fin["gc_erases_ratio_access_eval"] is not None


def test_flexecc(out: Path) -> None:
    d = doc(out, "flexecc")
    rows = {r["workload"]: r for r in d["table"]}
    assert {"R_75", "R_90", "OLTP"} <= set(rows)
    for r in rows.values():
        assert r["bch_ssd"]["table3"]["crc_read"] == 0 and r["flexecc"]["table3"]["crc_read"] > 0
        assert r["flexecc"]["invariant_violations"] == 0
        assert r["crc_read_share"] is not None
    assert all(f["bch_ssd_disk_access"] == 0 for f in d["faults"])
    assert set(d["calibration"]) == {"R_75", "R_90"}
    # Table 3's mix: R_75 serves nearly all its host reads from CRC (clean) pages
    assert rows["R_75"]["crc_read_share"] >= 0.80 > rows["R_90"]["crc_read_share"]
    assert rows["R_75"]["fast_gain"] is not None


def test_dpa(out: Path) -> None:
    d = doc(out, "dpa")
    names = {r["profile"] for r in d["table"]}
    assert {"baseline", "8 B (thesis Fig. 11)", "4 B (all data)"} <= names
    rows = {r["trace"]: r for r in d["fig14"]["table"]}
    fin, web = rows["Financial1 excerpt"], rows["WebSearch1 excerpt"]
    for r in (fin, web):
        assert r["time_scale"] is not None and r["overloaded"] is False
        assert r["mean_ratio_dpa_4B"] >= r["mean_ratio_dpa_8B"] * 0.999 >= 0.998
    # Writes: at least the tag-overflow floor on the write-heavy trace, 4 B above 8 B.
    assert fin["programs_ratio_dpa_8B"] > 1.05
    assert fin["programs_ratio_dpa_4B"] > fin["programs_ratio_dpa_8B"]
    # A read-only trace pays in redundant reads (the thesis's Web case), the cache rarely hits.
    assert web["redundant_reads_dpa_4B"] > 10 * (web["cache_hits_dpa_4B"] or 0)
    assert (out / "dpa" / "table5.csv").read_text().startswith("poly,")


def test_dmm(out: Path) -> None:
    d = doc(out, "dmm")
    assert set(d["traces"]) >= {"pgbench_rw_fs", "devtree_fs"}
    pg = d["trace_results"]["pgbench_rw_fs"]
    assert 0.6 < pg["fill"] <= 0.70 and pg["runs"]["obfs"]["commands"] == 20_000
    names = {c["name"] for c in d["checks"]}
    assert "write response falls 4 -> 8 -> 16 channels (F41)" in names
    bands = [c for c in d["checks"] if c["name"].startswith("OBFS ")]
    assert len(bands) == 3 and all(c["passed"] in (True, False) for c in bands), bands
    # the thesis's comparisons are results: a failing one is reported, the exit status is 0
    assert all(c["kind"] == "paper" for c in d["checks"])


def test_second_run_resumes(out: Path) -> None:
    before = {p: doc(out, p) for p in PAPERS}
    res = run_cli("reproduce", "all", "--quick", "--out", out, "--no-progress", timeout=900)
    assert res.returncode == 0, res.stderr[-3000:]
    for p in PAPERS:
        d = doc(out, p)
        grid = d.get("grid") or d["fig14"]["grid"]
        assert grid["executed"] == 0, (p, grid)
        assert d["headline"] == before[p]["headline"], p


def _docs_headline() -> list[tuple[str, str]]:
    """(paper, metric) of every row of docs/reproductions.md's generated headline table."""
    text = DOCS.read_text(encoding="utf-8")
    table = text.split("<!-- headline:begin -->")[1].split("<!-- headline:end -->")[0]
    rows = [ln.split(" | ") for ln in table.strip().splitlines()[2:]]
    return [(r[0].lstrip("| ").strip(), r[1].replace("\\|", "|").strip()) for r in rows]


def test_docs_headline_table_is_the_data() -> None:
    """The table in docs/reproductions.md is the one the measured rows give."""
    rows = json.loads(DOCS_DATA.read_text(encoding="utf-8"))
    text = DOCS.read_text(encoding="utf-8")
    assert "<!-- headline:begin -->\n" + markdown(rows) + "<!-- headline:end -->" in text


@pytest.fixture(scope="module")
def chromium() -> str:
    exe, why = ensure_chromium()
    if exe is None:
        pytest.skip(f"headless Chromium unavailable: {why}")
    return exe


def test_report_in_headless_chromium(out: Path, chromium: str, tmp_path: Path) -> None:
    with Browser(chromium) as b:
        b.open(out / "report.html")
        n = b.evaluate("document.images.length")
        assert n >= sum(len(v) for v in FIGURES.values())
        sizes = b.evaluate(
            "Promise.all(Array.from(document.images).map(i => i.decode()))"
            ".then(() => Array.from(document.images).map(i => [i.naturalWidth, i.naturalHeight]))",
            await_promise=True,
        )
        assert all(w > 100 and h > 100 for w, h in sizes), sizes
        rows = b.evaluate(
            "Array.from(document.querySelectorAll('#headline tbody tr'))"
            ".map(r => [r.dataset.paper, r.dataset.metric])"
        )
        errors = b.console_errors()
    assert errors == []
    have = {tuple(r) for r in rows}
    missing = [r for r in _docs_headline() if r not in have]
    assert not missing, missing
    assert re.search(r"\d+ match", (out / "report.html").read_text())
