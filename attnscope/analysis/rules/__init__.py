"""Every rule, registered once: :data:`RULES`.  Pure.

A rule is one function in its own module, listed here with the scope it reads:

- ``row``: one result dict (``rule(r) -> list[Insight] | NotChecked``);
- ``case``: one result among the results of its case, with the one recommendation for that case
  (``rule(r, peers) -> list[Insight] | NotChecked``; :class:`~attnscope.analysis.rules.peers.Peers`);
- ``model``: one implementation's row of a model benchmark at its point
  (``rule(row, step) -> dict | None``; :class:`~attnscope.analysis.rules.model_step.Step`).

The registry's order is the order insights are found in (then sorted by severity, stable).  The recommendation a
``case`` or ``model`` rule reads is worked out once per case by the caller
(:func:`attnscope.analysis.annotate.explain_results`, :func:`attnscope.analysis.recommend.model_points.annotate_rows`):
the rules never ask for another, so what they say of "the best" is what the document recommends.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

from attnscope.analysis.rules.execution import cpu_bound, numerics_off, opaque_library, rate_above_peak
from attnscope.analysis.rules.insights import fp32_upcast, hidden_copy, no_tensor_cores, safe_softmax
from attnscope.analysis.rules.low_occupancy import low_occupancy
from attnscope.analysis.rules.mask_build import mask_rebuilt
from attnscope.analysis.rules.masks import block_sparsity, compiled_fallback, dense_mask, split_kv
from attnscope.analysis.rules.memory import score_matrix
from attnscope.analysis.rules.model_step import (
    Step,
    host_bound,
    layout_copies,
    mask,
    profile_mismatch,
    repeat_kv,
    share,
    upcasts,
)
from attnscope.analysis.rules.peers import Peers
from attnscope.analysis.rules.sdpa_choice import sdpa_choice, sdpa_why
from attnscope.analysis.rules.slower import slower_than_best
from attnscope.analysis.rules.traffic import traffic_over_model
from attnscope.analysis.rules.user_mods import builtin_mask_faster
from attnscope.core.types import Insight, NotChecked

Scope = Literal["row", "case", "model"]
SEVERITY_ORDER = {"error": 0, "warning": 1, "info": 2}


@dataclass(frozen=True)
class Rule:
    """One registered rule: ``id`` (the insight id it speaks under; a rule may emit a related id, e.g.
    ``near_cpu_bound``), ``scope`` (what it reads) and ``check`` (the function)."""

    id: str
    scope: Scope
    check: Callable[..., Any]


RULES: tuple[Rule, ...] = (
    Rule("numerics_off", "row", numerics_off),
    Rule("rate_above_peak", "row", rate_above_peak),
    Rule("hidden_copy", "case", hidden_copy),
    Rule("fp32_upcast", "case", fp32_upcast),
    Rule("no_tensor_cores", "row", no_tensor_cores),
    Rule("mask_rebuilt", "row", mask_rebuilt),
    Rule("safe_softmax", "row", safe_softmax),
    Rule("score_matrix", "row", score_matrix),
    Rule("low_occupancy", "case", low_occupancy),
    Rule("cpu_bound", "row", cpu_bound),
    Rule("opaque_library", "row", opaque_library),
    Rule("traffic_over_model", "row", traffic_over_model),
    Rule("dense_mask", "case", dense_mask),
    Rule("block_sparsity", "case", block_sparsity),
    Rule("split_kv", "row", split_kv),
    Rule("compiled_fallback", "row", compiled_fallback),
    Rule("slower_than_best", "case", slower_than_best),
    Rule("sdpa_choice", "case", sdpa_choice),
    Rule("builtin_mask_faster", "case", builtin_mask_faster),
    Rule("sdpa_why", "case", sdpa_why),
    Rule("attention_share", "model", share),
    Rule("repeat_kv_copy", "model", repeat_kv),
    Rule("attention_upcast", "model", upcasts),
    Rule("mask_built", "model", mask),
    Rule("attention_copies", "model", layout_copies),
    Rule("host_bound", "model", host_bound),
    Rule("profile_mismatch", "model", profile_mismatch),
)


def explain(r: dict[str, Any], peers: Peers) -> tuple[list[Insight], list[NotChecked]]:
    """Every ``row`` and ``case`` rule on one result (none on a result that did not run ok): its insights, errors
    first, then warnings, then notes, and the rules that could not be checked, with why."""
    found: list[Insight] = []
    missing: list[NotChecked] = []
    if r.get("status") != "ok":
        return found, missing
    for rule in RULES:
        if rule.scope == "model":
            continue
        out = rule.check(r) if rule.scope == "row" else rule.check(r, peers)
        if isinstance(out, NotChecked):
            missing.append(out)
        else:
            found.extend(out)
    found.sort(key=lambda i: SEVERITY_ORDER[i.severity])
    return found, missing


def explain_step(row: dict[str, Any], step: Step) -> list[dict[str, Any]]:
    """Every ``model`` rule on one implementation's row at its point, in the registry's order."""
    return [f for rule in RULES if rule.scope == "model" and (f := rule.check(row, step)) is not None]


__all__ = ["RULES", "Rule", "Scope", "explain", "explain_step"]
