"""``nandlab trace``: inspect (``stats``, ``list``), convert and generate block traces."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import click
from rich.table import Table

from nandlab import _core
from nandlab.api import trace_options_json
from nandlab.cli_common import (
    ByteSize,
    CliGroup,
    device_option,
    fmt_value,
    format_option,
    interruptible,
    json_option,
    out_console,
    unterminated_option,
    warn_unterminated,
    write_json_out,
)
from nandlab.data import resolve_trace
from nandlab.result import flatten

#: Xia & Xiao Table II columns and the Fig. 1 page classes, shown first by `trace stats`.
_STATS_FIRST = (
    "address_space_gib",
    "requests",
    "read_ratio",
    "mean_size_kib",
    "read_only_frac",
    "write_only_frac",
    "overlapped_frac",
)

#: The declared unit of every `trace stats` field: values are formatted by it (a fraction as a
#: percentage, bytes in binary units), never by what the key's name happens to contain.
#: A field the core adds must be declared here (test_trace_stats checks every key).
#: The keys of `counters.non_request_by_action` (blkparse's actions and its own text lines;
#: the core's `trace::BLK_ACTIONS`).
BLKPARSE_ACTIONS = (
    "A", "B", "C", "D", "F", "G", "I", "M", "P", "Q", "R", "S", "U", "UT", "X", "m", "ZP", "ZU",
    "text",
)  # fmt: skip

TRACE_STATS_UNITS: dict[str, str] = {
    "file": "text",
    "format": "text",
    "requests": "count",
    "reads": "count",
    "writes": "count",
    "read_ratio": "fraction",
    "bytes_read": "bytes",
    "bytes_written": "bytes",
    "mean_size_kib": "KiB",
    "mean_read_size_kib": "KiB",
    "mean_write_size_kib": "KiB",
    "min_offset_bytes": "bytes",
    "max_end_bytes": "bytes",
    "address_space_gib": "GiB",
    "duration_s": "s",
    "page_size_bytes": "bytes",
    "pages_touched": "count",
    "read_only_pages": "count",
    "write_only_pages": "count",
    "overlapped_pages": "count",
    "read_only_frac": "fraction",
    "write_only_frac": "fraction",
    "overlapped_frac": "fraction",
    "page_accesses": "count",
    "read_only_access_frac": "fraction",
    "write_only_access_frac": "fraction",
    "overlapped_access_frac": "fraction",
    "dense_page_map": "bool",
    "counters.lines_read": "count",
    "counters.requests_emitted": "count",
    "counters.header_lines_skipped": "count",
    "counters.comment_lines_skipped": "count",
    "counters.blank_lines_skipped": "count",
    "counters.non_request_skipped": "count",
    "counters.zero_size_skipped": "count",
    "counters.requests_reordered": "count",
    "counters.requests_clamped": "count",
    "counters.dropped_device_filter": "count",
    "counters.unterminated_last_line": "count",
    **{f"counters.non_request_by_action.{a}": "count" for a in BLKPARSE_ACTIONS},
    "devices": "table",
}

#: Devices of a multi-device trace listed in the `trace stats` table (all are in --json).
STATS_DEVICES_SHOWN = 20


def unit_note(unit: str, v: Any) -> str:
    """The note column of `trace stats`: a fraction as a percentage, bytes in binary units,
    else the unit itself."""
    if not isinstance(v, (int, float)) or isinstance(v, bool):
        return ""
    if unit == "fraction":
        return f"{v * 100:.2f} %"
    if unit == "bytes":
        return _human_bytes(v)
    return "" if unit in ("count", "text", "bool") else unit


def _human_bytes(n: float) -> str:
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if abs(n) < 1024 or unit == "TiB":
            return f"{n:.2f} {unit}" if unit != "B" else f"{int(n)} B"
        n /= 1024
    return str(n)


@click.group(cls=CliGroup)
def trace() -> None:
    """Inspect, convert and generate block traces."""


@trace.command("stats")
@click.argument("trace_spec", metavar="FILE|NAME")
@format_option
@device_option
@unterminated_option
@click.option(
    "--page-size-bytes",
    type=ByteSize(),
    default="8KiB",
    show_default=True,
    help="Flash page size for the read-only/write-only/overlapped page ratios.",
)
@json_option
def trace_stats(
    trace_spec: str,
    trace_format: str | None,
    device: int | None,
    allow_unterminated: bool,
    page_size_bytes: int,
    json_out: str | None,
) -> None:
    """Workload characteristics (Xia & Xiao Table II) and page overlap ratios of a trace file
    or a bundled trace (by name: `nandlab trace list`)."""
    file = resolve_trace(trace_spec)
    opts = trace_options_json(trace_format, device, allow_unterminated=allow_unterminated or None)
    stats = json.loads(interruptible(_core.trace_stats, str(file), opts, page_size_bytes))
    warn_unterminated(file, stats.get("counters", {}))
    write_json_out(json_out, stats)
    if json_out == "-":
        return
    t = Table(title=f"trace stats — {file.name}", show_header=False, title_justify="left")
    t.add_column("field", style="bold")
    t.add_column("value", justify="right")
    t.add_column("", style="dim")
    devices = stats.pop("devices", None) or []
    flat = flatten(stats)
    ordered = [k for k in _STATS_FIRST if k in flat] + [k for k in flat if k not in _STATS_FIRST]
    for k in ordered:
        v = flat[k]
        # an undeclared field gets no note (test_trace_stats requires every field declared)
        t.add_row(k, fmt_value(v), unit_note(TRACE_STATS_UNITS.get(k, "text"), v))
    out_console.print(t)
    if devices:
        print_devices(devices, file)


@trace.command("list")
@json_option
def trace_list(json_out: str | None) -> None:
    """The bundled traces: the name every command takes after --trace (or as a file name),
    the file, its format, requests, size and where it comes from (PROVENANCE.md)."""
    from nandlab.data import BUNDLED_SOURCES, bundled_traces, trace_name

    rows = []
    for p in bundled_traces():
        st = json.loads(_core.trace_stats(str(p), trace_options_json(), 8192))
        rows.append(
            {
                "name": trace_name(p),
                "file": p.name,
                "path": str(p),
                "format": st.get("format"),
                "requests": st.get("requests"),
                "size_bytes": p.stat().st_size,
                "source": BUNDLED_SOURCES.get(p.name, "see PROVENANCE.md"),
            }
        )
    write_json_out(json_out, rows)
    if json_out == "-":
        return
    t = Table(
        title="bundled traces (use the name with --trace, in a grid's traces, in compare)",
        title_justify="left",
    )
    for c in ("name", "format", "requests", "size", "source"):
        t.add_column(c, justify="right" if c in ("requests", "size") else "left")
    for r in rows:
        t.add_row(
            r["name"], str(r["format"]), fmt_value(r["requests"]), _human_bytes(r["size_bytes"]),
            r["source"],
        )  # fmt: skip
    out_console.print(t)
    out_console.print(
        f"[dim]files in {bundled_traces()[0].parent if rows else '?'} (PROVENANCE.md)[/dim]"
    )


def print_devices(devices: list[dict[str, Any]], file: Path) -> None:
    """The devices of a multi-device trace, busiest first (the first
    :data:`STATS_DEVICES_SHOWN`)."""
    busiest = sorted(devices, key=lambda d: (-d["requests"], d["device"]))
    shown = busiest[:STATS_DEVICES_SHOWN]
    more = len(devices) - len(shown)
    title = (
        f"{len(devices)} devices (merged into one address space by default; replay one with "
        f"--device ID)" + (f"; the {len(shown)} busiest shown, --json lists all" if more else "")
    )
    t = Table(title=title, title_justify="left")
    for c in ("device (--device)", "requests", "reads", "writes", "size", "written"):
        t.add_column(c, justify="right")
    for d in shown:
        t.add_row(
            str(d["device"]),
            fmt_value(d["requests"]),
            fmt_value(d["reads"]),
            fmt_value(d["writes"]),
            _human_bytes(d["size_bytes"]),
            _human_bytes(d["bytes_written"]),
        )
    out_console.print(t)


@trace.command("convert")
@click.argument("input_spec", metavar="INPUT")
@click.argument("output", type=click.Path(dir_okay=False, path_type=Path))
@format_option
@device_option
@unterminated_option
@json_option
def trace_convert(
    input_spec: str,
    output: Path,
    trace_format: str | None,
    device: int | None,
    allow_unterminated: bool,
    json_out: str | None,
) -> None:
    """Convert a trace (a file or a bundled trace's name) to nandlab's canonical CSV (gzip if
    OUTPUT ends in .gz)."""
    src = resolve_trace(input_spec)
    n = interruptible(
        _core.trace_convert,
        str(src),
        trace_options_json(trace_format, device, allow_unterminated=allow_unterminated or None),
        str(output),
        partial=output,
    )
    write_json_out(json_out, {"input": str(src), "output": str(output), "requests": n})
    if json_out != "-":
        out_console.print(f"wrote {n:,} requests to {output}")


def _parse_sizes_kib(ctx: click.Context, param: click.Parameter, value: str) -> list[int]:
    try:
        sizes = [int(x) for x in value.split(",") if x.strip()]
    except ValueError:
        raise click.BadParameter(f"{value!r}: expected comma-separated KiB, e.g. 4,8,16") from None
    if not sizes or any(s <= 0 for s in sizes):
        raise click.BadParameter(f"{value!r}: sizes must be positive")
    return [s * 1024 for s in sizes]


@trace.command("generate")
@click.argument("output", type=click.Path(dir_okay=False, path_type=Path))
@click.option(
    "--requests",
    "-n",
    type=click.IntRange(min=1),
    default=1_000_000,
    show_default=True,
    help="Number of requests to generate.",
)
@click.option(
    "--span-bytes",
    type=ByteSize(),
    default="16GiB",
    show_default=True,
    help="Logical address span the offsets fall in (binary units: 16GiB, 512MiB).",
)
@click.option(
    "--write-fraction",
    type=click.FloatRange(0.0, 1.0),
    default=0.7,
    show_default=True,
    help="Share of requests that are writes (each request draws its op independently).",
)
@click.option(
    "--sizes-kib",
    default="4,8,16,32,64",
    show_default=True,
    callback=_parse_sizes_kib,
    help="Request sizes in KiB, comma separated; each request picks one uniformly.",
)
@click.option(
    "--iops",
    type=click.FloatRange(min=0.0, min_open=True),
    default=2000.0,
    show_default=True,
    help="Mean arrival rate, requests per second (Poisson arrivals: exponential gaps).",
)
@click.option(
    "--seed",
    type=click.IntRange(0, 2**64 - 1),
    default=42,
    show_default=True,
    help="Random seed: the same seed and options give the same file.",
)
@click.option(
    "--align-bytes",
    type=ByteSize(),
    default="4KiB",
    show_default=True,
    help="Offsets are multiples of this (binary units: 4KiB).",
)
@click.option(
    "--zipf",
    "zipf_exponent",
    type=click.FloatRange(0.0, 10.0),
    default=0.0,
    show_default=True,
    help="Address skew: Zipf exponent over the span's aligned slots (0 = uniform; the hottest "
    "addresses are the lowest).",
)
@json_option
def trace_generate(
    output: Path,
    requests: int,
    span_bytes: int,
    write_fraction: float,
    sizes_kib: list[int],
    iops: float,
    seed: int,
    align_bytes: int,
    zipf_exponent: float,
    json_out: str | None,
) -> None:
    """Generate a synthetic canonical trace (uniform or Zipf-skewed offsets, Poisson arrivals)."""
    params = {
        "zipf_exponent": zipf_exponent,
        "requests": requests,
        "span_bytes": span_bytes,
        "align_bytes": align_bytes,
        "write_fraction": write_fraction,
        "sizes_bytes": sizes_kib,
        "iops": iops,
        "seed": seed,
    }
    n = interruptible(_core.trace_generate, json.dumps(params), str(output), partial=output)
    write_json_out(json_out, {"output": str(output), "requests": n, "params": params})
    if json_out != "-":
        out_console.print(f"wrote {n:,} requests to {output}")
