"""Load level of a reproduction: one methodology for every ``nandlab reproduce`` command.

The papers replay MSR / UMass volumes of a few to a few hundred IOPS on their devices; the real
traces we have (captured PostgreSQL, developer tree) are 30-5,000x more intense. Replayed at
their own speed they saturate the papers' devices, and the "latency" is a backlog of seconds
that measures queueing, not the scheme. So (docs/reproductions.md, "Load level"):

* **Time scale.** Every trace is replayed with its timestamps multiplied by a time scale K
  (``host.time_scale``; periods given in trace time, such as EFM's T or a refresh period,
  stretch with it in the core, counts of requests do not). ``--time-scale auto`` (default)
  picks K per trace from the **baseline** scheme's offered die load at K = 1 -- the die busy
  time the run needs divided by (dies x arrival span), which does not depend on K -- as the
  smallest K of the 1-2-5 series (1, 2, 5, 10, 20, ...) that brings it to at most
  :data:`TARGET_BAND`'s upper edge (15 %); a trace already below it runs at K = 1. The mean
  hides uneven load (static striping sends a hot range to one die), so when the baseline at
  that K is still overloaded (below) K moves up the series until it is not (at most
  :data:`MAX_AUTO_STEPS` steps). It is chosen from the baseline, never from a scheme's result.
  ``--time-scale 1,10,100`` (or ``auto,1``) sweeps fixed levels instead.
* **Utilisation beside every latency.** Each run's mean die utilisation (busy time over the
  host's window, time 0 to the last host completion), its offered die load and the share of
  response time spent waiting are reported.
* **Overloaded, not comparable.** A (trace, K) whose baseline has a mean die utilisation or
  offered load above :data:`OVERLOAD_UTILISATION` (80 %), or whose requests spend more than
  :data:`OVERLOAD_WAIT_SHARE` (80 %) of their response time queueing, is flagged; its rows are
  marked in tables and figures and left out of the headline means.
* **Headlines per trace**, with the arithmetic and the geometric mean across the comparable
  traces side by side, so one outlier trace is visible as such.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import click

from nandlab.load import (
    MAX_AUTO_SCALE,
    OVERLOAD_UTILISATION,
    OVERLOAD_WAIT_SHARE,
    TARGET_BAND,
    auto_scale,
    finite,
    host_window_utilisation,
    load_block,
    next_scale,
    offered_load,
    report_value,
    wait_share,
)
from nandlab.reproduce.fmt import fmt_pct, out_console

#: The figures of a run's load come from :mod:`nandlab.load` (re-exported here).
__all__ = [
    "AUTO",
    "MAX_AUTO_SCALE",
    "MAX_AUTO_STEPS",
    "OVERLOAD_UTILISATION",
    "OVERLOAD_WAIT_SHARE",
    "TARGET_BAND",
    "LoadPlan",
    "auto_scale",
    "finite",
    "geo_mean",
    "groups",
    "headline_rows",
    "host_window_utilisation",
    "load_block",
    "load_info",
    "mean_of",
    "next_scale",
    "offered_load",
    "parse_time_scales",
    "print_headline",
    "print_load_table",
    "ratio",
    "report_value",
    "scale_label",
    "summarise_ratios",
    "time_scale_callback",
    "wait_share",
]

#: At most this many raises of an automatic K whose baseline is still overloaded.
MAX_AUTO_STEPS = 6

AUTO = "auto"


def parse_time_scales(text: str) -> list[float | str]:
    """``"auto"``, ``"1,10,100"`` or a mix (``"auto,1"``) as a list of ``"auto"`` / floats.

    Raises :class:`click.BadParameter` for anything else (a scale must be in (0, 1e6]).
    """
    out: list[float | str] = []
    for part in (p.strip() for p in text.split(",")):
        if not part:
            continue
        if part.lower() == AUTO:
            if AUTO not in out:
                out.append(AUTO)
            continue
        try:
            v = float(part)
        except ValueError:
            raise click.BadParameter(
                f"{part!r} is not a number or 'auto' (e.g. --time-scale auto or 1,10,100)"
            ) from None
        if not (math.isfinite(v) and 0 < v <= 1e6):
            raise click.BadParameter(f"time scale {part} outside (0, 1e6]")
        if v not in out:
            out.append(v)
    if not out:
        raise click.BadParameter("empty; give 'auto' or numbers such as 1,10,100")
    return out


def time_scale_callback(_ctx: Any, _param: Any, value: str) -> list[float | str]:
    return parse_time_scales(value)


def ratio(a: float | None, b: float | None) -> float | None:
    """a / b, or None when either is missing or b is 0."""
    return None if a is None or b is None or b == 0 else a / b


def mean_of(vals: Iterable[float | None]) -> float | None:
    """Mean of the values that are not None, or None when there are none."""
    good = [v for v in vals if v is not None]
    return sum(good) / len(good) if good else None


def load_info(report: Mapping[str, Any] | None) -> dict[str, Any]:
    """Utilisation figures of one run and whether it is overloaded: the report's load block
    (:func:`nandlab.load.load_block`, the one place it is computed) and its time scale."""
    return {
        "time_scale": finite(report_value(report, "config.host.time_scale")),
        **load_block(report),
    }


def scale_label(k: float) -> str:
    """``"K=20"``; ``"K=0.5"``."""
    return f"K={k:g}"


@dataclass
class LoadPlan:
    """The load levels of one reproduction, per trace."""

    #: trace name -> the baseline's offered die load at K = 1 (auto only)
    offered_at_1: dict[str, float | None] = field(default_factory=dict)
    #: trace name -> the automatic K
    auto: dict[str, float] = field(default_factory=dict)
    #: the requested levels (``"auto"`` / floats)
    requested: list[float | str] = field(default_factory=list)
    #: traces whose automatic K was raised past the offered-load choice because the baseline
    #: was still overloaded there (uneven die load, bursts)
    raised: set[str] = field(default_factory=set)

    def scales(self, trace: str) -> list[float]:
        out: list[float] = []
        for s in self.requested:
            k = self.auto.get(trace, 1.0) if s == AUTO else float(s)
            if k not in out:
                out.append(k)
        return out

    def to_json(self) -> dict[str, Any]:
        return {
            "requested": self.requested,
            "target_band": list(TARGET_BAND),
            "overload_utilisation": OVERLOAD_UTILISATION,
            "overload_wait_share": OVERLOAD_WAIT_SHARE,
            "offered_die_load_at_1": self.offered_at_1,
            "auto_time_scale": self.auto,
            "auto_raised": sorted(self.raised),
        }


# --------------------------------------------------------------------------- summaries


def geo_mean(vals: Sequence[float]) -> float | None:
    """Geometric mean of positive values (``None`` if any is not positive or none given)."""
    if not vals or any(v <= 0 for v in vals):
        return None
    return math.exp(sum(math.log(v) for v in vals) / len(vals))


def summarise_ratios(
    ratios: Mapping[str, float | None], overloaded: Mapping[str, bool | None]
) -> dict[str, Any]:
    """Across traces: ``ratios`` (scheme / baseline, per trace) of the comparable traces, their
    arithmetic and geometric means, and the traces left out as overloaded.

    Returns ``{"per_trace", "mean", "geomean", "n", "overloaded"}``; a mean is ``None`` when no
    trace is comparable."""
    ok = {t: r for t, r in ratios.items() if r is not None and not overloaded.get(t)}
    vals = list(ok.values())
    return {
        "per_trace": dict(ratios),
        "mean": sum(vals) / len(vals) if vals else None,
        "geomean": geo_mean(vals),
        "n": len(vals),
        "overloaded": sorted(t for t in ratios if overloaded.get(t)),
    }


def groups(plan: LoadPlan, instances: Sequence[Any]) -> dict[str, list[str]]:
    """Headline groups: each requested level (``"auto"``, ``"K=10"``, ...) -> the names of the
    (trace, K) instances (:class:`~nandlab.reproduce.common.TraceChoice`) at that level (an
    instance can be in two groups, e.g. auto = 1)."""
    out: dict[str, list[str]] = {}
    for lvl in plan.requested:
        label = AUTO if lvl == AUTO else scale_label(float(lvl))
        names = []
        for t in instances:
            k = plan.auto.get(t.base_name, 1.0) if lvl == AUTO else float(lvl)
            if t.time_scale == k:
                names.append(t.name)
        out[label] = names
    return out


def headline_rows(
    metrics: Sequence[tuple[str, Any, str]],
    ratios: Mapping[str, Mapping[str, float | None]],
    overloaded: Mapping[str, bool | None],
    level_groups: Mapping[str, Sequence[str]],
    *,
    as_change: Callable[[float | None], float | None] = lambda r: None if r is None else r - 1.0,
) -> list[dict[str, Any]]:
    """One headline row per (level, metric): ``metrics`` = (metric text, paper value, ratio key);
    ``ratios[key][instance]`` = scheme / baseline per (trace, K) instance. ``ours_mean`` and
    ``ours_geomean`` are ``as_change`` of the arithmetic / geometric mean ratio over the
    comparable instances of the level (default: ratio - 1, a relative change)."""
    rows = []
    for level, names in level_groups.items():
        for text, paper, key in metrics:
            sub = {n: ratios.get(key, {}).get(n) for n in names}
            s = summarise_ratios(sub, overloaded)
            rows.append(
                {
                    "level": level,
                    "metric": text,
                    "paper": paper,
                    "ours_mean": as_change(s["mean"]),
                    "ours_geomean": as_change(s["geomean"]),
                    "per_trace": {n: as_change(v) for n, v in sub.items()},
                    "traces": s["n"],
                    "overloaded": s["overloaded"],
                }
            )
    return rows


def print_load_table(
    instances: Sequence[Any], loads: Mapping[str, Mapping[str, Any]], title: str
) -> None:
    """Per (trace, K): the baseline's die utilisation, offered load, queue-wait share and the
    overloaded flag."""
    from rich.table import Table

    t = Table(title=title, title_justify="left")
    for c in ("trace", "K", "die util.", "offered", "wait share", "comparable"):
        t.add_column(c, justify="left" if c == "trace" else "right")
    for inst in instances:
        li = loads.get(inst.name, {})
        ov = li.get("overloaded")
        t.add_row(
            inst.name,
            f"{inst.time_scale:g}",
            fmt_pct(li.get("die_utilization"), signed=False),
            fmt_pct(li.get("offered_die_load"), signed=False),
            fmt_pct(li.get("wait_share"), signed=False),
            "—"
            if ov is None
            else ("[red]overloaded[/]: " + str(li.get("overload_reason")) if ov else "yes"),
        )
    out_console.print(t)


def print_headline(rows: Sequence[Mapping[str, Any]], title: str) -> None:
    """The headline rows of :func:`headline_rows` as a table (paper, arithmetic and geometric
    mean over comparable traces, number of traces, traces left out as overloaded)."""
    from rich.table import Table

    t = Table(title=title, title_justify="left")
    for c in ("level", "metric", "paper", "ours: mean", "geo. mean", "traces", "overloaded"):
        t.add_column(c, justify="left" if c in ("level", "metric", "overloaded") else "right")
    for r in rows:
        p = r["paper"]
        signed = not r.get("is_share")
        t.add_row(
            r["level"],
            r["metric"],
            p if isinstance(p, str) else fmt_pct(p, signed=signed),
            fmt_pct(r["ours_mean"], signed=signed),
            fmt_pct(r["ours_geomean"], signed=signed),
            str(r["traces"]),
            ", ".join(r["overloaded"]) or "—",
        )
    out_console.print(t)
