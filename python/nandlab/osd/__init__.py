"""The object-based flash device (Guo's thesis, ch. 4): OBFS, DMM and its ablations, YAFFS2-like.

This package is the Python front of ``nandlab-core/src/osd`` (the device) and
``osd::objfs`` (the host layer that turns a file-level trace into object commands, spec
``dmm.md`` §5):

* :func:`run` -- replay a file-level trace (``*_fs.jsonl.gz``, e.g. the captured
  ``pgbench_rw_fs`` and ``devtree_fs``) on a preset (``dmm``, ``obfs``, ``yaffs2``) or any
  config with an ``[osd]`` section; returns the report as a dict (``docs/report.md``, "The
  object-device report").
* :func:`bench` -- DMMbench (§4.6.1): sequential 4 KiB-1 MiB or random 4 KiB reads or writes of
  one file, an inode read before and an inode write after each access.
* :func:`crash_test` -- power cuts at seeded flash operations, recovery, and a comparison of
  every object with the acknowledged writes (§4.4.5).
* :func:`trace_stats` -- Table-17-style statistics of a file-level trace (files, average
  request size, write share, sequential shares).

The host layer's settings are the ``[objfs]`` section (open and atime policies, the write-back
host page cache, preconditioning); see ``configs/default.toml`` and ``docs/osd.md``.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from nandlab import _core
from nandlab.config import ConfigSpec, config_text, format_overrides

#: The packaged object-device presets.
PRESETS = ("dmm", "obfs", "yaffs2")


def _trace_path(trace: str | Path) -> Path:
    p = Path(trace)
    if not p.is_file():
        raise FileNotFoundError(f"trace file not found: {p}")
    return p


def run(
    config: ConfigSpec = "dmm",
    trace: str | Path = "",
    *,
    overrides: Mapping[str, object] | list[str] | None = None,
    max_commands: int = 0,
) -> dict[str, Any]:
    """Replay the file-level trace ``trace`` on the object device ``config`` describes.

    ``config`` is a preset name (``"dmm"``, ``"obfs"``, ``"yaffs2"``), a TOML file or a nested
    dict; it needs an ``[osd]`` section. ``overrides`` are dotted keys
    (``{"osd.diff_cache_bytes": 0}``). ``max_commands`` (0 = all) limits the measured
    commands. Raises :class:`nandlab.TraceError` (a malformed line: file, line, field),
    :class:`nandlab.ConfigError` or :class:`nandlab.SimError`.
    """
    text, cfg_path = config_text(config)
    out = _core.osd_run(
        text,
        str(cfg_path) if cfg_path is not None else None,
        format_overrides(overrides),
        str(_trace_path(trace)),
        int(max_commands),
    )
    report: dict[str, Any] = json.loads(out)
    return report


#: DMMbench access types (Guo §4.6.1).
BENCH_PATTERNS = ("seq_write", "seq_read", "rand_write", "rand_read")


def bench(
    config: ConfigSpec = "dmm",
    pattern: str = "seq_write",
    request_bytes: int = 4096,
    total_bytes: int = 64 << 20,
    *,
    file_bytes: int = 0,
    overrides: Mapping[str, object] | list[str] | None = None,
) -> dict[str, Any]:
    """Run DMMbench (one file accessed through the OSD, inode read before and inode write after
    each access, Guo §4.6.1) on the object device ``config`` describes: ``pattern`` (one of
    :data:`BENCH_PATTERNS`), ``request_bytes`` per access, ``total_bytes`` moved, on a file of
    ``file_bytes`` (0 = the total). Returns the report with a ``bench`` section."""
    text, cfg_path = config_text(config)
    out = _core.osd_bench(
        text,
        str(cfg_path) if cfg_path is not None else None,
        format_overrides(overrides),
        pattern,
        int(request_bytes),
        int(total_bytes),
        int(file_bytes),
    )
    report: dict[str, Any] = json.loads(out)
    return report


#: Recovery variants of the crash test: the design, and the three negative controls.
CRASH_VARIANTS = (
    "full",
    "no_capacitor",
    "no_rollback",
    "no_reapply",
    "no_reachability",
    "no_onode_buffer",
)


#: The crash test's mixed workload by default: (commands, objects).
CRASH_MIXED = (6000, 48)


def crash_test(
    config: ConfigSpec = "dmm",
    *,
    trace: str | Path | None = None,
    max_commands: int = 2000,
    bench: tuple[str, int, int] | None = None,
    mixed: tuple[int, int] = CRASH_MIXED,
    device: str | None = None,
    cuts: int = 100,
    seed: int = 1,
    variant: str = "full",
    overrides: Mapping[str, object] | list[str] | None = None,
    cut_only: str | None = None,
) -> dict[str, Any]:
    """Cut the power at ``cuts`` seeded flash operations, recover (capacitor flush +
    Algorithm 1) and compare every object with the acknowledged writes (§4.4.5, spec §7.6).

    The commands are those of ``trace`` (its preconditioning plus the first ``max_commands``;
    0 = all), of DMMbench ``bench = (pattern, request_bytes, total_bytes)``, or, by default,
    of the mixed workload ``mixed = (commands, objects)``: seeded CREATE / WRITE / READ /
    attribute / TRUNCATE / FLUSH / REMOVE commands over many objects, which reach GC, MLGC
    eviction and diff-cache eviction (``crates/nandlab-core/src/osd/mixed.rs``).
    ``device`` is ``"small"`` (the preset's design and page size on 4 dies of 24 blocks of 64
    pages, 2-block chunks, 4 tail buffers, a 16 KiB diff cache and 1 KiB MLGC table where the
    design has them; the overrides are listed in the report's ``device_overrides`` and
    applied before ``overrides``) or ``"preset"`` (the config as it is); ``None`` means small
    without a trace and preset with one.
    ``variant`` is one of :data:`CRASH_VARIANTS` (the broken ones must fail). ``cut_only``
    draws the cuts only among the flash operations whose class (``program_<type>_<source>``
    or ``erase``, the keys of the report's ``ops_by_class``) contains this text, e.g.
    ``"program_index"``, ``"gc"``, ``"mlgc"`` or ``"cache_evict"``; a text no operation of
    the window matches raises ``ValueError`` naming the classes present. The report has
    ``ops_by_class`` (the window's flash operations by class) and ``cuts_by_op`` (where the
    cuts fell), ``failures`` (cuts that lost acknowledged data or brought back a removed
    object), ``table_failures`` (the recovered device's DRAM tables or valid counts differ
    from the truth derived from flash), ``replay_failures`` (replay continued on the
    recovered device failed or drifted from the acknowledged state),
    ``recovery_cut_mismatches``, ``recovery_time_s_mean`` and, for a trace, ``objfs`` (its
    ``host_dirty_peak_bytes``: the host-cache data a cut can lose above the device).
    Raises ``ValueError`` for an unknown ``device``.
    """
    if device is None:
        device = "preset" if trace is not None else "small"
    if device not in ("small", "preset"):
        raise ValueError(f"device {device!r}: use 'small' or 'preset'")
    text, cfg_path = config_text(config)
    pattern, req, total = bench if bench is not None else ("mixed", 0, 0)
    out = _core.osd_crash_test(
        text,
        str(cfg_path) if cfg_path is not None else None,
        format_overrides(overrides),
        str(_trace_path(trace)) if trace is not None else None,
        int(max_commands),
        pattern,
        int(req),
        int(total),
        int(cuts),
        int(seed),
        variant,
        cut_only,
        device == "small",
        int(mixed[0]),
        int(mixed[1]),
    )
    report: dict[str, Any] = json.loads(out)
    return report


def trace_stats(trace: str | Path) -> dict[str, Any]:
    """Table-17-style statistics of a file-level trace (see ``trace::fsjsonl::FsTraceStats``)."""
    stats: dict[str, Any] = json.loads(_core.fs_trace_stats(str(_trace_path(trace))))
    return stats


__all__ = [
    "BENCH_PATTERNS",
    "CRASH_MIXED",
    "CRASH_VARIANTS",
    "PRESETS",
    "bench",
    "crash_test",
    "run",
    "trace_stats",
]
