"""The case read back from real H200 traces (analysis/shape.py) and what analyze does with it.

Expected values are read off the raw JSON by hand (the public SDPA op's ``Input Dims`` and
``Concrete Inputs``) or computed here from them, never from attnscope's own output."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from attnscope.analysis.fingerprint import mask_ops, shape
from attnscope.analysis.fingerprint.attribution import build_op_tree
from attnscope.analysis.fingerprint.shape import AttentionCall
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


# analysis/shape.py rule by rule: the edges that mutation testing found unpinned.
#
# Pinned here: which op each field is read from (the outer op first, an inner op only for what the outer one
# lacks), what ``unknown`` says for each field a trace does not hold, the recorded forms a flag is read from
# ('True'/'False', '1'/'0', custom_mask_type '0'/'1'/'2') and those it is not (lists, truncated argument
# lists, 3-D or missing shapes, missing types), which ops belong to one call (nesting on the thread, not time
# across calls), the alignment and the words of ``align_why`` / ``mask_basis`` for flags and for masks built
# in the trace, ``case_of``'s choice of forward calls and of GQA / Sq != Sk fields, ``to_dict``'s keys, and
# the GPU time counted inside attention ops.
#
# Where the expected values come from: synthetic traces written here (tests/synth.py builds the Kineto
# events), read off those events by hand; the real H200 traces of tests/data/h200, whose ``Input Dims``,
# ``Input type`` and ``Concrete Inputs`` are quoted beside each test and read again with the json module
# (tests/rawtrace.py); FLOPs worked by hand (4·D per kept score, kept scores counted row by row).  The
# messages are the module's own sentences, written out here in full.  No expected value is computed by
# attnscope.


BF16 = "c10::BFloat16"
SDPA = "aten::scaled_dot_product_attention"
FLASH = "aten::_scaled_dot_product_flash_attention"
EFF_FWD = "aten::_efficient_attention_forward"
DECODE = H200 / "decode"
CTX = H200 / "ctx"
# flash (q, k, v, dropout_p, is_causal, return_debug_mask, scale)
FLASH_CONC = ["", "", "", "0.", "False", "False", "0.125"]
NO_GQA = "{} takes no enable_gqa argument (only aten::scaled_dot_product_attention does)"
NOT_RECORDED = "{} and the ops inside it record no {} (a trace without record_shapes?)"
SDPA_WHY = "is_causal=True, and torch's is_causal is top-left aligned (query i sees keys 0..i)"


def _op(name: str, ts: float, dur: float, ext: int, dims=None, types=None, conc=None, tid: int = synth.TID):
    args: dict[str, Any] = {}
    if dims is not None:
        args["Input Dims"] = dims
    if types is not None:
        args["Input type"] = types
    if conc is not None:
        args["Concrete Inputs"] = conc
    return synth.op(name, ts, dur, ext, tid=tid, **args)


def _tree(events: list[dict[str, Any]]):
    return build_op_tree(trace_from_doc(synth.doc(events)).cpu_ops)


def _calls_s(events: list[dict[str, Any]]) -> list[AttentionCall]:
    return shape.attention_calls(_tree(events))


def _real(path) -> list[AttentionCall]:
    return shape.attention_calls(build_op_tree(load_trace(path).cpu_ops))


def _flash(q, k, conc=FLASH_CONC, types=(BF16,) * 3, ts: float = 0, dur: float = 10, ext: int = 1):
    dims = [q, k, k] if k is not None else [q]
    return _op(FLASH, ts, dur, ext, dims=dims, types=list(types), conc=conc)


def _sdpa(q, k, conc, mask=None, ts: float = 0, dur: float = 100, ext: int = 1, mask_type: str = ""):
    """Public SDPA (q, k, v, attn_mask, dropout_p, is_causal, scale, enable_gqa)."""
    return _op(
        SDPA,
        ts,
        dur,
        ext,
        dims=[q, k, k, mask or [], [], [], [], []],
        types=[BF16] * 3 + [mask_type, "Scalar", "Scalar", "Scalar", "Scalar"],
        conc=conc,
    )


def _full_values(**kw: Any) -> dict[str, Any]:
    v = {
        "batch": 1,
        "heads": 2,
        "kv_heads": 2,
        "seq_q": 4,
        "seq_kv": 10,
        "head_dim": 64,
        "dtype": "bf16",
        "causal": True,
        "scale": 0.125,
        "enable_gqa": False,
    }
    v.update(kw)
    return v


# --- which op each field comes from ---------------------------------------------------------------------------


def test_fields_come_from_the_outer_op_and_only_the_missing_ones_from_inside() -> None:
    """ctx/fwd_bwd_flash.json (B=1 H=8 S=512 D=64, bf16, is_causal=True, scale=None):
    the public SDPA op records q/k/v, is_causal 'True' (index 5), no scale ('' at 6), enable_gqa 'False' (7);
    the flash op inside it records scale '0.125' (index 6); _flash_attention_forward repeats all of it in (B, S, H, D).
    The backward call is _scaled_dot_product_flash_attention_backward alone: q at index 1, is_causal 'True' at 11,
    scale '0.125' at 14, no enable_gqa."""
    ev = [e for e in raw_events(CTX / "fwd_bwd_flash.json") if e.get("cat") == "cpu_op"]
    (outer,) = [e["args"] for e in ev if e["name"] == SDPA]
    (flash,) = [e["args"] for e in ev if e["name"] == FLASH]
    assert outer["Concrete Inputs"][5:8] == ["True", "", "False"] and flash["Concrete Inputs"][6] == "0.125"

    fwd, bwd = sorted(_real(CTX / "fwd_bwd_flash.json"), key=lambda c: c.direction, reverse=True)
    assert (fwd.op, fwd.family, fwd.direction) == (SDPA, "flash", "forward")
    assert fwd.values == {
        "batch": 1,
        "heads": 8,
        "seq_q": 512,
        "head_dim": 64,
        "kv_heads": 8,
        "seq_kv": 512,
        "dtype": "bf16",
        "causal": True,
        "scale": 0.125,
        "enable_gqa": False,
    }
    dims = ("batch", "heads", "seq_q", "head_dim", "kv_heads", "seq_kv", "dtype")
    assert fwd.source == {**dict.fromkeys(dims, SDPA), "causal": SDPA, "scale": FLASH, "enable_gqa": SDPA}
    assert fwd.unknown == {}
    assert fwd.flops() == 4 * 64 * 8 * (512 * 513 // 2)

    back = "aten::_scaled_dot_product_flash_attention_backward"
    assert (bwd.op, bwd.family, bwd.direction) == (back, "flash", "backward")
    assert bwd.source == {**dict.fromkeys(dims, back), "causal": back, "scale": back}
    assert bwd.unknown == {"enable_gqa": NO_GQA.format(back)}
    assert bwd.flops() == int(4 * 64 * 8 * (512 * 513 // 2) * 2.5)


def test_an_inner_flag_fills_what_the_outer_op_could_not_read() -> None:
    """The public op's is_causal reads '' (not a bool), so the flash op inside gives it: its reason goes, and the
    mask's basis names the flash op, not the outer one.  Sq = Sk = 8."""
    q = [1, 2, 8, 64]
    calls = _calls_s(
        [
            _sdpa(q, q, ["", "", "", "", "0.", "", "", "False"]),
            _flash(q, q, ["", "", "", "0.", "True", "False", "0.125"], ts=10, dur=80, ext=2),
        ]
    )
    (c,) = calls
    assert (c.values["causal"], c.source["causal"], c.source["scale"], c.source["batch"]) == (True, FLASH, FLASH, SDPA)
    assert c.unknown == {}
    assert c.align == "lower_right"
    assert c.mask_basis() == f"causal: {FLASH}, Sq = Sk = 8 (both alignments keep the same scores)"


def test_the_outer_ops_alignment_is_kept_over_the_backend_ops() -> None:
    """sdpa_flash.json / sdpa_efficient.json: the public SDPA op says is_causal 'True' (Concrete Inputs[5]);
    the flash op inside says so again (lower-right for flash), the efficient ones too (custom_mask_type '1').
    The call keeps the public op's reading: top-left, in its words."""
    for variant, inner in (("sdpa_flash", FLASH), ("sdpa_efficient", EFF_FWD)):
        ev = raw_events(H200 / f"{variant}.json")
        (outer,) = [e for e in ev if e.get("cat") == "cpu_op" and e["name"] == SDPA]
        assert outer["args"]["Concrete Inputs"][5] == "True"
        assert any(e.get("cat") == "cpu_op" and e["name"] == inner for e in ev)
        (c,) = _real(H200 / f"{variant}.json")
        assert (c.align, c.align_why, c.source["causal"]) == ("top_left", SDPA_WHY, SDPA)


def test_custom_mask_type_reads_its_op_and_its_words() -> None:
    """_efficient_attention_forward (q, k, v, bias, ..., dropout_p at 8, custom_mask_type at 9, lse, scale at 11),
    (B, S, H, D): q [1, 4, 2, 64], k [1, 10, 2, 64]."""
    q, k = [1, 4, 2, 64], [1, 10, 2, 64]
    got = {}
    for mt in ("0", "1", "2"):
        conc = [""] * 8 + ["0.", mt, "False", "0.125"]
        (c,) = _calls_s([_op(EFF_FWD, 0, 10, 1, dims=[q, k, k], types=[BF16] * 3, conc=conc)])
        got[mt] = (c.values["causal"], c.source["causal"], c.align, c.align_why, c.mask())
    assert got == {
        "0": (False, EFF_FWD, None, None, "none"),
        "1": (
            True,
            EFF_FWD,
            "top_left",
            "custom_mask_type 1, torch's sdp::CustomMaskType CausalFromTopLeft",
            "causal@top_left",
        ),
        "2": (
            True,
            EFF_FWD,
            "lower_right",
            "custom_mask_type 2, torch's sdp::CustomMaskType CausalFromBottomRight",
            "causal_lower_right",
        ),
    }


def test_a_custom_mask_type_that_is_not_a_string_is_not_read() -> None:
    conc = [""] * 8 + ["0.", ["1"], "False", "0.125"]
    q, k = [1, 4, 2, 64], [1, 10, 2, 64]
    (c,) = _calls_s([_op(EFF_FWD, 0, 10, 1, dims=[q, k, k], types=[BF16] * 3, conc=conc)])
    assert "causal" not in c.values
    assert c.unknown["causal"] == f"custom_mask_type of {EFF_FWD} reads ['1']"


def test_the_bshd_layout_reads_kv_heads_from_ks_third_dim() -> None:
    # (B, S, H, D): q [1, 4, 8, 64] has 8 heads, k [1, 10, 2, 64] 2 KV heads of D = 64
    conc = [""] * 8 + ["0.", "0", "False", "0.125"]
    (c,) = _calls_s([_op(EFF_FWD, 0, 10, 1, dims=[[1, 4, 8, 64], [1, 10, 2, 64]], types=[BF16] * 2, conc=conc)])
    assert (c.values["heads"], c.values["kv_heads"], c.values["seq_q"], c.values["seq_kv"]) == (8, 2, 4, 10)


# --- flags: the forms read and those not read --------------------------------------------------------------------


@pytest.mark.parametrize(("raw", "want"), [("1", True), ("0", False), ("True", True), ("False", False)])
def test_a_bool_recorded_as_a_digit_is_read(raw: str, want: bool) -> None:
    q = [1, 2, 8, 64]
    (c,) = _calls_s([_flash(q, q, ["", "", "", "0.", raw, "False", "0.125"])])
    assert c.values["causal"] is want and "causal" not in c.unknown


def test_a_flag_that_is_a_list_is_not_a_bool() -> None:
    q = [1, 2, 8, 64]
    (c,) = _calls_s([_flash(q, q, ["", "", "", "0.", ["True"], "False", "0.125"])])
    assert "causal" not in c.values
    assert c.unknown["causal"] == f"argument 4 of {FLASH} reads ['True'], not a bool"


def test_an_argument_list_that_stops_before_the_flag() -> None:
    # flash's is_causal is argument 4; four recorded arguments (0..3) do not reach it
    q = [1, 2, 8, 64]
    (c,) = _calls_s([_flash(q, q, ["", "", "", "0."])])
    assert "causal" not in c.values and "scale" not in c.values
    assert c.unknown["causal"] == f"argument 4 of {FLASH} reads None, not a bool"


# --- shapes: what is read and what is not ------------------------------------------------------------------------


def test_an_op_without_shapes_reads_only_its_flags() -> None:
    (c,) = _calls_s([_op(FLASH, 0, 10, 1, conc=FLASH_CONC)])
    assert c.values == {"causal": False, "scale": 0.125}
    assert c.source == {"causal": FLASH, "scale": FLASH}
    # every shape field says it was not recorded (dtype's own reason is pinned below)
    assert {f: w for f, w in c.unknown.items() if f != "dtype"} == {
        **{f: NOT_RECORDED.format(FLASH, f) for f in ("batch", "heads", "kv_heads", "seq_q", "seq_kv", "head_dim")},
        "enable_gqa": NO_GQA.format(FLASH),
    }


@pytest.mark.parametrize(
    "dims",
    [
        [[1, 2, 8, 64]],  # q only: no k to read Sk and the KV heads from
        [[2, 8, 64], [2, 8, 64], [2, 8, 64]],  # 3-D (H, S, D) inputs: no batch dim to place
        [[2, 8, 64], [1, 2, 8, 64], [1, 2, 8, 64]],  # a 3-D q against a 4-D k
        [[1, 2, 8, 64], [2, 8, 64], [2, 8, 64]],  # a 4-D q against a 3-D k
    ],
)
def test_shapes_other_than_two_4d_tensors_are_not_read(dims: list[Any]) -> None:
    (c,) = _calls_s([_op(FLASH, 0, 10, 1, dims=dims, types=[BF16] * len(dims), conc=FLASH_CONC)])
    assert c.values == {"causal": False, "scale": 0.125}
    assert c.unknown["seq_kv"] == NOT_RECORDED.format(FLASH, "seq_kv")


def test_q_and_k_alone_are_enough() -> None:
    # Input Dims holds q and k only (v's entry is missing): both are read
    (c,) = _calls_s([_op(FLASH, 0, 10, 1, dims=[[1, 2, 4, 64], [1, 2, 10, 64]], types=[BF16] * 2, conc=FLASH_CONC)])
    assert c.values == {k: v for k, v in _full_values(causal=False).items() if k != "enable_gqa"}


def test_shapes_without_types_leave_the_dtype_unknown() -> None:
    q = [1, 2, 8, 64]
    (c,) = _calls_s([_op(FLASH, 0, 10, 1, dims=[q, q, q], conc=FLASH_CONC)])
    assert (c.values["batch"], c.values["seq_q"], "dtype" in c.values) == (1, 8, False)
    assert c.unknown["dtype"] == f"{FLASH} records q's shape but not its type"


def test_a_dtype_outside_the_three_says_so() -> None:
    q = [1, 2, 8, 64]
    (c,) = _calls_s([_flash(q, q, types=["double"] * 3)])
    assert c.unknown == {
        "dtype": f"q's recorded type in {FLASH} is double, not bf16, fp16 or fp32",
        "enable_gqa": NO_GQA.format(FLASH),
    }


def test_an_op_missing_from_the_table_is_not_read() -> None:
    """flash-attn's own op records (B, S, H, D) at its own positions: attnscope has no row for it, so it reads
    nothing rather than read (B, H, S, D) off it (which would give H = 1024 here)."""
    (c,) = _calls_s([_op("flash_attn::_flash_attn_forward", 0, 10, 1, dims=[[2, 1024, 16, 64]] * 3, types=[BF16] * 3)])
    assert (c.op, c.family, c.values, c.flops()) == ("flash_attn::_flash_attn_forward", "flash", {}, None)


def test_compiled_flex_reads_q_first() -> None:
    """decode/flex_compiled.json: the template call triton_tem_fused_flex_attention_0 records q [1, 32, 1, 128]
    then k [1, 8, 8192, 128]; the two triton_per_fused_flex_attention_* reductions after it are parts of the
    same call, not calls."""
    ev = [e for e in raw_events(DECODE / "flex_compiled.json") if e.get("cat") == "cpu_op"]
    (tem,) = [e for e in ev if e["name"].startswith("triton_tem_fused_flex_attention")]
    assert tem["args"]["Input Dims"][:2] == [[1, 32, 1, 128], [1, 8, 8192, 128]]
    assert len([e for e in ev if e["name"].startswith("triton_per_fused_flex_attention")]) == 2
    (c,) = _real(DECODE / "flex_compiled.json")
    assert (c.op, c.family) == ("triton_tem_fused_flex_attention_0", "flex")
    assert c.values == {
        "batch": 1,
        "heads": 32,
        "seq_q": 1,
        "head_dim": 128,
        "kv_heads": 8,
        "seq_kv": 8192,
        "dtype": "bf16",
    }


def test_flex_says_why_causal_is_unknown_and_nothing_else() -> None:
    """flex.json: FlexAttentionAutogradOp records q, k, v [4, 16, 2048, 64] bf16 and scale '0.125' (index 4)."""
    (c,) = _real(H200 / "flex.json")
    assert c.values == {
        "batch": 4,
        "heads": 16,
        "seq_q": 2048,
        "head_dim": 64,
        "kv_heads": 16,
        "seq_kv": 2048,
        "dtype": "bf16",
        "scale": 0.125,
    }
    assert c.unknown == {
        "causal": "flex_attention's mask is a Python function (block_mask / score_mod): not recorded",
        "enable_gqa": NO_GQA.format("FlexAttentionAutogradOp"),
    }


# --- which ops make one call ----------------------------------------------------------------------------------


def test_a_lone_public_op_stays_sdpa() -> None:
    q = [1, 2, 8, 64]
    (c,) = _calls_s([_sdpa(q, q, ["", "", "", "", "0.", "False", "0.125", "False"])])
    assert (c.op, c.family) == (SDPA, "sdpa")


def test_the_first_op_inside_names_the_backend() -> None:
    # the public op with exactly one op inside it: the flash op right after it on the thread
    q = [1, 2, 8, 64]
    (c,) = _calls_s(
        [_sdpa(q, q, ["", "", "", "", "0.", "False", "0.125", "False"]), _flash(q, q, ts=10, dur=80, ext=2)]
    )
    assert (c.op, c.family) == (SDPA, "flash")


def test_an_op_the_tree_nests_at_the_calls_last_instant_is_part_of_it() -> None:
    # the flash op starts exactly where the public op ends (0 + 10) and lasts 0.5 ns: inside it within the tree's
    # rounding, so it names the backend
    q = [1, 2, 8, 64]
    (c,) = _calls_s(
        [_sdpa(q, q, ["", "", "", "", "0.", "False", "0.125", "False"], dur=10), _flash(q, q, ts=10, dur=5e-4)]
    )
    assert (c.op, c.family) == (SDPA, "flash")


def test_calls_on_one_thread_do_not_lend_each_other_fields() -> None:
    """Three flash calls one after another on one thread (at 0, 20 and 40, 10 long each); only the middle one
    records a scale (argument 6).  The others stay without one."""
    q = [1, 2, 8, 64]
    short = ["", "", "", "0.", "False", "False"]
    calls = _calls_s(
        [
            _flash(q, q, short, ts=0, ext=1),
            _flash(q, q, ["", "", "", "0.", "False", "False", "0.5"], ts=20, ext=2),
            _flash(q, q, short, ts=40, ext=3),
        ]
    )
    assert [c.values.get("scale") for c in calls] == [None, 0.5, None]
    assert [c.source.get("scale") for c in calls] == [None, FLASH, None]


# --- messages of the unknown ------------------------------------------------------------------------------------


def test_a_causal_flag_of_unknown_alignment_says_so() -> None:
    """An op whose causal flag has no known alignment (align None) with Sq=4 != Sk=10: the reason names the op the
    flag came from, else the call's op."""
    why = "says causal with Sq=4 != Sk=10, and which alignment it means (top-left or lower-right) is not known "
    why += "for this op"
    c = AttentionCall("aten::outer", "sdpa", "forward", values=_full_values(), source={"causal": "aten::inner"})
    shape._explain_missing(c, "aten::outer")
    assert c.unknown == {"causal_align": f"aten::inner {why}"}
    c = AttentionCall("aten::outer", "sdpa", "forward", values=_full_values())
    shape._explain_missing(c, "aten::outer")
    assert c.unknown == {"causal_align": f"aten::outer {why}"}
    assert c.mask() is None and c.mask_basis() is None and c.flops() is None


def test_no_alignment_is_asked_for_when_it_cannot_matter() -> None:
    # Sq = Sk: both alignments keep the same scores; not causal; or causal with its alignment known
    for kw, align in (({"seq_kv": 4}, None), ({"causal": False}, None), ({}, "top_left")):
        c = AttentionCall("aten::x", "sdpa", "forward", values=_full_values(**kw), align=align)
        shape._explain_missing(c, "aten::x")
        assert c.unknown == {}, kw


def test_a_top_left_call_with_sq_ne_sk_reads_every_field() -> None:
    (c,) = _calls_s([_sdpa([1, 2, 4, 64], [1, 2, 10, 64], ["", "", "", "", "0.", "True", "0.125", "False"])])
    assert (c.values, c.unknown, c.align, c.align_why) == (_full_values(), {}, "top_left", SDPA_WHY)
    assert c.mask_basis() == f"causal@top_left: {SDPA} with Sq=4 != Sk=10: {SDPA_WHY}"
    assert c.flops() == 4 * 64 * 2 * (1 + 2 + 3 + 4)  # query i sees keys 0..i


def test_mask_and_basis_of_a_call_without_causal_masking() -> None:
    (c,) = _calls_s([_flash([1, 2, 4, 64], [1, 2, 10, 64])])
    assert (c.mask(), c.mask_basis()) == ("none", f"none: {FLASH} with is_causal=False and no attn_mask")
    # a call built by hand, no source recorded: the basis names the call's op
    c = AttentionCall(SDPA, "sdpa", "forward", values={"causal": False})
    assert c.mask_basis() == f"none: {SDPA} with is_causal=False and no attn_mask"


def test_flops_need_the_mask_and_every_size() -> None:
    # causal, Sq != Sk, alignment unknown: no mask, so no count
    assert AttentionCall("aten::x", "sdpa", "forward", values=_full_values()).flops() is None
    # head_dim missing: no count either
    v = {k: x for k, x in _full_values(causal=False).items() if k != "head_dim"}
    assert AttentionCall("aten::x", "sdpa", "forward", values=v).flops() is None


# --- masks built in the trace -----------------------------------------------------------------------------------


def _build(sq: int, sk: int, diagonal: int, ts: float, ext: int, ones: str = "aten::ones") -> list[dict[str, Any]]:
    """A boolean ones([Sq, Sk]) (or ones_like of a [Sq, Sk] tensor) then tril(diagonal), 10 µs each."""
    if ones == "aten::ones":
        o = _op(ones, ts, 10, ext, dims=[[]] * 5, types=["ScalarList", "Scalar"], conc=[f"[{sq}, {sk}]", "11"])
    else:
        o = _op(ones, ts, 10, ext, dims=[[sq, sk]], types=["bool"], conc=[""])
    t = _op("aten::tril", ts + 20, 10, ext + 1, dims=[[sq, sk], []], types=["bool", "Scalar"], conc=["", str(diagonal)])
    return [o, t]


def _masked_call(sq: int, sk: int, ts: float, ext: int, mask: list[int] | None = None) -> list[dict[str, Any]]:
    """SDPA(q, k, v, attn_mask, 0., is_causal=False, 0.125, False), B=1, H=2, D=64, run by cuDNN."""
    q, k = [1, 2, sq, 64], [1, 2, sk, 64]
    m = mask or [sq, sk]
    return [
        _sdpa(
            q, k, ["", "", "", "", "0.", "False", "0.125", "False"], mask=m, ts=ts, dur=50, ext=ext, mask_type="bool"
        ),
        _op(
            "aten::_scaled_dot_product_cudnn_attention",
            ts + 10,
            30,
            ext + 1,
            dims=[q, k, k, m],
            types=[BF16] * 4,
            conc=["", "", "", "", "False", "0.", "False", "False", "0.125"],
        ),
    ]


def _why(dims: list[int], diagonal: int, off: str) -> str:
    return (
        f"the attn_mask {dims} {SDPA} took was built just before it by aten::ones({dims}) then "
        f"aten::tril(diagonal={diagonal} {off}), the form torch.nn.attention.bias materialises; linked by "
        "shape and order (a trace records no tensor identities)"
    )


def test_decode_lower_right_mask_in_full() -> None:
    """decode/sdpa_cudnn.json: aten::ones Concrete Inputs[0] '[1, 8192]', aten::tril diagonal '8191' (= Sk - Sq),
    then SDPA with q [1, 32, 1, 128], k [1, 8, 8192, 128], a [1, 8192] bool attn_mask, is_causal 'False',
    scale '0.088388347648318447', enable_gqa 'True'; cuDNN ran it.  One query sees all 8192 keys."""
    ev = [e for e in raw_events(DECODE / "sdpa_cudnn.json") if e.get("cat") == "cpu_op"]
    (sdpa,) = [e["args"] for e in ev if e["name"] == SDPA]
    (tril,) = [e["args"] for e in ev if e["name"] == "aten::tril"]
    assert sdpa["Input Dims"][3] == [1, 8192] and tril["Concrete Inputs"][1] == "8191"
    scale = float(sdpa["Concrete Inputs"][6])
    why = _why([1, 8192], 8191, "= Sk - Sq: lower-right")
    (c,) = _real(DECODE / "sdpa_cudnn.json")
    dims = ("batch", "heads", "seq_q", "head_dim", "kv_heads", "seq_kv", "dtype")
    assert shape.to_dict(c) == {
        "op": SDPA,
        "family": "cudnn",
        "direction": "forward",
        "batch": 1,
        "heads": 32,
        "kv_heads": 8,
        "seq_q": 1,
        "seq_kv": 8192,
        "head_dim": 128,
        "dtype": "bf16",
        "causal": True,
        "scale": scale,
        "enable_gqa": True,
        "mask": "causal_lower_right",
        "causal_align": "lower_right",
        "mask_basis": f"causal_lower_right, inferred: {why}",
        "mask_inferred_from": ["aten::ones", "aten::tril"],
        "flops": 4 * 128 * 32 * 8192,
        "read_from": {
            **dict.fromkeys(dims, SDPA),
            "causal": "aten::ones + aten::tril",
            "scale": SDPA,
            "enable_gqa": SDPA,
        },
        "unknown": {},
    }


def test_top_left_and_square_masks_built_in_the_trace() -> None:
    # top-left, Sq=3 against Sk=7: query i sees keys 0..i, 1 + 2 + 3 = 6 scores per head
    (c,) = _calls_s(_build(3, 7, 0, 0, 1) + _masked_call(3, 7, 40, 3))
    assert (c.mask(), c.align, c.align_why) == ("causal@top_left", "top_left", _why([3, 7], 0, "= 0: top-left"))
    assert (c.source["causal"], c.unknown, c.flops()) == ("aten::ones + aten::tril", {}, 4 * 64 * 2 * 6)
    # square, Sq = Sk = 5: plain causal, no alignment to state, 5·6/2 = 15 scores per head
    (c,) = _calls_s(_build(5, 5, 0, 0, 1) + _masked_call(5, 5, 40, 3))
    assert (c.mask(), c.align, c.align_why) == ("causal", None, _why([5, 5], 0, "= 0: top-left"))
    assert c.mask_basis() == f"causal, inferred: {_why([5, 5], 0, '= 0: top-left')}"
    assert (c.unknown, c.flops()) == ({}, 4 * 64 * 2 * 15)


def test_a_tril_that_is_no_mask_does_not_stop_the_search() -> None:
    # a float tril of [4, 4] (no ones before it: not a mask build) comes first; the lower-right build after it
    # (Sq=3 at keys 4..6 of Sk=7: 5 + 6 + 7 = 18 scores per head) is still read
    other = _op("aten::tril", 0, 5, 1, dims=[[4, 4], []], types=["float", "Scalar"], conc=["", "0"])
    (c,) = _calls_s([other, *_build(3, 7, 4, 10, 2), *_masked_call(3, 7, 50, 4)])
    assert (c.mask(), c.flops()) == ("causal_lower_right", 4 * 64 * 2 * 18)


def test_a_mask_broadcast_over_the_queries_is_not_read_and_the_next_one_is() -> None:
    """Call 1 takes a [1, 7] mask built with tril(diagonal=6) for Sq=3 queries: one row, broadcast, not the
    call's [Sq, Sk] causal mask.  Call 2, after it, takes a [3, 7] lower-right build (18 scores per head)."""
    events = _build(1, 7, 6, 0, 1) + _masked_call(3, 7, 40, 3, mask=[1, 7])
    events += _build(3, 7, 4, 200, 11) + _masked_call(3, 7, 240, 13)
    c1, c2 = _calls_s(events)
    assert "causal" not in c1.values
    assert c1.unknown["causal"] == f"{SDPA} got an explicit attn_mask tensor: its pattern is not recorded"
    assert (c2.mask(), c2.flops()) == ("causal_lower_right", 4 * 64 * 2 * 18)


def test_a_second_build_of_the_same_mask_keeps_the_first_as_evidence() -> None:
    # ones + tril, then ones_like + tril of the same [3, 7] lower-right mask, then the call: the mask is the same,
    # and the call names the first build linked to it
    events = _build(3, 7, 4, 0, 1) + _build(3, 7, 4, 40, 3, ones="aten::ones_like") + _masked_call(3, 7, 80, 5)
    (c,) = _calls_s(events)
    assert (c.mask(), c.source["causal"], c.mask_inferred_from) == (
        "causal_lower_right",
        "aten::ones + aten::tril",
        ("aten::ones", "aten::tril"),
    )


def test_reading_a_built_mask_needs_no_reason_to_replace() -> None:
    # a call given an attn_mask, whose unknown holds no reason for causal yet: the build is read all the same
    tree = _tree(_build(3, 7, 4, 0, 1) + _masked_call(3, 7, 40, 3))
    i = next(j for j, o in enumerate(tree.ops) if o.name == SDPA)
    c = AttentionCall(SDPA, "cudnn", "forward", values={"seq_q": 3, "seq_kv": 7, "attn_mask": True})
    shape._read_built_masks(tree, {i: c})
    assert (c.values["causal"], c.align, c.unknown) == (True, "lower_right", {})


def test_efficient_with_a_mask_is_not_read_as_unmasked() -> None:
    """SDPA with a boolean attn_mask run by the efficient backend: _efficient_attention_forward gets the mask as
    its bias (argument 3) and custom_mask_type '0'.  The '0' does not mean no mask: the call's mask stays the
    tensor's, unknown, or the causal build the trace shows (Sq=3 at keys 4..6 of Sk=7: 18 scores per head)."""
    q, k, m = [1, 2, 3, 64], [1, 2, 7, 64], [3, 7]
    bias = [1, 2, 3, 7]
    inner = [
        _op(
            "aten::_scaled_dot_product_efficient_attention",
            50,
            30,
            11,
            dims=[q, k, k, bias, [], [], [], []],
            types=[BF16] * 4 + ["Scalar"] * 4,
            conc=["", "", "", "", "False", "0.", "False", "0.125"],
        ),
        _op(
            EFF_FWD,
            55,
            20,
            12,
            dims=[[1, 3, 2, 64], [1, 7, 2, 64], [1, 7, 2, 64], bias] + [[]] * 10,
            types=[BF16] * 4 + [""] * 4 + ["Scalar"] * 4 + ["", ""],
            conc=[""] * 8 + ["0.", "0", "False", "0.125", "", ""],
        ),
    ]
    call = [_sdpa(q, k, ["", "", "", "", "0.", "False", "0.125", "False"], mask=m, ts=40, dur=50, ext=10), *inner]
    (c,) = _calls_s(call)
    assert (c.family, c.values.get("causal"), c.mask(), c.flops()) == ("efficient", None, None, None)
    assert c.unknown["causal"] == f"{SDPA} got an explicit attn_mask tensor: its pattern is not recorded"
    (c,) = _calls_s(_build(3, 7, 4, 0, 1) + call)
    assert (c.mask(), c.source["causal"], c.flops()) == (
        "causal_lower_right",
        "aten::ones + aten::tril",
        4 * 64 * 2 * 18,
    )


def test_the_mask_search_runs_only_with_a_call_and_a_tril(monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[Any] = []
    monkeypatch.setattr(mask_ops, "find", lambda tree: seen.append(tree) or [])
    # a tril and no attention op; an attention op and no tril
    assert _calls_s(_build(3, 7, 4, 0, 1)) == []
    assert len(_calls_s([_flash([1, 2, 8, 64], [1, 2, 8, 64])])) == 1
    assert seen == []


# --- the case of the trace --------------------------------------------------------------------------------------


def test_shape_key_leaves_out_scale_and_gqa() -> None:
    q = [1, 2, 8, 64]
    a, b = _calls_s(
        [
            _sdpa(q, q, ["", "", "", "", "0.", "True", "0.125", "False"], ts=0, ext=1),
            _sdpa(q, q, ["", "", "", "", "0.", "True", "0.5", "True"], ts=200, ext=2),
        ]
    )
    assert a.shape_key() == b.shape_key() == (1, 2, 2, 8, 8, 64, "bf16", True)
    assert shape.case_of([a, b]) == (
        {
            "batch": 1,
            "heads": 2,
            "seq_q": 8,
            "head_dim": 64,
            "dtype": "bf16",
            "causal": True,
            "kv_heads": None,
            "seq_kv": None,
        },
        {},
    )


def test_case_of_no_call_and_of_two_shapes() -> None:
    assert shape.case_of([]) == (None, {"case": "no attention op (SDPA, its backends, flex) in the trace"})
    calls = _calls_s([_flash([1, 2, 8, 64], [1, 2, 8, 64]), _flash([1, 2, 16, 64], [1, 2, 16, 64], ts=20, ext=2)])
    assert shape.case_of(calls) == (None, {"case": "2 different attention shapes in the trace; see attention_calls"})


def _bwd(s: int, ts: float, ext: int) -> dict[str, Any]:
    """Flash backward (grad_out, q, k, v, out, lse, ..., is_causal at 11, ..., scale at 14), (B, H, S, D)."""
    g = [1, 2, s, 64]
    conc = [""] * 8 + [str(s), str(s), "0.", "False", "", "", "0.125"]
    name = "aten::_scaled_dot_product_flash_attention_backward"
    return _op(name, ts, 10, ext, dims=[g, g, g, g, g, [1, 2, s]], types=[BF16] * 5 + ["float"], conc=conc)


def test_case_of_takes_the_forward_calls_else_all() -> None:
    # a forward call of S=8 and a backward of S=16: the case is the forward's
    fwd8 = {
        "batch": 1,
        "heads": 2,
        "seq_q": 8,
        "head_dim": 64,
        "dtype": "bf16",
        "causal": False,
        "kv_heads": None,
        "seq_kv": None,
    }
    calls = _calls_s([_flash([1, 2, 8, 64], [1, 2, 8, 64]), _bwd(16, 100, 2)])
    assert [c.direction for c in calls] == ["forward", "backward"]
    assert shape.case_of(calls) == (fwd8, {})
    # backward calls alone: theirs
    assert shape.case_of(_calls_s([_bwd(16, 100, 2)])) == ({**fwd8, "seq_q": 16}, {})


def test_case_of_a_forward_with_its_backward_is_fwd_bwd() -> None:
    """A training step: the forward and the backward of one shape make the case fwd_bwd; a backward of another
    shape does not (test_case_of_takes_the_forward_calls_else_all)."""
    fwd16 = shape.case_of(_calls_s([_bwd(16, 100, 2)]))[0]
    assert fwd16 is not None
    fwd = [c for c in _calls_s([_flash([1, 2, 16, 64], [1, 2, 16, 64])])]
    bwd = _calls_s([_bwd(16, 100, 2)])
    assert fwd[0].shape_key() == bwd[0].shape_key()
    assert shape.case_of(fwd + bwd) == ({**fwd16, "mode": "fwd_bwd"}, {})
    other = _calls_s([_bwd(32, 100, 2)])  # a backward of another shape first, then this shape's
    assert shape.case_of(fwd + other + bwd + bwd) == ({**fwd16, "mode": "fwd_bwd"}, {})
    assert "mode" not in (shape.case_of(fwd)[0] or {})


def test_case_of_says_why_per_field() -> None:
    (flex,) = _real(H200 / "flex.json")
    assert shape.case_of([flex]) == (
        None,
        {"causal": "flex_attention's mask is a Python function (block_mask / score_mod): not recorded"},
    )
    # a call built by hand without dtype and without a reason for it
    v = {k: x for k, x in _full_values().items() if k != "dtype"}
    assert shape.case_of([AttentionCall("aten::x", "sdpa", "forward", values=v)]) == (None, {"dtype": "not recorded"})


def test_case_of_gqa_without_a_scale() -> None:
    """ctx/math_enable_gqa.json: q [1, 8, 512, 64], k [1, 2, 512, 64], is_causal 'True', enable_gqa 'True', and
    no scale recorded ('' at the public op's index 6 and the math op's index 7): the case needs no scale."""
    ev = [e for e in raw_events(CTX / "math_enable_gqa.json") if e.get("cat") == "cpu_op"]
    (outer,) = [e["args"] for e in ev if e["name"] == SDPA]
    (math,) = [e["args"] for e in ev if e["name"] == "aten::_scaled_dot_product_attention_math"]
    assert outer["Input Dims"][:2] == [[1, 8, 512, 64], [1, 2, 512, 64]]
    assert outer["Concrete Inputs"][6] == "" and math["Concrete Inputs"][7] == ""
    (c,) = _real(CTX / "math_enable_gqa.json")
    assert "scale" not in c.values
    assert shape.case_of([c]) == (
        {
            "batch": 1,
            "heads": 8,
            "seq_q": 512,
            "head_dim": 64,
            "dtype": "bf16",
            "causal": True,
            "kv_heads": 2,
            "seq_kv": None,
        },
        {},
    )


def test_case_of_a_decode_step_states_sk_and_the_mask() -> None:
    """decode/sdpa_flash.json: the flash op (no public op) records q [1, 32, 1, 128], k [1, 8, 8192, 128],
    is_causal 'True': flash's lower-right."""
    ev = [e for e in raw_events(DECODE / "sdpa_flash.json") if e.get("cat") == "cpu_op"]
    (fl,) = [e["args"] for e in ev if e["name"] == FLASH]
    assert fl["Input Dims"][:2] == [[1, 32, 1, 128], [1, 8, 8192, 128]] and fl["Concrete Inputs"][4] == "True"
    (c,) = _real(DECODE / "sdpa_flash.json")
    assert shape.case_of([c]) == (
        {
            "batch": 1,
            "heads": 32,
            "seq_q": 1,
            "head_dim": 128,
            "dtype": "bf16",
            "causal": True,
            "kv_heads": 8,
            "seq_kv": 8192,
            "mask": "causal_lower_right",
        },
        {},
    )


# --- GPU time inside attention ops ------------------------------------------------------------------------------


def _time_tree():
    # SDPA (0-100) with aten::empty inside (5-7); aten::linear (200-250) with aten::mm inside (210-240)
    return _tree(
        [
            _op(SDPA, 0, 100, 1),
            _op("aten::empty", 5, 2, 2),
            _op("aten::linear", 200, 50, 3),
            _op("aten::mm", 210, 30, 4),
        ]
    )


def test_attention_time_counts_the_events_launched_inside_attention_ops() -> None:
    tree = _time_tree()
    at = {o.name: i for i, o in enumerate(tree.ops)}
    assert at[SDPA] == 0  # the first op of the thread
    # launched by SDPA (1), by the op inside it (2), by aten::mm under aten::linear (4), by nothing (8)
    launcher = [at[SDPA], at["aten::empty"], at["aten::mm"], -1]
    assert shape.attention_time_us(tree, launcher, [1.0, 2.0, 4.0, 8.0]) == 3.0
    with pytest.raises(ValueError):
        shape.attention_time_us(tree, launcher, [1.0, 2.0, 4.0])


def test_attention_time_without_attention_ops_is_zero() -> None:
    tree = _tree([_op("aten::linear", 0, 50, 1), _op("aten::mm", 10, 30, 2)])
    assert shape.attention_time_us(tree, [0, 1], [4.0, 8.0]) == 0.0


@pytest.mark.parametrize(
    ("name", "layout", "n_args", "bias_at", "causal_at", "scale_at"),
    [
        # positions from torch's schemas (torch.ops.aten.<op>.default._schema), written out here by hand
        ("aten::_scaled_dot_product_efficient_attention_backward", "bhsd", 13, 4, 11, 12),
        ("aten::_scaled_dot_product_cudnn_attention_backward", "bhsd", 16, 8, 14, 15),
        ("aten::_cudnn_attention_backward", "bhsd", 16, 8, 14, 15),
        ("aten::_cudnn_attention_forward", "bhsd", 13, 3, 10, 12),
    ],
)
def test_a_backward_or_cudnn_op_handed_a_bias_is_not_read_as_unmasked(
    name: str, layout: str, n_args: int, bias_at: int, causal_at: int, scale_at: int
) -> None:
    """The op alone in the trace, is_causal False and a (B, H, Sq, Sk) bias tensor at the schema's position: the
    mask is the tensor's, not recorded, so neither the mask nor the FLOPs are guessed; without the bias it is
    an unmasked call of 4·H·D·Sq·Sk = 4·2·64·3·7 = 10,752 forward FLOPs."""
    direction = 1 if "backward" in name else 0
    qk = [[1, 2, 3, 64], [1, 2, 7, 64], [1, 2, 7, 64]]
    dims: list[Any] = [[]] * n_args
    types: list[str] = [""] * n_args
    conc: list[str] = [""] * n_args
    first = direction  # a backward op records grad_out first, then q, k, v
    for i, d in enumerate(qk):
        dims[first + i], types[first + i] = d, BF16
    if direction:
        dims[0], types[0] = [1, 2, 3, 64], BF16
    conc[causal_at], conc[scale_at] = "False", "0.125"
    with_bias = list(dims)
    with_bias[bias_at] = [1, 2, 3, 7]
    (c,) = _calls_s([_op(name, 10, 20, 1, dims=with_bias, types=types, conc=conc)])
    assert (c.direction, c.mask(), c.flops()) == ("backward" if direction else "forward", None, None)
    assert "attn_mask" in c.unknown["causal"]
    (plain,) = _calls_s([_op(name, 10, 20, 1, dims=dims, types=types, conc=conc)])
    assert plain.mask() == "none"
    assert plain.flops() == (10_752 * 5 // 2 if direction else 10_752)


def test_an_sdpa_call_without_scale_says_torchs_default_and_a_cut_argument_list_says_so() -> None:
    """scale=None is recorded as an empty Concrete Input (argument 6): the reason names torch's default; an
    argument list cut after is_causal (six entries) records neither scale nor enable_gqa."""
    q = [1, 2, 8, 64]
    (c,) = _calls_s([_sdpa(q, q, ["", "", "", "", "0.", "True", "", "False"])])
    assert "scale" not in c.values and c.values["enable_gqa"] is False
    assert c.unknown["scale"] == f"not passed to {SDPA} (None): torch's default, 1/√head_dim"
    (c,) = _calls_s([_sdpa(q, q, ["", "", "", "", "0.", "True"])])
    assert c.unknown["scale"] == f"{SDPA} records no argument 6 (scale): no Concrete Inputs"
    assert c.unknown["enable_gqa"] == f"{SDPA} records no argument 7 (enable_gqa): no Concrete Inputs"


def test_unreadable_scale_and_enable_gqa_quote_what_the_trace_holds() -> None:
    q = [1, 2, 8, 64]
    (c,) = _calls_s([_sdpa(q, q, ["", "", "", "", "0.", "True", "[0.1]", "yes"])])
    assert c.unknown["scale"] == f"argument 6 of {SDPA} reads '[0.1]', not a number"
    assert c.unknown["enable_gqa"] == f"argument 7 of {SDPA} reads 'yes', not a bool"


def test_an_inner_op_that_records_the_scale_fills_what_the_public_op_left_empty() -> None:
    """SDPA [0, 100] with scale None ⊃ flash [10, 80] with scale 0.125: the value is read from the inner op, and
    the outer op's reason is dropped."""
    q = [1, 2, 8, 64]
    (c,) = _calls_s([_sdpa(q, q, ["", "", "", "", "0.", "True", "", "False"]), _flash(q, q, ts=10, dur=80, ext=2)])
    assert (c.values["scale"], c.source["scale"], "scale" in c.unknown) == (0.125, FLASH, False)


def test_a_backend_op_that_starts_the_instant_the_public_op_ends_is_another_call() -> None:
    """SDPA [0, 100] with nothing inside, then flash [100, 110]: it starts as the SDPA ends and runs past it, so
    it is not nested (the op tree's rule) and does not name the SDPA call's backend."""
    q = [1, 2, 8, 64]
    calls = _calls_s([_sdpa(q, q, ["", "", "", "", "0.", "True", "0.125", "False"]), _flash(q, q, ts=100, ext=2)])
    assert [(c.op, c.family) for c in calls] == [(SDPA, "sdpa"), (FLASH, "flash")]


def test_an_explicit_mask_keeps_causal_unknown_even_if_an_op_inside_says_is_causal_false():
    """SDPA [0, 100] with an attn_mask [8, 8] ⊃ flash [10, 80] whose is_causal reads 'False': the mask's pattern is
    not recorded, so causal stays unknown (the outer op's reason), not False from the inner op."""
    q = [1, 2, 8, 64]
    sdpa = _sdpa(q, q, ["", "", "", "", "0.", "False", "0.125", "False"], mask=[8, 8], mask_type="c10::BFloat16")
    (c,) = _calls_s([sdpa, _flash(q, q, ts=10, dur=80, ext=2)])
    assert "causal" not in c.values and c.values["attn_mask"] is True
    assert c.unknown["causal"] == f"{SDPA} got an explicit attn_mask tensor: its pattern is not recorded"
