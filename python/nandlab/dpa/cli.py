"""``nandlab dpa``: DPA-PPU statistics of real files (Guo ch. 2, Figs. 9-11, Table 5).

Exit status: 0 when every file was analysed, 1 when some could not be (each gets a one-line
error on stderr and the others are reported), 2 when none could be or the options are bad.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import click
from rich.console import Console
from rich.table import Table

from nandlab import dpa as _dpa

_out = Console(highlight=False)
if not _out.is_terminal:
    _out = Console(highlight=False, width=160)
_err = Console(stderr=True, highlight=False)

#: Inputs at least this large get a progress bar (when stderr is a terminal).
PROGRESS_MIN_BYTES = 32 << 20


def _ints(ctx: click.Context, param: click.Parameter, value: str) -> list[int]:
    try:
        out = [int(x) for x in value.split(",") if x.strip()]
    except ValueError:
        raise click.BadParameter(f"{value!r}: expected comma-separated integers") from None
    if not out:
        raise click.BadParameter("empty list")
    return out


def _pct(v: Any, digits: int = 1) -> str:
    if not isinstance(v, (int, float)) or not math.isfinite(v):
        return "—"
    return f"{100 * v:.{digits}f} %"


def _ratio(v: Any) -> str:
    if not isinstance(v, (int, float)) or not math.isfinite(v):
        return "—"
    return f"{v:.3f}"


def _cfg_label(c: dict[str, Any]) -> str:
    lab = f"{c['chunk_bytes']} B"
    if c.get("order", 16) != 16 or c.get("polynomials") not in (None, 64):
        lab += f" o{c.get('order', 16)}"
        if c.get("polynomials"):
            lab += f"/{c['polynomials']}"
    return lab


def group_files(
    an: _dpa.Analysis, by: str, kinds: dict[str, str] | None = None
) -> dict[str, list[str]]:
    """Analysed file paths by group: ``kind`` (:func:`nandlab.dpa.file_kind`, or ``kinds``),
    ``file`` (one group each) or ``none`` (one group ``all``)."""
    groups: dict[str, list[str]] = {}
    for f in an.ok_files:
        p = f["path"]
        if by == "file":
            key = p
        elif by == "none":
            key = "all"
        else:
            key = (kinds or {}).get(p) or _dpa.file_kind(p)
        groups.setdefault(key, []).append(p)
    return groups


def summaries(an: _dpa.Analysis, groups: dict[str, list[str]]) -> dict[str, dict[str, Any]]:
    """:meth:`Analysis.summary` per group, plus ``all`` when there is more than one group."""
    out = {g: an.summary(paths) for g, paths in groups.items()}
    if len(groups) > 1:
        out["all"] = an.summary()
    return out


def print_tables(
    an: _dpa.Analysis,
    sums: dict[str, dict[str, Any]],
    *,
    level_map: str = "printed",
    table5: bool = False,
    console: Console = _out,
) -> None:
    """The ones-ratio, DPA-PPU output, Table 5 and throughput tables."""
    cfgs = an.configs
    t = Table(
        title="Ones ratio (Guo Fig. 9: raw → de-correlated; Fig. 10: scrambled, best "
        "polynomial per chunk)",
        title_justify="left",
    )
    for c in ("group", "files", "MiB", "raw", "de-corr."):
        t.add_column(c, justify="left" if c == "group" else "right")
    for c in cfgs:
        t.add_column(f"scr. {_cfg_label(c)}", justify="right")
    for g, s in sums.items():
        p0 = s["profiles"][0]
        t.add_row(
            g,
            str(s["files"]),
            f"{s['stats']['bytes'] / 2**20:.2f}",
            _ratio(p0["raw_ones_ratio"]),
            _ratio(p0["decorrelated_ones_ratio"]),
            *(_ratio(p["scrambled_ones_ratio"]) for p in s["profiles"]),
        )
    console.print(t)
    t = Table(
        title="DPA-PPU output (Fig. 10(d): share of 0s stored; Fig. 11: L0 share of the stored "
        "cells, paired pages \\[independent bits]; path A = de-correlated pages)",
        title_justify="left",
    )
    for c in ("group", "chunk", "0s stored", "L0", "L1", "L2", "L3", "path A", "tag bits/page"):
        t.add_column(c, justify="left" if c in ("group", "chunk") else "right")
    for g, s in sums.items():
        for c, p in zip(cfgs, s["profiles"]):
            paired = p.get("stored_patterns_paired")
            lp = _dpa.levels(paired, level_map) if paired else [None] * 4
            li = _dpa.levels(p["stored_patterns_independent"], level_map)
            tb = p["tag_bits_per_page"]
            t.add_row(
                g,
                _cfg_label(c),
                _ratio(p["selected_ones_ratio"]),
                *(f"{_pct(a)} \\[{_pct(b)}]" for a, b in zip(lp, li)),
                _pct(p["path_a_share"]),
                f"{tb:.0f}" if isinstance(tb, (int, float)) and math.isfinite(tb) else "—",
            )
    console.print(t)
    # Table 5: per-polynomial reduce probability, one configuration (8 B if present).
    i5 = next((i for i, c in enumerate(cfgs) if c["chunk_bytes"] == 8), 0)
    t = Table(
        title=f"Guo Table 5: P(polynomial reduces a chunk's ones), {_cfg_label(cfgs[i5])} "
        "chunks — min / mean / max over polynomials, and the sum",
        title_justify="left",
    )
    for c in ("group", "min", "mean", "max", "sum", "best tag (share)"):
        t.add_column(c, justify="left" if c == "group" else "right")
    for g, s in sums.items():
        cs = s["stats"]["configs"][i5]
        n = cs["chunks"] or 1
        pr = [r / n for r in cs["reduced"]]
        best = max(range(len(cs["best"])), key=lambda k: cs["best"][k])
        t.add_row(
            g,
            f"{min(pr):.4f}",
            f"{sum(pr) / len(pr):.4f}",
            f"{max(pr):.4f}",
            f"{sum(pr):.2f}",
            f"{best} ({cs['best'][best] / n:.1%})",
        )
    console.print(t)
    if table5:
        t = Table(title="Guo Table 5 (full)", title_justify="left")
        t.add_column("poly")
        for g in sums:
            t.add_column(g, justify="right")
        npoly = len(sums[next(iter(sums))]["stats"]["configs"][i5]["reduced"])
        for k in range(npoly):
            row = []
            for s in sums.values():
                cs = s["stats"]["configs"][i5]
                row.append(f"{cs['reduced'][k] / (cs['chunks'] or 1):.6f}")
            t.add_row(str(k), *row)
        console.print(t)
    t = Table(
        title="Encode throughput, one core (the encoding thread's CPU time; wall clock where "
        "the platform gives no thread CPU time)",
        title_justify="left",
    )
    for c in ("config", "backend", "CPU s", "MB/s", "wall MB/s"):
        t.add_column(c, justify="left" if c == "config" else "right")
    for th in an.throughput():
        mbs, wall = th["encode_mb_per_s"], th["wall_mb_per_s"]
        t.add_row(
            _cfg_label(th),
            an.raw.get("backend", "?"),
            f"{th['encode_cpu_s'] or th['encode_s']:.3f}",
            f"{mbs:.0f}" if mbs else "—",
            f"{wall:.0f}" if wall else "—",
        )
    console.print(t)
    console.print(
        f"{an.bytes / 2**20:.1f} MiB x {len(cfgs)} configurations in {an.cpu_s:.2f} s process "
        f"CPU ({an.bytes * len(cfgs) / max(an.cpu_s, 1e-9) / 1e6:.0f} MB/s per core, reading "
        "and statistics included)"
    )


def report_json(
    an: _dpa.Analysis, sums: dict[str, dict[str, Any]], groups: dict[str, list[str]]
) -> dict[str, Any]:
    """Everything ``--json`` writes."""
    return {
        "backend": an.raw.get("backend"),
        "page_size_bytes": an.raw.get("page_size_bytes"),
        "configs": an.configs,
        "files": an.files,
        "errors": [{"path": p, "error": e} for p, e in an.errors],
        "groups": {g: {"paths": groups.get(g, []), **s} for g, s in sums.items()},
        "bytes": an.bytes,
        "cpu_s": an.cpu_s,
        "mb_per_s_cpu": an.bytes * len(an.configs) / an.cpu_s / 1e6 if an.cpu_s > 0 else None,
        "throughput": an.throughput(),
    }


def run_analysis(
    files: Sequence[Path],
    configs: list[dict[str, Any]],
    *,
    page_size_bytes: int,
    max_bytes: int,
    backend: str,
    progress: bool | None,
) -> _dpa.Analysis:
    """:func:`nandlab.dpa.analyze` with a byte progress bar on big inputs."""
    total = 0
    for f in files:
        try:
            if f.is_file():
                total += min(f.stat().st_size, max_bytes) if max_bytes else f.stat().st_size
        except OSError:
            pass
    show = progress if progress is not None else _err.is_terminal
    if not show or total < PROGRESS_MIN_BYTES:
        return _dpa.analyze(
            files,
            configs=configs,
            page_size_bytes=page_size_bytes,
            max_bytes_per_file=max_bytes,
            backend=backend,
        )
    from rich.progress import (
        BarColumn,
        DownloadColumn,
        Progress,
        TimeRemainingColumn,
        TransferSpeedColumn,
    )

    with Progress(
        "[progress.description]{task.description}",
        BarColumn(),
        DownloadColumn(),
        TransferSpeedColumn(),
        TimeRemainingColumn(),
        console=_err,
        transient=True,
    ) as prog:
        task = prog.add_task("dpa analyze", total=total)
        return _dpa.analyze(
            files,
            configs=configs,
            page_size_bytes=page_size_bytes,
            max_bytes_per_file=max_bytes,
            backend=backend,
            progress=lambda done, tot: prog.update(task, completed=done, total=tot or None),
        )


@click.group("dpa", context_settings={"help_option_names": ["-h", "--help"]})
def dpa() -> None:
    """DPA (Guo ch. 2): data-pattern statistics of real files for the DPA-PPU codec."""


@dpa.command("analyze")
@click.argument("files", nargs=-1, required=True, type=click.Path(path_type=Path))
@click.option(
    "--chunk",
    "chunks",
    default="4,8,16,32",
    show_default=True,
    callback=_ints,
    help="Chunk sizes in bytes (Guo Fig. 10(c): 4, 8, 16, 32).",
)
@click.option(
    "--order",
    type=click.IntRange(2, 16),
    default=16,
    show_default=True,
    help="Polynomial order (Fig. 10(a)); 16 = Guo Table 4.",
)
@click.option(
    "--polynomials",
    type=click.IntRange(1, 256),
    default=None,
    help="Number of polynomials (Fig. 10(b)) [default: min(64, what the order offers)].",
)
@click.option(
    "--page-size",
    "page_size",
    type=click.IntRange(min=32),
    default=_dpa.PAGE_SIZE_BYTES,
    show_default=True,
    help="Page size in bytes (Guo Table 3: 4096).",
)
@click.option(
    "--max-bytes",
    type=click.IntRange(min=0),
    default=0,
    help="Analyse at most this many bytes of each file (0 = all).",
)
@click.option(
    "--group-by",
    type=click.Choice(["kind", "file", "none"]),
    default="kind",
    show_default=True,
    help="Rows of the tables: file kind (by extension, else text/binary), each file, or all.",
)
@click.option(
    "--level-map",
    type=click.Choice(sorted(_dpa.LEVEL_MAPS)),
    default="printed",
    show_default=True,
    help="Level order of the cell bit patterns (Guo §2.1.1 prints 11/10/01/00).",
)
@click.option("--table5", is_flag=True, help="Print Table 5 for every polynomial.")
@click.option(
    "--backend",
    type=click.Choice(["auto", "avx512", "clmul", "portable"]),
    default="auto",
    show_default=True,
    help="Codec kernel (all give identical results).",
)
@click.option(
    "--progress/--no-progress",
    default=None,
    help=f"Progress bar (default: on when stderr is a terminal and the input is ≥ "
    f"{PROGRESS_MIN_BYTES >> 20} MiB).",
)
@click.option(
    "--json",
    "json_out",
    metavar="OUT",
    default=None,
    help="Also write machine-readable JSON to OUT ('-' for stdout, which hides the tables).",
)
def analyze_cmd(
    files: tuple[Path, ...],
    chunks: list[int],
    order: int,
    polynomials: int | None,
    page_size: int,
    max_bytes: int,
    group_by: str,
    level_map: str,
    table5: bool,
    backend: str,
    progress: bool | None,
    json_out: str | None,
) -> None:
    """Ones ratio raw / de-correlated / scrambled, cell level distribution (Fig. 11) and
    per-polynomial reduce probability (Table 5) of FILES, with the DPA-PPU codec.

    Files that cannot be read (missing, unreadable, directories, empty) get a one-line error
    and the others are analysed; the exit status is then 1 (2 if none could be analysed).
    """
    configs = _dpa.config_list(chunks, order, polynomials)
    an = run_analysis(
        list(files),
        configs,
        page_size_bytes=page_size,
        max_bytes=max_bytes,
        backend=backend,
        progress=progress,
    )
    for path, msg in an.errors:
        click.secho(f"error: {path}: {msg}", fg="red", err=True)
    if not an.ok_files:
        raise click.exceptions.Exit(2)
    groups = group_files(an, group_by)
    sums = summaries(an, groups)
    if json_out is not None:
        text = json.dumps(report_json(an, sums, groups), indent=1)
        if json_out == "-":
            click.echo(text)
        else:
            Path(json_out).write_text(text + "\n", encoding="utf-8")
    if json_out != "-":
        print_tables(an, sums, level_map=level_map, table5=table5)
    if an.errors:
        raise click.exceptions.Exit(1)


__all__ = ["dpa", "group_files", "print_tables", "report_json", "run_analysis", "summaries"]
