"""Copy kind, place and advice (analysis/copy_context.py) on hand-made op trees: strides worked by
hand, each branch of the advice with the sentence it must say.  The real H200 traces of
test_copy_context.py pin the same rules on what torch actually records."""

from __future__ import annotations

from typing import Any

import pytest

from attnscope.analysis.fingerprint.attribution import build_op_tree
from attnscope.analysis.fingerprint.copy_context import (
    contiguous_strides,
    copy_advice,
    copy_kind,
    describe,
    inside_of,
    library_op,
    upcast_advice,
)
from attnscope.trace import CpuOp

MATH = "aten::_scaled_dot_product_attention_math"
FLASH_BWD = "aten::_scaled_dot_product_flash_attention_backward"
EFF_BWD = "aten::_scaled_dot_product_efficient_attention_backward"
FLEX = "FlexAttentionAutogradOp"
ACC = "torch::autograd::AccumulateGrad"


@pytest.mark.parametrize(
    ("dims", "strides"),
    [
        ([2, 3, 4], [12, 4, 1]),  # 3·4, 4, 1
        ([2, 1, 4], [4, 4, 1]),  # a size-1 dimension multiplies by 1
        ([0, 3], [3, 1]),  # an empty dimension still steps by the one after it
        ([5], [1]),
        ([], []),
    ],
)
def test_contiguous_strides_by_hand(dims, strides):
    assert contiguous_strides(dims) == strides


def _copy(dims: Any, strides: Any, above: tuple[str, ...] | list[str] = ()) -> tuple[Any, int]:
    """An aten::copy_ nested under the ops named in ``above`` (outermost first)."""
    ops = [CpuOp(name, 1, float(k), 100.0 - 2 * k, None) for k, name in enumerate(above)]
    ops.append(CpuOp.recorded("aten::copy_", 1, 40.0, 10.0, None, input_dims=dims, input_strides=strides))
    tree = build_op_tree(ops)
    return tree, len(ops) - 1


@pytest.mark.parametrize(
    ("src_dims", "src_strides", "kind"),
    [
        ([4, 8], [8, 1], "value"),  # contiguous
        ([4, 8], [1, 4], "layout"),  # a transposed view
        ([2, 8], [0, 1], "broadcast"),  # expanded over a dimension of 2
        ([4, 1, 8], [8, 0, 1], "value"),  # stride 0 on a size-1 dimension is no broadcast
        ([4, 1, 8], [8, 99, 1], "value"),  # a size-1 dimension may carry any stride
    ],
)
def test_copy_kind_from_the_source_strides(src_dims, src_strides, kind):
    # torch records copy_'s destination, source and non_blocking; the two tensors alone must do too
    for extra_dims, extra_strides in (([[]], [[]]), ([], [])):
        tree, i = _copy([[4, 8], src_dims, *extra_dims], [[8, 1], src_strides, *extra_strides])
        assert copy_kind(tree, i) == kind


def test_copy_kind_without_a_source_is_unknown():
    tree, i = _copy([[4, 8]], [[8, 1]])
    assert copy_kind(tree, i) is None
    tree, i = _copy([[4, 8], [4, 8]], [[8, 1]])
    assert copy_kind(tree, i) is None


def test_a_repeat_above_the_copy_makes_it_a_broadcast_unless_a_library_op_is_nearer():
    value = ([[4, 8], [4, 8]], [[8, 1], [8, 1]])
    assert copy_kind(*_copy(*value, above=["aten::repeat_interleave"])) == "broadcast"
    assert copy_kind(*_copy(*value, above=["aten::repeat", "aten::reshape"])) == "broadcast"
    assert copy_kind(*_copy(*value, above=["aten::repeat_interleave", MATH])) == "value"


@pytest.mark.parametrize(
    ("name", "lib"),
    [
        ("MmBackward0", True),
        (ACC, True),
        ("aten::scaled_dot_product_attention", True),
        ("Torch-Compiled Region: 0/0", True),
        (FLEX, True),
        (MATH, True),
        ("aten::matmul", False),
        ("aten::copy_", False),
    ],
)
def test_library_ops(name, lib):
    assert library_op(name) is lib


def test_inside_of_names_the_nearest_library_op_or_the_autograd_node():
    assert inside_of(*_copy([], [], above=["autograd::engine::evaluate_function: MmBackward0", "aten::mm"])) == (
        "MmBackward0"
    )
    assert inside_of(*_copy([], [], above=["aten::scaled_dot_product_attention", MATH])) == MATH
    assert inside_of(*_copy([], [], above=["aten::masked_fill", "aten::clone"])) is None


@pytest.mark.parametrize(
    ("inside", "text"),
    [
        (MATH, f"SDPA's math backend ({MATH})"),
        (FLEX, f"flex_attention's eager (unfused) path ({FLEX})"),
        (FLASH_BWD, FLASH_BWD),
        ("MmBackward0", "autograd's MmBackward0"),
        ("Torch-Compiled Region: 0/0", "Torch-Compiled Region: 0/0"),
    ],
)
def test_describe(inside, text):
    assert describe(inside) == text


# a row of no known device (``{}``): where a fact was seen is said without comparing devices
GQA_SEEN = "seen on an H200: docs/results/h200.md, GQA"
SEEN = "seen on an H200: docs/fingerprint.md, 'Copies seen avoided'"


def _where(inside: str) -> str:
    return f"this is internal to {describe(inside)}, not a call in this code"


def test_copy_advice_in_the_profiled_code():
    assert copy_advice("value", None, {}) is None
    assert copy_advice("layout", None, {}) is None
    assert copy_advice("broadcast", None, {"attention_calls": [{"enable_gqa": True}]}) == (
        "K/V are repeated in this code before an SDPA call that already passes enable_gqa=True: "
        "drop the repeat, SDPA broadcasts the KV heads itself"
    )
    assert copy_advice("broadcast", None, {"attention_calls": [{"enable_gqa": False}]}) == (
        "GQA: pass enable_gqa=True to SDPA instead of materialising K and V once per query head "
        f"(repeat_interleave, expand+reshape); flash and cuDNN then run without any copy ({GQA_SEEN})"
    )


DEFAULT = "; no backend or layout that avoids it has been verified on the GPU"
LAYOUT_TAIL = (
    ": contiguous() of (B, S, H, D) views of (B, H, S, D) tensors. A layout that avoids it: q, k, v and the "
    "incoming gradient as (B, H, S, D) views of (B, S, H, D) tensors (x.view(B, S, H, D).transpose(1, 2), what "
    f"a projection before attention gives); cuDNN copied in neither layout ({SEEN})"
)


@pytest.mark.parametrize(
    ("kind", "inside", "tail"),
    [
        ("broadcast", MATH, f": it repeats K/V itself for GQA; flash and cuDNN take enable_gqa=True without a copy "
                            f"({GQA_SEEN})"),
        ("value", MATH, f"; a fused backend (flash, cuDNN, efficient) runs without it (one kernel, no copy, {SEEN})"),
        ("layout", FLEX, "; torch.compile(flex_attention) runs without it (one kernel, no copy, also with GQA; "
                         f"{SEEN})"),
        ("layout", FLASH_BWD, LAYOUT_TAIL),
        ("layout", EFF_BWD, LAYOUT_TAIL),
        ("value", FLASH_BWD, DEFAULT),  # only a layout copy has the layout advice
        ("layout", "aten::_scaled_dot_product_flash_attention", DEFAULT),  # the forward
        (
            "layout",
            ACC,
            ": the gradient arrives in another layout than the tensor it accumulates into; with the efficient "
            f"backend, inputs as (B, H, S, D) views of (B, S, H, D) tensors avoided it ({SEEN})",
        ),
        ("value", ACC, DEFAULT),
        ("layout", "MmBackward0", DEFAULT),
        (
            "value",
            "SliceBackward0",
            ": it materialises a full-size gradient; slicing fewer, larger tensors in the forward pass avoids it",
        ),
        ("value", "Torch-Compiled Region: 0/0", DEFAULT),
    ],
)  # fmt: skip
def test_copy_advice_inside_a_library(kind, inside, tail):
    assert copy_advice(kind, inside, {}) == _where(inside) + tail


def test_upcast_advice():
    flex = upcast_advice([FLEX, FLEX], {})
    assert flex == (
        "this is internal to flex_attention's eager (unfused) path, which computes in fp32; "
        f"torch.compile(flex_attention) stays in 16-bit (one kernel, no upcast; {SEEN})"
    )
    tail = (
        ": autograd casts the gradient back through the forward pass's casts; removing the cast from the forward "
        "pass removes it"
    )
    assert upcast_advice(["ToCopyBackward0", "ToCopyBackward0"], {}) == "this is internal to ToCopyBackward0" + tail
    assert upcast_advice(["ToCopyBackward0", "MulBackward0"], {}) == (
        "this is internal to MulBackward0, ToCopyBackward0" + tail
    )
    assert upcast_advice(["ToCopyBackward0", None], {}) is None  # one in the profiled code
    assert upcast_advice([FLEX, None], {}) is None
    assert upcast_advice([None], {}) is None
    assert upcast_advice([], {}) is None
