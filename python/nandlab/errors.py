"""The experiment runner's error, in a module of its own so that both the runner
(:mod:`nandlab.experiment`) and its Dask clients (:mod:`nandlab.cluster`) can raise it without
importing each other. ``nandlab.experiment.ExperimentError`` is this class."""

from __future__ import annotations


class ExperimentError(RuntimeError):
    """A problem with the experiment itself (not with one run): missing dask, bad out dir."""
