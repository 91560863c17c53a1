"""``nandlab report DIR``: one self-contained HTML report of a sweep, compare or reproduce
output directory (built by :func:`nandlab.report.build_report`)."""

from __future__ import annotations

from pathlib import Path

import click

from nandlab.report import ReportError, build_report


@click.command("report")
@click.argument("directory", type=click.Path(file_okay=False, path_type=Path))
@click.option(
    "-o",
    "--output",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="HTML file to write (default DIR/report.html); figures go to <name>_files/ beside it.",
)
@click.option("--title", default=None, help="Page title.")
def report_command(directory: Path, output: Path | None, title: str | None) -> None:
    """One self-contained HTML report of a sweep, compare or reproduce output directory:
    runs table (sortable), latency CDFs, time series, paper tables; figures also as PNG/SVG."""
    from nandlab.reproduce.fmt import EXIT_USER_ERROR, err_console

    if not directory.is_dir():
        click.secho(f"error: {directory}: not a directory", fg="red", err=True)
        raise click.exceptions.Exit(EXIT_USER_ERROR)
    from nandlab.experiment import ExperimentError

    try:
        res = build_report(directory, output, title=title)
    except (ReportError, ExperimentError) as e:
        # ExperimentError: an unreadable runs.parquet (truncated, not Parquet), named with
        # the way out.
        click.secho(f"error: {e}", fg="red", err=True)
        raise click.exceptions.Exit(EXIT_USER_ERROR) from None
    err_console.print(
        f"wrote {res.html} ({res.size_bytes / 1024:,.0f} KiB, {res.runs} runs, "
        f"{len(res.figures)} figures as PNG+SVG in {res.html.parent / (res.html.stem + '_files')}) "
        f"in {res.build_s:.1f} s"
    )
