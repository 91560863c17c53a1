"""`nandlab trace generate`: determinism and parameters honoured."""

from __future__ import annotations

import json
from pathlib import Path

from _helpers import read_canonical

from nandlab.cli import cli


def _gen(runner, out: Path, *args: str) -> None:
    res = runner.invoke(cli, ["trace", "generate", str(out), *args])
    assert res.exit_code == 0, res.output


def test_same_seed_identical_bytes(runner, tmp_path: Path) -> None:
    a, b = tmp_path / "a.csv", tmp_path / "b.csv"
    _gen(runner, a, "--requests", "2000", "--seed", "5")
    _gen(runner, b, "--requests", "2000", "--seed", "5")
    assert a.read_bytes() == b.read_bytes()


def test_different_seed_differs(runner, tmp_path: Path) -> None:
    a, b = tmp_path / "a.csv", tmp_path / "b.csv"
    _gen(runner, a, "--requests", "500", "--seed", "5")
    _gen(runner, b, "--requests", "500", "--seed", "6")
    assert a.read_bytes() != b.read_bytes()


def test_parameters_honoured(runner, tmp_path: Path) -> None:
    out = tmp_path / "g.csv"
    span = 64 << 20
    _gen(
        runner,
        out,
        "--requests",
        "5000",
        "--span-bytes",
        str(span),
        "--write-fraction",
        "0.3",
        "--sizes-kib",
        "8,16,128",
        "--align-bytes",
        "8192",
        "--iops",
        "1000",
        "--seed",
        "3",
    )
    rows = read_canonical(out)
    assert len(rows) == 5000
    writes = sum(1 for r in rows if r[1] == "W")
    assert abs(writes / len(rows) - 0.3) < 0.03
    sizes = {r[3] for r in rows}
    assert sizes == {8192, 16384, 131072}
    assert all(r[2] % 8192 == 0 for r in rows)
    assert all(r[2] + r[3] <= span for r in rows)
    times = [r[0] for r in rows]
    assert times == sorted(times)
    # Poisson at 1000 IOPS: 5000 requests span about 5 s.
    assert 4.5e9 < times[-1] - times[0] < 5.5e9


def test_json_output(runner, tmp_path: Path) -> None:
    out, js = tmp_path / "g.csv", tmp_path / "g.json"
    _gen(runner, out, "--requests", "100", "--json", str(js))
    meta = json.loads(js.read_text())
    assert meta["requests"] == 100
    assert meta["params"]["sizes_bytes"] == [4096, 8192, 16384, 32768, 65536]


def test_gzip_output_readable(runner, tmp_path: Path) -> None:
    import gzip

    out = tmp_path / "g.csv.gz"
    _gen(runner, out, "--requests", "50")
    lines = [
        ln for ln in gzip.decompress(out.read_bytes()).decode().splitlines() if ln[:1].isdigit()
    ]
    assert len(lines) == 50


def test_bad_parameter_is_usage_error(runner, tmp_path: Path) -> None:
    res = runner.invoke(cli, ["trace", "generate", str(tmp_path / "x.csv"), "--sizes-kib", "4,x"])
    assert res.exit_code == 2


def test_zipf_skews_offsets(runner, tmp_path: Path) -> None:
    """`--zipf 1.2`: the hottest 1 % of the span's slots take most requests (uniform: ~1 %);
    same seed, same bytes; 0 is the uniform generator."""
    span = 64 << 20
    args = ["--requests", "5000", "--span-bytes", str(span), "--sizes-kib", "4"]
    z, u, z2 = tmp_path / "z.csv", tmp_path / "u.csv", tmp_path / "z2.csv"
    _gen(runner, z, *args, "--zipf", "1.2")
    _gen(runner, z2, *args, "--zipf", "1.2")
    _gen(runner, u, *args, "--zipf", "0")
    assert z.read_bytes() == z2.read_bytes()

    def hot_share(p: Path) -> float:
        rows = read_canonical(p)
        hot = sum(1 for r in rows if r[2] < span // 100)
        assert all(r[2] + r[3] <= span for r in rows)
        return hot / len(rows)

    assert hot_share(z) > 0.5
    assert hot_share(u) < 0.05
    res = runner.invoke(cli, ["trace", "generate", str(tmp_path / "x.csv"), "--zipf", "-1"])
    assert res.exit_code == 2
