"""``nandlab characterize``: the drive's datasheet from synthetic workloads (the method, the
tests and the bounds are in :mod:`nandlab.characterize`)."""

from __future__ import annotations

from pathlib import Path

import click

from nandlab.characterize import (
    GIB,
    KIB,
    ROUNDS,
    TABLE_HEADER,
    TEST_NAMES,
    WINDOW_ROUNDS,
    characterize,
    plot,
    table_rows,
)
from nandlab.cli_common import ByteSize, err_console, out_console, write_json_out


def _byte_size(value: str, param: click.Parameter, ctx: click.Context) -> int:
    return ByteSize().convert(value, param, ctx)


@click.command("characterize")
@click.option(
    "--config",
    "-c",
    "config",
    default="default",
    show_default=True,
    metavar="FILE|NAME",
    help="Config file or packaged preset name.",
)
@click.option(
    "--set",
    "sets",
    multiple=True,
    metavar="KEY=VALUE",
    help="Override a config key (dotted path, TOML value); repeatable.",
)
@click.option(
    "--quick", is_flag=True, help="Fewer I/Os (about a tenth; sequential tests: ≤ 4 GiB / 2 GiB)."
)
@click.option(
    "--tests",
    "tests",
    default=None,
    metavar="NAME,...",
    help=f"Run only these tests ({', '.join(TEST_NAMES)}).",
)
@click.option(
    "--span-bytes",
    default=None,
    metavar="BYTES",
    callback=lambda ctx, param, v: None if v is None else _byte_size(v, param, ctx),
    help="Working set = logical space to size the drive for (e.g. 64GiB; default: the "
    "config's own sizing).",
)
@click.option("--seed", type=int, default=42, show_default=True, help="Workload seed.")
@click.option(
    "--json",
    "json_out",
    metavar="OUT",
    default=None,
    help="Also write the results as JSON to OUT ('-' for stdout, which hides the table).",
)
@click.option(
    "--plot",
    "plot_out",
    metavar="OUT.png",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="Plot write bandwidth over time of the sequential fill and the steady-state random write.",
)
@click.option(
    "--progress/--no-progress",
    default=None,
    help="Progress bars on/off (default: on when stderr is a terminal).",
)
def characterize_command(
    config: str,
    sets: tuple[str, ...],
    quick: bool,
    tests: str | None,
    span_bytes: int | None,
    seed: int,
    json_out: str | None,
    plot_out: Path | None,
    progress: bool | None,
) -> None:
    """The drive's datasheet: fio's four corners and SNIA-style steady state, simulated.

    4 KiB random read at QD1 (latency) and QD32/QD256 (IOPS), 128 KiB sequential read and
    write (MB/s), 4 KiB random write fresh and in steady state, 70/30 mixed; mean and
    p50/p99/p99.9 latency of each. docs/characterize.md explains the method and compares the
    default drive with real drives.
    """
    from nandlab.config import cli_override

    overrides = [cli_override(s) for s in sets]
    names = None if tests is None else [x.strip() for x in tests.split(",") if x.strip()]
    show_progress = progress if progress is not None else err_console.is_terminal
    quiet = json_out == "-"

    def status(msg: str) -> None:
        if not quiet or show_progress:
            err_console.print(f"characterize {msg}")

    result = characterize(
        config,
        overrides,
        quick=quick,
        tests=names,
        span_bytes=span_bytes,
        seed=seed,
        progress=show_progress,
        status=status,
    )
    if plot_out is not None:
        plot(result, plot_out)
    write_json_out(json_out, result)
    if quiet:
        return
    from rich.table import Table

    dev = result["device"]
    title = (
        f"nandlab characterize — {config}: {dev['dies']} dies x {dev['planes_per_die']} planes, "
        f"{dev['page_size_bytes'] // KIB} KiB pages, working set "
        f"{result['logical_bytes'] / GIB:,.2f} GiB{' (quick)' if quick else ''}"
    )
    tbl = Table(title=title, title_justify="left")
    for i, h in enumerate(TABLE_HEADER):
        tbl.add_column(h, justify="left" if i < 2 else "right")
    for row in table_rows(result):
        tbl.add_row(*row)
    out_console.print(tbl)
    out_console.print(
        f"figures: the last {WINDOW_ROUNDS} of {ROUNDS} rounds of each test (SNIA measurement "
        "window); steady: SNIA's criterion on it (range ≤ 20 % of the mean, trend ≤ 10 %); "
        "MB = 10⁶ B; bound: closed-form limit of the geometry (docs/characterize.md)."
    )
    if plot_out is not None:
        out_console.print(f"wrote {plot_out}")
