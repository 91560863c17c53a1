"""The reproductions of ``nandlab reproduce <paper>``: a module per paper on one framework.

:mod:`~nandlab.reproduce.framework` is the description and the runner every reproduction
uses (``docs/reproducing.md``); a paper's module describes its reproduction (``xia_diffecc``,
``ida``, ``efm``, ``flexecc``, ``flexlevel``, ``dpa``, ``dmm``), a study of a paper's own has
its module (``dpa_codec``, ``dmm_bench``) and :mod:`~nandlab.reproduce.osd_runs` runs the
object device's runs. The command group that registers them is :mod:`nandlab.cli.reproduce`.
This package's ``__init__`` imports nothing: :mod:`nandlab.report` uses its shared pieces
(``fmt``, ``headline``) without loading every paper, and ``reproduce all``
(:mod:`~nandlab.reproduce.run_all`) imports :mod:`nandlab.report` without a cycle.
"""
