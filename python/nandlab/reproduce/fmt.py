"""Consoles, exit statuses and number formatting of every ``nandlab reproduce`` command (a leaf
module: it imports nothing of the package but the consoles)."""

from __future__ import annotations

import math
from typing import Any

from nandlab._console import make_console

#: Tables go to stdout; when it is not a terminal (a log, CI) they are plain text at full width
#: (:mod:`nandlab._console`).
out_console = make_console()
err_console = make_console(stderr=True)

#: Exit status when the reproduction ran but a check failed (or runs failed).
EXIT_CHECK_FAILED = 1
#: Exit status of a user error (as everywhere in the CLI): bad input, missing dependency.
EXIT_USER_ERROR = 2
#: The result JSON a reproduction writes into its out directory when no --json is given.
RESULT_FILE = "result.json"


def plural(n: int, noun: str, nouns: str | None = None) -> str:
    """``1 trace``, ``2 traces`` (``nouns``: an irregular plural)."""
    return f"{n:,} {noun if n == 1 else (nouns or noun + 's')}"


KIB = 1 << 10
MIB = 1 << 20


def size_label(n: int) -> str:
    """A size in bytes as ``4 KiB``, ``2 MiB``."""
    return f"{n // MIB} MiB" if n >= MIB and n % MIB == 0 else f"{n // KIB} KiB"


def fmt_num(v: Any, digits: int = 3) -> str:
    """A table cell: ``—`` for missing, thousands separators, ``digits`` significant-ish."""
    if v is None or (isinstance(v, float) and not math.isfinite(v)):
        return "—"
    if isinstance(v, bool):
        return str(v).lower()
    if isinstance(v, int):
        return f"{v:,}"
    if isinstance(v, float):
        if abs(v) >= 1000:
            return f"{v:,.0f}"
        if abs(v) >= 100:
            return f"{v:.1f}"
        return f"{v:.{digits}f}" if abs(v) < 10 else f"{v:.2f}"
    return str(v)


def fmt_pct(v: float | None, signed: bool = True) -> str:
    """A relative change as ``-12.3 %``; ``—`` when undefined."""
    if v is None or not math.isfinite(v):
        return "—"
    return f"{v * 100:+.1f} %" if signed else f"{v * 100:.1f} %"
