"""``attnscope model``: where a transformer's step time goes, attention against the rest, per implementation.

Measurement (torch, transformers) lives in :mod:`attnscope.model.bench` and :mod:`attnscope.model.annotate`;
the analysis of the captured trace (:mod:`attnscope.model.split`, :mod:`attnscope.model.advice`) is pure.
"""
