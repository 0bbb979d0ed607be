"""`attnscope analyze` on the real H200 decode traces (tests/data/h200/decode: B=1, H=32, 8 KV heads,
Sq=1 against Sk=8192, D=128, bf16, mask causal_lower_right, one file per variant).

Expected values are read from the raw Kineto JSON here (names, durations, Input Dims / type, Concrete
Inputs) or worked by hand (FLOPs), never from attnscope's own output.
"""

from __future__ import annotations

import json
from functools import cache
from typing import Any

import pytest

from attnscope.analysis.annotate import annotate
from attnscope.analysis.fingerprint.kernels import is_matrix_kernel
from attnscope.analysis.rules.insights import no_tensor_cores
from attnscope.api import analyze
from attnscope.document.schema import result_to_dict
from tests.rawtrace import H200, raw_events, raw_mask_kernels

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


# ---- 3. the mask SDPA's cuDNN path was given: a lower-right CausalBias, materialised ----------------


def test_sdpa_cudnn_mask_is_a_materialised_lower_right_bias_and_the_advice_fits() -> None:
    ev = raw("sdpa_cudnn")
    ops = [e for e in ev if e.get("cat") == "cpu_op"]
    names = [e["name"] for e in ops]
    ones = ops[names.index("aten::ones")]
    tril = ops[names.index("aten::tril")]
    sdpa = raw_op("sdpa_cudnn", "aten::scaled_dot_product_attention")
    # ones([Sq, Sk]) then tril(diagonal = Sk - Sq = 8191) before SDPA, which takes a [1, 8192] bool attn_mask and
    # is_causal=False (Concrete Inputs[5]); cuDNN ran it
    assert ones["args"]["Concrete Inputs"][0] == "[1, 8192]" and tril["args"]["Concrete Inputs"][1] == "8191"
    assert tril["ts"] + tril["dur"] <= next(e["ts"] for e in ops if e["name"] == "aten::scaled_dot_product_attention")
    assert sdpa["Input Dims"][3] == [1, 8192] and sdpa["Input type"][3] == "bool"
    assert sdpa["Concrete Inputs"][5] == "False"
    assert "aten::_cudnn_attention_forward" in names

    (m,) = insights("sdpa_cudnn", "mask_rebuilt")
    e = m["evidence"]
    assert (e["mask"], e["built_inside"], e["taken_by"], e["backend"], e["is_causal_passed"]) == (
        "causal_lower_right",
        None,
        "aten::scaled_dot_product_attention",
        "cudnn",
        False,
    )
    assert e["dims"] == [1, 8192] and e["diagonal"] == 8191
    raw_mask = raw_mask_kernels(DECODE / "sdpa_cudnn.json", [1, 8192])
    assert e["num_mask_kernels"] == len(raw_mask) == 4
    assert e["mask_us"] == pytest.approx(sum(x["dur"] for x in raw_mask), abs=0.05)
    assert "already passed" not in m["advice"] and "math backend" not in m["advice"]
    assert "causal_lower_right" in m["advice"] and "cuDNN" in m["advice"]
    assert "pass no mask" in m["advice"]  # Sq = 1: the lower-right mask keeps all 8192 keys
    assert "cuDNN" in m["message"] and "aten::tril(diagonal=8191)" in m["message"]


def test_sdpa_cudnn_flops_from_the_inferred_mask() -> None:
    r = docs()["sdpa_cudnn"]
    (c,) = r["attention_calls"]
    assert c["mask"] == "causal_lower_right" and c["mask_inferred_from"] == ["aten::ones", "aten::tril"]
    assert "inferred" in c["mask_basis"] and "shape and order" in c["mask_basis"]
    assert r["flops"] == 4 * 32 * 128 * 8192  # one query sees all 8192 keys, 32 heads, D = 128


@pytest.mark.parametrize("variant", VARIANTS)
def test_no_advice_to_pass_a_flag_already_passed(variant: str) -> None:
    passed = [
        e["args"]["Concrete Inputs"][5] == "True"
        for e in raw(variant)
        if e.get("cat") == "cpu_op" and e["name"] == "aten::scaled_dot_product_attention"
    ]
    for i in docs()[variant]["insights"]:
        if any(passed):
            assert "pass is_causal=True" not in i["advice"], (variant, i["id"])
        if passed and not any(passed):
            assert "already passed" not in i["advice"], (variant, i["id"])


# ---- 4. split-KV: the partial kernel and its combine/merge kernel(s) are one attention step ---------------

# Per variant: (the kernel that computes partial results, the kernels that merge them), by a name fragment read
# off the raw trace.
SPLIT_PAIRS = {
    "sdpa_flash": ("flash_fwd_splitkv_kernel", ("flash_fwd_splitkv_combine_kernel",)),
    "sdpa_default": ("flash_fwd_splitkv_kernel", ("flash_fwd_splitkv_combine_kernel",)),
    "flashinfer_decode": ("SingleDecodeWithKVCacheKernel", ("MergeStatesLargeNumIndexSetsKernel",)),
    "sdpa_cudnn": ("cudnn_generated_fort_native_sdpa", ("lean_reduction_kernel",)),
    "flex_compiled": ("triton_tem_fused_flex_attention_0", ("triton_per_fused_flex_attention_1",
                                                            "triton_per_fused_flex_attention_2")),
}  # fmt: skip


@pytest.mark.parametrize("variant", sorted(SPLIT_PAIRS))
def test_split_kv_names_the_step_from_the_raw_kernels(variant: str) -> None:
    split_frag, combine_frags = SPLIT_PAIRS[variant]
    ks = raw_kernels(variant)
    (split,) = [e for e in ks if split_frag in e["name"]]
    combine = [e for f in combine_frags for e in ks if f in e["name"]]
    assert len(combine) == len(combine_frags)
    (i,) = insights(variant, "split_kv")
    ev = i["evidence"]
    assert ev["split_kernel"] == split["name"] and ev["split_us"] == pytest.approx(split["dur"], abs=0.05)
    assert ev["combine_kernels"] == [e["name"] for e in combine]
    c_us = sum(e["dur"] for e in combine)
    assert ev["combine_us"] == pytest.approx(c_us, abs=0.05)
    assert ev["combine_pct"] == pytest.approx(100 * c_us / (c_us + split["dur"]), abs=0.05)
    words = {2: "two", 3: "three"}[1 + len(combine)]
    assert f"one attention step in {words} kernels" in i["message"]
    assert set(i["kernels"]) == {split["name"], *(e["name"] for e in combine)}


@pytest.mark.parametrize("variant", ["cudnn_frontend", "flex"])
def test_no_split_kv_without_a_combine_kernel(variant: str) -> None:
    ks = raw_kernels(variant)
    assert not any(f in e["name"] for e in ks for f in ("combine", "MergeStates", "lean_reduction", "triton_per"))
    assert insights(variant, "split_kv") == []


# ---- other numbers on these traces that could not be true ---------------------------------------------


def test_compiled_flex_decode_is_one_call_of_three_kernels() -> None:
    ev = raw("flex_compiled")
    tem = [e for e in ev if e.get("cat") == "cpu_op" and e["name"].startswith("triton_tem_fused_flex_attention")]
    per = [e for e in ev if e.get("cat") == "cpu_op" and e["name"].startswith("triton_per_fused_flex_attention")]
    assert len(tem) == 1 and len(per) == 2 and len(raw_kernels("flex_compiled")) == 3
    r = docs()["flex_compiled"]
    (fam,) = r["trace_summary"]["attention_families"]
    assert (fam["num_kernels"], fam["num_forward_calls"], fam["num_backward_calls"]) == (3, 1, 0)
    (c,) = r["attention_calls"]  # the template's op records q, k, v; the reductions are parts of its call
    assert c["op"] == tem[0]["name"]
    assert [c["batch"], c["heads"], c["seq_q"], c["head_dim"]] == tem[0]["args"]["Input Dims"][0]
    assert [c["kv_heads"], c["seq_kv"]] == tem[0]["args"]["Input Dims"][1][1:3]
    # the mask is compiled in: not recorded, and said so (not "2 different attention shapes")
    assert "causal" in r["case_unknown"] and "different attention shapes" not in str(r["case_unknown"])


@pytest.mark.parametrize("variant", ["cudnn_frontend", "flashinfer_decode"])
def test_a_library_called_outside_aten_has_no_call_count(variant: str) -> None:
    ops = [e for e in raw(variant) if e.get("cat") == "cpu_op"]
    assert not any("attention" in e["name"].lower() for e in ops)  # no attention op recorded at all
    r = docs()[variant]
    (fam,) = r["trace_summary"]["attention_families"]
    assert fam["num_kernels"] == len(raw_kernels(variant))
    assert fam["num_forward_calls"] is None and "no attention op" in fam["calls_unknown"]
    assert "no attention op above them" in r["case_unknown"]["case"]


def test_cudnn_frontend_kernel_is_not_said_to_be_launched_by_none() -> None:
    (k,) = raw_kernels("cudnn_frontend")
    (i,) = insights("cudnn_frontend", "opaque_library")
    assert i["evidence"]["kernel"] == k["name"] and i["evidence"]["launched_by"] is None
    assert "None" not in i["message"] and "outside any recorded op" in i["message"]
    assert i["message"].startswith("one cuDNN-generated kernel")


def test_sdpa_cudnn_is_two_cudnn_kernels_not_one() -> None:
    ks = [e for e in raw_kernels("sdpa_cudnn") if "cudnn" in e["name"]]
    assert len(ks) == 2
    (i,) = insights("sdpa_cudnn", "opaque_library")
    assert i["evidence"]["num_cudnn_kernels"] == 2
    assert i["evidence"]["cudnn_us"] == pytest.approx(sum(e["dur"] for e in ks), abs=0.05)
    assert i["message"].startswith("2 cuDNN kernels")


def test_traces_compared_on_one_sample_each_say_so() -> None:
    results = [result_to_dict(analyze(DECODE / f"{v}.json", variant=v)) for v in ("sdpa_cudnn", "sdpa_flash")]
    doc = annotate({"results": results})
    by = {r["variant"]: r for r in doc["results"]}
    (s,) = [i for i in by["sdpa_flash"]["insights"] if i["id"] == "slower_than_best"]
    assert "one sample" in s["message"] and "median" not in s["message"]
    assert s["severity"] == "info" and "confirm with attnscope run" in s["advice"]
    assert "one traced call each" in doc["recommendation"]["text"]


def test_the_run_document_of_this_case_gets_lower_right_advice_not_is_causal() -> None:
    """The committed run output (docs/results/raw/masks/decode.json) has no mask build facts: the advice then goes
    by the case's mask, which the run recorded as causal_lower_right with Sq=1, Sk=8192."""
    from pathlib import Path

    d = json.loads((Path(__file__).parents[3] / "docs/results/raw/masks/decode.json").read_text())
    rows = {r["variant"]: r for r in d["results"]}
    assert rows["sdpa_cudnn"]["case"]["mask"] == "causal_lower_right" and rows["sdpa_cudnn"]["case"]["seq_q"] == 1
    doc = annotate(d)
    seen = 0
    for r in doc["results"]:
        for i in r.get("insights") or []:
            if i["id"] == "mask_rebuilt":
                seen += 1
                assert (
                    "is_causal=True is already passed" not in i["advice"] and "pass is_causal=True" not in i["advice"]
                )
                assert "lower-right" in i["advice"]
            assert "fp32 inputs" not in i["advice"], (r["variant"], i["id"])
    assert seen == 2  # sdpa_math and sdpa_cudnn materialise the mask (a tril kernel in each)


def test_the_flop_footnote_gives_each_trace_its_own_basis() -> None:
    from attnscope.report.text.table import footnotes

    names = ("sdpa_cudnn", "sdpa_flash", "flex_compiled")
    doc = annotate({"results": [result_to_dict(analyze(DECODE / f"{v}.json", variant=v)) for v in names]})
    lines = footnotes(doc)
    cudnn = next(ln for ln in lines if ln.startswith("FLOPs (sdpa_cudnn)"))
    flash = next(ln for ln in lines if ln.startswith("FLOPs (sdpa_flash)"))
    assert "inferred" in cudnn and "bottom-right" not in cudnn and cudnn.endswith("= 134,217,728")
    assert "_scaled_dot_product_flash_attention" in flash and "inferred" not in flash
    flex = next(ln for ln in lines if ln.startswith("FLOPs (flex_compiled)"))
    assert "not known" in flex and "mask" in flex
