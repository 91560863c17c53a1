"""``docs/architecture.md`` (issue 31): its paths exist, and its recipes are followed.

* Every file, folder and core module the page names exists (the diagram and the table).
* Recipe (c), add a reproduction: the page's python blocks, run in order on a generated trace
  named as the page names it, define a tiny reproduction and run it end to end; its plan and
  its check are then checked on their own (the check fails on reports where the fast runs are
  slower). Registering a reproduction touches two lists; they name the same papers.
* Recipe (b), add a trace format: ``cli_common.TRACE_FORMATS`` (``--format``'s choices) names
  the formats the core reads. Recipes (a) and (b) are otherwise followed by the core's
  ``tests/recipes.rs``, whose code the page's ``rust`` blocks are (test_doc_examples.py).
* No Rust or Python source file is over 1,000 lines unless its module doc says "kept as one
  file because …".
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from _helpers import generate

import nandlab
from nandlab import _core
from nandlab.cli.reproduce import reproduce
from nandlab.cli_common import TRACE_FORMATS
from nandlab.reproduce import framework as fw
from nandlab.reproduce.common import TraceChoice
from nandlab.reproduce.headline import PAPERS

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "architecture.md"
CORE = ROOT / "crates" / "nandlab-core"
#: where a path the page names may start: the repository, the core's sources and crate, the
#: object device's folder (the diagram's ``device/…``), the Python package, the docs (links)
BASES = [ROOT, CORE / "src", CORE, CORE / "src" / "osd", ROOT / "python" / "nandlab", ROOT / "docs"]
#: where the diagram's file names (``sniff.rs`` on the line of ``trace::``) are looked for
TREES = [CORE / "src", ROOT / "crates" / "nandlab-py" / "src", ROOT / "python" / "nandlab"]
#: what the recipes make: not in the repository
MADE = {"crates/nandlab-core/src/scheme/toy.rs", "python/nandlab/reproduce/tiny.py", "tiny-out/"}
_PATH = re.compile(r"(?<![\w./<>-])((?:[\w-]+/)*[\w-]+\.(?:rs|py|md|toml)|(?:[\w-]+/)+)(?![\w<>])")
_MODULE = re.compile(r"(?<![\w:])([a-z_]+(?:::[a-z_]+)+|[a-z_]+::)(?![\w{(])")


#: crates that are not the core (``std::io::BufRead``, ``serde_json::json``)
_NOT_CORE = {"nandlab_core", "crate", "std", "serde_json", "toml"}


def _text() -> str:
    return DOC.read_text(encoding="utf-8")


def _exists(rel: str) -> bool:
    if "/" not in rel.rstrip("/"):  # a file name of the diagram: somewhere in the sources
        return any((b / rel).exists() or any(b.rglob(rel)) for b in BASES[:1] + TREES)
    return any((b / rel).exists() for b in BASES)


def test_every_path_on_the_page_exists() -> None:
    names = {m.group(1) for m in _PATH.finditer(_text())}
    names = {n for n in names if not n.startswith("../") and "<" not in n}
    assert len(names) > 80, f"the page lost its paths? {sorted(names)}"
    assert names >= MADE, "the recipes name the files they make"
    missing = sorted(n for n in names - MADE if not _exists(n))
    assert not missing, f"docs/architecture.md names paths that do not exist: {missing}"
    assert not [n for n in MADE if (ROOT / n).exists()], "a recipe's toy is in the repository"


def _core_item(path: str) -> bool:
    """``trace::``, ``osd::objfs``: a folder or a file of the core; ``api::simulate_source``:
    a module and one of its items (a function, a module or a re-export)."""
    src = CORE / "src"
    parts = [p for p in path.split("::") if p]
    for n in range(len(parts), 0, -1):
        base = src.joinpath(*parts[:n])
        files = [base / "mod.rs", base.with_suffix(".rs")]
        if not base.is_dir() and not base.with_suffix(".rs").is_file():
            continue
        rest = parts[n:]
        if not rest:
            return True
        text = "".join(f.read_text(encoding="utf-8") for f in files if f.is_file())
        name = re.escape(rest[0])
        return len(rest) == 1 and bool(
            re.search(rf"\b(fn|mod|struct|enum|const) {name}\b|^pub use .*\b{name}\b", text, re.M)
        )
    return False


def test_every_core_module_on_the_page_exists() -> None:
    mods = {m.group(1).removesuffix("::") for m in _MODULE.finditer(_text())}
    mods = {m.removeprefix("nandlab_core::") for m in mods}
    mods = {m for m in mods if m.split("::")[0] not in _NOT_CORE}
    assert {"trace", "host", "hil", "scheme", "ftl", "sched", "exec", "flash"} <= mods
    assert {"osd::objfs", "host::cache", "api::simulate_source"} <= mods
    missing = sorted(
        m
        for m in mods
        if not _core_item(m) and not (CORE / "tests" / f"{m}.rs").is_file()  # `recipes::`
    )
    assert not missing, f"docs/architecture.md names core modules that do not exist: {missing}"


def test_the_diagram_names_every_public_module_of_the_core() -> None:
    (diagram,) = [b for b in re.findall(r"```text\n(.*?)```", _text(), re.S) if "RUST" in b]
    lib = (CORE / "src" / "lib.rs").read_text(encoding="utf-8")
    public = re.findall(r"^pub mod (\w+);", lib, re.M)
    left_out = {"api", "config", "error", "mem", "rng"}  # in the table, not on the data path
    missing = [m for m in public if m not in left_out and f"{m}::" not in diagram]
    assert not missing, f"the data path does not show {missing}"
    table = _text().split("## Where each concept lives", 1)[1]
    for m in left_out:
        assert f"src/{m}" in table, f"the table does not place {m}"


# --------------------------------------------------------------------------- recipe (c)


def _run_recipe(where: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    """The page's python blocks, in order, in ``where`` (with the page's ``t.csv``)."""
    blocks = re.findall(r"```python\n(.*?)```", _text(), re.S)
    assert len(blocks) == 2, "docs/architecture.md: recipe (c) has two python blocks"
    assert all("t.csv" in b for b in blocks), "each block names the trace it needs"
    generate(where / "t.csv", requests=2000, span_bytes=1 << 30, iops=2000.0, seed=33)
    empty = where / "no-shared-traces"
    empty.mkdir()
    monkeypatch.setenv("NANDLAB_SHARED_TRACES", str(empty))
    monkeypatch.chdir(where)
    ns: dict[str, Any] = {"__name__": "__architecture__"}
    for code in blocks:
        exec(compile(code, str(DOC), "exec"), ns)  # the page's own code
    return ns


def test_the_reproduction_recipe_runs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    ns = _run_recipe(tmp_path, monkeypatch)
    tiny = ns["TINY"]
    assert isinstance(tiny, fw.Reproduction) and tiny.paper == "tiny"
    doc = json.loads((tmp_path / "tiny-out" / "result.json").read_text())
    assert doc["paper"] == "tiny"
    assert [t["path"] for t in doc["traces"]] == ["t.csv"]
    # two runs of the one trace, at the load level the baseline set
    assert sorted(r["label"] for r in doc["runs"]) == ["baseline", "fast"]
    (row,) = doc["table"]
    assert row["overloaded"] is False and 0.3 < row["write_ratio"] < 0.8
    (head,) = doc["headline"]
    assert head["mean"] < 0  # ours is a change in percent, as the paper's -50
    # the plan and the check on their own: the check fails when the fast runs are slower
    t = TraceChoice("t", Path("t.csv"), "ours")
    assert [p.variant.name for p in fw.plan_runs(tiny, [t], True)] == ["baseline", "fast"]

    def report(write_us: dict[str, float]) -> Any:
        def rep(p: fw.Planned) -> dict[str, Any]:
            return {"host": {"write_mean_us": write_us[p.variant.name]}}

        return rep

    ok = fw.analyse_reports(tiny, [t], report({"baseline": 100.0, "fast": 60.0}), quick=True)
    bad = fw.analyse_reports(tiny, [t], report({"baseline": 100.0, "fast": 120.0}), quick=True)
    assert [c["passed"] for c in ok.checks] == [True]
    assert [c["passed"] for c in bad.checks] == [False]


def test_registered_reproductions_are_the_papers_of_reproduce_all() -> None:
    """The recipe's two registration steps: ``reproduce.add_command`` and ``PAPERS``."""
    assert set(reproduce.commands) - {"all"} == set(PAPERS)


# --------------------------------------------------------------------------- recipe (b)


def test_format_choices_are_the_formats_the_core_reads(tmp_path: Path) -> None:
    """Step 5 of the in-crate recipe: ``--format`` offers exactly the core's formats (the core
    lists them when it cannot sniff a file)."""
    p = tmp_path / "unknown.txt"
    p.write_text("not a trace line at all\n")
    with pytest.raises(nandlab.TraceError) as e:
        _core.parse_only(str(p), "{}")
    m = re.search(r"known formats: ([a-z, ]+)", str(e.value))
    assert m, str(e.value)
    assert [f.strip() for f in m.group(1).split(",")] == TRACE_FORMATS


def test_no_source_file_over_1000_lines_without_a_reason() -> None:
    long = []
    for path in [*(ROOT / "crates").rglob("*.rs"), *(ROOT / "python").rglob("*.py")]:
        text = path.read_text(encoding="utf-8")
        lines = text.count("\n")
        if lines > 1000 and "kept as one file because" not in text:
            long.append(f"{path.relative_to(ROOT)}: {lines:,} lines")
    assert not long, "split these files by subject, or say why not in the module doc: " + str(long)
