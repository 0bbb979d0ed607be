"""Insights on real H200 traces and on the run's own JSON: triggered where they should be, and only there.

Expected numbers are recomputed from the raw Kineto events (tests/rawtrace.py), not from attnscope.
"""

from __future__ import annotations

import copy
import json
import re
from functools import cache
from pathlib import Path
from typing import Any

import pytest

from attnscope.analysis.annotate import annotate
from attnscope.analysis.rules.insights import (
    _copy_advice,
    _cuda_core_advice,
    _input_dtypes,
    _share_text,
    fp32_upcast,
    fused_names,
    gpu_total_us,
    hidden_copy,
    no_tensor_cores,
    share_pct,
    short,
)
from attnscope.analysis.rules.row_kernels import is_fused
from attnscope.api import analyze
from attnscope.core.types import Insight
from attnscope.document.schema import result_to_dict
from tests.rawtrace import H200, VARIANTS, raw_events, raw_gpu_events_in_call, raw_mask_kernels

RUN_JSON = Path(__file__).parents[2] / "data" / "h200" / "run.json"  # the run that captured these traces
MIB = 1024 * 1024


@cache
def analyzed() -> dict[str, dict[str, Any]]:
    """`attnscope analyze` of every H200 trace, annotated together (case read from the SDPA ops)."""
    results = [result_to_dict(analyze(H200 / f"{v}.json", variant=v)) for v in VARIANTS]
    doc = annotate({"results": results})
    return {r["variant"]: r for r in doc["results"]}


@cache
def run_doc() -> dict[str, Any]:
    return json.loads(RUN_JSON.read_text())


def run_results(doc: dict[str, Any] | None = None) -> dict[str, dict[str, Any]]:
    return {r["variant"]: r for r in annotate(doc or run_doc())["results"]}


def ids(r: dict[str, Any]) -> set[str]:
    return {i["id"] for i in r["insights"]}


def one(r: dict[str, Any], rid: str) -> dict[str, Any]:
    got = [i for i in r["insights"] if i["id"] == rid]
    assert len(got) == 1, (r["variant"], rid, ids(r))
    return got[0]


def raw_gpu(variant: str) -> list[dict[str, Any]]:
    return raw_gpu_events_in_call(raw_events(H200 / f"{variant}.json"))


# ---- trace-only insights (the same from run and analyze) ----------------------------------


def test_hidden_copy_names_op_and_bytes_from_raw_memcpy():
    memcpy = [e for e in raw_gpu("naive") if e["cat"] == "gpu_memcpy" and "DtoD" in e["name"]]
    assert len(memcpy) == 1
    i = one(analyzed()["naive"], "hidden_copy")
    assert i["evidence"]["op"] == "aten::masked_fill"
    assert i["evidence"]["bytes"] == memcpy[0]["args"]["bytes"] == 4 * 16 * 2048 * 2048 * 2
    assert i["evidence"]["copy_us"] == pytest.approx(memcpy[0]["dur"], abs=0.05)
    assert "masked_fill_" in i["advice"]


@pytest.mark.parametrize("variant", ["naive_inplace", "sdpa_math", "sdpa_flash", "sdpa_cudnn", "flex_compiled"])
def test_no_hidden_copy_where_nothing_is_copied(variant):
    assert "hidden_copy" not in ids(analyzed()[variant])


def test_fp32_upcast_share_of_gpu_time_from_raw_kernels():
    ev = raw_gpu("sdpa_math")
    ffma = sum(e["dur"] for e in ev if e["cat"] == "kernel" and "ffma" in e["name"])
    total = sum(e["dur"] for e in ev)
    i = one(analyzed()["sdpa_math"], "fp32_upcast")
    assert i["evidence"]["num_upcasts"] == 3
    assert i["evidence"]["fp32_matrix_share_pct"] == pytest.approx(100 * ffma / total, abs=0.06)
    assert f"{100 * ffma / total:.1f}% of GPU time" in i["message"]


@pytest.mark.parametrize("variant", ["naive", "naive_inplace", "sdpa_efficient", "sdpa_flash", "sdpa_cudnn"])
def test_no_upcast_and_no_cuda_core_insight_for_16bit_paths(variant):
    assert not {"fp32_upcast", "no_tensor_cores"} & ids(analyzed()[variant])


def test_mask_rebuilt_and_safe_softmax_only_in_math_paths():
    r = analyzed()["sdpa_math"]
    mask = one(r, "mask_rebuilt")
    raw_mask = raw_mask_kernels(H200 / "sdpa_math.json", [2048, 2048])  # B4 H16 S2048: ones(S, S).tril() etc.
    assert sum("triu_tril" in e["name"] for e in raw_mask) == 1
    assert mask["evidence"]["num_mask_kernels"] == len(raw_mask)
    assert mask["evidence"]["mask_us"] == pytest.approx(sum(e["dur"] for e in raw_mask), abs=0.05)
    assert mask["evidence"]["mask_ops"] == ["aten::ones", "aten::tril", "aten::where"]
    assert mask["evidence"]["is_causal_passed"] is True  # Concrete Inputs[5] of the public SDPA op
    assert mask["evidence"]["built_inside"] == "aten::_scaled_dot_product_attention_math"
    assert "is_causal=True is already passed" in mask["advice"]
    guard = one(r, "safe_softmax")
    assert "aten::isneginf" in guard["ops"]
    for v in ("naive", "naive_inplace", "sdpa_flash", "sdpa_cudnn", "sdpa_efficient", "flex_compiled"):
        assert not {"mask_rebuilt", "safe_softmax"} & ids(analyzed()[v]), v


def test_opaque_library_only_for_generated_cudnn_kernel():
    i = one(analyzed()["sdpa_cudnn"], "opaque_library")
    raw = [e for e in raw_gpu("sdpa_cudnn") if e["cat"] == "kernel" and "cudnn_generated" in e["name"]]
    assert i["evidence"]["kernel"] == raw[0]["name"]
    for v in ("sdpa_flash", "sdpa_efficient", "naive", "flex_compiled"):
        assert "opaque_library" not in ids(analyzed()[v])


def test_analyze_leaves_out_what_a_trace_cannot_tell_and_says_so():
    r = analyzed()["sdpa_math"]
    missing = {n["id"]: n["why"] for n in r["insights_not_checked"]}
    assert {"numerics_off", "cpu_bound"} <= set(missing)
    assert "fp64 reference" in missing["numerics_off"]
    # the shape is read from the SDPA op: math's 2448 MiB peak over its 512 MiB bf16 score matrix is told
    assert one(r, "score_matrix")["evidence"]["score_matrix_bytes"] == 4 * 16 * 2048 * 2048 * 2
    # naive has no attention op: its shape stays unknown, and the rule says why
    naive = {n["id"]: n["why"] for n in analyzed()["naive"]["insights_not_checked"]}
    assert "no attention op" in naive["score_matrix"] and "slower_than_best" in naive
    assert "sdpa_why" in {n["id"] for n in analyzed()["sdpa_default"]["insights_not_checked"]}
    # occupancy from a trace: the limiter, but no by-design verdict without the rate
    occ = one(analyzed()["sdpa_flash"], "low_occupancy")
    assert occ["severity"] == "info" and occ["evidence"]["by_design"] is None


# ---- run-level insights on the run's own JSON ----------------------------------------------


def test_score_matrix_numbers():
    rs = run_results()
    i = one(rs["naive"], "score_matrix")
    assert i["evidence"]["score_matrix_bytes"] == 4 * 16 * 2048 * 2048 * 2
    assert i["evidence"]["minimum_bytes"] == 4 * 16 * 2048 * 64 * 2
    assert i["evidence"]["peak_memory_bytes"] == rs["naive"]["peak_memory_bytes"]
    assert "score_matrix" in ids(rs["sdpa_math"]) and "score_matrix" in ids(rs["flex"])
    for v in ("sdpa_flash", "sdpa_cudnn", "sdpa_efficient", "flex_compiled"):
        assert "score_matrix" not in ids(rs[v]), v


def test_low_occupancy_by_design_told_apart_from_hurting():
    rs = run_results()
    flash = one(rs["sdpa_flash"], "low_occupancy_by_design")
    assert flash["evidence"]["limiter"] == "registers" and flash["evidence"]["theoretical_occupancy_pct"] == 12.5
    assert flash["evidence"]["pct_of_peak"] == pytest.approx(rs["sdpa_flash"]["pct_of_peak"], abs=0.05)
    assert "low_occupancy_by_design" in ids(rs["sdpa_cudnn"])
    eff = one(rs["sdpa_efficient"], "low_occupancy")
    assert eff["severity"] == "warning" and eff["evidence"]["by_design"] is False
    assert not {"low_occupancy", "low_occupancy_by_design"} & ids(rs["naive"])  # softmax at 37.5%
    assert not {"low_occupancy", "low_occupancy_by_design"} & ids(rs["sdpa_math"])  # fp32 story instead


def test_cpu_bound_only_when_host_time_reaches_gpu_time():
    rs = run_results()
    assert not any("cpu_bound" in ids(r) for r in rs.values())  # measured: host < GPU everywhere
    doc = copy.deepcopy(run_doc())
    flash = next(r for r in doc["results"] if r["variant"] == "sdpa_flash")
    flash["cpu_time_us"] = flash["gpu_time_us"] * 1.5
    i = one(run_results(doc)["sdpa_flash"], "cpu_bound")
    assert i["evidence"]["cpu_over_gpu_pct"] == 150 and "CUDA graph" in i["advice"]


def test_slower_than_best_ratio_and_no_claim_inside_the_noise():
    rs = run_results()
    i = one(rs["sdpa_math"], "slower_than_best")
    best = min((r for r in rs.values() if r["status"] == "ok"), key=lambda r: r["gpu_time_us"])
    assert i["evidence"]["best"] == best["variant"]
    assert i["evidence"]["ratio"] == pytest.approx(rs["sdpa_math"]["gpu_time_us"] / best["gpu_time_us"], abs=0.01)
    # sdpa_cudnn and sdpa_default run the same kernel: their IQRs overlap, no "slower" claim
    assert "slower_than_best" not in ids(rs["sdpa_cudnn"]) and "slower_than_best" not in ids(rs["sdpa_default"])


def test_numerics_off_triggers_only_above_tolerance():
    assert not any("numerics_off" in ids(r) for r in run_results().values())
    doc = copy.deepcopy(run_doc())
    flash = next(r for r in doc["results"] if r["variant"] == "sdpa_flash")
    flash["max_rel_error"], flash["numerics_ok"] = 0.05, False
    rs = run_results(doc)
    i = one(rs["sdpa_flash"], "numerics_off")
    assert i["severity"] == "error" and i["evidence"]["tolerance"] == flash["error_tolerance"]
    assert "slower_than_best" not in ids(rs["sdpa_flash"])  # judged on numerics, not speed


def test_sdpa_choice_reports_kernel_backend_and_torch_reasons():
    doc = copy.deepcopy(run_doc())
    d = next(r for r in doc["results"] if r["variant"] == "sdpa_default")
    d["sdpa_why"] = {
        "chosen": "cudnn",
        "order": ["flash", "cudnn", "efficient", "math"],
        "checks": [
            {"backend": "flash", "usable": False, "reasons": ["head_dim 512 > 256"]},
            {"backend": "cudnn", "usable": True, "reasons": []},
        ],
    }
    i = one(run_results(doc)["sdpa_default"], "sdpa_choice")
    assert i["evidence"]["ran"] == "cudnn" and "cudnn_generated" in i["evidence"]["seen_in"]
    assert i["evidence"]["rejected"] == ["flash: head_dim 512 > 256"]
    assert "flash: head_dim 512 > 256" in i["message"]


# ---- every number in a message is in the evidence --------------------------------------------

NUM = re.compile(r"(?<![\w.])\d[\d,]*(?:\.\d+)?")


def _numbers(v: Any) -> list[float]:
    if isinstance(v, bool) or v is None:
        return []
    if isinstance(v, int | float):
        return [float(v)]
    if isinstance(v, str):
        return [float(x.replace(",", "")) for x in NUM.findall(v)]
    if isinstance(v, list | tuple):
        return [x for e in v for x in _numbers(e)]
    if isinstance(v, dict):
        return [x for e in v.values() for x in _numbers(e)]
    return []


def _traceable(n: float, pool: list[float], shown: str) -> bool:
    decimals = len(shown.split(".")[1]) if "." in shown else 0
    tol = 0.5 * 10**-decimals + 1e-9
    return any(abs(n - p) <= tol for p in pool)


@pytest.mark.parametrize("source", ["run", "analyze"])
def test_every_number_in_a_message_is_in_its_evidence(source):
    rs = run_results() if source == "run" else analyzed()
    checked = 0
    for r in rs.values():
        for i in r["insights"]:
            pool = _numbers(i["evidence"]) + _numbers(list(i["kernels"])) + _numbers(list(i["ops"]))
            for shown in NUM.findall(i["message"]):
                assert _traceable(float(shown.replace(",", "")), pool, shown), (i["id"], shown, i["message"])
                checked += 1
    assert checked > 20


def test_sdpa_why_short_reasons_from_real_torch_211_messages():
    """explain() output captured on the H200 (torch 2.11, cuDNN 9.19): order, choice, and torch's words."""
    from attnscope.variants.sdpa_why import shorten

    why = json.loads((H200 / "sdpa_why_torch211.json").read_text())
    assert why["default"]["order"] == ["cudnn", "flash", "efficient", "math"]
    assert why["default"]["chosen"] == "cudnn" and why["d512"]["chosen"] == "efficient"
    for case in why.values():
        for c in case["checks"]:
            assert [shorten(m) for m in c["torch_messages"]] == c["reasons"]
    flash_512 = next(c for c in why["d512"]["checks"] if c["backend"] == "flash")
    assert flash_512["reasons"] == ["head_dim 512 > 256"]


# hidden_copy, fp32_upcast and no_tensor_cores compared whole (id, variant, severity, message, advice,
# evidence, kernels, ops) on hand-made rows, and the helpers they share (short, share_pct, gpu_total_us,
# _share_text, fused_names, is_fused, _copy_advice, _cuda_core_advice, _input_dtypes) pinned on their own.
#
# Every expected number is worked by hand in the test or its docstring (1 MiB = 1048576 bytes, 1 KiB = 1024
# bytes, a GPU share = 100·µs/trace_gpu_time_us rounded to one decimal), and every expected sentence is
# written out.  Boundaries are tested at, just below and just above each threshold (1 MiB for a warning,
# 0 µs for a timed copy, 60 characters for a short kernel name).


MIB_s = 1048576
DTOD = "Memcpy DtoD (Device -> Device)"
MATH = "aten::_scaled_dot_product_attention_math"
ACC = "torch::autograd::AccumulateGrad"
GEMM32_A = "sm80_xmma_gemm_f32f32_f32f32_f32_tn_n_tilesize128x128x8_stage3_warpsize2x2x1_ffma_aligna4_alignc4_execute"
GEMM32_B = "sm80_xmma_gemm_f32f32_f32f32_f32_nn_n_tilesize64x64x8_stage3_warpsize1x4x1_ffma_aligna4_alignc4_execute"
GEMV_A = "void gemv2T_kernel_val<int, int, __nv_bfloat16, __nv_bfloat16, float, 128, 16, 4, 4, false, false>"
GEMV_B = "void gemv2N_kernel<int, int, __nv_bfloat16, __nv_bfloat16, float, 128, 32, 4, 4, 1, false>"
SIMT = "cutlass_80_simt_hgemm_128x128_8x5_nn_align1"
NVJET = "nvjet_hsh_128x256_64x4_2x1_v_bz_coopA_NTN"
CAST = "void at::native::vectorized_elementwise_kernel<8, at::native::bfloat16_copy_kernel_cuda>"
SOFTMAX = "void at::native::cunn_SoftMaxForward<8, float, float, float, at::native::SoftMaxForwardEpilogue>"

# a row alone, of no known case: naive_inplace was not measured beside it, so in place is not claimed faster
MASKED_FILL_GPU = (
    "use a fused SDPA backend (flash, cuDNN, efficient) that never materialises the scores, or the in-place "
    "masked_fill_ on the scores; whether in place is faster is not measured here: attnscope run --variants "
    "naive,naive_inplace with the case's shape flags measures it"
)
MASKED_FILL_CPU = (
    "use a fused SDPA backend (flash) that never materialises the scores, or the in-place masked_fill_ on the scores; "
    "whether in place is faster is not measured here: attnscope run --variants naive,naive_inplace with the "
    "case's shape flags measures it"
)
# a repeat_interleave in this code (no place recorded): the broadcast advice of analysis/copy_context.py; a copy
# of no recorded kind comes from a document older than the copy's kind and place, and says so
REPEAT_IN_CODE = (
    "GQA: pass enable_gqa=True to SDPA instead of materialising K and V once per query head "
    "(repeat_interleave, expand+reshape); flash and cuDNN then run without any copy "
    "(seen on an H200: docs/results/h200.md, GQA)"
)
REPEAT = (
    REPEAT_IN_CODE + "; this document does not say where the repeat happened (it predates that field): "
    "flex_attention's eager path repeats K/V itself, so analyze the trace again to tell a repeat in this code "
    "from one inside a library op"
)
FP32_ADVICE = (
    "fp32 inputs: allow TF32 (torch.set_float32_matmul_precision('high')) or run in bf16/fp16 so the matrix work "
    "lands on tensor cores"
)
UNKNOWN_ADVICE = (
    "check the inputs' dtype (not recorded for these kernels): fp32 inputs run on CUDA cores unless TF32 is allowed "
    "(torch.set_float32_matmul_precision('high')); 16-bit inputs on CUDA cores are the library's choice for this shape"
)
GEMV_BF16_ADVICE = (
    "the inputs are already bf16, so neither TF32 nor a cast would change this: cuBLAS picked gemv, a matrix-vector "
    "product (one row, as in decode), which is memory-bound on any core; more rows per call (several sequences "
    "batched) let it pick a tensor-core kernel"
)


def _library_advice(dts: str) -> str:
    return (
        f"the inputs are already {dts}, so neither TF32 nor a cast would change this: the library picked a CUDA-core "
        "kernel for this shape; compare another backend or shape"
    )


def _gpu(variant: str = "v", **kw: Any) -> dict[str, Any]:
    r: dict[str, Any] = {"variant": variant, "device_kind": "gpu", "source": "run"}
    r.update(kw)
    return r


def _cpu(variant: str = "v", **kw: Any) -> dict[str, Any]:
    r: dict[str, Any] = {"variant": variant, "device_kind": "cpu", "source": "run"}
    r.update(kw)
    return r


def _k(name: str, us: float, category: str = "gemm", tc: bool | None = False, dtype: str | None = None) -> dict:
    k: dict[str, Any] = {"name": name, "category": category, "duration_us": us, "device": "gpu", "tensor_cores": tc}
    if dtype is not None:
        k["input_dtype"] = dtype
    return k


# ---- small helpers -----------------------------------------------------------------------


def test_short_keeps_a_name_of_at_most_sixty_characters():
    n59 = "sm90_gemm_" + "x" * 49  # 10 + 49 = 59
    n60 = "sm90_gemm_" + "x" * 50  # 10 + 50 = 60: the limit itself is kept whole
    assert short(n59) == n59
    assert short(n60) == n60


def test_short_cuts_a_name_of_sixty_one_characters_to_fifty_nine_and_an_ellipsis():
    n61 = "sm90_gemm_" + "x" * 51
    assert short(n61) == "sm90_gemm_" + "x" * 49 + "…"


def test_short_drops_the_void_prefix_before_measuring_and_takes_a_limit():
    assert short("void " + "sm90_gemm_" + "x" * 50) == "sm90_gemm_" + "x" * 50  # 65 with "void ", 60 without
    assert short("void at::native::fill_kernel", n=10) == "at::nativ…"  # 9 characters and the ellipsis
    assert short("aten::mm", n=8) == "aten::mm"


def test_gpu_total_is_none_unless_the_trace_timed_something():
    assert gpu_total_us({}) is None
    assert gpu_total_us({"trace_gpu_time_us": None}) is None
    assert gpu_total_us({"trace_gpu_time_us": 0}) is None
    assert gpu_total_us({"trace_gpu_time_us": 0.0}) is None
    assert gpu_total_us({"trace_gpu_time_us": 1234.5}) == 1234.5


def test_share_pct_of_gpu_time_by_hand_and_none_without_a_total():
    assert share_pct(25.0, {"trace_gpu_time_us": 200.0}) == 12.5  # 100·25/200
    assert share_pct(1.0, {"trace_gpu_time_us": 3.0}) == 33.3  # 33.33… rounds to one decimal
    assert share_pct(5.0, {}) is None
    assert share_pct(5.0, {"trace_gpu_time_us": 0.0}) is None


def test_share_text_with_and_without_a_share():
    assert _share_text(12.34, 5.67) == "12.3 µs, 5.7% of GPU time"
    assert _share_text(0.0, 0.0) == "0.0 µs, 0.0% of GPU time"  # a 0 % share is still a share
    assert _share_text(12.34, None) == "12.3 µs"


def test_fused_names_are_the_backends_where_the_result_ran():
    assert fused_names({"device_kind": "gpu"}) == "flash, cuDNN, efficient"
    assert fused_names({"device_kind": "cpu"}) == "flash"
    assert fused_names({}) == "flash"


@pytest.mark.parametrize("backend", ["flash", "efficient", "cudnn"])
def test_a_fused_sdpa_backend_is_fused_even_when_only_gemms_are_listed(backend):
    r = {"sdpa_backend": backend, "kernels": [_k(GEMM32_A, 1.0)]}
    assert is_fused(r) is True
    assert is_fused({"sdpa_backend": backend}) is True


def test_math_backend_or_bare_gemms_are_not_fused_but_an_attention_kernel_is():
    assert is_fused({"sdpa_backend": "math", "kernels": [_k(GEMM32_A, 1.0)]}) is False
    assert is_fused({"kernels": [_k(GEMM32_A, 1.0)]}) is False
    assert is_fused({"sdpa_backend": "math", "kernels": [_k("pytorch_flash::flash_fwd_kernel", 1.0, "attention")]})


# ---- copy advice, op by op (user code: no place recorded, no broadcast) ----------------------


@pytest.mark.parametrize("kind", [None, "value", "layout"])
@pytest.mark.parametrize(
    ("op", "advice"),
    [
        ("aten::masked_fill", MASKED_FILL_GPU),
        ("aten::repeat_interleave", REPEAT),
        (
            "FlexAttentionAutogradOp",
            "the copy happens inside FlexAttentionAutogradOp, out of reach of an in-place fix: a fused or compiled "
            "variant (e.g. flex_compiled, an SDPA backend) does the step without it",
        ),
        (
            # a real two-rank DDP trace (H100): 1.5 GiB a rank copied out of the all-reduce buckets
            "torch.distributed.ddp.reducer::copy_bucket_to_grad",
            "DDP copies each gradient out of its all-reduce bucket (torch.distributed.ddp.reducer::copy_bucket_to_grad"
            "): DistributedDataParallel(..., gradient_as_bucket_view=True) makes the gradients views of the buckets, "
            "so this copy is not made",
        ),
        (
            "torchvision::roi_align",  # a library op far from attention: no attention variant is offered
            "the copy happens inside torchvision::roi_align, not a call in this code: an in-place fix cannot reach it",
        ),
        (
            "aten::reshape",
            "aten::reshape made a copy because its input's strides allow no view of the new shape: make the producer "
            "write contiguous output, or keep the strided layout for the consumer, so no copy is needed",
        ),
        (
            "aten::contiguous",
            "aten::contiguous made a copy because its input was not contiguous: make the producer write contiguous "
            "output, or keep the strided layout for the consumer, so no copy is needed",
        ),
        (
            "aten::slice_backward",
            "autograd's slice_backward materialises a full-size gradient: slicing or indexing fewer, larger tensors in "
            "the forward pass (or a fused op) avoids it",
        ),
        (
            "aten::add",
            "use the in-place form (add_) where the input is not needed afterwards, or a fused variant that does the "
            "step inside one kernel",
        ),
        (
            "aten::index_select",
            "index_select returns a copy here: check whether a view would do, or fuse the step (torch.compile)",
        ),
    ],
)
def test_copy_advice_by_op_in_user_code(op, advice, kind):
    if op == "aten::repeat_interleave" and kind is not None:
        advice = REPEAT_IN_CODE  # the kind is recorded, so the document is new enough to place the copy
    assert _copy_advice(op, _gpu(), kind, None) == advice


def test_a_repeat_in_code_that_already_passes_enable_gqa_is_told_to_drop_the_repeat():
    r = _gpu(attention_calls=[{"enable_gqa": True}])
    assert _copy_advice("aten::repeat_interleave", r, "value", None) == (
        "K/V are repeated in this code before an SDPA call that already passes enable_gqa=True: drop the repeat, "
        "SDPA broadcasts the KV heads itself"
    )


def test_masked_fill_advice_names_only_the_cpu_fused_backend_on_a_cpu():
    assert _copy_advice("aten::masked_fill", _cpu()) == MASKED_FILL_CPU


# ---- hidden_copy ---------------------------------------------------------------------------


def _copy(op: str, nbytes: int, dims: list[int] | None = None, **kw: Any) -> dict[str, Any]:
    c: dict[str, Any] = {"op": op, "copy_op": "aten::copy_", "bytes": nbytes}
    if dims is not None:
        c["dims"] = dims
    c.update(kw)
    return c


def test_copy_of_exactly_one_mib_is_a_warning_in_mib_with_its_gpu_share():
    """1·2·512·512 bf16 = 1048576 bytes = 1.0 MiB, at the warning threshold; 10 µs of 400 µs = 2.5 %."""
    c = _copy("aten::masked_fill", MIB_s, [1, 2, 512, 512], device_event=DTOD, duration_us=10.0, kind="value")
    r = _gpu("naive", hidden_copies=[c], trace_gpu_time_us=400.0)
    assert hidden_copy(r) == [
        Insight(
            id="hidden_copy",
            variant="naive",
            severity="warning",
            message=(
                "aten::masked_fill copies a full tensor (value): 1× via aten::copy_, 1.0 MiB in all "
                "(Memcpy DtoD (Device -> Device), 10.0 µs, 2.5% of GPU time)"
            ),
            advice=MASKED_FILL_GPU,
            evidence={
                "op": "aten::masked_fill",
                "copy_op": "aten::copy_",
                "num_copies": 1,
                "bytes": 1048576,
                "mib": 1.0,
                "dims": [[1, 2, 512, 512]],
                "kind": "value",
                "inside": None,
                "device_event": DTOD,
                "copy_us": 10.0,
                "gpu_share_pct": 2.5,
                "naive_inplace_measured": {"verdict": "not_measured", "command": None},
            },
            kernels=(DTOD,),
            ops=("aten::masked_fill", "aten::copy_"),
        )
    ]


def test_copy_one_byte_under_a_mib_is_info_in_kib():
    """1048575 one-byte elements: 1048575/1024 = 1023.999 KiB → 1024.0; 0.99999905 MiB → 1.0; untimed."""
    r = _gpu("v", hidden_copies=[_copy("aten::index_select", MIB_s - 1, [1048575], kind="value")])
    assert hidden_copy(r) == [
        Insight(
            id="hidden_copy",
            variant="v",
            severity="info",
            message="aten::index_select copies a full tensor (value): 1× via aten::copy_, 1024.0 KiB in all",
            advice="index_select returns a copy here: check whether a view would do, or fuse the step (torch.compile)",
            evidence={
                "op": "aten::index_select",
                "copy_op": "aten::copy_",
                "num_copies": 1,
                "bytes": 1048575,
                "mib": 1.0,
                "kib": 1024.0,
                "dims": [[1048575]],
                "kind": "value",
                "inside": None,
            },
            kernels=(),
            ops=("aten::index_select", "aten::copy_"),
        )
    ]


def test_copy_one_byte_over_a_mib_is_a_warning_in_mib():
    (i,) = hidden_copy(_gpu("v", hidden_copies=[_copy("aten::index_select", MIB_s + 1, [1048577], kind="value")]))
    assert (i.severity, i.message) == (
        "warning",
        "aten::index_select copies a full tensor (value): 1× via aten::copy_, 1.0 MiB in all",
    )
    assert (i.evidence["bytes"], i.evidence["mib"], "kib" in i.evidence) == (1048577, 1.0, False)


def test_small_copy_in_kib_without_kind_place_or_dims():
    """1000·256 bf16 = 512000 bytes = 500.0 KiB (512000/1024), 0.488 MiB → 0.5; no kind, no dims recorded;
    the copy took 5 µs but no device event names it, so no event or share is shown."""
    r = _gpu("v", hidden_copies=[_copy("aten::clone", 512000, duration_us=5.0)], trace_gpu_time_us=100.0)
    assert hidden_copy(r) == [
        Insight(
            id="hidden_copy",
            variant="v",
            severity="info",
            message="aten::clone copies a full tensor: 1× via aten::copy_, 500.0 KiB in all",
            advice=(
                "aten::clone made a copy, as a clone always does: drop the clone where neither tensor is changed in "
                "place afterwards"
            ),
            evidence={
                "op": "aten::clone",
                "copy_op": "aten::copy_",
                "num_copies": 1,
                "bytes": 512000,
                "mib": 0.5,
                "kib": 500.0,
                "dims": [[]],
                "kind": None,
                "inside": None,
            },
            kernels=(),
            ops=("aten::clone", "aten::copy_"),
        )
    ]


def test_a_zero_microsecond_copy_event_is_named_but_not_timed():
    """An event of 0 µs: the copy is on the device, but there is no time to show (the share needs us > 0)."""
    c = _copy("aten::add", 2 * MIB_s, [1024, 1024], device_event=DTOD, duration_us=0.0, kind="value")
    (i,) = hidden_copy(_gpu("v", hidden_copies=[c], trace_gpu_time_us=100.0))
    assert i.message == "aten::add copies a full tensor (value): 1× via aten::copy_, 2.0 MiB in all"
    assert i.kernels == (DTOD,)
    assert set(i.evidence) == {"op", "copy_op", "num_copies", "bytes", "mib", "dims", "kind", "inside"}
    assert i.advice == (
        "use the in-place form (add_) where the input is not needed afterwards, or a fused variant that does the "
        "step inside one kernel"
    )


def test_a_half_microsecond_copy_is_timed():
    """0.5 µs of 250 µs = 0.2 % of GPU time (just above the 0 µs threshold, and under 1 µs)."""
    c = _copy("aten::add", 2 * MIB_s, [1024, 1024], device_event=DTOD, duration_us=0.5, kind="value")
    (i,) = hidden_copy(_gpu("v", hidden_copies=[c], trace_gpu_time_us=250.0))
    assert i.message == (
        "aten::add copies a full tensor (value): 1× via aten::copy_, 2.0 MiB in all "
        "(Memcpy DtoD (Device -> Device), 0.5 µs, 0.2% of GPU time)"
    )
    assert (i.evidence["device_event"], i.evidence["copy_us"], i.evidence["gpu_share_pct"]) == (DTOD, 0.5, 0.2)


def test_timed_copy_without_a_gpu_total_shows_microseconds_only():
    c = _copy("aten::add", 2 * MIB_s, [1024, 1024], device_event=DTOD, duration_us=10.0, kind="value")
    (i,) = hidden_copy(_gpu("v", hidden_copies=[c]))
    assert i.message == (
        "aten::add copies a full tensor (value): 1× via aten::copy_, 2.0 MiB in all (Memcpy DtoD (Device -> Device), "
        "10.0 µs)"
    )
    assert (i.evidence["device_event"], i.evidence["copy_us"], i.evidence["gpu_share_pct"]) == (DTOD, 10.0, None)


def test_copies_grouped_by_op_place_and_kind_with_summed_bytes_and_time():
    """Two K/V repeats of 4·8·1024·128 bf16 = 8388608 bytes each: 16777216 = 16.0 MiB; 12.0 + 12.5 = 24.5 µs of
    490 µs = 5.0 %.  The events are sorted: "Memcpy…" before "void …", and the kernel name is cut to 59
    characters after "void " is dropped.  A third copy (aten::add) is a group of its own."""
    long_event = "void at::native::elementwise_kernel_" + "x" * 40  # 31 characters after "void ", then 40
    kv = [4, 8, 1024, 128]
    copies = [
        _copy("aten::repeat_interleave", 8388608, kv, device_event=long_event, duration_us=12.0),
        _copy("aten::add", 1024, [512], kind="value"),
        _copy("aten::repeat_interleave", 8388608, kv, device_event=DTOD, duration_us=12.5),
    ]
    r = _gpu("gqa_repeat", hidden_copies=copies, trace_gpu_time_us=490.0)
    assert hidden_copy(r) == [
        Insight(
            id="hidden_copy",
            variant="gqa_repeat",
            severity="warning",
            message=(
                "aten::repeat_interleave copies a full tensor: 2× via aten::copy_, 16.0 MiB in all "
                "(Memcpy DtoD (Device -> Device), 24.5 µs, 5.0% of GPU time)"
            ),
            advice=REPEAT,
            evidence={
                "op": "aten::repeat_interleave",
                "copy_op": "aten::copy_",
                "num_copies": 2,
                "bytes": 16777216,
                "mib": 16.0,
                "dims": [kv, kv],
                "kind": None,
                "inside": None,
                "device_event": DTOD,
                "copy_us": 24.5,
                "gpu_share_pct": 5.0,
            },
            kernels=(DTOD, long_event),
            ops=("aten::repeat_interleave", "aten::copy_"),
        ),
        Insight(
            id="hidden_copy",
            variant="gqa_repeat",
            severity="info",
            message="aten::add copies a full tensor (value): 1× via aten::copy_, 1.0 KiB in all",
            advice=(
                "use the in-place form (add_) where the input is not needed afterwards, or a fused variant that does "
                "the step inside one kernel"
            ),
            evidence={
                "op": "aten::add",
                "copy_op": "aten::copy_",
                "num_copies": 1,
                "bytes": 1024,
                "mib": 0.0,
                "kib": 1.0,
                "dims": [[512]],
                "kind": "value",
                "inside": None,
            },
            kernels=(),
            ops=("aten::add", "aten::copy_"),
        ),
    ]


def test_a_long_first_event_is_shortened_in_the_message():
    """The only event, 36 + 40 = 76 characters with "void ", 71 without: cut to 59 and "…"."""
    long_event = "void at::native::elementwise_kernel_" + "x" * 40
    c = _copy("aten::add", MIB_s, [512, 1024], device_event=long_event, duration_us=3.0, kind="value")
    (i,) = hidden_copy(_gpu("v", hidden_copies=[c], trace_gpu_time_us=300.0))
    assert i.message == (
        "aten::add copies a full tensor (value): 1× via aten::copy_, 1.0 MiB in all "
        "(at::native::elementwise_kernel_" + "x" * 28 + "…, 3.0 µs, 1.0% of GPU time)"
    )


def test_copy_inside_a_library_op_names_the_place_and_takes_its_advice():
    c = _copy("aten::clone", 4 * MIB_s, [1024, 2048], kind="value", inside=ACC)
    assert hidden_copy(_gpu("v", hidden_copies=[c])) == [
        Insight(
            id="hidden_copy",
            variant="v",
            severity="warning",
            message=(
                "aten::clone copies a full tensor (value): 1× via aten::copy_, 4.0 MiB in all, inside "
                "torch::autograd::AccumulateGrad"
            ),
            advice=(
                "this is internal to autograd's torch::autograd::AccumulateGrad, not a call in this code; "
                "no backend or layout that avoids it has been verified on the GPU"
            ),
            evidence={
                "op": "aten::clone",
                "copy_op": "aten::copy_",
                "num_copies": 1,
                "bytes": 4194304,
                "mib": 4.0,
                "dims": [[1024, 2048]],
                "kind": "value",
                "inside": ACC,
            },
            kernels=(),
            ops=("aten::clone", "aten::copy_"),
        )
    ]


def test_copy_whose_place_is_its_own_op_does_not_repeat_it():
    c = _copy(MATH, 4 * MIB_s, [1024, 2048], kind="value", inside=MATH)
    (i,) = hidden_copy(_gpu("v", hidden_copies=[c]))
    assert i.message == (
        "aten::_scaled_dot_product_attention_math copies a full tensor (value): 1× via aten::copy_, 4.0 MiB in all"
    )
    assert i.advice == (
        "this is internal to SDPA's math backend (aten::_scaled_dot_product_attention_math), not a call in this "
        "code; a fused backend (flash, cuDNN, efficient) runs without it (one kernel, no copy, seen on an H200: "
        "docs/fingerprint.md, 'Copies seen avoided')"
    )


def test_no_copies_no_insight():
    assert hidden_copy(_gpu("v")) == []
    assert hidden_copy(_gpu("v", hidden_copies=None)) == []


# ---- input dtypes, cuda-core advice ----------------------------------------------------------


def test_input_dtypes_recorded_per_kernel_win_over_the_case():
    ks = [_k(GEMV_A, 1.0, dtype="fp16"), _k(GEMV_B, 1.0, dtype="bf16"), _k(SIMT, 1.0, dtype="bf16")]
    assert _input_dtypes(ks, {"case": {"dtype": "fp32"}}) == ["bf16", "fp16"]


def test_input_dtypes_fall_back_to_the_case_dtype_only_when_none_is_recorded():
    ks = [_k(GEMM32_A, 1.0)]
    assert _input_dtypes(ks, {"case": {"dtype": "fp32"}}) == ["fp32"]
    assert _input_dtypes(ks, {"case": {"dtype": None}}) == []
    assert _input_dtypes(ks, {"case": None}) == []
    assert _input_dtypes(ks, {}) == []
    assert _input_dtypes([], {"case": {"dtype": "fp32"}}) == []  # no kernels: nothing to say


def test_input_dtypes_do_not_take_the_case_dtype_when_the_call_upcasts():
    """With upcasts recorded, the case's 16-bit dtype is what was upcast, not what the CUDA-core kernels read:
    an older document (no input_dtype per kernel) must not claim bf16 inputs for sdpa_math's fp32 gemms."""
    ks = [_k(GEMM32_A, 1.0)]
    ups = [{"op": MATH, "src_dtype": "c10::BFloat16", "dst_dtype": "float", "bytes": 4}]
    assert _input_dtypes(ks, {"case": {"dtype": "bf16"}, "upcasts": ups}) == []
    assert _input_dtypes(ks, {"case": {"dtype": "bf16"}, "upcasts": []}) == ["bf16"]


def test_cuda_core_advice_for_each_recorded_dtype():
    assert _cuda_core_advice(["fp32"]) == FP32_ADVICE
    assert _cuda_core_advice(["fp32"], (GEMV_A,)) == FP32_ADVICE
    assert _cuda_core_advice([]) == UNKNOWN_ADVICE
    assert _cuda_core_advice(["bf16"], (GEMV_A, GEMV_B)) == GEMV_BF16_ADVICE
    assert _cuda_core_advice(["bf16"], ("void GEMV2T_KERNEL",)) == GEMV_BF16_ADVICE  # read case-blind


def test_cuda_core_advice_blames_gemv_only_when_every_kernel_is_one():
    assert _cuda_core_advice(["bf16", "fp16"], (GEMV_A, SIMT)) == _library_advice("bf16/fp16")
    assert _cuda_core_advice(["bf16"], ()) == _library_advice("bf16")  # no names: nothing says gemv
    assert _cuda_core_advice(["fp16"], (SIMT,)) == _library_advice("fp16")


def test_cuda_core_advice_with_fp32_among_the_dtypes_never_says_tf32_cannot_help():
    assert _cuda_core_advice(["fp16", "fp32"], (GEMV_A, GEMM32_A)) == UNKNOWN_ADVICE


# ---- no_tensor_cores -------------------------------------------------------------------------


def test_fp32_gemm_on_cuda_cores_with_its_share_and_conversion_kernels():
    """250 µs of 1000 µs = 25.0 %; the nvjet gemm ran on tensor cores and the memcpy is no compute kernel, so
    one matrix kernel counts and the one copy kernel is the conversion."""
    ks = [
        _k(GEMM32_A, 250.0, dtype="fp32"),
        _k(NVJET, 300.0, tc=True, dtype="bf16"),
        _k(CAST, 50.0, category="copy"),
        _k(SOFTMAX, 40.0, category="softmax"),
        _k(DTOD, 20.0, category="memcpy"),
    ]
    r = _gpu("fp32_path", kernels=ks, trace_gpu_time_us=1000.0)
    assert no_tensor_cores(r) == [
        Insight(
            id="no_tensor_cores",
            variant="fp32_path",
            severity="warning",
            message="1 matrix kernel(s) run in fp32 on CUDA cores, not tensor cores: 250.0 µs, 25.0% of GPU time",
            advice=FP32_ADVICE,
            evidence={
                "num_fp32_matrix_kernels": 1,
                "fp32_matrix_us": 250.0,
                "fp32_matrix_share_pct": 25.0,
                "input_dtypes": ["fp32"],
                "num_conversion_kernels": 1,
            },
            kernels=(GEMM32_A, CAST),
            ops=(),
        )
    ]


def test_two_bf16_gemvs_without_a_gpu_total():
    """4.0 + 6.5 = 10.5 µs; no trace total, so no share."""
    r = _gpu("decode", kernels=[_k(GEMV_A, 4.0, dtype="bf16"), _k(GEMV_B, 6.5, dtype="bf16")])
    assert no_tensor_cores(r) == [
        Insight(
            id="no_tensor_cores",
            variant="decode",
            severity="warning",
            message="2 matrix kernel(s) run with bf16 inputs on CUDA cores, not tensor cores: 10.5 µs",
            advice=GEMV_BF16_ADVICE,
            evidence={
                "num_fp32_matrix_kernels": 2,
                "fp32_matrix_us": 10.5,
                "fp32_matrix_share_pct": None,
                "input_dtypes": ["bf16"],
                "num_conversion_kernels": 0,
            },
            kernels=(GEMV_A, GEMV_B),
            ops=(),
        )
    ]


def test_two_sixteen_bit_dtypes_and_a_non_gemv_kernel():
    """3.0 + 5.0 = 8.0 µs of 100 µs = 8.0 %."""
    r = _gpu("v", kernels=[_k(GEMV_A, 3.0, dtype="bf16"), _k(SIMT, 5.0, dtype="fp16")], trace_gpu_time_us=100.0)
    (i,) = no_tensor_cores(r)
    assert i.message == (
        "2 matrix kernel(s) run with bf16/fp16 inputs on CUDA cores, not tensor cores: 8.0 µs, 8.0% of GPU time"
    )
    assert i.advice == _library_advice("bf16/fp16")
    assert i.evidence["input_dtypes"] == ["bf16", "fp16"]


def test_unrecorded_dtype_says_nothing_of_the_inputs():
    """4.0 µs of 8.0 µs = 50.0 %; no input_dtype and no case."""
    r = _gpu("v", kernels=[_k(GEMM32_B, 4.0)], trace_gpu_time_us=8.0)
    assert no_tensor_cores(r) == [
        Insight(
            id="no_tensor_cores",
            variant="v",
            severity="warning",
            message="1 matrix kernel(s) run on CUDA cores, not tensor cores: 4.0 µs, 50.0% of GPU time",
            advice=UNKNOWN_ADVICE,
            evidence={
                "num_fp32_matrix_kernels": 1,
                "fp32_matrix_us": 4.0,
                "fp32_matrix_share_pct": 50.0,
                "input_dtypes": [],
                "num_conversion_kernels": 0,
            },
            kernels=(GEMM32_B,),
        )
    ]


def test_case_dtype_stands_in_for_an_unrecorded_kernel_dtype():
    r = _gpu("v", kernels=[_k(GEMM32_B, 4.0)], trace_gpu_time_us=8.0, case={"dtype": "fp32"})
    (i,) = no_tensor_cores(r)
    assert (i.message, i.advice, i.evidence["input_dtypes"]) == (
        "1 matrix kernel(s) run in fp32 on CUDA cores, not tensor cores: 4.0 µs, 50.0% of GPU time",
        FP32_ADVICE,
        ["fp32"],
    )


def test_mixed_fp16_and_fp32_inputs():
    r = _gpu("v", kernels=[_k(GEMV_A, 1.0, dtype="fp16"), _k(GEMM32_A, 3.0, dtype="fp32")], trace_gpu_time_us=8.0)
    (i,) = no_tensor_cores(r)
    assert i.message == (
        "2 matrix kernel(s) run with fp16/fp32 inputs on CUDA cores, not tensor cores: 4.0 µs, 50.0% of GPU time"
    )
    assert i.advice == UNKNOWN_ADVICE


def test_no_tensor_cores_is_silent_where_an_upcast_explains_it_on_a_cpu_or_with_nothing_on_cuda_cores():
    ks = [_k(GEMM32_A, 10.0, dtype="fp32")]
    ups = [{"op": MATH, "src_dtype": "c10::BFloat16", "dst_dtype": "float", "dims": [2, 2], "bytes": 16}]
    assert no_tensor_cores(_gpu("v", kernels=ks, upcasts=ups, trace_gpu_time_us=20.0)) == []
    assert no_tensor_cores(_cpu("v", kernels=ks)) == []
    assert no_tensor_cores(_gpu("v", kernels=[_k(NVJET, 10.0, tc=True)])) == []
    assert no_tensor_cores(_gpu("v", kernels=[_k(GEMM32_A, 10.0, tc=None)])) == []


# ---- fp32_upcast -----------------------------------------------------------------------------


def _up(op: str, src: str, nbytes: int, inside: str | None = None) -> dict[str, Any]:
    u = {"op": op, "src_dtype": src, "dst_dtype": "float", "dims": [4, 16, 2048, 64], "bytes": nbytes}
    return {**u, "inside": inside}


def test_math_backend_upcast_on_the_gpu_with_its_fp32_gemms():
    """Two upcasts of 4·16·2048·64 fp32 = 33554432 bytes: 67108864 = 64.0 MiB; gemms 1000 + 800 = 1800 µs of
    4000 µs = 45.0 %; one bf16 cast kernel; softmax and the tensor-core-less memcpy are not counted."""
    ks = [
        _k(GEMM32_A, 1000.0, dtype="fp32"),
        _k(SOFTMAX, 300.0, category="softmax"),
        _k(GEMM32_B, 800.0, dtype="fp32"),
        _k(CAST, 100.0, category="copy"),
        _k(DTOD, 20.0, category="memcpy"),
    ]
    ups = [_up(MATH, "c10::BFloat16", 33554432, MATH), _up(MATH, "c10::BFloat16", 33554432, MATH)]
    r = _gpu("sdpa_math", kernels=ks, upcasts=ups, trace_gpu_time_us=4000.0, sdpa_backend="math")
    assert fp32_upcast(r) == [
        Insight(
            id="fp32_upcast",
            variant="sdpa_math",
            severity="warning",
            message=(
                "2 bf16→fp32 upcast(s) inside aten::_scaled_dot_product_attention_math (64.0 MiB written in fp32); "
                "2 matrix kernel(s) run in fp32 on CUDA cores, not tensor cores: 1800.0 µs, 45.0% of GPU time"
            ),
            advice=(
                "the math backend upcasts to fp32 by design (it is the reference implementation): use a fused "
                "backend (flash, cuDNN, efficient) that stays in 16-bit on tensor cores"
            ),
            evidence={
                "num_upcasts": 2,
                "src_dtype": "bf16",
                "dst_dtype": "fp32",
                "ops": [MATH],
                "fp32_bytes": 67108864,
                "fp32_mib": 64.0,
                "num_fp32_matrix_kernels": 2,
                "fp32_matrix_us": 1800.0,
                "fp32_matrix_share_pct": 45.0,
                "input_dtypes": ["fp32"],
                "num_conversion_kernels": 1,
                "inside": [MATH],
            },
            kernels=(GEMM32_A, GEMM32_B, CAST),
            ops=(MATH,),
        )
    ]


def test_older_document_math_upcast_does_not_claim_bf16_inputs_for_the_fp32_gemms():
    """tests/data/h200/run.json's sdpa_math row records no input_dtype per kernel and a bf16 case: the gemms
    read the upcast fp32 tensors, so the message names no input dtype.  1000 + 800 = 1800 µs of 4000 = 45.0 %."""
    ks = [_k(GEMM32_A, 1000.0), _k(GEMM32_B, 800.0), _k(CAST, 100.0, category="copy")]
    ups = [_up(MATH, "c10::BFloat16", 33554432), _up(MATH, "c10::BFloat16", 33554432)]
    r = _gpu("sdpa_math", kernels=ks, upcasts=ups, trace_gpu_time_us=4000.0, case={"dtype": "bf16"})
    (i,) = fp32_upcast(r)
    assert i.message == (
        "2 bf16→fp32 upcast(s) inside aten::_scaled_dot_product_attention_math (64.0 MiB written in fp32); "
        "2 matrix kernel(s) run on CUDA cores, not tensor cores: 1800.0 µs, 45.0% of GPU time"
    )
    assert i.evidence["input_dtypes"] == []
    assert i.evidence["inside"] == ["(this code)"]


def test_math_backend_upcast_on_a_cpu_names_the_cpu_fused_backend_and_the_source_dtype():
    """One upcast of 8388608 bytes = 8.0 MiB from fp16; a CPU has no CUDA cores to speak of."""
    r = _cpu("sdpa_math", upcasts=[_up(MATH, "c10::Half", 8388608)], kernels=[_k("aten::bmm", 50.0, tc=None)])
    assert fp32_upcast(r) == [
        Insight(
            id="fp32_upcast",
            variant="sdpa_math",
            severity="warning",
            message="1 fp16→fp32 upcast(s) inside aten::_scaled_dot_product_attention_math (8.0 MiB written in fp32)",
            advice=(
                "the math backend upcasts to fp32 by design (it is the reference implementation): use a fused "
                "backend (flash) that stays in fp16"
            ),
            evidence={
                "num_upcasts": 1,
                "src_dtype": "fp16",
                "dst_dtype": "fp32",
                "ops": [MATH],
                "fp32_bytes": 8388608,
                "fp32_mib": 8.0,
                "inside": ["(this code)"],
            },
            kernels=(),
            ops=(MATH,),
        )
    ]


def test_cpu_upcast_never_speaks_of_cuda_cores_even_for_a_kernel_marked_without_tensor_cores():
    r = _cpu("v", upcasts=[_up(MATH, "c10::BFloat16", MIB_s)], kernels=[_k("aten::bmm", 50.0, tc=False, dtype="fp32")])
    (i,) = fp32_upcast(r)
    assert i.message == (
        "1 bf16→fp32 upcast(s) inside aten::_scaled_dot_product_attention_math (1.0 MiB written in fp32)"
    )
    assert i.kernels == ()
    assert "num_fp32_matrix_kernels" not in i.evidence


def test_user_code_upcasts_in_two_ops_keep_the_computation_in_16_bit():
    """2 MiB + 1 MiB = 3145728 bytes = 3.0 MiB; the ops sorted; tensor-core work only, so no CUDA-core part."""
    ups = [_up("aten::softmax", "c10::Half", 2 * MIB_s), _up("aten::mul", "c10::Half", MIB_s)]
    r = _gpu("user_upcast", upcasts=ups, kernels=[_k(NVJET, 30.0, tc=True)], trace_gpu_time_us=60.0)
    assert fp32_upcast(r) == [
        Insight(
            id="fp32_upcast",
            variant="user_upcast",
            severity="warning",
            message="2 fp16→fp32 upcast(s) inside aten::mul, aten::softmax (3.0 MiB written in fp32)",
            advice="keep the computation in fp16: a fused kernel or a 16-bit op avoids the upcast and the casts back",
            evidence={
                "num_upcasts": 2,
                "src_dtype": "fp16",
                "dst_dtype": "fp32",
                "ops": ["aten::mul", "aten::softmax"],
                "fp32_bytes": 3145728,
                "fp32_mib": 3.0,
                "inside": ["(this code)"],
            },
            kernels=(),
            ops=("aten::mul", "aten::softmax"),
        )
    ]


def test_a_source_dtype_without_a_short_name_is_shown_as_recorded():
    (i,) = fp32_upcast(_cpu("v", upcasts=[_up("aten::mul", "c10::Float8_e4m3fn", MIB_s)]))
    assert i.message == "1 c10::Float8_e4m3fn→fp32 upcast(s) inside aten::mul (1.0 MiB written in fp32)"
    assert i.evidence["src_dtype"] == "c10::Float8_e4m3fn"
    assert i.advice == (
        "keep the computation in c10::Float8_e4m3fn: a fused kernel or a 16-bit op avoids the upcast and the casts back"
    )


def test_flex_eager_upcast_takes_the_flex_advice():
    flex = "FlexAttentionAutogradOp"
    (i,) = fp32_upcast(_gpu("flex", upcasts=[_up(flex, "c10::BFloat16", MIB_s, flex)]))
    assert i.advice == (
        "this is internal to flex_attention's eager (unfused) path, which computes in fp32; "
        "torch.compile(flex_attention) stays in 16-bit (one kernel, no upcast; seen on an H200: docs/fingerprint.md, "
        "'Copies seen avoided')"
    )
    assert i.evidence["inside"] == [flex]


def test_no_upcasts_no_insight():
    assert fp32_upcast(_gpu("v", kernels=[_k(GEMM32_A, 1.0, dtype="fp32")])) == []
    assert fp32_upcast(_gpu("v", upcasts=None)) == []


def test_a_copy_no_op_asked_for_is_not_said_to_happen_inside_unknown() -> None:
    """A Memcpy DtoD the trace links to no op is reported with op 'unknown' (fingerprint._orphan_dtod): the advice
    says the trace records no op, never 'inside unknown'."""
    from attnscope.analysis.rules.insights import _copy_advice

    got = _copy_advice("unknown", {"variant": "x", "device_kind": "gpu"})
    assert got == (
        "the trace records no op that asked for this copy: a fused or compiled variant (e.g. flex_compiled, an SDPA "
        "backend) does the step without materialising the tensor"
    )


def test_a_small_upcast_is_said_in_kib():
    """Three upcasts of 1·2·64·16 fp32 = 8,192 B each: 24,576 B = 24.0 KiB written in fp32 (it read 0.0 MiB)."""
    r = _cpu("sdpa_math", upcasts=[_up(MATH, "c10::BFloat16", 8192)] * 3, kernels=[_k("aten::bmm", 50.0, tc=None)])
    (i,) = fp32_upcast(r)
    assert i.message == (
        "3 bf16→fp32 upcast(s) inside aten::_scaled_dot_product_attention_math (24.0 KiB written in fp32)"
    )
    assert i.evidence["fp32_bytes"] == 24_576


def test_copy_under_a_kib_is_said_in_bytes():
    """The flex eager GQA trace's aten::sort makes three copies of [1, 1, 1, 1] tensors, int, long int and int (read
    from the raw trace's aten::copy_ ops inside aten::sort): 4 + 8 + 4 = 16 bytes, once printed "0.0 KiB in all"."""
    path = H200 / "context" / "flex_eager_gqa.json"
    ev = raw_events(path)
    ops = [e for e in ev if e.get("cat") == "cpu_op"]
    size = {"int": 4, "long int": 8}
    total = 0
    for s in (o for o in ops if o["name"] == "aten::sort"):
        for o in ops:
            if o["name"] == "aten::copy_" and o["tid"] == s["tid"] and s["ts"] <= o["ts"] <= s["ts"] + s["dur"]:
                dims, dtype = o["args"]["Input Dims"][0], o["args"]["Input type"][0]
                n = 1
                for d in dims:
                    n *= d
                total += n * size[dtype]
    assert total == 16
    r = result_to_dict(analyze(path))
    (msg,) = [i.message for i in hidden_copy(r) if i.evidence["op"] == "aten::sort"]
    assert f"3× via aten::copy_, {total} B in all" in msg
    r = _gpu("v", hidden_copies=[_copy("aten::clone", 1023, [1023], kind="value")])
    assert "1023 B in all" in hidden_copy(r)[0].message
    r = _gpu("v", hidden_copies=[_copy("aten::clone", 1024, [1024], kind="value")])
    assert "1.0 KiB in all" in hidden_copy(r)[0].message


def test_a_join_or_an_explicit_copy_is_not_told_to_check_for_a_view():
    """HTA's recommender trace (rank 0): Memcpy DtoD events launched inside aten::cat and inside a bare aten::copy_
    (the innermost op around each launch call on its thread, read from the raw JSON). No view of a concatenation
    exists, and copy_ is the copy itself: "check whether a view would do" fit neither."""
    import gzip

    from tests.rawtrace import DATA

    path = DATA / "hta/trace_filter_sampled_rank-0.json.gz"
    ev = json.loads(gzip.open(path).read())["traceEvents"]
    ops = [e for e in ev if e.get("cat") == "cpu_op"]
    calls = {e["args"]["correlation"]: e for e in ev if e.get("cat") in ("cuda_runtime", "cuda_driver")}
    launchers = []
    for m in (e for e in ev if e.get("cat") == "gpu_memcpy" and "DtoD" in e["name"]):
        c = calls[m["args"]["correlation"]]
        around = [o for o in ops if o["tid"] == c["tid"] and o["ts"] <= c["ts"] <= o["ts"] + o["dur"]]
        launchers.append(min(around, key=lambda o: o["dur"])["name"] if around else None)
    assert launchers.count("aten::cat") >= 1 and launchers.count("aten::copy_") >= 1
    r = result_to_dict(analyze(path))
    advice = {i.evidence["op"]: i.advice for i in hidden_copy(r)}
    assert advice["aten::cat"].startswith("cat always writes a new tensor") and "view" not in advice["aten::cat"]
    assert advice["aten::copy_"].startswith("an explicit copy_ in this code") and "view" not in advice["aten::copy_"]
