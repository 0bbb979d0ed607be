"""A trace with no attention in it (a CNN's, HTA's AlexNet) gets no advice about attention: no "the whole
attention", no "against flash", no "attnscope run on this case".  cuDNN's convolutions and GEMMs sit under their
own aten op (``aten::cudnn_convolution``), so opaque_library, which is about attention moved into cuDNN out of the
profiler's view, says nothing of them; beside cuDNN attention in the same trace it counts the attention alone.
The kernels below are typed in from the AlexNet trace (tests/data/hta/critical_path_alexnet_trace.json.gz: names,
categories and launching ops as its GPU events and their launch calls record them)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from attnscope.analysis.rules.execution import opaque_library
from attnscope.analysis.rules.low_occupancy import low_occupancy

ROOT = Path(__file__).resolve().parents[3]
ALEXNET = ROOT / "tests" / "data" / "hta" / "critical_path_alexnet_trace.json.gz"
CONV = "cudnn_ampere_scudnn_128x64_relu_xregs_large_nn_v1"
SDPA = "cudnn_generated_fort_native_sdpa_sm90_flash_fprop_wgmma_f16_knob_7_64x128x64_4x1x1_cga1x1x1_kernel0_0"


def _conv_kernels() -> list[dict[str, Any]]:
    conv = "aten::cudnn_convolution"
    main = {"name": CONV, "category": "other", "duration_us": 1035.0, "launched_by": conv}
    main.update(theoretical_occupancy_pct=18.75, occupancy_limiter="registers", registers_per_thread=160)
    main["shared_memory_bytes"] = 16384
    layout = "void cudnn::ops::nchwToNhwcKernel<float, float, float, false, true>"
    fft = "void fft2d_r2c_32x32<float, false, 5u, true>"
    return [
        main,
        {"name": layout, "category": "other", "duration_us": 20.0, "launched_by": conv},
        {"name": fft, "category": "reduction", "duration_us": 50.0, "launched_by": conv},
    ]


def _trace_row(kernels: list[dict[str, Any]], calls: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    return {"variant": "alexnet", "device_kind": "gpu", "source": "trace", "kernels": kernels,
            "attention_calls": calls or [], "tflops": None, "pct_of_peak": None}  # fmt: skip


def test_cudnn_convolutions_alone_get_no_opaque_library_insight() -> None:
    assert opaque_library(_trace_row(_conv_kernels())) == []
    # the same in a run's document: no attention kernel among the cuDNN ones, nothing to weigh against flash
    assert opaque_library({**_trace_row(_conv_kernels()), "source": "run"}) == []


def test_beside_cudnn_attention_only_the_attention_kernels_are_counted() -> None:
    fwd = "aten::_cudnn_attention_forward"
    sdpa = {"name": SDPA, "category": "attention", "duration_us": 100.1, "launched_by": fwd}
    (got,) = opaque_library(_trace_row([*_conv_kernels(), sdpa]))
    assert got.evidence["num_cudnn_kernels"] == 1 and got.evidence["cudnn_us"] == 100.1
    assert got.kernels == (SDPA,) and CONV not in got.message and "fft2d" not in got.message
    assert "against flash" in got.advice  # attention is there: the advice that names its backends stays
    # a cuDNN kernel the name rules do not class as attention but an attention op launched: attention work too
    helper = {"name": "void cudnn::fusion::lean_reduction_kernel<0>", "category": "reduction", "duration_us": 3.0,
              "launched_by": "aten::_cudnn_attention_backward"}  # fmt: skip
    (both,) = opaque_library(_trace_row([*_conv_kernels(), sdpa, helper]))
    assert both.evidence["num_cudnn_kernels"] == 2 and both.evidence["cudnn_us"] == 103.1
    # one launched by no recorded op: the attention's library call where the row holds attention, else nothing
    lone = {"name": "void cudnn::convert_dq_to_16bits<1>", "category": "copy", "duration_us": 2.0}
    (three,) = opaque_library(_trace_row([*_conv_kernels(), sdpa, lone]))
    assert three.evidence["num_cudnn_kernels"] == 2 and three.evidence["cudnn_us"] == 102.1
    assert opaque_library(_trace_row([*_conv_kernels(), lone])) == []


def test_a_low_occupancy_convolution_in_a_trace_without_attention_calls_names_none() -> None:
    (got,) = low_occupancy(_trace_row(_conv_kernels()))
    assert got.message == (
        f"{CONV}: 18.8% theoretical occupancy, limited by registers; by design or hurting cannot be told: no FLOP "
        "count covers this kernel (a trace's FLOPs are counted for attention calls, and it holds none)"
    )
    assert got.advice == f"Nsight Compute gives {CONV}'s achieved occupancy and throughput"


def test_the_alexnet_trace_gets_no_attention_advice() -> None:
    from attnscope.api.batch import analyze_traces

    doc, errors = analyze_traces([ALEXNET])
    assert doc is not None and errors == []
    (r,) = doc["results"]
    assert r["attention_calls"] == []  # the premise: no attention op in this trace
    insights = r["insights"]
    assert insights, "the trace still gets its other insights (CUDA-core GEMMs, a low-occupancy kernel)"
    for i in insights:
        text = f"{i['message']} {i['advice']}"
        assert "flash" not in text and "attnscope run" not in text and "whole attention" not in text, i


def _copy_row(op: str, kernels: list[dict[str, Any]], calls: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    r = _trace_row(kernels, calls)
    r["hidden_copies"] = [{"op": op, "copy_op": "aten::copy_", "bytes": 1 << 20, "kind": "value"}]
    return r


def test_copies_in_a_trace_without_attention_name_no_attention_variant() -> None:
    from attnscope.analysis.rules.insights import hidden_copy

    (fill,) = hidden_copy(_copy_row("aten::masked_fill", _conv_kernels()))
    # the advice any op with an in-place twin gets; no SDPA backend, no naive_inplace measured
    assert fill.advice == (
        "use the in-place form (masked_fill_) where the input is not needed afterwards, or a fused variant that "
        "does the step inside one kernel"
    )
    assert "naive_inplace_measured" not in fill.evidence
    (lost,) = hidden_copy(_copy_row("unknown", _conv_kernels()))
    assert lost.advice == (
        "the trace records no op that asked for this copy, so no call in this code can be named for it"
    )
    # a softmax alone (a classifier's head, an MoE router) is no attention: the same advice as the CNN's
    soft = {"name": "void at::native::cunn_SoftMaxForward<8>", "category": "softmax", "duration_us": 40.0}
    (head,) = hidden_copy(_copy_row("aten::masked_fill", [soft]))
    assert head.advice == fill.advice
    (head_lost,) = hidden_copy(_copy_row("unknown", [soft]))
    assert head_lost.advice == lost.advice
    # the eager form of attention (matmul, softmax, matmul on the scores' shape; no attention op): the attention
    # advice stays
    chain = {"ops": ["aten::matmul", "aten::softmax", "aten::matmul"], "scores_dims": [4, 16, 2048, 2048]}
    (eager,) = hidden_copy({**_copy_row("aten::masked_fill", [soft]), "eager_attention": [chain]})
    assert "a fused SDPA backend (flash, cuDNN, efficient) that never materialises the scores" in eager.advice
    (eager_lost,) = hidden_copy({**_copy_row("unknown", [soft]), "eager_attention": [chain]})
    assert "flex_compiled, an SDPA backend" in eager_lost.advice


def test_a_tril_or_a_guard_where_no_attention_runs_is_no_mask_and_no_safe_softmax() -> None:
    """A tril (a cumulative-sum mask, a triangular solve's setup) and isneginf/where passes in a trace with no
    attention op, kernel or matmul → softmax → matmul chain: nothing to say of attention masks or a softmax's guard;
    the same ops beside an eager attention keep their insights."""
    from attnscope.analysis.rules.insights import safe_softmax
    from attnscope.analysis.rules.mask_build import mask_rebuilt

    tril = {"name": "void at::native::triu_tril_kernel<bool, int, false, 4, true>", "category": "elementwise",
            "duration_us": 3.0, "launched_by": "aten::tril"}  # fmt: skip
    guard = [
        {"name": "void at::native::isneginf_kernel", "category": "elementwise", "duration_us": 2.0,
         "launched_by": "aten::isneginf"},
        {"name": "void at::native::where_kernel", "category": "elementwise", "duration_us": 2.0,
         "launched_by": "aten::where"},
    ]  # fmt: skip
    row = {**_trace_row([*_conv_kernels(), tril, *guard]), "mask_rebuilt": True, "mask_ops": ["aten::tril"]}
    assert mask_rebuilt(row) == [] and safe_softmax(row) == []
    chain = {"ops": ["aten::matmul", "aten::softmax", "aten::matmul"], "scores_dims": [1, 8, 64, 64]}
    eager = {**row, "eager_attention": [chain]}
    (built,) = mask_rebuilt(eager)
    assert built.evidence["mask_ops"] == ["aten::tril"] and built.evidence["num_mask_kernels"] == 1
    (guarded,) = safe_softmax(eager)
    assert guarded.evidence["num_guard_kernels"] == 2 and guarded.evidence["ops"] == ["aten::isneginf", "aten::where"]
