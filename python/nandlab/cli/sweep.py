"""``nandlab sweep GRID.toml``: run a grid of configs x schemes x traces x settings (the grid
itself, :func:`nandlab.sweep`, is in :mod:`nandlab.grid`)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from nandlab.grid import GridError, load_grid, sweep

if TYPE_CHECKING:
    import polars as pl


def runs_table(df: pl.DataFrame, title: str) -> Any:
    """A rich table of a grid's rows: trace, label, headline numbers, error."""
    from rich.table import Table

    from nandlab.reproduce.fmt import fmt_num

    t = Table(title=title, title_justify="left")
    cols = [
        ("trace", "trace"),
        ("run", "label"),
        ("mean µs", "host.mean_us"),
        ("read p99 µs", "host.read_p99_us"),
        ("write p99 µs", "host.write_p99_us"),
        ("WA", "write_amplification"),
        ("erases", "flash.erases"),
    ]
    for name, _ in cols:
        t.add_column(name, justify="left" if name in ("trace", "run") else "right")
    t.add_column("error", style="red", overflow="fold")
    for r in df.iter_rows(named=True):
        cells = [str(r[c]) if c in ("trace", "label") else fmt_num(r[c]) for _, c in cols]
        t.add_row(*cells, (r["error"] or "")[:120])
    return t


@click.command("sweep")
@click.argument("grid", type=click.Path(dir_okay=False, path_type=Path))
@click.option(
    "--out",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="Results directory (default nandlab-out/<grid stem>). Re-running with the same --out "
    "skips finished runs and retries failed ones.",
)
@click.option(
    "--scheduler",
    default="local",
    show_default=True,
    metavar="local|tcp://HOST:PORT|slurm",
    help="Where runs go: a local process pool, a running Dask cluster, or Slurm through "
    "dask-jobqueue with the grid's [cluster] table (Dask: pip install 'nandlab[dask]').",
)
@click.option(
    "--workers",
    "-j",
    type=click.IntRange(min=1),
    default=None,
    help="Local worker processes (default: one per CPU; 1 runs inline), or Slurm jobs "
    "(default: [cluster] jobs).",
)
@click.option("--dry-run", is_flag=True, help="Check the grid and list its runs; run nothing.")
@click.option(
    "--json",
    "json_out",
    metavar="OUT",
    default=None,
    help="Write the runs (with full reports) as JSON to OUT ('-': stdout).",
)
@click.option(
    "--progress/--no-progress",
    default=None,
    help="Progress bar (default: on when stderr is a terminal).",
)
def sweep_command(
    grid: Path,
    out: Path | None,
    scheduler: str,
    workers: int | None,
    dry_run: bool,
    json_out: str | None,
    progress: bool | None,
) -> None:
    """Run a grid of configs x schemes x traces x settings from GRID.toml (docs/sweep.md).

    Finished runs are kept in OUT/runs.parquet as they finish: a killed sweep resumes without
    redoing them; failed runs are rows with their error and are retried on the next start.
    `nandlab report OUT` turns the results into one HTML file. Exit status: 0, 1 when runs
    failed, 2 for a bad grid (before any run starts).
    """
    from nandlab.experiment import ExperimentError, GridStats
    from nandlab.reproduce.fmt import EXIT_CHECK_FAILED, EXIT_USER_ERROR, err_console, out_console
    from nandlab.reproduce.output import write_json

    try:
        g = load_grid(grid)
    except GridError as e:
        click.secho(f"error: {e}", fg="red", err=True)
        raise click.exceptions.Exit(EXIT_USER_ERROR) from None
    out_dir = out if out is not None else Path("nandlab-out") / grid.stem
    quiet = json_out == "-"
    from nandlab._interrupt import on_interrupt
    from nandlab.reproduce.fmt import plural

    on_interrupt(
        f"finished runs stay in {out_dir / 'runs.parquet'}; the same command resumes the sweep"
    )
    if dry_run:
        for s in g.specs:
            out_console.print(f"{s.trace_name}\t{s.label}\t{s.params_json()}")
        err_console.print(f"{len(g.specs)} runs; nothing run (--dry-run)")
        return
    if scheduler != "local":
        from nandlab.cluster import check_scheduler

        try:  # before anything is printed or started: the error is the only line
            if workers is not None and scheduler != "slurm":
                raise ExperimentError(
                    f"--workers applies to --scheduler local or slurm; the Dask cluster at "
                    f"{scheduler} has its own workers"
                )
            check_scheduler(scheduler, g.cluster)
        except ExperimentError as e:
            click.secho(f"error: {e}", fg="red", err=True)
            raise click.exceptions.Exit(EXIT_USER_ERROR) from None
    show = progress if progress is not None else err_console.is_terminal
    if not quiet:
        err_console.print(
            f"sweep {grid}: {plural(len(g.specs), 'run')} "
            f"({plural(len(g.axes['traces']), 'trace')}, "
            f"{plural(len(g.axes['schemes']), 'scheme')}) -> {out_dir}"
        )
    st = GridStats()
    try:
        df = sweep(
            g,
            out_dir,
            scheduler=None if scheduler == "local" else scheduler,
            workers=workers,
            progress=show and not quiet,
            stats=st,
            console=err_console,
        )
    except ExperimentError as e:
        click.secho(f"error: {e}", fg="red", err=True)
        raise click.exceptions.Exit(EXIT_USER_ERROR) from None
    write_json(json_out, "sweep", df, [], grid=str(grid), where=st.where)
    if not quiet:
        out_console.print(runs_table(df, f"nandlab sweep — {grid.name}"))
        out_console.print(
            f"runs: {st.total} ({st.executed} executed, {st.skipped} already done, "
            f"{st.failed} failed) in {st.wall_s:.1f} s on {st.where or 'nothing'}; results "
            f"{out_dir / 'runs.parquet'}; HTML: nandlab report {out_dir}"
        )
    failed = df.filter(df["error"].is_not_null())
    if failed.height:
        r = failed.row(0, named=True)
        err_console.print(
            f"[red]{failed.height} run(s) failed[/] (run again to retry); first: "
            f"{r['trace']} {r['label']}: {r['error']}"
        )
        sys.exit(EXIT_CHECK_FAILED)
