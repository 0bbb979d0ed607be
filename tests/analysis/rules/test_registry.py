"""The one rule registry, and rules that read the recommendation they are handed instead of working out their own.

Rows are made by hand; every ratio is worked out in the comments.  The counts of recommender calls are counted by
wrapping the recommender, not read from the code under test.
"""

from __future__ import annotations

import inspect
import json
from pathlib import Path
from typing import Any

import pytest

import attnscope.analysis.annotate as annotate_mod
from attnscope.analysis.annotate import annotate, peers_of
from attnscope.analysis.rules import RULES, explain, explain_step
from attnscope.analysis.rules.masks import block_sparsity, dense_mask
from attnscope.analysis.rules.model_step import Step
from attnscope.analysis.rules.peers import ALONE, Peers, ranked
from attnscope.analysis.rules.slower import slower_than_best

DATA = Path(__file__).parents[2] / "data"
CASE = {"batch": 1, "heads": 2, "seq_q": 256, "head_dim": 64, "dtype": "bf16", "causal": False, "mask": "sliding:64"}
GPU = "GPU time per call (median)"


def row(variant: str, us: float, **kw: Any) -> dict[str, Any]:
    """An ok GPU row timed at ``us`` with quartiles ±1%."""
    r: dict[str, Any] = {
        "variant": variant,
        "status": "ok",
        "device_kind": "gpu",
        "case": CASE,
        "numerics_ok": True,
        "gpu_time_us": us,
        "gpu_time": {"median_us": us, "p25_us": us * 0.99, "p75_us": us * 1.01, "num_samples": 50},
        "kernels": [],
    }
    r.update(kw)
    return r


def rec_naming(variant: str, us: float) -> dict[str, Any]:
    """A recommendation that names ``variant`` best at ``us``, as the one recommender writes its entries."""
    return {"unresolved": [], "best": [{"variant": variant, "median_us": us, "basis": GPU, "tied_with": []}]}


# ---- the registry ---------------------------------------------------------------------------------


def test_every_rule_is_registered_once_with_the_arguments_its_scope_passes():
    ids = [r.id for r in RULES]
    assert len(ids) == len(set(ids))
    assert len({id(r.check) for r in RULES}) == len(RULES)
    arity = {"row": 1, "case": 2, "model": 2}
    for r in RULES:
        params = inspect.signature(r.check).parameters.values()
        required = [p for p in params if p.default is inspect.Parameter.empty]
        assert len(required) <= arity[r.scope] <= len(params), r.id


def test_model_rules_run_only_through_explain_step_and_row_rules_only_through_explain():
    """A model row (impl, attention parts) given to explain is not ok-shaped for the attention rules' ids, and an
    attention row given to explain_step yields none of the model ids."""
    model_ids = {r.id for r in RULES if r.scope == "model"}
    found, _ = explain(row("sdpa_flash", 10.0), ALONE)
    assert not {i.id for i in found} & model_ids
    wall = {"median_us": 300.0, "method": "host wall clock"}
    gpu = {"median_us": 100.0, "method": "CUDA events"}
    # 300 ≥ 1.5 × 100: host-bound; no attention parts, so no other model rule speaks
    got = explain_step({"impl": "eager", "mode": "decode", "wall_time": wall, "step_time": gpu}, Step())
    assert [f["id"] for f in got] == ["host_bound"]


def test_a_result_that_did_not_run_gets_no_insight():
    assert explain(row("naive", 10.0, status="error"), ALONE) == ([], [])


# ---- the recommendation, once per case --------------------------------------------------------------


def test_annotate_asks_the_recommender_once_per_case(monkeypatch):
    """tests/data/h200/run.json holds one case: its recommendation is worked out once, and the document's sentence,
    slower_than_best and the mask advice all read that one answer."""
    doc = json.loads((DATA / "h200" / "run.json").read_text())
    assert len({json.dumps(r["case"], sort_keys=True) for r in doc["results"]}) == 1
    calls = []
    real = annotate_mod.recommend_rows

    def counting(rows: list[dict[str, Any]]) -> dict[str, Any]:
        calls.append(len(rows))
        return real(rows)

    monkeypatch.setattr(annotate_mod, "recommend_rows", counting)
    monkeypatch.setattr("attnscope.analysis.recommend.run.recommend_rows", counting)
    out = annotate(doc)
    assert calls == [len(doc["results"])]
    named = out["recommendation"]["best"]
    slower = [i for r in out["results"] for i in r["insights"] if i["id"] == "slower_than_best"]
    assert slower and {i["evidence"]["best"] for i in slower} == {named}


def test_two_cases_are_each_recommended_once(monkeypatch):
    a = [row("sdpa_flash", 100.0), row("naive", 300.0)]
    other = {**CASE, "seq_q": 512}
    b = [row("sdpa_flash", 200.0, case=other), row("naive", 900.0, case=other)]
    calls = []
    real = annotate_mod.recommend_rows
    monkeypatch.setattr(annotate_mod, "recommend_rows", lambda rows: (calls.append(len(rows)), real(rows))[1])
    explained = annotate_mod.explain_results([*a, *b])
    assert calls == [2, 2]
    # naive against its own case's best: 300 / 100 = 3.00×, 900 / 200 = 4.50×
    ratios = [i.evidence["ratio"] for found, _ in explained for i in found if i.id == "slower_than_best"]
    assert ratios == [3.0, 4.5]


def test_slower_than_best_reads_the_recommendation_it_is_handed():
    """The same rows, two recommendations: the rule names whichever it is handed.  naive 300 µs against a best of
    100 µs: 3.00×, 200 µs lost; sdpa_flash 100 µs against naive named best at 300 µs: 0.33×, under 1.10×: silent."""
    flash, naive = row("sdpa_flash", 100.0), row("naive", 300.0)
    rows = [flash, naive]
    by_flash = Peers(rows, ranked(rows), rec_naming("sdpa_flash", 100.0))
    by_naive = Peers(rows, ranked(rows), rec_naming("naive", 300.0))
    (i,) = slower_than_best(naive, by_flash)
    assert (i.evidence["best"], i.evidence["ratio"], i.evidence["lost_us"]) == ("sdpa_flash", 3.0, 200.0)
    assert slower_than_best(flash, by_naive) == []
    assert slower_than_best(naive, by_naive) == []
    # no recommendation for the case (its rows are not compared): nothing said either way
    assert slower_than_best(naive, Peers(rows, ranked(rows), None)) == []


def _flex(us: float) -> dict[str, Any]:
    return row("flex_compiled", us, family="flex", compile_time_s=3.0, block_sparsity_pct=40.0, block_size=[128, 128])


def _dense_row(us: float) -> dict[str, Any]:
    return row("sdpa_default", us, dense_mask=True, mask_form="dense boolean attn_mask", sdpa_backend="efficient")


def test_mask_advice_names_the_recommended_variant_where_compiled_flex_measured_behind_it():
    """sdpa_flash 100 µs is recommended; flex_compiled 250 µs: 2.50× slower, quartiles ±1% apart: the dense mask's
    advice keeps sdpa_flash with the figures, and flex's block_sparsity says its skipped tiles do not make it
    fastest."""
    best, flex, dense = row("sdpa_flash", 100.0), _flex(250.0), _dense_row(180.0)
    rows = [best, flex, dense]
    peers = Peers(rows, ranked(rows), rec_naming("sdpa_flash", 100.0))
    figures = (
        f"flex_compiled measured 250.0 µs here, 2.50× slower than sdpa_flash (100.0 µs, {GPU}), the recommendation"
    )
    (d,) = dense_mask(dense, peers)
    assert d.advice == (
        f"keep sdpa_flash at this case: {figures}; a library's native form of the mask (FlashAttention window_size, "
        "FlashInfer window_left) may still skip what it hides"
    )
    assert d.evidence["flex_behind_best"] == {
        "recommended": "sdpa_flash",
        "recommended_us": 100.0,
        "flex_variant": "flex_compiled",
        "flex_us": 250.0,
        "flex_ratio": 2.5,
        "basis": GPU,
    }
    (b,) = block_sparsity(flex, peers)
    assert b.advice == f"the skipped tiles do not make flex the fastest here: {figures}"


@pytest.mark.parametrize("named", ["flex_compiled", None])
def test_mask_advice_points_to_flex_where_the_recommendation_does_not_put_it_behind(named):
    """The same timings, but the recommendation names flex_compiled (or nothing: no case to compare): the advice is
    the rule's own, with no figures."""
    best, flex, dense = row("sdpa_flash", 100.0), _flex(250.0), _dense_row(180.0)
    rows = [best, flex, dense]
    rec = rec_naming(named, 250.0) if named else None
    peers = Peers(rows, ranked(rows), rec)
    (d,) = dense_mask(dense, peers)
    assert d.advice.startswith("a kernel that knows the mask's shape skips what it hides: torch.compile")
    assert "flex_behind_best" not in d.evidence
    (b,) = block_sparsity(flex, peers)
    assert b.advice.startswith("nothing to fix")


def test_peers_of_ranks_and_recommends_one_case():
    """naive 300, sdpa_flash 100: ranked fastest first, and the recommendation names sdpa_flash."""
    rows = [row("naive", 300.0), row("sdpa_flash", 100.0)]
    p = peers_of(rows)
    assert [r[0]["variant"] for r in p.rows] == ["sdpa_flash", "naive"]
    assert p.best is not None and p.best[0]["variant"] == "sdpa_flash"
