"""The mask insights and the score-matrix premise on decode, on hand-built result dicts (pure, no torch)."""

from __future__ import annotations

from attnscope.analysis.rules.execution import result_insights
from attnscope.analysis.rules.masks import block_sparsity, dense_mask, split_kv
from attnscope.analysis.rules.memory import score_matrix


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
    ids = [x.id for x in result_insights(decode)[0]]
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

    path = Path(__file__).parent / "data" / "h200" / "context" / "fwd_bwd_flash.json"
    fp = fingerprint(load_trace(path))
    kernels = [{"name": k.name, "category": k.category, "duration_us": k.duration_us} for k in fp.kernels]
    [i] = split_kv({"variant": "sdpa_flash", "kernels": kernels})
    assert "flash_fwd_splitkv_kernel" in i.evidence["split_kernel"]
    assert "flash_fwd_splitkv_combine_kernel" in i.evidence["combine_kernel"]
