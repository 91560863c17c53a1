"""``nandlab reproduce dmm``: Guo's thesis ch. 4, the DMM object-based flash device: first
DMMbench, DMM's own study (Fig. 39-41, :mod:`nandlab.reproduce.dmm_bench`), then Fig. 42-45 on
file-level traces, with the headline next to the thesis's.

Presets ``obfs``, ``dmm``, ``yaffs2`` (Table 16 hardware: 16 channels x 1 die, 2 KiB pages,
256-page blocks, program 900 µs, read 50 µs, erase 1.5 ms). Every run is closed-loop at queue
depth 1 (DMMbench is synchronous; the thesis's relay program gives no pacing for the traces),
so a response time is the device's service time and no load level has to be chosen; the runs
are the object device's, in this process (:mod:`nandlab.reproduce.osd_runs`), not the grid's.

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

import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from nandlab.reproduce import dmm_bench
from nandlab.reproduce import framework as fw
from nandlab.reproduce import osd_runs as osd
from nandlab.reproduce.fmt import KIB, MIB, fmt_num, size_label
from nandlab.reproduce.headline import Headline as H
from nandlab.reproduce.headline import headline_rows as fw_headline_rows
from nandlab.reproduce.load import finite, mean_of
from nandlab.reproduce.osd_runs import Runner

PAPER = "dmm"
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
#: Measured commands per trace run with --quick (a prefix).
QUICK_MAX_COMMANDS = 20_000


def onfd(mlgc: int | None, virtual: bool, dc: int) -> dict[str, object]:
    """Overrides of the ``obfs`` preset for an ONFD mix of the DMM pieces."""
    return {"osd.mlgc": mlgc is not None, "osd.mlgc_table_bytes": mlgc or 0,
            "osd.virtual_tree": virtual, "osd.diff_cache_bytes": dc}  # fmt: skip


def trace_variants(quick: bool) -> list[fw.Variant]:
    """The device configurations of Fig. 42-45 (the variant's scheme is its preset)."""
    V = fw.Variant
    v = [V("obfs", "obfs", label="OBFS"), V("dmm", "dmm", label="DMM"),
         V("yaffs2", "yaffs2", label="YAFFS2-like")]  # fmt: skip
    v += [V(f"mlgc_{s}", "obfs", onfd(s, False, 0), f"MLGC {size_label(s)}")
          for s in (QUICK_MLGC_SIZES if quick else MLGC_SIZES)]  # fmt: skip
    v += [V("extent_1m", "obfs", onfd(MIB, False, 0), "extent tree, 1 MiB table"),
          V("virtual_1m", "obfs", onfd(MIB, True, 0), "virtual tree, 1 MiB table")]  # fmt: skip
    v += [V(f"dc_{s}", "obfs", onfd(MIB, True, s), f"diff cache {size_label(s)}")
          for s in (QUICK_DC_SIZES if quick else DC_SIZES)]  # fmt: skip
    return v


def find_traces(dirs: Sequence[Path]) -> dict[str, Path]:
    """The file-level traces of :data:`TRACE_PATTERNS` found under ``dirs``."""
    return osd.find_traces(dirs, TRACE_PATTERNS)


def blocks_for(footprint: int) -> int:
    """Blocks per die so that ``footprint`` fills :data:`TARGET_FILL` of the capacity."""
    per_block = DIES * PAGES_PER_BLOCK * PAGE_BYTES
    n = max(math.ceil(footprint / TARGET_FILL / per_block), MIN_BLOCKS_PER_DIE)
    return CHUNK_BLOCKS * math.ceil(n / CHUNK_BLOCKS)


def run_trace(runner: Runner, name: str, path: Path, quick: bool) -> dict[str, Any]:
    """Every configuration on one trace, on a device its footprint fills to 70 %."""
    st = runner.trace_stats(path)
    blocks = blocks_for(int(st["footprint_bytes"]))
    capacity = blocks * DIES * PAGES_PER_BLOCK * PAGE_BYTES
    maxc = QUICK_MAX_COMMANDS if quick else 0
    runs: dict[str, dict[str, Any]] = {}
    for v in trace_variants(quick):
        rep = runner.run({
            "kind": "trace", "preset": v.scheme, "trace": str(path),
            "trace_bytes": path.stat().st_size,
            "overrides": [("device.blocks_per_plane", blocks), *v.overrides.items()],
            "max_commands": maxc, "label": f"{name} {v.label}",
        })  # fmt: skip
        runs[v.name] = {"label": v.label, **osd.run_numbers(rep)}
    keys = ("files", "avg_request_kib", "write_percent", "write_seq_percent", "read_seq_percent",
            "records", "footprint_bytes")  # fmt: skip
    return {"file": str(path), "stats": {k: st[k] for k in keys}, "blocks_per_die": blocks,
            "capacity_bytes": capacity, "fill": st["footprint_bytes"] / capacity,
            "max_commands": maxc, "runs": runs}  # fmt: skip


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
    rows = [
        {
            **(r := tr["runs"][k]),
            "configuration": f"{fig}: {r['label']}" + (" (run FAILED)" if r.get("error") else ""),
        }
        for fig, keys in groups
        for k in keys
    ]
    cols = [fw.Col("configuration", "configuration", "text"),
            *(fw.Col(h, k) for h, k in (("page writes", "page_writes"), ("data", "data_writes"),
                                        ("index", "index_writes"), ("onode", "onode_writes"),
                                        ("GC", "gc_writes"), ("erases", "erases"),
                                        ("write (ms)", "write_response_ms"))),
            fw.Col("hit rate", "hit_rate", "share")]  # fmt: skip
    return fw.render(title, cols, rows)


def headline_rows(trace_res: dict[str, Any]) -> dict[str, Any]:
    """DMM against OBFS and YAFFS2 per trace, and the arithmetic mean over traces."""
    per: dict[str, dict[str, float | None]] = {}
    for name, tr in trace_res.items():
        d, o, y = (tr["runs"][k] for k in ("dmm", "obfs", "yaffs2"))
        per[name] = {
            "page_writes_vs_obfs": fw.change(d["page_writes"], o["page_writes"]),
            "write_response_vs_obfs": fw.change(d["write_response_ms"], o["write_response_ms"]),
            "write_response_vs_yaffs2": fw.change(d["write_response_ms"], y["write_response_ms"]),
            "page_writes_vs_yaffs2": fw.change(d["page_writes"], y["page_writes"]),
            # endurance read as the erase-count ratio (spec §4, F45 inference); None when DMM
            # erased nothing
            "endurance_vs_obfs": (
                o["erases"] / d["erases"] - 1.0 if d["erases"] and o["erases"] is not None else None
            ),
        }
    keys = [h.ours for h in HEADLINE]  # the per-trace keys, in order
    return {
        "per_trace": per,
        "mean": {k: mean_of(finite(p[k]) for p in per.values()) for k in keys},
    }


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


def trace_checks(trace_res: dict[str, Any]) -> list[dict[str, Any]]:
    """The spec's checks (dmm.md §7.5) on every trace, each pass or fail (None: a run failed)."""
    out: list[dict[str, Any]] = []
    for name, tr in trace_res.items():
        r = tr["runs"]
        d, o = r["dmm"], r["obfs"]
        big = max((k for k in r if k.startswith("mlgc_")), key=lambda k: int(k.split("_")[1]))
        v, e = r["virtual_1m"]["index_writes"], r["extent_1m"]["index_writes"]
        dcs = sorted((k for k in r if k.startswith("dc_")), key=lambda k: int(k.split("_")[1]))
        idx = [r[k]["index_writes"] for k in dcs]
        hits = [None if r[k].get("error") else (r[k]["hit_rate"] or 0.0) for k in dcs]
        dw, ow = d["write_response_ms"], o["write_response_ms"]
        out += [fw.check(f"{name}: {what}", ok, detail, kind="paper") for what, ok, detail in (
            ("DMM < OBFS in page writes", fw.below(d["page_writes"], o["page_writes"]),
             f"{fmt_num(d['page_writes'])} vs {fmt_num(o['page_writes'])}"),
            ("DMM < OBFS in mean write response", fw.below(dw, ow),
             f"{fmt_num(dw)} vs {fmt_num(ow)} ms"),
            ("MLGC at the largest table < no MLGC in onode writes",
             fw.below(r[big]["onode_writes"], o["onode_writes"]),
             f"{fmt_num(r[big]['onode_writes'])} vs {fmt_num(o['onode_writes'])}"),
            ("virtual tree never more index writes than the extent tree",
             fw.below(v, e, strict=False),
             f"{fmt_num(v)} vs {fmt_num(e)}"),
            ("index writes do not rise with the diff cache", fw.monotone(idx, rising=False),
             " >= ".join(fmt_num(x) for x in idx)),
            ("hit rate does not fall with the diff cache", fw.monotone(hits, rising=True),
             " <= ".join(fmt_num(h) for h in hits)),
        )]  # fmt: skip
    return out


#: Fig. 45 and 43 normalised to OBFS / the extent tree, Fig. 42 and 44 to no MLGC / no cache,
#: as the thesis's figures are.
FIGURES = (
    fw.bars("fig45", {"page writes": "{s}.page_writes", "mean write response":
                      "{s}.write_response_ms", "erases": "{s}.erases"},
            ["obfs", "yaffs2", "dmm"], reference="obfs",
            scheme_labels={"obfs": "OBFS", "yaffs2": "YAFFS2-like", "dmm": "DMM"},
            ylabel="normalised to OBFS", title="Fig. 45: DMM vs YAFFS2-like vs OBFS"),
    fw.bars("fig43", {"page writes": "{s}.page_writes", "index writes": "{s}.index_writes",
                      "erases": "{s}.erases"}, ["extent_1m", "virtual_1m"],
            reference="extent_1m",
            scheme_labels={"extent_1m": "extent tree", "virtual_1m": "virtual tree"},
            ylabel="normalised to the extent tree",
            title="Fig. 43: virtual vs extent B+ tree (1 MiB GC table)"),
    fw.size_sweep("fig42", "mlgc_", {"page writes ÷ no MLGC": ("page_writes", "obfs"),
                                     "onode writes ÷ no MLGC": ("onode_writes", "obfs")},
                  xlabel="byte-level GC table (KiB)", title="Fig. 42: MLGC"),
    fw.size_sweep("fig44", "dc_", {"page writes ÷ no cache": ("page_writes", "virtual_1m"),
                                   "index writes ÷ no cache": ("index_writes", "virtual_1m"),
                                   "hit rate": ("hit_rate", None)},
                  xlabel="diff cache (KiB)",
                  title="Fig. 44: diff cache (virtual tree, 1 MiB GC table)"),
)  # fmt: skip


def reproduce(o: osd.OsdOptions, runner: Runner) -> dict[str, Any]:
    """DMMbench, then every configuration on every trace found: the result, the figures."""
    found = find_traces(o.dirs)
    bench = dmm_bench.study(runner, o.quick, o.out)
    trace_res = {name: run_trace(runner, name, path, o.quick) for name, path in found.items()}
    headline = headline_rows(trace_res)
    rows = fw.TraceRows([{"trace": n, **tr["runs"]} for n, tr in trace_res.items()])
    figs = [*bench.figures, *(p for f in FIGURES for p in f.draw(rows, o.out))]
    result = fw.result_head(
        PAPER,
        "Guo, PhD thesis ch. 4: DMM object-based flash device vs OBFS / YAFFS2, Pittsburgh 2016",
        o.quick,
        [*bench.checks, *trace_checks(trace_res)],
        standard_headline(headline),
        [*bench.tables, *(trace_table(n, tr) for n, tr in trace_res.items())],
        figs,
    )
    result |= {
        "table": bench.rows,
        "traces": {n: str(p) for n, p in found.items()},
        "missing_traces": [n for n in TRACE_PATTERNS if n not in found],
        **bench.json,
        "trace_results": trace_res,
        "headline_by_trace": headline,
        "thesis_headline": THESIS_HEADLINE,
        **runner.result_json(),
    }  # fmt: skip
    return result


dmm = osd.command(
    PAPER,
    reproduce,
    help="""Guo ch. 4 (DMM): Fig. 39-41 on DMMbench, Fig. 42-45 on file-level traces, and the
    headline next to the thesis's (-25 % page writes, -38 % write response vs OBFS, -35 % vs
    YAFFS2, endurance +76 %).""",
    traces_help="Directory of file-level traces (*_fs.jsonl*), searched recursively "
    "(repeatable). Default: the workspace's captured traces.",
    quick_help="CI-sized: DMMbench of 2 MiB per type, trace prefixes of 20,000 commands, "
    "two sizes per sweep.",
    headline_title="Headline: DMM against the baselines (Fig. 45)",
    checks_title="Checks (spec dmm.md §7.4-7.5); a failure is a result, not tuned away",
    missing="no file-level traces found (pgbench_rw_fs, devtree_fs): Fig. 42-45 were not run; "
    "give --traces DIR",
)

__all__ = ["THESIS_HEADLINE", "TRACE_PATTERNS", "blocks_for", "dmm", "find_traces"]
