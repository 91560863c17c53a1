"""``nandlab.simulate``: one run of the Rust core from Python."""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from nandlab import _core
from nandlab.config import ConfigSpec, config_text, format_overrides
from nandlab.data import default_trace, resolve_trace
from nandlab.flows import add_slowdowns
from nandlab.load import load_block
from nandlab.result import RunResult

ProgressCallback = Callable[[int, int], None]


def trace_options_json(
    trace_format: str | None = None,
    device: int | None = None,
    **extra: Any,
) -> str:
    """Trace options for the core as JSON (missing keys take the core's defaults)."""
    opts: dict[str, Any] = {}
    if trace_format is not None:
        opts["format"] = trace_format.lower()
    if device is not None:
        opts["device"] = int(device)
    opts.update({k: v for k, v in extra.items() if v is not None})
    return json.dumps(opts)


def simulate(
    config: ConfigSpec = "default",
    trace: str | Path | Sequence[str | Path] | None = None,
    *,
    scheme: str | None = None,
    overrides: Mapping[str, object] | list[str] | None = None,
    trace_format: str | None = None,
    device: int | None = None,
    allow_unterminated: bool = False,
    progress: bool | ProgressCallback = False,
    slowdown: bool = True,
) -> RunResult:
    """Replay ``trace`` on the SSD described by ``config`` and return the result.

    ``config`` is a preset name (``"default"``), a TOML file, or a nested dict.
    ``trace`` is a file or a bundled trace's name (``"pgbench_rw_slice"``, see
    ``nandlab trace list``); it defaults to the bundled :func:`nandlab.default_trace`.
    A list of two or more traces (or a config with ``[[host.flows]]``) replays them as
    concurrent flows, each on its own queue (docs/multi-tenant.md): the report's ``flows``
    holds each flow's ``host`` block and, with ``slowdown=True`` (the default), its
    ``slowdown`` against a run of it alone on the same device (cached, :mod:`nandlab.flows`)
    and the run's ``fairness``.
    ``overrides`` are dotted keys (``{"device.channels": 4}`` or ``["device.channels=4"]``)
    applied before validation.
    ``progress=True`` shows a progress bar on stderr (one line every few seconds when stderr
    is not a terminal); a callable gets ``(done, total)`` host
    requests (``total`` is 0 when unknown) at most every 100 ms. An exception raised by the
    callback, or Ctrl-C, abandons the run and is re-raised.

    The trace is read strictly (docs/traces.md): a last line without a line ending whose last
    field is a number that may have been cut short is an error unless
    ``allow_unterminated=True``; either way such a line is counted in
    ``report["trace"]["counters"]["unterminated_last_line"]``.

    The report carries a ``load`` block (:mod:`nandlab.load`): die utilisation, offered die
    load, queue-wait share and ``overloaded`` -- when true, the latencies measure queueing.

    Raises :class:`nandlab.ConfigError`, :class:`nandlab.TraceError` or
    :class:`nandlab.SimError`; ``FileNotFoundError`` for a missing trace (naming the bundled ones).
    """
    text, cfg_path = config_text(config)
    flow_traces: list[str] = []
    if trace is not None and not isinstance(trace, (str, Path)):
        flow_traces = [str(resolve_trace(t)) for t in trace]
        trace_path = Path(flow_traces[0]) if flow_traces else default_trace()
    else:
        trace_path = resolve_trace(trace) if trace is not None else default_trace()
    topts = trace_options_json(trace_format, device, allow_unterminated=allow_unterminated or None)
    ov = format_overrides(overrides)
    args = (
        text,
        str(cfg_path) if cfg_path is not None else None,
        ov,
        scheme,
        str(trace_path),
        topts,
    )
    label_trace = trace_path.name if len(flow_traces) < 2 else f"{len(flow_traces)} flows"
    if progress is True:
        from nandlab._console import make_console
        from nandlab._progress import progress_bar

        with progress_bar(f"replaying {label_trace}", make_console(stderr=True)) as cb:
            out = _core.run(*args, cb, cb.setup, flow_traces=flow_traces)
    elif callable(progress):
        out = _core.run(*args, progress, flow_traces=flow_traces)
    else:
        out = _core.run(*args, None, flow_traces=flow_traces)
    label = (
        str(cfg_path)
        if cfg_path is not None
        else ("<dict>" if isinstance(config, Mapping) else str(config))
    )
    res = RunResult.from_json(out, trace=trace_path, config=label, scheme=scheme)
    # the load block (utilisation, offered load, queue-wait share, overloaded): one place
    res.report["load"] = load_block(res.report)
    flows = res.report.get("flows")
    only = ((res.report.get("config") or {}).get("host") or {}).get("replay_only_flow")
    if slowdown and isinstance(flows, list) and len(flows) >= 2 and not only:

        def run_alone(name: str) -> dict[str, Any]:
            alone = simulate(
                config,
                trace,
                scheme=scheme,
                overrides=[*ov, f"host.replay_only_flow={json.dumps(name)}"],
                trace_format=trace_format,
                device=device,
                allow_unterminated=allow_unterminated,
                progress=progress if not callable(progress) else False,
                slowdown=False,
            )
            return alone.report

        paths = [str(((f.get("trace") or {}).get("path")) or "") for f in flows]
        add_slowdowns(res.report, paths, topts, run_alone)
    return res
