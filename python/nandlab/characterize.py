"""``nandlab characterize``: a drive's datasheet from synthetic workloads (issue 29).

What fio's "four corners" and the SNIA Solid State Storage Performance Test Specification (PTS)
measure on a real drive, run through the simulator on the drive a config describes:

========================  ===========  ====  ====================================================
test                      drive state  QD    figure
========================  ===========  ====  ====================================================
``rand_read_qd1``         full         1     4 KiB random read latency (µs)
``rand_read_qd32``        full         32    4 KiB random read IOPS
``rand_read_qd256``       full         256   4 KiB random read IOPS at a vendor-rating depth
``seq_read``              full         32    128 KiB sequential read MB/s
``seq_write``             fresh        32    128 KiB sequential write MB/s: a whole-drive fill
``rand_write_fresh``      fresh        32    4 KiB random write IOPS, fresh out of the box
``rand_write_steady``     steady       32    4 KiB random write IOPS in steady state
``mixed_70_30``           steady       32    4 KiB random 70 % read / 30 % write IOPS
========================  ===========  ====  ====================================================

**Drive states** (set by this module through ``[precondition]``, whatever the config says):

* ``fresh``: purged, nothing mapped (``fill = "none"``); a random-write test writes at most a
  quarter of the logical pages, so GC never runs (SNIA's FOB state throughout);
* ``full``: the whole logical space written once in LPN order, no aging (``fill = "fraction"``,
  ``fill_fraction = 1``): the state fio read tests are run in;
* ``steady``: ``full``, then random page overwrites until write amplification settles
  (``age_until_steady``): SNIA PTS's workload-independent preconditioning.

**Working set**: the whole logical space, as the config sizes it for a trace that touches it
(a probe run reads ``device.logical_bytes``); ``--span-bytes`` asks for another size. Random
offsets are uniform and 4 KiB aligned; sequential tests start at offset 0.

**Measurement**: each test is one closed-loop run (``host.mode = "closed"``, ``queue_depth``
outstanding; timestamps ignored) of a synthetic canonical trace, with the per-request log on.
The I/Os are cut into :data:`ROUNDS` rounds of equal count (in completion order); the figures
are those of the last :data:`WINDOW_ROUNDS` rounds, SNIA's measurement window: IOPS and MB/s
are completions and bytes ÷ the window's simulated time, latencies are exact percentiles
(nearest rank) of the responses completing in it. The earlier rounds are the ramp (fio's
``ramp_time``): the DRAM write cache filling, GC catching up after preconditioning. Whether
the window meets SNIA's steady-state criterion (PTS 2.0.2 §3: the window's per-round IOPS
range within 20 % of their mean, and the least-squares line over it changing by at most 10 % of
the mean) is reported per test; a test whose window does not is flagged. The whole run's figures
from the report (``host`` section, ``sim.last_completion_s``) are in the JSON next to the
window's; nothing comes from the wall clock but ``wall_s``.

**Closed-form bounds** (:func:`geometry_bounds`), from the report's ``device`` section: the
program ceiling ``dies x planes x page x bits per cell / one-shot program time`` (page-by-page
programming: ``dies x planes x page / program time``), the read ceiling ``dies x planes /
(tR + planes x transfer)`` per die and ``channels / transfer`` per channel (a read moves its
whole page over the channel), and the QD1 read floor ``tR + transfer + decode``. Without
multi-plane operations a die works one plane at a time (``planes`` = 1 above).

Readings this module makes (no standard fixes them): QD32 for the sequential and write tests
(fio's and vendors' usual depth); QD256 as the vendor-rating depth (Tom's Hardware's peak
random test is QD256, 16 threads x QD16); MB = 10⁶ B (datasheets'); 25 rounds, window of 5
(SNIA's limits).

The command itself (options, table) is :mod:`nandlab.cli.characterize`.
"""

from __future__ import annotations

import math
import tempfile
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from nandlab._core import ConfigError

#: Rounds a test's I/Os are cut into, and the last ones that form the measurement window
#: (SNIA PTS: at most 25 rounds, a window of 5).
ROUNDS = 25
WINDOW_ROUNDS = 5
#: SNIA PTS steady-state criterion on the window's per-round figures: range ≤ 20 % of the mean,
#: least-squares line's change across the window ≤ 10 % of the mean.
MAX_EXCURSION = 0.20
MAX_SLOPE_EXCURSION = 0.10

KIB = 1 << 10
GIB = 1 << 30
MB = 1e6

#: Config keys this module sets for every run; a `--set` of one is refused.
MANAGED_KEYS = (
    "host.mode",
    "host.queue_depth",
    "host.max_requests",
    "precondition.fill",
    "precondition.fill_fraction",
    "precondition.age_overwrites",
    "precondition.age_until_steady",
    "device.address_map",
    "stats.request_log",
    "stats.timeseries",
    "stats.timeseries_interval_ms",
)

#: Precondition overrides of each drive state.
STATES: dict[str, dict[str, object]] = {
    "fresh": {
        "precondition.fill": "none",
        "precondition.age_until_steady": False,
        "precondition.age_overwrites": 0.0,
    },
    "full": {
        "precondition.fill": "fraction",
        "precondition.fill_fraction": 1.0,
        "precondition.age_until_steady": False,
        "precondition.age_overwrites": 0.0,
    },
    "steady": {
        "precondition.fill": "fraction",
        "precondition.fill_fraction": 1.0,
        "precondition.age_until_steady": True,
        "precondition.age_overwrites": 0.0,
    },
}

STATE_WORDS = {
    "fresh": "fresh (purged, nothing mapped)",
    "full": "full (whole space written sequentially)",
    "steady": "steady state (full + random overwrites until WA settles)",
}


@dataclass(frozen=True)
class Test:
    """One workload of the characterization."""

    name: str
    label: str
    state: str
    queue_depth: int
    block_bytes: int
    sequential: bool
    read_fraction: float  # 1 = all reads, 0 = all writes
    ios: int  # I/Os in a full run; 0 = the sequential extent below
    quick_ios: int
    #: sequential tests: bytes covered (0 = the whole logical space), full / quick
    extent_bytes: int = 0
    quick_extent_bytes: int = 0
    headline: str = "iops"  # "iops", "mb_s" or "latency"


TESTS: tuple[Test, ...] = (
    Test("rand_read_qd1", "4 KiB random read, QD1", "full", 1, 4 * KIB, False, 1.0,
         50_000, 5_000, headline="latency"),
    Test("rand_read_qd32", "4 KiB random read, QD32", "full", 32, 4 * KIB, False, 1.0,
         400_000, 40_000),
    Test("rand_read_qd256", "4 KiB random read, QD256", "full", 256, 4 * KIB, False, 1.0,
         1_000_000, 100_000),
    Test("seq_read", "128 KiB sequential read, QD32", "full", 32, 128 * KIB, True, 1.0,
         0, 0, extent_bytes=16 * GIB, quick_extent_bytes=2 * GIB, headline="mb_s"),
    Test("seq_write", "128 KiB sequential write (whole-drive fill), QD32", "fresh", 32,
         128 * KIB, True, 0.0, 0, 0, extent_bytes=0, quick_extent_bytes=4 * GIB,
         headline="mb_s"),
    Test("rand_write_fresh", "4 KiB random write, fresh (FOB), QD32", "fresh", 32, 4 * KIB,
         False, 0.0, 400_000, 40_000),
    Test("rand_write_steady", "4 KiB random write, steady state, QD32", "steady", 32, 4 * KIB,
         False, 0.0, 1_000_000, 100_000),
    Test("mixed_70_30", "4 KiB random 70/30 read/write, steady state, QD32", "steady", 32,
         4 * KIB, False, 0.7, 2_000_000, 100_000),
)  # fmt: skip

TEST_NAMES = tuple(t.name for t in TESTS)

#: Tests whose write bandwidth over time is kept for the plot.
SERIES_TESTS = ("seq_write", "rand_write_steady")
SERIES_BINS = 200


# --------------------------------------------------------------------------- workloads


def write_trace(path: Path, ops: np.ndarray, offsets: np.ndarray, sizes: np.ndarray) -> None:
    """Write a canonical CSV trace (``time_ns,op,offset_bytes,size_bytes``); requests 1 ns
    apart (closed loop ignores the timestamps; they only keep the order)."""
    n = len(offsets)
    letters = np.where(ops, "R", "W")
    with path.open("w", encoding="ascii") as f:
        f.write("time_ns,op,offset_bytes,size_bytes\n")
        step = 100_000
        for s in range(0, n, step):
            e = min(n, s + step)
            rows = zip(
                range(s, e),
                letters[s:e].tolist(),
                offsets[s:e].tolist(),
                sizes[s:e].tolist(),
            )
            f.write("".join(f"{t},{o},{a},{b}\n" for t, o, a, b in rows))


def workload(
    test: Test, logical_bytes: int, page_bytes: int, quick: bool, seed: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(is_read, offset_bytes, size_bytes) arrays of one test's requests."""
    rng = np.random.default_rng([seed, TEST_NAMES.index(test.name)])
    bs = test.block_bytes
    if test.sequential:
        extent = test.quick_extent_bytes if quick else test.extent_bytes
        extent = logical_bytes if extent == 0 else min(extent, logical_bytes)
        n = -(-extent // bs)
        offsets = np.arange(n, dtype=np.int64) * bs
        sizes = np.full(n, bs, dtype=np.int64)
        sizes[-1] = extent - offsets[-1]
    else:
        n = test.quick_ios if quick else test.ios
        if test.state == "fresh" and test.read_fraction < 1.0:
            # FOB: write at most a quarter of the logical pages, so GC never starts
            n = max(1, min(n, logical_bytes // page_bytes // 4))
        slots = logical_bytes // bs
        offsets = rng.integers(0, slots, size=n, dtype=np.int64) * bs
        sizes = np.full(n, bs, dtype=np.int64)
    if test.read_fraction >= 1.0:
        is_read = np.ones(n, dtype=bool)
    elif test.read_fraction <= 0.0:
        is_read = np.zeros(n, dtype=bool)
    else:
        is_read = rng.random(n) < test.read_fraction
    return is_read, offsets, sizes


# --------------------------------------------------------------------------- analysis


def steady_state(values: Sequence[float]) -> dict[str, Any]:
    """SNIA PTS's steady-state check of a measurement window's per-round figures."""
    y = np.asarray(values, dtype=float)
    mean = float(y.mean())
    x = np.arange(len(y), dtype=float)
    slope = float(np.polyfit(x, y, 1)[0]) if len(y) > 1 else 0.0
    excursion = float(y.max() - y.min()) / mean if mean > 0 else math.inf
    slope_excursion = abs(slope) * (len(y) - 1) / mean if mean > 0 else math.inf
    return {
        "window_mean": mean,
        "excursion_fraction": excursion,
        "slope_excursion_fraction": slope_excursion,
        "reached": bool(excursion <= MAX_EXCURSION and slope_excursion <= MAX_SLOPE_EXCURSION),
    }


def _latency(resp_ns: np.ndarray) -> dict[str, float | int | None]:
    if len(resp_ns) == 0:
        return {"count": 0, "mean_us": None, "p50_us": None, "p99_us": None, "p999_us": None}
    us = resp_ns / 1e3
    q = np.quantile(us, [0.5, 0.99, 0.999], method="inverted_cdf")
    return {
        "count": len(us),
        "mean_us": float(us.mean()),
        "p50_us": float(q[0]),
        "p99_us": float(q[1]),
        "p999_us": float(q[2]),
    }


def analyse_log(log: Path, series: bool) -> dict[str, Any]:
    """Rounds, the measurement window's figures and (``series``) write bandwidth over time
    from a per-request log (``stats.request_log``)."""
    import polars as pl

    df = pl.read_csv(
        log,
        columns=["arrival_ns", "op", "len_bytes", "response_ns"],
        schema_overrides={"arrival_ns": pl.Int64, "len_bytes": pl.Int64, "response_ns": pl.Int64},
    )
    done = (df["arrival_ns"] + df["response_ns"]).to_numpy()
    order = np.argsort(done, kind="stable")
    done = done[order]
    is_read = (df["op"].to_numpy() == "R")[order]
    nbytes = df["len_bytes"].to_numpy()[order]
    resp = df["response_ns"].to_numpy()[order]
    n = len(done)
    rounds = min(ROUNDS, n)
    edges = [round(n * k / rounds) for k in range(rounds + 1)]

    def t_before(i: int) -> int:
        return int(done[i - 1]) if i > 0 else 0

    round_iops = []
    for k in range(rounds):
        a, b = edges[k], edges[k + 1]
        dt = int(done[b - 1]) - t_before(a)
        round_iops.append((b - a) / (dt / 1e9) if dt > 0 else math.inf)
    w = max(1, min(WINDOW_ROUNDS, rounds))
    a = edges[rounds - w]
    span_ns = int(done[-1]) - t_before(a)
    span_s = span_ns / 1e9
    win_read = is_read[a:]
    out: dict[str, Any] = {
        "ios": n,
        "window_ios": n - a,
        "window_s": span_s,
        "iops": (n - a) / span_s if span_s > 0 else None,
        "read_iops": int(win_read.sum()) / span_s if span_s > 0 else None,
        "write_iops": int((~win_read).sum()) / span_s if span_s > 0 else None,
        "mb_s": float(nbytes[a:].sum()) / MB / span_s if span_s > 0 else None,
        "latency": {
            "all": _latency(resp[a:]),
            "read": _latency(resp[a:][win_read]),
            "write": _latency(resp[a:][~win_read]),
        },
        "log_mean_us": float(resp.mean() / 1e3),
        "round_iops": round_iops,
        "steady_state": steady_state(round_iops[rounds - w :]),
        "window_start_s": t_before(a) / 1e9,
    }
    if series:
        end = float(done[-1])
        bins = min(SERIES_BINS, n)
        width = end / bins
        idx = np.minimum((done / width).astype(np.int64), bins - 1)
        wbytes = np.bincount(idx, weights=np.where(is_read, 0, nbytes), minlength=bins)
        out["series"] = {
            "t_s": [(i + 0.5) * width / 1e9 for i in range(bins)],
            "write_mb_s": (wbytes / MB / (width / 1e9)).tolist(),
        }
    return out


def geometry_bounds(report: Mapping[str, Any]) -> dict[str, float]:
    """Closed-form ceilings and floors of the drive a report describes (module docs).

    ``transfer_us`` is one FTL page's transfer: the mapping unit's (``mapping_unit_bytes``,
    when the FTL maps units smaller than the flash page) or the page's. A random read moves one
    unit; a sequential read senses each page once and moves all its units.
    """
    dev = report["device"]
    cfg = report.get("config") or {}
    bits = {"slc": 1, "mlc": 2, "tlc": 3, "qlc": 4}[str(dev["cell"]).lower()]
    multi_plane = bool((cfg.get("sched") or {}).get("multi_plane", False))
    one_shot = bool((cfg.get("timing") or {}).get("one_shot_program", False))
    planes = int(dev["planes_per_die"]) if multi_plane else 1
    dies = int(dev["dies"])
    page = int(dev["page_size_bytes"])
    unit = int(dev.get("mapping_unit_bytes", page))
    units = page // unit
    t_prog_s = min(dev["program_modes"][0]["program_us"]) / 1e6
    t_read_s = min(dev["read_us"]) / 1e6
    xfer_s = float(dev["transfer_us"]) / 1e6
    decode_us = float(dev["ecc"][0]["decode_us"])
    channels = int(dev["channels"])
    pages_per_program = planes * (bits if one_shot else 1)
    program_pages_per_s = dies * pages_per_program / t_prog_s
    channel_bytes_per_s = channels * unit / xfer_s
    # one unit per sense (random reads) / every unit of the page per sense (sequential)
    read_units_per_s = min(dies * planes / (t_read_s + planes * xfer_s), channels / xfer_s)
    seq_read_bytes_per_s = min(
        dies * planes * page / (t_read_s + planes * units * xfer_s), channel_bytes_per_s
    )
    return {
        "program_pages_per_s": program_pages_per_s,
        "seq_write_mb_s": min(program_pages_per_s * page, channel_bytes_per_s) / MB,
        "read_pages_per_s": read_units_per_s,
        "seq_read_mb_s": seq_read_bytes_per_s / MB,
        "qd1_read_floor_us": min(dev["read_us"]) + float(dev["transfer_us"]) + decode_us,
    }


def _bound_of(test: Test, bounds: Mapping[str, float], page: int) -> tuple[str, float] | None:
    """The closed-form limit shown next to a test's headline figure."""
    if test.headline == "latency":
        return "≥", bounds["qd1_read_floor_us"]
    if test.sequential:
        key = "seq_read_mb_s" if test.read_fraction >= 1 else "seq_write_mb_s"
        return "≤", bounds[key]
    if test.read_fraction >= 1:
        # a 4 KiB read costs a sense and the transfer of a page (a mapping unit when smaller)
        return "≤", bounds["read_pages_per_s"]
    if test.read_fraction <= 0:
        # each page program carries at most page / block of these writes
        return "≤", bounds["program_pages_per_s"] * (page // test.block_bytes)
    return None


# --------------------------------------------------------------------------- runs


def check_overrides(sets: Sequence[str]) -> None:
    """Refuse a ``--set`` of a key the characterization sets itself."""
    for s in sets:
        key = s.split("=", 1)[0].strip()
        if key in MANAGED_KEYS:
            raise ConfigError(
                f"--set {s}: characterize sets {key} itself for each test (closed loop, the "
                "drive state per test, the request log); use --span-bytes for the working set "
                "and --tests to pick tests, or `nandlab run` for a run of your own"
            )


def _probe(config: str, overrides: list[str], span_bytes: int | None, tmp: Path) -> tuple[int, int]:
    """(logical capacity, page size) the config gives a trace that touches [0, span) (span:
    the config's own minimum when None), from a one-read run on the purged drive."""
    from nandlab.api import simulate
    from nandlab.config import format_overrides

    off = 0 if span_bytes is None else max(0, span_bytes - 4096)
    probe = tmp / "probe.csv"
    probe.write_text(f"time_ns,op,offset_bytes,size_bytes\n0,R,{off},4096\n", encoding="ascii")
    ov = overrides + format_overrides(
        {**STATES["fresh"], "device.address_map": "dense", "host.max_requests": 0}
    )
    rep = simulate(config, probe, overrides=ov).report
    fixed = {
        k: v
        for k in ("blocks_per_plane", "logical_capacity_bytes")
        if (v := rep["config"]["device"].get(k))
    }
    if span_bytes is not None and fixed:
        k, v = next(iter(fixed.items()))
        raise ConfigError(
            f"--span-bytes {span_bytes}: the config fixes the drive's size (device.{k} = {v}), "
            "so the working set is its logical space; drop --span-bytes or set "
            f"device.{k}=0 with --set"
        )
    dev = rep["device"]
    return int(dev["logical_bytes"]), int(dev["page_size_bytes"])


def run_test(
    test: Test,
    config: str,
    overrides: list[str],
    logical_bytes: int,
    page_bytes: int,
    quick: bool,
    seed: int,
    tmp: Path,
    progress: bool,
    config_has_timeseries: bool,
) -> dict[str, Any]:
    """Run one test and return its figures (and its report under ``report``)."""
    from nandlab.api import simulate
    from nandlab.config import format_overrides

    is_read, offsets, sizes = workload(test, logical_bytes, page_bytes, quick, seed)
    trace = tmp / f"{test.name}.csv"
    log = tmp / f"{test.name}.requests.csv"
    write_trace(trace, is_read, offsets, sizes)
    managed: dict[str, object] = {
        **STATES[test.state],
        "host.mode": "closed",
        "host.queue_depth": test.queue_depth,
        "host.max_requests": 0,
        "device.address_map": "dense",
        "device.logical_capacity_bytes": logical_bytes,
        "stats.request_log": str(log),
    }
    if config_has_timeseries:  # keep the config's time series out of the way
        managed["stats.timeseries"] = str(tmp / f"{test.name}.ts.csv")
    res = simulate(
        config, trace, overrides=overrides + format_overrides(managed), progress=progress
    )
    trace.unlink()
    rep = res.report
    win = analyse_log(log, series=test.name in SERIES_TESTS)
    log.unlink()
    host = rep["host"]
    span = rep["sim"]["last_completion_s"]
    total_bytes = host["read_bytes"] + host["write_bytes"]
    out: dict[str, Any] = {
        "name": test.name,
        "label": test.label,
        "state": test.state,
        "queue_depth": test.queue_depth,
        "block_bytes": test.block_bytes,
        "pattern": "sequential" if test.sequential else "random",
        "read_fraction": test.read_fraction,
        "headline": test.headline,
        **win,
        "run": {
            "requests": host["requests"],
            "span_s": span,
            "iops": host["requests"] / span if span else None,
            "mb_s": total_bytes / MB / span if span else None,
            "latency": {c: host[c] for c in ("all", "read", "write")},
            "write_amplification": rep.get("write_amplification"),
        },
        "precondition": rep.get("precondition"),
        "wall_s": (rep.get("timing") or {}).get("wall_s"),
        "report": rep,
    }
    return out


def characterize(
    config: str = "default",
    overrides: Sequence[str] = (),
    *,
    quick: bool = False,
    tests: Sequence[str] | None = None,
    span_bytes: int | None = None,
    seed: int = 42,
    progress: bool = False,
    status: Callable[[str], None] | None = None,
) -> dict[str, Any]:
    """Run the characterization of ``config`` and return its results (the ``--json`` object).

    ``overrides`` are ``key=value`` strings (as ``--set``); keys in :data:`MANAGED_KEYS` are
    refused. Raises :class:`nandlab.ConfigError` / :class:`nandlab.SimError` from the core.
    """
    from nandlab.config import load_config

    ov = list(overrides)
    check_overrides(ov)
    chosen = [t for t in TESTS if tests is None or t.name in tests]
    if tests is not None:
        unknown = sorted(set(tests) - set(TEST_NAMES))
        if unknown:
            raise ConfigError(
                f"--tests: unknown test(s) {', '.join(unknown)}; known: {', '.join(TEST_NAMES)}"
            )
    cfg = load_config(config)
    has_ts = bool((cfg.get("stats") or {}).get("timeseries"))
    results: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="nandlab-characterize-") as d:
        tmp = Path(d)
        logical, page = _probe(config, ov, span_bytes, tmp)
        for i, t in enumerate(chosen, 1):
            if status is not None:
                status(f"[{i}/{len(chosen)}] {t.label} — drive {STATE_WORDS[t.state]}")
            results.append(
                run_test(t, config, ov, logical, page, quick, seed, tmp, progress, has_ts)
            )
    device = results[0]["report"]["device"] if results else {}
    bounds = geometry_bounds(results[0]["report"]) if results else {}
    for r, t in zip(results, chosen):
        b = _bound_of(t, bounds, int(device["page_size_bytes"]))
        r["bound"] = None if b is None else {"relation": b[0], "value": b[1]}
    return {
        "config": str(config),
        "overrides": ov,
        "quick": quick,
        "seed": seed,
        "logical_bytes": logical,
        "rounds": ROUNDS,
        "window_rounds": WINDOW_ROUNDS,
        "device": device,
        "bounds": bounds,
        "tests": results,
    }


# --------------------------------------------------------------------------- output


def headline(test: Mapping[str, Any]) -> float | None:
    """A test's headline figure: mean latency (µs), IOPS or MB/s of its window."""
    h = test["headline"]
    if h == "latency":
        return test["latency"]["all"]["mean_us"]
    return test["mb_s"] if h == "mb_s" else test["iops"]


def table_rows(result: Mapping[str, Any]) -> list[list[str]]:
    """Rows of the characterization table."""

    def f(v: Any, digits: int = 0) -> str:
        if v is None:
            return "—"
        return f"{v:,.{digits}f}"

    rows = []
    for t in result["tests"]:
        lat = t["latency"]["all"]
        b = t.get("bound")
        ss = t["steady_state"]
        rows.append(
            [
                t["label"],
                t["state"],
                f"{t['window_ios']:,} of {t['ios']:,}",
                f(t["iops"]),
                f(t["mb_s"], 1),
                f(lat["mean_us"], 1),
                f(lat["p50_us"], 1),
                f(lat["p99_us"], 1),
                f(lat["p999_us"], 1),
                "yes" if ss["reached"] else f"no ({ss['excursion_fraction'] * 100:.0f} %)",
                "—" if b is None else f"{b['relation']} {b['value']:,.0f}",
            ]
        )
    return rows


TABLE_HEADER = [
    "test",
    "state",
    "I/Os (window of all)",
    "IOPS",
    "MB/s",
    "mean µs",
    "p50 µs",
    "p99 µs",
    "p99.9 µs",
    "steady",
    "bound",
]


def plot(result: Mapping[str, Any], out: Path) -> Path:
    """Write bandwidth over time of the sequential fill and the steady-state random write
    (PNG), the measurement window shaded."""
    from matplotlib.figure import Figure

    panels = [t for t in result["tests"] if "series" in t]
    if not panels:
        raise ConfigError(
            f"--plot {out}: no write test ran (the plot shows {' and '.join(SERIES_TESTS)}; "
            "include one in --tests)"
        )
    fig = Figure(figsize=(8, 2.6 * len(panels)), layout="constrained")
    axes = fig.subplots(len(panels), 1, squeeze=False)[:, 0]
    for ax, t in zip(axes, panels):
        s = t["series"]
        y = np.asarray(s["write_mb_s"])
        ax.plot(s["t_s"], y, color="#4c72b0", lw=1.2, label="write MB/s")
        end = s["t_s"][-1] + (s["t_s"][1] - s["t_s"][0]) / 2 if len(y) > 1 else s["t_s"][-1]
        ax.axvspan(t["window_start_s"], end, color="#dd8452", alpha=0.15, lw=0,
                   label="measurement window")  # fmt: skip
        ax.axhline(t["mb_s"], color="#dd8452", lw=1, ls="--",
                   label=f"window mean {t['mb_s']:,.0f} MB/s")  # fmt: skip
        # a burst into the DRAM write cache would flatten the rest: clip it, say so
        typical = float(np.quantile(y, 0.95))
        top = max(typical, t["mb_s"]) * 1.35
        if y.max() > top * 1.5:
            ax.set_ylim(0, top)
            ax.annotate(
                f"off scale: up to {y.max():,.0f} MB/s at the start",
                xy=(s["t_s"][int(np.argmax(y))], top), xytext=(0.02, 0.9),
                textcoords="axes fraction", fontsize=8, va="top",
                arrowprops={"arrowstyle": "->", "lw": 0.8},
            )  # fmt: skip
        else:
            ax.set_ylim(0, max(float(y.max()), t["mb_s"]) * 1.35)
        ax.set_xlim(0, end)
        ax.set_title(f"{t['label']} — drive {t['state']}", fontsize=10, loc="left")
        ax.set_ylabel("write MB/s (10⁶ B/s)")
        ax.legend(loc="upper right", fontsize=8, frameon=False, ncol=3)
    axes[-1].set_xlabel("simulated time (s)")
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, dpi=90, metadata={"Software": None})
    return out
