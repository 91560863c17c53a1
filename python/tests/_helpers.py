"""Helpers shared by the tests (importable: python/tests is on sys.path under pytest)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from nandlab import _core

#: Hand-written canonical trace with known page classes (see test_trace_stats.py).
TINY_CANONICAL = """\
time_ns,op,offset_bytes,size_bytes
0,W,0,8192
1000,W,8192,16384
2000,R,16384,8192
3000,R,32768,8192
4000,R,40960,4096
5000,W,49152,8192
6000,R,49152,8192
7000,W,65536,8192
"""


def generate(path: Path, **params: object) -> Path:
    """Generate a synthetic canonical trace with the core's generator."""
    _core.trace_generate(json.dumps(params), str(path))
    return path


def read_canonical(path: Path) -> list[tuple[int, str, int, int]]:
    """Rows of an uncompressed canonical CSV (header skipped)."""
    rows = []
    for line in path.read_text().splitlines():
        if not line or not line[0].isdigit():
            continue
        t, op, off, size = line.split(",")[:4]
        rows.append((int(t), op.strip().upper()[:1], int(off), int(size)))
    return rows


def run_cli(*args: str | Path, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    """Run the CLI in a real subprocess (real exit status and stderr)."""
    return subprocess.run(
        [sys.executable, "-m", "nandlab", *map(str, args)],
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
