"""The load block of a run's report: is the device keeping up, or are the numbers queueing?

One place computes it for every run (``nandlab.simulate`` adds it to each report as
``report["load"]``; ``run``, ``compare``, ``sweep`` and every ``reproduce`` read it from here):

* ``die_utilization``: mean die utilisation over the host's window, time 0 to the last host
  completion;
* ``offered_die_load``: the die busy time the run needs over the trace's arrival span (above 1
  the device cannot keep up; it scales as 1/K with the time scale K);
* ``wait_share``: the share of the mean host response time spent queueing;
* ``link_utilization`` (only with a host link, ``[link]``): the busier direction's utilisation
  over the host's window;
* ``overloaded``: die utilisation, offered load or link utilisation above
  :data:`OVERLOAD_UTILISATION` (80 %), or a wait share above :data:`OVERLOAD_WAIT_SHARE`
  (80 %): the latencies then measure the backlog, not the device or the scheme
  (docs/reproductions.md, "Load level"); ``overload_reason`` says which (None, with the
  reason "not judged", for a run of fewer than :data:`MIN_JUDGED_REQUESTS` host requests);
* ``suggested_time_scale``: for an overloaded run, the ``host.time_scale`` of the 1-2-5 series
  that brings the offered load to at most 15 % (what ``reproduce --time-scale auto`` picks).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

#: Above this mean die utilisation (or offered die load) a run is saturated.
OVERLOAD_UTILISATION = 0.80
#: Above this share of response time spent queueing, queue wait dominates.
OVERLOAD_WAIT_SHARE = 0.80
#: The band of the baseline's mean die utilisation the automatic time scale aims for.
TARGET_BAND = (0.05, 0.15)
#: The largest time scale ``auto`` picks (the core accepts up to 1e6).
MAX_AUTO_SCALE = 1e5
#: Below this many host requests a run is not judged (``overloaded`` is None): a handful of
#: requests microseconds apart says nothing about the device's load.
MIN_JUDGED_REQUESTS = 100


def report_value(rep: Mapping[str, Any] | None, path: str) -> Any:
    """The value at dotted `path` of a report (None where the path does not exist)."""
    cur: Any = rep
    for k in path.split("."):
        if not isinstance(cur, Mapping):
            return None
        cur = cur.get(k)
    return cur


def finite(v: Any) -> float | None:
    """`v` as a float when it is a finite number (not a bool), else None."""
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        return None
    f = float(v)
    return f if math.isfinite(f) else None


def host_window_utilisation(report: Mapping[str, Any] | None) -> float | None:
    """Mean die utilisation over the host's window, from time 0 to the last host completion
    (= ``flash.die_utilization`` x ``sim.span_s`` / ``sim.last_completion_s``): the report's
    own figure is over the whole simulated span, which background checks (refresh scans) can
    stretch past the last host request."""
    u = finite(report_value(report, "flash.die_utilization"))
    span = finite(report_value(report, "sim.span_s"))
    end = finite(report_value(report, "sim.last_completion_s"))
    if u is None or span is None or not end:
        return u
    return min(1.0, u * span / end)


def link_utilisation(report: Mapping[str, Any] | None) -> float | None:
    """With a host link (``[link]``): the busier direction's utilisation over the host's window
    (as :func:`host_window_utilisation`); None without a link."""
    us = [finite(report_value(report, f"link.{d}.utilization")) for d in ("downstream", "upstream")]
    known = [u for u in us if u is not None]
    if not known:
        return None
    u = max(known)
    span = finite(report_value(report, "sim.span_s"))
    end = finite(report_value(report, "sim.last_completion_s"))
    if span is None or not end:
        return u
    return min(1.0, u * span / end)


def offered_load(report: Mapping[str, Any] | None) -> float | None:
    """Offered die load of a run: mean die busy time over the trace's arrival span
    (= ``flash.die_utilization`` x ``sim.span_s`` / ``sim.last_arrival_s``). Above 1 the device
    cannot keep up; it scales as 1/K with the time scale K."""
    u = finite(report_value(report, "flash.die_utilization"))
    span = finite(report_value(report, "sim.span_s"))
    arr = finite(report_value(report, "sim.last_arrival_s"))
    if u is None or span is None or not arr:
        return None
    return u * span / arr


def wait_share(report: Mapping[str, Any] | None) -> float | None:
    """Share of the mean host response time spent queueing (all requests)."""
    resp = finite(report_value(report, "host.mean_us"))
    if not resp:
        return None
    waits, n = 0.0, 0.0
    for cls in ("read", "write"):
        w = finite(report_value(report, f"host.wait.{cls}.mean_us"))
        c = finite(report_value(report, f"host.{cls}s"))
        if w is not None and c:
            waits += w * c
            n += c
    if not n:
        return None
    return (waits / n) / resp


def next_scale(k: float) -> float:
    """The next value of the 1-2-5 series above ``k`` (1 → 2 → 5 → 10 → 20 → …)."""
    decade = 10.0 ** math.floor(math.log10(k) + 1e-9)
    for m in (1.0, 2.0, 5.0, 10.0):
        if decade * m > k * (1 + 1e-9):
            return decade * m
    return decade * 10.0


def auto_scale(offered_at_1: float | None) -> float:
    """The smallest K of the 1-2-5 series with ``offered_at_1 / K`` at most the target band's
    upper edge (1 when the load is unknown or already within it)."""
    hi = TARGET_BAND[1]
    if offered_at_1 is None or offered_at_1 <= hi:
        return 1.0
    k = 1.0
    while offered_at_1 / k > hi and k < MAX_AUTO_SCALE:
        k = next_scale(k)
    return min(k, MAX_AUTO_SCALE)


def load_block(report: Mapping[str, Any] | None) -> dict[str, Any]:
    """The ``load`` block of a report (see the module doc); ``overloaded`` is None for no
    report."""
    util = host_window_utilisation(report)
    off = offered_load(report)
    ws = wait_share(report)
    reasons = []
    if util is not None and util > OVERLOAD_UTILISATION:
        reasons.append(f"die utilisation {util:.0%}")
    elif off is not None and off > OVERLOAD_UTILISATION:
        reasons.append(f"offered die load {off:.0%}")
    link = link_utilisation(report)
    if link is not None and link > OVERLOAD_UTILISATION:
        reasons.append(f"host link utilisation {link:.0%}")
    if ws is not None and ws > OVERLOAD_WAIT_SHARE:
        reasons.append(f"queue wait {ws:.0%} of response")
    n = finite(report_value(report, "host.requests"))
    if n is not None and n < MIN_JUDGED_REQUESTS:
        return {
            "die_utilization": util,
            "offered_die_load": off,
            "wait_share": ws,
            "overloaded": None,
            "overload_reason": f"not judged: {n:.0f} host requests (< {MIN_JUDGED_REQUESTS})",
            "suggested_time_scale": None,
        }
    suggested = None
    if reasons:
        k0 = finite(report_value(report, "config.host.time_scale")) or 1.0
        # a wait-dominated run at a low mean load (bursts) still needs some slowing down
        suggested = k0 * max(auto_scale(off), 2.0)
    block = {
        "die_utilization": util,
        "offered_die_load": off,
        "wait_share": ws,
        "overloaded": bool(reasons) if report else None,
        "overload_reason": "; ".join(reasons) or None,
        "suggested_time_scale": suggested,
    }
    if link is not None:
        # only runs with a host link carry it (other load blocks unchanged)
        block["link_utilization"] = link
    return block


def saturation_warning(report: Mapping[str, Any]) -> str | None:
    """One line for stderr when a run is overloaded: what it means and what to do."""
    ld = report.get("load") if isinstance(report.get("load"), Mapping) else load_block(report)
    if not ld or not ld.get("overloaded"):
        return None
    k = ld.get("suggested_time_scale")
    slow = f"--set host.time_scale={k:g}" if k else "--set host.time_scale=K"
    u = ld.get("die_utilization")
    busy = (
        f", dies {u:.1%} busy"
        if isinstance(u, float) and "die" not in str(ld.get("overload_reason"))
        else ""
    )
    return (
        f"warning: saturated run ({ld.get('overload_reason')}{busy}): the latencies measure "
        f"queueing, not the device or the scheme (load.overloaded = true); slow the trace "
        f"({slow}) or use a config with more parallelism"
    )
