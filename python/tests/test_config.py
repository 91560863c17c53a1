"""Config lookup and override formatting (pure Python)."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
import tomllib

import nandlab
from nandlab.config import (
    cli_override,
    config_text,
    dict_to_toml,
    format_overrides,
    presets,
    resolve_config,
    toml_literal,
)


@pytest.mark.parametrize(
    ("value", "literal"),
    [
        (True, "true"),
        (False, "false"),
        (4, "4"),
        (0.25, "0.25"),
        ("greedy", '"greedy"'),
        ('a"b\\c', '"a\\"b\\\\c"'),
        ([1, 2, 3], "[1, 2, 3]"),
        (["x", True], '["x", true]'),
        ({"a": 1, "b c": "d"}, '{a = 1, "b c" = "d"}'),
    ],
)
def test_toml_literal(value: object, literal: str) -> None:
    assert toml_literal(value) == literal
    # and it parses back to the same value
    assert tomllib.loads(f"v = {literal}")["v"] == value


def test_toml_literal_special_floats() -> None:
    assert tomllib.loads(f"v = {toml_literal(float('inf'))}")["v"] == math.inf
    assert math.isnan(tomllib.loads(f"v = {toml_literal(float('nan'))}")["v"])


def test_format_overrides_dict_and_list() -> None:
    assert format_overrides({"device.channels": 4, "scheme.name": "agcr", "gc.on": True}) == [
        "device.channels=4",
        'scheme.name="agcr"',
        "gc.on=true",
    ]
    assert format_overrides(["a.b=1"]) == ["a.b=1"]
    assert format_overrides(None) == []
    with pytest.raises(nandlab.ConfigError, match="key=value"):
        format_overrides(["novalue"])


def test_cli_override_quotes_bare_words() -> None:
    assert cli_override("scheme.name=baseline") == 'scheme.name="baseline"'
    assert cli_override("device.channels = 8") == "device.channels=8"
    assert cli_override("x.list=[1,2]") == "x.list=[1,2]"
    assert cli_override('x.s="q"') == 'x.s="q"'
    with pytest.raises(nandlab.ConfigError, match="key=value"):
        cli_override("device.channels")
    with pytest.raises(nandlab.ConfigError, match="empty key"):
        cli_override("=3")


def test_dict_to_toml_roundtrip() -> None:
    cfg = {"device": {"channels": 8, "page_size_bytes": 8192}, "scheme": {"name": "baseline"}}
    assert tomllib.loads(dict_to_toml(cfg)) == cfg
    with pytest.raises(nandlab.ConfigError, match=r"device\.channels"):
        dict_to_toml({"device": {"channels": None}})


def test_resolve_config_file(tmp_path: Path) -> None:
    f = tmp_path / "my.toml"
    f.write_text("[device]\nchannels = 2\n")
    assert resolve_config(str(f)) == f
    text, path = config_text(f)
    assert path == f and "channels" in text
    assert nandlab.load_config(f) == {"device": {"channels": 2}}


def test_resolve_config_errors(tmp_path: Path) -> None:
    with pytest.raises(nandlab.ConfigError, match="not found"):
        resolve_config(str(tmp_path / "missing.toml"))
    with pytest.raises(nandlab.ConfigError, match="unknown config 'zzz'"):
        resolve_config("zzz")


def test_default_preset_packaged() -> None:
    assert "default" in presets()
    cfg = nandlab.load_config("default")
    assert isinstance(cfg, dict) and cfg


def test_configs_symlink_at_repo_root() -> None:
    root = Path(__file__).resolve().parents[2]
    link = root / "configs"
    if link.exists():  # only in a source checkout
        assert (link / "default.toml").is_file()


def test_bundled_data() -> None:
    t = nandlab.default_trace()
    assert t.name == "pgbench_rw_slice.csv.gz" and t.is_file()
    assert t in nandlab.bundled_traces()
    assert all(p.suffix != ".md" for p in nandlab.bundled_traces())
