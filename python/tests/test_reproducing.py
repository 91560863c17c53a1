"""`docs/reproducing.md` ("how to add a reproduction"): its code blocks, run in order, build a
toy reproduction on the framework and run it end to end; the package has no import cycle
through the reproductions."""

from __future__ import annotations

import ast
import re
from pathlib import Path

from nandlab.reproduce import framework as fw
from nandlab.reproduce.common import TraceChoice

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "reproducing.md"
PACKAGE = ROOT / "python" / "nandlab"


def test_the_recipe_runs(tmp_path: Path) -> None:
    blocks = re.findall(r"```python\n(.*?)```", DOC.read_text(encoding="utf-8"), re.S)
    assert len(blocks) >= 5, "docs/reproducing.md lost its code blocks"
    ns: dict[str, object] = {"out": tmp_path / "toy"}
    for code in blocks:
        exec(compile(code, str(DOC), "exec"), ns)  # the page's own code
    toy = ns["TOY"]
    assert isinstance(toy, fw.Reproduction)
    # the recipe's plan: two runs a trace, the baseline sets the load level
    t = TraceChoice("t", Path("x.csv"), "ours")
    assert [p.variant.name for p in fw.plan_runs(toy, [t], True)] == ["baseline", "fast"]


def _imports(path: Path, modules: set[str]) -> set[str]:
    """Modules of the package that ``path`` imports (anywhere in the file)."""
    out: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            out |= {a.name for a in node.names if a.name in modules}
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            subs = {f"{node.module}.{a.name}" for a in node.names} & modules
            out |= subs or ({node.module} & modules)
    return out


def test_no_import_cycle_through_the_reproductions() -> None:
    """No module of nandlab.reproduce, nor the report and figure modules, is on an import
    cycle (every import counts, also those inside functions)."""
    modules: dict[str, Path] = {}
    for p in PACKAGE.rglob("*.py"):
        parts = p.relative_to(PACKAGE.parent).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        modules[name] = p
    graph = {m: _imports(p, set(modules)) - {m} for m, p in modules.items()}
    mine = [m for m in modules if m.startswith("nandlab.reproduce")]
    mine += ["nandlab.report", "nandlab.figures"]
    for start in mine:
        # depth-first search for a path back to start
        stack, seen = [(start, [start])], set()
        while stack:
            m, path = stack.pop()
            for n in graph[m]:
                if n == start:
                    raise AssertionError("import cycle: " + " -> ".join([*path, n]))
                if n not in seen:
                    seen.add(n)
                    stack.append((n, [*path, n]))
