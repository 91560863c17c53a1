"""The package's file-level import graph has no cycle.

Every module of ``python/nandlab`` is parsed with :mod:`ast` (nothing is imported), and every
import in it becomes an edge to the file it names: ``import nandlab.x``, ``from nandlab.x
import y``, ``from . import x``, ``from ..x import y``, including imports inside functions and
under ``if TYPE_CHECKING:`` (a cycle that only a lazy import keeps from failing is still a
cycle). ``from P import name`` is an edge to the file of ``P.name`` when that is a module of the
package, else to ``P``'s own file. Importing ``P.x`` also runs ``P/__init__.py``: from a module
outside ``P`` that implicit step is an edge to ``P`` too (``nandlab.report`` importing
``nandlab.reproduce.fmt`` runs ``nandlab/reproduce/__init__.py``, and whatever that imports);
from a module inside ``P`` it is not (``P`` is already imported, and a package's ``__init__``
importing its own modules is no cycle).
"""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = "nandlab"
ROOT = Path(__file__).resolve().parents[1] / PACKAGE


def module_files(root: Path = ROOT, package: str = PACKAGE) -> dict[str, Path]:
    """Every module of the package by dotted name (a package by its own name); the compiled
    core by its stub (``_core.pyi``)."""
    out: dict[str, Path] = {}
    for path in sorted([*root.rglob("*.py"), *root.rglob("*.pyi")]):
        if path.suffix == ".pyi" and path.with_suffix(".py").exists():
            continue
        parts = list(path.relative_to(root).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        out[".".join([package, *parts])] = path
    return out


def _resolve(module: str, is_package: bool, level: int, target: str | None) -> str:
    """The absolute name a (possibly relative) ``from`` import refers to."""
    if level == 0:
        return target or ""
    base = module.split(".")
    if not is_package:
        base.pop()  # a module's relative imports start from its package
    if level > 1:
        base = base[: len(base) - (level - 1)]
    return ".".join([*base, target] if target else base)


def imports_of(module: str, path: Path, modules: dict[str, Path]) -> dict[str, int]:
    """The package's modules that ``module`` imports, each with the first line doing it."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    is_package = path.name == "__init__.py"
    found: dict[str, int] = {}

    def add(name: str, line: int) -> None:
        # the longest prefix of ``name`` that is a module of the package
        parts = name.split(".")
        while parts and ".".join(parts) not in modules:
            parts.pop()
        target = ".".join(parts)
        if target and target != module:
            found[target] = min(line, found.get(target, line))

    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] == PACKAGE:
                    add(alias.name, node.lineno)
        elif isinstance(node, ast.ImportFrom):
            base = _resolve(module, is_package, node.level, node.module)
            if base.split(".")[0] != PACKAGE:
                continue
            for alias in node.names:
                sub = f"{base}.{alias.name}"
                add(sub if sub in modules else base, node.lineno)
    return found


def import_graph(root: Path = ROOT, package: str = PACKAGE) -> dict[str, dict[str, int]]:
    """module -> {imported module: line} for every module of the package, with the implicit
    edge to every package whose ``__init__`` an import runs (the module doc)."""
    modules = module_files(root, package)
    graph = {m: imports_of(m, p, modules) for m, p in modules.items()}
    packages = {m for m, p in modules.items() if p.name == "__init__.py"}
    for m, edges in graph.items():
        for target, line in list(edges.items()):
            parts = target.split(".")
            for i in range(1, len(parts)):
                pkg = ".".join(parts[:i])
                if pkg in packages and pkg != m and not m.startswith(pkg + "."):
                    edges[pkg] = min(line, edges.get(pkg, line))
    return graph


def _shortest_cycle(graph: dict[str, dict[str, int]], start: str) -> list[str] | None:
    """The shortest cycle through ``start`` as [start, ..., start] (breadth first)."""
    parent: dict[str, str] = {}
    frontier = [start]
    seen = {start}
    while frontier:
        nxt_frontier = []
        for node in frontier:
            for nxt in sorted(graph.get(node, {})):
                if nxt == start:
                    path = [node]
                    while path[-1] != start:
                        path.append(parent[path[-1]])
                    return [start, *reversed(path[:-1]), start]
                if nxt not in seen:
                    seen.add(nxt)
                    parent[nxt] = node
                    nxt_frontier.append(nxt)
        frontier = nxt_frontier
    return None


def strongly_connected(graph: dict[str, dict[str, int]]) -> list[list[str]]:
    """The graph's strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    components: list[list[str]] = []

    def connect(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph.get(v, {})):
            if w not in index:
                connect(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                components.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            connect(v)
    return sorted(components)


def all_cycles(graph: dict[str, dict[str, int]]) -> list[list[str]]:
    """For every module on a cycle, the shortest cycle through it (each cycle once, written
    from its alphabetically first module)."""
    out: set[tuple[str, ...]] = set()
    for comp in strongly_connected(graph):
        for module in comp:
            cycle = _shortest_cycle(graph, module)
            if cycle:
                ring = cycle[:-1]
                i = ring.index(min(ring))
                ring = ring[i:] + ring[:i]
                out.add((*ring, ring[0]))
    return sorted(list(c) for c in out)


def describe(cycle: list[str], graph: dict[str, dict[str, int]], modules: dict[str, Path]) -> str:
    steps = []
    for a, b in zip(cycle, cycle[1:]):
        rel = modules[a].relative_to(ROOT.parent)
        steps.append(f"{a} ({rel}:{graph[a][b]}) imports {b}")
    return " -> ".join(cycle) + "\n    " + "\n    ".join(steps)


def test_no_import_cycle() -> None:
    graph = import_graph()
    modules = module_files()
    cycles = all_cycles(graph)
    assert not cycles, "file-level import cycles in the nandlab package:\n  " + "\n  ".join(
        describe(c, graph, modules) for c in cycles
    )


def test_the_graph_sees_every_kind_of_import(tmp_path: Path) -> None:
    """The walker finds absolute, relative, package-level, in-function and type-checking
    imports, and a cycle made only of a lazy import."""
    pkg = tmp_path / PACKAGE
    (pkg / "sub").mkdir(parents=True)
    files = {
        "__init__.py": "",
        "a.py": "from nandlab.b import thing\n",
        "b.py": "def f():\n    from . import c\n",
        "c.py": "import nandlab.sub.d\n",
        "sub/__init__.py": "from .d import x\n",
        "sub/d.py": "from .. import a\n",
        "e.py": "from nandlab import a\nfrom nandlab.sub import x\n",
        "sub/f.py": "import typing\n\nif typing.TYPE_CHECKING:\n    from ..c import y\n",
    }
    for name, text in files.items():
        (pkg / name).write_text(text, encoding="utf-8")
    graph = import_graph(pkg, PACKAGE)
    assert graph["nandlab.a"] == {"nandlab.b": 1}
    assert graph["nandlab.b"] == {"nandlab.c": 2}
    # importing nandlab.sub.d runs nandlab/sub/__init__.py: an edge from outside the package
    assert graph["nandlab.c"] == {"nandlab.sub.d": 1, "nandlab.sub": 1}
    assert graph["nandlab.sub"] == {"nandlab.sub.d": 1}
    assert graph["nandlab.sub.d"] == {"nandlab.a": 1}
    assert graph["nandlab.e"] == {"nandlab.a": 1, "nandlab.sub": 2}
    assert graph["nandlab.sub.f"] == {"nandlab.c": 4}
    assert all_cycles(graph) == [
        ["nandlab.a", "nandlab.b", "nandlab.c", "nandlab.sub", "nandlab.sub.d", "nandlab.a"],
        ["nandlab.a", "nandlab.b", "nandlab.c", "nandlab.sub.d", "nandlab.a"],
    ]
    (pkg / "b.py").write_text("def f():\n    pass\n", encoding="utf-8")
    assert all_cycles(import_graph(pkg, PACKAGE)) == []


def test_a_package_init_is_on_the_path_of_an_import(tmp_path: Path) -> None:
    """``report`` importing ``rep.fmt`` runs ``rep/__init__.py``; when that imports a module
    that imports ``report``, that is a cycle (``nandlab.report -> nandlab.reproduce ->
    nandlab.reproduce.run_all -> nandlab.report`` before issue 31), though no module imports
    another that imports it back directly."""
    pkg = tmp_path / PACKAGE
    (pkg / "rep").mkdir(parents=True)
    files = {
        "__init__.py": "",
        "report.py": "def f():\n    from nandlab.rep.fmt import x\n",
        "rep/__init__.py": "from nandlab.rep import run_all\n",
        "rep/fmt.py": "x = 1\n",
        "rep/run_all.py": "def g():\n    from nandlab.report import f\n",
    }
    for name, text in files.items():
        (pkg / name).write_text(text, encoding="utf-8")
    graph = import_graph(pkg, PACKAGE)
    assert graph["nandlab.report"] == {"nandlab.rep.fmt": 2, "nandlab.rep": 2}
    assert graph["nandlab.rep"] == {"nandlab.rep.run_all": 1}  # its own module: no self edge
    assert all_cycles(graph) == [
        ["nandlab.rep", "nandlab.rep.run_all", "nandlab.report", "nandlab.rep"]
    ]
    (pkg / "rep/__init__.py").write_text('"""The package."""\n', encoding="utf-8")
    assert all_cycles(import_graph(pkg, PACKAGE)) == []
