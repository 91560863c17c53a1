"""The result of one simulation run."""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import polars as pl

#: Report fields that every run report has (dotted paths); ``summary`` always contains them.
STABLE_KEYS: tuple[str, ...] = (
    "host.requests",
    "host.reads",
    "host.writes",
    "host.mean_us",
    "host.read_mean_us",
    "host.write_mean_us",
    "host.read_p99_us",
    "host.write_p99_us",
    "flash.reads",
    "flash.programs",
    "flash.erases",
    "gc.invocations",
    "gc.pages_moved",
    "write_amplification",
    "timing.wall_s",
    "timing.host_requests_per_s",
)

#: Markers of latency-percentile keys (``p50``, ``p90``, ``p99``, ``p99.9``/``p999``, ``max``).
_PERCENTILE_MARKERS = ("p50", "p90", "p99", "p999", "p99.9", "p99_9", "max")


def flatten(obj: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    """Flatten nested dicts to dotted keys; lists are kept as values."""
    out: dict[str, Any] = {}
    for k, v in obj.items():
        key = f"{prefix}.{k}" if prefix else str(k)
        if isinstance(v, Mapping):
            out.update(flatten(v, key))
        else:
            out[key] = v
    return out


def lookup(report: Mapping[str, Any], dotted: str, default: Any = None) -> Any:
    """Value at a dotted path of a nested report, or ``default``."""
    cur: Any = report
    for part in dotted.split("."):
        if isinstance(cur, Mapping) and part in cur:
            cur = cur[part]
        else:
            # keys may themselves contain dots (e.g. "p99.9")
            return _lookup_dotted_key(report, dotted, default)
    return cur


def _lookup_dotted_key(report: Mapping[str, Any], dotted: str, default: Any) -> Any:
    return flatten(report).get(dotted, default)


class RunResult:
    """One simulation's outcome.

    ``report`` is the core's full JSON report as a dict; ``summary`` a flat dict of the stable
    fields (:data:`STABLE_KEYS`) plus the host latency percentiles.
    """

    def __init__(
        self,
        report: dict[str, Any],
        *,
        trace: Path | None = None,
        config: str | None = None,
        scheme: str | None = None,
    ) -> None:
        self.report = report
        self.trace = trace
        self.config = config
        self.scheme = scheme

    @classmethod
    def from_json(cls, text: str, **kw: Any) -> RunResult:
        return cls(json.loads(text), **kw)

    def flat(self) -> dict[str, Any]:
        """The whole report flattened to dotted keys."""
        return flatten(self.report)

    @property
    def summary(self) -> dict[str, Any]:
        flat = self.flat()
        out = {k: flat.get(k) for k in STABLE_KEYS}
        for k, v in flat.items():
            if k.startswith("host.") and k not in out and _is_percentile_key(k):
                out[k] = v
        return out

    def to_frame(self) -> pl.DataFrame:
        """A one-row polars DataFrame of the flattened report (dotted column names).

        List-valued fields (e.g. distributions) become list columns.
        """
        import polars as pl

        flat = self.flat()
        return pl.DataFrame({k: [v] for k, v in flat.items()}, strict=False)

    def to_json(self, path: str | Path | None = None, *, indent: int | None = 2) -> str:
        """The report as JSON text; also written to ``path`` when given."""
        text = json.dumps(self.report, indent=indent, sort_keys=False)
        if path is not None:
            Path(path).write_text(text + "\n", encoding="utf-8")
        return text

    def __getitem__(self, dotted: str) -> Any:
        v = lookup(self.report, dotted, _MISSING)
        if v is _MISSING:
            raise KeyError(dotted)
        return v

    def __iter__(self) -> Iterator[str]:
        return iter(self.flat())

    def __repr__(self) -> str:
        s = self.summary
        parts = [
            f"requests={s.get('host.requests')}",
            f"mean_us={_fmt(s.get('host.mean_us'))}",
            f"WA={_fmt(s.get('write_amplification'))}",
            f"wall_s={_fmt(s.get('timing.wall_s'))}",
        ]
        where = f" trace={self.trace.name}" if self.trace is not None else ""
        return f"<RunResult{where} {' '.join(parts)}>"


_MISSING = object()


def _is_percentile_key(key: str) -> bool:
    rest = key.split(".", 1)[-1]
    return any(m in rest for m in _PERCENTILE_MARKERS)


def _fmt(v: Any) -> str:
    if isinstance(v, float):
        return f"{v:.4g}"
    return str(v)
