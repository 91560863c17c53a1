"""``nandlab compare``: several schemes on one trace, one table of ratios to the first (the
runs and the table, :func:`nandlab.compare`, are in :mod:`nandlab.comparison`)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import click

from nandlab.comparison import METRICS, QUEUEING_METRICS, compare, queueing_note


def _cell(v: Any, ratio: Any, first: bool, queueing: bool = False) -> str:
    from nandlab.reproduce.fmt import fmt_num

    s = fmt_num(v)
    if not first and ratio is not None:
        s += f" ({ratio:.3f}x{'*' if queueing else ''})"
    elif queueing:
        s += " *"
    return s


@click.command("compare")
@click.option(
    "--trace",
    "-t",
    "trace",
    required=True,
    multiple=True,
    metavar="FILE|NAME",
    help="Trace file or bundled trace name (e.g. pgbench_rw_slice). Repeat it to compare the "
    "schemes on concurrent flows (docs/multi-tenant.md): adds fairness and each flow's slowdown.",
)
@click.option(
    "--schemes",
    "-s",
    required=True,
    metavar="A,B,C",
    help="Schemes, comma separated; ratios are to the first.",
)
@click.option(
    "--config",
    "-c",
    default="default",
    show_default=True,
    metavar="FILE|NAME",
    help="Config file or packaged preset name; every scheme runs on it (a scheme must fit it, "
    "e.g. diffecc_wa needs -c xia-diffecc).",
)
@click.option(
    "--set",
    "sets",
    multiple=True,
    metavar="KEY=VALUE",
    help="Override a config key (dotted path, TOML value); repeatable.",
)
@click.option(
    "--out",
    type=click.Path(file_okay=False, path_type=Path),
    default=Path("nandlab-out/compare"),
    show_default=True,
    help="Keeps the runs (re-running reuses them) and compare.json; `nandlab report OUT`.",
)
@click.option(
    "--workers",
    "-j",
    type=click.IntRange(min=1),
    default=None,
    help="Worker processes (default: one per scheme).",
)
@click.option(
    "--scheduler",
    default="local",
    show_default=True,
    metavar="local|tcp://HOST:PORT",
    help="Run on a Dask cluster instead (pip install 'nandlab[dask]').",
)
@click.option(
    "--timeseries-ms",
    type=click.FloatRange(min=1e-6, max=1e9),
    default=None,
    help="Also write each run's time series at this interval (runs/<key>/timeseries.parquet).",
)
@click.option(
    "--request-log", is_flag=True, help="Also write each run's per-request log (Parquet)."
)
@click.option(
    "--json",
    "json_out",
    metavar="OUT",
    default=None,
    help="Write the table as JSON to OUT ('-': stdout, no table printed).",
)
def compare_command(
    trace: tuple[str, ...],
    schemes: str,
    config: str,
    sets: tuple[str, ...],
    out: Path,
    workers: int | None,
    scheduler: str,
    timeseries_ms: float | None,
    request_log: bool,
    json_out: str | None,
) -> None:
    """Run several schemes on one trace in parallel and print one table with ratios to the
    first scheme: response mean / p50 / p99 / p99.9 per class, WA, erases, die utilisation,
    flash time per request."""
    from rich.table import Table

    from nandlab._interrupt import on_interrupt
    from nandlab.experiment import ExperimentError, RunOutputs
    from nandlab.reproduce.fmt import EXIT_CHECK_FAILED, EXIT_USER_ERROR, err_console, out_console

    on_interrupt(f"finished runs stay in {out / 'runs.parquet'}; the same command resumes")
    names = [s.strip() for s in schemes.split(",") if s.strip()]
    outputs = RunOutputs(
        request_log=request_log, timeseries_interval_ms=timeseries_ms, latency_cdf=True
    )
    try:
        df = compare(
            trace[0] if len(trace) == 1 else list(trace),
            names,
            config,
            list(sets),
            out,
            scheduler=None if scheduler == "local" else scheduler,
            workers=workers,
            outputs=outputs,
            progress=err_console.is_terminal and json_out != "-",
            console=err_console,
        )
    except (ValueError, ExperimentError) as e:
        if isinstance(e, ValueError) and type(e).__name__ in ("ConfigError", "TraceError"):
            msg = f"{type(e).__name__}: {' '.join(str(e).split())}"
        else:
            msg = " ".join(str(e).split())
        click.secho(f"error: {msg}", fg="red", err=True)
        raise click.exceptions.Exit(EXIT_USER_ERROR) from None
    rows = df.to_dicts()
    trace_label = " + ".join(trace)
    if json_out is not None:
        text = json.dumps({"trace": trace_label, "config": config, "rows": rows}, indent=1)
        if json_out == "-":
            click.echo(text)
        else:
            Path(json_out).write_text(text + "\n", encoding="utf-8")
    if json_out != "-":
        t = Table(
            title=f"nandlab compare — {trace_label} on {config} (ratio to {names[0]})",
            title_justify="left",
        )
        t.add_column("metric", style="bold")
        for r in rows:
            head = r["scheme"] + ("\n[red]OVERLOADED[/]" if r.get("overloaded") else "")
            t.add_column(head, justify="right")
        base_over = bool(rows[0].get("overloaded"))
        for col, label, _, unit in METRICS:
            t.add_row(
                f"{label} {unit}".strip(),
                *(
                    _cell(
                        r[col],
                        r[f"{col}_ratio"],
                        i == 0,
                        col in QUEUEING_METRICS and (base_over or bool(r.get("overloaded"))),
                    )
                    for i, r in enumerate(rows)
                ),
            )
        for col, label in (
            ("offered_die_load", "offered die load"),
            ("wait_share", "queue-wait share"),
        ):
            t.add_row(label, *("—" if r[col] is None else f"{r[col] * 100:.1f} %" for r in rows))
        flow_cols = [c for c in rows[0] if c == "fairness" or c.startswith("slowdown ")]
        for col in flow_cols:
            t.add_row(col, *("—" if r.get(col) is None else f"{r[col]:.3f}" for r in rows))
        t.add_row(
            "overloaded",
            *(
                "—" if r["overloaded"] is None else ("[red]yes[/]" if r["overloaded"] else "no")
                for r in rows
            ),
        )
        out_console.print(t)
        note = queueing_note(rows)
        if note:
            err_console.print(f"[yellow]warning: {note}[/]")
        out_console.print(f"runs in {out / 'runs.parquet'}; HTML: nandlab report {out}")
    bad = [r for r in rows if r["error"]]
    if bad:
        err_console.print(
            f"[red]{len(bad)} run(s) failed[/]; first: {bad[0]['scheme']}: {bad[0]['error']}"
        )
        raise SystemExit(EXIT_CHECK_FAILED)
