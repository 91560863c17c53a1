"""The result JSON of a reproduction (and of a sweep): every run with its load and report, the
tables and the paper's own entries, written atomically (a leaf of the package: it imports only
the load methodology)."""

from __future__ import annotations

import json
import math
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from nandlab.reproduce.load import load_info

if TYPE_CHECKING:
    import polars as pl


def _clean(v: Any) -> Any:
    """JSON-safe: NaN/inf become null, Paths strings, tuples lists."""
    if isinstance(v, float) and not math.isfinite(v):
        return None
    if isinstance(v, Mapping):
        return {str(k): _clean(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [_clean(x) for x in v]
    if isinstance(v, Path):
        return str(v)
    return v


def runs_json(df: pl.DataFrame) -> list[dict[str, Any]]:
    """One object per run: trace, scheme, label, params, its load (die utilisation, offered
    load, queue-wait share, ``overloaded``: :func:`nandlab.reproduce.load.load_info`), full
    report (and error, key)."""
    out = []
    for r in df.iter_rows(named=True):
        report = json.loads(r["report"]) if r["report"] else None
        out.append(
            {
                "trace": r["trace"],
                "scheme": r["scheme"],
                "label": r["label"],
                "params": json.loads(r["params"]) if r["params"] else {},
                "load": load_info(report),
                "report": report,
                "error": r["error"],
                "key": r["key"],
            }
        )
    return out


def emit(target: str, obj: Any) -> None:
    """``obj`` (made JSON-safe) as indented JSON to ``target``: ``-`` is stdout, else a file
    written atomically (a reader never sees half of it)."""
    text = json.dumps(_clean(obj), indent=1, default=str)
    if target == "-":
        click.echo(text)
        return
    p = Path(target)
    if p.parent != Path():
        p.parent.mkdir(parents=True, exist_ok=True)
    tmp = p.with_name(f".{p.name}.tmp-{os.getpid()}")
    tmp.write_text(text + "\n", encoding="utf-8")
    os.replace(tmp, p)


def write_json(
    target: str | None,
    paper: str,
    runs: pl.DataFrame,
    table: Sequence[Mapping[str, Any]],
    **extra: Any,
) -> dict[str, Any] | None:
    """Write ``{"paper", "runs", "table", **extra}`` to ``target`` (``-``: stdout)."""
    if target is None:
        return None
    obj: dict[str, Any] = {"paper": paper, "runs": runs_json(runs), "table": list(table)}
    obj.update(extra)
    obj = _clean(obj)
    emit(target, obj)
    return obj


def write_result(target: str | None, doc: Mapping[str, Any], runs: pl.DataFrame | None) -> None:
    """Write a reproduction's result ``doc`` to ``target`` (``-``: stdout) with ``runs``, every
    run with its load and full report (:func:`runs_json`), as its last entry."""
    if target is not None:
        emit(target, {**doc, "runs": runs_json(runs) if runs is not None else []})
