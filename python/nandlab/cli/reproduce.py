"""``nandlab reproduce <paper>``: re-run a paper's experiments on the engine (the command
group; a module per paper in :mod:`nandlab.reproduce`).

Every command takes ``--traces DIR`` (repeatable; default: the bundled samples and the
workspace's captured traces), ``--quick``, ``--out DIR`` (default ``./nandlab-out/<paper>``),
``--json OUT``, ``--processes N`` and ``--scheduler ADDR``; runs go through
:func:`nandlab.experiment.run_grid`, so re-running with the same ``--out`` skips finished runs.
``dpa`` (Guo ch. 2) first analyses data files (``--data``: its codec and lifetime study, whose
Monte-Carlo points are cached), then replays Fig. 14's traces. ``dmm`` (Guo ch. 4, the object
device) runs DMMbench and file-level traces in this process (each run takes seconds) and caches
each run's report in ``OUT/runs``; it takes ``--traces --quick --out --json --progress``.
"""

from __future__ import annotations

import click

from nandlab.reproduce import dmm as _dmm
from nandlab.reproduce import dpa as _dpa
from nandlab.reproduce import efm as _efm
from nandlab.reproduce import flexecc as _flexecc
from nandlab.reproduce import flexlevel as _flexlevel
from nandlab.reproduce import ida as _ida
from nandlab.reproduce import run_all as _run_all
from nandlab.reproduce import xia_diffecc as _xia_diffecc


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
def reproduce() -> None:
    """Reproduce a paper's tables and figures (resumable; see --help of each paper)."""


reproduce.add_command(_xia_diffecc.xia_diffecc)
reproduce.add_command(_ida.ida)
reproduce.add_command(_efm.efm)
reproduce.add_command(_dpa.dpa)
reproduce.add_command(_flexlevel.flexlevel)
reproduce.add_command(_flexecc.flexecc)
reproduce.add_command(_dmm.dmm)
reproduce.add_command(_run_all.run_all)

__all__ = ["reproduce"]
