"""What the rows of a reproduction are made of (:mod:`~nandlab.reproduce.framework` re-exports
every name): a run's usual metrics (:func:`host_metrics`, :func:`as_int`, :func:`load_of`),
row entries picked or as ratios (:func:`pick`, :func:`ratios`), the summary rows
(:func:`with_means`), changes and reductions (:func:`change`, :func:`reduction`;
:func:`as_ratio` shows one as a ratio) and the checks (:func:`check`, with the comparisons
:func:`below` and :func:`monotone`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from nandlab.reproduce.headline import value_of
from nandlab.reproduce.load import finite, geo_mean, load_info, mean_of, ratio, report_value

Row = dict[str, Any]


#: The numbers most reproductions take from a run's report: key -> report path.
HOST_METRICS = {
    "mean_us": "host.mean_us", "read_us": "host.read_mean_us", "write_us": "host.write_mean_us",
    "requests": "host.requests", "reads": "host.reads", "programs": "flash.programs",
    "erases": "flash.erases",
}  # fmt: skip


#: A scheme's columns in most rows: response times, programs and erases (of :data:`HOST_METRICS`).
SCHEME_KEYS = ("mean_us", "read_us", "write_us", "programs", "erases")


def host_metrics(
    rep: Mapping[str, Any], *, counts: Callable[[Any], Any] = finite
) -> dict[str, Any]:
    """A run's response times, request, program and erase counts (:data:`HOST_METRICS`, counts
    through ``counts``) and its load (:func:`~nandlab.reproduce.load.load_info`)."""
    out = {k: finite(report_value(rep, p)) for k, p in HOST_METRICS.items()}
    for k in ("requests", "reads", "programs", "erases"):
        out[k] = counts(out[k])
    return {**out, "load": load_info(rep)}


def as_int(v: Any) -> int | None:
    """A counter of a report as an int (tables print counts without decimals; ``counts`` of
    :func:`host_metrics`); ``None`` when missing."""
    f = finite(v)
    return None if f is None else round(f)


def load_of(run: Mapping[str, Any], key: str) -> Any:
    """Entry ``key`` (``overloaded``, ``die_utilization``, …) of a run's load
    (:func:`host_metrics`); ``None`` when the run has none."""
    return (run.get("load") or {}).get(key)


def pick(run: Mapping[str, Any], keys: Iterable[str], name: str) -> dict[str, Any]:
    """Row entries ``name.format(k=k)`` = metric ``k`` of ``run``, for every ``k``."""
    return {name.format(k=k): run.get(k) for k in keys}


def ratios(
    runs: Mapping[str, Any], ref: Mapping[str, Any], keys: Mapping[str, str], name: str
) -> dict[str, float | None]:
    """Row entries ``name.format(k=k)`` = metric ``keys[k]`` of ``runs`` / that of ``ref``
    (:func:`~nandlab.reproduce.load.ratio`), for every ``k``."""
    return {name.format(k=k): ratio(runs.get(m), ref.get(m)) for k, m in keys.items()}


def with_means(
    rows: list[Row], keep: Callable[[str], bool], *, geomean: bool = False, count: bool = False
) -> list[Row]:
    """``rows`` (one per trace), then an ``"Average"`` row (and with ``geomean`` a ``"Geo.
    mean"`` row) of the entries ``keep`` picks among the first row's, each over the traces
    that are not overloaded (docs/reproductions.md, item 5); ``count`` adds the number of
    those traces (``comparable_traces``)."""
    if not rows:
        return rows
    over = {r["trace"] for r in rows if r.get("overloaded")}
    avg: Row = {"trace": "Average"}
    geo: Row = {"trace": "Geo. mean"}
    for k in (k for k in rows[0] if keep(k)):
        vals = [v for r in rows if r["trace"] not in over and (v := finite(r.get(k))) is not None]
        avg[k] = mean_of(vals)
        geo[k] = geo_mean(vals)
    if count:
        avg["comparable_traces"] = geo["comparable_traces"] = len(rows) - len(over)
    return [*rows, avg, geo] if geomean else [*rows, avg]


def as_ratio(key: str, *, reduction: bool = False) -> Callable[[Mapping[str, Any]], Any]:
    """A row's change (``1 + v``) or, with ``reduction``, its reduction (``1 - v``) as the
    ratio a :class:`~nandlab.reproduce.headline.Headline` or a :class:`Col` shows as a
    change; ``None`` without a value."""

    def f(r: Mapping[str, Any]) -> float | None:
        v = value_of(r, key)
        return None if v is None else 1.0 - v if reduction else 1.0 + v

    return f


def change(new: float | None, old: float | None) -> float | None:
    """The relative change ``new / old - 1``; ``None`` when either is missing or ``old`` is 0."""
    r = ratio(new, old)
    return None if r is None else r - 1.0


def reduction(new: float | None, base: float | None) -> float | None:
    """The relative reduction ``1 - new / base``; ``None`` when either is missing or ``base`` is
    not positive."""
    if new is None or base is None or base <= 0:
        return None
    return 1.0 - new / base


# --------------------------------------------------------------------------- checks


def check(name: str, passed: bool | None, detail: str, **extra: Any) -> dict[str, Any]:
    """A check of the result JSON (:func:`~nandlab.reproduce.framework.checks_of`): its name,
    whether it passed (``None``: not answered, a run failed), the values it saw, and ``extra``
    entries (``kind="paper"``: a comparison with the paper, never an exit status)."""
    return {"name": name, "passed": passed, "detail": detail, **extra}


def below(a: Any, b: Any, *, strict: bool = True) -> bool | None:
    """``a < b`` (``a <= b`` unless ``strict``) for a check; ``None`` when either is missing."""
    return None if a is None or b is None else bool(a < b) if strict else bool(a <= b)


def monotone(xs: Sequence[Any], *, rising: bool) -> bool | None:
    """Whether ``xs`` never falls (``rising``; within 1e-12) or never rises, for a check;
    ``None`` when a value is missing."""
    if any(x is None for x in xs):
        return None
    return all((a <= b + 1e-12) if rising else (a >= b) for a, b in zip(xs, xs[1:]))
