"""``nandlab bench``: simulation and parse speed, events per request and peak memory, each
case measured in a fresh process (``python -m nandlab._benchrun``)."""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import click
from rich.table import Table

from nandlab import _core
from nandlab._core import ConfigError, SimError, TraceError
from nandlab.cli_common import (
    err_console,
    fmt_value,
    json_option,
    one_line,
    out_console,
    write_json_out,
)
from nandlab.config import cli_override
from nandlab.data import default_trace, resolve_trace


def _bench_child(
    mode: str,
    trace: Path,
    config: str,
    scheme: str | None = None,
    overrides: Sequence[str] = (),
    extra: Sequence[str] = (),
) -> dict[str, Any]:
    cmd = [sys.executable, "-m", "nandlab._benchrun", mode, str(trace), "--config", config]
    if scheme:
        cmd += ["--scheme", scheme]
    for o in overrides:
        cmd += ["--set", o]
    cmd += list(extra)
    proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
    lines = [ln for ln in proc.stdout.splitlines() if ln.strip().startswith("{")]
    if not lines:
        tail = one_line(proc.stderr)[-300:]
        raise SimError(f"bench {mode} run on {trace.name} failed (exit {proc.returncode}): {tail}")
    out = json.loads(lines[-1])
    if "error" in out:
        kinds: dict[str, Callable[[str], Exception]] = {
            "TraceError": TraceError,
            "ConfigError": ConfigError,
            "SimError": SimError,
        }
        raise kinds.get(out.get("kind", ""), SimError)(f"bench {mode} on {trace}: {out['error']}")
    return out


def _median(xs: list[float]) -> float:
    s = sorted(xs)
    return s[len(s) // 2] if len(s) % 2 else (s[len(s) // 2 - 1] + s[len(s) // 2]) / 2


#: The bench cases: (row name, trace key, start, overrides). "touched": the pages the trace
#: touches are written before the replay (the preset's fill; GC runs when the trace overwrites
#: enough, as the synthetic trace does); "empty": nothing is written before the replay.
_BENCH_CASES: tuple[tuple[str, str, str, tuple[str, ...]], ...] = (
    ("bundled", "default", "touched", ()),
    ("synthetic", "synthetic", "empty", ('precondition.fill="none"',)),
    ("synthetic", "synthetic", "touched", ('precondition.fill="touched"',)),
)


@click.command()
@click.option(
    "--requests",
    "-n",
    type=click.IntRange(min=1),
    default=1_000_000,
    show_default=True,
    help="Requests of the generated synthetic trace.",
)
@click.option(
    "--config",
    "-c",
    default=None,
    metavar="FILE|NAME",
    help="Config (default xia-diffecc, the benchmark device: Xia & Xiao's, 8 channels x 1 die; "
    "with --cache: flexecc).",
)
@click.option(
    "--scheme", "-s", default="baseline", show_default=True, help="Scheme name ('' = config's)."
)
@click.option(
    "--repeat",
    "-r",
    type=click.IntRange(min=1),
    default=1,
    show_default=True,
    help="Runs per measurement, interleaved; medians are reported.",
)
@click.option(
    "--keep",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="Keep (and reuse) the generated trace (with --cache: the dumped stream) here.",
)
@click.option(
    "--cache",
    "cache",
    is_flag=True,
    help="Measure the cache layer instead: --trace through the config's [cache] against the "
    "same tagged SSD operations dumped and replayed without it (issue 14's budget: 1.5x).",
)
@click.option(
    "--trace",
    "cache_trace",
    default=None,
    metavar="FILE|NAME",
    help="Primary trace of the --cache case: a file or bundled trace name (default: the "
    "bundled pgbench_rw_slice).",
)
@click.option(
    "--flows",
    "flows",
    is_flag=True,
    help="Measure concurrent flows instead: two synthetic traces of --requests/2 requests "
    "(seeds 42 and 43, 1000 IOPS each) replayed together against each replayed alone "
    "(issue 35's budget: a two-flow run costs no more per request than the two single runs).",
)
@click.option(
    "--set",
    "sets",
    multiple=True,
    metavar="KEY=VALUE",
    help="Override a config key in every run (dotted path, TOML value); repeatable.",
)
@json_option
def bench(
    requests: int,
    config: str | None,
    scheme: str,
    repeat: int,
    keep: Path | None,
    cache: bool,
    cache_trace: str | None,
    flows: bool,
    sets: tuple[str, ...],
    json_out: str | None,
) -> None:
    """Measure simulation and parse speed, events per request and peak memory.

    Three cases, each parse-only and full simulation in a fresh process: the bundled trace
    (touched pages pre-written), and a generated synthetic trace of --requests requests
    (random 4 KiB-aligned offsets over 16 GiB, 70 % writes, 4-64 KiB, Poisson 2000 IOPS,
    seed 42) from an empty device and with the touched pages pre-written (GC running).
    Speeds are host requests per CPU second of the simulation call (all threads) and per wall
    second; sim/parse compares CPU times. CPU time is what to compare on a shared machine.

    With --cache: the primary trace (--trace, default the bundled one) replayed through the
    config's cache layer (default config flexecc), and the tagged 4 KiB SSD operations the
    cache layer makes of it, dumped once and replayed without [cache] on the same device; runs
    alternate, medians of --repeat. With a scheme that ignores cache tags (the default,
    baseline) both are the same simulation (checked: events and mean response equal), so the
    CPU ratio is the cache layer's cost.

    With --flows: two synthetic traces of --requests/2 requests each (seeds 42 and 43, 1000
    IOPS each) replayed together as concurrent flows, each replayed alone (on its own device,
    and on the two-flow device: host.replay_only_flow), and both merged into one trace on the
    two-flow device; runs alternate, medians of --repeat.
    """
    overrides = [cli_override(x) for x in sets]
    if flows:
        _bench_flows(requests, config or "xia-diffecc", scheme, overrides, repeat, keep, json_out)
        return
    if cache:
        _bench_cache(
            resolve_trace(cache_trace) if cache_trace else default_trace(),
            config or "flexecc",
            scheme,
            overrides,
            repeat,
            keep,
            json_out,
        )
        return
    if cache_trace is not None:
        raise click.UsageError("--trace is the primary trace of --cache; add --cache")
    config = config or "xia-diffecc"
    with tempfile.TemporaryDirectory(prefix="nandlab-bench-") as tmp:
        gen_dir = keep if keep is not None else Path(tmp)
        gen_dir.mkdir(parents=True, exist_ok=True)
        synth = gen_dir / f"synthetic_{requests}_seed42.csv"
        if not synth.is_file():
            with err_console.status(f"generating {requests:,}-request synthetic trace…"):
                _core.trace_generate(json.dumps({"requests": requests, "seed": 42}), str(synth))
        paths = {"default": default_trace(), "synthetic": synth}
        names = {"default": "default", "synthetic": f"synthetic-{requests}"}
        parse: dict[str, list[dict[str, Any]]] = {k: [] for k in paths}
        sims: list[list[dict[str, Any]]] = [[] for _ in _BENCH_CASES]
        for _ in range(repeat):
            for key, path in paths.items():
                with err_console.status(f"{names[key]}: parse-only…"):
                    parse[key].append(_bench_child("parse", path, config))
            for i, (_, key, start, ov) in enumerate(_BENCH_CASES):
                with err_console.status(f"{names[key]} ({start}): simulation…"):
                    sims[i].append(
                        _bench_child("sim", paths[key], config, scheme or None, [*ov, *overrides])
                    )
        results: list[dict[str, Any]] = []
        for i, (_, key, start, _ov) in enumerate(_BENCH_CASES):

            def med(runs: list[dict[str, Any]], k: str) -> Any:
                xs = [r[k] for r in runs if r.get(k) is not None]
                return _median(xs) if xs else None

            sim, par = sims[i], parse[key]
            sw, pw = med(sim, "wall_s"), med(par, "wall_s")
            sc, pc = med(sim, "cpu_s"), med(par, "cpu_s")
            n = sim[0].get("requests")
            if not _ov:
                # The config's own start: its fill, aged or not.
                fill = sim[0].get("precondition_fill") or start
                start = f"{fill}+aged" if sim[0].get("aged_overwrites") else str(fill)
            rc = med(sim, "replay_cpu_s")
            results.append(
                {
                    "trace": names[key],
                    "start": start,
                    "path": str(paths[key]),
                    "requests": n,
                    "host_requests_per_cpu_s": n / sc if n and sc else None,
                    "host_requests_per_s": n / sw if n and sw else None,
                    "sim_cpu_s": sc,
                    "setup_cpu_s": med(sim, "setup_cpu_s"),
                    "replay_cpu_s": rc,
                    "replay_requests_per_cpu_s": n / rc if n and rc else None,
                    "sim_wall_s": sw,
                    "events_per_request": med(sim, "events_per_request"),
                    "write_amplification": med(sim, "write_amplification"),
                    "flash_ops_per_s": med(sim, "flash_ops_per_s"),
                    "sim_peak_rss_mib": max(r["peak_rss_mib"] for r in sim),
                    "parse_cpu_s": pc,
                    "parse_wall_s": pw,
                    "parse_peak_rss_mib": max(r["peak_rss_mib"] for r in par),
                    "sim_over_parse_cpu": (sc / pc) if sc and pc else None,
                    "sim_over_parse": (sw / pw) if sw and pw else None,
                    "runs": repeat,
                }
            )
    write_json_out(
        json_out, {"config": config, "scheme": scheme or None, "repeat": repeat, "results": results}
    )
    if json_out == "-":
        return
    t = Table(title=f"nandlab bench — {config}, {scheme or 'config scheme'}", title_justify="left")
    cols = [
        ("trace", "trace"),
        ("start", "start"),
        ("requests", "requests"),
        ("req/CPU s", "host_requests_per_cpu_s"),
        ("CPU s", "sim_cpu_s"),
        ("set-up CPU s", "setup_cpu_s"),
        ("replay req/CPU s", "replay_requests_per_cpu_s"),
        ("wall s", "sim_wall_s"),
        ("events/req", "events_per_request"),
        ("WA", "write_amplification"),
        ("peak RSS MiB", "sim_peak_rss_mib"),
        ("parse CPU s", "parse_cpu_s"),
        ("sim/parse", "sim_over_parse_cpu"),
    ]
    for label, _ in cols:
        t.add_column(label, justify="left" if label in ("trace", "start") else "right")
    for r in results:
        t.add_row(*(fmt_value(r.get(k)) for _, k in cols))
    out_console.print(t)
    out_console.print(
        "[dim]req/CPU s: host requests per CPU second of the simulation (all threads); "
        "set-up: the same run stopped after one request (pre-pass, preconditioning); replay "
        "req/CPU s: requests per CPU second of the rest; "
        "sim/parse: CPU seconds of the simulation over a parse-only pass of the same file.[/dim]"
    )


def _bench_cache(
    trace: Path,
    config: str,
    scheme: str,
    overrides: list[str],
    repeat: int,
    keep: Path | None,
    json_out: str | None,
) -> None:
    """``nandlab bench --cache`` (see :func:`bench`)."""
    with tempfile.TemporaryDirectory(prefix="nandlab-bench-") as tmp:
        gen_dir = keep if keep is not None else Path(tmp)
        gen_dir.mkdir(parents=True, exist_ok=True)
        stem = trace.name.split(".")[0]
        dump = gen_dir / f"cache_stream_{stem}.csv"
        with err_console.status(f"{trace.name}: dumping the cache layer's SSD operations…"):
            d = _bench_child("dump", trace, config, None, overrides, ["--out", str(dump)])
        runs: dict[str, list[dict[str, Any]]] = {"cache": [], "plain": []}
        for i in range(repeat):
            order = ["cache", "plain"] if i % 2 == 0 else ["plain", "cache"]
            for k in order:
                with err_console.status(
                    f"{'cache layer' if k == 'cache' else 'plain'} run {i + 1}…"
                ):
                    if k == "cache":
                        r = _bench_child("sim", trace, config, scheme or None, overrides)
                    else:
                        r = _bench_child(
                            "sim", dump, config, scheme or None, overrides, ["--no-cache"]
                        )
                runs[k].append(r)

    def med(rs: list[dict[str, Any]], k: str) -> Any:
        xs = [r[k] for r in rs if r.get(k) is not None]
        return _median(xs) if xs else None

    rows: list[dict[str, Any]] = []
    for k, label, path in (
        ("cache", "cache layer", trace),
        ("plain", "same SSD ops, plain", dump),
    ):
        rs = runs[k]
        rows.append(
            {
                "case": label,
                "path": str(path),
                "ssd_ops": rs[0].get("requests"),
                "sim_cpu_s": med(rs, "cpu_s"),
                "sim_wall_s": med(rs, "wall_s"),
                "events_per_request": med(rs, "events_per_request"),
                "mean_us": rs[0].get("mean_us"),
                "sim_peak_rss_mib": max(r["peak_rss_mib"] for r in rs),
                "cpu_s_runs": [r["cpu_s"] for r in rs],
            }
        )
    c, p = rows
    ratio = c["sim_cpu_s"] / p["sim_cpu_s"] if c["sim_cpu_s"] and p["sim_cpu_s"] else None
    same = all(
        len({r.get(key) for r in runs["cache"] + runs["plain"]}) == 1
        for key in ("requests", "events_per_request", "mean_us")
    )
    write_json_out(
        json_out,
        {
            "config": config,
            "scheme": scheme or None,
            "trace": str(trace),
            "repeat": repeat,
            "overrides": overrides,
            "cache_slots": d.get("slots"),
            "ops_by_tag": d.get("ops_by_tag"),
            "results": rows,
            "cache_over_plain_cpu": ratio,
            "same_simulation": same,
        },
    )
    if json_out == "-":
        return
    _print_rows(
        f"nandlab bench --cache — {trace.name}, {config}, {scheme or 'config scheme'}",
        [
            ("case", "case"),
            ("SSD ops", "ssd_ops"),
            ("CPU s", "sim_cpu_s"),
            ("wall s", "sim_wall_s"),
            ("events/op", "events_per_request"),
            ("mean µs", "mean_us"),
            ("peak RSS MiB", "sim_peak_rss_mib"),
        ],
        rows,
    )
    out_console.print(
        f"cache layer / plain CPU: {fmt_value(ratio)} (issue 14 budget 1.5); "
        f"cache slots {fmt_value(d.get('slots'))}; same simulation (SSD ops, events, mean "
        f"response): {'yes' if same else 'NO: use a scheme that ignores cache tags (baseline)'}"
    )


def _bench_flows(
    requests: int,
    config: str,
    scheme: str,
    overrides: list[str],
    repeat: int,
    keep: Path | None,
    json_out: str | None,
) -> None:
    """``nandlab bench --flows`` (see :func:`bench`)."""
    half = max(requests // 2, 1)
    with tempfile.TemporaryDirectory(prefix="nandlab-bench-") as tmp:
        gen_dir = keep if keep is not None else Path(tmp)
        gen_dir.mkdir(parents=True, exist_ok=True)
        traces = []
        for seed in (42, 43):
            p = gen_dir / f"flow_{half}_seed{seed}.csv"
            if not p.is_file():
                with err_console.status(f"generating flow {p.name}…"):
                    _core.trace_generate(
                        json.dumps({"requests": half, "seed": seed, "iops": 1000.0}), str(p)
                    )
            traces.append(p)
        a, b = traces
        order = ["flows", "merged", "a", "b", "a_same", "b_same"]
        runs: dict[str, list[dict[str, Any]]] = {k: [] for k in order}
        merged = gen_dir / f"flows_{half}_merged.csv"
        for i in range(repeat):
            for k in order if i % 2 == 0 else order[::-1]:
                with err_console.status(f"{k} run {i + 1}…"):
                    if k in ("flows", "a_same", "b_same"):
                        extra = ["--flow", str(b)]
                        only = {"a_same": a.name, "b_same": b.name}.get(k)
                        ov = [*overrides, f'host.replay_only_flow="{only}"'] if only else overrides
                        runs[k].append(_bench_child("sim", a, config, scheme or None, ov, extra))
                        if k == "flows" and not merged.is_file():
                            _merge_flows(a, b, int(runs[k][0]["flow_bases"][1]), merged)
                    else:
                        t = {"a": a, "b": b}.get(k, merged)
                        runs[k].append(_bench_child("sim", t, config, scheme or None, overrides))

    def med(rs: list[dict[str, Any]], k: str) -> Any:
        xs = [r[k] for r in rs if r.get(k) is not None]
        return _median(xs) if xs else None

    rows = []
    for k, label in (
        ("flows", "two flows together"),
        ("a", "flow A alone"),
        ("b", "flow B alone"),
        ("merged", "A and B as one trace"),
        ("a_same", "flow A alone, same device"),
        ("b_same", "flow B alone, same device"),
    ):
        n = runs[k][0].get("requests")
        cpu = med(runs[k], "cpu_s")
        rows.append(
            {
                "run": label,
                "requests": n,
                "sim_cpu_s": cpu,
                "replay_cpu_s": med(runs[k], "replay_cpu_s"),
                "cpu_us_per_request": cpu / n * 1e6 if cpu and n else None,
                "events_per_request": med(runs[k], "events_per_request"),
                "peak_rss_mib": max(r["peak_rss_mib"] for r in runs[k]),
            }
        )
    singles = (rows[1]["sim_cpu_s"] or 0) + (rows[2]["sim_cpu_s"] or 0)
    replays = (rows[1]["replay_cpu_s"] or 0) + (rows[2]["replay_cpu_s"] or 0)
    ratio = rows[0]["sim_cpu_s"] / singles if rows[0]["sim_cpu_s"] and singles else None
    replay_ratio = (
        rows[0]["replay_cpu_s"] / replays if rows[0]["replay_cpu_s"] and replays else None
    )
    mc = rows[3]["sim_cpu_s"]
    merged_ratio = rows[0]["sim_cpu_s"] / mc if rows[0]["sim_cpu_s"] and mc else None
    same = (rows[4]["replay_cpu_s"] or 0) + (rows[5]["replay_cpu_s"] or 0)
    same_ratio = rows[0]["replay_cpu_s"] / same if rows[0]["replay_cpu_s"] and same else None
    write_json_out(
        json_out,
        {
            "config": config,
            "scheme": scheme or None,
            "repeat": repeat,
            "results": rows,
            "flows_over_singles_cpu": ratio,
            "flows_over_singles_replay_cpu": replay_ratio,
            "flows_over_merged_cpu": merged_ratio,
            "flows_over_alone_same_device_replay_cpu": same_ratio,
        },
    )
    if json_out == "-":
        return
    _print_rows(
        f"nandlab bench --flows — {config}, {scheme or 'config scheme'}",
        [
            ("run", "run"),
            ("requests", "requests"),
            ("CPU s", "sim_cpu_s"),
            ("replay CPU s", "replay_cpu_s"),
            ("CPU µs/request", "cpu_us_per_request"),
            ("events/req", "events_per_request"),
            ("RSS MiB", "peak_rss_mib"),
        ],
        rows,
    )
    out_console.print(
        f"two flows / two single runs, CPU: {fmt_value(ratio)} (replay only: "
        f"{fmt_value(replay_ratio)}; issue 35's budget: 1.0 within noise); over the same "
        f"requests as one trace on the same device: {fmt_value(merged_ratio)} (the single "
        "runs' devices are half the size: the rest is the larger device's memory footprint); "
        f"replay over the two flows alone on the same device: {fmt_value(same_ratio)}"
    )


def _merge_flows(a: Path, b: Path, base: int, out: Path) -> None:
    """The canonical traces ``a`` and ``b`` as one: each flow's times from its first request
    (as the reader counts them), ``b``'s offsets moved to its logical range at ``base``."""
    import heapq

    def rows(p: Path, shift: int) -> Iterator[tuple[int, str, int, int]]:
        # streamed: the parent's peak RSS is inherited by the runs it starts (ru_maxrss)
        t0 = None
        with p.open() as f:
            for ln in f:
                if ln and ln[0].isdigit():
                    t, op, off, size = ln.split(",")[:4]
                    t0 = int(t) if t0 is None else t0
                    yield (int(t) - t0, op, int(off) + shift, int(size))

    merged = heapq.merge(rows(a, 0), rows(b, base), key=lambda r: r[0])
    with out.open("w") as f:
        f.write("time_ns,op,offset_bytes,size_bytes\n")
        for t, op, o, sz in merged:
            f.write(f"{t},{op},{o},{sz}\n")


def _print_rows(title: str, cols: list[tuple[str, str]], rows: list[dict[str, Any]]) -> None:
    """A table of ``rows``: a column per (label, key) of ``cols``, the first left-aligned."""
    t = Table(title=title, title_justify="left")
    for i, (label, _) in enumerate(cols):
        t.add_column(label, justify="left" if i == 0 else "right")
    for r in rows:
        t.add_row(*(fmt_value(r.get(k)) for _, k in cols))
    out_console.print(t)
