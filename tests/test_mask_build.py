"""A mask built in the trace (analysis/mask_build.py) and the advice it chooses, on small synthetic traces whose
answer is worked out by hand (the op sequence torch 2.11 records for CausalBias and for user code)."""

from __future__ import annotations

from typing import Any

from attnscope.analysis.fingerprint.attribution import build_op_tree
from attnscope.analysis.fingerprint.mask_build import find
from attnscope.analysis.fingerprint.shape import attention_calls
from attnscope.analysis.rules.mask_build import mask_rebuilt
from attnscope.api import analyze
from attnscope.document.schema import result_to_dict
from tests import synth

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
    from attnscope.analysis.fingerprint.mask_build import describe

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
