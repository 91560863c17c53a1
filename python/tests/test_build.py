"""The README's two commands share one build (issue 19, item 12).

`pip install .` (maturin: nandlab-py with pyo3's extension-module feature, release profile,
the workspace's target/) and `cargo test -p nandlab-core --release` (release profile, same
target/) reuse each other's compiled dependencies only when both ask for the same features of
every dependency they share. This test asks cargo for both feature sets and names the
dependencies that differ (to add to crates/nandlab-core/Cargo.toml's unification lines).
"""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
CARGO = shutil.which("cargo")

pytestmark = pytest.mark.skipif(
    CARGO is None or not (ROOT / "Cargo.toml").is_file(), reason="needs cargo and the source tree"
)


def _features(*args: str) -> dict[str, set[str]]:
    res = subprocess.run(
        [CARGO, "tree", "--offline", "--prefix", "none", "-f", "{p}|{f}", *args],  # type: ignore[list-item]
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    if res.returncode != 0:
        pytest.skip(f"cargo tree failed (offline, no registry cache?): {res.stderr[-300:]}")
    out: dict[str, set[str]] = {}
    for line in res.stdout.splitlines():
        if "|" not in line:
            continue
        pkg, feats = line.removesuffix(" (*)").split("|", 1)
        name_ver = " ".join(re.sub(r"\s*\(.*\)$", "", pkg).split()[:2])
        out.setdefault(name_ver, set()).update(f for f in feats.split(",") if f)
    return out


def test_pip_and_cargo_test_builds_ask_for_the_same_features() -> None:
    wheel = _features("-p", "nandlab-py", "-F", "pyo3/extension-module", "-e", "normal,build")
    tests = _features("-p", "nandlab-core", "-e", "normal,build,dev")
    differ = {
        pkg: sorted(wheel[pkg] ^ tests[pkg])
        for pkg in sorted(set(wheel) & set(tests))
        if wheel[pkg] != tests[pkg] and not pkg.startswith("nandlab")
    }
    assert not differ, (
        "the wheel build and the test build ask for different features of these dependencies, "
        f"so `cargo test` recompiles what `pip install` built: {differ}"
    )


def test_one_profile_and_target_dir_for_both() -> None:
    pyproject = (ROOT / "pyproject.toml").read_text(encoding="utf-8")
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert "profile" not in pyproject.split("[tool.maturin]", 1)[1].split("\n[", 1)[0]
    assert "cargo test -p nandlab-core --release" in readme  # maturin builds --release too
    assert "CARGO_TARGET_DIR" not in readme
