"""One benchmark measurement in a fresh process (used by ``nandlab bench``).

    python -m nandlab._benchrun parse TRACE [--format F]
    python -m nandlab._benchrun sim TRACE [--config C] [--scheme S] [--set KEY=VALUE ...]
                                          [--format F] [--no-cache] [--flow TRACE2 ...]
    python -m nandlab._benchrun dump TRACE --out CSV [--config C] [--set KEY=VALUE ...]

``--flow`` (repeatable) replays TRACE and the ``--flow`` traces as concurrent flows (no alone
runs: ``slowdown=False``). ``--no-cache`` replays without the config's ``[cache]`` section
(and without ``cache.*`` overrides); ``dump`` writes the tagged SSD operations the cache
layer makes of TRACE as a canonical CSV (``nandlab bench --cache`` replays it with
``--no-cache``).

Prints one JSON object on stdout: the measurement — wall and CPU seconds of the core call
(CPU = ``time.process_time``, all threads of this process); for ``sim`` also the CPU seconds of
the set-up alone (the same run stopped after one request: pre-pass, sizing, preconditioning),
so that the replay's own CPU time is the difference — plus this process's peak RSS
(``ru_maxrss``), so that each run's memory is measured on its own. On error prints
``{"error": message, "kind": class name}`` and exits 2.
"""

from __future__ import annotations

import argparse
import json
import resource
import sys
import time
from typing import Any


def _peak_rss_mib() -> float:
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    # Linux reports KiB, macOS bytes.
    return rss / (1024 * 1024) if sys.platform == "darwin" else rss / 1024


def measure(
    mode: str,
    trace: str,
    config: str,
    trace_format: str | None,
    scheme: str | None = None,
    overrides: list[str] | None = None,
    no_cache: bool = False,
    out_path: str | None = None,
    flows: list[str] | None = None,
) -> dict[str, Any]:
    from nandlab import _core
    from nandlab.api import trace_options_json
    from nandlab.config import config_text, format_overrides, load_config

    opts = trace_options_json(trace_format)
    cfg: Any = config
    if no_cache:
        cfg = load_config(config)
        cfg.pop("cache", None)
        overrides = [o for o in overrides or [] if not o.strip().startswith("cache.")]
    t0, c0 = time.perf_counter(), time.process_time()
    if mode == "dump":
        text, path = config_text(config)
        res = json.loads(
            _core.cache_stream(
                text,
                str(path) if path is not None else None,
                format_overrides(overrides or []),
                trace,
                opts,
                out_path or "",
            )
        )
        res.update({"mode": mode, "cpu_s": time.process_time() - c0, "output": out_path})
        return res
    if mode == "parse":
        out = json.loads(_core.parse_only(trace, opts))
        return {
            "mode": mode,
            "requests": out.get("requests"),
            "wall_s": out.get("wall_s"),
            "cpu_s": time.process_time() - c0,
            "outer_wall_s": time.perf_counter() - t0,
            "peak_rss_mib": _peak_rss_mib(),
        }
    from nandlab.api import simulate

    what: str | list[str] = [trace, *flows] if flows else trace
    res = simulate(
        cfg, what, scheme=scheme, overrides=overrides, trace_format=trace_format, slowdown=False
    )
    cpu = time.process_time() - c0
    # The set-up alone (pre-pass, sizing, preconditioning): the same run stopped after one
    # request (one per flow). What the replay costs is the difference.
    c1 = time.process_time()
    simulate(
        cfg,
        what,
        scheme=scheme,
        overrides=[*(overrides or []), "host.max_requests=1"],
        trace_format=trace_format,
        slowdown=False,
    )
    setup_cpu = time.process_time() - c1
    s = res.flat()
    flash_ops = sum(int(s.get(k) or 0) for k in ("flash.reads", "flash.programs", "flash.erases"))
    wall = s.get("timing.wall_s") or (time.perf_counter() - t0)
    requests = s.get("host.requests") or 0
    return {
        "mode": mode,
        "requests": requests,
        "wall_s": wall,
        "cpu_s": cpu,
        "outer_wall_s": time.perf_counter() - t0,
        "host_requests_per_s": s.get("timing.host_requests_per_s"),
        "host_requests_per_cpu_s": requests / cpu if cpu > 0 else None,
        "setup_cpu_s": setup_cpu,
        "replay_cpu_s": max(cpu - setup_cpu, 0.0),
        "replay_requests_per_cpu_s": requests / (cpu - setup_cpu) if cpu > setup_cpu else None,
        "precondition_fill": s.get("config.precondition.fill"),
        "aged_overwrites": s.get("precondition.aged_overwrites"),
        "events": s.get("sim.events"),
        "events_per_request": (s.get("sim.events") or 0) / requests if requests else None,
        "write_amplification": s.get("write_amplification"),
        "flash_ops": flash_ops,
        "flash_ops_per_s": flash_ops / wall if wall else None,
        "mean_us": s.get("host.mean_us"),
        "peak_rss_mib": _peak_rss_mib(),
        # concurrent flows: where each flow's logical range starts (bench --flows merges them)
        "flow_bases": [f.get("logical_base_bytes") for f in res.report.get("flows") or []],
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m nandlab._benchrun")
    ap.add_argument("mode", choices=["parse", "sim", "dump"])
    ap.add_argument("trace")
    ap.add_argument("--config", default="default")
    ap.add_argument("--scheme", default=None)
    ap.add_argument("--set", dest="overrides", action="append", default=[])
    ap.add_argument("--format", dest="trace_format", default=None)
    ap.add_argument("--no-cache", action="store_true")
    ap.add_argument("--out", default=None)
    ap.add_argument("--flow", dest="flows", action="append", default=[])
    a = ap.parse_args(argv)
    try:
        out = measure(
            a.mode,
            a.trace,
            a.config,
            a.trace_format,
            a.scheme,
            a.overrides,
            a.no_cache,
            a.out,
            a.flows,
        )
    except Exception as e:  # reported to the parent, which prints one line
        print(json.dumps({"error": str(e), "kind": type(e).__name__}))
        return 2
    print(json.dumps(out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
