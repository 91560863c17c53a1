"""Bundled traces by name in every command (issue 33, item 3): one resolver
(:func:`nandlab.data.resolve_trace`) for `run`, `trace stats`, `trace convert`, `bench --cache`,
`compare`, `sweep` and :func:`nandlab.simulate`; `nandlab trace list` lists them."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from _helpers import run_cli

import nandlab
from nandlab.data import BUNDLED_SOURCES, bundled_by_name, bundled_traces, resolve_trace

ROOT = Path(__file__).resolve().parents[2]
NAMES = sorted(bundled_by_name())


def test_every_bundled_trace_has_a_source_and_a_provenance_row() -> None:
    prov = (ROOT / "python/nandlab/data/PROVENANCE.md").read_text(encoding="utf-8")
    for p in bundled_traces():
        assert p.name in BUNDLED_SOURCES, f"add {p.name} to nandlab.data.BUNDLED_SOURCES"
        assert f"`{p.name}`" in prov, f"add a row for {p.name} to PROVENANCE.md"
    assert set(BUNDLED_SOURCES) == {p.name for p in bundled_traces()}


def test_resolver(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    slice_ = resolve_trace("pgbench_rw_slice")
    assert slice_.name == "pgbench_rw_slice.csv.gz" and slice_.is_file()
    assert resolve_trace("pgbench_rw_slice.csv.gz") == slice_
    # a file of that path wins over the bundled name
    own = tmp_path / "pgbench_rw_slice"
    own.write_text("0,W,0,4096\n")
    assert resolve_trace("pgbench_rw_slice") == Path("pgbench_rw_slice")
    with pytest.raises(FileNotFoundError, match=r"nor a bundled trace name.*msr_hm_0_sample1000"):
        resolve_trace("no_such_trace")


@pytest.mark.parametrize("name", NAMES)
def test_run_takes_every_bundled_name(name: str, tmp_path: Path) -> None:
    out = tmp_path / "r.json"
    res = run_cli(
        "run", "-t", name, "-c", "xia-diffecc", "--set", "host.max_requests=2000", "--json", out
    )
    assert res.returncode == 0, res.stderr
    rep = json.loads(out.read_text())
    assert Path(rep["trace"]["path"]).name == bundled_by_name()[name].name


def test_trace_stats_and_convert_take_a_name(tmp_path: Path) -> None:
    res = run_cli("trace", "stats", "msr_hm_0_sample1000", "--json", "-")
    assert res.returncode == 0, res.stderr
    assert json.loads(res.stdout)["requests"] == 1000
    res = run_cli("trace", "convert", "msr_hm_0_sample1000", tmp_path / "hm.csv")
    assert res.returncode == 0 and "wrote 1,000 requests" in res.stdout, res.stderr


def test_unknown_name_is_one_line_naming_the_bundled_ones() -> None:
    res = run_cli("run", "-t", "pgbench_rw_slise")
    assert res.returncode == 2
    (line,) = res.stderr.strip().splitlines()
    assert "pgbench_rw_slise" in line and "pgbench_rw_slice" in line and "trace list" in line


def test_simulate_takes_a_name() -> None:
    r = nandlab.simulate("xia-diffecc", "msr_hm_0_sample1000")
    assert r.report["host"]["requests"] == 1000


def test_trace_list() -> None:
    res = run_cli("trace", "list", "--json", "-")
    assert res.returncode == 0, res.stderr
    rows = json.loads(res.stdout)
    assert [r["name"] for r in rows] == NAMES
    by = {r["name"]: r for r in rows}
    assert by["pgbench_rw_slice"]["requests"] == 300_000
    assert by["msr_hm_0_sample1000"]["format"] == "msr"
    assert all(r["source"] and r["size_bytes"] > 0 for r in rows)
    table = run_cli("trace", "list")
    assert table.returncode == 0
    for name in NAMES:
        assert name in table.stdout
    assert re.search(r"300,000\s.*MiB", table.stdout)
