"""nandlab: trace-driven, reliability-aware NAND-flash SSD simulator.

The simulation itself runs in the Rust core (``nandlab._core``); this package loads
configurations, replays traces through the core and presents the results::

    import nandlab
    res = nandlab.simulate()                      # default config, bundled default trace
    res.summary["host.mean_us"]
    res.to_frame()                                # one-row polars DataFrame

    runs = nandlab.sweep("grid.toml")             # a grid of runs (docs/sweep.md) -> DataFrame
    table = nandlab.compare("pgbench_rw_slice", ["baseline", "diffecc_wa"], "xia-diffecc")
"""

from __future__ import annotations

from nandlab._core import ConfigError, SimError, TraceError
from nandlab._core import __version__ as __version__
from nandlab.api import simulate
from nandlab.comparison import compare
from nandlab.config import load_config, presets
from nandlab.data import bundled_traces, default_trace
from nandlab.grid import GridError, load_grid, sweep
from nandlab.result import RunResult

__all__ = [
    "ConfigError",
    "GridError",
    "RunResult",
    "SimError",
    "TraceError",
    "__version__",
    "bundled_traces",
    "compare",
    "default_trace",
    "load_config",
    "load_grid",
    "presets",
    "simulate",
    "sweep",
]
