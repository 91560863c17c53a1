"""DMMbench, DMM's own study (Guo's thesis ch. 4, Fig. 39-41), run by ``nandlab reproduce dmm``
before its file-level traces (:mod:`nandlab.reproduce.dmm`): synthetic sequential and random
writes and reads on the object device, OBFS against DMM, and the channel count.

* Fig. 39 / 40 -- DMMbench writes (sequential 4/32/256 KiB, random 4 KiB) and reads
  (sequential 4/32 KiB and 1 MiB, random 4 KiB) on OBFS and DMM: mean response, page writes
  by type, GC page writes, erases; the spec's bands (``dmm.md`` §7.4) beside them.
* Fig. 41 -- 4 / 8 / 16 channels (1 die each, 1024 / 512 / 256 pages per block), 32 KiB
  sequential writes and reads, OBFS.

Its checks are the spec's bands and directions (§7.4: comparisons with the thesis, kind
``"paper"``). It runs in this process (:mod:`~nandlab.reproduce.osd_runs`) and files its
checks, tables, figures and rows as a :class:`~nandlab.reproduce.framework.Study`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from nandlab.reproduce import framework as fw
from nandlab.reproduce.fmt import KIB, MIB, fmt_num, size_label
from nandlab.reproduce.osd_runs import Runner, page_writes, response_ms

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


def run_bench(runner: Runner, quick: bool) -> dict[str, Any]:
    """Fig. 39-41's runs: per design and access, then per channel count."""
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
                    "label": f"DMMbench {design} {pattern} {size_label(req)}",
                }
            )
            cmd = "write" if "write" in pattern else "read"
            rows.append(
                {
                    "design": design,
                    "pattern": pattern,
                    "request_bytes": req,
                    "response_ms": response_ms(rep, cmd),
                    "all_response_ms": response_ms(rep, "all"),
                    "data_writes": page_writes(rep, "data"),
                    "index_writes": page_writes(rep, "index"),
                    "onode_writes": page_writes(rep, "onode"),
                    "gc_writes": page_writes(rep, None, "gc"),
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
                    "response_ms": response_ms(rep, "write" if "write" in pattern else "read"),
                }
            )
    return {"total_bytes": total, "rows": rows, "channels": chans}


def _bench_row(bench: dict[str, Any], design: str, pattern: str, req: int) -> dict[str, Any]:
    return next(
        r
        for r in bench["rows"]
        if r["design"] == design and r["pattern"] == pattern and r["request_bytes"] == req
    )


def bench_table(bench: dict[str, Any]) -> dict[str, Any]:
    """Fig. 39/40 as a table (:func:`~nandlab.reproduce.framework.print_table`)."""
    cols = ["design", "access", "ours (ms)", "thesis", "data w", "index w", "onode w", "GC w",
            "erases"]  # fmt: skip
    rows = [[r["design"], f"{r['pattern']} {size_label(r['request_bytes'])}",
             fmt_num(r["response_ms"]), THESIS_BENCH.get((r["pattern"], r["request_bytes"]), ""),
             *(fmt_num(r[k]) for k in ("data_writes", "index_writes", "onode_writes",
                                       "gc_writes", "erases"))] for r in bench["rows"]]  # fmt: skip
    title = (f"Fig. 39/40: DMMbench ({size_label(bench['total_bytes'])} per type), mean response "
             "of the access command")  # fmt: skip
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


def check(name: str, ok: bool | None, detail: str) -> dict[str, Any]:
    """A comparison with the thesis in the result JSON's form (``ok`` None: a run failed)."""
    return fw.check(name, ok, detail, kind="paper")


def checks(bench: dict[str, Any]) -> list[dict[str, Any]]:
    """The spec's checks (dmm.md §7.4) on DMMbench: the channel direction and OBFS's bands."""
    w = {
        ch: x["response_ms"]
        for x in bench["channels"]
        for ch in [x["channels"]]
        if "write" in x["pattern"]
    }
    out = [check(
        "write response falls 4 -> 8 -> 16 channels (F41)",
        w[4] is not None and w[8] is not None and w[16] is not None and w[4] > w[8] > w[16],
        " > ".join(f"{w[c]:.3f} ms" for c in (4, 8, 16) if w[c] is not None),
    )]  # fmt: skip

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
    out.append(check(
        "OBFS 4 KiB sequential write in [1.8, 2.7] ms (F39a: 2.24 ms)",
        None if w4 is None else 1.8 <= w4 <= 2.7,
        "—" if w4 is None else f"{w4:.3f} ms",
    ))  # fmt: skip
    out.append(check(
        "OBFS 4 KiB read within 150 us +- 30 % (F40a: 3 page reads)",
        None if r4 is None else 0.105 <= r4 <= 0.195,
        "—" if r4 is None else f"{r4 * 1000:.0f} us",
    ))  # fmt: skip
    # §4.6.2 says the 1 MB read is "32 times that of 32KB" and "reaches up to 1500 us"; with
    # its 4 KB (and 32 KB) read at ≈ 150 us those contradict each other (32 x 150 us = 4.8 ms).
    # 1500 us is 32 page reads (512 pages over 16 dies, 50 us each), so the check takes the
    # absolute figure (the spec's band reads "32x the 32 KB read"; the ratio is shown).
    out.append(check(
        "OBFS 1 MiB read within 1.5 ms +- 30 % (F40a: 1500 us, 32 reads per die)",
        None if r1m is None else 1.05 <= r1m <= 1.95,
        "—"
        if r1m is None or not r32
        else f"{r1m:.3f} ms ({r1m / r32:.1f} x the 32 KiB read, spec band 32 +- 30 %)",
    ))  # fmt: skip
    sw = [r for r in bench["rows"] if r["pattern"] == "seq_write"]
    out.append(check(
        "no GC page writes for sequential writes (F39b)",
        all(r["gc_writes"] == 0 for r in sw),
        ", ".join(f"{r['design']} {size_label(r['request_bytes'])}: {r['gc_writes']}" for r in sw),
    ))  # fmt: skip
    return out


def figures(bench: dict[str, Any], out: Path) -> list[Path]:
    """Fig. 39-41 as PNG + SVG in ``out``."""
    from nandlab.figures import grouped_bars, sweep_lines

    paths: list[Path] = []
    for fig, patterns, cmd in (
        ("fig39", ("seq_write", "rand_write"), "write"),
        ("fig40", ("seq_read", "rand_read"), "read"),
    ):
        data: dict[str, dict[str, Any]] = {
            f"{r['pattern']} {size_label(r['request_bytes'])}": {}
            for r in bench["rows"]
            if r["pattern"] in patterns
        }
        for r in bench["rows"]:
            if r["pattern"] in patterns:
                data[f"{r['pattern']} {size_label(r['request_bytes'])}"][r["design"]] = r[
                    "response_ms"
                ]
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
    return paths


def study(runner: Runner, quick: bool, out: Path) -> fw.Study:
    """DMMbench: its runs, checks, tables (Fig. 39/40, Fig. 41), figures (in ``out``) and rows;
    its own JSON entry is ``bench``."""
    bench = run_bench(runner, quick)
    return fw.Study(
        checks=checks(bench),
        tables=[bench_table(bench), channels_table(bench)],
        figures=figures(bench, out),
        rows=bench["rows"],
        json={"bench": bench},
    )


__all__ = ["THESIS_BENCH", "checks", "figures", "run_bench", "study"]
