"""Reproductions in a report: a paper's checks, headline and tables, and the whole report of
``nandlab reproduce all`` (:func:`build_all_report`)."""

from __future__ import annotations

import re
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from nandlab.report.page import _CSS, _JS, _dict_table, _e, _img
from nandlab.report.runs import REPORT_FILE, ReportError, ReportResult, _read_json


def _verdict_class(v: str) -> str:
    return {"matches": "ok", "differs": "bad"}.get(v, "meta")


def _per_trace(r: Mapping[str, Any], loads: Mapping[str, Any]) -> str:
    """Ours per trace with each trace's load level (K) where the result has it."""
    from nandlab.reproduce.headline import with_unit

    over = set(r.get("overloaded") or ())
    out = []
    for t, v in (r.get("per_trace") or {}).items():
        k = (loads.get(t) or {}).get("time_scale")
        lvl = f" (K={k:g})" if isinstance(k, (int, float)) else ""
        out.append(f"{t}{lvl}: {with_unit(v, r)}" + (" — overloaded" if t in over else ""))
    return "<br>".join(_e(x) for x in out) or "—"


def headline_table(
    rows: Sequence[Mapping[str, Any]],
    loads: Mapping[str, Mapping[str, Any]] | None = None,
    *,
    paper_column: bool = False,
    table_id: str = "",
) -> str:
    """Headline rows (:mod:`nandlab.reproduce.headline`) as an HTML table: the paper's value
    with its table or figure, ours per trace (with K) and the means in the same unit, the load
    level and the verdict."""
    from nandlab.reproduce.headline import with_unit

    loads = loads or {}
    head = ["paper"] * paper_column + ["metric", "paper's value", "ours per trace",
                                       "ours: mean", "geo. mean", "level", "verdict"]  # fmt: skip
    tid = f' id="{_e(table_id)}"' if table_id else ""
    out = [f"<div class=wrap><table{tid}><thead><tr>"]
    out += [f"<th>{_e(h)}</th>" for h in head]
    out.append("</tr></thead><tbody>")
    for r in rows:
        paper = str(r.get("paper_name", ""))
        lo = loads.get(paper, loads) if paper_column else loads
        cells = [f"<td>{_e(paper)}</td>"] * paper_column + [
            f"<td>{_e(r['metric'])}</td>",
            f"<td>{_e(r['paper_text'])} <span class=meta>({_e(r['where'])})</span></td>",
            f"<td>{_per_trace(r, lo)}</td>",
            f"<td class=n>{_e(with_unit(r.get('mean'), r))}</td>",
            f"<td class=n>{_e(with_unit(r.get('geomean'), r))}</td>",
            f"<td>{_e(r.get('level', ''))}</td>",
            f"<td class={_verdict_class(r['verdict'])}>{_e(r['verdict'])}"
            + (f": {_e(r['reason'])}" if r.get("reason") else "") + "</td>",
        ]  # fmt: skip
        attrs = f' data-paper="{_e(paper)}" data-metric="{_e(r["metric"])}"'
        out.append(f"<tr{attrs}>" + "".join(cells) + "</tr>")
    out.append("</tbody></table></div>")
    return "".join(out)


def _rendered_table(t: Mapping[str, Any]) -> str:
    """A table as the reproduction printed it (``{"title", "columns", "rows"}``)."""
    out = [f"<h3>{_e(t.get('title', ''))}</h3><div class=wrap><table><thead><tr>"]
    out += [f"<th>{_e(c)}</th>" for c in t.get("columns") or []]
    out.append("</tr></thead><tbody>")
    for row in t.get("rows") or []:
        out.append(
            "<tr>"
            + "".join(f"<td{' class=n' if i else ''}>{_e(c)}</td>" for i, c in enumerate(row))
            + "</tr>"
        )
    out.append("</tbody></table></div>")
    return "".join(out)


def _checks_table(checks: Sequence[Mapping[str, Any]]) -> str:
    rows = []
    for c in checks:
        ok = c.get("passed")
        res = "n/a" if ok is None else ("pass" if ok else "FAIL")
        cls = "meta" if ok is None else ("ok" if ok else "bad")
        rows.append(
            f"<tr><td>{_e(c.get('name', ''))}</td><td>{_e(c.get('kind', ''))}</td>"
            f"<td class={cls}>{res}</td><td>{_e(c.get('detail', ''))}</td></tr>"
        )
    return ("<h3>Checks</h3><p class=meta>sanity: a failure is an exit status of 1; paper: a "
            "comparison with the paper, reported.</p><div class=wrap><table><thead><tr>"
            "<th>check</th><th>kind</th><th>result</th><th>detail</th></tr></thead><tbody>"
            + "".join(rows) + "</tbody></table></div>")  # fmt: skip


def paper_section(res: Mapping[str, Any]) -> str:
    """A reproduction's result (``result.json``): caption, checks, headline and its tables;
    a result of an older layout shows its raw tables."""
    parts = []
    if res.get("caption"):
        parts.append(f"<p class=meta>{_e(res['caption'])}</p>")
    if isinstance(res.get("checks"), list) and res["checks"]:
        parts.append(_checks_table(res["checks"]))
    head = res.get("headline")
    if isinstance(head, list) and head and "verdict" in head[0]:
        parts.append("<h3>Headline: the paper vs ours</h3>"
                     + headline_table(head, res.get("loads") or {}))  # fmt: skip
    elif isinstance(head, list) and head:
        parts.append("<h3>Headline: paper vs ours</h3>" + _dict_table(head))
    if isinstance(res.get("tables"), list):
        parts += [_rendered_table(t) for t in res["tables"] if isinstance(t, Mapping)]
    elif isinstance(res.get("table"), list) and res["table"]:
        parts.append("<h3>Results table</h3>" + _dict_table(res["table"]))
    return "".join(parts)


def _fig_number(stem: str) -> str | None:
    m = re.match(r"fig(\d+)", stem)
    return m.group(1) if m else None


def build_all_report(out_dir: str | Path, output: str | Path | None = None) -> ReportResult:
    """The report of ``nandlab reproduce all``'s ``out_dir``: a first page with one row per
    paper headline, then a section per paper with its checks, headline, tables and figures,
    each figure beside the paper's numbers of that figure. Raises :class:`ReportError` when no
    paper has a result."""
    from nandlab import __version__
    from nandlab.reproduce.headline import PAPERS, headline_of

    t0 = time.perf_counter()
    d = Path(out_dir)
    out = Path(output) if output is not None else d / REPORT_FILE
    index = _read_json(d / "all.json") or {}
    results = {p: r for p in PAPERS if isinstance(r := _read_json(d / p / "result.json"), dict)}
    if not results:
        raise ReportError(f"{d}: no <paper>/result.json: run nandlab reproduce all --out {d}")
    rows = headline_of(d)
    loads = {p: r.get("loads") or {} for p, r in results.items()}
    title = "nandlab reproduce all" + (" --quick" if index.get("quick") else "")
    parts = [
        "<!DOCTYPE html><html lang=en><head><meta charset=utf-8>",
        '<meta name="viewport" content="width=device-width,initial-scale=1">',
        f"<title>{_e(title)}</title><style>{_CSS}.fig{{display:flex;gap:16px;"
        "align-items:flex-start;flex-wrap:wrap}.fig figure{flex:1 1 560px;margin:8px 0}"
        ".fig .side{flex:1 1 360px}</style></head><body>",
        f"<h1>{_e(title)}: every paper next to ours</h1>",
        f"<p class=meta>{_e(d.resolve())} · nandlab {_e(__version__)} · generated "
        f"{_e(time.strftime('%Y-%m-%d %H:%M:%S UTC', time.gmtime()))}</p>",
    ]
    ran = index.get("ran") or {}
    status = []
    for p in PAPERS:
        s = ran.get(p)
        if p not in results:
            status.append(f"<a href='#{p}'>{_e(p)}</a>: <span class=bad>no result</span>")
        else:
            code = (s or {}).get("exit_status", 0)
            cls = "ok" if not code else "bad"
            wall = f", {s['wall_s']:.0f} s" if s and "wall_s" in s else ""
            status.append(f"<a href='#{p}'>{_e(p)}</a>: <span class={cls}>exit {code}</span>"
                          f"{wall}")  # fmt: skip
    parts.append("<p>" + " · ".join(status) + "</p>")
    counts = {v: sum(r["verdict"] == v for r in rows) for v in ("matches", "differs",
                                                                 "not comparable")}  # fmt: skip
    parts.append(
        f"<h2 id=headline-section>Headline: {len(rows)} numbers of {len(results)} papers</h2>"
        f"<p>{counts['matches']} match (same direction, within ±30 % of the paper's value), "
        f"{counts['differs']} differ (with the reason), {counts['not comparable']} are not "
        "comparable (with why). Ours: the mean over the comparable traces (load level: each "
        "trace's time scale K, chosen from the baseline's load; docs/reproductions.md).</p>"
    )
    parts.append(headline_table(rows, loads, paper_column=True, table_id="headline"))
    n_figs = 0
    for p, res in results.items():
        parts.append(f"<h2 id='{_e(p)}'>{_e(res.get('title') or p)}</h2>")
        parts.append(paper_section(res))
        for f in res.get("figures") or []:
            png = Path(f)
            if png.suffix != ".png":
                continue
            if not png.is_file():
                png = d / p / png.name
            if not png.is_file():
                continue
            n = _fig_number(png.stem)
            side = [r for r in res.get("headline") or []
                    if n and re.search(rf"Fig\. {n}(?!\d)", str(r.get("where", "")))
                    and r.get("level") == (res["headline"][0]["level"])]  # fmt: skip
            side_html = (
                "<div class=side><h3>The paper's numbers of this figure</h3>"
                + headline_table(side, res.get("loads") or {})
                + "</div>"
                if side
                else ""
            )
            parts.append(
                f"<div class=fig><figure id='{_e(p)}-{_e(png.stem)}'><h3>{_e(png.stem)}</h3>"
                f"{_img(png, png.stem)}<figcaption>{_e(png.name)}</figcaption></figure>"
                f"{side_html}</div>"
            )
            n_figs += 1
    parts.append(f"<script>{_JS}</script></body></html>")
    text = "\n".join(parts)
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_name(f".{out.name}.tmp")
    tmp.write_text(text, encoding="utf-8")
    tmp.replace(out)
    return ReportResult(out, "reproduce all", 0, [], out.stat().st_size, time.perf_counter() - t0)
