"""The HTML building blocks of a report page: its style sheet and table-sorting script, and
tables (runs, compare, any list of dicts) and figures as HTML."""

from __future__ import annotations

import base64
import html
import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from nandlab.report.runs import Figure, _Run

_CSS = """
body{font-family:system-ui,-apple-system,Segoe UI,Roboto,sans-serif;margin:24px auto;
max-width:1300px;padding:0 16px;color:#222;line-height:1.4}
h1{font-size:1.5em;margin-bottom:4px}h2{font-size:1.2em;margin-top:32px;
border-bottom:1px solid #ddd;padding-bottom:4px}h3{font-size:1.02em;margin-bottom:4px}
.meta{color:#666;font-size:.9em}table{border-collapse:collapse;font-size:.82em;margin:8px 0}
th,td{border:1px solid #ddd;padding:3px 7px;vertical-align:top}th{background:#f4f4f4;
text-align:left}td.n{text-align:right;font-variant-numeric:tabular-nums}
table.sortable th{cursor:pointer;user-select:none}table.sortable th:hover{background:#e8eef8}
th.asc::after{content:" ▲"}th.desc::after{content:" ▼"}td.err{color:#b00;max-width:420px}
figure{margin:16px 0}figure img{max-width:100%;box-sizing:border-box;border:1px solid #eee}
figcaption{font-size:.85em;color:#444;max-width:1000px}.ok{color:#060}.bad{color:#b00}
.wrap{overflow-x:auto}
"""

_JS = """
(function(){
  function key(td){var v=td.getAttribute('data-v');return v===null?td.textContent:v;}
  document.querySelectorAll('table.sortable').forEach(function(t){
    t.querySelectorAll('th').forEach(function(th,i){
      th.addEventListener('click',function(){
        var body=t.tBodies[0],rows=Array.prototype.slice.call(body.rows);
        var asc=!th.classList.contains('asc');
        t.querySelectorAll('th').forEach(function(h){h.classList.remove('asc','desc');});
        th.classList.add(asc?'asc':'desc');
        var num=rows.every(function(r){var v=r.cells[i].getAttribute('data-v');
          return v!==null&&v!==''&&!isNaN(+v);});
        rows.sort(function(a,b){var x=key(a.cells[i]),y=key(b.cells[i]);
          var c=num?(+x)-(+y):String(x).localeCompare(String(y),undefined,{numeric:true});
          return asc?c:-c;});
        rows.forEach(function(r){body.appendChild(r);});
      });
    });
  });
  var imgs=document.images,ok=0;
  for(var i=0;i<imgs.length;i++){if(imgs[i].complete&&imgs[i].naturalWidth>0)ok++;}
  document.body.setAttribute('data-figures',String(imgs.length));
  document.body.setAttribute('data-figures-ok',String(ok));
})();
"""


def _e(v: Any) -> str:
    return html.escape(str(v), quote=True)


def _num_cell(v: Any, digits: int = 3) -> str:
    from nandlab.reproduce.fmt import fmt_num

    if isinstance(v, bool) or v is None:
        return f"<td>{_e(fmt_num(v))}</td>"
    if isinstance(v, (int, float)):
        if isinstance(v, float) and not math.isfinite(v):
            return "<td class=n>—</td>"
        return f'<td class=n data-v="{v!r}">{_e(fmt_num(v, digits))}</td>'
    return f"<td>{_e(v)}</td>"


def _dict_table(rows: Sequence[Mapping[str, Any]], *, sortable: bool = True) -> str:
    """A list of flat dicts as an HTML table (columns in first-seen order)."""
    cols: list[str] = []
    for r in rows:
        for k in r:
            if k not in cols and not isinstance(r[k], (dict, list)):
                cols.append(k)
    cls = ' class="sortable"' if sortable else ""
    out = [f"<div class=wrap><table{cls}><thead><tr>"]
    out += [f"<th>{_e(c)}</th>" for c in cols]
    out.append("</tr></thead><tbody>")
    for r in rows:
        out.append("<tr>" + "".join(_num_cell(r.get(c)) for c in cols) + "</tr>")
    out.append("</tbody></table></div>")
    return "".join(out)


_RUN_COLS: tuple[tuple[str, str], ...] = (
    ("mean µs", "host.mean_us"),
    ("read mean µs", "host.read_mean_us"),
    ("write mean µs", "host.write_mean_us"),
    ("read p99 µs", "host.read_p99_us"),
    ("write p99 µs", "host.write_p99_us"),
    ("p99.9 µs", "host.all.p999_us"),
    ("WA", "write_amplification"),
    ("erases", "flash.erases"),
    ("GC moves", "gc.pages_moved"),
    ("die util.", "flash.die_utilization"),
    ("requests", "host.requests"),
    ("wall s", "wall_s"),
)


def _runs_table(runs: Sequence[_Run]) -> str:
    from nandlab.result import lookup

    configs = {str(r.row.get("config")) for r in runs}
    head = ["trace", "scheme", "run"] + (["config"] if len(configs) > 1 else [])
    head += [c for c, _ in _RUN_COLS] + ["finished (UTC)", "error"]
    out = ['<div class=wrap><table class="sortable" id="runs"><thead><tr>']
    out += [f"<th>{_e(h)}</th>" for h in head]
    out.append("</tr></thead><tbody>")
    for r in runs:
        rep = r.report or {}
        cells = [f"<td>{_e(r.trace)}</td>", f"<td>{_e(r.row.get('scheme'))}</td>"]
        cells.append(f"<td>{_e(r.label)}</td>")
        if len(configs) > 1:
            cells.append(f"<td>{_e(Path(str(r.row.get('config'))).stem)}</td>")
        for _, path in _RUN_COLS:
            v = lookup(rep, path) if rep else None
            if v is None:
                v = r.row.get(path)
            cells.append(_num_cell(v))
        fin = str(r.row.get("finished_at") or "")[:19].replace("T", " ")
        cells.append(f"<td>{_e(fin)}</td>")
        cells.append(f"<td class=err>{_e(r.row.get('error') or '')}</td>")
        out.append("<tr>" + "".join(cells) + "</tr>")
    out.append("</tbody></table></div>")
    return "".join(out)


def _compare_table(cmp: Mapping[str, Any]) -> str:
    from nandlab.comparison import METRICS
    from nandlab.reproduce.fmt import fmt_num

    rows = cmp.get("rows") or []
    if not rows:
        return ""
    out = ["<div class=wrap><table><thead><tr><th>metric</th>"]
    out += [f"<th>{_e(r.get('scheme'))}</th>" for r in rows]
    out.append("</tr></thead><tbody>")
    for col, label, _, unit in METRICS:
        cells = []
        for i, r in enumerate(rows):
            v, ratio = r.get(col), r.get(f"{col}_ratio")
            s = fmt_num(v)
            if i and isinstance(ratio, (int, float)):
                s += f" ({ratio:.3f}x)"
            cells.append(f"<td class=n>{_e(s)}</td>")
        out.append(f"<tr><td>{_e((label + ' ' + unit).strip())}</td>{''.join(cells)}</tr>")
    out.append("</tbody></table></div>")
    return "".join(out)


def _img(path: Path, alt: str) -> str:
    data = base64.b64encode(path.read_bytes()).decode("ascii")
    return f'<img src="data:image/png;base64,{data}" alt="{_e(alt)}" loading="eager">'


def _figure_html(f: Figure, html_dir: Path) -> str:
    def rel(p: Path) -> str:
        try:
            return str(p.relative_to(html_dir))
        except ValueError:
            return str(p)

    return (
        f'<figure id="{_e(f.name)}"><h3>{_e(f.title)}</h3>{_img(f.png, f.title)}'
        f"<figcaption>{_e(f.caption)} Files: "
        f'<a href="{_e(rel(f.png))}">PNG</a>, <a href="{_e(rel(f.svg))}">SVG</a>.'
        "</figcaption></figure>"
    )
