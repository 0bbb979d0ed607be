"""The three mask insights (dense_mask, block_sparsity, split_kv) compared whole: id, variant,
severity, message, advice and evidence, on hand-made rows.  Kept shares are counted here by hand:
causal over S keys keeps S(S+1)/2 of S²; padding:K1,K2 keeps Sq·K_b per batch element."""

from __future__ import annotations

from typing import Any

from attnscope.analysis.rules.masks import block_sparsity, dense_mask, split_kv
from attnscope.core.types import Insight, NotChecked

DENSE_ADVICE = (
    "a kernel that knows the mask's shape skips what it hides: torch.compile(flex_attention) with a BlockMask "
    "(flex_compiled), or a library's native form (FlashAttention causal, FlashInfer causal)"
)
FLEX_FORM = "a kernel that knows the mask's shape skips what it hides: torch.compile(flex_attention) with a BlockMask"


def _case(**kw: Any) -> dict[str, Any]:
    c = {"batch": 2, "heads": 4, "seq_q": 1024, "head_dim": 64, "dtype": "bf16", "causal": False, "device": "cuda"}
    c.update(kw)
    return c


def _dense(case: dict[str, Any], gpu: bool = True, backend: str | None = "efficient") -> dict[str, Any]:
    return {
        "variant": "sdpa_default",
        "device_kind": "gpu" if gpu else "cpu",
        "case": case,
        "dense_mask": True,
        "mask_form": "dense boolean attn_mask",
        "sdpa_backend": backend,
    }


def test_dense_causal_mask_on_the_gpu():
    """causal over 1024: 1024·1025/2 = 524800 of 1048576 = 50.05 % → 50.0; 2·4·1024² = 8388608
    scores; one bool per (query, key): 1 MiB."""
    ev = {
        "mask_form": "dense boolean attn_mask",
        "mask": "causal",
        "kept_pct": 50.0,
        "scores_computed": 8388608,
        "mask_mib": 1.0,
        "backend": "efficient",
    }
    msg = (
        "the causal mask reaches SDPA as a dense attn_mask (1.0 MiB): FlashAttention takes no arbitrary mask, so "
        "torch ran efficient, which computes all 8,388,608 scores and reads the mask, though the mask keeps only "
        "50.0% of them"
    )
    assert dense_mask(_dense(_case(mask="causal"))) == [
        Insight("dense_mask", "sdpa_default", "warning", msg, DENSE_ADVICE, ev)
    ]


def test_dense_padding_mask_on_the_cpu_is_one_per_batch_element():
    """padding:512,256 over 1024 keys: 1024·512 + 1024·256 = 786432 of 2·1024² = 37.5 %; the mask holds
    one bool per (batch, query, key): 2 MiB; no backend recorded."""
    [i] = dense_mask(_dense(_case(mask="padding:512,256"), gpu=False, backend=None))
    assert i.message == (
        "the padding:512,256 mask reaches SDPA as a dense attn_mask (2.0 MiB); the chosen backend, which computes "
        "all 8,388,608 scores and reads the mask, though the mask keeps only 37.5% of them"
    )
    assert (i.evidence["mask_mib"], i.evidence["kept_pct"], i.evidence["backend"], i.severity) == (
        2.0,
        37.5,
        None,
        "warning",
    )


def test_dense_mask_with_alibi_holds_a_float_per_entry():
    """ALiBi makes the mask additive: fp32 → 4 bytes per (query, key): 4 MiB; bf16 → 2 MiB."""
    [f32] = dense_mask(_dense(_case(mask="causal", alibi=True, dtype="fp32")))
    [b16] = dense_mask(_dense(_case(mask="causal", alibi=True)))
    assert (f32.evidence["mask_mib"], b16.evidence["mask_mib"]) == (4.0, 2.0)
    assert "(4.0 MiB)" in f32.message


def test_dense_mask_with_more_keys_than_queries():
    """Sq 512, Sk 2048, no masking: all kept; 2·4·512·2048 = 8388608 scores; 512·2048 bools = 1 MiB."""
    [i] = dense_mask(_dense(_case(mask="none", seq_q=512, seq_kv=2048)))
    assert (i.evidence["scores_computed"], i.evidence["mask_mib"], i.evidence["kept_pct"]) == (8388608, 1.0, 100.0)
    assert i.severity == "info"


def test_dense_mask_warning_below_60_percent_kept_only():
    """causal over 5 keys keeps 15 of 25 = 60 %: info; sliding:2 keeps 1 + 2·4 = 9 of 25 = 36 %: warning."""
    [at] = dense_mask(_dense(_case(mask="causal", seq_q=5)))
    [below] = dense_mask(_dense(_case(mask="sliding:2", seq_q=5)))
    assert (at.evidence["kept_pct"], at.severity) == (60.0, "info")
    assert (below.evidence["kept_pct"], below.severity) == (36.0, "warning")


def test_dense_mask_of_an_unreadable_mask_says_nothing_of_what_it_keeps():
    [i] = dense_mask(_dense(_case(mask="nonsense:1")))
    assert i.evidence["kept_pct"] is None and i.severity == "info"
    assert i.message.endswith("computes all 8,388,608 scores and reads the mask")


def test_dense_mask_without_the_case():
    assert dense_mask({"variant": "sdpa_default", "dense_mask": True}) == NotChecked(
        "dense_mask", "needs the case (its mask and shapes)"
    )


def _flex(pct: float | None, compiled: bool = True, mask: str = "causal", **kw: Any) -> dict[str, Any]:
    r = {"variant": "flex_compiled" if compiled else "flex", "case": _case(mask=mask), "block_sparsity_pct": pct}
    r["compile_time_s"] = 10.0 if compiled else None
    r["block_size"] = [128, 128]
    r.update(kw)
    return r


def test_block_sparsity_compiled():
    ev = {"block_sparsity_pct": 43.8, "block_size": [128, 128], "kept_pct": 50.0}  # 43.75 → 43.8
    msg = "flex skips 43.8% of the 128×128 tiles of the score matrix (the mask keeps 50.0% of the scores)"
    advice = "nothing to fix: the empty tiles cost nothing; partly masked tiles still compute all their scores"
    assert block_sparsity(_flex(43.75)) == [Insight("block_sparsity", "flex_compiled", "info", msg, advice, ev)]


def test_block_sparsity_compiled_with_no_empty_tile_or_half_a_percent():
    [none] = block_sparsity(_flex(0.0))
    [half] = block_sparsity(_flex(0.5))
    assert none.advice == "the mask leaves no tile empty at this block size: all of them are computed"
    assert half.advice.startswith("nothing to fix")


def test_block_sparsity_without_block_size_or_readable_mask():
    [i] = block_sparsity(_flex(50.0, mask="nonsense:1", block_size=None))
    assert i.message == "flex skips 50.0% of the ? tiles of the score matrix"
    assert i.evidence == {"block_sparsity_pct": 50.0, "block_size": None, "kept_pct": None}


def test_block_sparsity_eager():
    ev = {"block_sparsity_pct": 0.5, "block_size": [128, 128], "kept_pct": 50.0}
    msg = "eager flex computes every score: its BlockMask would skip 0.5% of the tiles only inside the compiled kernel"
    assert block_sparsity(_flex(0.5, compiled=False)) == [
        Insight("block_sparsity", "flex", "info", msg, "compile it: torch.compile(flex_attention)", ev)
    ]
    assert block_sparsity(_flex(0.0, compiled=False)) == []


def _k(name: str, us: float) -> dict[str, Any]:
    return {"name": name, "category": "attention", "duration_us": us}


# 51 characters once "void " is dropped: shown cut to 49 + "…"
LONG = "void flash_fwd_splitkv_kernel<Flash_fwd_kernel_traits_x>"
LONG_SHOWN = "flash_fwd_splitkv_kernel<Flash_fwd_kernel_traits_…"


COMBINE_128 = "flash_fwd_splitkv_combine_kernel<128>"
ADVICE_SPLIT = "nothing to fix: splitting the keys keeps every SM busy when there are too few queries to share out"


def test_split_kv_one_call():
    """One split kernel (30 µs) and its combine (10 µs): 10 / 40 = 25 % of the step."""
    assert len(LONG.removeprefix("void ")) == 51 and len(LONG_SHOWN) == 50
    r = {"variant": "sdpa_flash", "kernels": [_k(LONG, 30.0), _k(COMBINE_128, 10.0)]}
    ev = {
        "split_kernel": LONG,
        "split_us": 30.0,
        "combine_kernel": COMBINE_128,
        "combine_kernels": [COMBINE_128],
        "combine_us": 10.0,
        "combine_pct": 25.0,
        "num_split_kernels": 1,
        "num_combine_kernels": 1,
    }
    msg = (
        f"one attention step in two kernels: {LONG_SHOWN} computes partial results over chunks of the keys "
        f"(30.0 µs), {COMBINE_128} combines them (10.0 µs, 25.0% of the step)"
    )
    assert split_kv(r) == [
        Insight("split_kv", "sdpa_flash", "info", msg, ADVICE_SPLIT, ev, kernels=(LONG, COMBINE_128))
    ]


def test_split_kv_two_calls():
    """Two split kernels (20 + 30 = 50 µs, the longest named) and two combines (4 + 10 = 14 µs):
    14 / 64 = 21.875 % → 21.9; four distinct kernels."""
    short_split, combine_64 = "flash_fwd_splitkv_kernel<short>", "flash_fwd_splitkv_combine_kernel<64>"
    r = {
        "variant": "sdpa_flash",
        "kernels": [_k(short_split, 20.0), _k(combine_64, 4.0), _k(LONG, 30.0), _k(COMBINE_128, 10.0)],
    }
    [i] = split_kv(r)
    assert i.message == (
        f"one attention step in four kernels (×2 calls): {LONG_SHOWN} computes partial results over chunks of the "
        f"keys (50.0 µs), {combine_64}, {COMBINE_128} combine them (14.0 µs, 21.9% of the step)"
    )
    assert (i.evidence["split_kernel"], i.evidence["combine_kernel"]) == (LONG, COMBINE_128)
    assert (i.evidence["num_split_kernels"], i.evidence["num_combine_kernels"]) == (2, 2)
    assert i.kernels == (short_split, LONG, combine_64, COMBINE_128)


def test_split_kv_of_zero_length_kernels_has_no_share():
    kernels = [_k("flash_fwd_splitkv_kernel<0>", 0.0), _k("flash_fwd_splitkv_combine_kernel<0>", 0.0)]
    [i] = split_kv({"variant": "v", "kernels": kernels})
    assert i.evidence["combine_pct"] is None
    assert i.message.endswith("combines them (0.0 µs)")


def test_split_kv_needs_both_kernels():
    assert split_kv({"variant": "v", "kernels": [_k("flash_fwd_splitkv_combine_kernel<128>", 5.0)]}) == []
    assert split_kv({"variant": "v", "kernels": [_k("flash_fwd_splitkv_kernel", 5.0)]}) == []


# ---- second mutation pass ----------------------------------------------------------------------------------

SPLIT_K = "void pytorch_flash::flash_fwd_splitkv_kernel<Flash_fwd_kernel_traits<128, 64, 128, 4>>"
COMBINE_K = "void pytorch_flash::flash_fwd_splitkv_combine_kernel<Flash_fwd_kernel_traits<128, 64, 128, 4>>"


def test_a_split_of_one_family_and_a_combine_of_another_are_no_step():
    """flash's split kernel with FlashInfer's merge: each family has only half of a split-KV step."""
    r = {"variant": "x", "kernels": [
        {"name": SPLIT_K, "category": "attention", "duration_us": 6.0},
        {"name": "void flashinfer::MergeStatesKernel<8, 16, 8>", "category": "attention", "duration_us": 2.0},
    ]}  # fmt: skip
    assert split_kv(r) == []


def test_a_step_of_five_kernels_counts_in_digits_and_long_combine_names_are_cut_at_50():
    """Five distinct kernels (no number word past four): '5'. Each name cut to 49 characters and an ellipsis."""
    combines = [COMBINE_K.replace("<128", f"<{n}") for n in (16, 32, 48, 64)]
    ks = [{"name": SPLIT_K, "category": "attention", "duration_us": 6.0}]
    ks += [{"name": c, "category": "attention", "duration_us": 1.0} for c in combines]
    (i,) = split_kv({"variant": "sdpa_flash", "kernels": ks})
    cut = [c.removeprefix("void ")[:49] + "…" for c in combines]
    split_cut = SPLIT_K.removeprefix("void ")[:49] + "…"
    assert i.message == (
        f"one attention step in 5 kernels: {split_cut} computes partial results over chunks of the keys (6.0 µs), "
        f"{', '.join(cut)} combine them (4.0 µs, 40.0% of the step)"
    )


def test_compiled_fallback_is_compared_whole():
    from attnscope.analysis.rules.masks import compiled_fallback

    r = {
        "variant": "flex_compiled", "family": "flex", "status": "ok", "compile_time_s": 2.5, "device_kind": "gpu",
        "case": {"device": "cuda"},
        "kernels": [{"name": "void at::native::elementwise_kernel<128, 4>", "category": "elementwise"}],
    }  # fmt: skip
    (i,) = compiled_fallback(r)
    assert i == Insight(
        "compiled_fallback",
        "flex_compiled",
        "warning",
        "compiled flex ran 1 kernel(s) and none generated by torch.compile (no triton_* kernel): it ran eager flex, "
        "as torch.compile does once dynamo reaches its recompile limit in a process, so its time is eager flex's",
        "not a flex_compiled measurement: measure it again (attnscope compiles each shape afresh when dynamo's limit "
        "is reached); the recommendation leaves this row out",
        {"num_kernels": 1, "compile_time_s": 2.5},
    )


def test_dense_mask_advice_names_only_this_masks_native_forms():
    """Each mask is told its own library form (mask_reference.md's table): a window's window_size/window_left, a
    document or padding mask FlashAttention's varlen call, ALiBi the slopes; a prefix-LM mask has none, so flex's
    BlockMask alone (it was told "window_size or varlen, window_left" whatever the mask)."""
    advice = {m: dense_mask(_dense(_case(mask=m)))[0].advice for m in ("sliding:64", "padding:512,256", "prefix:16")}
    assert advice["sliding:64"] == FLEX_FORM + (
        " (flex_compiled), or a library's native form (FlashAttention window_size, FlashInfer window_left)"
    )
    assert advice["padding:512,256"] == FLEX_FORM + (
        " (flex_compiled), or a library's native form (FlashAttention's varlen call, flash_attn_varlen_func)"
    )
    assert advice["prefix:16"] == FLEX_FORM + " (flex_compiled)"
    [alibi] = dense_mask(_dense(_case(mask="none", alibi=True)))
    assert alibi.advice.endswith("(FlashAttention 2's alibi_slopes, FlashInfer's ALiBi position encoding)")
