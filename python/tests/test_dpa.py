"""DPA (Guo ch. 2): the codec through the bindings (round trips, the spec's exact vectors),
`nandlab dpa analyze` (statistics, one-line errors per unreadable file, exit status, JSON),
the lifetime model's direction, and `nandlab reproduce dpa --quick` end to end.

Every file used here is made by the test or ships with nandlab."""

from __future__ import annotations

import hashlib
import json
import random
from pathlib import Path

import pytest
from click.testing import CliRunner

from nandlab import ConfigError
from nandlab import dpa as d
from nandlab.cli import cli


def _pages() -> dict[str, bytes]:
    rng = random.Random(3)
    return {
        "random": rng.randbytes(4096),
        "zero": bytes(4096),
        "ones": b"\xff" * 4096,
        "ramp": bytes(i % 256 for i in range(4096)),
        "periodic": bytes([0xA5, 0x3C, 0x00, 0xFF, 0x81][i % 5] for i in range(4096)),
    }


@pytest.mark.parametrize("chunk", d.CHUNK_SIZES)
def test_round_trip_every_page_path_and_some_tags(chunk: int) -> None:
    c = d.codec(chunk)
    assert c.chunk_bytes == chunk and len(c.polynomials) == 64
    for name, page in _pages().items():
        for choice in ("auto", "decorrelate", "scramble", 0, 10, 29, 63):
            stored, corr, tags, _, _ = c.encode(page, choice)
            assert len(stored) == len(page)
            assert c.decode(stored, corr, tags) == page, (name, choice)
            if corr:
                assert tags == b""
            else:
                assert len(tags) == len(page) // chunk


def test_exact_vectors_of_the_spec() -> None:
    sha = b"".join(hashlib.sha256(f"dpa-test-{i}".encode()).digest() for i in range(128))
    stored, corr, tags, ones_a, ones_b = d.codec(8).encode(sha)
    assert (ones_a, ones_b, corr) == (16403, 11724, False)
    assert sum(bin(b).count("1") for b in stored) == 21044
    assert list(tags[:8]) == [52, 44, 2, 1, 13, 43, 60, 20]
    stored, corr, tags, _, ones_b = d.codec(4).encode(sha)
    assert (ones_b, corr) == (9960, False)
    assert list(tags[:8]) == [4, 2, 12, 14, 1, 32, 1, 61]
    ramp = bytes(i % 256 for i in range(4096))
    stored, corr, _, ones_a, _ = d.codec(8).encode(ramp)
    assert corr and ones_a == 8152 and sum(bin(b).count("1") for b in stored) == 24616


def test_codec_errors_name_the_parameter() -> None:
    with pytest.raises(ConfigError, match="chunk_bytes"):
        d.codec(12)
    with pytest.raises(ConfigError, match="polynomials"):
        d.codec(8, order=4, polynomials=64)
    with pytest.raises(ConfigError, match="page length"):
        d.codec(8).encode(b"\x00" * 12)
    assert d.polynomials(4) == [17, 19, 21, 23, 25, 27, 29, 31]


def _files(tmp: Path) -> dict[str, Path]:
    rng = random.Random(5)
    f = {
        "random": tmp / "random.bin",
        "zero": tmp / "zero.bin",
        "text": tmp / "notes.txt",
        "empty": tmp / "empty.dat",
        "dir": tmp / "adir",
        "missing": tmp / "missing.bin",
    }
    f["random"].write_bytes(rng.randbytes(256 * 1024))
    f["zero"].write_bytes(bytes(64 * 1024))
    f["text"].write_text(
        "".join(f"key{i} = value {i * 7 % 13} # comment\n" for i in range(3000)),
        encoding="ascii",
    )
    f["empty"].write_bytes(b"")
    f["dir"].mkdir()
    return f


def test_analyze_counts_and_per_file_errors(tmp_path: Path) -> None:
    f = _files(tmp_path)
    calls: list[tuple[int, int]] = []
    an = d.analyze(list(f.values()), progress=lambda a, b: calls.append((a, b)))
    errs = dict(an.errors)
    assert set(errs) == {str(f["empty"]), str(f["dir"]), str(f["missing"])}
    assert "empty" in errs[str(f["empty"])]
    assert "directory" in errs[str(f["dir"])]
    assert "No such file" in errs[str(f["missing"])]
    # Progress counts bytes read (the < 32 B tails are read, not analysed).
    assert calls and calls[-1][0] == calls[-1][1] >= an.bytes > calls[-1][1] - 32 * 3
    by = {x["path"]: x for x in an.files}
    # Zero pages: path A, every stored bit 1, every cell L0.
    z = d.summarize([by[str(f["zero"])]])
    for p in z["profiles"]:
        assert p["path_a_share"] == 1.0 and p["stored_ones_ratio"] == 1.0
        assert d.levels(p["stored_patterns_paired"])[0] == 1.0
    # Random data: scrambled ones in the spec's bands, L0 rising 8 B -> 4 B.
    r = d.summarize([by[str(f["random"])]])
    scr = {p["chunk_bytes"]: p["scrambled_ones_ratio"] for p in r["profiles"]}
    assert 0.28 <= scr[4] <= 0.33 and 0.33 <= scr[8] <= 0.38 and 0.41 <= scr[32] <= 0.44
    l0 = {p["chunk_bytes"]: d.levels(p["stored_patterns_paired"])[0] for p in r["profiles"]}
    assert l0[4] > 0.47 and l0[8] > 0.40 and l0[4] > l0[8]
    # Text de-correlates and takes path A often (Guo Fig. 9 metadata).
    t = d.summarize([by[str(f["text"])]])["profiles"][0]
    assert t["decorrelated_ones_ratio"] < t["raw_ones_ratio"]
    # Table 5 counts: one per chunk per polynomial at most; chunks = bytes / chunk.
    cs = by[str(f["random"])]["configs"][1]
    assert cs["chunks"] == 256 * 1024 // 8
    assert all(0 < x < cs["chunks"] for x in cs["reduced"])
    assert sum(cs["best"]) == cs["chunks"]
    assert all(th["encode_mb_per_s"] for th in an.throughput())


def test_analyze_cli_errors_exit_status_and_json(tmp_path: Path) -> None:
    f = _files(tmp_path)
    js = tmp_path / "out.json"
    args = ["dpa", "analyze", *map(str, f.values()), "--chunk", "4,8", "--json", str(js)]
    res = CliRunner().invoke(cli, args)
    assert res.exit_code == 1, res.output
    err_lines = [x for x in res.stderr.splitlines() if x.startswith("error:")]
    assert len(err_lines) == 3
    doc = json.loads(js.read_text())
    assert len(doc["errors"]) == 3 and doc["mb_per_s_cpu"] > 0
    assert [c["chunk_bytes"] for c in doc["configs"]] == [4, 8]
    assert {"random", "text", "binary", "all"} <= set(doc["groups"]) or "all" in doc["groups"]
    # Nothing readable: exit 2.
    res = CliRunner().invoke(cli, ["dpa", "analyze", str(f["empty"]), str(f["dir"])])
    assert res.exit_code == 2
    # A bad option value: one line, exit 2.
    res = CliRunner().invoke(cli, ["dpa", "analyze", str(f["random"]), "--chunk", "12"])
    assert res.exit_code == 2
    assert "chunk_bytes" in res.output
    # All good: exit 0, JSON on stdout.
    res = CliRunner().invoke(cli, ["dpa", "analyze", str(f["random"]), "--json", "-"])
    assert res.exit_code == 0, res.output
    assert json.loads(res.stdout)["files"][0]["bytes"] == 256 * 1024


def test_lifetime_direction_and_errors(tmp_path: Path) -> None:
    profs = [
        {"name": "baseline", "patterns": [0.25] * 4, "code": d.BASELINE_CODE},
        {"name": "8 B", "patterns": d.independent_patterns(0.69), "code": d.DPA_CODE},
        {"name": "4 B", "patterns": d.independent_patterns(0.77), "code": d.DPA_CODE},
    ]
    r = d.lifetime(
        pe=[3000.0, 4000.0, 5000.0, 6000.0, 7000.0],
        profiles=profs,
        rel_half_width=0.3,
        rber_floor=1e-5,
        read_disturb_reads=0,
        full_pattern=False,
        cache_dir=str(tmp_path),
    )
    life = {x["name"]: x["lifetime_pe"] for x in r["lifetimes"]}
    assert life["4 B"] >= life["8 B"] > life["baseline"]
    assert r["mc_computed"] > 0
    again = d.lifetime(
        pe=[3000.0, 4000.0, 5000.0, 6000.0, 7000.0],
        profiles=profs,
        rel_half_width=0.3,
        rber_floor=1e-5,
        read_disturb_reads=0,
        full_pattern=False,
        cache_dir=str(tmp_path),
    )
    assert again["mc_computed"] == 0 and again["lifetimes"] == r["lifetimes"]
    with pytest.raises(ConfigError, match="pe"):
        d.lifetime(pe=[5.0, 1.0], profiles=profs)
    with pytest.raises(ConfigError):
        d.lifetime(profiles=[{"name": "x", "patterns": [0, 0, 0, 0], "code": d.DPA_CODE}])


def test_reproduce_dpa_quick(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The codec and lifetime study with an extra data file (Fig. 14 runs in
    test_reproduce_all.py)."""
    monkeypatch.setenv("NANDLAB_CACHE_DIR", str(tmp_path / "cache"))
    out = tmp_path / "out"
    extra = tmp_path / "extra.txt"
    extra.write_text("hello world\n" * 500, encoding="ascii")
    args = ["reproduce", "dpa", "--quick", "--no-fig14", "--out", str(out), "--data", str(extra)]
    res = CliRunner().invoke(cli, [*args, "-j", "2"])
    assert res.exit_code == 0, res.output
    doc = json.loads((out / "result.json").read_text())
    assert all(c["passed"] for c in doc["checks"]), doc["checks"]
    names = {r["profile"] for r in doc["table"]}
    assert {"baseline", "8 B (thesis Fig. 11)", "4 B (all data)"} <= names
    assert str(extra) in doc["data"]["files"]
    head = {h["metric"]: h for h in doc["headline"]}
    base = head["lifetime of the baseline at T_uber 1e-13 (the model's K_s is fitted to it)"]
    assert base["paper"] == 7500 and abs(base["mean"] - 7500) < 0.1 * 7500  # the fit holds
    for stem in (
        "fig9_decorrelation",
        "fig10abc_scrambling",
        "fig10d_dpa_ppu",
        "fig11_levels",
        "fig12_failure_rates",
        "fig13_tolerable_reads",
    ):
        assert (out / f"{stem}.png").is_file() and (out / f"{stem}.svg").is_file()
    assert (out / "table5.csv").read_text().startswith("poly,")


def test_retention_ks_is_a_checked_parameter() -> None:
    """The lifetime model's K_s (fitted to the thesis's baseline endurance in the preset):
    a bad value is one error naming it, in the request and in a config."""
    import nandlab

    with pytest.raises(ConfigError, match="retention_ks"):
        d.lifetime(retention_ks=-1.0, profiles=[{"name": "b", "patterns": [0.25] * 4,
                                                 "code": d.BASELINE_CODE}])  # fmt: skip
    with pytest.raises(ConfigError, match=r"dpa\.retention_ks"):
        nandlab.simulate("dpa", overrides={"dpa.retention_ks": 20.0, "host.max_requests": 10})
