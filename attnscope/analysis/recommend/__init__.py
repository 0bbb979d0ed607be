"""The one recommender, for a run, a sweep and a model: :func:`recommend` takes rows (a run document's results,
a sweep's rows, or a model's rows through :func:`attnscope.analysis.recommend.model_points.as_generic`) and returns the
one recommendation: the best per point, ties, unresolved points, crossovers and a policy.  The run's sentence
(:mod:`.run`) and the model's advice (:mod:`.model`) are views of it.  Pure."""

from __future__ import annotations

from attnscope.analysis.recommend.recommender import recommend

__all__ = ["recommend"]
