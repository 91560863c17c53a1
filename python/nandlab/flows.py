"""Slowdown and fairness of concurrent flows (``[[host.flows]]``, ``nandlab run -t A -t B``).

A run of several flows reports each flow's ``host`` block in ``report["flows"]``. How much the
flows slow each other down needs each flow's run *alone*: the same device (sized, ranged and
preconditioned by all the flows; ``host.replay_only_flow`` in the core), only that flow
sending. This module adds, per flow,

* ``alone_mean_us``: its mean response time alone, µs;
* ``slowdown``: its mean response time shared over alone (MQSim's, Tavakkol et al., FAST'18
  §5: ≥ 1 when sharing costs; within noise of 1 for a flow the others do not disturb);

and to the report ``fairness`` = the least slowdown over the greatest (MQSim's definition: 1
when every flow suffers alike, towards 0 when one flow takes the hit), and
``flows_alone_cached`` (how many alone runs came from the cache).

Alone runs are cached on disk (``$NANDLAB_CACHE_DIR/flows`` or ``~/.cache/nandlab/flows``),
one file per flow, keyed by the resolved config with what cannot change a flow's run alone
left out (the arbitration, WRR weights, the other flows' queue settings), the traces' paths,
sizes and modification times, and the nandlab version: a sweep over arbitration or priorities
runs each flow alone once.
"""

from __future__ import annotations

import copy
import hashlib
import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

from nandlab._core import __version__


def cache_dir() -> Path:
    """Where alone runs are cached: ``$NANDLAB_CACHE_DIR/flows`` or ``~/.cache/nandlab/flows``."""
    base = os.environ.get("NANDLAB_CACHE_DIR")
    root = Path(base) if base else Path.home() / ".cache" / "nandlab"
    return root / "flows"


def _trace_identity(path: str) -> list[Any]:
    p = Path(path)
    try:
        st = p.stat()
        return [str(p.resolve()), st.st_size, st.st_mtime_ns]
    except OSError:
        return [str(p), None, None]


def alone_key(report: dict[str, Any], flow: int, traces: list[str], trace_options: str) -> str:
    """The cache key of flow ``flow``'s run alone beside the run ``report`` (hex SHA-256)."""
    cfg = copy.deepcopy(report.get("config") or {})
    host = cfg.get("host") or {}
    for k in ("arbitration", "wrr_weights", "replay_only_flow"):
        host.pop(k, None)
    flows = host.get("flows") or []
    for j, f in enumerate(flows):
        if j != flow:
            flows[j] = {k: v for k, v in f.items() if k in ("name", "trace")}
        else:
            f.pop("priority", None)
    blob = json.dumps(
        {
            "version": __version__,
            "config": cfg,
            "flow": flow,
            "traces": [_trace_identity(t) for t in traces],
            "trace_options": trace_options,
        },
        sort_keys=True,
    )
    return hashlib.sha256(blob.encode()).hexdigest()


def add_slowdowns(
    report: dict[str, Any],
    traces: list[str],
    trace_options: str,
    run_alone: Callable[[str], dict[str, Any]],
    *,
    use_cache: bool = True,
) -> None:
    """Add ``alone_mean_us`` and ``slowdown`` to each flow of ``report`` and ``fairness`` to it.

    ``traces`` are the flows' trace paths (in flow order), ``trace_options`` the trace options
    JSON of the run; ``run_alone(name)`` returns the report of the run with
    ``host.replay_only_flow = name``. A flow without requests, or whose mean is 0 alone, has
    slowdown ``None``; fairness is ``None`` unless every flow has a slowdown.
    """
    flows = report.get("flows") or []
    cached = 0
    slowdowns: list[float | None] = []
    for i, f in enumerate(flows):
        key = alone_key(report, i, traces, trace_options)
        path = cache_dir() / f"{key}.json"
        alone_flow: dict[str, Any] | None = None
        if use_cache and path.is_file():
            try:
                alone_flow = json.loads(path.read_text())
                cached += 1
            except (OSError, json.JSONDecodeError):
                alone_flow = None
        if alone_flow is None:
            alone = run_alone(str(f["name"]))
            alone_flow = alone["flows"][i]
            if use_cache:
                path.parent.mkdir(parents=True, exist_ok=True)
                tmp = path.with_suffix(f".{os.getpid()}.tmp")
                tmp.write_text(json.dumps(alone_flow, sort_keys=True))
                tmp.replace(path)
        shared = ((f.get("host") or {}).get("all") or {}).get("mean_us")
        solo = ((alone_flow.get("host") or {}).get("all") or {}).get("mean_us")
        f["alone_mean_us"] = solo
        sd = shared / solo if shared is not None and solo else None
        f["slowdown"] = sd
        slowdowns.append(sd)
    known = [s for s in slowdowns if s is not None]
    report["fairness"] = min(known) / max(known) if known and len(known) == len(slowdowns) else None
    report["flows_alone_cached"] = cached
