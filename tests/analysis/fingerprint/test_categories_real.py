"""Kernel categories on the real traces of other hardware and other programs, against the ops that launched each
kernel as the raw JSON says (the json module, by correlation id and the op spans around the launch call)."""

from __future__ import annotations

import pytest

from attnscope.analysis.fingerprint import kernels as K
from attnscope.api import analyze
from tests.rawtrace import DATA, raw_kernels_with_ops

MI250 = DATA / "hta/amd_trace_mi250_minitoy_train_ROCm6_2_kineto.json.gz"
GROWING_KV = DATA / "h100/serving/default_growing_kv.json.gz"
ALEXNET = DATA / "hta/critical_path_alexnet_trace.json.gz"


def _cats(result) -> dict[str, dict]:
    return {c["category"]: c for c in result.trace_summary["categories"]}


def test_rocm_tensile_gemms_launched_by_addmm_and_mm_are_gemm():
    """On the MI250 trace hipBLASLt's Tensile kernels (``Cijk_…``, no "gemm" in the name) are launched inside
    aten::addmm and aten::mm beside the bias's broadcast (an ``at::native`` elementwise kernel): the gemm row holds
    exactly the products (it was empty; their 20% of the GPU time sat in "other")."""
    rows = raw_kernels_with_ops(MI250)
    under = [k for k, ops in rows if {"aten::addmm", "aten::mm"} & set(ops)]
    mm = [k for k in under if "at::native::" not in k["name"]]
    assert (len(under), len(mm)) == (3, 2)  # one forward addmm, one backward mm, read off the raw trace
    assert {K.classify_gpu(k["name"]) for k in mm} == {"gemm"}
    gemm = _cats(analyze(MI250))["gemm"]
    assert gemm["num_kernels"] == len(mm)
    assert gemm["time_us"] == pytest.approx(sum(k["dur"] for k in mm), abs=1e-3)


def test_a_random_normal_fill_is_no_reduction():
    """``torch.randn`` on the GPU runs ``distribution_elementwise_grid_stride_kernel<…normal_kernel…>``: "norm" in
    "normal_" put it in the reduction row, 74% of the H100 decode trace's GPU time (the cache's random fill)."""
    rows = raw_kernels_with_ops(GROWING_KV)
    fills = [k for k, ops in rows if "aten::normal_" in ops]
    assert len(fills) == 12
    assert {K.classify_gpu(k["name"]) for k in fills} == {"elementwise"}
    r = analyze(GROWING_KV)
    reduction = _cats(r)["reduction"]
    # no kernel of the raw trace is launched by a reducing op (sum, mean, max, norm, ...): the row is empty
    reducing_ops = {"aten::sum", "aten::mean", "aten::max", "aten::amax", "aten::norm", "aten::linalg_vector_norm"}
    reducing = [k for k, ops in rows if reducing_ops & set(ops)]
    assert reduction["num_kernels"] == len(reducing) == 0
    share = sum(k["dur"] for k in fills) / r.trace_summary["gpu_time_us"] * 100
    assert share > 70  # what the reduction row claimed before
    assert _cats(r)["elementwise"]["time_us"] >= sum(k["dur"] for k in fills) - 1e-3


def test_cudnn_fft_convolution_is_no_reduction():
    """cuDNN's FFT convolution kernels take a ``cudnn::reduced_divisor`` argument: "reduce" in it made them
    reductions. They are launched by aten::cudnn_convolution (AlexNet trace), not by a reducing op."""
    rows = raw_kernels_with_ops(ALEXNET)
    fft = [k for k, ops in rows if k["name"].startswith("void fft2d_")]
    assert len(fft) == 6
    assert all("aten::cudnn_convolution" in ops for k, ops in rows if k["name"].startswith("void fft2d_"))
    assert {K.classify_gpu(k["name"]) for k in fft} == {"other"}
    # a real reduction keeps its row, as does a layer norm
    assert K.classify_gpu("void at::native::reduce_kernel<512, 1, at::native::ReduceOp<float>>()") == "reduction"
    assert (
        K.classify_gpu("void at::native::(anonymous namespace)::vectorized_layer_norm_kernel<float>()") == "reduction"
    )
