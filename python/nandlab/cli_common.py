"""What every ``nandlab`` command shares: the error handling of the command group, the shared
options (``--json``, ``--format``, ``--device``, ``--allow-unterminated``), byte sizes, the
consoles and number formatting.

Errors from the core (``TraceError``, ``ConfigError``, ``SimError``) and missing or unreadable
files print one red line on stderr and exit with status 2; no traceback.

This module imports no command module. It lives beside the :mod:`nandlab.cli` package, not in
it, because command modules outside that package use it too (``nandlab.osd.cli``): importing a
module inside ``nandlab/cli/`` first runs ``nandlab/cli/__init__.py``, which imports every
command module, ``nandlab.osd.cli`` included, to assemble the command group.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import click

from nandlab._console import make_console
from nandlab._core import ConfigError, SimError, TraceError
from nandlab._interrupt import kept, on_interrupt

EXIT_USER_ERROR = 2
TRACE_FORMATS = [
    "msr",
    "spc",
    "disksim",
    "mqsim",
    "blkparse",
    "canonical",
    "systor",
    "tencent",
    "vscsi",
]


out_console = make_console()
err_console = make_console(stderr=True)


# --------------------------------------------------------------------------- errors


def one_line(msg: str) -> str:
    return " ".join(part.strip() for part in str(msg).splitlines() if part.strip())


def _keeps_lines(msg: str) -> bool:
    """A TOML syntax error: its quoted line and the caret under the column only make sense
    on their own lines."""
    return "TOML parse error" in msg and "^" in msg


def error_message(e: BaseException) -> str:
    if isinstance(e, (TraceError, ConfigError, SimError)):
        msg = str(e).rstrip() if _keeps_lines(str(e)) else one_line(str(e))
        return f"{type(e).__name__}: {msg}"
    if isinstance(e, FileNotFoundError) and e.filename is None:
        return one_line(str(e))
    if isinstance(e, OSError) and e.filename is not None:
        return f"{e.filename}: {e.strerror or e}"
    return one_line(str(e))


#: Exit status after Ctrl-C (128 + SIGINT, as shells report it).
EXIT_INTERRUPTED = 130

_INTERRUPTED_PATH: list[str] = []


def short_help(cmd: click.Command) -> str:
    """A command's first paragraph, whole: click's default stops at the first full stop,
    which cuts "BCH decode latency (FlexECC eq. 4-5)" at "eq."."""
    if cmd.short_help:
        return cmd.short_help
    text = (cmd.help or "").split("\f", 1)[0].strip()
    return " ".join(text.split("\n\n", 1)[0].split())


class CliGroup(click.Group):
    """A click group that turns nandlab's user errors into one line and exit status 2, Ctrl-C
    into one line and status 130, and lists its commands with their whole first paragraph."""

    def invoke(self, ctx: click.Context) -> Any:
        import warnings

        from nandlab.experiment import FailedRunsWarning

        try:
            with warnings.catch_warnings():
                # the commands report failed runs themselves, in their own words
                warnings.simplefilter("ignore", FailedRunsWarning)
                return super().invoke(ctx)
        except (TraceError, ConfigError, SimError, OSError) as e:
            click.secho(f"error: {error_message(e)}", fg="red", err=True)
            raise click.exceptions.Exit(EXIT_USER_ERROR) from None
        except KeyboardInterrupt:
            _INTERRUPTED_PATH.insert(0, ctx.invoked_subcommand or "")
            if ctx.parent is not None:  # the outermost group reports it
                raise
            what = " ".join(["nandlab", *filter(None, _INTERRUPTED_PATH)])
            click.secho(f"interrupted: {what}; {kept()}", fg="yellow", err=True)
            raise click.exceptions.Exit(EXIT_INTERRUPTED) from None

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        rows = []
        for name in self.list_commands(ctx):
            cmd = self.get_command(ctx, name)
            if cmd is None or cmd.hidden:
                continue
            rows.append((name, short_help(cmd)))
        if rows:
            with formatter.section("Commands"):
                formatter.write_dl(rows)


T = TypeVar("T")


def interruptible(fn: Callable[..., T], *args: Any, partial: Path | None = None) -> T:
    """Run a long core call (which releases the GIL) on a worker thread so that Ctrl-C stops
    the command at once instead of when the call ends (issue 20: `trace convert` of 45 M lines
    ignored Ctrl-C for 111 s). On Ctrl-C the partial output file, if any, is removed and the
    interrupt goes on to the CLI's handler (one line, exit 130); the abandoned call ends with
    the process."""
    import threading

    box: dict[str, Any] = {}

    def work() -> None:
        try:
            box["value"] = fn(*args)
        except BaseException as e:  # re-raised in the caller's thread
            box["error"] = e

    t = threading.Thread(target=work, name="nandlab-core-call", daemon=True)
    if partial is not None:
        on_interrupt(f"the partial {partial} was removed")
    t.start()
    try:
        while t.is_alive():
            t.join(0.1)
    except KeyboardInterrupt:
        if partial is not None:
            with contextlib.suppress(OSError):
                partial.unlink()
        raise
    if "error" in box:
        raise box["error"]
    return box["value"]


def require_file(path: Path, what: str) -> Path:
    if not path.exists():
        raise FileNotFoundError(f"{what} not found: {path}")
    if not path.is_file():
        raise FileNotFoundError(f"{what} is not a file: {path}")
    return path


def write_json_out(target: str | None, obj: Any) -> None:
    """Write ``obj`` as JSON to ``target`` (a path, or ``-`` for stdout)."""
    if target is None:
        return
    text = json.dumps(obj, indent=2)
    if target == "-":
        click.echo(text)
    else:
        # written whole or not at all: an interrupt never leaves a partial file behind
        p = Path(target)
        tmp = p.with_name(f".{p.name}.tmp-{os.getpid()}")
        try:
            tmp.write_text(text + "\n", encoding="utf-8")
            os.replace(tmp, p)
        finally:
            tmp.unlink(missing_ok=True)


# --------------------------------------------------------------------------- options

json_option = click.option(
    "--json",
    "json_out",
    metavar="OUT",
    default=None,
    help="Also write machine-readable JSON to OUT ('-' for stdout, which hides the table).",
)
format_option = click.option(
    "--format",
    "trace_format",
    type=click.Choice(TRACE_FORMATS, case_sensitive=False),
    default=None,
    help="Trace format (default: sniffed from the file's first lines).",
)
device_option = click.option(
    "--device",
    type=click.IntRange(min=0),
    default=None,
    help="Keep only this device/ASU of a multi-device trace (default: merge all).",
)
unterminated_option = click.option(
    "--allow-unterminated",
    is_flag=True,
    help="Read a last line without a line ending as written even when its last field is a "
    "number that may have been cut short with the file (default: an error).",
)


def warn_unterminated(trace: Path, counters: dict[str, Any]) -> None:
    """One line on stderr when the trace's last line had no line ending (the reader counted
    it in ``unterminated_last_line``): the file may have been cut short."""
    if counters.get("unterminated_last_line"):
        click.secho(
            f"warning: {trace}: the last line (line {counters.get('lines_read', '?')}) has no "
            "line ending: the file may have been cut short; it was read as written "
            "(trace.counters.unterminated_last_line = 1)",
            fg="yellow",
            err=True,
        )


_SIZE_RE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([KMGTP]i?B?|B)?\s*$", re.IGNORECASE)
_SIZE_MULT = {"": 1, "B": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40, "P": 1 << 50}


class ByteSize(click.ParamType):
    """An integer byte count with an optional binary suffix: 4096, 16GiB, 64K."""

    name = "bytes"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> int:
        if isinstance(value, int):
            return value
        m = _SIZE_RE.match(str(value))
        if not m:
            self.fail(f"{value!r} is not a byte size (e.g. 4096, 64KiB, 16GiB)", param, ctx)
        unit = (m.group(2) or "").upper()[:1]
        n = float(m.group(1)) * _SIZE_MULT[unit]
        if n != int(n) or n <= 0:
            self.fail(f"{value!r} must be a positive whole number of bytes", param, ctx)
        return int(n)


# --------------------------------------------------------------------------- formatting


def fmt_value(v: Any, digits: int = 4) -> str:
    if v is None:
        return "—"
    if isinstance(v, bool):
        return str(v).lower()
    if isinstance(v, int):
        return f"{v:,}"
    if isinstance(v, float):
        if v != 0 and (abs(v) >= 1e6 or abs(v) < 1e-3):
            return f"{v:.{digits}g}"
        return f"{v:,.{digits - 1}f}" if abs(v) < 1000 else f"{v:,.1f}"
    if isinstance(v, list):
        return f"[{len(v)} values]" if len(v) > 8 else str(v)
    return str(v)
