"""The mask insights and the score-matrix premise on decode, on hand-built result dicts (pure, no torch)."""

from __future__ import annotations

from typing import Any

import pytest

from attnscope.analysis.rules import explain
from attnscope.analysis.rules.insights import safe_softmax
from attnscope.analysis.rules.mask_build import mask_rebuilt
from attnscope.analysis.rules.masks import block_sparsity, dense_mask, split_kv
from attnscope.analysis.rules.memory import score_matrix
from attnscope.analysis.rules.peers import ALONE
from attnscope.core.types import Insight, NotChecked


def _case(**kw):
    c = {"batch": 1, "heads": 8, "seq_q": 1024, "head_dim": 64, "dtype": "bf16", "causal": False, "device": "cuda"}
    c.update(kw)
    return c


def _k(name, category, us):
    return {"name": name, "category": category, "duration_us": us}


def test_dense_mask_on_the_gpu_says_flash_cannot_take_it_and_every_score_is_computed():
    r = {
        "variant": "sdpa_default",
        "status": "ok",
        "device_kind": "gpu",
        "case": _case(mask="sliding:128"),
        "dense_mask": True,
        "mask_form": "dense boolean attn_mask (1, 1, 1024, 1024) for sliding:128",
        "sdpa_backend": "efficient",
    }
    [i] = dense_mask(r)
    # sliding:128 over 1024 keys keeps 1+2+...+128 + 896·128 = 8256 + 114688 = 122944 of 1048576 = 11.7%
    assert i.evidence["kept_pct"] == 11.7
    assert i.evidence["scores_computed"] == 8 * 1024 * 1024
    assert i.evidence["mask_mib"] == 1.0  # one bool per (query, key), shared by the batch and heads
    assert "FlashAttention takes no arbitrary mask, so torch ran efficient" in i.message
    assert "8,388,608 scores" in i.message and "11.7%" in i.message and i.severity == "warning"
    assert dense_mask({**r, "dense_mask": False}) == []
    # a backend forced by the user: torch did not pick it because flash refused, so that is not claimed
    [forced] = dense_mask({**r, "variant": "sdpa_math", "backend": "math", "sdpa_backend": "math"})
    assert "takes no arbitrary mask" not in forced.message and "; torch ran math, which computes" in forced.message
    assert dense_mask({"variant": "naive", "case": r["case"]}) == []  # only SDPA records how it got the mask


def test_dense_mask_on_cpu_does_not_claim_flash_refuses():
    r = {
        "variant": "sdpa_flash",
        "device_kind": "cpu",
        "case": _case(mask="document:512,512", device="cpu"),
        "dense_mask": True,
        "sdpa_backend": "flash",
    }
    [i] = dense_mask(r)
    assert "takes no arbitrary mask" not in i.message and "torch ran flash" in i.message
    assert i.evidence["kept_pct"] == 25.0  # 2·(512·513/2) = 262656 of 1024² = 1048576: 25.05%


def test_block_sparsity_compiled_and_eager():
    r = {
        "variant": "flex_compiled",
        "case": _case(mask="sliding:128"),
        "block_sparsity_pct": 76.5625,
        "block_size": [128, 128],
        "compile_time_s": 12.0,
    }
    [i] = block_sparsity(r)
    assert "flex skips 76.6% of the 128×128 tiles" in i.message and "11.7%" in i.message
    [e] = block_sparsity({**r, "variant": "flex", "compile_time_s": None})
    assert "eager flex computes every score" in e.message
    assert block_sparsity({"variant": "naive", "case": r["case"]}) == []


def test_split_kv_names_the_two_kernels_as_one_step():
    r = {
        "variant": "flashinfer_decode",
        "kernels": [
            _k("void flashinfer::SingleDecodeWithKVCacheKernel<(flashinfer::PosEncodingMode)0, 2u>", "attention", 11.5),
            _k("void flashinfer::MergeStatesLargeNumIndexSetsKernel<8u, 16u>", "attention", 1.9),
        ],
    }
    [i] = split_kv(r)
    assert i.evidence["combine_pct"] == 14.2  # 1.9 / 13.4
    assert "one attention step in two kernels" in i.message and len(i.kernels) == 2
    fa2 = {
        "variant": "sdpa_flash",
        "kernels": [
            _k("flash_fwd_splitkv_kernel<Flash_fwd_kernel_traits<128>>", "attention", 20.0),
            _k("flash_fwd_splitkv_combine_kernel<128>", "attention", 5.0),
        ],
    }
    assert split_kv(fa2)[0].evidence["combine_pct"] == 20.0
    assert split_kv({"variant": "x", "kernels": [_k("flash_fwd_kernel", "attention", 9.0)]}) == []


def test_score_matrix_stays_quiet_on_decode_but_not_on_prefill():
    gemm = [_k("gemm_bf16", "gemm", 5.0), _k("softmax", "softmax", 1.0)]
    decode = {
        "variant": "naive",
        "status": "ok",
        "kernels": gemm,
        "peak_memory_bytes": 40 * 2**20,
        "case": _case(seq_q=1, seq_kv=8192, heads=32, kv_heads=8, head_dim=128, mask="causal_lower_right"),
    }
    assert score_matrix(decode) == []  # one score row (0.5 MiB) is smaller than K and V (32 MiB)
    prefill = {**decode, "case": _case(seq_q=2048), "peak_memory_bytes": 200 * 2**20}
    [i] = score_matrix(prefill)
    assert i.id == "score_matrix"
    ids = [x.id for x in explain(decode, ALONE)[0]]
    assert "score_matrix" not in ids


def test_values_nested_in_extra_are_read_too():
    r = {"variant": "flex_compiled", "case": _case(mask="sliding:128"), "compile_time_s": 3.0,
         "extra": {"block_sparsity_pct": 50.0, "block_size": [128, 128]}}  # fmt: skip
    [i] = block_sparsity(r)
    assert "flex skips 50.0% of the 128×128 tiles" in i.message


def test_split_kv_on_a_real_h200_flash_trace():
    """pytorch_flash's split-KV forward and its combine kernel, as the H200 recorded them (S=512 fwd+bwd)."""
    from pathlib import Path

    from attnscope.analysis.fingerprint.build import fingerprint
    from attnscope.trace import load_trace

    path = Path(__file__).parents[2] / "data" / "h200" / "context" / "fwd_bwd_flash.json"
    fp = fingerprint(load_trace(path))
    kernels = [{"name": k.name, "category": k.category, "duration_us": k.duration_us} for k in fp.kernels]
    [i] = split_kv({"variant": "sdpa_flash", "kernels": kernels})
    assert "flash_fwd_splitkv_kernel" in i.evidence["split_kernel"]
    assert "flash_fwd_splitkv_combine_kernel" in i.evidence["combine_kernel"]


# mask_rebuilt (both paths: the per-build context from ``mask_builds``, and the fallback for a document
# without it), safe_softmax and score_matrix compared whole on hand-made rows: id, variant, severity, message,
# advice, evidence, kernels and ops, every expected sentence written out here.
#
# Numbers are counted by hand in each test: GPU shares are 100·µs/trace_gpu_time_us rounded to 0.1; a score
# matrix is B·H·Sq·Sk·bytes(dtype), the output (the O(S·D) minimum) B·H·Sq·D·bytes(dtype), K and V together
# 2·B·H_kv·Sk·D·bytes(dtype); 1 MiB = 1,048,576 bytes.  Boundaries are tested at, just below and just above.


SDPA = "aten::scaled_dot_product_attention"
MATH_OP = "aten::_scaled_dot_product_attention_math"
MASK_OPS = ["aten::ones", "aten::tril"]

# ---- mask_rebuilt, the fallback: no build with its context in the document -------------------------------

ONES_K = {
    "name": "vectorized_elementwise_kernel<4, FillFunctor<bool>>",
    "category": "elementwise",
    "duration_us": 12.0,
    "launched_by": "aten::ones",
}
# the tril kernel the attribution could not tie to its op: found by its name alone
TRIL_K = {"name": "triu_tril_kernel<bool, false>", "category": "elementwise", "duration_us": 8.0, "launched_by": None}
GEMM_K = {"name": "ampere_bf16_s16816gemm", "category": "gemm", "duration_us": 300.0, "launched_by": "aten::bmm"}

IS_CAUSAL_ADVICE_GPU = (
    "pass is_causal=True to a fused SDPA backend (flash, cuDNN, efficient), which masks inside the kernel; "
    "or build the mask once outside the call and reuse it"
)
MATH_ADVICE_GPU = (
    "SDPA's math backend masks with a full tensor, built on every call; a fused backend (flash, cuDNN, efficient) "
    "masks inside the kernel"
)
LOWER_RIGHT = (
    "a lower-right causal mask built densely is what torch.nn.attention.bias.causal_lower_right falls back to "
    "when neither flash nor efficient can take the call{ran}; flash (is_causal=True at its own op) and efficient "
    "(custom_mask_type 2) apply the lower-right mask inside the kernel, with nothing to build"
)
HIDES_NOTHING = (
    "; and here the mask hides nothing (one query, lower-right: it sees all {sk} keys): pass no mask "
    "(attn_mask=None, is_causal=False)"
)


def _case_s(**kw: Any) -> dict[str, Any]:
    c = {"batch": 2, "heads": 4, "seq_q": 1024, "head_dim": 64, "dtype": "bf16", "device": "cuda"}
    c.update({k: v for k, v in kw.items() if v is not None})
    return c


def _fallback_row(backend: str | None, mask: str | None = "causal", **kw: Any) -> dict[str, Any]:
    r = {
        "variant": "my_attention",
        "device_kind": "gpu",
        "mask_rebuilt": True,
        "mask_ops": list(MASK_OPS),
        "sdpa_backend": backend,
        "case": _case_s(mask=mask),
        "kernels": [ONES_K, TRIL_K, GEMM_K],
        "trace_gpu_time_us": 400.0,
    }
    r.update(kw)
    return r


def _build(**kw: Any) -> dict[str, Any]:
    """One build as mask_ops.describe writes it: by default a top-left causal 2048×2048 mask made by the
    caller and taken by SDPA as attn_mask, no kernels recorded."""
    b = {
        "op": "aten::tril",
        "dims": [2048, 2048],
        "diagonal": 0,
        "mask": "causal",
        "built_by": list(MASK_OPS),
        "built_inside": None,
        "taken_by": SDPA,
        "linked_by": "shape and order",
        "converted_by": [],
        "backend": "efficient",
        "is_causal": False,
    }
    b.update(kw)
    return b


def _one(r: dict[str, Any]) -> Insight:
    out = mask_rebuilt(r)
    assert isinstance(out, list) and len(out) == 1, out
    return out[0]


def test_no_insight_when_the_mask_is_not_rebuilt():
    assert mask_rebuilt({"variant": "v", "mask_rebuilt": False, "mask_ops": MASK_OPS}) == []


@pytest.mark.parametrize("mask", [None, "none", "causal", "causal@top_left"])
def test_fallback_on_the_gpu_counts_kernels_by_launching_op_or_tril_name(mask):
    """The fill kernel (launched by aten::ones, 12 µs) and the unattributed triu_tril kernel (8 µs) are the
    mask's, the gemm is not: 20 µs of 400 = 5.0 %.  Builds without a mask kind, or that no call took, leave
    the document to the fallback.  No backend recorded (user code): the is_causal advice.  A case that says
    "none" (the code builds a tril the case does not declare) still names the causal mask a tril builds."""
    untaken = [_build(taken_by=None, linked_by=None), _build(mask=None)]
    r = _fallback_row(None, mask, mask_builds=untaken)
    ev = {"mask_ops": MASK_OPS, "num_mask_kernels": 2, "mask_us": 20.0, "mask_share_pct": 5.0, "inside_sdpa": False}
    msg = "the causal mask is rebuilt on every call by aten::ones, aten::tril (2 kernel(s), 20.0 µs, 5.0% of GPU time)"
    assert mask_rebuilt(r) == [
        Insight(
            "mask_rebuilt",
            "my_attention",
            "info",
            msg,
            IS_CAUSAL_ADVICE_GPU,
            ev,
            kernels=(ONES_K["name"], TRIL_K["name"]),
            ops=("aten::ones", "aten::tril"),
        )
    ]


@pytest.mark.parametrize("mask", [None, "causal", "causal@top_left"])
def test_fallback_under_the_math_backend_says_sdpa_builds_it(mask):
    """Math backend, no trace total: the share is not known, the message shows µs only."""
    r = _fallback_row("math", mask, trace_gpu_time_us=None)
    ev = {"mask_ops": MASK_OPS, "num_mask_kernels": 2, "mask_us": 20.0, "mask_share_pct": None, "inside_sdpa": True}
    assert _one(r) == Insight(
        "mask_rebuilt",
        "my_attention",
        "info",
        "the causal mask is rebuilt on every call by aten::ones, aten::tril (2 kernel(s), 20.0 µs)",
        MATH_ADVICE_GPU,
        ev,
        kernels=(ONES_K["name"], TRIL_K["name"]),
        ops=("aten::ones", "aten::tril"),
    )


def test_fallback_on_the_cpu_counts_ops_named_as_mask_ops():
    """CPU leaf ops: aten::fill_ (under aten::ones, 6.2 µs) and aten::tril itself (under the math op, 17.8 µs)
    are the mask's: 24.0 µs; aten::where and aten::bmm are not.  No GPU share on a CPU; CPU SDPA fuses
    only with flash."""
    kernels = [
        {"name": "aten::fill_", "category": "elementwise", "duration_us": 6.2, "launched_by": "aten::ones"},
        {"name": "aten::tril", "category": "elementwise", "duration_us": 17.8, "launched_by": MATH_OP},
        {"name": "aten::where", "category": "elementwise", "duration_us": 26.0, "launched_by": "aten::where"},
        {"name": "aten::bmm", "category": "gemm", "duration_us": 187.5, "launched_by": "aten::matmul"},
    ]
    r = _fallback_row("math", None, device_kind="cpu", kernels=kernels, trace_gpu_time_us=None, variant="sdpa_math")
    assert _one(r) == Insight(
        "mask_rebuilt",
        "sdpa_math",
        "info",
        "the causal mask is rebuilt on every call by aten::ones, aten::tril (2 kernel(s))",
        "SDPA's math backend masks with a full tensor, built on every call; a fused backend (flash) masks inside "
        "the kernel",
        {"mask_ops": MASK_OPS, "num_mask_kernels": 2, "mask_us": 24.0, "inside_sdpa": True},
        kernels=("aten::fill_", "aten::tril"),
        ops=("aten::ones", "aten::tril"),
    )


def test_fallback_on_the_gpu_ignores_a_kernel_named_like_a_mask_op():
    """Only a CPU names its units of work after aten ops: on a GPU a kernel named aten::tril but launched by
    another op is not the mask's."""
    odd = {"name": "aten::tril", "category": "elementwise", "duration_us": 100.0, "launched_by": "aten::mul"}
    i = _one(_fallback_row(None, kernels=[ONES_K, odd]))
    assert (i.evidence["num_mask_kernels"], i.evidence["mask_us"], i.kernels) == (1, 12.0, (ONES_K["name"],))


def test_fallback_for_another_mask_says_build_it_once():
    """A sliding mask is no is_causal: build it once, or a kernel that takes its form; before the math
    backend's own sentence."""
    i = _one(_fallback_row("math", "sliding:64"))
    assert i.advice == (
        "the sliding:64 mask is built as a full tensor on every call: build it once and reuse it, or use a kernel "
        "that takes the mask's own form (see dense_mask)"
    )
    assert i.evidence["inside_sdpa"] is True


def test_fallback_for_a_square_lower_right_mask_is_a_plain_dense_mask():
    """Sq = Sk = 1024 (seq_kv not given): no lower-right advice."""
    i = _one(_fallback_row("math", "causal_lower_right"))
    assert i.advice == (
        "the causal_lower_right mask is built as a full tensor on every call: build it once and reuse it, or use a "
        "kernel that takes the mask's own form (see dense_mask)"
    )


def test_fallback_for_decode_with_a_lower_right_mask():
    """One query over 512 keys, math backend: the lower-right sentence, and the mask hides nothing."""
    r = _fallback_row("math", "causal_lower_right", case=_case_s(mask="causal_lower_right", seq_q=1, seq_kv=512))
    assert _one(r).advice == LOWER_RIGHT.format(ran=" (here SDPA ran math)") + HIDES_NOTHING.format(sk=512)


def test_fallback_for_a_lower_right_mask_without_a_backend_names_no_sdpa_run():
    """User code (no SDPA backend recorded), two queries over 512 keys: no "(here SDPA ran …)" to say, and
    two queries are masked, so no "hides nothing".  Before the fix this read "(here SDPA ran the chosen)"."""
    r = _fallback_row(None, "causal_lower_right", case=_case_s(mask="causal_lower_right", seq_q=2, seq_kv=512))
    assert _one(r).advice == LOWER_RIGHT.format(ran="")


def test_fallback_for_a_top_left_mask_over_more_keys_keeps_the_is_causal_advice():
    """causal@top_left with Sq 4 ≠ Sk 16 is SDPA's is_causal: only a lower-right mask gets its own sentence."""
    r = _fallback_row(None, "causal@top_left", case=_case_s(mask="causal@top_left", seq_q=4, seq_kv=16))
    assert _one(r).advice == IS_CAUSAL_ADVICE_GPU


# ---- mask_rebuilt from the builds' context -------------------------------------------------------------


def _build_row(builds: list[dict[str, Any]], gpu: bool = True, total: float | None = None) -> dict[str, Any]:
    return {
        "variant": "causal_bias",
        "device_kind": "gpu" if gpu else "cpu",
        "mask_rebuilt": True,
        "mask_ops": ["aten::ones", "aten::tril", "aten::where"],
        "sdpa_backend": "math",
        "case": _case_s(mask="causal"),
        "kernels": [ONES_K, TRIL_K],
        "trace_gpu_time_us": total,
        "mask_builds": builds,
    }


def test_caller_build_converted_to_additive_with_its_kernels():
    """One build, 4 kernels, 12.34 µs → 12.3; share 100·12.34/800 = 1.5425 → 1.5 %.  The conversion ops
    join the build's in ops."""
    kernels = ["fill_kernel", "triu_tril_kernel", "logical_not_kernel", "masked_fill_kernel"]
    b = _build(
        backend="math",
        converted_by=["aten::logical_not", "aten::masked_fill"],
        num_kernels=4,
        kernel_us=12.34,
        kernels=kernels,
    )
    ops = ["aten::ones", "aten::tril", "aten::logical_not", "aten::masked_fill"]
    ev = {
        "mask": "causal",
        "dims": [2048, 2048],
        "diagonal": 0,
        "built_inside": None,
        "taken_by": SDPA,
        "linked_by": "shape and order",
        "backend": "math",
        "is_causal_passed": False,
        "mask_ops": ops,
        "num_builds": 1,
        "num_mask_kernels": 4,
        "mask_us": 12.3,
        "mask_share_pct": 1.5,
    }
    msg = (
        "a causal mask (2048×2048) is materialised on every call: aten::ones + aten::tril(diagonal=0) before "
        "aten::scaled_dot_product_attention, which takes it as attn_mask (linked by shape and order), then "
        "aten::logical_not, aten::masked_fill makes it additive for the math backend (4 kernel(s), 12.3 µs, "
        "1.5% of GPU time)"
    )
    advice = (
        "pass is_causal=True instead of the dense mask: SDPA's is_causal is this top-left mask, and a fused backend "
        "(flash, cuDNN, efficient) applies it inside the kernel with nothing to build"
    )
    assert mask_rebuilt(_build_row([b], total=800.0)) == [
        Insight("mask_rebuilt", "causal_bias", "info", msg, advice, ev, kernels=tuple(kernels), ops=tuple(ops))
    ]


def test_build_inside_the_math_backend_repeated_per_layer_is_one_insight():
    """Two layers, same build: 2 + 2 kernels, 5.0 + 7.5 = 12.5 µs of 250 = 5.0 %; the kernel names once each.
    is_causal=True was passed: the advice says so instead of asking for it."""
    b = _build(
        dims=[1024, 1024],
        built_inside=MATH_OP,
        linked_by="nesting",
        backend="math",
        is_causal=True,
        num_kernels=2,
        kernels=["fill_kernel", "triu_tril_kernel"],
    )
    ev = {
        "mask": "causal",
        "dims": [1024, 1024],
        "diagonal": 0,
        "built_inside": MATH_OP,
        "taken_by": SDPA,
        "linked_by": "nesting",
        "backend": "math",
        "is_causal_passed": True,
        "mask_ops": MASK_OPS,
        "num_builds": 2,
        "num_mask_kernels": 4,
        "mask_us": 12.5,
        "mask_share_pct": 5.0,
    }
    msg = (
        "the causal mask (1024×1024) is built inside aten::_scaled_dot_product_attention_math on every call "
        "(2 calls): aten::ones + aten::tril(diagonal=0) for the math backend (4 kernel(s), 12.5 µs, 5.0% of GPU time)"
    )
    advice = (
        "is_causal=True is already passed; the math backend expands it into a full mask on every call, while a "
        "fused backend (flash, cuDNN, efficient) masks inside the kernel"
    )
    builds = [dict(b, kernel_us=5.0), dict(b, kernel_us=7.5)]
    assert mask_rebuilt(_build_row(builds, total=250.0)) == [
        Insight(
            "mask_rebuilt",
            "causal_bias",
            "info",
            msg,
            advice,
            ev,
            kernels=("fill_kernel", "triu_tril_kernel"),
            ops=tuple(MASK_OPS),
        )
    ]


def test_builds_inside_a_call_on_the_cpu_without_kernels_or_backend():
    """Two kinds of build (is_causal unknown, is_causal passed), no kernel counts, no conversion recorded (an
    older document lacks converted_by), no backend: no kernel part, no "for the … backend", and the chosen
    backend named as such."""
    common = {"built_inside": SDPA, "linked_by": "nesting", "backend": None}
    unknown = {k: v for k, v in _build(dims=[8, 8], is_causal=None, **common).items() if k != "converted_by"}
    passed = _build(dims=[16, 16], is_causal=True, **common)
    ev = {
        "mask": "causal",
        "diagonal": 0,
        "built_inside": SDPA,
        "taken_by": SDPA,
        "linked_by": "nesting",
        "backend": None,
        "mask_ops": MASK_OPS,
        "num_builds": 1,
    }
    assert mask_rebuilt(_build_row([unknown, passed], gpu=False)) == [
        Insight(
            "mask_rebuilt",
            "causal_bias",
            "info",
            "the causal mask (8×8) is built inside aten::scaled_dot_product_attention on every call: "
            "aten::ones + aten::tril(diagonal=0)",
            "the mask is built inside aten::scaled_dot_product_attention; a fused backend (flash) masks inside the "
            "kernel",
            dict(ev, dims=[8, 8], is_causal_passed=None),
            ops=tuple(MASK_OPS),
        ),
        Insight(
            "mask_rebuilt",
            "causal_bias",
            "info",
            "the causal mask (16×16) is built inside aten::scaled_dot_product_attention on every call: "
            "aten::ones + aten::tril(diagonal=0)",
            "is_causal=True is already passed; the chosen backend expands it into a full mask on every call, while "
            "a fused backend (flash) masks inside the kernel",
            dict(ev, dims=[16, 16], is_causal_passed=True),
            ops=tuple(MASK_OPS),
        ),
    ]


def test_builds_group_by_backend_in_order_of_first_appearance():
    """Layers 0 and 1 under math, layer 2 under efficient: two insights, 2 builds then 1."""
    builds = [_build(backend="math"), _build(backend="math"), _build(backend="efficient")]
    out = mask_rebuilt(_build_row(builds))
    assert [(i.evidence["backend"], i.evidence["num_builds"]) for i in out] == [("math", 2), ("efficient", 1)]
    assert [i.message.endswith(" for the math backend") for i in out] == [True, False]


def test_decode_build_for_cudnn_names_the_backend_and_the_keys_it_sees():
    """causal_lower_right over 1 query and 512 keys (diagonal 511), taken under cuDNN."""
    b = _build(dims=[1, 512], diagonal=511, mask="causal_lower_right", backend="cudnn")
    i = _one(_build_row([b]))
    assert i.message == (
        "a causal_lower_right mask (1×512) is materialised on every call: aten::ones + aten::tril(diagonal=511) "
        "before aten::scaled_dot_product_attention, which takes it as attn_mask (linked by shape and order) for "
        "the cuDNN backend"
    )
    assert i.advice == LOWER_RIGHT.format(ran=" (here SDPA ran cuDNN)") + HIDES_NOTHING.format(sk=512)
    assert i.kernels == ()


def test_lower_right_build_for_a_backend_without_a_display_name():
    """Two queries (something is hidden: no "pass no mask"); the overrideable backend keeps its own name."""
    b = _build(dims=[2, 512], diagonal=510, mask="causal_lower_right", backend="overrideable")
    i = _one(_build_row([b]))
    assert i.message.endswith("(linked by shape and order) for the overrideable backend")
    assert i.advice == LOWER_RIGHT.format(ran=" (here SDPA ran overrideable)")


def test_lower_right_build_with_no_backend_recorded():
    """One query over 64 keys, taken by a call whose backend the trace does not show: nothing about a backend
    in the message, no "(here SDPA ran …)" in the advice (the fix: it read "here SDPA ran the chosen")."""
    b = _build(dims=[1, 64], diagonal=63, mask="causal_lower_right", backend=None)
    i = _one(_build_row([b]))
    assert i.message == (
        "a causal_lower_right mask (1×64) is materialised on every call: aten::ones + aten::tril(diagonal=63) "
        "before aten::scaled_dot_product_attention, which takes it as attn_mask (linked by shape and order)"
    )
    assert i.advice == LOWER_RIGHT.format(ran="") + HIDES_NOTHING.format(sk=64)


def test_lower_right_advice_reads_the_last_two_dims():
    """A mask with a leading batch dim, [8, 1, 512]: one query (dims[-2]) over 512 keys (dims[-1])."""
    b = _build(dims=[8, 1, 512], diagonal=511, mask="causal_lower_right", backend="math")
    i = _one(_build_row([b]))
    assert i.message.startswith("a causal_lower_right mask (8×1×512) is materialised on every call")
    assert i.advice == LOWER_RIGHT.format(ran=" (here SDPA ran math)") + HIDES_NOTHING.format(sk=512)


def test_a_triu_build_shows_its_diagonal_too():
    b = _build(dims=[4, 4], diagonal=1, built_by=["aten::ones", "aten::triu"], converted_by=["aten::logical_not"])
    assert _one(_build_row([b])).message == (
        "a causal mask (4×4) is materialised on every call: aten::ones + aten::triu(diagonal=1) before "
        "aten::scaled_dot_product_attention, which takes it as attn_mask (linked by shape and order), then "
        "aten::logical_not makes it additive for the efficient backend"
    )


# ---- safe_softmax -------------------------------------------------------------------------------------


def _k_s(name: str, cat: str, us: float, by: str | None) -> dict[str, Any]:
    return {"name": name, "category": cat, "duration_us": us, "launched_by": by}


ISNEGINF_K = _k_s("vectorized_elementwise_kernel<4, isneginf_functor>", "elementwise", 10.0, "aten::isneginf")
ALL_K = _k_s("reduce_kernel<512, 1, AndOps>", "reduction", 5.3, "aten::all")
WHERE_K = _k_s("vectorized_elementwise_kernel<4, where_functor>", "elementwise", 8.0, "aten::where")
FILL_K = _k_s("vectorized_elementwise_kernel<4, FillFunctor<float>>", "elementwise", 2.0, "aten::fill_")
SOFTMAX_K = _k_s("cunn_SoftMaxForward<8, float>", "softmax", 20.0, "aten::_softmax")
BMM_K = _k_s("ampere_bf16_s16816gemm_bf16_128x64", "gemm", 100.0, "aten::bmm")
GUARD_ADVICE = (
    "the guard keeps fully masked rows at 0 instead of NaN; fused backends do it inside the kernel at no extra pass"
)


def test_safe_softmax_on_the_gpu_from_isneginf_to_the_next_matmul():
    """isneginf (10.0), all (5.3) and where (8.0) after the softmax: 23.3 µs of 233 = 10.0 %.  The softmax
    before isneginf, a kernel of no guard op between, and the fill after the next gemm are not the guard's;
    the ops come from launched_by (the kernel names do not spell them)."""
    stray = _k_s("cunn_SoftMaxForward<8, float>", "softmax", 3.0, "aten::mul")
    r = {
        "variant": "sdpa_math",
        "device_kind": "gpu",
        "trace_gpu_time_us": 233.0,
        "kernels": [BMM_K, SOFTMAX_K, ISNEGINF_K, ALL_K, stray, WHERE_K, BMM_K, FILL_K],
    }
    ops = ["aten::all", "aten::isneginf", "aten::where"]
    assert safe_softmax(r) == [
        Insight(
            "safe_softmax",
            "sdpa_math",
            "info",
            '"safe" softmax: 3 extra kernel(s) over the scores guard fully masked rows (aten::all, aten::isneginf, '
            "aten::where), 23.3 µs, 10.0% of GPU time",
            GUARD_ADVICE,
            {"num_guard_kernels": 3, "guard_us": 23.3, "ops": ops, "guard_share_pct": 10.0},
            kernels=(ISNEGINF_K["name"], ALL_K["name"], WHERE_K["name"]),
            ops=tuple(ops),
        )
    ]


def test_safe_softmax_stops_at_a_copy():
    """A copy kernel after isneginf ends the guard: the where after it is not counted."""
    copy = _k_s("elementwise_kernel<128, 2, copy>", "copy", 4.0, "aten::copy_")
    r = {"variant": "v", "device_kind": "gpu", "trace_gpu_time_us": 100.0, "kernels": [ISNEGINF_K, copy, WHERE_K]}
    [i] = safe_softmax(r)
    assert (i.kernels, i.ops, i.evidence["guard_share_pct"]) == ((ISNEGINF_K["name"],), ("aten::isneginf",), 10.0)


def test_safe_softmax_on_the_cpu_counts_ops():
    """CPU leaf ops: isneginf (31.3) and where (67.6) under aten::_safe_softmax, fill_ (0.5) under aten::all:
    99.4 µs, no GPU share; the ops named by op or parent, sorted ('_' before 'a')."""
    ks = [
        _k_s("aten::isneginf", "elementwise", 31.3, "aten::_safe_softmax"),
        _k_s("aten::fill_", "elementwise", 0.5, "aten::all"),
        _k_s("aten::where", "elementwise", 67.6, "aten::_safe_softmax"),
    ]
    ops = ["aten::_safe_softmax", "aten::all", "aten::fill_", "aten::isneginf", "aten::where"]
    assert safe_softmax({"variant": "sdpa_math", "device_kind": "cpu", "kernels": ks}) == [
        Insight(
            "safe_softmax",
            "sdpa_math",
            "info",
            '"safe" softmax: 3 extra op(s) over the scores guard fully masked rows (aten::_safe_softmax, aten::all, '
            "aten::fill_, aten::isneginf, aten::where)",
            GUARD_ADVICE,
            {"num_guard_kernels": 3, "guard_us": 99.4, "ops": ops},
            kernels=("aten::isneginf", "aten::fill_", "aten::where"),
            ops=tuple(ops),
        )
    ]


def test_no_safe_softmax_without_isneginf():
    assert safe_softmax({"variant": "v", "device_kind": "gpu", "kernels": [SOFTMAX_K, WHERE_K]}) == []


# ---- score_matrix -------------------------------------------------------------------------------------

MIB = 1_048_576
SCORE_ADVICE = (
    "a fused backend (flash, cuDNN, efficient, or compiled flex) keeps the scores on chip: its peak memory stays "
    "O(S·D), so long sequences fit"
)


def _mem_row(case: dict[str, Any] | None, peak: int | None, **kw: Any) -> dict[str, Any]:
    r = {"variant": "naive", "device_kind": "gpu", "case": case, "peak_memory_bytes": peak, "kernels": [BMM_K]}
    r.update(kw)
    return r


def test_score_matrix_whole():
    """B2 H4 S1024 D64 bf16: score 2·4·1024·1024·2 = 16,777,216 (16.0 MiB); output 2·4·1024·64·2 = 1,048,576
    (1.0 MiB); K+V 2·2·4·1024·64·2 = 2 MiB, below the score.  Peak 40 MiB + 123,456 = 42,066,496 bytes:
    40.12 MiB → 40.1; /score 2.507 → 2.5; /output 40.12 → 40."""
    peak = 40 * MIB + 123_456
    ev = {
        "peak_memory_bytes": 42_066_496,
        "peak_mib": 40.1,
        "score_matrix_bytes": 16_777_216,
        "score_mib": 16.0,
        "peak_over_score": 2.5,
        "minimum_bytes": 1_048_576,
        "minimum_mib": 1.0,
        "peak_over_minimum": 40,
        "formula": "score = B·H·Sq·Sk·bytes(dtype); minimum (the output) = B·H·Sq·D·bytes(dtype)",
    }
    msg = (
        "the S×S score matrix is materialised: peak extra memory 40.1 MiB = 2.5× one bf16 score matrix (16.0 MiB, "
        "grows with S²) against the O(S·D) minimum of 1.0 MiB (40×)"
    )
    assert score_matrix(_mem_row(_case_s(), peak)) == [
        Insight("score_matrix", "naive", "warning", msg, SCORE_ADVICE, ev)
    ]


def test_score_matrix_needs_a_whole_score_matrix_beyond_the_output():
    """Same case: score 16 MiB, output 1 MiB → reported from a peak of 17 MiB = 17,825,792 bytes on."""
    ids = [[i.id for i in score_matrix(_mem_row(_case_s(), 17 * MIB + d))] for d in (-1, 0, 1)]
    assert ids == [[], ["score_matrix"], ["score_matrix"]]


def test_score_matrix_quiet_while_one_score_matrix_is_smaller_than_k_and_v():
    """B2 H4 D8 Sk64 fp32: K+V = 2·2·4·64·8·4 = 32,768 bytes; a score matrix 2·4·Sq·64·4 = 2048·Sq bytes:
    below K+V at Sq 15 (30,720), equal at Sq 16 (32,768), above at Sq 17 (34,816).  Peak 1 MiB: enough."""

    def out(sq: int) -> list[str]:
        c = _case_s(batch=2, heads=4, head_dim=8, seq_q=sq, seq_kv=64, dtype="fp32")
        return [i.id for i in score_matrix(_mem_row(c, MIB))]

    assert [out(15), out(16), out(17)] == [[], ["score_matrix"], ["score_matrix"]]


def test_score_matrix_counts_k_and_v_at_the_kv_heads():
    """GQA, B1 H8 KV-heads 2 D8 Sq8 Sk64 bf16: score 8·8·64·2 = 8192 bytes; K+V 2·2·64·8·2 = 4096: reported.
    Without kv_heads, K+V at 8 heads is 16,384 > 8192: quiet."""
    gqa = _case_s(batch=1, heads=8, kv_heads=2, head_dim=8, seq_q=8, seq_kv=64)
    [i] = score_matrix(_mem_row(gqa, MIB))
    assert (i.evidence["score_matrix_bytes"], i.evidence["minimum_bytes"]) == (8192, 1024)
    assert score_matrix(_mem_row(_case_s(batch=1, heads=8, head_dim=8, seq_q=8, seq_kv=64), MIB)) == []


def test_score_matrix_quiet_for_a_fused_backend():
    assert score_matrix(_mem_row(_case_s(), 100 * MIB, sdpa_backend="flash")) == []


def test_score_matrix_without_the_case_says_what_is_unknown():
    r = _mem_row(None, MIB, case_unknown={"seq_q": "no tensor shapes recorded", "dtype": "mixed"})
    assert score_matrix(r) == NotChecked(
        "score_matrix", "needs the case shape (B, H, S, D): seq_q: no tensor shapes recorded; dtype: mixed"
    )
    assert score_matrix(_mem_row(None, MIB)) == NotChecked(
        "score_matrix", "needs the case shape (B, H, S, D): not known for this result"
    )


def test_score_matrix_without_a_peak():
    assert score_matrix(_mem_row(_case_s(), None)) == NotChecked(
        "score_matrix", "peak memory was not measured for this result"
    )


def test_the_fallback_names_a_band_mask_by_the_cases_own_name() -> None:
    """A sliding-window mask rebuilt with tril and triu is not 'the causal mask'; a causal spelling still is."""
    row = {"variant": "naive", "mask_rebuilt": True, "mask_ops": ["aten::tril", "aten::triu"], "kernels": [],
           "device_kind": "cpu", "case": {"mask": "sliding:64", "seq_q": 512}}  # fmt: skip
    (got,) = mask_rebuilt(row)
    assert got.message == "the sliding:64 mask is rebuilt on every call by aten::tril, aten::triu (0 kernel(s))"
    (got,) = mask_rebuilt({**row, "case": {"mask": "causal@top_left", "seq_q": 512}})
    assert got.message.startswith("the causal mask is rebuilt on every call")


def test_score_matrix_at_a_cpu_size_says_kib_not_zero_mib():
    """B1 H2 S64 D16 bf16: score 1·2·64·64·2 = 16,384 B (16.0 KiB); output 1·2·64·16·2 = 4,096 B (4.0 KiB); K+V
    2·1·2·64·16·2 = 8,192 B, below the score.  Peak 51,200 B (50.0 KiB): /score 3.125 → 3.1, /output 12.5 → 12.
    In MiB every size read 0.0."""
    c = _case_s(batch=1, heads=2, seq_q=64, head_dim=16, device="cpu")
    [i] = score_matrix(_mem_row(c, 51_200))
    assert i.message == (
        "the S×S score matrix is materialised: peak extra memory 50.0 KiB = 3.1× one bf16 score matrix (16.0 KiB, "
        "grows with S²) against the O(S·D) minimum of 4.0 KiB (12×)"
    )
    assert (i.evidence["peak_mib"], i.evidence["score_mib"], i.evidence["minimum_mib"]) == (0.0, 0.0, 0.0)
