"""The consoles every command prints through (rich), so that tables read the same everywhere.

* On a terminal, tables fit the terminal; a cell that does not fit wraps onto a second line
  (``overflow="fold"``) instead of being cut with an ellipsis: a number is never truncated.
* Redirected (a file, a pipe, a CI log) there is no terminal width to fit: output is plain text
  (no colour or style codes) at full width, every table as wide as its content.
"""

from __future__ import annotations

from typing import Any

from rich.console import Console
from rich.table import Table

#: Width given to redirected output: wide enough that no table is squeezed.
UNLIMITED_WIDTH = 100_000


class _Console(Console):
    """A rich console whose tables fold cells rather than cut them. With ``title_line`` a
    table's title is printed as a line of its own (rich would wrap it to the table's width)."""

    title_line = False

    def print(self, *objects: Any, **kw: Any) -> None:
        for o in objects:
            if isinstance(o, Table):
                for c in o.columns:
                    if c.overflow == "ellipsis":
                        c.overflow = "fold"
                if self.title_line and o.title:
                    title, o.title = o.title, None
                    super().print(title)
            super().print(o, **kw)
        if not objects:
            super().print(**kw)


def make_console(*, stderr: bool = False) -> Console:
    """A console on stdout (or stderr): terminal-sized on a terminal, else plain and unlimited
    in width."""
    probe = Console(stderr=stderr)
    if probe.is_terminal:
        return _Console(stderr=stderr, highlight=False)
    c = _Console(
        stderr=stderr,
        highlight=False,
        width=UNLIMITED_WIDTH,
        no_color=True,
        color_system=None,
        emoji=False,
        soft_wrap=False,
    )
    c.title_line = True
    return c
