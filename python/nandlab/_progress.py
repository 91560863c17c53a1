"""Progress reporting fed by the core's ``(done, total)`` callback.

On a terminal: a transient rich progress bar. Elsewhere (a CI log, a file) a bar would print
nothing useful, so ``--progress`` there prints one plain line every few seconds
(:data:`LINE_INTERVAL_S`) and one at the end.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    SpinnerColumn,
    TaskProgressColumn,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)

#: Seconds between two progress lines when the console is not a terminal
#: (``$NANDLAB_PROGRESS_INTERVAL_S`` overrides it).
LINE_INTERVAL_S = 5.0


def line_interval_s() -> float:
    """:data:`LINE_INTERVAL_S`, or ``$NANDLAB_PROGRESS_INTERVAL_S`` when set to a number > 0."""
    try:
        v = float(os.environ.get("NANDLAB_PROGRESS_INTERVAL_S", ""))
    except ValueError:
        return LINE_INTERVAL_S
    return v if v > 0 else LINE_INTERVAL_S


class LineProgress:
    """Plain progress lines (``what: 1,200 / 3,000 requests (40 %), 6 s, ETA 9 s``) at most
    every ``interval_s`` seconds, for logs."""

    def __init__(
        self, console: Console, what: str, unit: str, interval_s: float | None = None
    ) -> None:
        self.console = console
        self.what = what
        self.unit = unit
        self.interval_s = interval_s if interval_s is not None else line_interval_s()
        self.t0 = time.monotonic()
        self.last = self.t0
        self.printed: tuple[int, int] | None = None

    def line(self, done: int, total: int, extra: str = "") -> str:
        el = time.monotonic() - self.t0
        s = f"{self.what}: {done:,}"
        if total > 0:
            s += f" / {total:,} {self.unit} ({done / total:.0%})"
        else:
            s += f" {self.unit}"
        s += f", {el:.0f} s"
        if total > 0 and 0 < done < total:
            s += f", ETA {el / done * (total - done):.0f} s"
        return s + (f"; {extra}" if extra else "")

    def update(self, done: int, total: int, extra: str = "", *, force: bool = False) -> None:
        now = time.monotonic()
        if not force and now - self.last < self.interval_s:
            return
        if force and self.printed == (done, total):
            return
        self.last = now
        self.printed = (done, total)
        self.console.print(self.line(done, total, extra), markup=False, highlight=False)


class RunProgress:
    """The callbacks of one run: ``self(done, total)`` for the replay (host requests) and
    ``self.setup(stage, done, total)`` for the set-up before it (``"prepass"``: requests read;
    ``"precondition"``: page writes of at most ``total``)."""

    def __init__(self, update: Callable[[str, int, int], None]) -> None:
        self._update = update

    def __call__(self, done: int, total: int) -> None:
        self._update("replay", done, total)

    def setup(self, stage: str, done: int, total: int) -> None:
        self._update(stage, done, total)


_STAGE_TEXT = {
    "prepass": ("reading the trace (sizing pass)", "requests"),
    "precondition": ("preconditioning (untimed)", "page writes"),
}


@contextmanager
def progress_bar(description: str, console: Console | None = None) -> Iterator[RunProgress]:
    """Yield the callbacks of a run (:class:`RunProgress`): a transient progress bar on a
    terminal, else :class:`LineProgress` lines; the set-up stages get their own line or bar."""
    console = console or Console(stderr=True)
    if not console.is_terminal:
        lines: dict[str, LineProgress] = {}
        state: dict[str, tuple[int, int]] = {}

        def line(stage: str, done: int, total: int) -> None:
            if stage not in lines:
                for st, lp in lines.items():  # a stage ends when the next starts
                    lp.update(*state[st], force=True)
                what, unit = _STAGE_TEXT.get(stage, (description, "requests"))
                lines[stage] = LineProgress(console, what, unit)
            state[stage] = (done, total)
            lines[stage].update(done, total)

        yield RunProgress(line)
        for st, lp in lines.items():
            lp.update(*state[st], force=True)
        return
    with Progress(
        SpinnerColumn(),
        TextColumn("{task.description}"),
        BarColumn(),
        TaskProgressColumn(),
        MofNCompleteColumn(),
        TextColumn("{task.fields[unit]}"),
        TimeElapsedColumn(),
        TimeRemainingColumn(),
        console=console,
        transient=True,
    ) as prog:
        tasks: dict[str, Any] = {}

        def update(stage: str, done: int, total: int) -> None:
            if stage not in tasks:
                what, unit = _STAGE_TEXT.get(stage, (description, "req"))
                tasks[stage] = prog.add_task(what, total=None, unit=unit)
            prog.update(tasks[stage], completed=done, total=total if total > 0 else None)

        yield RunProgress(update)
