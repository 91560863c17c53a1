"""The HTML report (``nandlab report DIR``): one self-contained HTML file for a sweep, a
compare or a reproduce output directory.

What goes in (each part only when the directory has what it needs):

* a summary (what the directory is, runs, failures, where they ran);
* the paper's headline and result tables (a reproduce output's ``result.json``, or any JSON file
  in DIR written by ``reproduce --json``);
* the compare table with ratios to the first scheme (``compare.json``);
* figures: mean and p99 response per run for each trace; latency CDFs per trace (from the
  reports' ``host.cdf`` when the runs recorded it, else from their p50 / p90 / p99 / p99.9 /
  max, marked as such); per-interval time series per trace (throughput, mean and p99 response,
  queue depth, GC moves and erases, die utilisation) for runs that wrote one; and a reproduce
  command's own figures. A trace with up to :data:`MAX_LINES` runs is drawn a line per run (a
  colour per scheme, a dash pattern per setting); one with more, in figures that aggregate: a
  line per scheme (the median over its runs) with a band from its fastest to its slowest run
  over the grid's other axes, which the caption names, and the summary as a dot per run in a
  row per scheme;
* the runs table (click a column header to sort), with each run's error.

Figures are embedded as PNG (the file opens anywhere, offline, with no other file) and also
written beside the HTML as PNG and SVG (``<name>_files/``). The page uses no external resource
and a few lines of inline JavaScript (table sorting only).

The modules: :mod:`~nandlab.report.build` puts a directory's report together
(:func:`build_report`); :mod:`~nandlab.report.runs` reads the directory;
:mod:`~nandlab.report.plots` and :mod:`~nandlab.report.timeseries` draw the figures;
:mod:`~nandlab.report.page` renders tables and figures as HTML; :mod:`~nandlab.report.papers`
renders reproductions and builds the report of ``nandlab reproduce all``
(:func:`build_all_report`). The command is :mod:`nandlab.cli.report`. A name with a leading
underscore is internal to this package (its modules share it), not API.
"""

from __future__ import annotations

from nandlab.report.build import build_report
from nandlab.report.papers import build_all_report, headline_table, paper_section
from nandlab.report.runs import MAX_LINES, REPORT_FILE, Figure, ReportError, ReportResult

__all__ = [
    "MAX_LINES",
    "REPORT_FILE",
    "Figure",
    "ReportError",
    "ReportResult",
    "build_all_report",
    "build_report",
    "headline_table",
    "paper_section",
]
