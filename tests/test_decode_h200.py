"""`attnscope analyze` on the real H200 decode traces (tests/data/h200/decode: B=1, H=32, 8 KV heads,
Sq=1 against Sk=8192, D=128, bf16, mask causal_lower_right, one file per variant).

Expected values are read from the raw Kineto JSON here (names, durations, Input Dims / type, Concrete
Inputs) or worked by hand (FLOPs), never from attnscope's own output.
"""

from __future__ import annotations

from functools import cache
from typing import Any

import pytest

from attnscope.analysis.explain import annotate
from attnscope.analysis.insights import no_tensor_cores
from attnscope.analysis.kernels import is_matrix_kernel
from attnscope.api import analyze
from attnscope.report.json import result_to_dict
from tests.rawtrace import H200, raw_events

DECODE = H200 / "decode"
VARIANTS = ("sdpa_flash", "sdpa_default", "sdpa_cudnn", "cudnn_frontend", "flashinfer_decode", "flex", "flex_compiled")


@cache
def docs() -> dict[str, dict[str, Any]]:
    """Each decode trace analysed and annotated on its own (the per-variant insights)."""
    out = {}
    for v in VARIANTS:
        doc = annotate({"results": [result_to_dict(analyze(DECODE / f"{v}.json", variant=v))]})
        out[v] = doc["results"][0]
    return out


def raw(variant: str) -> list[dict[str, Any]]:
    return raw_events(DECODE / f"{variant}.json")


def raw_kernels(variant: str) -> list[dict[str, Any]]:
    return [e for e in raw(variant) if e.get("cat") == "kernel"]


def raw_op(variant: str, name: str) -> dict[str, Any]:
    (e,) = [e for e in raw(variant) if e.get("cat") == "cpu_op" and e["name"] == name]
    return e["args"]


def insights(variant: str, rid: str) -> list[dict[str, Any]]:
    return [i for i in docs()[variant]["insights"] if i["id"] == rid]


# ---- 1. a combine kernel is not matrix work; no fp32 advice on 16-bit inputs ---------------------


@pytest.mark.parametrize("variant", ["sdpa_flash", "sdpa_default"])
def test_flash_combine_kernel_is_not_a_matrix_kernel_on_cuda_cores(variant: str) -> None:
    ks = raw_kernels(variant)
    combine = [e for e in ks if "splitkv_combine" in e["name"]]
    assert len(combine) == 1 and len(ks) == 2
    # the inputs are bf16: Input type of the flash op that launched both kernels
    assert raw_op(variant, "aten::_flash_attention_forward")["Input type"][:3] == ["c10::BFloat16"] * 3
    r = docs()[variant]
    rec = next(k for k in r["kernels"] if k["name"] == combine[0]["name"])
    assert rec["duration_us"] == pytest.approx(combine[0]["dur"])
    assert rec["tensor_cores"] is False and not is_matrix_kernel(rec["name"], rec["category"])
    assert insights(variant, "no_tensor_cores") == []
    assert r["tensor_cores"] is True  # the split-KV kernel itself is flash's MMA kernel


@pytest.mark.parametrize("variant", VARIANTS)
def test_no_fp32_advice_where_the_attention_inputs_are_16_bit(variant: str) -> None:
    # Every attention op these traces record takes bf16 q (raw Input type of the op whose first input is q,
    # [1, 32, 1, 128] or flash's [1, 1, 32, 128]); the one fp32 matmul is eager flex's own upcast, which
    # fp32_upcast explains without the TF32 advice.
    types = {
        e["args"]["Input type"][0]
        for e in raw(variant)
        if e.get("cat") == "cpu_op"
        and any(s in e["name"] for s in ("attention", "Attention"))
        and (e["args"].get("Input Dims") or [None])[0] in ([1, 32, 1, 128], [1, 1, 32, 128])
    }
    assert types <= {"c10::BFloat16"} and (types or variant in ("cudnn_frontend", "flashinfer_decode"))
    for i in docs()[variant]["insights"]:
        assert "TF32" not in i["advice"] and "fp32 inputs" not in i["advice"], (variant, i)


def raw_launcher(events: list[dict[str, Any]], kernel: dict[str, Any]) -> dict[str, Any]:
    """The innermost cpu_op around the runtime call that launched ``kernel`` (same correlation, same thread)."""
    corr = kernel["args"]["correlation"]
    (call,) = [
        e for e in events if e.get("cat") in ("cuda_runtime", "cuda_driver") and e["args"].get("correlation") == corr
    ]
    around = [
        e
        for e in events
        if e.get("cat") == "cpu_op" and e["tid"] == call["tid"] and e["ts"] <= call["ts"] <= e["ts"] + e["dur"]
    ]
    return min(around, key=lambda e: e["dur"])


def test_flex_fp32_matmul_is_said_to_be_fp32_from_the_bmm_input_type() -> None:
    ev = raw("flex")
    (gemv,) = [e for e in raw_kernels("flex") if "gemv" in e["name"]]
    op = raw_launcher(ev, gemv)
    assert op["name"] == "aten::bmm" and op["args"]["Input type"] == ["float", "float"]
    (up,) = insights("flex", "fp32_upcast")
    assert up["evidence"]["input_dtypes"] == ["fp32"]
    assert up["evidence"]["fp32_matrix_us"] == pytest.approx(gemv["dur"], abs=0.05)
    # the other bmm (P·V) takes bf16 and runs nvjet on tensor cores: not counted
    (nvjet,) = [e for e in raw_kernels("flex") if e["name"].startswith("nvjet")]
    assert raw_launcher(ev, nvjet)["args"]["Input type"] == ["c10::BFloat16", "c10::BFloat16"]
    assert up["evidence"]["num_fp32_matrix_kernels"] == 1
    assert "run in fp32 on CUDA cores" in up["message"]


def _cuda_core_row(dtype: str | None) -> dict[str, Any]:
    k = {"name": "void gemv2T_kernel_val<int, int, __nv_bfloat16>", "category": "gemm", "duration_us": 4.0}
    k.update(tensor_cores=False, input_dtype=dtype)
    return {"variant": "v", "device_kind": "gpu", "kernels": [k], "trace_gpu_time_us": 8.0}


def test_cuda_core_advice_follows_the_recorded_input_dtype() -> None:
    (fp32,) = no_tensor_cores(_cuda_core_row("fp32"))
    assert "allow TF32" in fp32.advice and "in fp32" in fp32.message and fp32.evidence["fp32_matrix_share_pct"] == 50.0
    (bf16,) = no_tensor_cores(_cuda_core_row("bf16"))
    assert "TF32" not in bf16.advice.replace("neither TF32", "") and "already bf16" in bf16.advice
    assert "gemv" in bf16.advice and "with bf16 inputs" in bf16.message
    (unknown,) = no_tensor_cores(_cuda_core_row(None))
    assert "not recorded" in unknown.advice


def test_flashinfer_merge_kernel_counts_as_attention() -> None:
    ks = raw_kernels("flashinfer_decode")
    assert [e["name"].split("<")[0] for e in ks] == [
        "void flashinfer::SingleDecodeWithKVCacheKernel",
        "void flashinfer::MergeStatesLargeNumIndexSetsKernel",
    ]
    cats = {c["category"]: c for c in docs()["flashinfer_decode"]["trace_summary"]["categories"]}
    assert cats["attention"]["num_kernels"] == 2
    assert cats["attention"]["time_us"] == pytest.approx(sum(e["dur"] for e in ks), abs=1e-3)
    assert cats["elementwise"]["num_kernels"] == 0
    # the decode kernel's tensor-core use is not known from its name: the column says so (None), and the
    # merge kernel (no MMA) does not turn it into a "no"
    assert docs()["flashinfer_decode"]["tensor_cores"] is None


# ---- 2. the case from the trace: decode's causal flag means lower-right at the flash op --------------


@pytest.mark.parametrize("variant", ["sdpa_flash", "sdpa_default"])
def test_flash_decode_flops_count_every_key_for_the_one_query(variant: str) -> None:
    a = raw_op(variant, "aten::_scaled_dot_product_flash_attention")
    q, k = a["Input Dims"][0], a["Input Dims"][1]
    assert (q, k) == ([1, 32, 1, 128], [1, 8, 8192, 128]) and a["Concrete Inputs"][4] == "True"
    # lower-right: the single query is the last position and sees all 8192 keys, in each of the 32 heads:
    # QKᵀ and PV are 2·D FLOP each per kept score → 4·H·D·Sk
    hand = 4 * 32 * 128 * 8192
    assert hand == 134_217_728
    r = docs()[variant]
    assert r["flops"] == hand
    (c,) = r["attention_calls"]
    assert (c["mask"], c["causal_align"]) == ("causal_lower_right", "lower_right")
    assert "bottom-right" in c["mask_basis"] and "causal_lower_right" in c["mask_basis"]
    assert "bottom-right" in r["flop_formula"]
    # TFLOP/s over the GPU time of the two kernels the flash op launched
    us = sum(e["dur"] for e in raw_kernels(variant))
    assert r["tflops"] == pytest.approx(hand / (us * 1e-6) / 1e12, rel=1e-9)
    assert r["case"]["mask"] == "causal_lower_right" and r["case"]["seq_kv"] == 8192
