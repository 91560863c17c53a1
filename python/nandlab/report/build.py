"""The report of a sweep, compare or reproduce output directory (:func:`build_report`): which
figures and tables it gets, in what order, written as one self-contained HTML file."""

from __future__ import annotations

import json
import time
from pathlib import Path

from nandlab.report.page import (
    _CSS,
    _JS,
    _compare_table,
    _dict_table,
    _e,
    _figure_html,
    _img,
    _runs_table,
)
from nandlab.report.papers import build_all_report, paper_section
from nandlab.report.plots import (
    _by_trace,
    _fig_cdf,
    _fig_cdf_agg,
    _fig_flow_cdf,
    _fig_summary,
    _fig_summary_agg,
    _group_runs,
    _slug,
)
from nandlab.report.runs import (
    MAX_LINES,
    REPORT_FILE,
    Figure,
    ReportError,
    ReportResult,
    _load_runs,
    _paper_results,
    _read_json,
)
from nandlab.report.timeseries import _fig_timeseries, _fig_timeseries_agg


def build_report(
    directory: str | Path, output: str | Path | None = None, *, title: str | None = None
) -> ReportResult:
    """Write the HTML report of ``directory`` (a sweep, compare or reproduce output) to
    ``output`` (default ``DIR/report.html``) and its figures as PNG and SVG to
    ``<output stem>_files/`` beside it. Raises :class:`ReportError` when ``directory`` has no
    runs and no paper results."""
    t0 = time.perf_counter()
    d = Path(directory)
    if not d.is_dir():
        raise ReportError(f"{d}: not a directory")
    if (d / "all.json").is_file() and not (d / "runs.parquet").is_file():
        return build_all_report(d, output)
    out = Path(output) if output is not None else d / REPORT_FILE
    files = out.parent / f"{out.stem}_files"
    files.mkdir(parents=True, exist_ok=True)

    sweep_meta = _read_json(d / "sweep.json")
    cmp_meta = _read_json(d / "compare.json")
    papers = _paper_results(d)
    runs = _load_runs(d)
    # the grid's (or the compare's) order where it is known
    order: list[str] = []
    if isinstance(sweep_meta, dict):
        order = [str(k) for k in sweep_meta.get("keys") or []]
    elif isinstance(cmp_meta, dict):
        order = [str(r.get("key")) for r in cmp_meta.get("rows") or []]
    other = 0
    if order:
        # only this sweep's / compare's runs (DIR may hold runs of an earlier, different grid)
        pos = {k: i for i, k in enumerate(order)}
        kept = [r for r in runs if str(r.row.get("key")) in pos]
        other = len(runs) - len(kept)
        runs = sorted(kept, key=lambda r: pos[str(r.row.get("key"))])
    if not runs and not papers:
        raise ReportError(
            f"{d}: no runs.parquet and no reproduce result JSON: give the --out directory of "
            "nandlab sweep, compare or reproduce"
        )
    if isinstance(sweep_meta, dict):
        kind = "sweep"
    elif isinstance(cmp_meta, dict):
        kind = "compare"
    elif papers:
        kind = "reproduce"
    else:
        kind = "runs"

    # keep the order of the grid: by trace as first seen, then as stored
    by_trace = _by_trace(runs)
    varying = list(sweep_meta.get("varying") or []) if isinstance(sweep_meta, dict) else []
    # a trace with many runs: figures that aggregate (a line per scheme, a band over the rest)
    large = {t: _group_runs(trs, varying) for t, trs in by_trace.items() if len(trs) > MAX_LINES}
    figs: list[Figure] = []
    for trace, trs in by_trace.items():
        f = (
            _fig_cdf_agg(trace, trs, large[trace], files)
            if trace in large
            else _fig_cdf(trace, trs, files)
        )
        if f:
            figs.append(f)
        f = _fig_flow_cdf(trace, trs, files)
        if f:
            figs.append(f)
    for trace, trs in by_trace.items():
        f = (
            _fig_timeseries_agg(trace, trs, large[trace], d, files)
            if trace in large
            else _fig_timeseries(trace, trs, d, files)
        )
        if f:
            figs.append(f)
    if large:
        groups = {t: large.get(t) or _group_runs(trs, varying) for t, trs in by_trace.items()}
        f = _fig_summary_agg(by_trace, groups, files)
    else:
        f = _fig_summary(by_trace, files)
    if f:
        figs.append(f)
    own_figs: list[tuple[Path, Path | None]] = []
    for png in sorted(d.glob("*.png")):
        svg = png.with_suffix(".svg")
        own_figs.append((png, svg if svg.is_file() else None))

    from nandlab import __version__

    failed = [r for r in runs if r.row.get("error")]
    if title is None:
        if kind == "sweep":
            title = f"nandlab sweep — {Path(str(sweep_meta.get('grid', d.name))).name}"
        elif kind == "compare":
            title = f"nandlab compare — {cmp_meta.get('trace')}"
        elif kind == "reproduce":
            title = f"nandlab reproduce {papers[0]['paper']}"
        else:
            title = f"nandlab runs — {d.name}"
    parts = [
        "<!DOCTYPE html><html lang=en><head><meta charset=utf-8>",
        '<meta name="viewport" content="width=device-width,initial-scale=1">',
        f"<title>{_e(title)}</title><style>{_CSS}</style></head><body>",
        f"<h1>{_e(title)}</h1>",
        f"<p class=meta>{_e(d.resolve())} · nandlab {_e(__version__)} · generated "
        f"{_e(time.strftime('%Y-%m-%d %H:%M:%S UTC', time.gmtime()))}</p>",
    ]
    from nandlab.reproduce.fmt import plural

    traces = list(dict.fromkeys(r.trace for r in runs))
    schemes = list(dict.fromkeys(str(r.row.get("scheme")) for r in runs))
    status = (
        f"<span class=bad>{len(failed)} failed</span>"
        if failed
        else "<span class=ok>0 failed</span>"
    )
    parts.append(
        f"<p>{plural(len(runs), 'run')} ({status}) · {plural(len(traces), 'trace')}: "
        f"{_e(', '.join(traces))} · schemes: {_e(', '.join(schemes))}</p>"
    )
    if other:
        parts.append(
            f"<p class=meta>{other} other runs in runs.parquet (from an earlier {kind} in this "
            "directory) are not shown.</p>"
        )
    toc = [("Runs", "runs-section")] if runs else []
    if figs or own_figs:
        toc.insert(0, ("Figures", "figures"))
    toc += [(f.title, f.name) for f in figs]
    if len(toc) > 2:
        parts.append(
            "<p class=meta>Contents: "
            + " · ".join(f'<a href="#{_e(a)}">{_e(t)}</a>' for t, a in toc)
            + "</p>"
        )
    if kind == "sweep":
        axes = sweep_meta.get("axes") or {}
        rows = [{"axis": k, "values": ", ".join(map(str, v))} for k, v in axes.items()]
        parts.append("<h2>Grid</h2>" + _dict_table(rows, sortable=False))
    if kind == "compare":
        ov = cmp_meta.get("overrides")
        with_ov = f" with {_e(json.dumps(ov))}" if ov else ""
        parts.append(
            f"<h2>Compare</h2><p>{_e(cmp_meta.get('trace'))} on {_e(cmp_meta.get('config'))}"
            f"{with_ov}"
            f"; ratios to {_e((cmp_meta.get('schemes') or ['?'])[0])}.</p>"
            + _compare_table(cmp_meta)
        )
    for res in papers:
        parts.append(f"<h2>Paper: {_e(res.get('title') or res['paper'])} ({_e(res['_file'])})</h2>")
        parts.append(paper_section(res))
    if figs or own_figs:
        parts.append('<h2 id="figures">Figures</h2>')
        parts += [_figure_html(f, out.parent) for f in figs]
        for png, svg in own_figs:
            links = f'<a href="{_e(png.name)}">PNG</a>'
            if svg is not None:
                links += f', <a href="{_e(svg.name)}">SVG</a>'
            parts.append(
                f'<figure id="{_e(_slug(png.stem))}"><h3>{_e(png.stem)}</h3>{_img(png, png.stem)}'
                f"<figcaption>Figure written by the command ({_e(png.name)}). Files: {links}."
                "</figcaption></figure>"
            )
    if runs:
        parts.append(
            '<h2 id="runs-section">Runs</h2><p class=meta>Click a column header to sort.</p>'
        )
        parts.append(_runs_table(runs))
    parts.append(f"<script>{_JS}</script></body></html>")
    text = "\n".join(parts)
    tmp = out.with_name(f".{out.name}.tmp")
    tmp.write_text(text, encoding="utf-8")
    tmp.replace(out)
    return ReportResult(
        out,
        kind,
        len(runs),
        figs,
        out.stat().st_size,
        time.perf_counter() - t0,
    )
