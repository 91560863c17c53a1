"""``nandlab run``: replay a trace on a simulated SSD and print a summary table."""

from __future__ import annotations

import re
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import click
from rich.console import Console
from rich.table import Table

from nandlab._interrupt import on_interrupt
from nandlab.api import simulate
from nandlab.cli_common import (
    device_option,
    err_console,
    fmt_value,
    format_option,
    json_option,
    out_console,
    unterminated_option,
    warn_unterminated,
    write_json_out,
)
from nandlab.config import cli_override
from nandlab.data import default_trace, resolve_trace
from nandlab.load import saturation_warning
from nandlab.result import RunResult, flatten, lookup


def _first(report: dict[str, Any], candidates: Iterable[str]) -> Any:
    flat = None
    for c in candidates:
        v = lookup(report, c)
        if v is None:
            flat = flat if flat is not None else flatten(report)
            v = flat.get(c)
        if v is not None:
            return v
    return None


_STAT_ALIASES = {
    "mean": ("mean",),
    "p50": ("p50",),
    "p90": ("p90",),
    "p99": ("p99",),
    "p99.9": ("p99.9", "p999", "p99_9"),
    "max": ("max",),
}


def _latency_candidates(section: str, cls: str, stat: str) -> list[str]:
    """Plausible report paths of a latency statistic (µs) of ``cls`` in ``host`` / queue wait."""
    out: list[str] = []
    cls_names = [cls] if cls else ["all", "overall"]
    for s in _STAT_ALIASES[stat]:
        if section == "response":
            if cls:
                out += [f"host.{cls}_{s}_us"]
            else:
                out += [f"host.{s}_us"]
            for c in cls_names:
                out += [
                    f"host.{c}.{s}_us",
                    f"host.latency.{c}.{s}_us",
                    f"host.response.{c}.{s}_us",
                    f"host.response_us.{c}.{s}",
                    f"host.percentiles.{c}.{s}_us",
                    f"host.{c}.response.{s}_us",
                ]
        else:  # "wait" or "service"
            names = ["wait", "queue_wait"] if section == "wait" else ["service"]
            for nm in names:
                prefix = f"{cls}_" if cls else ""
                out += [f"host.{prefix}{nm}_{s}_us", f"host.{nm}.{s}_us", f"host.{nm}_us.{s}"]
                for c in cls_names:
                    out += [f"host.{c}.{nm}.{s}_us", f"host.{nm}.{c}.{s}_us"]
    return out


def _erase_distribution(report: dict[str, Any]) -> dict[str, Any] | None:
    """The first sub-dict whose key mentions erase counts and that has min/mean/max."""
    stack: list[tuple[str, Any]] = list(report.items())
    while stack:
        key, v = stack.pop(0)
        if isinstance(v, dict):
            if "erase" in key.lower() and all(k in v for k in ("min", "mean", "max")):
                return v
            stack.extend((f"{key}.{k}", x) for k, x in v.items())
    return None


_SPAN_RE = re.compile(r"(^|\.)(sim|simulated)[a-z_]*_(s|ns)$")


def _simulated_span_s(report: dict[str, Any]) -> float | None:
    """Simulated time covered by the run, seconds (a `sim*_s` or `sim*_ns` field)."""
    for k, v in flatten(report).items():
        m = _SPAN_RE.search(k)
        if m and "wall" not in k and isinstance(v, (int, float)) and not isinstance(v, bool):
            return v / 1e9 if m.group(3) == "ns" else float(v)
    return None


def summary_rows(report: dict[str, Any]) -> list[tuple[str, str]]:
    """(label, value) rows of the run summary table; rows the report lacks are left out."""
    rows: list[tuple[str, str]] = []

    def add(label: str, value: Any) -> None:
        if value is not None:
            rows.append((label, value if isinstance(value, str) else fmt_value(value)))

    _missing = object()

    def add_key(label: str, dotted: str) -> None:
        """A row for a report key; a statistic without samples (null) shows as "—"."""
        v = lookup(report, dotted, _missing)
        if v is not _missing:
            rows.append((label, v if isinstance(v, str) else fmt_value(v)))

    add_key("scheme", "scheme")
    reads, writes = lookup(report, "host.reads"), lookup(report, "host.writes")
    trace_requests = lookup(report, "cache.manager.counters.requests")
    if trace_requests is not None:
        # behind the cache layer the device's requests are the SSD operations it makes
        add("trace requests (into the cache layer)", trace_requests)
        add("SSD operations (from the cache layer)", lookup(report, "host.requests"))
        if reads is not None or writes is not None:
            add("SSD reads / writes", f"{fmt_value(reads)} / {fmt_value(writes)}")
    else:
        add("host requests", lookup(report, "host.requests"))
        if reads is not None or writes is not None:
            add("reads / writes", f"{fmt_value(reads)} / {fmt_value(writes)}")
    stats = ("mean", "p50", "p90", "p99", "p99.9", "max")
    for cls, label in (("", "all"), ("read", "read"), ("write", "write")):
        section = lookup(report, f"host.{cls or 'all'}")
        vals = [_first(report, _latency_candidates("response", cls, st)) for st in stats]
        if isinstance(section, dict) or any(v is not None for v in vals):
            text = " / ".join(fmt_value(v) for v in vals)
            add(f"response {label} µs ({'/'.join(stats)})", text)
    wait = _first(report, _latency_candidates("wait", "", "mean"))
    service = _first(report, _latency_candidates("service", "", "mean"))
    if wait is not None or service is not None:
        add("mean queue wait / service µs", f"{fmt_value(wait)} / {fmt_value(service)}")
    fr, fp, fe = (lookup(report, f"flash.{k}") for k in ("reads", "programs", "erases"))
    if any(v is not None for v in (fr, fp, fe)):
        add(
            "flash reads / programs / erases",
            f"{fmt_value(fr)} / {fmt_value(fp)} / {fmt_value(fe)}",
        )
    add("GC invocations", lookup(report, "gc.invocations"))
    add("GC pages moved", lookup(report, "gc.pages_moved"))
    add_key("write amplification", "write_amplification")
    mapping = report.get("mapping")
    if isinstance(mapping, dict):
        # ftl.mapping = "cached" (DFTL): how the cached mapping table served the run
        hr = mapping.get("hit_rate")
        add(
            "CMT hit rate / translation reads / programs",
            f"{'—' if hr is None else f'{hr * 100:.1f} %'} / "
            f"{fmt_value(mapping.get('translation_reads'))} / "
            f"{fmt_value(mapping.get('translation_programs'))}",
        )
    link = report.get("link")
    if isinstance(link, dict):
        # [link]: the host interface's share (its transfer is in every response time)
        down, up = link.get("downstream") or {}, link.get("upstream") or {}
        add(
            f"PCIe {link.get('pcie_generation')}.0 x{link.get('lanes')} utilisation "
            "down / up, mean link wait µs",
            " / ".join(
                "—" if d.get("utilization") is None else f"{d['utilization'] * 100:.1f} %"
                for d in (down, up)
            )
            + f", {fmt_value(down.get('wait_mean_us'))} / {fmt_value(up.get('wait_mean_us'))}",
        )
    ec = _erase_distribution(report)
    if ec is not None:
        add(
            "erase count min / mean / max",
            " / ".join(fmt_value(ec.get(k)) for k in ("min", "mean", "max")),
        )
    load = report.get("load")
    if isinstance(load, dict):
        add(
            "die utilisation / offered load / queue-wait share",
            " / ".join(
                "—" if load.get(k) is None else f"{load[k] * 100:.1f} %"
                for k in ("die_utilization", "offered_die_load", "wait_share")
            ),
        )
        ov = load.get("overloaded")
        if ov is not None:
            add(
                "overloaded (latencies = queueing)",
                f"yes: {load.get('overload_reason')}" if ov else "no",
            )
    add("simulated span s", _simulated_span_s(report))
    add("wall time s", lookup(report, "timing.wall_s"))
    add("host requests/s (wall)", lookup(report, "timing.host_requests_per_s"))
    return rows


def flow_rows(report: dict[str, Any]) -> list[list[str]]:
    """The per-flow table of a run of concurrent flows: a header row, then one row a flow
    (name, requests, mean / p99 read / p99 write response µs, throughput, slowdown); empty
    for a single trace."""
    flows = report.get("flows")
    if not isinstance(flows, list) or not flows:
        return []
    rows = [["flow", "requests", "mean µs", "read p99 µs", "write p99 µs", "req/s", "slowdown"]]
    for f in flows:
        h = f.get("host") or {}
        sd = f.get("slowdown")
        rows.append(
            [
                str(f.get("name")) + ("" if f.get("replayed", True) else " (not replayed)"),
                fmt_value(h.get("requests")),
                fmt_value((h.get("all") or {}).get("mean_us")),
                fmt_value(h.get("read_p99_us")),
                fmt_value(h.get("write_p99_us")),
                fmt_value(f.get("host_throughput_rps")),
                "—" if sd is None else f"{sd:.3f}",
            ]
        )
    return rows


def print_summary(res: RunResult, console: Console = out_console) -> None:
    title = "nandlab run"
    flows = res.report.get("flows")
    if isinstance(flows, list):
        title += f" — {len(flows)} flows: " + ", ".join(str(f.get("name")) for f in flows)
    elif res.trace is not None:
        title += f" — {res.trace.name}"
    if res.config:
        title += f" on {Path(res.config).name if '/' in res.config else res.config}"
    t = Table(title=title, show_header=False, title_justify="left")
    t.add_column("metric", style="bold")
    t.add_column("value", justify="right")
    for label, value in summary_rows(res.report):
        t.add_row(label, value)
    console.print(t)
    flows = flow_rows(res.report)
    if flows:
        ft = Table(title="flows", title_justify="left")
        for c in flows[0]:
            ft.add_column(c, justify="left" if c == "flow" else "right")
        for row in flows[1:]:
            ft.add_row(*row)
        console.print(ft)
        fairness = res.report.get("fairness")
        if "fairness" in res.report:
            console.print(
                "fairness (least slowdown / greatest): "
                + ("—" if fairness is None else f"{fairness:.3f}")
            )
    note = address_map_note(res.report)
    if note:
        console.print(note, style="yellow")


def address_map_note(report: dict[str, Any]) -> str | None:
    """The compact address map's note (issue 28), when the run used it."""
    am = (report.get("device") or {}).get("address_map") or {}
    note = am.get("note") if am.get("mode") == "compact" else None
    return f"note: {note}" if isinstance(note, str) else None


@click.command()
@click.option(
    "--config",
    "-c",
    "config",
    default="default",
    show_default=True,
    metavar="FILE|NAME",
    help="Config file or packaged preset name.",
)
@click.option(
    "--trace",
    "-t",
    "trace",
    multiple=True,
    metavar="FILE|NAME",
    help="Trace file or bundled trace name (`nandlab trace list`; default: pgbench_rw_slice). "
    "Repeat it to replay traces as concurrent flows, each on its own queue "
    "(docs/multi-tenant.md).",
)
@format_option
@device_option
@unterminated_option
@click.option("--scheme", "-s", default=None, help="Scheme name (overrides scheme.name).")
@click.option(
    "--set",
    "sets",
    multiple=True,
    metavar="KEY=VALUE",
    help="Override a config key (dotted path, TOML value); repeatable.",
)
@json_option
@click.option(
    "--quiet",
    "-q",
    is_flag=True,
    help="No progress bar and no summary table (notes qualifying the numbers still go to stderr).",
)
@click.option(
    "--slowdown/--no-slowdown",
    default=True,
    show_default=True,
    help="With concurrent flows: run each flow alone on the same device (cached) for its "
    "slowdown and the run's fairness.",
)
@click.option(
    "--progress/--no-progress",
    default=None,
    help="Progress on/off (default: on when stderr is a terminal). Forced on without a "
    "terminal (a CI log), it prints one line every few seconds.",
)
def run(
    config: str,
    trace: tuple[str, ...],
    trace_format: str | None,
    device: int | None,
    allow_unterminated: bool,
    scheme: str | None,
    sets: tuple[str, ...],
    json_out: str | None,
    quiet: bool,
    slowdown: bool,
    progress: bool | None,
) -> None:
    """Replay a trace on a simulated SSD and print a summary."""
    overrides = [cli_override(s) for s in sets]
    on_interrupt(
        "the run was abandoned: no report"
        + (f" (nothing written to {json_out})" if json_out not in (None, "-") else "")
        + "; a stats.request_log or stats.timeseries file being written is incomplete"
    )
    paths = [resolve_trace(t) for t in trace] or [default_trace()]
    show_progress = (not quiet) and (progress if progress is not None else err_console.is_terminal)
    res = simulate(
        config,
        paths if len(trace) > 1 else paths[0],
        scheme=scheme,
        overrides=overrides,
        trace_format=trace_format,
        device=device,
        allow_unterminated=allow_unterminated,
        progress=show_progress,
        slowdown=slowdown,
    )
    flows = res.report.get("flows")
    if isinstance(flows, list):
        for f in flows:
            tr = f.get("trace") or {}
            if tr.get("path"):
                warn_unterminated(Path(tr["path"]), tr.get("counters", {}))
    else:
        warn_unterminated(paths[0], res.report.get("trace", {}).get("counters", {}))
    write_json_out(json_out, res.report)
    if not quiet and json_out != "-":
        print_summary(res)
    else:  # no summary: the note that qualifies the numbers still reaches the user, on stderr
        note = address_map_note(res.report)
        if note:
            err_console.print(note, style="yellow")
    warning = saturation_warning(res.report)
    if warning:  # always, on stderr: the numbers above are a backlog
        click.secho(warning, fg="yellow", err=True)
