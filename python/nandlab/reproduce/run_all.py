"""``nandlab reproduce all``: every reproduction, then one HTML report of them all.

Runs each paper's reproduction (:data:`PAPERS`, in this order) into ``OUT/<paper>`` with the
same ``--quick`` / ``--traces`` / ``-j`` (each resumes what it finished before, so a second run
takes seconds), then writes

* ``OUT/report.html`` -- one self-contained page (:func:`nandlab.report.build_all_report`): a
  first table with one row per paper headline (the paper's value with its table or figure,
  ours per trace and the mean, the load level, the verdict) and a section per paper;
* ``OUT/headline.json`` and ``OUT/headline.md`` -- those rows as data and as the Markdown table
  of ``docs/reproductions.md``;
* ``OUT/all.json`` -- what ran: each paper's exit status and time.

Exit status (``docs/reproductions.md``, "Exit status"): 0 when every reproduction ran and its
sanity checks passed, 1 when one of them failed (the others still run and the report is still
written), 2 on a user error.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import click

from nandlab.reproduce.common import processes_option, progress_option, traces_option
from nandlab.reproduce.fmt import EXIT_CHECK_FAILED, EXIT_USER_ERROR, err_console
from nandlab.reproduce.headline import PAPERS, headline_of, markdown

INDEX_FILE = "all.json"
HEADLINE_JSON = "headline.json"
HEADLINE_MD = "headline.md"


@click.command("all")
@click.pass_context
@click.option("--quick", is_flag=True, help="Every reproduction's --quick (minutes).")
@traces_option(
    "Directory of traces for every reproduction (repeatable; default: the "
    "bundled samples and the workspace's captured traces)."
)
@click.option(
    "--out",
    type=click.Path(file_okay=False, path_type=Path),
    default=Path("nandlab-out") / "all",
    show_default=True,
    help="One subdirectory per paper, report.html and headline.json/.md.",
)
@processes_option()
@progress_option()
@click.option(
    "--only",
    metavar="PAPER[,PAPER...]",
    default=None,
    help=f"Run only these reproductions ({', '.join(PAPERS)}); the report has the others' "
    "last results when their directories hold them.",
)
def run_all(
    ctx: click.Context,
    quick: bool,
    traces: tuple[Path, ...],
    out: Path,
    processes: int | None,
    progress: bool | None,
    only: str | None,
) -> None:
    """Every reproduction, then one HTML report: each paper's headline next to ours.

    Runs xia-diffecc, ida, efm, flexecc, flexlevel, dpa and dmm into OUT/<paper> (resumable:
    a second run reuses every finished run), then writes OUT/report.html (a first table with
    one row per paper headline and a section per paper), OUT/headline.json and
    OUT/headline.md. Exits 1 when a reproduction failed (a run or a sanity check), after the
    others ran and the report was written.
    """
    group = ctx.parent.command if ctx.parent is not None else None
    if not isinstance(group, click.Group):
        raise click.UsageError("run as `nandlab reproduce all`")
    chosen = list(PAPERS)
    if only:
        chosen = [p.strip() for p in only.split(",") if p.strip()]
        bad = [p for p in chosen if p not in PAPERS]
        if bad:
            raise click.BadParameter(f"{', '.join(bad)}: not one of {', '.join(PAPERS)}")
    out.mkdir(parents=True, exist_ok=True)
    status: dict[str, dict[str, Any]] = {}
    t_all = time.perf_counter()
    for paper in chosen:
        args = ["--out", str(out / paper)] + ["--quick"] * quick
        for d in traces:
            args += ["--traces", str(d)]
        if paper != "dmm" and processes is not None:
            args += ["--processes", str(processes)]
        if progress is not None:
            args.append("--progress" if progress else "--no-progress")
        err_console.print(f"[bold]reproduce {paper}[/] -> {out / paper}")
        t0 = time.perf_counter()
        code = 0
        try:
            group.commands[paper].main(args, prog_name=f"nandlab reproduce {paper}",
                                           standalone_mode=False)  # fmt: skip
        except click.exceptions.Exit as e:
            code = e.exit_code
        except SystemExit as e:
            code = e.code if isinstance(e.code, int) else 1
        except click.ClickException as e:
            e.show()
            code = EXIT_USER_ERROR
        except Exception as e:  # one paper's failure must not stop the others
            err_console.print(f"[red]reproduce {paper} failed:[/] {type(e).__name__}: {e}")
            code = EXIT_CHECK_FAILED
        status[paper] = {"exit_status": code, "wall_s": time.perf_counter() - t0}
    doc = {"papers": list(PAPERS), "ran": status, "quick": quick,
           "wall_s": time.perf_counter() - t_all}  # fmt: skip
    (out / INDEX_FILE).write_text(json.dumps(doc, indent=1) + "\n", encoding="utf-8")
    write_headline(out)
    from nandlab.report import build_all_report

    rep = build_all_report(out)
    err_console.print(
        f"wrote {rep.html} ({rep.size_bytes / 1024:,.0f} KiB) and {out / HEADLINE_MD}; "
        + ", ".join(f"{p} exit {s['exit_status']} ({s['wall_s']:.0f} s)" for p, s in status.items())
    )
    if any(s["exit_status"] for s in status.values()):
        raise click.exceptions.Exit(EXIT_CHECK_FAILED)


def write_headline(out: Path) -> list[dict[str, Any]]:
    """``OUT/headline.json`` and ``OUT/headline.md`` from the papers' result files."""
    rows = headline_of(out)
    (out / HEADLINE_JSON).write_text(json.dumps(rows, indent=1) + "\n", encoding="utf-8")
    (out / HEADLINE_MD).write_text(markdown(rows), encoding="utf-8")
    return rows
