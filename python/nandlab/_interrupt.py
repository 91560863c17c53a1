"""What a command keeps when Ctrl-C stops it: the CLI prints it in its one-line message
(``interrupted: nandlab sweep; finished runs stay in OUT/runs.parquet; ...``) and exits 130."""

from __future__ import annotations

_KEPT: list[str] = []


def on_interrupt(kept: str) -> None:
    """Say what the running command keeps if it is interrupted now."""
    _KEPT[:] = [kept]


def kept() -> str:
    """What the interrupted command kept (default: nothing)."""
    return _KEPT[0] if _KEPT else "nothing was written"
