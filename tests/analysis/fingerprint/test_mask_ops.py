"""A mask built in the trace (fingerprint/mask_ops.py) and the advice it chooses, on small synthetic traces whose
answer is worked out by hand (the op sequence torch 2.11 records for CausalBias and for user code)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from attnscope.analysis.fingerprint.attribution import Attribution, build_op_tree
from attnscope.analysis.fingerprint.mask_ops import NEAR, MaskBuild, _int, describe, find
from attnscope.analysis.fingerprint.shape import attention_calls
from attnscope.analysis.rules.mask_build import mask_rebuilt
from attnscope.api import analyze
from attnscope.document.schema import result_to_dict
from attnscope.trace import CpuOp, GpuEvent, load_trace
from tests import synth
from tests.rawtrace import H200

BF16 = "c10::BFloat16"


def _ops(sq: int, sk: int, diagonal: int, mask_dims: list[int]) -> list[dict[str, Any]]:
    """ones([Sq, Sk], bool) → tril(diagonal) → SDPA(q, k, v, attn_mask, 0., is_causal=False, scale, gqa=False)."""
    q, k = [1, 2, sq, 64], [1, 2, sk, 64]
    size = f"[{sq}, {sk}]"
    return [
        synth.op("aten::ones", 0, 10, 1, **{"Input Dims": [[]] * 5, "Input type": ["ScalarList", "Scalar"],
                                           "Concrete Inputs": [size, "11", "", "", "False"]}),
        synth.op("aten::fill_", 2, 5, 2, **{"Input Dims": [[sq, sk], []], "Input type": ["bool", "Scalar"],
                                            "Concrete Inputs": ["", "1."]}),
        synth.op("aten::tril", 20, 10, 3, **{"Input Dims": [[sq, sk], []], "Input type": ["bool", "Scalar"],
                                             "Concrete Inputs": ["", str(diagonal)]}),
        synth.op("aten::scaled_dot_product_attention", 40, 100, 4,
                 **{"Input Dims": [q, k, k, mask_dims, [], [], [], []], "Input type": [BF16] * 3 + ["bool"],
                    "Concrete Inputs": ["", "", "", "", "0.", "False", "0.125", "False"]}),
        synth.op("aten::where", 45, 10, 5, **{"Input Dims": [[sq, sk], [], []], "Input type": ["bool", "Scalar", BF16],
                                              "Concrete Inputs": ["", "0.", ""]}),
        synth.op("aten::_scaled_dot_product_cudnn_attention", 60, 70, 6,
                 **{"Input Dims": [q, k, k, mask_dims], "Input type": [BF16] * 4,
                    "Concrete Inputs": ["", "", "", "", "False", "0.", "False", "False", "0.125"]}),
    ]  # fmt: skip


def _tree(ops: list[dict[str, Any]]) -> Any:
    from attnscope.trace import trace_from_doc

    return build_op_tree(trace_from_doc(synth.doc(ops)).cpu_ops)


def test_lower_right_build_is_read_as_causal_lower_right() -> None:
    tree = _tree(_ops(3, 7, 4, [3, 7]))
    (mb,) = find(tree)
    assert mb.kind() == "causal_lower_right" and mb.inside is None
    assert tree.ops[mb.consumer].name == "aten::scaled_dot_product_attention"
    assert [tree.ops[i].name for i in mb.convert] == ["aten::where"]
    (c,) = attention_calls(tree)
    # Sq=3 queries at key positions 4, 5, 6 of Sk=7: they keep 5 + 6 + 7 = 18 scores per head, 2 heads, D=64
    assert c.mask() == "causal_lower_right" and c.flops() == 4 * 64 * 2 * 18
    assert c.mask_inferred_from == ("aten::ones", "aten::tril")


def test_top_left_square_build_asks_for_is_causal_which_was_not_passed() -> None:
    tree = _tree(_ops(5, 5, 0, [5, 5]))
    (c,) = attention_calls(tree)
    assert c.mask() == "causal" and c.flops() == 4 * 64 * 2 * (5 * 6 // 2)
    r = {"variant": "user", "device_kind": "cpu", "mask_rebuilt": True, "kernels": []}
    from attnscope.analysis.fingerprint.mask_ops import describe

    r["mask_builds"] = [describe(tree, None, mb) for mb in find(tree)]
    (i,) = mask_rebuilt(r)
    assert i.evidence["is_causal_passed"] is False and "pass is_causal=True" in i.advice
    assert "already passed" not in i.advice


def test_a_mask_of_another_shape_or_diagonal_is_not_read() -> None:
    # the tril's shape differs from the attn_mask's: no link, the call keeps its mask unknown
    (c,) = attention_calls(_tree(_ops(3, 7, 4, [3, 9])))
    assert c.values.get("causal") is None and "attn_mask" in c.unknown["causal"]
    # a band (diagonal neither 0 nor Sk - Sq) is not a causal mask of attnscope's grammar
    tree = _tree(_ops(3, 7, 1, [3, 7]))
    (mb,) = find(tree)
    assert mb.kind() is None
    (c,) = attention_calls(tree)
    assert c.values.get("causal") is None


def test_mask_builds_travel_in_the_json(tmp_path) -> None:
    p = synth.write_kineto(tmp_path / "t.json", synth.doc(_ops(3, 7, 4, [3, 7])))
    d = result_to_dict(analyze(p))
    (b,) = d["mask_builds"]
    assert (b["mask"], b["taken_by"], b["backend"], b["is_causal"], b["linked_by"]) == (
        "causal_lower_right",
        "aten::scaled_dot_product_attention",
        "cudnn",
        False,
        "shape and order",
    )


# A causal mask built in the trace (fingerprint/mask_ops.py), pinned rule by rule on small op lists written by hand.
#
# Each op list is the sequence torch 2.11 records (aten::ones → aten::empty/fill_ → aten::tril, then the attention
# call and its aten::where), laid out in µs on one thread unless told; the expected answer of every test is read off
# that layout by hand (indices count the ops in start order, a parent before its children).  One test reads the
# math backend's build from the H200 trace tests/data/h200/sdpa_math.json with the json module.


SDPA = "aten::scaled_dot_product_attention"
MATH = "aten::_scaled_dot_product_attention_math"
CUDNN = "aten::_scaled_dot_product_cudnn_attention"
FLASH = "aten::_scaled_dot_product_flash_attention"
Q = [1, 2, 5, 64]  # B=1, H=2, S=5, D=64


def cpu(name: str, ts: float, dur: float, dims: Any = None, types: Any = None, conc: Any = None, tid: int = 1) -> CpuOp:
    return CpuOp.recorded(name, tid, ts, dur, None, input_dims=dims, input_types=types, concrete_inputs=conc)


def ones(ts: float, dur: float, size: list[int], tid: int = 1) -> CpuOp:
    """torch.ones(size, dtype=bool): the size is a Concrete Input ('[5, 5]'), dtype 11 = bool."""
    return cpu("aten::ones", ts, dur, [[]] * 5, ["ScalarList", "Scalar", "Scalar", "", ""],
               [str(size), "11", "0", "", ""], tid)  # fmt: skip


def fill(ts: float, dur: float, size: list[int], tid: int = 1) -> CpuOp:
    return cpu("aten::fill_", ts, dur, [size, []], ["bool", "Scalar"], ["", "1."], tid)


def tril(ts: float, dur: float, size: list[int], diag: int, name: str = "aten::tril", tid: int = 1) -> CpuOp:
    return cpu(name, ts, dur, [size, []], ["bool", "Scalar"], ["", str(diag)], tid)


def where(ts: float, dur: float, size: list[int], first: str = "bool", name: str = "aten::where", tid: int = 1):
    return cpu(name, ts, dur, [size, [], []], [first, "Scalar", "float"], ["", "0.", ""], tid)


def sdpa(ts: float, dur: float, mask: list[int], causal: str = "False", tid: int = 1, conc: Any = "all") -> CpuOp:
    """The public op: (q, k, v, attn_mask, dropout_p, is_causal, scale, enable_gqa); is_causal is Concrete Input 5."""
    c = ["", "", "", "", "0.", causal, "0.125", "False"] if conc == "all" else conc
    return cpu(SDPA, ts, dur, [Q, Q, Q, mask, [], [], [], []], [BF16] * 3 + ["bool" if mask else ""], c, tid)


def cudnn(ts: float, dur: float, mask: list[int], tid: int = 1) -> CpuOp:
    return cpu(CUDNN, ts, dur, [Q, Q, Q, mask], [BF16] * 4, ["", "", "", "", "False", "0.", "False", "False", "0.125"],
               tid)  # fmt: skip


def caller(mask: list[int] | None = None, size: list[int] | None = None, tid: int = 1) -> list[CpuOp]:
    """User code: ones [0,10] ⊃ fill_ [2,7]; tril [20,30]; SDPA [40,140] ⊃ where [45,55], cudnn [60,130]."""
    size = size or [5, 5]
    mask = mask or [1, 1, 5, 5]
    return [
        ones(0, 10, size, tid),
        fill(2, 5, size, tid),
        tril(20, 10, size, 0, tid=tid),
        sdpa(40, 100, mask, tid=tid),
        where(45, 10, mask, tid=tid),
        cudnn(60, 70, mask, tid),
    ]


def math_build(tid: int = 1) -> list[CpuOp]:
    """SDPA's math backend expanding is_causal=True: SDPA [0,200] ⊃ math [5,195] ⊃ ones [10,20] ⊃ fill_ [12,17],
    tril [30,40], where [50,60], bmm [70,90]."""
    return [
        sdpa(0, 200, [], causal="True", tid=tid),
        cpu(
            MATH,
            5,
            190,
            [Q, Q, Q, [], [], [], [], [], []],
            [BF16] * 3 + ["", "Scalar", "Scalar", "", "Scalar", ""],
            ["", "", "", "", "0.", "True", "", "0.125", "False"],
            tid,
        ),
        ones(10, 10, [5, 5], tid),
        fill(12, 5, [5, 5], tid),
        tril(30, 10, [5, 5], 0, tid=tid),
        where(50, 10, [5, 5], tid=tid),
        cpu("aten::bmm", 70, 20, [[2, 5, 64], [2, 64, 5]], ["float", "float"], ["", ""], tid),
    ]


def tree_of(ops: list[CpuOp]) -> Any:
    return build_op_tree(ops)


# ---- kind(): the mask in attnscope's grammar --------------------------------------------------------------------


def mb(dims: list[int], diagonal: int | None, ones_at: int | None = 0, tril_kind: bool = True) -> MaskBuild:
    return MaskBuild(tril=1, dims=dims, diagonal=diagonal, ones=ones_at, tril_kind=tril_kind)


def test_kind_names_the_three_causal_masks_exactly() -> None:
    # square, diagonal 0: causal; Sq=3 < Sk=7 at diagonal 0: top-left; at diagonal 7 - 3 = 4: lower-right
    assert mb([5, 5], 0).kind() == "causal"
    assert mb([3, 7], 0).kind() == "causal@top_left"
    assert mb([3, 7], 4).kind() == "causal_lower_right"


def test_kind_is_none_for_a_band_a_triu_a_tril_not_of_ones_an_unknown_diagonal_or_a_3d_mask() -> None:
    assert mb([5, 5], 2).kind() is None  # square band: neither 0 nor Sk - Sq = 0
    assert mb([5, 5], 0, tril_kind=False).kind() is None  # triu keeps the upper triangle
    assert mb([5, 5], 0, ones_at=None).kind() is None  # a tril of some tensor, not of ones
    assert mb([5, 5], None).kind() is None
    assert mb([2, 5, 5], 0).kind() is None  # batched: not a 2-D [Sq, Sk] mask


# ---- _int: a diagonal is read only from a non-blank string --------------------------------------------------------


def test_int_reads_only_non_blank_integer_strings() -> None:
    assert [_int(x) for x in ("4", " -3 ", "", "  ", "1.5", None, 3)] == [4, -3, None, None, None, None, None]


# ---- find(): the build, from the caller ---------------------------------------------------------------------------


def test_a_caller_build_is_taken_by_the_next_call_and_converted_inside_it() -> None:
    """ones 0 (fill_ 1), tril 2, SDPA 3 ⊃ where 4, cudnn 5; the attn_mask [1, 1, 5, 5] ends in the tril's [5, 5]."""
    assert find(tree_of(caller())) == [MaskBuild(tril=2, dims=[5, 5], diagonal=0, ones=0, consumer=3, convert=[4])]


def test_a_batched_build_links_by_its_last_two_sizes() -> None:
    """ones([2, 5, 5]).tril() then unsqueeze(1) to [2, 1, 5, 5] (a non-attention op between: passed over):
    ones 0 ⊃ fill_ 1, tril 2, unsqueeze 3, SDPA 4 ⊃ where 5, cudnn 6."""
    ops = caller(mask=[2, 1, 5, 5], size=[2, 5, 5])
    ops.insert(3, cpu("aten::unsqueeze", 32, 3, [[2, 5, 5], []], ["bool", "Scalar"], ["", "1"]))
    assert find(tree_of(ops)) == [MaskBuild(tril=2, dims=[2, 5, 5], diagonal=0, ones=0, consumer=4, convert=[5])]


def test_a_call_starting_the_instant_the_tril_ends_takes_it() -> None:
    """tril [20, 30]; SDPA at 30 (not during the tril): taken."""
    ops = [ones(0, 10, [5, 5]), tril(20, 10, [5, 5], 0), sdpa(30, 100, [5, 5])]
    assert find(tree_of(ops)) == [MaskBuild(tril=1, dims=[5, 5], diagonal=0, ones=0, consumer=2)]


def test_attention_ops_starting_during_the_tril_are_passed_over() -> None:
    """tril [20, 30]; an SDPA without mask overlapping it [25, 125] ⊃ flash [35, 45]; then SDPA [200, 300] with the
    mask: the first starts before the tril ends, its flash op lies inside it, so the third call (index 4) takes it."""
    ops = [
        ones(0, 10, [5, 5]),
        tril(20, 10, [5, 5], 0),
        sdpa(25, 100, [], causal="True"),
        cpu(FLASH, 35, 10, [Q, Q, Q], [BF16] * 3, ["", "", "", "0.", "True", "False", "0.125"]),
        sdpa(200, 100, [1, 1, 5, 5]),
    ]
    assert find(tree_of(ops)) == [MaskBuild(tril=1, dims=[5, 5], diagonal=0, ones=0, consumer=4)]


@pytest.mark.parametrize("name", [FLASH, "aten::_scaled_dot_product_flash_attention_for_cpu"])
def test_a_next_attention_op_that_takes_no_attn_mask_does_not_take_it(name: str) -> None:
    """flash's signature has no attn_mask; the CPU flash op has no signature at all: neither is the taker."""
    ops = [ones(0, 10, [5, 5]), tril(20, 10, [5, 5], 0), cpu(name, 40, 50, [Q, Q, Q], [BF16] * 3, ["", "", ""])]
    assert find(tree_of(ops)) == [MaskBuild(tril=1, dims=[5, 5], diagonal=0, ones=0)]


def test_the_build_on_a_second_thread_is_linked_on_its_own_thread() -> None:
    """Thread 1 holds aten::add [0, 5] (index 0); thread 2 the caller build: ones 1 ⊃ fill_ 2, tril 3,
    SDPA 4 ⊃ where 5, cudnn 6."""
    ops = [cpu("aten::add", 0, 5, [[4], [4]], ["float", "float"], ["", ""], tid=1), *caller(tid=2)]
    assert find(tree_of(ops)) == [MaskBuild(tril=3, dims=[5, 5], diagonal=0, ones=1, consumer=4, convert=[5])]


def test_the_math_build_on_a_second_thread_is_converted_by_its_where() -> None:
    """Thread 1: aten::add (index 0); thread 2: SDPA 1 ⊃ math 2 ⊃ ones 3 ⊃ fill_ 4, tril 5, where 6, bmm 7."""
    ops = [cpu("aten::add", 0, 5, [[4], [4]], ["float", "float"], ["", ""], tid=1), *math_build(tid=2)]
    (b,) = find(tree_of(ops))
    assert b == MaskBuild(tril=5, dims=[5, 5], diagonal=0, ones=3, inside=1, innermost=2, consumer=1, convert=[6])


def test_the_call_is_looked_for_exactly_near_ops_after_the_tril() -> None:
    """tril at 0, then 255 short non-attention ops (1..255), then SDPA: at index 256 = 0 + NEAR it is taken,
    pushed to 257 (one more filler) it is beyond the bound."""
    assert NEAR == 256

    def ops(fillers: int) -> list[CpuOp]:
        rest = [cpu("aten::add", 40 + 2 * k, 1, [[4], [4]], ["float", "float"], ["", ""]) for k in range(fillers)]
        return [tril(20, 10, [5, 5], 0), *rest, sdpa(40 + 2 * fillers, 100, [5, 5])]

    assert find(tree_of(ops(255))) == [MaskBuild(tril=0, dims=[5, 5], diagonal=0, ones=None, consumer=256)]
    assert find(tree_of(ops(256))) == [MaskBuild(tril=0, dims=[5, 5], diagonal=0, ones=None, consumer=None)]


# ---- find(): the aten::ones it took -------------------------------------------------------------------------------


def test_the_ones_just_before_the_tril_is_its_ones() -> None:
    """A ones with no recorded children (index 0) right before the tril (1)."""
    ops = [ones(0, 10, [5, 5]), tril(20, 10, [5, 5], 0)]
    assert find(tree_of(ops)) == [MaskBuild(tril=1, dims=[5, 5], diagonal=0, ones=0)]


def test_ones_like_of_the_mask_shape_is_its_ones() -> None:
    """torch.ones_like(x) of a [5, 5] bool x: its size is in Input Dims, not in a Concrete Input."""
    like = cpu("aten::ones_like", 0, 10, [[5, 5], [], [], [], [], []], ["bool", "", "", "", "", ""], [""] * 6)
    assert find(tree_of([like, tril(20, 10, [5, 5], 0)])) == [MaskBuild(tril=1, dims=[5, 5], diagonal=0, ones=0)]


def test_a_ones_of_another_size_is_not_its_ones() -> None:
    """ones([3, 4]) then a tril of a [5, 5] bool tensor: no ones of the mask's size, no causal kind."""
    t = tree_of([ones(0, 10, [3, 4]), tril(20, 10, [5, 5], 0)])
    (b,) = find(t)
    assert (b, b.kind()) == (MaskBuild(tril=1, dims=[5, 5], diagonal=0, ones=None), None)
    assert describe(t, None, b)["built_by"] == ["aten::tril"]


def test_a_bool_tril_with_no_ones_before_it_has_none() -> None:
    t = tree_of([tril(20, 10, [5, 5], 0), sdpa(40, 100, [5, 5])])
    (b,) = find(t)
    assert (b, b.kind()) == (MaskBuild(tril=0, dims=[5, 5], diagonal=0, ones=None, consumer=1), None)
    assert describe(t, None, b)["built_by"] == ["aten::tril"]


def test_a_ones_after_the_tril_is_not_its_ones() -> None:
    """tril (index 0) then ones([5, 5]) (index 1, the last op): the ones is built after, for something else."""
    assert find(tree_of([tril(0, 10, [5, 5], 0), ones(20, 10, [5, 5])])) == [
        MaskBuild(tril=0, dims=[5, 5], diagonal=0, ones=None)
    ]


def test_the_ones_is_looked_for_exactly_near_ops_before_the_tril() -> None:
    """ones at 0, then 255 short ops (1..255), then the tril at 256 = 0 + NEAR: found; with one more op between,
    the tril at 257 is beyond the bound."""
    assert NEAR == 256

    def ops(fillers: int) -> list[CpuOp]:
        mid = [cpu("aten::add", 20 + 2 * k, 1, [[4], [4]], ["float", "float"], ["", ""]) for k in range(fillers)]
        return [ones(0, 10, [5, 5]), *mid, tril(20 + 2 * fillers, 10, [5, 5], 0)]

    assert find(tree_of(ops(255))) == [MaskBuild(tril=256, dims=[5, 5], diagonal=0, ones=0)]
    assert find(tree_of(ops(256))) == [MaskBuild(tril=257, dims=[5, 5], diagonal=0, ones=None)]


# ---- find(): which ops it reads -----------------------------------------------------------------------------------


def test_a_tril_without_recorded_shapes_is_passed_over_and_the_next_is_read() -> None:
    """aten::add 0, a tril with no shapes (1), a tril of a 1-D tensor (2), then ones 3 and the build 4."""
    ops = [
        cpu("aten::add", 0, 5, [[4], [4]], ["float", "float"], ["", ""]),
        cpu("aten::tril", 10, 5),
        cpu("aten::tril", 20, 5, [[5], []], ["bool", "Scalar"], ["", "0"]),
        ones(30, 5, [5, 5]),
        tril(40, 5, [5, 5], 0),
    ]
    assert find(tree_of(ops)) == [MaskBuild(tril=4, dims=[5, 5], diagonal=0, ones=3)]


def test_triu_is_read_as_triu_and_inplace_tril_as_tril() -> None:
    """ones 0, triu 1, ones 2, tril_ 3 (all of [5, 5], diagonal 0)."""
    ops = [
        ones(0, 5, [5, 5]),
        tril(10, 5, [5, 5], 0, "aten::triu"),
        ones(20, 5, [5, 5]),
        tril(30, 5, [5, 5], 0, "aten::tril_"),
    ]
    up, low = find(tree_of(ops))
    assert (up, up.kind()) == (MaskBuild(tril=1, dims=[5, 5], diagonal=0, ones=0, tril_kind=False), None)
    assert (low, low.kind()) == (MaskBuild(tril=3, dims=[5, 5], diagonal=0, ones=2, tril_kind=True), "causal")


@pytest.mark.parametrize("conc", [None, [""]])
def test_a_tril_whose_diagonal_or_types_were_not_recorded(conc: list[str] | None) -> None:
    """Input Dims only (no types: not known to be bool, so no ones is looked for), or one Concrete Input."""
    ops = [ones(0, 10, [5, 5]), cpu("aten::tril", 20, 10, [[5, 5], []], None, conc)]
    assert find(tree_of(ops)) == [MaskBuild(tril=1, dims=[5, 5], diagonal=None, ones=None)]


def test_a_build_under_a_module_op_is_the_callers() -> None:
    """A user-level op MyModel.forward [0, 100] ⊃ ones 1 ⊃ fill_ 2, tril 3; SDPA 4 [140, 240] ⊃ where 5, cudnn 6
    (the call's ops moved 100 µs later)."""
    ops = caller()
    for o in ops:
        o.ts += 100 if o.name in (SDPA, CUDNN, "aten::where") else 0
    ops.insert(0, cpu("MyModel.forward", 0, 50))
    assert find(tree_of(ops)) == [MaskBuild(tril=3, dims=[5, 5], diagonal=0, ones=1, consumer=4, convert=[5])]


# ---- find(): the conversion inside the taker ----------------------------------------------------------------------


def test_only_wheres_of_the_bool_mask_inside_the_taker_convert_it() -> None:
    """ones 0 ⊃ fill_ 1, tril 2, where 3 [32, 35] before the call (the caller's, not SDPA's), SDPA 4 [40, 140] ⊃
    where 5 (the conversion), logical_not 6 (bool, not a where), where 7 of a float [5, 5], where 8 of a bool
    [1, 1, 5, 1] (another shape), where 9 at 140 of zero length (inside, at its very end); where 10 at 300, after."""
    size = [5, 5]
    ops = [
        ones(0, 10, size),
        fill(2, 5, size),
        tril(20, 10, size, 0),
        where(32, 3, [1, 1, 5, 5]),
        sdpa(40, 100, [1, 1, 5, 5]),
        where(45, 5, [1, 1, 5, 5]),
        where(52, 2, [1, 1, 5, 5], name="aten::logical_not"),
        where(56, 2, [1, 1, 5, 5], first="float"),
        where(60, 2, [1, 1, 5, 1]),
        where(140, 0, [1, 1, 5, 5]),
        where(300, 5, [1, 1, 5, 5]),
    ]
    assert find(tree_of(ops)) == [MaskBuild(tril=2, dims=[5, 5], diagonal=0, ones=0, consumer=4, convert=[5, 9])]


def test_the_math_backend_build_on_the_h200_trace() -> None:
    """B4 H16 S2048: math's ones([2048, 2048]) → tril(0) → two aten::where of the [2048, 2048] bool mask; the third
    where (of [4, 16, 2048, 1], _safe_softmax's guard) is not the mask's.  Read from the raw JSON."""
    path = H200 / "sdpa_math.json"
    raw = [e for e in json.loads(path.read_text())["traceEvents"] if e.get("cat") == "cpu_op"]
    args = [e.get("args", {}) for e in raw]
    want_where = sorted(
        e["ts"]
        for e, a in zip(raw, args, strict=True)
        if e["name"] == "aten::where" and a["Input Dims"][0] == [2048, 2048] and a["Input type"][0] == "bool"
    )
    assert len(want_where) == 2
    (ones_ts,) = [e["ts"] for e, a in zip(raw, args, strict=True) if e["name"] == "aten::ones"]
    (tril_ts,) = [e["ts"] for e in raw if e["name"] == "aten::tril"]
    t = tree_of(load_trace(path).cpu_ops)
    (b,) = find(t)
    assert (b.dims, b.diagonal, b.kind()) == ([2048, 2048], 0, "causal")
    assert (t.ops[b.ones].ts, t.ops[b.tril].ts) == (ones_ts, tril_ts)
    assert [t.ops[j].ts for j in b.convert] == want_where
    assert (t.ops[b.inside].name, t.ops[b.innermost].name, b.consumer) == (SDPA, MATH, b.inside)


# ---- describe() ---------------------------------------------------------------------------------------------------


def test_describe_a_math_backend_build_whole() -> None:
    """SDPA 0 ⊃ math 1 ⊃ ones 2, tril 4, where 5: built inside math, taken by nesting, is_causal 'True' passed."""
    t = tree_of(math_build())
    (b,) = find(t)
    assert b == MaskBuild(tril=4, dims=[5, 5], diagonal=0, ones=2, inside=0, innermost=1, consumer=0, convert=[5])
    assert describe(t, None, b) == {
        "op": "aten::tril",
        "dims": [5, 5],
        "diagonal": 0,
        "mask": "causal",
        "built_by": ["aten::ones", "aten::tril"],
        "built_inside": MATH,
        "taken_by": SDPA,
        "linked_by": "nesting",
        "converted_by": ["aten::where"],
        "backend": "math",
        "is_causal": True,
    }


def test_describe_a_build_nothing_takes_whole() -> None:
    t = tree_of([ones(0, 10, [3, 7]), tril(20, 10, [3, 7], 0)])
    (b,) = find(t)
    assert describe(t, None, b) == {
        "op": "aten::tril",
        "dims": [3, 7],
        "diagonal": 0,
        "mask": "causal@top_left",
        "built_by": ["aten::ones", "aten::tril"],
        "built_inside": None,
        "taken_by": None,
        "linked_by": None,
        "converted_by": [],
        "backend": None,
        "is_causal": None,
    }


@pytest.mark.parametrize("conc", [[], ["", "", "", "", "0."]])
def test_describe_a_call_without_backend_op_or_is_causal_recorded(conc: list[str]) -> None:
    """SDPA with no backend op below it, and Concrete Inputs missing or cut before is_causal (index 5)."""
    t = tree_of([ones(0, 10, [5, 5]), tril(20, 10, [5, 5], 0), sdpa(40, 100, [5, 5], conc=conc)])
    (b,) = find(t)
    assert describe(t, None, b) == {
        "op": "aten::tril",
        "dims": [5, 5],
        "diagonal": 0,
        "mask": "causal",
        "built_by": ["aten::ones", "aten::tril"],
        "built_inside": None,
        "taken_by": SDPA,
        "linked_by": "shape and order",
        "converted_by": [],
        "backend": None,
        "is_causal": None,
    }


def gpu(name: str, ts: float, dur: float) -> GpuEvent:
    return GpuEvent("kernel", name, ts, dur, None, None, 0, 7)


def kernels_case() -> tuple[Any, Attribution]:
    """add 0 [0,5]; ones 1 [10,20] ⊃ fill_ 2; tril 3 [30,40] ⊃ empty_like 4 (at 40, zero length: inside, at its end);
    SDPA 5 [50,150] ⊃ where 6, cudnn 7; add 8 [200,205].  Kernels, by launcher: add_kernel (0),
    fill_kernel (2) 2.0004 µs, triu_tril_kernel (3) 1.5, copy_kernel (4) 0.25, where_kernel (6) 3.25,
    cudnn_kernel (7), add_kernel (8)."""
    m = [1, 1, 5, 5]
    ops = [
        cpu("aten::add", 0, 5, [[4], [4]], ["float", "float"], ["", ""]),
        ones(10, 10, [5, 5]),
        fill(12, 5, [5, 5]),
        tril(30, 10, [5, 5], 0),
        cpu("aten::empty_like", 40, 0, [[5, 5]], ["bool"], [""]),
        sdpa(50, 100, m),
        where(55, 10, m),
        cudnn(70, 70, m),
        cpu("aten::add", 200, 5, [[4], [4]], ["float", "float"], ["", ""]),
    ]
    t = tree_of(ops)
    evs = [
        (gpu("add_kernel", 1000, 1.0), 0),
        (gpu("fill_kernel", 1010, 2.0004), 2),
        (gpu("triu_tril_kernel", 1020, 1.5), 3),
        (gpu("copy_kernel", 1025, 0.25), 4),
        (gpu("where_kernel", 1030, 3.25), 6),
        (gpu("cudnn_kernel", 1040, 20.0), 7),
        (gpu("add_kernel", 1100, 1.0), 8),
    ]
    att = Attribution(t, [g for g, _ in evs], [i for _, i in evs], [None] * len(evs), ["correlation"] * len(evs))
    return t, att


def test_describe_counts_the_kernels_of_the_build_and_conversion_only() -> None:
    """fill_ + tril + empty_like + where: 2.0004 + 1.5 + 0.25 + 3.25 = 7.0004 µs → 7.0 at 3 decimals; not the
    adds before and after, nor cudnn's kernel."""
    t, att = kernels_case()
    (b,) = find(t)
    assert b == MaskBuild(tril=3, dims=[5, 5], diagonal=0, ones=1, consumer=5, convert=[6])
    assert describe(t, att, b) == {
        "op": "aten::tril",
        "dims": [5, 5],
        "diagonal": 0,
        "mask": "causal",
        "built_by": ["aten::ones", "aten::tril"],
        "built_inside": None,
        "taken_by": SDPA,
        "linked_by": "shape and order",
        "converted_by": ["aten::where"],
        "backend": "cudnn",
        "is_causal": False,
        "num_kernels": 4,
        "kernel_us": 7.0,
        "kernels": ["fill_kernel", "triu_tril_kernel", "copy_kernel", "where_kernel"],
    }


def test_describe_rounds_kernel_time_to_three_decimals() -> None:
    """Without copy_kernel: 2.0004 + 1.5 + 3.25 = 6.7504 µs → 6.75 (not 7, 6.7504 or 3)."""
    t, att = kernels_case()
    keep = [k for k, g in enumerate(att.gpu) if g.name != "copy_kernel"]
    att = Attribution(t, [att.gpu[k] for k in keep], [att.launcher[k] for k in keep], [None] * 6, ["correlation"] * 6)
    (b,) = find(t)
    d = describe(t, att, b)
    assert (d["num_kernels"], d["kernel_us"]) == (3, 6.75)
    assert d["kernels"] == ["fill_kernel", "triu_tril_kernel", "where_kernel"]


def test_describe_refuses_an_attribution_whose_lists_differ_in_length() -> None:
    """One launcher fewer than GPU events: a broken attribution is an error, not a silent truncation."""
    t, att = kernels_case()
    bad = Attribution(t, att.gpu, att.launcher[:-1], att.runtime, att.rule)
    (b,) = find(t)
    with pytest.raises(ValueError):
        describe(t, bad, b)


def test_an_op_that_starts_the_instant_the_call_ends_is_not_inside_it() -> None:
    """SDPA [40, 140] with no backend op below it, then a cuDNN op [140, 150] of another call: it starts as the
    SDPA ends and runs past it, so the op tree makes it a sibling, and the build's backend stays unknown."""
    t = tree_of([ones(0, 10, [5, 5]), tril(20, 10, [5, 5], 0), sdpa(40, 100, [5, 5]), cudnn(140, 10, [5, 5])])
    assert t.parent[3] == -1  # the tree's own answer: a root
    (b,) = find(t)
    assert b.consumer == 2 and describe(t, None, b)["backend"] is None


def test_kernels_of_an_op_that_starts_the_instant_the_tril_ends_are_not_the_builds() -> None:
    """tril [30, 40], then an add [40, 45] (starts at the tril's end, runs past it: not inside) launching 1.0 µs;
    the build's kernels are fill_ 2.0 + tril 1.5 + where 3.25 = 6.75 µs, not 7.75."""
    m = [1, 1, 5, 5]
    ops = [ones(10, 10, [5, 5]), fill(12, 5, [5, 5]), tril(30, 10, [5, 5], 0),
           cpu("aten::add", 40, 5, [[4], [4]], ["float", "float"], ["", ""]),
           sdpa(50, 100, m), where(55, 10, m), cudnn(70, 70, m)]  # fmt: skip
    t = tree_of(ops)
    evs = [(gpu("fill_kernel", 1010, 2.0), 1), (gpu("triu_tril_kernel", 1020, 1.5), 2),
           (gpu("add_kernel", 1025, 1.0), 3), (gpu("where_kernel", 1030, 3.25), 5)]  # fmt: skip
    att = Attribution(t, [g for g, _ in evs], [i for _, i in evs], [None] * len(evs), ["correlation"] * len(evs))
    (b,) = find(t)
    d = describe(t, att, b)
    assert (d["num_kernels"], d["kernel_us"]) == (3, 6.75)
    assert d["kernels"] == ["fill_kernel", "triu_tril_kernel", "where_kernel"]
