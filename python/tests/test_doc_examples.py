"""Every command and Python snippet in README.md and docs/*.md runs, as written (issue 33).

What is collected: every fenced block of README.md and docs/*.md. A block labelled ``bash`` or
``python`` is run; ``text`` (output, error messages, diagrams) and ``toml`` (file contents) are
not. A ``rust`` block is not run here: it must be found, line for line (leading and trailing
blanks aside), in a file of ``crates/nandlab-core/tests/``, where ``cargo test`` runs it
(docs/architecture.md's recipes are ``tests/recipes.rs``). A block without a language, or with
another one, fails the test: label it, so that no example is left out by accident.

How a block runs:

* **bash**: the block as it is, by ``bash -e -o pipefail`` in a fresh temporary directory,
  with this interpreter's ``nandlab`` first on ``PATH``; comments (``# ...``) are bash
  comments. It must exit 0.
* **python**: the block as it is, by ``exec`` with the temporary directory as the working
  directory. The python blocks of one file share one namespace, in order (a page that builds
  something up, as docs/reproducing.md does, runs like a notebook).
* ``NANDLAB_SHARED_TRACES`` points at an empty directory, so an example sees what a fresh clone
  has: the bundled traces, not the workspace's captured ones.

Markers, an HTML comment on the line right before the opening fence:

* ``<!-- example: slow -->``: run only with ``pytest -m slow`` (the default run excludes the
  ``slow`` marker, pyproject.toml), for an example that takes minutes even in its documented
  reduced form (a whole reproduction, the datasheet, the speed benchmark);
* ``<!-- example: not-run: REASON -->``: never run; for what needs something a test cannot
  have (a Slurm cluster, a Dask scheduler address, the build itself). The reason is required.

A marker anywhere else, or one of another kind, fails the test.

Placeholders. An example may name a file the package does not ship; the test makes a stand-in
of the same format under the same name in the temporary directory before the block runs, and
changes nothing in the block's text. These are all of them (:data:`PLACEHOLDERS`):

=================================================  ==============================================
name in the docs                                   stand-in
=================================================  ==============================================
``hm_0.csv.gz``                                    the bundled ``msr_hm_0_sample1000.csv``, gzip
``trace.csv.gz``, ``pgbench_rw.csv.gz``,           the first 20,000 requests of the bundled
``pgbench_wh.csv.gz``                              ``pgbench_rw_slice.csv.gz`` (MSR CSV, gzip; the
                                                   captured traces are MSR CSV)
``Financial1.spc``, ``in.spc``                     the SPC sample of the core's tests
                                                   (``spc_financial1_head.spc``)
``t.csv``                                          a canonical trace (2,000 requests, generated)
``light.csv``, ``heavy.csv``                       the two flows of docs/multi-tenant.md,
                                                   generated as its first example does (5,000
                                                   requests at 500/s; 20,000 at 2,000/s; 4 GiB)
``grid.toml``                                      a 2-run grid: ``xia-diffecc``, schemes
                                                   ``baseline`` and ``diffecc_wa``, the bundled
                                                   ``msr_hm_0_sample1000``
``devtree_fs.jsonl.gz``,                           a generated file-level trace (2,000 records
``shared/traces/captured/pgbench_rw_fs.jsonl.gz``  over 40 files, JSON lines, gzip)
``data.bin``                                       256 KiB of text and binary data (a user's file
                                                   for ``dpa analyze``)
``out`` (a Python name, docs/reproducing.md)       a fresh directory (``Path``)
=================================================  ==============================================
"""

from __future__ import annotations

import gzip
import json
import os
import random
import re
import subprocess
import sys
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
RUN = {"bash", "python"}
NOT_RUN = {"text", "toml"}
#: not run here: found line for line in the crate's tests (:func:`test_rust_blocks_are_tested`)
CHECKED = {"rust"}
CRATE_TESTS = ROOT / "crates" / "nandlab-core" / "tests"
_FENCE = re.compile(r"^(\s*)```([A-Za-z0-9_+-]*)\s*$")
_MARKER = re.compile(r"^\s*<!--\s*example:\s*(.*?)\s*-->\s*$")
_ANY_MARKER = re.compile(r"^\s*<!--\s*example\b")
#: Seconds one block may take (the slowest unmarked block takes about 30 s on a 2-core VM).
BLOCK_TIMEOUT_S = 600


@dataclass
class Block:
    path: Path
    line: int  # 1-based line of the opening fence
    lang: str
    code: str
    marker: str | None  # "slow", "not-run: REASON", or None

    @property
    def id(self) -> str:
        return f"{self.path.relative_to(ROOT)}:{self.line}"


def collect(path: Path) -> list[Block]:
    """The fenced blocks of a Markdown file, each with the marker on the line before it."""
    lines = path.read_text(encoding="utf-8").splitlines()
    out: list[Block] = []
    i = 0
    while i < len(lines):
        m = _FENCE.match(lines[i])
        if not m:
            i += 1
            continue
        indent, lang = m.group(1), m.group(2).lower()
        j = i + 1
        while j < len(lines) and lines[j].strip() != "```":
            j += 1
        prev = _MARKER.match(lines[i - 1]) if i > 0 else None
        code = "\n".join(ln[len(indent) :] for ln in lines[i + 1 : j]) + "\n"
        out.append(Block(path, i + 1, lang, code, prev.group(1) if prev else None))
        i = j + 1
    return out


BLOCKS = [b for p in DOCS for b in collect(p)]


def _kind(b: Block) -> str:
    if b.lang in NOT_RUN | CHECKED:
        return "not-run"
    if b.marker is None:
        return "run"
    if b.marker == "slow":
        return "slow"
    return "not-run"


# --------------------------------------------------------------------------- placeholders


def _bundled(name: str) -> Path:
    from nandlab.data import data_dir

    return data_dir() / name


def _slice_head(dest: Path, n: int = 20_000) -> None:
    with gzip.open(_bundled("pgbench_rw_slice.csv.gz"), "rt", encoding="utf-8") as f:
        head = [next(f) for _ in range(n)]
    with gzip.open(dest, "wt", encoding="utf-8") as g:
        g.writelines(head)


def _gzip_copy(src: Path, dest: Path) -> None:
    with gzip.open(dest, "wb") as g:
        g.write(src.read_bytes())


def _spc(dest: Path) -> None:
    dest.write_bytes(
        (ROOT / "crates/nandlab-core/tests/data/trace/spc_financial1_head.spc").read_bytes()
    )


def _canonical(dest: Path) -> None:
    from _helpers import generate

    generate(dest, requests=2000, span_bytes=1 << 30, iops=2000.0, seed=33)


def _flow(requests: int, iops: float, seed: int) -> Callable[[Path], None]:
    """A flow of docs/multi-tenant.md, as its first example generates it."""

    def make(dest: Path) -> None:
        from _helpers import generate

        generate(dest, requests=requests, span_bytes=4 << 30, iops=iops, seed=seed)

    return make


def _grid(dest: Path) -> None:
    dest.write_text(
        'configs = ["xia-diffecc"]\nschemes = ["baseline", "diffecc_wa"]\n'
        'traces = ["msr_hm_0_sample1000"]\n'
    )


def _fs_trace(dest: Path, records: int = 2000, files: int = 40) -> None:
    """A file-level trace (the JSON-lines format of docs/osd.md): files created, written,
    read, fsync'ed, renamed and deleted, seeded."""
    rng = random.Random(33)
    dest.parent.mkdir(parents=True, exist_ok=True)
    sizes: dict[str, int] = {}
    lines = []
    t = 0
    for i in range(records):
        t += rng.randint(20_000, 200_000)
        path = f"db/f{rng.randrange(files)}"
        rec: dict[str, object] = {"t_ns": t, "path": path, "pid": 1, "lat_ns": 1000}
        if path not in sizes:
            rec.update(op="create", offset=None, size=None)
            sizes[path] = 0
        else:
            r = rng.random()
            size = rng.choice([4096, 8192, 16384, 65536])
            if r < 0.45:
                off = rng.randrange(0, max(sizes[path], 1) + 1, 4096)
                rec.update(op="write", offset=off, size=size)
                sizes[path] = max(sizes[path], off + size)
            elif r < 0.9 and sizes[path]:
                off = rng.randrange(0, sizes[path], 4096)
                rec.update(op="read", offset=off, size=min(size, sizes[path] - off))
            elif r < 0.97:
                rec.update(op="fsync", offset=None, size=None, kind="fsync")
            elif i % 2:
                rec.update(op="delete", offset=None, size=None)
                del sizes[path]
            else:
                rec.update(op="fsync", offset=None, size=None, kind="fsync")
        lines.append(json.dumps(rec, separators=(",", ":")))
    with gzip.open(dest, "wt", encoding="utf-8") as g:
        g.write("\n".join(lines) + "\n")


def _data_file(dest: Path) -> None:
    rng = random.Random(33)
    text = (ROOT / "README.md").read_bytes()
    dest.write_bytes(text[:131072].ljust(131072, b" ") + rng.randbytes(131072))


#: name in the docs -> how its stand-in is made (see the module doc)
PLACEHOLDERS = {
    "hm_0.csv.gz": lambda d: _gzip_copy(_bundled("msr_hm_0_sample1000.csv"), d),
    "trace.csv.gz": _slice_head,
    "pgbench_rw.csv.gz": _slice_head,
    "pgbench_wh.csv.gz": _slice_head,
    "Financial1.spc": _spc,
    "in.spc": _spc,
    "t.csv": _canonical,
    "light.csv": _flow(5000, 500.0, 1),
    "heavy.csv": _flow(20000, 2000.0, 2),
    "grid.toml": _grid,
    "devtree_fs.jsonl.gz": _fs_trace,
    "shared/traces/captured/pgbench_rw_fs.jsonl.gz": _fs_trace,
    "data.bin": _data_file,
}


def _prepare(code: str, where: Path) -> None:
    for name, make in PLACEHOLDERS.items():
        if re.search(r"(?<![\w./-])" + re.escape(name) + r"(?![\w-])", code):
            dest = where / name
            dest.parent.mkdir(parents=True, exist_ok=True)
            make(dest)


def _env(tmp: Path) -> dict[str, str]:
    env = dict(os.environ)
    env["PATH"] = str(Path(sys.executable).parent) + os.pathsep + env.get("PATH", "")
    empty = tmp.parent / f"{tmp.name}-no-shared-traces"
    empty.mkdir(exist_ok=True)
    env["NANDLAB_SHARED_TRACES"] = str(empty)
    env.pop("NANDLAB_PROGRESS_INTERVAL_S", None)
    return env


# --------------------------------------------------------------------------- running


def _run_bash(b: Block, tmp: Path) -> None:
    _prepare(b.code, tmp)
    script = tmp / ".example.sh"
    script.write_text(b.code, encoding="utf-8")
    res = subprocess.run(
        ["bash", "-e", "-o", "pipefail", str(script)],
        cwd=tmp,
        env=_env(tmp),
        capture_output=True,
        text=True,
        timeout=BLOCK_TIMEOUT_S,
        check=False,
    )
    assert res.returncode == 0, (
        f"{b.id}: the example exits {res.returncode}\n--- stdout (tail)\n{res.stdout[-3000:]}"
        f"\n--- stderr (tail)\n{res.stderr[-3000:]}"
    )


#: one namespace per Markdown file for its python blocks
_NAMESPACES: dict[Path, dict[str, object]] = {}


def _run_python(b: Block, tmp: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _prepare(b.code, tmp)
    monkeypatch.chdir(tmp)
    env = _env(tmp)
    monkeypatch.setenv("NANDLAB_SHARED_TRACES", env["NANDLAB_SHARED_TRACES"])
    ns = _NAMESPACES.setdefault(b.path, {"__name__": "__doc_example__"})
    ns.setdefault("out", tmp / "out")
    from nandlab.experiment import FailedRunsWarning

    with warnings.catch_warnings():
        warnings.simplefilter("error", FailedRunsWarning)  # a failed run fails the example
        exec(compile(b.code, b.id, "exec"), ns)  # the page's own code


def _example(b: Block, tmp: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    if b.lang == "bash":
        _run_bash(b, tmp)
    else:
        _run_python(b, tmp, monkeypatch)


RUNNABLE = [b for b in BLOCKS if b.lang in RUN and _kind(b) == "run"]
SLOW = [b for b in BLOCKS if b.lang in RUN and _kind(b) == "slow"]


@pytest.mark.parametrize("block", RUNNABLE, ids=lambda b: b.id)
def test_example_runs(block: Block, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _example(block, tmp_path, monkeypatch)


@pytest.mark.slow
@pytest.mark.parametrize("block", SLOW, ids=lambda b: b.id)
def test_slow_example_runs(block: Block, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _example(block, tmp_path, monkeypatch)


# --------------------------------------------------------------------------- the rules


def test_every_block_is_labelled_and_every_marker_is_known() -> None:
    problems = []
    for b in BLOCKS:
        if b.lang not in RUN | NOT_RUN | CHECKED:
            problems.append(
                f"{b.id}: fenced block labelled {b.lang or '(nothing)'!r}: label it bash or "
                "python (run), text or toml (not run), rust (in the crate's tests)"
            )
        if b.marker is not None:
            if b.lang in NOT_RUN | CHECKED:
                problems.append(f"{b.id}: a marker before a {b.lang} block (never run anyway)")
            elif b.marker != "slow" and not re.fullmatch(r"not-run:\s*\S.*", b.marker):
                problems.append(f"{b.id}: unknown marker {b.marker!r} (slow, or not-run: REASON)")
    for p in DOCS:
        lines = p.read_text(encoding="utf-8").splitlines()
        for i, ln in enumerate(lines):
            if _ANY_MARKER.search(ln):
                nxt = lines[i + 1] if i + 1 < len(lines) else ""
                if not _MARKER.match(ln) or not _FENCE.match(nxt):
                    problems.append(
                        f"{p.relative_to(ROOT)}:{i + 1}: an example marker must be alone on the "
                        "line right before a block's opening fence"
                    )
    assert not problems, "\n".join(problems)


def _stripped(text: str) -> list[str]:
    return [ln.strip() for ln in text.splitlines() if ln.strip()]


def _contains(lines: list[str], block: list[str]) -> bool:
    n = len(block)
    return any(lines[i : i + n] == block for i in range(len(lines) - n + 1))


def test_rust_blocks_are_tested() -> None:
    """Every ``rust`` block is a piece of a test file of the core, so ``cargo test`` runs what
    the page shows: its lines, each stripped of leading and trailing blanks (a piece of a
    module is indented more in the test), appear one after another in one file."""
    tests = {p: _stripped(p.read_text(encoding="utf-8")) for p in CRATE_TESTS.glob("*.rs")}
    missing = [
        b.id
        for b in BLOCKS
        if b.lang in CHECKED and not any(_contains(t, _stripped(b.code)) for t in tests.values())
    ]
    assert not missing, (
        "these rust blocks are not found line for line in crates/nandlab-core/tests/*.rs "
        f"(copy the block from the test that runs it, or change both): {missing}"
    )


def test_exclusions_are_few_and_listed() -> None:
    """The slow and not-run examples are these; adding one means adding it here, on purpose."""
    marked = sorted((b.id.split(":")[0], _kind(b)) for b in BLOCKS if b.marker)
    assert marked == sorted(EXCLUDED), "\n".join(f"{f}: {m}" for f, m in marked)


#: (file, slow / not-run) of every marked block (docs/examples.md lists them and says why).
EXCLUDED: list[tuple[str, str]] = [
    ("README.md", "not-run"),  # install + the whole suite: CI's .ci/run runs it
    ("README.md", "slow"),  # every reproduce --quick, reproduce all --quick, osd crash-test
    ("docs/architecture.md", "not-run"),  # recipe (a): commands naming the toy scheme
    ("docs/osd.md", "slow"),  # osd crash-test --cuts 1000
]


def test_slow_marker_is_registered_and_excluded_by_default() -> None:
    text = (ROOT / "pyproject.toml").read_text(encoding="utf-8")
    assert re.search(r'"slow:', text), "register the slow marker in pyproject.toml"
    assert "not slow" in text, "the default run excludes the slow examples"


def test_placeholders_are_documented() -> None:
    doc = __doc__ or ""
    for name in PLACEHOLDERS:
        assert f"``{name}``" in doc, f"placeholder {name} is not in this module's table"
    notes = (ROOT / "docs" / "examples.md").read_text(encoding="utf-8")
    for name in PLACEHOLDERS:
        assert f"`{name}`" in notes, f"docs/examples.md does not list placeholder {name}"
