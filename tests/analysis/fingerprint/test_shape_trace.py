"""The case read back from real H200 traces (analysis/shape.py) and what analyze does with it.

Expected values are read off the raw JSON by hand (the public SDPA op's ``Input Dims`` and
``Concrete Inputs``) or computed here from them, never from attnscope's own output."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from attnscope.analysis.fingerprint import shape
from attnscope.analysis.fingerprint.attribution import build_op_tree
from attnscope.api import analyze
from attnscope.trace import load_trace, trace_from_doc
from tests import synth
from tests.rawtrace import H200, H200_BIG, raw_events


def _calls(path: Path) -> list[shape.AttentionCall]:
    return shape.attention_calls(build_op_tree(load_trace(path).cpu_ops))


def _raw_sdpa(path: Path) -> dict:
    (e,) = [
        e for e in raw_events(path) if e.get("cat") == "cpu_op" and e["name"] == "aten::scaled_dot_product_attention"
    ]
    return e["args"]


@pytest.mark.parametrize("variant", ["sdpa_math", "sdpa_flash", "sdpa_efficient", "sdpa_cudnn", "sdpa_default"])
def test_sdpa_case_matches_the_raw_public_op(variant: str) -> None:
    raw = _raw_sdpa(H200 / f"{variant}.json")
    q, k = raw["Input Dims"][0], raw["Input Dims"][1]
    (c,) = _calls(H200 / f"{variant}.json")
    v = c.values
    assert (v["batch"], v["heads"], v["seq_q"], v["head_dim"]) == tuple(q)
    assert (v["kv_heads"], v["seq_kv"]) == (k[1], k[2])
    assert v["causal"] is (raw["Concrete Inputs"][5] == "True")
    assert v["scale"] == float(raw["Concrete Inputs"][6])
    assert v["enable_gqa"] is (raw["Concrete Inputs"][7] == "True")
    assert c.direction == "forward"


def test_default_case_by_hand() -> None:
    # tests/data/h200/README.md: B=4 H=16 S=2048 D=64 bf16 causal; scale 64**-0.5
    (c,) = _calls(H200 / "sdpa_flash.json")
    assert c.values == {
        "batch": 4,
        "heads": 16,
        "seq_q": 2048,
        "head_dim": 64,
        "kv_heads": 16,
        "seq_kv": 2048,
        "dtype": "bf16",
        "causal": True,
        "scale": 0.125,
        "enable_gqa": False,
    }
    assert c.family == "flash"
    # causal keeps S·(S+1)/2 of the S² scores per (batch, head); 4·D FLOP per kept score
    assert c.flops() == 4 * 64 * 4 * 16 * (2048 * 2049 // 2)


def test_inner_ops_give_the_same_case_in_their_own_layout() -> None:
    # _flash_attention_forward records (B, S, H, D): [4, 2048, 16, 64]; _efficient_attention_forward's
    # custom_mask_type '1' is causal from the top left.
    for op in (
        "aten::_flash_attention_forward",
        "aten::_efficient_attention_forward",
        "aten::_cudnn_attention_forward",
    ):
        name = {"aten::_flash_attention_forward": "sdpa_flash", "aten::_efficient_attention_forward": "sdpa_efficient"}
        tr = load_trace(H200 / f"{name.get(op, 'sdpa_cudnn')}.json")
        ops = [o for o in tr.cpu_ops if o.name == op]
        (c,) = shape.attention_calls(build_op_tree(ops))
        assert (c.values["batch"], c.values["heads"], c.values["seq_q"], c.values["head_dim"]) == (4, 16, 2048, 64)
        assert c.values["causal"] is True and c.values["scale"] == 0.125


def test_big_case() -> None:
    (c,) = _calls(H200_BIG / "sdpa_cudnn.json")
    assert (c.values["batch"], c.values["heads"], c.values["seq_q"], c.values["head_dim"]) == (1, 32, 4096, 128)
    assert c.values["scale"] == pytest.approx(128**-0.5)
    assert c.flops() == 4 * 128 * 32 * (4096 * 4097 // 2)


def test_flex_causal_stays_unknown_and_says_why() -> None:
    for f in ("flex.json", "flex_compiled.json"):
        (c,) = _calls(H200 / f)
        assert (c.values["batch"], c.values["heads"], c.values["seq_q"]) == (4, 16, 2048)
        assert c.values.get("causal") is None
        assert "mask is a Python function" in c.unknown["causal"]
        assert c.flops() is None
        fields, why = shape.case_of([c])
        assert fields is None and "causal" in why


def test_naive_has_no_attention_op() -> None:
    assert _calls(H200 / "naive.json") == []
    assert "no attention op" in shape.case_of([])[1]["case"]


def test_analyze_fills_case_flops_and_rate() -> None:
    r = analyze(H200 / "sdpa_cudnn.json")
    assert r.case is not None and r.case.label().startswith("B=4 H=16 S=2048 D=64 bf16 causal")
    flops = 4 * 64 * 4 * 16 * (2048 * 2049 // 2)
    assert r.flops == flops
    # TFLOP/s over the GPU time launched inside attention ops: here every GPU event of the call.
    raw_us = sum(e["dur"] for e in raw_events(H200 / "sdpa_cudnn.json") if e.get("cat") in ("kernel", "gpu_memset"))
    assert r.tflops == pytest.approx(flops / (raw_us * 1e-6) / 1e12, rel=1e-6)
    flex = analyze(H200 / "flex.json")
    assert flex.case is None and flex.flops is None and "causal" in flex.case_unknown


def _bwd_doc(causal: str, scale: str, mask_type: str) -> dict:
    # A backward call as torch 2.11 records it: (B, H, S, D) outside, (B, S, H, D) inside.
    g = [2, 8, 1024, 128]
    inner = [2, 1024, 8, 128]
    outer_c = [""] * 11 + [causal, "", "", scale]
    inner_c = [""] * 11 + [causal, "", "", scale, "", ""]
    eff_c = [""] * 14 + [mask_type, "False", scale]
    return synth.doc(
        [
            synth.op("autograd::engine::evaluate_function: X", 0, 100, 1),
            synth.op(
                "aten::_scaled_dot_product_flash_attention_backward",
                1,
                90,
                2,
                **{
                    "Input Dims": [g, g, g, g, g, [2, 8, 1024]],
                    "Input type": ["c10::Half"] * 5,
                    "Concrete Inputs": outer_c,
                },
            ),
            synth.op(
                "aten::_flash_attention_backward",
                2,
                80,
                3,
                **{"Input Dims": [inner] * 5, "Input type": ["c10::Half"] * 5, "Concrete Inputs": inner_c},
            ),
            synth.op(
                "aten::_efficient_attention_backward",
                200,
                80,
                4,
                **{"Input Dims": [inner] * 4, "Input type": ["c10::Half"] * 4, "Concrete Inputs": eff_c},
            ),
        ]
    )


def test_backward_calls_count_two_and_a_half_forwards() -> None:
    tr = trace_from_doc(_bwd_doc("False", "0.1", "0"))
    calls = shape.attention_calls(build_op_tree(tr.cpu_ops))
    assert [c.direction for c in calls] == ["backward", "backward"]
    fwd = 4 * 2 * 8 * 1024 * 1024 * 128
    assert [c.flops() for c in calls] == [fwd * 5 // 2, fwd * 5 // 2]
    assert calls[0].values["dtype"] == "fp16" and calls[0].values["scale"] == 0.1


def test_an_argument_that_is_not_a_bool_leaves_causal_unknown() -> None:
    tr = trace_from_doc(_bwd_doc("0.5", "0.1", "7"))
    calls = shape.attention_calls(build_op_tree(tr.cpu_ops))
    assert all(c.values.get("causal") is None for c in calls)
    assert "not a bool" in calls[0].unknown["causal"] and "custom_mask_type" in calls[1].unknown["causal"]


def test_an_explicit_mask_is_not_read_as_causal() -> None:
    raw = json.loads((H200 / "sdpa_math.json").read_text())
    for e in raw["traceEvents"]:
        if e.get("cat") == "cpu_op" and e["name"] in (
            "aten::scaled_dot_product_attention",
            "aten::_scaled_dot_product_attention_math",
        ):
            e["args"]["Input Dims"][3] = [2048, 2048]
    (c,) = shape.attention_calls(build_op_tree(trace_from_doc(raw).cpu_ops))
    assert c.values.get("causal") is None and "attn_mask" in c.unknown["causal"]


def test_lower_right_causal_counts_the_kept_scores_by_hand() -> None:
    # efficient backward, custom_mask_type 2 (causal from the bottom right), Sq=4 against Sk=10:
    # query i sees keys 0..i+6, so rows keep 7, 8, 9, 10 = 34 scores per (batch, head).
    q, k = [1, 4, 2, 64], [1, 10, 2, 64]
    conc = [""] * 14 + ["2", "False", "0.125"]
    tr = trace_from_doc(
        synth.doc(
            [
                synth.op(
                    "aten::_efficient_attention_backward",
                    0,
                    10,
                    1,
                    **{"Input Dims": [q, q, k, k], "Input type": ["c10::BFloat16"] * 4, "Concrete Inputs": conc},
                )
            ]
        )
    )
    (c,) = shape.attention_calls(build_op_tree(tr.cpu_ops))
    assert c.mask() == "causal_lower_right"
    assert c.flops() == int(4 * 64 * 2 * 34 * 2.5)


def _one_op(name: str, q: list[int], k: list[int], conc: list[str]) -> shape.AttentionCall:
    tr = trace_from_doc(
        synth.doc(
            [
                synth.op(
                    name,
                    0,
                    10,
                    1,
                    **{"Input Dims": [q, k, k], "Input type": ["c10::BFloat16"] * 3, "Concrete Inputs": conc},
                )
            ]
        )
    )
    (c,) = shape.attention_calls(build_op_tree(tr.cpu_ops))
    return c


# Sq=4 queries against Sk=10 keys, B=1, H=2, D=64, causal: top-left keeps rows 1, 2, 3, 4 = 10 scores per head;
# lower-right (queries at key positions 6..9) keeps 7, 8, 9, 10 = 34.
TOP_LEFT_KEPT, LOWER_RIGHT_KEPT = 1 + 2 + 3 + 4, 7 + 8 + 9 + 10


@pytest.mark.parametrize(
    ("name", "layout", "conc", "align", "kept"),
    [
        # public SDPA (q, k, v, attn_mask, dropout, is_causal, scale, enable_gqa): torch's is_causal, top-left
        ("aten::scaled_dot_product_attention", "bhsd", ["", "", "", "", "0.", "True", "0.125", "False"], "top_left",
         TOP_LEFT_KEPT),
        # flash (q, k, v, dropout, is_causal, return_debug_mask, scale): FlashAttention-2's bottom-right
        ("aten::_scaled_dot_product_flash_attention", "bhsd", ["", "", "", "0.", "True", "False", "0.125"],
         "lower_right", LOWER_RIGHT_KEPT),
        # efficient's SDPA op passes custom_mask_type 1 (CausalFromTopLeft)
        ("aten::_scaled_dot_product_efficient_attention", "bhsd", ["", "", "", "", "False", "0.", "True", "0.125"],
         "top_left", TOP_LEFT_KEPT),
        # _efficient_attention_forward's custom_mask_type (index 9): 1 top-left
        ("aten::_efficient_attention_forward", "bshd", [""] * 9 + ["1", "False", "0.125"], "top_left", TOP_LEFT_KEPT),
        # cuDNN's set_causal_mask is top-left
        ("aten::_scaled_dot_product_cudnn_attention", "bhsd", ["", "", "", "", "False", "0.", "True", "False",
         "0.125"], "top_left", TOP_LEFT_KEPT),
    ],
)  # fmt: skip
def test_causal_alignment_by_op_counts_the_kept_scores_by_hand(name, layout, conc, align, kept) -> None:
    q, k = ([1, 2, 4, 64], [1, 2, 10, 64]) if layout == "bhsd" else ([1, 4, 2, 64], [1, 10, 2, 64])
    c = _one_op(name, q, k, conc)
    assert c.values["causal"] is True and c.align == align
    assert c.mask() == ("causal@top_left" if align == "top_left" else "causal_lower_right")
    assert c.flops() == 4 * 64 * 2 * kept
    assert c.mask_basis() is not None and "Sq=4 != Sk=10" in c.mask_basis()


def test_square_causal_needs_no_alignment() -> None:
    c = _one_op(
        "aten::_scaled_dot_product_flash_attention",
        [1, 2, 8, 64],
        [1, 2, 8, 64],
        ["", "", "", "0.", "True", "False", "0.125"],
    )
    assert c.mask() == "causal" and "both alignments keep the same scores" in (c.mask_basis() or "")
    assert c.flops() == 4 * 64 * 2 * (8 * 9 // 2)
