"""The documentation is checked against the code (issue 19, item 9).

* ``configs/default.toml`` documents every key the core accepts, each with a comment.
* ``docs/report.md`` lists every key of a real report (outside ``config`` and ``scheme_stats``),
  and no key that no report has.

A failure names the missing key, so whoever adds a config or report key adds its line in a minute.
"""

from __future__ import annotations

import re
import tempfile
from functools import lru_cache
from pathlib import Path
from typing import Any

import pytest

import nandlab
from nandlab import _core
from nandlab.config import config_text, presets_dir

ROOT = Path(__file__).resolve().parents[2]
DEFAULT_TOML = presets_dir() / "default.toml"
REPORT_MD = ROOT / "docs" / "report.md"

_HEADER = re.compile(r"^\s*#?\s*\[\[?\s*([A-Za-z0-9_.]+)\s*\]\]?")
_KEY_LINE = re.compile(r"^\s*(#\s*)?([A-Za-z0-9_]+)\s*=")
_SCHEME_LINE = re.compile(r'^\s*#\s*scheme\s+"([a-z0-9_]+)"')


def _toml_sections(text: str) -> dict[str, list[tuple[str, bool, str | None]]]:
    """``section -> [(key, documented, scheme)]`` of every key line, given or commented out.

    A key is documented when its line has a trailing comment or the line above it is a comment
    that is not itself a key line. Within ``[scheme.params]``, a ``# scheme "NAME"`` line starts
    the parameters of scheme NAME.
    """
    out: dict[str, list[tuple[str, bool, str | None]]] = {"": []}
    section, scheme = "", None
    prev_comment = False
    for line in text.splitlines():
        h = _HEADER.match(line)
        if h and "=" not in line:
            section, scheme = h.group(1), None
            out.setdefault(section, [])
            prev_comment = False
            continue
        sm = _SCHEME_LINE.match(line)
        if sm:
            scheme = sm.group(1)
            prev_comment = True
            continue
        m = _KEY_LINE.match(line)
        if m:
            value = line.split("=", 1)[1]
            trailing = "#" in value.split('"')[-1] or re.search(r"\s#\s", value) is not None
            out[section].append((m.group(2), trailing or prev_comment, scheme))
            prev_comment = False
            continue
        prev_comment = line.strip().startswith("#") and len(line.strip()) > 1
    return out


def test_default_toml_documents_every_config_key() -> None:
    sections = _toml_sections(DEFAULT_TOML.read_text(encoding="utf-8"))
    missing, bare = [], []
    for key in _core.config_keys():
        if key == "scheme.params":
            continue  # documented per scheme below
        path = key.replace("[]", "")
        section, _, leaf = path.rpartition(".")
        found = [d for k, d, _ in sections.get(section, []) if k == leaf]
        if not found:
            missing.append(key)
        elif not any(found):
            bare.append(key)
    assert not missing, (
        f"configs/default.toml lacks these config keys (add each, commented out if it has no "
        f"default, with a comment saying unit and meaning): {missing}"
    )
    assert not bare, f"configs/default.toml: these keys have no comment: {bare}"


@pytest.mark.parametrize("scheme", _core.scheme_names())
def test_default_toml_documents_every_scheme_parameter(scheme: str) -> None:
    keys = None
    for preset in ("default", "xia-diffecc", "efm", "ida-tlc", "flexecc"):
        try:
            keys = _core.scheme_param_keys(config_text(preset)[0], scheme)
            break
        except nandlab.ConfigError:
            continue
    assert keys is not None, f"scheme {scheme} cannot be built on any packaged preset"
    params = [
        (k, d)
        for k, d, s in _toml_sections(DEFAULT_TOML.read_text("utf-8")).get("scheme.params", [])
        if s == scheme
    ]
    have = {k for k, _ in params}
    missing = [k for k in keys if k not in have]
    assert not missing, (
        f'configs/default.toml: under [scheme.params], after a line `# scheme "{scheme}"`, '
        f"document these parameters (commented out, with their default and meaning): {missing}"
    )
    assert all(d for _, d in params), f"scheme {scheme}: a parameter line has no comment"
    unknown = sorted(have - set(keys))
    assert not unknown, (
        f"configs/default.toml documents parameters {scheme} does not read: {unknown}"
    )


# --------------------------------------------------------------------------- report keys


def _report_keys(report: dict[str, Any]) -> set[str]:
    out: set[str] = set()

    def walk(v: Any, p: str) -> None:
        if isinstance(v, dict):
            for k, x in v.items():
                walk(x, f"{p}.{k}" if p else str(k))
        elif isinstance(v, list) and v and all(isinstance(x, dict) for x in v):
            for x in v:
                walk(x, p + "[]")
        else:
            out.add(p)

    walk(report, "")
    # `scheme_stats` is each scheme's own; docs/report.md lists those of the schemes in
    # DOCUMENTED_SCHEME_STATS (their reports below carry them).
    keep_stats = report.get("scheme") in DOCUMENTED_SCHEME_STATS
    return {
        k
        for k in out
        if not k.startswith("config.") and (keep_stats or not k.startswith("scheme_stats."))
    }


#: Schemes whose `scheme_stats` keys docs/report.md lists (checked both ways).
DOCUMENTED_SCHEME_STATS = {"dpa"}


@lru_cache(maxsize=1)
def _real_reports() -> tuple[dict[str, Any], ...]:
    """Reports that between them have every optional section: the default run, a run with
    regions (EFM preset), one with the Vth reliability model, refresh and latency CDFs."""
    cut = {"host.max_requests": 2000}
    runs = [
        nandlab.simulate("default", overrides=cut),
        nandlab.simulate("efm", overrides=cut),
        nandlab.simulate(
            "default",
            overrides={
                **cut,
                "reliability.model": "vth",
                "refresh.period_s": 3600.0,
                "ftl.allocation": "static",  # refresh relocates within a plane
                "ftl.mapping_unit_bytes": 0,  # (units fill super-pages)
                "stats.latency_cdf": True,
            },
        ),
        # the device features of issue 13, each reported only when on
        nandlab.simulate(
            "default",
            overrides={
                **cut,
                "ftl.read_modify_write": True,
                "ftl.trim": True,
                "sched.multi_plane": True,
                "sched.suspension": True,
                "dram.capacity_bytes": 1 << 20,
                "dram.access_us": 2.0,
                "device.planes_per_die": 2,
            },
        ),
        # DPA-DRM's scheme_stats (issue 16 part 4)
        nandlab.simulate("dpa", scheme="dpa", overrides=cut),
        nandlab.simulate(
            "flexecc",
            overrides={
                **cut,
                "cache.size_bytes": 0,
                "cache.size_fraction_of_footprint": 0.0833,
                "faults.mode": "every_nth_bit",
            },
        ),
        # the trace reader's counters of issue 28, reported only when not 0
        nandlab.simulate("default", _blkparse_without_final_line_ending(), overrides=cut),
        # the cached mapping table of issue 35 (its `mapping` block; a DRAM-less drive)
        nandlab.simulate(
            "default",
            overrides={
                **cut,
                "ftl.mapping": "cached",
                "ftl.cmt_bytes": 65536,
                "dram.capacity_bytes": 0,
            },
        ),
        # a host link (issue 35: the `link` block and `load.link_utilization`)
        nandlab.simulate("default", overrides={**cut, "link.interface": "pcie"}),
        # concurrent flows of issue 35 (`flows`, `fairness`, per-flow CDFs, `trace.flows`)
        nandlab.simulate(
            "default",
            [nandlab.default_trace(), nandlab.default_trace()],
            overrides={
                **cut,
                "stats.latency_cdf": True,
                "host.arbitration": "weighted_round_robin",
            },
        ),
        # the compact address map of issue 28 (its `device.address_map` block)
        nandlab.simulate("default", overrides={**cut, "device.address_map": "compact"}),
    ]
    return tuple(r.report for r in runs)


def _blkparse_without_final_line_ending() -> Path:
    """The blkparse test sample (per-action skips) without its last line ending."""
    src = ROOT / "crates/nandlab-core/tests/data/trace/blkparse_sample.txt"
    out = Path(_TMP.name) / "blkparse_unterminated.txt"
    out.write_text(src.read_text(encoding="utf-8").rstrip("\n"), encoding="utf-8")
    return out


_TMP = tempfile.TemporaryDirectory()


def _doc_rows() -> list[tuple[str, str]]:
    rows = []
    for line in REPORT_MD.read_text(encoding="utf-8").splitlines():
        m = re.match(r"^\|\s*`([^`]+)`\s*\|\s*([^|]*?)\s*\|", line)
        if m:
            rows.append((m.group(1), m.group(2)))
    return rows


def _pattern(doc_key: str) -> re.Pattern[str]:
    parts = re.split(r"(<[a-z]+>)", doc_key)
    rx = "".join(r"[^.\[\]]+" if p.startswith("<") else re.escape(p) for p in parts)
    return re.compile(f"^{rx}$")


def test_report_md_lists_every_report_key_with_a_unit() -> None:
    rows = _doc_rows()
    assert rows, "docs/report.md has no key table"
    assert all(unit for _, unit in rows), [k for k, u in rows if not u]
    pats = [(k, _pattern(k)) for k, _ in rows]
    keys: set[str] = set()
    for rep in _real_reports():
        keys |= _report_keys(rep)
    undocumented = sorted(k for k in keys if not any(p.match(k) for _, p in pats))
    assert not undocumented, (
        f"docs/report.md lacks these report keys (add a row `| key | unit | meaning |`): "
        f"{undocumented}"
    )
    stale = [k for k, p in pats if not any(p.match(x) for x in keys)]
    assert not stale, f"docs/report.md lists keys no report has (renamed or removed?): {stale}"


def test_report_md_units_match_the_key_names() -> None:
    for key, unit in _doc_rows():
        if key.endswith("_us"):
            assert unit == "µs", (key, unit)
        elif key.endswith("_bytes_per_s"):
            assert unit == "B/s", (key, unit)
        elif key.endswith(("_per_s", "_rps")):
            assert unit == "1/s", (key, unit)
        elif key.endswith("_s"):
            assert unit == "s", (key, unit)
        elif key.endswith("_bytes"):
            assert unit == "B", (key, unit)


@pytest.mark.parametrize(
    "name",
    ["stats.request_log", "NANDLAB_SHARED_TRACES", "NANDLAB_CACHE_DIR", "run_grid", "RunSpec"],
)
def test_what_a_user_meets_is_documented(name: str) -> None:
    docs = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
    assert any(name in p.read_text(encoding="utf-8") for p in docs), (
        f"{name} is not documented in README.md or docs/*.md"
    )
