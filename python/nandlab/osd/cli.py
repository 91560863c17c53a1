"""``nandlab osd``: the object-based flash device (Guo ch. 4) on file-level traces.

Errors (a malformed trace line, a bad config key, a missing file) print one red line and exit
with status 2, like every nandlab command.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import click
from rich.table import Table

from nandlab import osd as _osd
from nandlab._console import make_console
from nandlab.cli_common import ByteSize, interruptible, require_file, write_json_out
from nandlab.config import cli_override

_out = make_console()

_CONFIG_HELP = "Object-device preset (dmm, obfs, yaffs2) or a config file with an [osd] section."
_TYPES = ("data", "index", "onode")
_SOURCES = ("host", "gc", "mlgc", "cache_evict", "recovery", "total")
_CMDS = ("create", "remove", "read", "write", "get_attr", "set_attr", "truncate", "flush", "all")


def _num(v: Any) -> str:
    if isinstance(v, bool) or v is None:
        return "—" if v is None else str(v)
    if isinstance(v, int):
        return f"{v:,}"
    if isinstance(v, float):
        if not math.isfinite(v):
            return "—"
        return f"{v:,.3f}" if abs(v) < 1000 else f"{v:,.0f}"
    return str(v)


def _bytes(n: Any) -> str:
    if not isinstance(n, (int, float)):
        return "—"
    for unit, k in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= k:
            return f"{n / k:,.2f} {unit}"
    return f"{int(n)} B"


def _ms(us: Any) -> str:
    return f"{us / 1000:,.3f}" if isinstance(us, (int, float)) else "—"


def _pct(v: Any) -> str:
    return f"{100 * v:.1f} %" if isinstance(v, (int, float)) and math.isfinite(v) else "—"


def print_report(rep: dict[str, Any]) -> None:
    """The rich tables of an object-device report."""
    d = rep.get("design", {})
    title = f"object device: {d.get('name', '?')}"
    if "trace" in rep:
        title += f" on {Path(rep['trace']['file']).name}"
    if "bench" in rep:
        b = rep["bench"]
        title += (
            f" on DMMbench {b['pattern']} {_bytes(b['request_bytes'])} x {_bytes(b['total_bytes'])}"
        )
    t = Table(title=title, show_header=False)
    t.add_column("")
    t.add_column("", justify="right")
    dc = rep.get("diff_cache", {})
    rows = [
        (
            "design",
            f"{d.get('design')} (MLGC {d.get('mlgc')}, "
            f"GC table {_bytes(d.get('mlgc_table_bytes'))}, virtual tree {d.get('virtual_tree')}, "
            f"diff cache {_bytes(d.get('diff_cache_bytes'))})",
        ),
        ("measured commands", _num(rep.get("commands"))),
        ("simulated time (s)", _num(rep.get("sim_time_s"))),
        ("page writes", _num(rep.get("page_writes", {}).get("total"))),
        ("page reads", _num(rep.get("page_reads", {}).get("total"))),
        ("block erases", _num(rep.get("erases", {}).get("total"))),
        ("diff cache hit rate", _pct(dc.get("hit_rate"))),
        ("chunks reclaimed by GC", _num(rep.get("gc", {}).get("chunks_reclaimed"))),
        ("MLGC evictions", _num(rep.get("gc", {}).get("mlgc_evictions"))),
        ("wall time (s)", _num(rep.get("wall_s"))),
        ("commands / s (wall)", _num(rep.get("commands_per_s"))),
    ]
    for k, v in rows:
        t.add_row(k, v)
    _out.print(t)

    pw = Table(title="page writes by type and source")
    pw.add_column("type")
    for s in _SOURCES:
        pw.add_column(s, justify="right")
    for ty in _TYPES:
        row = rep.get("page_writes", {}).get(ty, {})
        pw.add_row(ty, *(_num(row.get(s)) for s in _SOURCES))
    pw.add_row("all", *([""] * (len(_SOURCES) - 1)), _num(rep.get("page_writes", {}).get("total")))
    _out.print(pw)

    rt = Table(title="response time per command (ms, device time)")
    for c, j in (
        ("command", "left"),
        ("count", "right"),
        ("mean", "right"),
        ("p50", "right"),
        ("p90", "right"),
        ("p99", "right"),
        ("max", "right"),
    ):
        rt.add_column(c, justify=j)  # type: ignore[arg-type]
    resp = rep.get("response", {})
    for cmd in _CMDS:
        r = resp.get(cmd)
        if not r or not r.get("count"):
            continue
        rt.add_row(
            cmd,
            _num(r.get("count")),
            _ms(r.get("mean_us")),
            _ms(r.get("p50_us")),
            _ms(r.get("p90_us")),
            _ms(r.get("p99_us")),
            _ms(r.get("max_us")),
        )
    _out.print(rt)

    dram = rep.get("dram", {})
    dt = Table(title="DRAM use (peak)")
    dt.add_column("table")
    dt.add_column("peak", justify="right")
    dt.add_column("bound", justify="right")
    for name, key, bound in (
        ("byte-level GC table", "gc_table_bytes", "gc_table_capacity_bytes"),
        ("diff cache", "diff_cache_bytes", "diff_cache_capacity_bytes"),
        ("virtual-tree page table", "page_table_bytes", "page_table_bound_bytes"),
        ("global index", "global_index_bytes", None),
        ("RAM file index (YAFFS2)", "ram_index_bytes", None),
        ("tail buffers", "tail_buffer_bytes", None),
    ):
        if key in dram:
            dt.add_row(name, _bytes(dram[key]), _bytes(dram.get(bound)) if bound else "—")
    _out.print(dt)

    pre = rep.get("precondition", {})
    fs = rep.get("objfs")
    ht = Table(title="preconditioning and host layer (objfs)", show_header=False)
    ht.add_column("")
    ht.add_column("", justify="right")
    if fs:
        ht.add_row("pre-existing files created untimed", _num(fs.get("preconditioned_objects")))
        ht.add_row("their bytes", _bytes(fs.get("preconditioned_bytes")))
    ht.add_row("preconditioning commands", _num(pre.get("commands")))
    ht.add_row("preconditioning page writes", _num(pre.get("page_writes")))
    ht.add_row("preconditioning erases", _num(pre.get("erases")))
    if fs:
        ht.add_row("trace records", _num(fs.get("records")))
        ht.add_row("deletes of unknown paths skipped", _num(fs.get("deletes_skipped")))
        ht.add_row("renames over an existing target", _num(fs.get("renames_over_existing")))
        ht.add_row("reads answered by host-dirty data", _num(fs.get("reads_from_host_cache")))
        wb = ", ".join(
            f"{k} {_num(fs.get('writebacks_' + k))}"
            for k in ("fsync", "expire", "dirty_limit", "end")
        )
        ht.add_row("object writebacks", wb)
        ht.add_row("host-dirty data, peak", _bytes(fs.get("host_dirty_peak_bytes")))
        ht.add_row("host-dirty data left at the end", _bytes(fs.get("host_dirty_at_end_bytes")))
    _out.print(ht)


@click.group("osd")
def osd() -> None:
    """Object-based flash device (Guo ch. 4): OBFS, DMM, YAFFS2-like on file-level traces."""


@osd.command("run")
@click.option(
    "--config",
    "-c",
    "config",
    default="dmm",
    show_default=True,
    metavar="dmm|obfs|yaffs2|FILE",
    help=_CONFIG_HELP,
)
@click.option(
    "--trace",
    "-t",
    "trace",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="File-level trace (*_fs.jsonl[.gz|.zst]).",
)
@click.option(
    "--bench",
    "bench",
    default=None,
    metavar="PATTERN[:REQUEST[:TOTAL]]",
    help="DMMbench instead of a trace: seq_write, seq_read, rand_write or rand_read, REQUEST "
    "bytes per access (default 4KiB), TOTAL bytes moved (default 64MiB), e.g. "
    "seq_write:256KiB:64MiB.",
)
@click.option(
    "--set",
    "sets",
    multiple=True,
    metavar="KEY=VALUE",
    help="Override a config key (osd.…, objfs.…, device.…); repeatable.",
)
@click.option(
    "--max-commands",
    type=click.IntRange(min=0),
    default=0,
    show_default=True,
    help="Replay at most this many measured commands (0 = all).",
)
@click.option(
    "--json",
    "json_out",
    metavar="OUT",
    default=None,
    help="Also write the report as JSON to OUT ('-' for stdout, which hides the tables).",
)
@click.option("--quiet", "-q", is_flag=True, help="No tables.")
def osd_run(
    config: str,
    trace: Path | None,
    bench: str | None,
    sets: tuple[str, ...],
    max_commands: int,
    json_out: str | None,
    quiet: bool,
) -> None:
    """Replay a file-level trace (or DMMbench) on an object device and print page writes by
    type and source, erases, response time per command, diff-cache hit rate and DRAM use."""
    overrides = [cli_override(s) for s in sets]
    if (trace is None) == (bench is None):
        raise click.UsageError("give exactly one of --trace FILE and --bench SPEC")
    if trace is not None:
        require_file(trace, "trace file")
        rep = interruptible(
            lambda: _osd.run(config, trace, overrides=overrides, max_commands=max_commands)
        )
    else:
        pattern, req, total = _bench_spec(str(bench))
        rep = interruptible(lambda: _osd.bench(config, pattern, req, total, overrides=overrides))
    write_json_out(json_out, rep)
    if not quiet and json_out != "-":
        print_report(rep)


def _bench_spec(spec: str) -> tuple[str, int, int]:
    """``PATTERN[:REQUEST[:TOTAL]]`` of ``--bench``."""
    parts = spec.split(":")
    if len(parts) > 3 or parts[0] not in _osd.BENCH_PATTERNS:
        raise click.BadParameter(
            f"{spec!r}: expected PATTERN[:REQUEST[:TOTAL]] with PATTERN one of "
            f"{', '.join(_osd.BENCH_PATTERNS)} (e.g. seq_write:4KiB:64MiB)",
            param_hint="--bench",
        )
    size = ByteSize()
    req = size.convert(parts[1], None, None) if len(parts) > 1 else 4096
    total = size.convert(parts[2], None, None) if len(parts) > 2 else 64 << 20
    return parts[0], req, total


def _crash_workload(spec: str) -> tuple[tuple[str, int, int] | None, tuple[int, int]]:
    """``--bench`` of the crash test: ``mixed[:COMMANDS[:OBJECTS]]`` (DMMbench spec ``None``)
    or a DMMbench ``PATTERN[:REQUEST[:TOTAL]]``."""
    parts = spec.split(":")
    if parts[0] != "mixed":
        return _bench_spec(spec), _osd.CRASH_MIXED
    vals = list(_osd.CRASH_MIXED)
    if len(parts) > 3 or not all(p.isdigit() and int(p) > 0 for p in parts[1:]):
        raise click.BadParameter(
            f"{spec!r}: expected mixed[:COMMANDS[:OBJECTS]] with positive integers "
            "(e.g. mixed:6000:48)",
            param_hint="--bench",
        )
    for i, p in enumerate(parts[1:]):
        vals[i] = int(p)
    return None, (vals[0], vals[1])


@osd.command("crash-test")
@click.option(
    "--config",
    "-c",
    "config",
    default="dmm",
    show_default=True,
    metavar="dmm|obfs|FILE",
    help=_CONFIG_HELP,
)
@click.option(
    "--trace",
    "-t",
    "trace",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="Cut a file-level trace's commands (its preconditioning + the first --max-commands).",
)
@click.option(
    "--max-commands",
    type=click.IntRange(min=0),
    default=2000,
    show_default=True,
    help="With --trace: measured commands replayed per cut (0 = all).",
)
@click.option(
    "--bench",
    "bench",
    default="mixed",
    show_default=True,
    metavar="mixed[:COMMANDS[:OBJECTS]]|PATTERN[:REQUEST[:TOTAL]]",
    help="Without --trace: the mixed workload (seeded create/write/read/attribute/truncate/"
    "flush/remove commands over many objects; default 6000 commands over 48 objects: it "
    "reaches GC, MLGC and diff-cache eviction on the small device) or a DMMbench workload "
    "(e.g. rand_write:4KiB:1MiB).",
)
@click.option(
    "--device",
    "device",
    type=click.Choice(["small", "preset"]),
    default=None,
    help="small: the config's design and page size on 4 dies of 24 blocks of 64 pages "
    "(2-block chunks, 4 tail buffers, 16 KiB diff cache and 1 KiB MLGC table where the design "
    "has them; printed with the result, applied before --set); preset: the config as it is. "
    "Default: small without --trace, preset with it.",
)
@click.option(
    "--cuts",
    type=click.IntRange(min=1),
    default=100,
    show_default=True,
    help="Seeded power cuts (uniform over the flash operations).",
)
@click.option(
    "--seed",
    type=click.IntRange(0, 2**64 - 1),
    default=1,
    show_default=True,
    help="Seed of the cut points.",
)
@click.option(
    "--cut-only",
    "cut_only",
    default=None,
    metavar="CLASS",
    help="Cut only flash operations whose class contains CLASS (program_<type>_<source> or "
    "erase, as in 'flash operations by class'), e.g. program_data_host, program_index, "
    "program_onode, gc (GC moves), mlgc, cache_evict or erase.",
)
@click.option(
    "--variant",
    type=click.Choice(list(_osd.CRASH_VARIANTS)),
    default="full",
    show_default=True,
    help="Recovery as designed, or a broken one that the test must catch.",
)
@click.option(
    "--set", "sets", multiple=True, metavar="KEY=VALUE", help="Override a config key; repeatable."
)
@click.option(
    "--json",
    "json_out",
    metavar="OUT",
    default=None,
    help="Also write the report as JSON to OUT ('-' for stdout).",
)
def osd_crash_test(
    config: str,
    trace: Path | None,
    max_commands: int,
    bench: str,
    device: str | None,
    cuts: int,
    seed: int,
    cut_only: str | None,
    variant: str,
    sets: tuple[str, ...],
    json_out: str | None,
) -> None:
    """Cut the power at N seeded points (mid-program, mid-erase, during GC, MLGC and
    diff-cache eviction, and inside recovery), recover, and compare every object with the
    acknowledged writes, the rebuilt tables with flash, and replay on after recovery; exit
    status 1 if any cut failed a check (a second cut inside recovery that changed the
    recovered objects included)."""
    overrides = [cli_override(s) for s in sets]
    if trace is not None:
        require_file(trace, "trace file")
    spec, mixed = _crash_workload(bench)
    rep = interruptible(
        lambda: _osd.crash_test(
            config,
            trace=trace,
            max_commands=max_commands,
            bench=spec,
            mixed=mixed,
            device=device,
            cuts=cuts,
            seed=seed,
            variant=variant,
            overrides=overrides,
            cut_only=cut_only,
        )
    )
    write_json_out(json_out, rep)
    if json_out != "-":
        t = Table(title=f"power-cut test: {variant}", show_header=False)
        t.add_column("")
        t.add_column("", justify="right")
        if rep.get("device_overrides"):
            t.add_row("small device", " ".join(rep["device_overrides"]))
        mx = rep.get("mixed")
        if mx:
            t.add_row("workload", f"mixed: {mx['commands']} commands, {mx['objects']} objects")
        t.add_row("commands", _num(rep.get("commands")))
        t.add_row("flash operations (cut range)", _num(rep.get("flash_ops")))
        if rep.get("cut_only"):
            t.add_row(
                f"  ... of a class containing {rep['cut_only']!r}", _num(rep.get("cut_candidates"))
            )
        t.add_row("cuts", _num(rep.get("cuts")))
        t.add_row("cuts that lost acknowledged data", _num(rep.get("failures")))
        t.add_row("  ... recovered tables / valid counts wrong", _num(rep.get("table_failures")))
        t.add_row("  ... replay after recovery failed", _num(rep.get("replay_failures")))
        t.add_row("commands replayed after recovery", _num(rep.get("continued_commands")))
        t.add_row("second cuts inside recovery", _num(rep.get("recovery_cuts")))
        t.add_row("  ... with a different result", _num(rep.get("recovery_cut_mismatches")))
        t.add_row("capacitor flush, most pages", _num(rep.get("backup_pages_max")))
        t.add_row("  ... over the budget", _num(rep.get("backup_over_budget")))
        t.add_row("objects in IC_OBJ (mean)", _num(rep.get("ic_objects_mean")))
        t.add_row("data pages re-applied (mean)", _num(rep.get("reapplied_pages_mean")))
        t.add_row("recovery time (s, mean estimate)", _num(rep.get("recovery_time_s_mean")))
        fs = rep.get("objfs")
        if fs:
            t.add_row(
                "host-cache data a cut can lose (peak)", _bytes(fs.get("host_dirty_peak_bytes"))
            )
        ops = rep.get("ops_by_class", {})
        t.add_row(
            "flash operations by class", ", ".join(f"{k} {v}" for k, v in sorted(ops.items()))
        )
        by = rep.get("cuts_by_op", {})
        t.add_row("cuts by operation", ", ".join(f"{k} {v}" for k, v in sorted(by.items())))
        _out.print(t)
        for ex in rep.get("failure_examples", []):
            _out.print(f"failure: {ex}")
    if (
        rep.get("failures")
        or rep.get("table_failures")
        or rep.get("replay_failures")
        or rep.get("recovery_cut_mismatches")
    ):
        raise click.exceptions.Exit(1)


_STATS_ROWS = (
    ("records", "records"),
    ("distinct_paths", "distinct paths"),
    ("files", "files with data (T17 files)"),
    ("avg_request_kib", "average request (KiB)"),
    ("write_percent", "writes (%)"),
    ("write_seq_percent", "sequential writes (%)"),
    ("read_seq_percent", "sequential reads (%)"),
    ("reads", "reads (> 0 B)"),
    ("writes", "writes (> 0 B)"),
    ("eof_reads", "0-byte reads"),
    ("read_bytes", "read bytes"),
    ("write_bytes", "written bytes"),
    ("writes_under_2kib", "writes < 2 KiB"),
    ("link_renames", "link-renames"),
    ("deletes_of_unseen_paths", "deletes of unseen paths"),
    ("preexisting_paths", "paths that exist before the trace"),
    ("max_end_bytes", "largest end offset"),
    ("duration_s", "duration (s)"),
)


@osd.command("stats")
@click.argument("file", type=click.Path(dir_okay=False, path_type=Path))
@click.option(
    "--json",
    "json_out",
    metavar="OUT",
    default=None,
    help="Also write the statistics as JSON to OUT ('-' for stdout).",
)
def osd_stats(file: Path, json_out: str | None) -> None:
    """Table-17-style statistics of a file-level trace (files, average request, write and
    sequential shares; spec dmm.md §5's definitions)."""
    require_file(file, "trace file")
    st = interruptible(_osd.trace_stats, file)
    write_json_out(json_out, st)
    if json_out == "-":
        return
    t = Table(title=f"file-level trace {file.name}", show_header=False)
    t.add_column("")
    t.add_column("", justify="right")
    for key, label in _STATS_ROWS:
        v = st.get(key)
        t.add_row(label, _bytes(v) if key.endswith("_bytes") else _num(v))
    ops = st.get("ops", {})
    t.add_row("records by op", ", ".join(f"{k} {_num(v)}" for k, v in ops.items()))
    _out.print(t)


__all__ = ["osd", "print_report"]
