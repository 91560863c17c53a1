"""``nandlab sweep GRID.toml`` and :func:`nandlab.sweep`: a grid of runs from a TOML file.

A grid file (``docs/sweep.md`` has the full reference and an example)::

    configs = ["default"]                        # presets or TOML files (relative to the grid)
    schemes = ["baseline", "diffecc_wa", "agcr"] # optional: each config's own scheme.name
    traces = ["pgbench_rw_slice", "traces/*.csv.gz"]  # bundled names, paths, globs
    seeds = [1, 2]                               # optional: the config's `seed`

    [set]                                        # every combination of these values
    "ftl.gc_threshold_pct" = [5, 10]
    "host.max_requests" = 100000                 # a scalar is one fixed value

    [zip]                                        # the i-th values go together
    "device.channels" = [4, 8]
    "device.chips_per_channel" = [2, 1]

    [outputs]                                    # per-run files (not part of the run key)
    request_log = false
    timeseries_interval_ms = 100
    latency_cdf = true                           # default: CDFs in the reports (for `report`)

    [cluster]                                    # --scheduler slurm: dask-jobqueue SLURMCluster
    queue = "compute"
    cores = 8
    memory = "16GiB"
    walltime = "02:00:00"
    jobs = 4

Runs = traces x configs x schemes x [set] combinations x [zip] rows x seeds, each keyed as in
:mod:`nandlab.experiment` (config text, scheme, overrides, trace digest), so a killed sweep
resumes where it stopped and failed runs are retried. Every error in the grid (unknown key,
empty list, unknown scheme or config, missing trace, a config key or value the core rejects)
is found before any run starts and named with the allowed values.

The command itself (options, table, exit status) is :mod:`nandlab.cli.sweep`.
"""

from __future__ import annotations

import glob
import itertools
import json
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from nandlab.data import bundled_by_name, resolve_trace, trace_name
from nandlab.experiment import RunOutputs, RunSpec

if TYPE_CHECKING:
    import polars as pl
    from rich.console import Console

    from nandlab.experiment import GridStats

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

#: Top-level keys of a grid file and what they hold.
GRID_KEYS: dict[str, str] = {
    "configs": "presets or config files",
    "schemes": "scheme names",
    "traces": "bundled trace names, trace files or globs; a list of them replays them as "
    "concurrent flows (docs/multi-tenant.md)",
    "seeds": "integer seeds",
    "set": "table of config keys -> values (every combination)",
    "zip": "table of config keys -> equal-length lists (taken together)",
    "outputs": "table: request_log, timeseries_interval_ms, latency_cdf",
    "cluster": "table: the SLURMCluster for --scheduler slurm",
}
#: ``[outputs]`` keys.
OUTPUT_KEYS = ("request_log", "timeseries_interval_ms", "latency_cdf")
#: Config keys a grid may not set in [set]/[zip]: they are per-run outputs.
_OUTPUT_CONFIG_KEYS = (
    "stats.request_log",
    "stats.timeseries",
    "stats.timeseries_interval_ms",
    "stats.latency_cdf",
)
SWEEP_FILE = "sweep.json"
_GLOB_CHARS = set("*?[")


class GridError(ValueError):
    """A bad grid: one line naming the file, the key and the allowed values."""


@dataclass
class Grid:
    """A parsed, validated grid: its runs and options."""

    source: str
    specs: list[RunSpec]
    outputs: RunOutputs
    cluster: dict[str, Any]
    #: axis name -> values, for the summary (configs, schemes, traces, seeds, set/zip keys)
    axes: dict[str, list[Any]] = field(default_factory=dict)
    #: override keys whose value differs between runs (they name the runs)
    varying: list[str] = field(default_factory=list)
    text: str | None = None


# --------------------------------------------------------------------------- parsing


def _as_list(v: Any, key: str, src: str, kind: type | tuple[type, ...]) -> list[Any]:
    items = v if isinstance(v, list) else [v]
    if not items:
        raise GridError(f"{src}: `{key}` is an empty list; give at least one ({GRID_KEYS[key]})")
    for x in items:
        if not isinstance(x, kind) or isinstance(x, bool):
            names = (
                kind.__name__ if isinstance(kind, type) else " or ".join(k.__name__ for k in kind)
            )
            raise GridError(f"{src}: `{key}`: {x!r} is not a {names} ({GRID_KEYS[key]})")
    return items


def resolve_traces(entries: Sequence[str], base: Path, src: str) -> list[tuple[str, Path]]:
    """``(name, path)`` of each trace entry: a file or a bundled name
    (:func:`nandlab.data.resolve_trace`, relative to ``base``), or a glob. Raises
    :class:`GridError` for an entry that finds nothing."""
    bundled = bundled_by_name()
    paths: list[Path] = []
    for e in entries:
        p = Path(e).expanduser()
        if not p.is_absolute():
            p = base / p
        if _GLOB_CHARS & set(e):
            hits = sorted(Path(h) for h in glob.glob(str(p), recursive=True) if Path(h).is_file())
            if not hits:
                raise GridError(
                    f"{src}: traces: `{e}` matches no file (relative to {base}); bundled names: "
                    + ", ".join(sorted(bundled))
                )
            paths.extend(hits)
        else:
            try:
                paths.append(resolve_trace(e, base))
            except FileNotFoundError:
                raise GridError(
                    f"{src}: traces: `{e}` is not a bundled trace name and no such file "
                    f"({p}); bundled names: " + ", ".join(sorted(bundled))
                ) from None
    uniq: list[Path] = []
    seen: set[Path] = set()
    for p in paths:
        r = p.resolve()
        if r not in seen:
            seen.add(r)
            uniq.append(p)
    # short names; the file name, then the path, where short names collide
    names = [trace_name(p) for p in uniq]
    for i, p in enumerate(uniq):
        if names.count(trace_name(p)) > 1:
            names[i] = p.name
    for i, p in enumerate(uniq):
        if names.count(names[i]) > 1:
            names[i] = str(p)
    return list(zip(names, uniq))


def _flatten(table: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    """``{"ftl": {"x": 1}}`` and ``{"ftl.x": 1}`` both as ``{"ftl.x": 1}``."""
    out: dict[str, Any] = {}
    for k, v in table.items():
        key = f"{prefix}{k}"
        if isinstance(v, Mapping):
            out.update(_flatten(v, key + "."))
        else:
            out[key] = v
    return out


def _setting_lists(table: Any, section: str, src: str, *, scalars: bool) -> dict[str, list[Any]]:
    if not isinstance(table, Mapping):
        raise GridError(f"{src}: `{section}` must be a table of config keys ({GRID_KEYS[section]})")
    out: dict[str, list[Any]] = {}
    for k, v in _flatten(table).items():
        if k in _OUTPUT_CONFIG_KEYS:
            raise GridError(
                f"{src}: {section}.{k}: per-run outputs go in [outputs] "
                f"({', '.join(OUTPUT_KEYS)}), not in [{section}]"
            )
        if isinstance(v, list):
            if not v:
                raise GridError(f'{src}: {section}."{k}" is an empty list; give at least one value')
            out[k] = list(v)
        elif scalars:
            out[k] = [v]
        else:
            raise GridError(
                f'{src}: zip."{k}" = {v!r}: expected a list (the i-th values of all [zip] keys '
                "go together); put fixed values in [set]"
            )
    return out


def _outputs(table: Any, src: str) -> RunOutputs:
    if table is None:
        return RunOutputs(latency_cdf=True)
    if not isinstance(table, Mapping):
        raise GridError(f"{src}: `outputs` must be a table ({', '.join(OUTPUT_KEYS)})")
    for k in table:
        if k not in OUTPUT_KEYS:
            raise GridError(f"{src}: outputs: unknown key `{k}`; allowed: {', '.join(OUTPUT_KEYS)}")
    for k in ("request_log", "latency_cdf"):
        if k in table and not isinstance(table[k], bool):
            raise GridError(f"{src}: outputs.{k} = {table[k]!r}: expected true or false")
    ms = table.get("timeseries_interval_ms")
    if ms is not None and (
        isinstance(ms, bool) or not isinstance(ms, (int, float)) or not 1e-6 <= ms <= 1e9
    ):
        raise GridError(
            f"{src}: outputs.timeseries_interval_ms = {ms!r}: expected a number of ms in "
            "1e-6 ..= 1e9 (leave it out for no time series)"
        )
    return RunOutputs(
        request_log=bool(table.get("request_log", False)),
        timeseries_interval_ms=float(ms) if ms is not None else None,
        latency_cdf=bool(table.get("latency_cdf", True)),
    )


def _fmt_value(v: Any) -> str:
    return json.dumps(v) if isinstance(v, (list, dict)) else str(v)


def load_grid(grid: str | Path | Mapping[str, Any], base_dir: str | Path | None = None) -> Grid:
    """Parse and validate a grid (a TOML file, or the same structure as a dict whose relative
    paths are taken from ``base_dir``, default the current directory). Every run's config is
    checked by the core. Raises :class:`GridError` (one line naming the key and the allowed
    values)."""
    from nandlab import _core
    from nandlab.config import config_text, presets

    text: str | None = None
    if isinstance(grid, Mapping):
        src = "<grid>"
        data: dict[str, Any] = dict(grid)
        base = Path(base_dir) if base_dir is not None else Path.cwd()
    else:
        path = Path(grid)
        src = str(path)
        if not path.is_file():
            raise GridError(f"{src}: grid file not found")
        try:
            text = path.read_text(encoding="utf-8")
            data = tomllib.loads(text)
        except (OSError, UnicodeDecodeError) as e:
            raise GridError(f"{src}: cannot read: {e}") from None
        except tomllib.TOMLDecodeError as e:
            from nandlab.config import toml_syntax_error

            raise GridError(toml_syntax_error(src, text or "", e)) from None
        base = Path(base_dir) if base_dir is not None else path.parent

    for k in data:
        if k not in GRID_KEYS:
            raise GridError(f"{src}: unknown key `{k}`; allowed: {', '.join(GRID_KEYS)}")
    if "traces" not in data:
        raise GridError(f"{src}: `traces` is missing ({GRID_KEYS['traces']})")

    # configs
    cfgs: list[tuple[str, str, str, Path | None]] = []  # (label, spec, text, path)
    for c in _as_list(data.get("configs", "default"), "configs", src, str):
        spec: str = c
        if c.endswith(".toml") or "/" in c:
            p = Path(c).expanduser()
            spec = str(p if p.is_absolute() else base / p)
        try:
            ctext, cpath = config_text(spec)
        except Exception as e:
            raise GridError(
                f"{src}: configs: `{c}`: {' '.join(str(e).split())} (presets: "
                f"{', '.join(presets())}, or a TOML file)"
            ) from None
        label = c if spec == c else Path(c).stem
        cfgs.append((label, spec, ctext, cpath))

    # schemes
    known = list(_core.scheme_names())
    schemes: list[str | None]
    if "schemes" in data:
        schemes = list(_as_list(data["schemes"], "schemes", src, str))
        for s in schemes:
            if s not in known:
                raise GridError(
                    f"{src}: schemes: unknown scheme `{s}`; allowed: {', '.join(known)}"
                )
    else:
        schemes = [None]

    # An entry that is itself a list: its traces run together as concurrent flows.
    traces: list[tuple[str, Path, tuple[Path, ...]]] = []
    for entry in _as_list(data["traces"], "traces", src, (str, list)):
        if isinstance(entry, list):
            flows = resolve_traces(_as_list(entry, "traces", src, str), base, src)
            if len(flows) < 2:
                raise GridError(
                    f"{src}: traces: {entry!r} names {len(flows)} trace; a list of traces is "
                    "a run of concurrent flows: give two or more (or the trace alone)"
                )
            name = " + ".join(n for n, _ in flows)
            traces.append((name, flows[0][1], tuple(p for _, p in flows)))
        else:
            traces.extend((n, p, ()) for n, p in resolve_traces([entry], base, src))
    seeds: list[int | None] = (
        list(_as_list(data["seeds"], "seeds", src, int)) if "seeds" in data else [None]
    )
    for sd in seeds:
        if sd is not None and sd < 0:
            raise GridError(f"{src}: seeds: {sd} must be a non-negative integer")
    sets = _setting_lists(data.get("set", {}), "set", src, scalars=True)
    zips = _setting_lists(data.get("zip", {}), "zip", src, scalars=False)
    both = sorted(set(sets) & set(zips))
    if both:
        raise GridError(f'{src}: "{both[0]}" is in both [set] and [zip]; give it in one of them')
    if "seeds" in data and ("seed" in sets or "seed" in zips):
        raise GridError(f"{src}: `seeds` and a `seed` setting both given; keep one")
    lens = {k: len(v) for k, v in zips.items()}
    if len(set(lens.values())) > 1:
        raise GridError(
            f"{src}: [zip] lists must have the same length; got "
            + ", ".join(f'"{k}": {n}' for k, n in lens.items())
        )
    outputs = _outputs(data.get("outputs"), src)
    cluster: dict[str, Any] = {}
    if "cluster" in data:
        from nandlab.cluster import validate_cluster

        try:
            cluster = validate_cluster(data["cluster"], f"{src}: [cluster]")
        except ValueError as e:
            raise GridError(str(e)) from None

    set_keys = list(sets)
    set_combos = [dict(zip(set_keys, vals)) for vals in itertools.product(*sets.values())]
    n_zip = next(iter(lens.values()), 1)
    zip_rows = [{k: v[i] for k, v in zips.items()} for i in range(n_zip)]
    varying = [k for k, v in sets.items() if len(v) > 1] + [k for k, v in zips.items() if n_zip > 1]

    # every run's settings, checked by the core once per (config, scheme, settings): one call
    # per config, which parses the config's text once (a 65,536-run grid in seconds)
    from nandlab.config import format_overrides

    def settings(combo: dict[str, Any], zrow: dict[str, Any], seed: int | None) -> dict[str, Any]:
        ov: dict[str, Any] = {**combo, **zrow}
        if seed is not None:
            ov["seed"] = seed
        return ov

    cases = list(itertools.product(schemes, set_combos, zip_rows, seeds))
    names: list[list[str]] = []
    for clabel, _cspec, ctext, cpath in cfgs:
        batch = [(format_overrides(settings(c, z, sd)), sc) for sc, c, z, sd in cases]
        try:
            results = _core.check_configs(ctext, str(cpath) if cpath is not None else None, batch)
        except Exception as e:
            raise GridError(f"{src}: config {clabel}: {' '.join(str(e).split())}") from None
        for (sc, c, z, sd), (ok, msg) in zip(cases, results):
            if not ok:
                ov = settings(c, z, sd)
                what = ", ".join(
                    [f"config {clabel}", f"scheme {sc or '(config)'}"]
                    + [f"{k}={_fmt_value(v)}" for k, v in ov.items()]
                )
                raise GridError(f"{src}: run ({what}): {' '.join(msg.split())}")
        names.append([msg for _, msg in results])
    specs: list[RunSpec] = []
    for tname, tpath, flow_traces in traces:
        for ci, (clabel, cspec, _ctext, _cpath) in enumerate(cfgs):
            for (_sc, combo, zrow, seed), sname in zip(cases, names[ci]):
                ov = settings(combo, zrow, seed)
                parts = [clabel] if len(cfgs) > 1 else []
                parts.append(sname)
                parts += [f"{k}={_fmt_value(ov[k])}" for k in varying]
                if seed is not None and len(seeds) > 1:
                    parts.append(f"seed={seed}")
                specs.append(
                    RunSpec(
                        trace=tpath,
                        trace_name=tname,
                        scheme=sname,
                        config=cspec,
                        overrides=ov,
                        label=" ".join(parts),
                        flow_traces=flow_traces,
                    )
                )
    if len(seeds) > 1:
        varying.append("seed")
    axes: dict[str, list[Any]] = {
        "configs": [c[0] for c in cfgs],
        "schemes": sorted({s.scheme for s in specs}, key=[s.scheme for s in specs].index),
        "traces": [t[0] for t in traces],
    }
    if seeds != [None]:
        axes["seeds"] = list(seeds)
    axes.update({f"set.{k}": v for k, v in sets.items()})
    axes.update({f"zip.{k}": v for k, v in zips.items()})
    return Grid(src, specs, outputs, cluster, axes, varying, text)


# --------------------------------------------------------------------------- running


def sweep(
    grid: str | Path | Mapping[str, Any] | Grid,
    out: str | Path | None = None,
    *,
    scheduler: Any = None,
    workers: int | None = None,
    progress: bool = False,
    base_dir: str | Path | None = None,
    stats: GridStats | None = None,
    console: Console | None = None,
) -> pl.DataFrame:
    """Run a grid and return one row per run (a polars DataFrame).

    ``grid`` is a grid file, the same structure as a dict (relative paths from ``base_dir``),
    or a :class:`Grid`. ``out`` (default ``nandlab-out/<grid file stem>``, or
    ``nandlab-out/sweep``) holds ``runs.parquet``, ``sweep.json``, the grid and the per-run
    outputs; running again with the same ``out`` skips finished runs and retries failed ones.
    ``scheduler``: ``None``/``"local"`` (``workers`` processes, default one per CPU),
    ``"tcp://HOST:PORT"`` (a Dask cluster), ``"slurm"`` (a SLURMCluster from the grid's
    ``[cluster]``; ``workers`` = jobs) or a ``distributed.Client``.

    Columns: those of ``runs.parquet`` (:mod:`nandlab.experiment`: key, trace, scheme, label,
    params, report JSON, error, headline numbers, started_at / finished_at, per-run output
    paths) plus one column per varying grid setting (dotted key, e.g. ``ftl.gc_threshold_pct``).

    Raises :class:`GridError` for a bad grid and
    :class:`~nandlab.experiment.ExperimentError` (missing Dask, unreachable scheduler, out
    directory in use) before any run starts.
    """
    import polars as pl

    from nandlab.experiment import GridStats, run_grid

    g = grid if isinstance(grid, Grid) else load_grid(grid, base_dir)
    st = stats if stats is not None else GridStats()
    if out is None:
        stem = Path(g.source).stem if g.source != "<grid>" else "sweep"
        out = Path("nandlab-out") / stem
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    _write_sweep_json(out, g)
    df = run_grid(
        g.specs,
        out,
        processes=workers,
        scheduler=scheduler,
        progress=progress,
        stats=st,
        console=console,
        outputs=g.outputs,
        cluster=g.cluster,
    )
    _write_sweep_json(out, g, st.keys)
    if df.height and g.varying:
        params = [json.loads(p) if p else {} for p in df["params"].to_list()]
        cols = []
        for k in g.varying:
            if k in df.columns:
                continue
            cols.append(pl.Series(k, [p.get(k) for p in params], strict=False))
        if cols:
            df = df.with_columns(cols)
    return df


def _write_sweep_json(out: Path, g: Grid, keys: Sequence[str] = ()) -> None:
    from nandlab.experiment import _atomic_write_text

    obj = {
        "kind": "sweep",
        "grid": g.source,
        "runs": len(g.specs),
        "keys": list(keys),  # the runs in grid order (filled in once keyed)
        "axes": g.axes,
        "varying": g.varying,
        "outputs": g.outputs.as_dict(),
        "cluster": g.cluster,
    }
    _atomic_write_text(out / SWEEP_FILE, json.dumps(obj, indent=1, default=str) + "\n")
    if g.text is not None:
        _atomic_write_text(out / "grid.toml", g.text)
