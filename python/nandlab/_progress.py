"""A rich progress bar fed by the core's ``(done, total)`` callback."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager

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


@contextmanager
def progress_bar(
    description: str, console: Console | None = None
) -> Iterator[Callable[[int, int], None]]:
    """Yield a ``(done, total)`` callback that drives a transient progress bar on stderr."""
    console = console or Console(stderr=True)
    with Progress(
        SpinnerColumn(),
        TextColumn("{task.description}"),
        BarColumn(),
        TaskProgressColumn(),
        MofNCompleteColumn(),
        TextColumn("req"),
        TimeElapsedColumn(),
        TimeRemainingColumn(),
        console=console,
        transient=True,
    ) as prog:
        task = prog.add_task(description, total=None)

        def update(done: int, total: int) -> None:
            prog.update(task, completed=done, total=total if total > 0 else None)

        yield update
