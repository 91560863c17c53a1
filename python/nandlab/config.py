"""Configuration lookup: preset names, files, dicts and ``key=value`` overrides.

The Rust core parses and validates the TOML (it names the key, the value and the allowed
range on error); this module only finds the text and formats overrides as TOML literals.
"""

from __future__ import annotations

import json
import math
import re
import stat
import sys
from collections.abc import Mapping
from importlib import resources
from pathlib import Path
from typing import Any, Union

import tomli_w

from nandlab._core import ConfigError

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

#: What ``simulate(config=...)`` accepts.
ConfigSpec = Union[str, Path, Mapping[str, Any]]

_BARE_KEY = re.compile(r"^[A-Za-z0-9_-]+$")


def presets_dir() -> Path:
    """Directory of the packaged configuration presets (``nandlab/configs``)."""
    return Path(str(resources.files("nandlab") / "configs"))


def presets() -> list[str]:
    """Names of the packaged presets (file stems of ``configs/*.toml``)."""
    d = presets_dir()
    if not d.is_dir():
        return []
    return sorted(p.stem for p in d.glob("*.toml"))


def _looks_like_path(spec: str) -> bool:
    return spec.endswith(".toml") or "/" in spec or "\\" in spec or spec.startswith(".")


def _not_a_file(path: Path) -> str | None:
    """Why ``path`` is not a readable config file (a directory, a symlink loop, a dangling
    symlink, missing), or ``None`` when it is a file."""
    try:
        st = path.stat()
    except RuntimeError:  # Python < 3.13 raises this for a symlink loop
        return "a symlink loop"
    except OSError as e:
        if e.errno == 40:  # ELOOP
            return "a symlink loop"
        if path.is_symlink():
            return "a symlink to a missing file"
        return "not found"
    if stat.S_ISDIR(st.st_mode):
        return "a directory, not a file (give a .toml file or a preset name)"
    if not stat.S_ISREG(st.st_mode):
        return "not a regular file"
    return None


def resolve_config(spec: str | Path) -> Path:
    """Path of the config named by ``spec``: an existing file, or a preset name."""
    if isinstance(spec, Path) or _looks_like_path(spec):
        path = Path(spec)
        why = _not_a_file(path)
        if why is not None:
            raise ConfigError(f"config file {path}: {why}")
        return path
    path = Path(spec)
    why = _not_a_file(path)
    if why is None:
        return path
    if path.exists() or path.is_symlink():
        raise ConfigError(f"config {path}: {why}")
    preset = presets_dir() / f"{spec}.toml"
    if preset.is_file():
        return preset
    avail = ", ".join(presets()) or "none installed"
    raise ConfigError(f"unknown config {spec!r}: not a file and not a preset (presets: {avail})")


def config_text(spec: ConfigSpec) -> tuple[str, Path | None]:
    """TOML text of a config and the file it came from (``None`` for a dict)."""
    if isinstance(spec, Mapping):
        return dict_to_toml(spec), None
    path = resolve_config(spec)
    try:
        return path.read_text(encoding="utf-8"), path
    except (OSError, UnicodeDecodeError) as e:
        raise ConfigError(f"{path}: cannot read config: {e}") from None


def load_config(spec: ConfigSpec = "default") -> dict[str, Any]:
    """The parsed configuration (a nested dict) that ``spec`` names.

    Edit it and pass it back to :func:`nandlab.simulate` as ``config=``.
    """
    if isinstance(spec, Mapping):
        return dict(spec)
    text, path = config_text(spec)
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        raise ConfigError(f"{path}: {e}") from None


def dict_to_toml(cfg: Mapping[str, Any]) -> str:
    """Serialise a nested dict of scalars/lists to TOML text."""
    try:
        return tomli_w.dumps(_check_plain(cfg, ""))
    except (TypeError, ValueError) as e:
        raise ConfigError(f"config dict cannot be written as TOML: {e}") from None


def _check_plain(value: Any, key: str) -> Any:
    if value is None:
        raise ConfigError(f"config key `{key}` = None: TOML has no null; remove the key instead")
    if isinstance(value, Mapping):
        return {str(k): _check_plain(v, f"{key}.{k}" if key else str(k)) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_check_plain(v, key) for v in value]
    if isinstance(value, Path):
        return str(value)
    return value


def toml_literal(value: Any) -> str:
    """A Python value as a TOML literal: strings quoted, bools lowercase, lists, inline tables."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if math.isnan(value):
            return "nan"
        if math.isinf(value):
            return "inf" if value > 0 else "-inf"
        return repr(value)
    if isinstance(value, (str, Path)):
        # JSON string escapes are a subset of TOML basic-string escapes.
        return json.dumps(str(value), ensure_ascii=False)
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(toml_literal(v) for v in value) + "]"
    if isinstance(value, Mapping):
        items = ", ".join(f"{_toml_key(str(k))} = {toml_literal(v)}" for k, v in value.items())
        return "{" + items + "}"
    raise ConfigError(f"override value {value!r}: cannot be written as a TOML literal")


def _toml_key(key: str) -> str:
    return key if _BARE_KEY.match(key) else json.dumps(key, ensure_ascii=False)


def format_overrides(
    overrides: Mapping[str, Any] | list[str] | tuple[str, ...] | None,
) -> list[str]:
    """Overrides as ``dotted.key=toml_literal`` strings for the core.

    A list of strings is passed through unchanged (each must contain ``=``); a dict's values
    are formatted with :func:`toml_literal`.
    """
    if overrides is None:
        return []
    if isinstance(overrides, Mapping):
        return [f"{k}={toml_literal(v)}" for k, v in overrides.items()]
    out = []
    for item in overrides:
        if not isinstance(item, str) or "=" not in item or not item.split("=", 1)[0].strip():
            raise ConfigError(f"override {item!r}: expected key=value (e.g. device.channels=4)")
        out.append(item)
    return out


def cli_override(item: str) -> str:
    """A ``--set key=value`` argument as an override string.

    A value that is not a TOML literal (``scheme.name=baseline``) is taken as a string and
    quoted; anything else is passed through for the core to validate.
    """
    if "=" not in item:
        raise ConfigError(f"--set {item!r}: expected key=value (e.g. device.channels=4)")
    key, value = item.split("=", 1)
    key, value = key.strip(), value.strip()
    if not key:
        raise ConfigError(f"--set {item!r}: empty key")
    try:
        tomllib.loads(f"v = {value}")
    except tomllib.TOMLDecodeError:
        value = toml_literal(value)
    return f"{key}={value}"


_TOML_AT = re.compile(r"^(?P<msg>.*?)\s*\(at line (?P<line>\d+), column (?P<col>\d+)\)\s*$", re.S)


def toml_syntax_error(src: str, text: str, e: Exception) -> str:
    """A TOML syntax error of a file read in Python (a sweep grid) in the form the core gives
    one of a config: ``SRC: TOML parse error at line L, column C: WHAT`` and then the line with
    a caret under the column."""
    m = _TOML_AT.match(str(e))
    if not m:
        return f"{src}: TOML parse error: {' '.join(str(e).split())}"
    line, col = int(m.group("line")), int(m.group("col"))
    lines = text.splitlines()
    shown = lines[line - 1] if 0 < line <= len(lines) else ""
    w = len(str(line))
    pad = " " * w
    return (
        f"{src}: TOML parse error at line {line}, column {col}: {m.group('msg')}\n"
        f"{pad} |\n{line} | {shown}\n{pad} | {' ' * (col - 1)}^"
    )
