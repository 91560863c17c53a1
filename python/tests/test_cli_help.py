"""`--help` works for every command and subcommand, and the command tree is as documented."""

from __future__ import annotations

import click
import pytest
from _helpers import run_cli

from nandlab.cli import cli

COMMANDS = [
    [],
    ["run"],
    ["bench"],
    ["trace"],
    ["trace", "stats"],
    ["trace", "convert"],
    ["trace", "generate"],
    ["rber"],
    ["ecc"],
    ["reproduce"],
    ["reproduce", "xia-diffecc"],
    ["reproduce", "ida"],
    ["reproduce", "efm"],
    ["sweep"],
    ["compare"],
    ["report"],
    ["reproduce", "dpa"],
    ["reproduce", "dmm"],
    ["reproduce", "flexlevel"],
    ["reproduce", "flexecc"],
    ["reproduce", "all"],
    ["dpa"],
    ["dpa", "analyze"],
    ["osd"],
    ["osd", "run"],
    ["osd", "crash-test"],
    ["osd", "stats"],
    ["characterize"],
]


def _walk(group: click.Group, prefix: list[str]) -> list[list[str]]:
    out = [prefix]
    for name, cmd in group.commands.items():
        if isinstance(cmd, click.Group):
            out += _walk(cmd, [*prefix, name])
        else:
            out.append([*prefix, name])
    return out


def test_every_command_is_listed_here() -> None:
    assert sorted(map(tuple, _walk(cli, []))) == sorted(map(tuple, COMMANDS))


@pytest.mark.parametrize("path", COMMANDS, ids=lambda p: " ".join(p) or "nandlab")
def test_help(runner, path: list[str]) -> None:
    res = runner.invoke(cli, [*path, "--help"])
    assert res.exit_code == 0, res.output
    assert "Usage:" in res.output
    assert "--help" in res.output


def test_run_help_lists_options(runner) -> None:
    res = runner.invoke(cli, ["run", "--help"])
    for opt in ("--config", "--trace", "--format", "--device", "--scheme", "--set", "--json"):
        assert opt in res.output


def test_version(runner) -> None:
    import nandlab

    res = runner.invoke(cli, ["--version"])
    assert res.exit_code == 0
    assert nandlab.__version__ in res.output


def test_console_entry_point_help() -> None:
    res = run_cli("--help")
    assert res.returncode == 0
    assert "trace" in res.stdout and "run" in res.stdout and "bench" in res.stdout
