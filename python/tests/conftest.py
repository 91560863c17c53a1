"""Shared fixtures: small traces made on the fly."""

from __future__ import annotations

from pathlib import Path

import pytest
from _helpers import TINY_CANONICAL, generate
from click.testing import CliRunner


@pytest.fixture
def runner() -> CliRunner:
    return CliRunner()


@pytest.fixture
def tiny_trace(tmp_path: Path) -> Path:
    p = tmp_path / "tiny.csv"
    p.write_text(TINY_CANONICAL)
    return p


@pytest.fixture(scope="session")
def small_trace(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A 4000-request synthetic trace over 1 GiB at a moderate rate."""
    d = tmp_path_factory.mktemp("traces")
    return generate(
        d / "small.csv", requests=4000, span_bytes=1 << 30, iops=2000.0, seed=7, write_fraction=0.6
    )


@pytest.fixture(scope="session")
def busy_trace(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A write-heavy trace arriving much faster than a small SSD can serve it."""
    d = tmp_path_factory.mktemp("traces")
    return generate(
        d / "busy.csv",
        requests=6000,
        span_bytes=1 << 30,
        iops=200_000.0,
        seed=11,
        write_fraction=0.8,
        sizes_bytes=[16384, 32768, 65536],
    )
