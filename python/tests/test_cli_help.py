"""`--help` works for every command and subcommand, and the command tree is as documented."""

from __future__ import annotations

import re

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
    ["trace", "list"],
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


# --------------------------------------------------------------------------- the help walker


def _command(path: list[str]) -> click.Command:
    cmd: click.Command = cli
    for name in path:
        assert isinstance(cmd, click.Group)
        cmd = cmd.commands[name]
    return cmd


def _first_paragraph(cmd: click.Command) -> str:
    text = (cmd.help or "").split("\f", 1)[0].strip()
    return " ".join(text.split("\n\n", 1)[0].split())


@pytest.mark.parametrize("path", COMMANDS, ids=lambda p: " ".join(p) or "nandlab")
def test_every_option_has_help_text(path: list[str]) -> None:
    cmd = _command(path)
    bare = [
        p.opts[0]
        for p in cmd.params
        if isinstance(p, click.Option) and not p.hidden and not (p.help or "").strip()
    ]
    assert not bare, f"nandlab {' '.join(path)}: options without help text: {bare}"
    assert _first_paragraph(cmd), f"nandlab {' '.join(path)} has no help text"


@pytest.mark.parametrize(
    "path", [p for p in COMMANDS if isinstance(_command(p), click.Group)], ids=" ".join
)
def test_command_lists_show_whole_summaries(runner, path: list[str]) -> None:
    """A group's list of commands shows each command's whole first paragraph: not cut at the
    first full stop ("Guo ch."), not shortened with "..."."""
    res = runner.invoke(cli, [*path, "--help"], terminal_width=100)
    assert res.exit_code == 0, res.output
    # click wraps after a hyphen ("file-" / "level"): join such words again
    listing = re.sub(r"-\s+", "-", " ".join(res.output.split("Commands:", 1)[1].split()))
    group = _command(path)
    assert isinstance(group, click.Group)
    for name, sub in group.commands.items():
        whole = re.sub(r"-\s+", "-", _first_paragraph(sub))
        assert f"{name} {whole}" in listing, (
            f"nandlab {' '.join(path)} --help cuts the summary of `{name}`: want {whole!r}"
        )
    assert "..." not in listing


def _byte_options() -> list[tuple[str, click.Option]]:
    from nandlab.cli_common import ByteSize

    out = []
    for path in COMMANDS:
        for p in _command(path).params:
            if isinstance(p, click.Option) and isinstance(p.type, ByteSize) and p.default:
                out.append((" ".join([*path, p.opts[0]]), p))
    return out


@pytest.mark.parametrize("name,opt", _byte_options(), ids=[n for n, _ in _byte_options()])
def test_sizes_show_in_binary_units(runner, name: str, opt: click.Option) -> None:
    """A size option's default reads "16GiB", not 17179869184."""
    assert isinstance(opt.default, str) and not opt.default.isdigit(), (name, opt.default)
    path = name.split()[:-1]
    res = runner.invoke(cli, [*path, "--help"], terminal_width=200)
    assert f"default: {opt.default}" in res.output, res.output
