"""The one kernel classifier: every row of the category and tensor-core tables, on names read off real traces."""

from __future__ import annotations

import json

import pytest

from attnscope.analysis.fingerprint import kernels as K
from tests.rawtrace import H200, VARIANTS

# Real names from the H200 traces in tests/data/h200 and the probes in docs/results/raw/h200_probes.txt.
CASES = [
    ("nvjet_sm90_tst_256x128_64x4_1x2_h_bz_coopA_TNT", "gemm", True),
    ("sm80_xmma_gemm_f32f32_f32f32_f32_tn_n_tilesize64x64x8_stage3_warpsize1x4x1_ffma_aligna4", "gemm", False),
    (
        "void cutlass::Kernel2<cutlass_80_simt_sgemm_256x128_8x4_nn_align1>"
        "(cutlass_80_simt_sgemm_256x128_8x4_nn_align1::Params)",
        "gemm",
        False,
    ),
    (
        "void pytorch_flash::flash_fwd_kernel<Flash_fwd_kernel_traits<64, 128, 128, 4, false, false, "
        "cutlass::bfloat16_t>>",
        "attention",
        True,
    ),
    (
        "fmha_cutlassF_bf16_aligned_64x64_rf_sm80(PyTorchMemEffAttention::AttentionKernel<cutlass::bfloat16_t>)",
        "attention",
        True,
    ),
    # TF32 MMA on the H200 (ncu: tests/data/ncu/h200_tensor_pipe.csv), not CUDA cores
    ("fmha_cutlassF_f32_aligned_64x64_rf_sm80(PyTorchMemEffAttention::AttentionKernel<float>)", "attention", True),
    (
        "cudnn_generated_fort_native_sdpa_sm90_flash_fprop_wgmma_f16_knob_7_64x128x64_4x1x1_cga1x1x1_kernel0_0",
        "attention",
        True,
    ),
    ("triton_tem_fused_flex_attention_0", "attention", True),
    (
        "void (anonymous namespace)::softmax_warp_forward<c10::BFloat16, c10::BFloat16, float, 10, false, false>",
        "softmax",
        False,
    ),
    (
        "void at::native::vectorized_elementwise_kernel<8, "
        "at::native::bfloat16_copy_kernel_cuda(at::TensorIteratorBase&)>",
        "copy",
        False,
    ),
    (
        "void at::native::unrolled_elementwise_kernel<at::native::direct_copy_kernel_cuda(at::TensorIteratorBase&)>",
        "copy",
        False,
    ),
    (
        "void at::native::reduce_kernel<512, 1, at::native::ReduceOp<bool, at::native::func_wrapper<bool>>>",
        "reduction",
        False,
    ),
    (
        "void at::native::triu_tril_kernel<bool, int, false, 8, false>(at::cuda::detail::TensorInfo<bool, int>)",
        "elementwise",
        False,
    ),
    (
        "void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<float>, std::array<char*, 1>>",
        "elementwise",
        False,
    ),
    ("ncclDevKernel_AllReduce_Sum_bf16_RING_LL(ncclDevKernelArgsStorage<4096ul>)", "communication", False),
    ("some_unknown_kernel_name", "other", None),
]


@pytest.mark.parametrize(("name", "category", "tc"), CASES, ids=[c[0][:40] for c in CASES])
def test_category_and_tensor_cores(name, category, tc):
    assert K.classify_gpu(name) == category
    assert K.tensor_cores(name, category) is tc


def test_attention_family_of_a_kernel_that_is_no_attention_is_none():
    """A GEMM (from CASES) and an unknown name have no attention family; PyTorch's bundled flash kernel is "flash"."""
    assert K.attention_family("nvjet_sm90_tst_256x128_64x4_1x2_h_bz_coopA_TNT") is None
    assert K.attention_family("some_unknown_kernel_name") is None
    assert K.attention_family(CASES[3][0]) == "flash"  # pytorch_flash::flash_fwd_kernel


def test_memcpy_and_memset_are_their_own_categories():
    assert K.classify_gpu("Memcpy DtoD (Device -> Device)", "memcpy") == "memcpy"
    assert K.classify_gpu("Memset (Device)", "memset") == "memset"
    assert K.tensor_cores("Memset (Device)", "memset") is False


def test_every_kernel_in_the_h200_traces_is_classified():
    """No kernel of the study lands in 'other', and every matrix kernel's tensor-core use is known."""
    for v in VARIANTS:
        for e in json.loads((H200 / f"{v}.json").read_text())["traceEvents"]:
            if e.get("cat") != "kernel":
                continue
            cat = K.classify_gpu(e["name"])
            assert cat != "other", e["name"]
            if cat in ("gemm", "attention"):
                assert K.tensor_cores(e["name"], cat) is not None, e["name"]


@pytest.mark.parametrize(
    ("op", "family"),
    [
        ("aten::_scaled_dot_product_attention_math", "math"),
        ("aten::_scaled_dot_product_flash_attention_for_cpu", "flash"),
        ("aten::_scaled_dot_product_cudnn_attention", "cudnn"),
        ("aten::_efficient_attention_forward", "efficient"),
        ("aten::_flash_attention_forward", "flash"),
        ("aten::mm", None),
    ],
)
def test_attention_op_families(op, family):
    assert K.attention_op_family(op) == family


@pytest.mark.parametrize(
    ("op", "backend"),
    [
        ("aten::_scaled_dot_product_flash_attention_for_cpu", "flash"),
        ("aten::_scaled_dot_product_attention_math", "math"),
        ("aten::_cudnn_attention_forward", "cudnn"),
        ("aten::_efficient_attention_forward", "efficient"),
    ],
)
def test_sdpa_backend_ops(op, backend):
    assert K.SDPA_BACKEND_OPS[op] == backend


def test_cpu_op_categories():
    assert K.classify_cpu("aten::bmm") == "gemm"
    assert K.classify_cpu("aten::_scaled_dot_product_flash_attention_for_cpu") == "attention"
    assert K.classify_cpu("aten::_softmax") == "softmax"
    assert K.classify_cpu("aten::copy_") == "copy"
    assert K.classify_cpu("aten::all") == "reduction"
    assert K.classify_cpu("aten::masked_fill_") == "elementwise"


def test_the_cuda_core_rule_comes_before_the_16_bit_operand_rule():
    """Hand-made names (the order of the table, not a recorded kernel): an fp32 SIMT, ffma or gemv kernel whose name
    also says bf16 or f16 runs on CUDA cores; the same 16-bit mark without those is tensor-core work."""
    for name in (
        "cutlass_80_simt_sgemm_bf16_128x128_8x5_nn_align1",
        "sm80_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize64x64x8_ffma",
        "void gemv2T_kernel_bf16<int, float>",
    ):
        assert K.tensor_cores(name, "gemm") is False, name
        assert K.tensor_core_precision(name, "gemm") is None, name
    assert K.tensor_cores("cutlass_80_tensorop_bf16_s16816gemm_bf16_128x128_32x3_nn_align8", "gemm") is True
    assert K.tensor_cores("ampere_fp16_s16816gemm_fp16_128x128_ldg8_f2f_stages_32x5_nn", "gemm") is True


def test_a_name_that_is_not_ascii_is_read_by_the_case_folding_pattern():
    # the lowered twin serves ASCII names only; a kernel name with a non-ASCII character takes the original pattern
    assert K.classify_gpu("nvjet_sm90_tst_ü_TNT") == "gemm"
    assert K.classify_gpu("Memcpy_ü", "memcpy") == "memcpy"
    assert K.classify_gpu("kernel_ü") == "other"


def test_fbgemm_namespace_is_not_a_gemm():
    """``fbgemm_gpu`` names a library, not matrix work: its embedding lookups, permutes and quantizers (names read
    from HTA's recommender trace with the json module) are no GEMMs, while that trace's cuBLAS/cutlass GEMMs stay
    GEMMs.  The substring "gemm" in "fbgemm" once put 46 of its kernels (88,802 µs of GPU time, summed from the raw
    events) in the gemm row."""
    import gzip

    from tests.rawtrace import DATA

    trace = DATA / "hta/trace_filter_sampled_rank-0.json.gz"
    names = {e["name"] for e in json.loads(gzip.open(trace).read())["traceEvents"] if e.get("cat") == "kernel"}
    fbgemm = {n for n in names if "fbgemm" in n.lower() and "cutlass" not in n and "sgemm" not in n}
    assert len(fbgemm) >= 10  # permute_2D_*, split_embedding_*, _float_to_hfp8_gpu, ...
    assert {n for n in fbgemm if K.classify_gpu(n) == "gemm"} == set()
    permute = "void fbgemm_gpu::permute_2D_lengths_kernel<int>(int, int, int const*, int const*, int*)"
    assert K.classify_gpu(permute) in ("other", "elementwise")
    cutlass = {n for n in names if n.startswith("void cutlass::Kernel<cutlass_80_tensorop_s1688gemm")}
    assert cutlass and {K.classify_gpu(n) for n in cutlass} == {"gemm"}
    assert K.classify_gpu("ampere_sgemm_32x128_tn") == "gemm"
