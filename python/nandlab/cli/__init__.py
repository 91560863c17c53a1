"""The ``nandlab`` command line (click + rich): this package assembles the command group.

Where each command is defined:

========================================  ==================================================
``nandlab run``                           :mod:`nandlab.cli.run`
``nandlab trace stats|list|convert|…``    :mod:`nandlab.cli.trace`
``nandlab bench``                         :mod:`nandlab.cli.bench`
``nandlab rber``, ``nandlab ecc``         :mod:`nandlab.cli.reliability`
``nandlab sweep``                         :mod:`nandlab.cli.sweep` (the grid: :mod:`nandlab.grid`)
``nandlab compare``                       :mod:`nandlab.cli.compare` (:mod:`nandlab.comparison`)
``nandlab report``                        :mod:`nandlab.cli.report` (:mod:`nandlab.report`)
``nandlab characterize``                  :mod:`nandlab.cli.characterize`
                                          (:mod:`nandlab.characterize`)
``nandlab reproduce <paper>``             :mod:`nandlab.cli.reproduce` (a module per paper:
                                          :mod:`nandlab.reproduce`)
``nandlab dpa analyze``                   :mod:`nandlab.dpa.cli`
``nandlab osd run|stats|crash-test``      :mod:`nandlab.osd.cli`
========================================  ==================================================

What they share (error handling, options, byte sizes, consoles) is in :mod:`nandlab.cli_common`.
Errors from the core (``TraceError``, ``ConfigError``, ``SimError``) and missing or unreadable
files print one red line on stderr and exit with status 2; no traceback.
"""

from __future__ import annotations

import click

from nandlab import _core
from nandlab.cli.bench import bench
from nandlab.cli.characterize import characterize_command
from nandlab.cli.compare import compare_command
from nandlab.cli.reliability import ecc, rber
from nandlab.cli.report import report_command
from nandlab.cli.reproduce import reproduce
from nandlab.cli.run import run
from nandlab.cli.sweep import sweep_command
from nandlab.cli.trace import trace
from nandlab.cli_common import CliGroup, short_help
from nandlab.dpa.cli import dpa
from nandlab.osd.cli import osd


@click.group(cls=CliGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(_core.__version__, "--version", "-V", prog_name="nandlab")
def cli() -> None:
    """nandlab: trace-driven, reliability-aware NAND-flash SSD simulator.

    Run `nandlab run` to replay the bundled default trace on the default configuration.
    """


for _command in (
    run,
    trace,
    bench,
    rber,
    ecc,
    reproduce,
    sweep_command,
    compare_command,
    report_command,
    dpa,
    osd,
    characterize_command,
):
    cli.add_command(_command)


def _whole_summaries(group: click.Group) -> None:
    """Every command listed by a group shows its whole first paragraph (click cuts it at the
    first full stop, "Guo ch.", or at 45 characters with "...")."""
    for cmd in group.commands.values():
        if not cmd.short_help:
            cmd.short_help = short_help(cmd)
        if isinstance(cmd, click.Group):
            _whole_summaries(cmd)


_whole_summaries(cli)


def main(argv: list[str] | None = None) -> None:
    """Console-script entry point."""
    cli.main(args=argv, prog_name="nandlab")


__all__ = ["cli", "main"]
