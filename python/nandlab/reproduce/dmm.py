"""``nandlab reproduce dmm``: Guo's thesis ch. 4, the DMM object-based flash device:
Fig. 39-41 on DMMbench and Fig. 42-45 on file-level traces, with the headline next to the
thesis's.

Presets ``obfs``, ``dmm``, ``yaffs2`` (Table 16 hardware: 16 channels x 1 die, 2 KiB pages,
256-page blocks, program 900 µs, read 50 µs, erase 1.5 ms). Every run is closed-loop at queue
depth 1 (DMMbench is synchronous; the thesis's relay program gives no pacing for the traces),
so a response time is the device's service time and no load level has to be chosen
(``docs/reproductions.md``, "How every reproduction is run", item 1 concerns open-loop replay).

* Fig. 39 / 40 -- DMMbench writes (sequential 4/32/256 KiB, random 4 KiB) and reads
  (sequential 4/32 KiB and 1 MiB, random 4 KiB) on OBFS and DMM: mean response, page writes
  by type, GC page writes, erases; the spec's bands (``dmm.md`` §7.4) beside them.
* Fig. 41 -- 4 / 8 / 16 channels (1 die each, 1024 / 512 / 256 pages per block), 32 KiB
  sequential writes and reads, OBFS.
* Fig. 42 -- MLGC alone (byte-level GC table 16 KiB ... 4 MiB) against none (OBFS).
* Fig. 43 -- virtual vs extent B+ tree, both with a 1 MiB table.
* Fig. 44 -- diff cache 16 KiB ... 2 MiB with the virtual tree and a 1 MiB table.
* Fig. 45 -- DMM (4 MiB table, virtual tree, 2 MiB diff cache) vs YAFFS2-like vs OBFS.

Traces: the captured ``pgbench_rw_fs`` and ``devtree_fs`` under their real names; the Table 17
workloads (DVORAK, iMOVIE, iPHOTO, TPCC) are picked up from ``--traces`` when a user has them
as file-level JSON-lines traces (``dvorak*_fs.jsonl*`` …). Each trace runs on a device sized so
that its footprint (``footprint_bytes`` of its statistics) fills about 70 % of the capacity
(spec §5), the same device for every design; the fill is reported.

Nothing is tuned to the thesis's numbers: the tables print ours next to the thesis's.
"""

from __future__ import annotations

import hashlib
import json
import math
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import click
from rich.table import Table

from nandlab import osd as _osd
from nandlab._core import SimError
from nandlab.reproduce.common import progress_option, traces_option
from nandlab.reproduce.fmt import (
    EXIT_CHECK_FAILED,
    EXIT_USER_ERROR,
    RESULT_FILE,
    fmt_num,
    fmt_pct,
    out_console,
)
from nandlab.reproduce.framework import print_table
from nandlab.reproduce.headline import Headline as H
from nandlab.reproduce.headline import headline_rows as fw_headline_rows
from nandlab.reproduce.headline import print_rows
from nandlab.reproduce.output import emit

PAPER = "dmm"
KIB = 1 << 10
MIB = 1 << 20

#: File-level traces by name: the captured ones and the thesis's Table 17 workloads.
TRACE_PATTERNS: dict[str, list[str]] = {
    "pgbench_rw_fs": ["pgbench_rw_fs.jsonl*"],
    "devtree_fs": ["devtree_fs.jsonl*"],
    "DVORAK": ["dvorak*_fs.jsonl*", "DVORAK*_fs.jsonl*"],
    "iMOVIE": ["imovie*_fs.jsonl*", "iMOVIE*_fs.jsonl*"],
    "iPHOTO": ["iphoto*_fs.jsonl*", "iPHOTO*_fs.jsonl*"],
    "TPCC": ["tpcc*_fs.jsonl*", "TPCC*_fs.jsonl*"],
}

#: Fill of the capacity by the trace's footprint (spec §5: "footprint ≈ 70 % of capacity").
TARGET_FILL = 0.70
#: Table 16 geometry of the presets (dies, pages per block, page bytes).
DIES, PAGES_PER_BLOCK, PAGE_BYTES, CHUNK_BLOCKS = 16, 256, 2048, 4
#: Smallest device a trace gets, blocks per die (so that a tiny trace still has free chunks).
MIN_BLOCKS_PER_DIE = 64

#: Thesis values (§4.6.2-4.6.3, spec §4) shown beside ours.
THESIS_HEADLINE = {
    "page_writes_vs_obfs": -0.25,
    "write_response_vs_obfs": -0.38,
    "write_response_vs_yaffs2": -0.35,
    "endurance_vs_obfs": 0.76,
}

MLGC_SIZES = (16 * KIB, 64 * KIB, 256 * KIB, 1 * MIB, 4 * MIB)
DC_SIZES = (16 * KIB, 64 * KIB, 256 * KIB, 1 * MIB, 2 * MIB)
QUICK_MLGC_SIZES = (16 * KIB, 4 * MIB)
QUICK_DC_SIZES = (16 * KIB, 2 * MIB)

BENCH_WRITES = (
    ("seq_write", 4 * KIB),
    ("seq_write", 32 * KIB),
    ("seq_write", 256 * KIB),
    ("rand_write", 4 * KIB),
)
BENCH_READS = (
    ("seq_read", 4 * KIB),
    ("seq_read", 32 * KIB),
    ("seq_read", 1024 * KIB),
    ("rand_read", 4 * KIB),
)
BENCH_TOTAL = 64 * MIB
QUICK_BENCH_TOTAL = 2 * MIB
CHANNELS = ((4, 1024), (8, 512), (16, 256))
#: Measured commands per trace run with --quick (a prefix).
QUICK_MAX_COMMANDS = 20_000


def _size(n: int) -> str:
    return f"{n // MIB} MiB" if n >= MIB and n % MIB == 0 else f"{n // KIB} KiB"


def onfd(mlgc: int | None, virtual: bool, dc: int) -> dict[str, object]:
    """Overrides of the ``obfs`` preset for an ONFD mix of the DMM pieces."""
    return {
        "osd.mlgc": mlgc is not None,
        "osd.mlgc_table_bytes": mlgc or 0,
        "osd.virtual_tree": virtual,
        "osd.diff_cache_bytes": dc,
    }


@dataclass(frozen=True)
class Variant:
    """One device configuration: a preset plus overrides, in a figure."""

    key: str
    label: str
    preset: str
    overrides: tuple[tuple[str, object], ...] = ()


def trace_variants(quick: bool) -> list[Variant]:
    mlgc = QUICK_MLGC_SIZES if quick else MLGC_SIZES
    dcs = QUICK_DC_SIZES if quick else DC_SIZES
    v = [
        Variant("obfs", "OBFS", "obfs"),
        Variant("dmm", "DMM", "dmm"),
        Variant("yaffs2", "YAFFS2-like", "yaffs2"),
    ]
    v += [
        Variant(f"mlgc_{s}", f"MLGC {_size(s)}", "obfs", tuple(onfd(s, False, 0).items()))
        for s in mlgc
    ]
    v += [
        Variant(
            "extent_1m", "extent tree, 1 MiB table", "obfs", tuple(onfd(MIB, False, 0).items())
        ),
        Variant(
            "virtual_1m", "virtual tree, 1 MiB table", "obfs", tuple(onfd(MIB, True, 0).items())
        ),
    ]
    v += [
        Variant(f"dc_{s}", f"diff cache {_size(s)}", "obfs", tuple(onfd(MIB, True, s).items()))
        for s in dcs
    ]
    return v


# --------------------------------------------------------------------------- runs


class Runner:
    """Runs (in this process: each is seconds) with a per-run JSON cache in OUT/runs, so an
    interrupted reproduction resumes."""

    def __init__(self, out: Path, progress: bool) -> None:
        self.dir = out / "runs"
        self.dir.mkdir(parents=True, exist_ok=True)
        self.progress = progress
        self.done = 0
        self.cached = 0
        self.failed: list[str] = []
        #: every run of this reproduction: (key, what, report), for runs.parquet
        self.runs: list[tuple[str, dict[str, Any], dict[str, Any]]] = []

    def _key(self, what: dict[str, Any]) -> Path:
        h = hashlib.sha256(json.dumps(what, sort_keys=True, default=str).encode()).hexdigest()
        return self.dir / f"{h[:20]}.json"

    def trace_stats(self, path: Path) -> dict[str, Any]:
        """The file-level trace's statistics, cached beside the runs (by size and mtime)."""
        st = path.stat()
        p = self._key({"stats": str(path.resolve()), "size": st.st_size, "mtime": st.st_mtime_ns})
        if p.is_file():
            cached: dict[str, Any] = json.loads(p.read_text())
            return cached
        stats = dict(_osd.trace_stats(path))
        tmp = p.with_suffix(".tmp")
        tmp.write_text(json.dumps(stats))
        tmp.replace(p)
        return stats

    def run(self, what: dict[str, Any]) -> dict[str, Any]:
        rep = self._run(what)
        self.runs.append((self._key(what).stem, what, rep))
        return rep

    def _run(self, what: dict[str, Any]) -> dict[str, Any]:
        p = self._key(what)
        if p.is_file():
            self.cached += 1
            rep: dict[str, Any] = json.loads(p.read_text())
            return rep
        t0 = time.time()
        ov = dict(what["overrides"])
        try:
            if what["kind"] == "trace":
                rep = _osd.run(
                    what["preset"], what["trace"], overrides=ov, max_commands=what["max_commands"]
                )
            else:
                rep = _osd.bench(
                    what["preset"],
                    what["pattern"],
                    what["request_bytes"],
                    what["total_bytes"],
                    overrides=ov,
                )
        except SimError as e:
            # a failed run is reported (and not cached: a fixed device reruns it)
            msg = " ".join(str(e).split())
            self.failed.append(f"{what.get('label', '')}: {msg}")
            if self.progress:
                click.echo(f"  {what.get('label', '')} FAILED: {msg}", err=True)
            return {"error": msg}
        tmp = p.with_suffix(".tmp")
        tmp.write_text(json.dumps(rep))
        tmp.replace(p)
        self.done += 1
        if self.progress:
            click.echo(f"  {what.get('label', '')} ({time.time() - t0:.1f} s)", err=True)
        return rep


def find_traces(dirs: Sequence[Path]) -> dict[str, Path]:
    """The file-level traces found under ``dirs`` (first match of each name)."""
    found: dict[str, Path] = {}
    for name, pats in TRACE_PATTERNS.items():
        for d in dirs:
            hit = next((p for pat in pats for p in sorted(Path(d).rglob(pat)) if p.is_file()), None)
            if hit is not None:
                found[name] = hit
                break
    return found


def blocks_for(footprint: int) -> int:
    """Blocks per die so that ``footprint`` fills :data:`TARGET_FILL` of the capacity."""
    per_block = DIES * PAGES_PER_BLOCK * PAGE_BYTES
    n = math.ceil(footprint / TARGET_FILL / per_block)
    n = max(n, MIN_BLOCKS_PER_DIE)
    return CHUNK_BLOCKS * math.ceil(n / CHUNK_BLOCKS)


def _resp(rep: dict[str, Any], cmd: str) -> float | None:
    if "error" in rep:
        return None
    r = rep.get("response", {}).get(cmd)
    return r["mean_us"] / 1000 if r and r.get("count") else None


def _pw(rep: dict[str, Any], ty: str | None = None, src: str = "total") -> int | None:
    if "error" in rep:
        return None
    pw = rep["page_writes"]
    if ty is None:
        return (
            int(pw["total"])
            if src == "total"
            else sum(int(pw[t][src]) for t in ("data", "index", "onode"))
        )
    return int(pw[ty][src])


def _change(new: float | None, old: float | None) -> float | None:
    if new is None or old is None or old == 0:
        return None
    return new / old - 1.0


def _mean(xs: Iterable[float | None]) -> float | None:
    v = [x for x in xs if x is not None and math.isfinite(x)]
    return sum(v) / len(v) if v else None


# --------------------------------------------------------------------------- the command


@click.command("dmm")
@traces_option(
    "Directory of file-level traces (*_fs.jsonl*), searched recursively "
    "(repeatable). Default: the workspace's captured traces."
)
@click.option(
    "--quick",
    is_flag=True,
    help="CI-sized: DMMbench of 2 MiB per type, trace prefixes of 20,000 commands, "
    "two sizes per sweep.",
)
@click.option(
    "--out",
    "out",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="Results and the per-run cache (default: ./nandlab-out/dmm). Re-running "
    "with the same --out skips finished runs.",
)
@click.option(
    "--json",
    "json_out",
    metavar="OUT",
    default=None,
    help="Write the tables and every run's report as JSON to OUT ('-': stdout; "
    "default: OUT_DIR/result.json).",
)
@progress_option()
def dmm(
    traces: tuple[Path, ...],
    quick: bool,
    out: Path | None,
    json_out: str | None,
    progress: bool | None,
) -> None:
    """Guo ch. 4 (DMM): Fig. 39-41 on DMMbench, Fig. 42-45 on file-level traces, and the
    headline next to the thesis's (-25 % page writes, -38 % write response vs OBFS, -35 % vs
    YAFFS2, endurance +76 %)."""
    from nandlab._interrupt import on_interrupt
    from nandlab.experiment import shared_traces_dir
    from nandlab.reproduce.fmt import err_console

    out = out if out is not None else Path("nandlab-out") / PAPER
    json_target = json_out if json_out is not None else str(out / RESULT_FILE)
    quiet = json_target == "-"
    show = progress if progress is not None else err_console.is_terminal
    dirs = list(traces)
    if not dirs:
        d = shared_traces_dir()
        dirs = [d] if d is not None and d.is_dir() else []
    found = find_traces(dirs)
    on_interrupt(f"finished runs stay in {out / 'runs'}; the same command resumes")
    runner = Runner(out, show)
    t0 = time.time()

    bench = run_bench(runner, quick)
    trace_res: dict[str, Any] = {}
    for name, path in found.items():
        trace_res[name] = run_trace(runner, name, path, quick)
    headline = headline_rows(trace_res)
    checks = direction_checks(bench, trace_res)
    result = {
        "paper": PAPER,
        "title": "Guo, PhD thesis ch. 4: DMM object-based flash device vs OBFS / YAFFS2, "
        "Pittsburgh 2016",
        "quick": quick,
        "checks": [
            {"name": c["check"], "passed": c["pass"], "detail": c["detail"], "kind": "paper"}
            for c in checks
        ],
        "headline": standard_headline(headline),
        "tables": [bench_table(bench), channels_table(bench)]
        + [trace_table(n, tr) for n, tr in trace_res.items()],
        "figures": [],
        "table": bench["rows"],
        "traces": {n: str(p) for n, p in found.items()},
        "missing_traces": [n for n in TRACE_PATTERNS if n not in found],
        "bench": bench,
        "trace_results": trace_res,
        "headline_by_trace": headline,
        "thesis_headline": THESIS_HEADLINE,
        "failed_runs": runner.failed,
        "grid": {"executed": runner.done, "cached": runner.cached, "wall_s": time.time() - t0},
    }
    result["figures"] = [str(f) for f in figures(result, out)]
    result["runs"] = write_runs(out, runner)
    emit(json_target, result)
    if not quiet:
        for t in result["tables"]:
            print_table(t)
        print_rows(result["headline"], "Headline: DMM against the baselines (Fig. 45)")
        print_checks(checks)
        if not found:
            out_console.print(
                "no file-level traces found (pgbench_rw_fs, devtree_fs): Fig. 42-45 were not "
                "run; give --traces DIR"
            )
        out_console.print(
            f"{runner.done} runs executed, {runner.cached} from the cache in {out / 'runs'}; "
            f"{time.time() - t0:.1f} s; result in {json_target}"
        )
    if runner.failed:
        for f in runner.failed:
            click.secho(f"run failed: {f}", fg="red", err=True)
        raise click.exceptions.Exit(EXIT_CHECK_FAILED)
    if not found and traces:
        raise click.exceptions.Exit(EXIT_USER_ERROR)


# --------------------------------------------------------------------------- DMMbench


def run_bench(runner: Runner, quick: bool) -> dict[str, Any]:
    total = QUICK_BENCH_TOTAL if quick else BENCH_TOTAL
    rows = []
    for design in ("obfs", "dmm"):
        for pattern, req in (*BENCH_WRITES, *BENCH_READS):
            rep = runner.run(
                {
                    "kind": "bench",
                    "preset": design,
                    "pattern": pattern,
                    "request_bytes": req,
                    "total_bytes": total,
                    "overrides": [],
                    "label": f"DMMbench {design} {pattern} {_size(req)}",
                }
            )
            cmd = "write" if "write" in pattern else "read"
            rows.append(
                {
                    "design": design,
                    "pattern": pattern,
                    "request_bytes": req,
                    "response_ms": _resp(rep, cmd),
                    "all_response_ms": _resp(rep, "all"),
                    "data_writes": _pw(rep, "data"),
                    "index_writes": _pw(rep, "index"),
                    "onode_writes": _pw(rep, "onode"),
                    "gc_writes": _pw(rep, None, "gc"),
                    "erases": rep.get("erases", {}).get("total"),
                    "commands_per_s": rep.get("commands_per_s"),
                    "error": rep.get("error"),
                }
            )
    chans = []
    for ch, ppb in CHANNELS:
        for pattern in ("seq_write", "seq_read"):
            ov = [("device.channels", ch), ("device.pages_per_block", ppb)]
            rep = runner.run(
                {
                    "kind": "bench",
                    "preset": "obfs",
                    "pattern": pattern,
                    "request_bytes": 32 * KIB,
                    "total_bytes": total,
                    "overrides": ov,
                    "label": f"DMMbench {ch} channels {pattern} 32 KiB",
                }
            )
            chans.append(
                {
                    "channels": ch,
                    "pages_per_block": ppb,
                    "pattern": pattern,
                    "response_ms": _resp(rep, "write" if "write" in pattern else "read"),
                }
            )
    return {"total_bytes": total, "rows": rows, "channels": chans}


def _bench_row(bench: dict[str, Any], design: str, pattern: str, req: int) -> dict[str, Any]:
    return next(
        r
        for r in bench["rows"]
        if r["design"] == design and r["pattern"] == pattern and r["request_bytes"] == req
    )


#: Thesis values of Fig. 39/40 (spec §4) by (pattern, request bytes): response ms or a note.
THESIS_BENCH = {
    ("seq_write", 4 * KIB): "2.24 ms (band 1.8-2.7)",
    ("seq_write", 32 * KIB): "2.04 ms",
    ("seq_write", 256 * KIB): "7 ms",
    ("rand_write", 4 * KIB): "+20 % vs seq 4 KiB",
    ("seq_read", 4 * KIB): "≈ 0.15 ms (3 reads)",
    ("seq_read", 32 * KIB): "≈ 4 KiB's",
    ("seq_read", 1024 * KIB): '≈ 1.5 ms ("32x the 32 KB read")',
    ("rand_read", 4 * KIB): "= seq 4 KiB",
}


def bench_table(bench: dict[str, Any]) -> dict[str, Any]:
    """Fig. 39/40 as a table (:func:`~nandlab.reproduce.framework.print_table`)."""
    cols = ["design", "access", "ours (ms)", "thesis", "data w", "index w", "onode w", "GC w",
            "erases"]  # fmt: skip
    rows = [[r["design"], f"{r['pattern']} {_size(r['request_bytes'])}", fmt_num(r["response_ms"]),
             THESIS_BENCH.get((r["pattern"], r["request_bytes"]), ""),
             *(fmt_num(r[k]) for k in ("data_writes", "index_writes", "onode_writes", "gc_writes",
                                       "erases"))] for r in bench["rows"]]  # fmt: skip
    title = (f"Fig. 39/40: DMMbench ({_size(bench['total_bytes'])} per type), mean response of "
             "the access command")  # fmt: skip
    return {"title": title, "columns": cols, "rows": rows}


def channels_table(bench: dict[str, Any]) -> dict[str, Any]:
    rows = []
    for ch, ppb in CHANNELS:
        w = next(x for x in bench["channels"] if x["channels"] == ch and "write" in x["pattern"])
        rd = next(x for x in bench["channels"] if x["channels"] == ch and "read" in x["pattern"])
        rows.append([str(ch), str(ppb), fmt_num(w["response_ms"]), fmt_num(rd["response_ms"])])
    cols = ["channels", "pages/block", "write (ms)", "read (ms)"]
    title = "Fig. 41: channels (1 die each), 32 KiB sequential, OBFS"
    return {"title": title, "columns": cols, "rows": rows}


# --------------------------------------------------------------------------- traces


def run_trace(runner: Runner, name: str, path: Path, quick: bool) -> dict[str, Any]:
    st = runner.trace_stats(path)
    blocks = blocks_for(int(st["footprint_bytes"]))
    capacity = blocks * DIES * PAGES_PER_BLOCK * PAGE_BYTES
    maxc = QUICK_MAX_COMMANDS if quick else 0
    runs: dict[str, dict[str, Any]] = {}
    for v in trace_variants(quick):
        ov = [("device.blocks_per_plane", blocks), *v.overrides]
        rep = runner.run(
            {
                "kind": "trace",
                "preset": v.preset,
                "trace": str(path),
                "trace_bytes": path.stat().st_size,
                "overrides": ov,
                "max_commands": maxc,
                "label": f"{name} {v.label}",
            }
        )
        runs[v.key] = {
            "label": v.label,
            "page_writes": _pw(rep),
            "data_writes": _pw(rep, "data"),
            "index_writes": _pw(rep, "index"),
            "onode_writes": _pw(rep, "onode"),
            "gc_writes": _pw(rep, None, "gc"),
            "erases": rep.get("erases", {}).get("total"),
            "write_response_ms": _resp(rep, "write"),
            "all_response_ms": _resp(rep, "all"),
            "hit_rate": rep.get("diff_cache", {}).get("hit_rate"),
            "commands": rep.get("commands"),
            "dram": rep.get("dram"),
            "objfs": rep.get("objfs"),
            "error": rep.get("error"),
        }
    return {
        "file": str(path),
        "stats": {
            k: st[k]
            for k in (
                "files",
                "avg_request_kib",
                "write_percent",
                "write_seq_percent",
                "read_seq_percent",
                "records",
                "footprint_bytes",
            )
        },
        "blocks_per_die": blocks,
        "capacity_bytes": capacity,
        "fill": st["footprint_bytes"] / capacity,
        "max_commands": maxc,
        "runs": runs,
    }


def trace_table(name: str, tr: dict[str, Any]) -> dict[str, Any]:
    """Fig. 42-45 of one trace as a table."""
    s = tr["stats"]
    title = (
        f"{name}: {s['files']:,} files, {s['avg_request_kib']:.2f} KiB average, "
        f"{s['write_percent']:.1f} % writes; device {tr['blocks_per_die']} blocks/die = "
        f"{tr['capacity_bytes'] / 2**30:.2f} GiB, footprint fill {tr['fill']:.0%}"
        + (f"; first {tr['max_commands']:,} commands" if tr["max_commands"] else "")
    )
    groups = [
        ("Fig. 45", ("obfs", "yaffs2", "dmm")),
        ("Fig. 42", tuple(k for k in tr["runs"] if k.startswith("mlgc_"))),
        ("Fig. 43", ("extent_1m", "virtual_1m")),
        ("Fig. 44", tuple(k for k in tr["runs"] if k.startswith("dc_"))),
    ]
    rows = []
    for fig, keys in groups:
        for k in keys:
            r = tr["runs"][k]
            rows.append([
                f"{fig}: {r['label']}" + (" (run FAILED)" if r.get("error") else ""),
                *(fmt_num(r[c]) for c in ("page_writes", "data_writes", "index_writes",
                                          "onode_writes", "gc_writes", "erases",
                                          "write_response_ms")),
                fmt_pct(r["hit_rate"], signed=False) if r["hit_rate"] is not None else "—",
            ])  # fmt: skip
    cols = ["configuration", "page writes", "data", "index", "onode", "GC", "erases",
            "write (ms)", "hit rate"]  # fmt: skip
    return {"title": title, "columns": cols, "rows": rows}


def headline_rows(trace_res: dict[str, Any]) -> dict[str, Any]:
    """DMM against OBFS and YAFFS2 per trace, and the arithmetic mean over traces."""
    per: dict[str, dict[str, float | None]] = {}
    for name, tr in trace_res.items():
        r = tr["runs"]
        d, o, y = r["dmm"], r["obfs"], r["yaffs2"]
        per[name] = {
            "page_writes_vs_obfs": _change(d["page_writes"], o["page_writes"]),
            "write_response_vs_obfs": _change(d["write_response_ms"], o["write_response_ms"]),
            "write_response_vs_yaffs2": _change(d["write_response_ms"], y["write_response_ms"]),
            "page_writes_vs_yaffs2": _change(d["page_writes"], y["page_writes"]),
            # endurance read as the erase-count ratio (spec §4, F45 inference); None when DMM
            # erased nothing
            "endurance_vs_obfs": (
                o["erases"] / d["erases"] - 1.0 if d["erases"] and o["erases"] is not None else None
            ),
        }
    keys = (
        "page_writes_vs_obfs",
        "write_response_vs_obfs",
        "write_response_vs_yaffs2",
        "page_writes_vs_yaffs2",
        "endurance_vs_obfs",
    )
    mean = {k: _mean(p[k] for p in per.values()) for k in keys}
    return {"per_trace": per, "mean": mean}


#: The thesis's headline (§4.6.3, Fig. 45; spec §4) against ours (DMM / baseline per trace).
HEADLINE = (
    H("page writes vs OBFS", "§4.6.3, Fig. 45", -25, "page_writes_vs_obfs", deciders=()),
    H("write response vs OBFS", "§4.6.3, Fig. 45", -38, "write_response_vs_obfs", deciders=()),
    H("write response vs YAFFS2", "§4.6.3, Fig. 45", -35, "write_response_vs_yaffs2",
      deciders=(), why="DMM writes back small files' metadata early (capacitor budget)"),
    H("page writes vs YAFFS2", "§4.6.3, Fig. 45", -19, "page_writes_vs_yaffs2", deciders=()),
    H("endurance vs OBFS (erase ratio)", "§4.6.3, Fig. 45", 76, "endurance_vs_obfs",
      deciders=(), why="a 70 % footprint fill: GC amplifies every saved page write"),
)  # fmt: skip


def standard_headline(h: dict[str, Any]) -> list[dict[str, Any]]:
    """:func:`headline_rows`' changes as the headline rows of every reproduction."""
    rows = [{"trace": n, **{k: None if v is None else 1.0 + v for k, v in per.items()}}
            for n, per in h["per_trace"].items()]  # fmt: skip
    return fw_headline_rows(HEADLINE, rows, lambda t, n: None, {"all": list(h["per_trace"])})


def write_runs(out: Path, runner: Runner) -> list[dict[str, Any]]:
    """Every run of this reproduction in ``OUT/runs.parquet`` (the runs table of every
    reproduction; the reports are the object device's); returns the runs for the result JSON
    (each with its report)."""
    from nandlab.experiment import RUNS_FILE, rows_frame

    rows = {}
    for key, what, rep in runner.runs:
        rows[key] = {
            "key": key, "trace": Path(what["trace"]).name if what["kind"] == "trace" else
            f"DMMbench {what['pattern']} {_size(what['request_bytes'])}",
            "trace_path": what.get("trace"), "scheme": what["preset"], "config": what["preset"],
            "label": what["label"], "params": json.dumps(dict(what["overrides"]), sort_keys=True),
            "report": json.dumps(rep) if "error" not in rep else None, "error": rep.get("error"),
        }  # fmt: skip
    tmp = out / f".{RUNS_FILE}.tmp"
    rows_frame(rows.values()).write_parquet(tmp)
    tmp.replace(out / RUNS_FILE)
    return [
        {**r, "params": json.loads(r["params"]), "report": json.loads(r["report"] or "null")}
        for r in rows.values()
    ]


def direction_checks(bench: dict[str, Any], trace_res: dict[str, Any]) -> list[dict[str, Any]]:
    """The spec's checks (dmm.md §7.4-7.5) that our runs can answer, each pass or fail."""
    out: list[dict[str, Any]] = []

    def add(name: str, ok: bool | None, detail: str) -> None:
        out.append({"check": name, "pass": ok, "detail": detail})

    w = {
        ch: x["response_ms"]
        for x in bench["channels"]
        for ch in [x["channels"]]
        if "write" in x["pattern"]
    }
    add(
        "write response falls 4 -> 8 -> 16 channels (F41)",
        w[4] is not None and w[8] is not None and w[16] is not None and w[4] > w[8] > w[16],
        " > ".join(f"{w[c]:.3f} ms" for c in (4, 8, 16) if w[c] is not None),
    )

    # Spec §7.4's bands on the ONFD baseline (OBFS: §4.6.2 validates ObjNandSim before any
    # DMM piece is switched on).
    def resp(pattern: str, req: int) -> float | None:
        try:
            v = _bench_row(bench, "obfs", pattern, req)["response_ms"]
        except StopIteration:
            return None
        return None if v is None else float(v)

    w4, r4 = resp("seq_write", 4 * KIB), resp("seq_read", 4 * KIB)
    r32, r1m = resp("seq_read", 32 * KIB), resp("seq_read", 1024 * KIB)
    add(
        "OBFS 4 KiB sequential write in [1.8, 2.7] ms (F39a: 2.24 ms)",
        None if w4 is None else 1.8 <= w4 <= 2.7,
        "—" if w4 is None else f"{w4:.3f} ms",
    )
    add(
        "OBFS 4 KiB read within 150 us +- 30 % (F40a: 3 page reads)",
        None if r4 is None else 0.105 <= r4 <= 0.195,
        "—" if r4 is None else f"{r4 * 1000:.0f} us",
    )
    # §4.6.2 says the 1 MB read is "32 times that of 32KB" and "reaches up to 1500 us"; with
    # its 4 KB (and 32 KB) read at ≈ 150 us those contradict each other (32 x 150 us = 4.8 ms).
    # 1500 us is 32 page reads (512 pages over 16 dies, 50 us each), so the check takes the
    # absolute figure (the spec's band reads "32x the 32 KB read"; the ratio is shown).
    add(
        "OBFS 1 MiB read within 1.5 ms +- 30 % (F40a: 1500 us, 32 reads per die)",
        None if r1m is None else 1.05 <= r1m <= 1.95,
        "—"
        if r1m is None or not r32
        else f"{r1m:.3f} ms ({r1m / r32:.1f} x the 32 KiB read, spec band 32 +- 30 %)",
    )
    sw = [r for r in bench["rows"] if r["pattern"] == "seq_write"]
    add(
        "no GC page writes for sequential writes (F39b)",
        all(r["gc_writes"] == 0 for r in sw),
        ", ".join(f"{r['design']} {_size(r['request_bytes'])}: {r['gc_writes']}" for r in sw),
    )

    def cmp(a: Any, b: Any, strict: bool) -> bool | None:
        if a is None or b is None:
            return None  # a run failed: the check cannot be answered
        return bool(a < b) if strict else bool(a <= b)

    def chain(xs: list[Any], rising: bool) -> bool | None:
        if any(x is None for x in xs):
            return None
        pairs = list(zip(xs, xs[1:], strict=False))
        return all((a <= b + 1e-12) if rising else (a >= b) for a, b in pairs)

    for name, tr in trace_res.items():
        r = tr["runs"]
        d, o = r["dmm"], r["obfs"]
        add(
            f"{name}: DMM < OBFS in page writes",
            cmp(d["page_writes"], o["page_writes"], True),
            f"{fmt_num(d['page_writes'])} vs {fmt_num(o['page_writes'])}",
        )
        dw, ow = d["write_response_ms"], o["write_response_ms"]
        add(
            f"{name}: DMM < OBFS in mean write response",
            cmp(dw, ow, True),
            f"{fmt_num(dw)} vs {fmt_num(ow)} ms",
        )
        big = max((k for k in r if k.startswith("mlgc_")), key=lambda k: int(k.split("_")[1]))
        add(
            f"{name}: MLGC at the largest table < no MLGC in onode writes",
            cmp(r[big]["onode_writes"], o["onode_writes"], True),
            f"{fmt_num(r[big]['onode_writes'])} vs {fmt_num(o['onode_writes'])}",
        )
        v, e = r["virtual_1m"]["index_writes"], r["extent_1m"]["index_writes"]
        add(
            f"{name}: virtual tree never more index writes than the extent tree",
            cmp(v, e, False),
            f"{fmt_num(v)} vs {fmt_num(e)}",
        )
        dcs = sorted((k for k in r if k.startswith("dc_")), key=lambda k: int(k.split("_")[1]))
        idx = [r[k]["index_writes"] for k in dcs]
        hits = [None if r[k].get("error") else (r[k]["hit_rate"] or 0.0) for k in dcs]
        add(
            f"{name}: index writes do not rise with the diff cache",
            chain(idx, rising=False),
            " >= ".join(fmt_num(x) for x in idx),
        )
        add(
            f"{name}: hit rate does not fall with the diff cache",
            chain(hits, rising=True),
            " <= ".join(fmt_num(h) for h in hits),
        )
    return out


def print_checks(checks: list[dict[str, Any]]) -> None:
    t = Table(title="Checks (spec dmm.md §7.4-7.5); a failure is a result, not tuned away")
    t.add_column("check")
    t.add_column("result")
    t.add_column("values")
    for c in checks:
        res = "n/a (a run failed)" if c["pass"] is None else ("pass" if c["pass"] else "FAIL")
        t.add_row(c["check"], res, c["detail"])
    out_console.print(t)


def figures(result: dict[str, Any], out: Path) -> list[Path]:
    """Fig. 39-45 as PNG + SVG in ``out`` (normalised to OBFS / the extent tree / no cache as
    the thesis's figures are)."""
    from nandlab.figures import grouped_bars, sweep_lines

    paths: list[Path] = []
    bench = result["bench"]
    for fig, patterns, cmd in (
        ("fig39", ("seq_write", "rand_write"), "write"),
        ("fig40", ("seq_read", "rand_read"), "read"),
    ):
        data: dict[str, dict[str, Any]] = {
            f"{r['pattern']} {_size(r['request_bytes'])}": {}
            for r in bench["rows"]
            if r["pattern"] in patterns
        }
        for r in bench["rows"]:
            if r["pattern"] in patterns:
                data[f"{r['pattern']} {_size(r['request_bytes'])}"][r["design"]] = r["response_ms"]
        paths += grouped_bars(
            {f"DMMbench {cmd} response (ms)": data},
            ["obfs", "dmm"],
            out / fig,
            scheme_labels={"obfs": "OBFS", "dmm": "DMM"},
            ylabel="ms",
            title=f"Fig. {fig[3:]}: DMMbench {cmd}s",
            average=False,
        )
    ch = {
        f"32 KiB sequential {k} (ms)": {
            "OBFS": [
                (x["channels"], x["response_ms"]) for x in bench["channels"] if k in x["pattern"]
            ]
        }
        for k in ("write", "read")
    }
    paths += sweep_lines(
        ch, out / "fig41", xlabel="channels (1 die each)", ylabel="ms", title="Fig. 41: channels"
    )
    tr = result["trace_results"]
    if not tr:
        return paths

    def per_trace(keys: Sequence[str], metric: str) -> dict[str, dict[str, Any]]:
        return {n: {k: t["runs"][k][metric] for k in keys} for n, t in tr.items()}

    paths += grouped_bars(
        {
            "page writes": per_trace(("obfs", "yaffs2", "dmm"), "page_writes"),
            "mean write response": per_trace(("obfs", "yaffs2", "dmm"), "write_response_ms"),
            "erases": per_trace(("obfs", "yaffs2", "dmm"), "erases"),
        },
        ["obfs", "yaffs2", "dmm"],
        out / "fig45",
        reference="obfs",
        scheme_labels={"obfs": "OBFS", "yaffs2": "YAFFS2-like", "dmm": "DMM"},
        ylabel="normalised to OBFS",
        title="Fig. 45: DMM vs YAFFS2-like vs OBFS",
    )
    paths += grouped_bars(
        {
            "page writes": per_trace(("extent_1m", "virtual_1m"), "page_writes"),
            "index writes": per_trace(("extent_1m", "virtual_1m"), "index_writes"),
            "erases": per_trace(("extent_1m", "virtual_1m"), "erases"),
        },
        ["extent_1m", "virtual_1m"],
        out / "fig43",
        reference="extent_1m",
        scheme_labels={"extent_1m": "extent tree", "virtual_1m": "virtual tree"},
        ylabel="normalised to the extent tree",
        title="Fig. 43: virtual vs extent B+ tree (1 MiB GC table)",
    )

    def sweep(prefix: str, metric: str, ref: str | None) -> dict[str, list[Any]]:
        lines: dict[str, list[Any]] = {}
        for n, t in tr.items():
            base = t["runs"][ref][metric] if ref else 1
            pts = []
            for k, r in t["runs"].items():
                if k.startswith(prefix) and r[metric] is not None and base:
                    pts.append((int(k.split("_")[1]) // KIB, r[metric] / base))
            lines[n] = pts
        return lines

    paths += sweep_lines(
        {
            "page writes ÷ no MLGC": sweep("mlgc_", "page_writes", "obfs"),
            "onode writes ÷ no MLGC": sweep("mlgc_", "onode_writes", "obfs"),
        },
        out / "fig42",
        xlabel="byte-level GC table (KiB)",
        title="Fig. 42: MLGC",
    )
    paths += sweep_lines(
        {
            "page writes ÷ no cache": sweep("dc_", "page_writes", "virtual_1m"),
            "index writes ÷ no cache": sweep("dc_", "index_writes", "virtual_1m"),
            "hit rate": sweep("dc_", "hit_rate", None),
        },
        out / "fig44",
        xlabel="diff cache (KiB)",
        title="Fig. 44: diff cache (virtual tree, 1 MiB GC table)",
    )
    return paths


__all__ = ["THESIS_HEADLINE", "TRACE_PATTERNS", "blocks_for", "dmm", "find_traces"]
