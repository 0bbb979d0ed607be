"""Copy kind and context (analysis/copy_context.py) and the advice they choose, on real H200 traces.

Expected kinds come from the raw ``Input Strides`` of each ``aten::copy_`` (read here with the json
module: destination first, source second) and the places from the raw op names around it."""

from __future__ import annotations

import copy
import json
from functools import cache
from pathlib import Path
from typing import Any

from attnscope.analysis.annotate import annotate
from attnscope.analysis.fingerprint.copy_context import contiguous_strides
from attnscope.api import analyze
from attnscope.document.schema import result_to_dict
from attnscope.trace import trace_from_doc
from tests.rawtrace import H200

CTX = H200 / "ctx"


@cache
def insights(path: Path) -> dict[str, Any]:
    r = annotate({"results": [result_to_dict(analyze(path))]})["results"][0]
    return r


def copies(path: Path) -> list[dict[str, Any]]:
    return insights(path)["hidden_copies"]


def advice(path: Path, rule: str = "hidden_copy") -> list[str]:
    return [i["advice"] for i in insights(path)["insights"] if i["id"] == rule]


def raw_copies(path: Path) -> list[dict[str, Any]]:
    """Same-dtype copy_ events of non-empty tensors, straight from the JSON."""
    evs = json.loads(path.read_text())["traceEvents"]
    out = []
    for e in evs:
        a = e.get("args") or {}
        if e.get("cat") == "cpu_op" and e["name"] == "aten::copy_" and a["Input Dims"][0]:
            if a["Input type"][0] == a["Input type"][1]:
                out.append(a)
    return out


def test_contiguous_strides_by_hand() -> None:
    assert contiguous_strides([4, 16, 2048, 64]) == [2097152, 131072, 64, 1]


def test_flash_backward_layout_copies_and_the_layout_that_avoids_them() -> None:
    raw = raw_copies(CTX / "layout_flash_bhsd.json")
    # the source of both copies is a (B, S, H, D) view of (B, H, S, D) memory: strides [2097152, 64, 131072, 1]
    assert [a["Input Strides"][1] for a in raw] == [[2097152, 64, 131072, 1]] * 2
    cs = copies(CTX / "layout_flash_bhsd.json")
    assert [(c["kind"], c["inside"], c["bytes"]) for c in cs] == [
        ("layout", "aten::_flash_attention_backward", 4 * 2048 * 16 * 64 * 2)
    ] * 2
    (adv,) = advice(CTX / "layout_flash_bhsd.json")
    assert adv.startswith("this is internal to aten::_flash_attention_backward")
    assert "(B, H, S, D) views of (B, S, H, D) tensors" in adv and "slicing" not in adv
    # the layout named in the advice: no copy on the H200 (nor with cuDNN in either layout)
    for f in ("layout_flash_bshd", "layout_efficient_bshd", "layout_cudnn_bhsd", "layout_cudnn_bshd"):
        assert raw_copies(CTX / f"{f}.json") == [] and copies(CTX / f"{f}.json") == [], f


def test_efficient_backward_and_accumulate_grad() -> None:
    cs = copies(CTX / "layout_efficient_bhsd.json")
    assert sorted((c["kind"], c["inside"]) for c in cs) == [
        ("layout", "aten::_efficient_attention_backward"),
        ("layout", "torch::autograd::AccumulateGrad"),
        ("layout", "torch::autograd::AccumulateGrad"),
        ("layout", "torch::autograd::AccumulateGrad"),
    ]
    assert all(a.startswith("this is internal to") for a in advice(CTX / "layout_efficient_bhsd.json"))


def test_user_code_gqa_repeat_is_broadcast_with_enable_gqa_advice() -> None:
    for f in ("user_repeat_interleave_flash", "user_expand_reshape_flash"):
        raw = raw_copies(CTX / f"{f}.json")
        assert all(0 in a["Input Strides"][1] for a in raw)  # an expanded source: a 0 stride
        cs = copies(CTX / f"{f}.json")
        assert [(c["kind"], c["inside"]) for c in cs] == [("broadcast", None)] * 2
        (adv,) = advice(CTX / f"{f}.json")
        assert adv.startswith("GQA: pass enable_gqa=True to SDPA")


def test_never_advise_enable_gqa_to_a_call_that_passes_it() -> None:
    # The same trace with the SDPA call's recorded enable_gqa argument (Concrete Inputs[7]) set to True.
    doc = json.loads((CTX / "user_repeat_interleave_flash.json").read_text())
    for e in doc["traceEvents"]:
        if e.get("cat") == "cpu_op" and e["name"] == "aten::scaled_dot_product_attention":
            e["args"]["Concrete Inputs"][7] = "True"
    import attnscope.api as api

    tr = trace_from_doc(copy.deepcopy(doc))
    from attnscope.analysis.fingerprint.build import analyse

    an = analyse(tr)
    _, _, _, read = api.case_from_trace(an, "gpu")
    assert [c["enable_gqa"] for c in read["attention_calls"]] == [True]
    from attnscope.analysis.fingerprint.copy_context import copy_advice

    adv = copy_advice("broadcast", None, read)
    assert adv is not None and "already passes enable_gqa=True" in adv and "pass enable_gqa=True to" not in adv


def test_math_with_enable_gqa_repeats_inside_the_backend() -> None:
    cs = copies(CTX / "math_enable_gqa.json")
    assert [(c["kind"], c["inside"]) for c in cs] == [("broadcast", "aten::_scaled_dot_product_attention_math")] * 2
    calls = insights(CTX / "math_enable_gqa.json")["attention_calls"]
    assert [c["enable_gqa"] for c in calls] == [True] and calls[0]["kv_heads"] == 2
    for a in advice(CTX / "math_enable_gqa.json"):
        assert "pass enable_gqa=True" not in a and "internal to SDPA's math backend" in a


def test_flex_eager_copies_are_internal_to_flex() -> None:
    for f in (CTX / "flex_eager_gqa.json", H200 / "flex.json"):
        cs = [c for c in copies(f) if c["bytes"] >= 1024]  # the block mask's 4-byte sorts aside
        assert {c["inside"] for c in cs} == {"FlexAttentionAutogradOp"}
        assert sorted(c["kind"] for c in cs) == ["broadcast", "broadcast", "value"]
        adv = [a for a in advice(f) if "FlexAttentionAutogradOp" in a]
        assert adv and all("enable_gqa" not in a.split(";")[0] for a in adv)
        assert all("torch.compile(flex_attention)" in a for a in adv)
        (up,) = advice(f, "fp32_upcast")
        assert "flex_attention's eager" in up


def test_user_upcast_and_naive_value_copy() -> None:
    ups = insights(CTX / "user_upcast_naive.json")["upcasts"]
    assert ups and all(u["kind"] == "dtype" and u["inside"] is None for u in ups)
    (c,) = copies(H200 / "naive.json")
    assert (c["kind"], c["inside"]) == ("value", None)
    (adv,) = advice(H200 / "naive.json")
    assert "masked_fill_" in adv


def test_backward_ops_on_autograd_thread_are_in_the_call() -> None:
    # fwd_bwd_flash.json: the backward ops run on another thread than attnscope::call's (raw tids differ)
    evs = json.loads((CTX / "fwd_bwd_flash.json").read_text())["traceEvents"]
    ann = next(e for e in evs if e.get("name") == "attnscope::call")
    bwd = next(e for e in evs if e.get("name") == "aten::_flash_attention_backward")
    assert bwd["tid"] != ann["tid"]
    calls = insights(CTX / "fwd_bwd_flash.json")["attention_calls"]
    assert [c["direction"] for c in calls] == ["forward", "backward"]
    f, b = calls[0]["flops"], calls[1]["flops"]
    assert f == 4 * 64 * 8 * (512 * 513 // 2)  # B1 H8 S512 D64 causal: kept scores S(S+1)/2
    assert b == int(f * 2.5)


def test_a_trace_without_an_sdpa_call_names_transformers_switch_beside_enable_gqa() -> None:
    # a transformers Llama trained with attn_implementation="eager" (H100): 160 expand+reshape copies of K and V,
    # and attention as matmul + softmax + matmul (8 layers, 10 steps: 80 chains on [4, 16, 2048, 2048] scores), no
    # SDPA op anywhere in the trace
    from attnscope.analysis.fingerprint.copy_context import copy_advice

    chain = {"ops": ["aten::matmul", "aten::softmax", "aten::matmul"], "scores_dims": [4, 16, 2048, 2048]}
    trace = {"source": "trace", "attention_calls": [], "device_kind": "cuda", "eager_attention": [chain]}
    adv = copy_advice("broadcast", None, trace)
    assert adv == (
        "GQA: K and V are materialised once per query head for an attention that is no SDPA call in this trace "
        "(matmul, softmax); SDPA with enable_gqa=True keeps them at their KV heads, and flash and cuDNN then run "
        "without any copy (seen on an H200: docs/results/h200.md, GQA); in a "
        'transformers model the repeat is its repeat_kv, and the switch is attn_implementation="sdpa", which '
        "passes enable_gqa=True where no attention mask is needed"
    )
    # a measured run of code that repeats K/V itself keeps the plain advice
    run = {"source": "run", "attention_calls": [], "device_kind": "cuda"}
    assert str(copy_advice("broadcast", None, run)).startswith("GQA: pass enable_gqa=True to SDPA")
    # a trace with no attention at all (a softmax alone, or none): no K/V, no GQA, no SDPA named
    alone = {"source": "trace", "attention_calls": [], "device_kind": "cuda", "eager_attention": []}
    assert copy_advice("broadcast", None, alone) == (
        "the copy materialises a broadcast (a repeat, or an expanded view made contiguous): where the op that reads "
        "it broadcasts by itself, pass it the smaller tensor and the copy goes"
    )
