"""low_occupancy and opaque_library compared whole (id, severity, message, advice, evidence) on hand-made
rows, in each context their advice depends on: a run with a measured peak, a run without one, a run with
--ncu, a trace.  The numbers are typed in here (the --ncu ones as Nsight Compute printed them on the H200
for flash, cuDNN and efficient at B4 H16 S2048 D64, docs/results/raw/ncu/run_ncu.json), and every
expected sentence is written out."""

from __future__ import annotations

from typing import Any

from attnscope.analysis.rules.execution import cpu_bound, numerics_off, opaque_library, rate_above_peak
from attnscope.analysis.rules.low_occupancy import HIGH_TENSOR_PIPE_PCT, low_occupancy
from attnscope.core.types import Insight, NotChecked

FLASH = "pytorch_flash::flash_fwd_kernel<Flash_fwd_kernel_traits<64, 128, 128, 4>>"
CUDNN = "cudnn_generated_fort_native_sdpa_sm90_flash_fprop_wgmma_f16_knob_7_64x128x64_4x1x1_cga1x1x1_kernel0_0"
DECIDE_RUN = (
    "run without --no-peak: a measured matmul peak decides, or add --ncu for achieved occupancy and tensor-pipe use"
)
NOTHING = "nothing to fix: more resident blocks would mean smaller tiles and more memory traffic"


def _kernel(name: str = FLASH, occ: float = 12.5, lim: str = "registers", us: float = 161.8) -> dict[str, Any]:
    return {
        "name": name,
        "category": "attention",
        "duration_us": us,
        "tensor_cores": True,
        "theoretical_occupancy_pct": occ,
        "occupancy_limiter": lim,
        "registers_per_thread": 255,
        "shared_memory_bytes": 49152,
        "launched_by": "aten::_flash_attention_forward",
    }


def _row(k: dict[str, Any], **kw: Any) -> dict[str, Any]:
    r = {"variant": "sdpa_flash", "device_kind": "gpu", "source": "run", "kernels": [k], "tflops": 212.5}
    r.update(kw)
    return r


def _ncu(**kw: Any) -> dict[str, Any]:
    k = {
        "trace_kernel": 0,
        "achieved_occupancy_pct": 11.93,
        "theoretical_occupancy_pct": 12.5,
        "tensor_pipe_pct": 44.95,
        "sm_throughput_pct": 40.32,
        "dram_read_bytes": 50700032.0,
        "top_stalls": [{"reason": "wait", "warps_per_issue": 1.04}],
    }
    k.update(kw)
    return {"status": "ok", "kernels": [k]}


def _ev(k: dict[str, Any], **kw: Any) -> dict[str, Any]:
    ev = {
        "kernel": k["name"],
        "theoretical_occupancy_pct": k["theoretical_occupancy_pct"],
        "limiter": k["occupancy_limiter"],
        "registers_per_thread": 255,
        "shared_memory_bytes": 49152,
        "kernel_us": k["duration_us"],
        "category": "attention",
    }
    ev.update(kw)
    return ev


def _one(out: Any) -> Insight:
    assert isinstance(out, list) and len(out) == 1
    return out[0]


HEAD = "pytorch_flash::flash_fwd_kernel<Flash_fwd_kernel_…: 12.5% theoretical occupancy, limited by registers"


def test_a_run_with_a_peak_decides_by_the_share_of_peak() -> None:
    k = _kernel()
    got = _one(low_occupancy(_row(k, pct_of_peak=26.7)))
    assert got == Insight(
        id="low_occupancy_by_design",
        variant="sdpa_flash",
        severity="info",
        message=HEAD + ", yet 212.5 TFLOP/s (26.7% of peak): low occupancy by design, big tiles kept on chip in "
        "registers",
        advice=NOTHING,
        evidence=_ev(k, tflops=212.5, pct_of_peak=26.7, high_rate_pct=20.0, by_design=True),
        kernels=(k["name"],),
    )


def test_a_run_without_a_peak_or_ncu_says_which_flag_would_decide() -> None:
    k = _kernel()
    got = _one(low_occupancy(_row(k, pct_of_peak=None)))
    assert got.id == "low_occupancy" and got.severity == "info"
    assert got.message == HEAD + (
        "; by design or hurting cannot be told without the share of peak (212.5 TFLOP/s, but no matmul peak was "
        "measured for this result)"
    )
    assert got.advice == DECIDE_RUN
    assert got.evidence == _ev(k, tflops=212.5, by_design=None)


def test_with_ncu_and_no_peak_the_tensor_pipe_decides_and_nsight_is_not_suggested_again() -> None:
    k = _kernel()
    got = _one(low_occupancy(_row(k, pct_of_peak=None, ncu=_ncu())))
    # 11.93 / 12.5 = 95.4 % of theoretical; the pipe 44.95 % ≥ 30 %: by design
    assert got.message == HEAD + (
        "; Nsight Compute: 11.9% achieved (95% of theoretical), top stall 'wait', yet the tensor pipe 45.0% busy "
        "(Nsight Compute; no matmul peak was measured): low occupancy by design, big tiles kept on chip in registers"
    )
    assert got.id == "low_occupancy_by_design" and got.advice == NOTHING
    assert got.evidence == _ev(
        k,
        achieved_occupancy_pct=11.9,
        achieved_over_theoretical_pct=95,
        top_stall="wait",
        tensor_pipe_pct=45.0,
        high_tensor_pipe_pct=HIGH_TENSOR_PIPE_PCT,
        tflops=212.5,
        by_design=True,
    )
    assert "Nsight" not in got.advice and "--ncu" not in got.advice


def test_with_ncu_a_pipe_below_the_bar_is_a_warning_naming_the_stall() -> None:
    k = _kernel(name="fmha_cutlassF_bf16_aligned_64x64_rf_sm80(Params)", occ=25.0, us=334.7)
    got = _one(low_occupancy(_row(k, pct_of_peak=None, tflops=102.7, ncu=_ncu(tensor_pipe_pct=25.71))))
    assert got.severity == "warning" and got.id == "low_occupancy"
    assert got.message == (
        "fmha_cutlassF_bf16_aligned_64x64_rf_sm80(Params): 25.0% theoretical occupancy, limited by registers; "
        "Nsight Compute: 11.9% achieved (48% of theoretical), top stall 'wait', with only the tensor pipe 25.7% busy "
        "(Nsight Compute; no matmul peak was measured), below 30.0% busy: low occupancy that is not paying off"
    )
    assert got.advice == (
        "too few warps to hide latency at this rate: compare a backend with another tiling (flash, cuDNN); its "
        "warps wait most on 'wait' (Nsight Compute)"
    )
    assert got.evidence["by_design"] is False and got.evidence["tensor_pipe_pct"] == 25.7


def test_the_pipe_bar_is_inclusive() -> None:
    got = _one(low_occupancy(_row(_kernel(), pct_of_peak=None, ncu=_ncu(tensor_pipe_pct=30.0))))
    assert got.id == "low_occupancy_by_design"
    got = _one(low_occupancy(_row(_kernel(), pct_of_peak=None, ncu=_ncu(tensor_pipe_pct=29.99))))
    assert got.id == "low_occupancy" and got.severity == "warning"


def test_ncu_without_the_pipe_counter_still_names_only_the_peak() -> None:
    got = _one(low_occupancy(_row(_kernel(), pct_of_peak=None, ncu=_ncu(tensor_pipe_pct=None))))
    assert got.advice == "run without --no-peak: a measured matmul peak decides"
    assert got.evidence["by_design"] is None


def test_a_warning_without_ncu_points_to_the_flag_and_for_a_trace_to_nsight() -> None:
    run = _one(low_occupancy(_row(_kernel(), pct_of_peak=12.8, tflops=102.7)))
    assert run.severity == "warning"
    assert run.message == HEAD + (
        ", with only 102.7 TFLOP/s (12.8% of peak), below 20.0%: low occupancy that is not paying off"
    )
    assert run.advice.endswith("(flash, cuDNN); check achieved occupancy and stall reasons with --ncu")
    trace = _one(low_occupancy(_row(_kernel(), source="trace", pct_of_peak=12.8, tflops=102.7)))
    assert trace.advice.endswith("(flash, cuDNN); check achieved occupancy and stall reasons in Nsight Compute")


def test_a_high_rate_limited_by_blocks_is_not_called_below_the_bar() -> None:
    k = _kernel(lim="blocks")
    got = _one(low_occupancy(_row(k, pct_of_peak=35.0)))
    assert got.severity == "info" and got.id == "low_occupancy"
    assert got.message == (
        "pytorch_flash::flash_fwd_kernel<Flash_fwd_kernel_…: 12.5% theoretical occupancy, limited by blocks, yet "
        "212.5 TFLOP/s (35.0% of peak): it holds up with few resident warps (limited by blocks, not by tiles on chip)"
    )
    assert got.advice == (
        "nothing urgent; more blocks per SM might still help: check achieved occupancy and stall reasons with --ncu"
    )
    assert "below" not in got.message


def test_a_traces_undecided_verdict_names_what_a_run_and_nsight_would_add() -> None:
    got = _one(low_occupancy(_row(_kernel(), source="trace", pct_of_peak=None)))
    assert got.advice == (
        "attnscope run on this case measures the rate against a matmul peak; Nsight Compute on "
        "pytorch_flash::flash_fwd_kernel<Flash_fwd_kernel_traits… gives its achieved occupancy and tensor-pipe use"
    )


def _cudnn_row(**kw: Any) -> dict[str, Any]:
    k = _kernel(name=CUDNN, occ=18.75, lim="registers+shared_memory", us=100.1)
    k["launched_by"] = "aten::_cudnn_attention_forward"
    memset = {"name": "Memset (Device)", "category": "memset", "duration_us": 0.7}
    return _row(k, variant="sdpa_cudnn", kernels=[memset, k], num_memset=1, **kw)


OPAQUE = (
    "one cuDNN-generated kernel (cudnn_generated_fort_native_sdpa_sm90_flash_fprop_wgmma…, 100.1 µs, launched by "
    "aten::_cudnn_attention_forward) does the whole attention: the work moved into a library, out of the "
    "profiler's view (no aten steps, no transposes to see)"
)
WEIGH = ", and weigh its host cost per call against flash (see cpu_bound / the CPU µs column)"


def test_opaque_library_with_ncu_reports_what_the_counters_read() -> None:
    deep = _ncu(
        trace_kernel=1,
        tensor_pipe_pct=44.97,
        sm_throughput_pct=41.51,
        achieved_occupancy_pct=14.09,
        dram_read_bytes=50368768.0,
        top_stalls=[{"reason": "barrier", "warps_per_issue": 1.01}],
    )
    got = _one(opaque_library(_cudnn_row(ncu=deep)))
    assert got.message == OPAQUE + (
        "; Nsight Compute read it: tensor pipe 45.0% busy, SM throughput 41.5% of peak, 14.1% achieved occupancy, "
        "50.4 MB read from DRAM, top stall 'barrier'"
    )
    assert got.advice == "a clean trace is not less work: the counters above are what it did" + WEIGH
    assert got.evidence["dram_read_bytes"] == 50368768 and got.evidence["top_stall"] == "barrier"
    assert got.evidence["tensor_pipe_pct"] == 45.0 and got.evidence["achieved_occupancy_pct"] == 14.1


def test_opaque_library_without_ncu_points_to_the_flag_or_for_a_trace_to_nsight() -> None:
    run = _one(opaque_library(_cudnn_row()))
    assert run.message == OPAQUE
    assert run.advice == "a clean trace is not less work: look inside with --ncu (Nsight Compute)" + WEIGH
    trace = _one(opaque_library(_cudnn_row(source="trace")))
    # a trace: the kernel named (the advice is printed once, apart from the finding that names it), and no pointer
    # to cpu_bound, which a trace cannot check (its host span includes the profiler's overhead)
    assert trace.advice == (
        "a clean trace is not less work: look inside with Nsight Compute on "
        "cudnn_generated_fort_native_sdpa_sm90_flash_fprop_wgmma…, and time its host cost per call against flash "
        "with attnscope run on this case (a trace cannot)"
    )


def test_an_ncu_entry_for_another_kernel_is_not_this_kernels() -> None:
    got = _one(opaque_library(_cudnn_row(ncu=_ncu(trace_kernel=0))))  # index 0 is the memset
    assert got.message == OPAQUE and "--ncu" in got.advice


# ---- cpu_bound -----------------------------------------------------------------------------------

GRAPH = (
    "capture the step in a CUDA graph (torch.compile mode='reduce-overhead' or torch.cuda.CUDAGraph), or give each "
    "call more work (larger batch, fewer smaller calls)"
)


def _timed(cpu: float | None, gpu: float | None, **kw: Any) -> dict[str, Any]:
    r = {"variant": "flex_compiled", "device_kind": "gpu", "source": "run", "cpu_time_us": cpu, "gpu_time_us": gpu}
    r.update(kw)
    return r


def test_cpu_bound_at_and_above_one_is_a_warning() -> None:
    # 140 / 137.1 = 1.0212 → 102%
    got = _one(cpu_bound(_timed(140.0, 137.1)))
    assert got == Insight(
        id="cpu_bound",
        variant="flex_compiled",
        severity="warning",
        message="host time per call 140.0 µs is 102% of its GPU time 137.1 µs: CPU-bound, the GPU waits for launches",
        advice=GRAPH,
        evidence={"cpu_us": 140.0, "gpu_us": 137.1, "cpu_over_gpu_pct": 102},
    )
    assert _one(cpu_bound(_timed(50.0, 50.0))).id == "cpu_bound"  # exactly 1.0: bound


def test_near_cpu_bound_from_one_half_and_nothing_below() -> None:
    got = _one(cpu_bound(_timed(90.5, 137.1)))  # 90.5 / 137.1 = 0.660 → 66%
    assert got.id == "near_cpu_bound" and got.severity == "info"
    assert got.message == (
        "host time per call 90.5 µs is 66% of its GPU time 137.1 µs: close to CPU-bound; at a smaller shape the GPU "
        "would wait for launches"
    )
    assert got.evidence == {"cpu_us": 90.5, "gpu_us": 137.1, "cpu_over_gpu_pct": 66}
    assert _one(cpu_bound(_timed(50.0, 100.0))).id == "near_cpu_bound"  # exactly 0.5
    assert cpu_bound(_timed(49.99, 100.0)) == []
    assert _one(cpu_bound(_timed(99.99, 100.0))).id == "near_cpu_bound"


def test_a_call_no_graph_can_hold_is_not_told_to_use_one() -> None:
    why = "not capturable in a CUDA graph: Cannot copy between CPU and CUDA tensors during CUDA graph capture"
    got = _one(cpu_bound(_timed(3847.9, 7585.8, variant="flex", gpu_time_graph=None, gpu_time_graph_why=why)))
    assert len(why) == 98  # cut to 89 characters and an ellipsis: 90 in all
    assert got.advice == (
        "give each call more work (larger batch, fewer smaller calls); a CUDA graph cannot hold this call "
        "(not capturable in a CUDA graph: Cannot copy between CPU and CUDA tensors during CUDA grap…)"
    )
    assert got.evidence["graph_capture"] == why
    # a graph timing that exists wins over a stale reason
    ok = _one(cpu_bound(_timed(90.0, 100.0, gpu_time_graph={"median_us": 95.0}, gpu_time_graph_why="x")))
    assert ok.advice == GRAPH and "graph_capture" not in ok.evidence


def test_cpu_bound_is_not_checked_on_a_trace_or_without_both_times() -> None:
    trace = cpu_bound(_timed(100.0, 50.0, source="trace"))
    assert trace == NotChecked(
        "cpu_bound",
        "needs host and GPU time per call measured without the profiler; a traced host span includes profiler overhead",
    )
    missing = NotChecked("cpu_bound", "host or GPU time per call was not measured")
    assert cpu_bound(_timed(None, 50.0)) == missing
    assert cpu_bound(_timed(10.0, None)) == missing
    assert cpu_bound(_timed(10.0, 0.0)) == missing
    assert cpu_bound(_timed(100.0, 50.0, device_kind="cpu")) == []


# ---- rate_above_peak, numerics_off ---------------------------------------------------------------


def test_a_rate_above_the_measured_peak_is_an_error_with_the_peak_worked_back() -> None:
    r = {"variant": "flex_compiled", "tflops": 850.0, "pct_of_peak": 106.25, "flop_formula": "4·H·D·kept"}
    got = _one(rate_above_peak(r))
    # the peak the percentage was taken against: 100 · 850 / 106.25 = 800 TFLOP/s
    assert got == Insight(
        id="rate_above_peak",
        variant="flex_compiled",
        severity="error",
        message="850 TFLOP/s is 106.2% of the matmul rate measured in this run (800 TFLOP/s): an inconsistency, "
        "attention cannot outrun a plain matmul",
        advice="do not read this %peak: either the FLOP count overstates the work for this mask and shape, or the "
        "peak's samples were slowed (re-run on a quiet machine)",
        evidence={"tflops": 850.0, "pct_of_peak": 106.2, "peak_tflops": 800.0, "flop_formula": "4·H·D·kept"},
    )
    assert rate_above_peak({**r, "pct_of_peak": 100.0}) == []  # exactly the peak: possible, not flagged
    assert _one(rate_above_peak({**r, "pct_of_peak": 100.01})).id == "rate_above_peak"
    assert rate_above_peak({**r, "pct_of_peak": None}) == [] and rate_above_peak({**r, "tflops": None}) == []
    # three significant figures: 1234.5 TFLOP/s at 123.45% → 1.23e+03 and a peak of 1e+03
    big = _one(rate_above_peak({**r, "tflops": 1234.5, "pct_of_peak": 123.45}))
    assert big.evidence["tflops"] == 1230.0 and big.evidence["peak_tflops"] == 1000.0
    assert big.message.startswith("1230 TFLOP/s is 123.5% of the matmul rate measured in this run (1000 TFLOP/s)")


def test_numerics_off_over_tolerance_nonfinite_and_unmeasured() -> None:
    r = {"variant": "wrong_fast", "max_rel_error": 0.0512, "error_tolerance": 0.02, "case": {"dtype": "bf16"}}
    got = _one(numerics_off(r))
    assert got == Insight(
        id="numerics_off",
        variant="wrong_fast",
        severity="error",
        message="max relative error 5.12e-02 against the fp64 reference is 2.6× the bf16 tolerance 0.02",
        advice="treat its timings as meaningless until the numerics are fixed",
        evidence={"max_rel_error": 0.0512, "tolerance": 0.02, "dtype": "bf16", "over_tolerance": 2.6},
    )
    assert numerics_off({**r, "max_rel_error": 0.02}) == []  # at the tolerance: fine
    nan = _one(numerics_off({**r, "nonfinite": True}))
    assert nan.message == "the output holds NaN or Inf: a wrong result, whatever its speed"
    assert nan.advice == (
        "check masking of fully masked rows and the dtype's range; do not use this variant for this case"
    )
    assert nan.severity == "error" and nan.evidence == {"nonfinite": True}
    assert numerics_off({**r, "error_tolerance": None}) == NotChecked(
        "numerics_off", "the error against the fp64 reference was not measured"
    )
    assert numerics_off({**r, "max_rel_error": None}) == NotChecked(
        "numerics_off", "the error against the fp64 reference was not measured"
    )
    assert numerics_off({**r, "source": "trace"}) == NotChecked(
        "numerics_off", "needs the output and an fp64 reference, which a trace does not hold"
    )


# ---- opaque_library with several cuDNN kernels ----------------------------------------------------


def test_opaque_library_counts_generated_calls_and_names_the_helpers() -> None:
    gen = "cudnn_generated_fort_native_sdpa_sm90_flash_bprop_wgmma_f16_knob_26_64x64x128_4x1x1_cga1x1x1_kernel0_0"
    ks = [
        {"name": CUDNN, "category": "attention", "duration_us": 100.0, "launched_by": "aten::_cudnn_attention_forward"},
        {"name": gen, "category": "attention", "duration_us": 250.0, "launched_by": "aten::_cudnn_attention_backward"},
        {"name": "void cudnn::compute_dot_do_o_specialized<1, 128>", "category": "attention", "duration_us": 5.0},
        {"name": "Memset (Device)", "category": "memset", "duration_us": 0.7},
        {"name": "void at::native::vectorized_elementwise_kernel<4>", "category": "elementwise", "duration_us": 2.0},
    ]
    got = _one(opaque_library({"variant": "sdpa_cudnn", "kernels": ks, "num_memset": 1, "source": "run"}))
    # helper names cut to 40 characters: "cudnn::compute_dot_do_o_specialized<1, 128>" is 43 ("void " dropped)
    assert got.message == (
        "3 cuDNN kernels in 2 calls (355.0 µs: cudnn_generated_fort_native_sdpa_sm90_flash_bprop_wgmma… with "
        "cudnn::compute_dot_do_o_specialized<1, …; 1 launched by aten::_cudnn_attention_forward, 100.0 µs; "
        "1 launched by aten::_cudnn_attention_backward, 250.0 µs; 1 with no recorded op, 5.0 µs) do the whole "
        "attention: the work moved into a library, out of the profiler's view (no aten steps, no transposes to see)"
    )
    assert got.evidence == {
        "kernel": gen,
        "kernel_us": 250.0,
        "launched_by": "aten::_cudnn_attention_backward",
        "num_cudnn_kernels": 3,
        "num_generated_kernels": 2,
        "cudnn_us": 355.0,
        "helper_kernels": ["void cudnn::compute_dot_do_o_specialized<1, 128>"],
        "num_memset": 1,
        "by_op": [
            {"op": "aten::_cudnn_attention_forward", "num_kernels": 1, "us": 100.0},
            {"op": "aten::_cudnn_attention_backward", "num_kernels": 1, "us": 250.0},
            {"op": None, "num_kernels": 1, "us": 5.0},
        ],
    }
    assert got.kernels == (CUDNN, gen, "void cudnn::compute_dot_do_o_specialized<1, 128>")
    assert got.ops == ("aten::_cudnn_attention_forward", "aten::_cudnn_attention_backward")
    # no aten op launched it: said so, and no op is named
    lone = [{"name": CUDNN, "category": "attention", "duration_us": 99.0}]
    one = _one(opaque_library({"variant": "cudnn_frontend", "kernels": lone, "source": "run"}))
    assert "launched outside any recorded op (a library call the profiler shows no aten op for)" in one.message
    assert one.ops == ()
    # a cuDNN kernel that is not a generated SDPA one still counts, as its own main kernel
    only_helper = [
        {"name": "void cudnn::fusion::lean_reduction_kernel<0>", "category": "attention", "duration_us": 3.0}
    ]
    h = _one(opaque_library({"variant": "x", "kernels": only_helper, "source": "run"}))
    assert h.evidence["num_generated_kernels"] == 1 and h.evidence["helper_kernels"] == []
    assert opaque_library({"variant": "sdpa_flash", "kernels": [_kernel()], "source": "run"}) == []


# ---- the rest of low_occupancy's branches ---------------------------------------------------------


def test_without_flops_the_rate_is_what_is_missing() -> None:
    got = _one(low_occupancy(_row(_kernel(), tflops=None, pct_of_peak=None)))
    assert got.message == HEAD + "; by design or hurting cannot be told without the rate (needs the case's FLOPs)"
    assert got.advice == "the rate needs the case's FLOPs, or add --ncu for achieved occupancy and tensor-pipe use"
    assert "tflops" not in got.evidence and got.evidence["by_design"] is None


def test_a_traces_gemm_kernel_is_not_judged_by_the_attention_rate() -> None:
    k = {**_kernel(name="nvjet_sm90_tst_256x128_64x4_1x2_h_bz_coopA_NNT", us=900.0), "category": "gemm"}
    call = {"op": "aten::scaled_dot_product_attention", "family": "flash", "direction": "forward"}
    got = _one(low_occupancy(_row(k, source="trace", pct_of_peak=30.0, attention_calls=[call])))
    assert got.message == (
        "nvjet_sm90_tst_256x128_64x4_1x2_h_bz_coopA_NNT: 12.5% theoretical occupancy, limited by registers; by design "
        "or hurting cannot be told: the trace's FLOP count covers its attention calls, not this kernel"
    )
    # the kernel named: the advice is printed once, apart from the finding that names it
    assert got.advice == (
        "Nsight Compute gives nvjet_sm90_tst_256x128_64x4_1x2_h_bz_coopA_NNT's achieved occupancy and throughput"
    )
    assert got.evidence["by_design"] is None and got.evidence["category"] == "gemm"


def test_shared_memory_alone_is_a_limit_on_chip_and_the_bar_is_inclusive() -> None:
    k = _kernel(lim="shared_memory")
    got = _one(low_occupancy(_row(k, pct_of_peak=20.0)))  # exactly the bar: paying off
    assert got.id == "low_occupancy_by_design"
    assert got.message.endswith("low occupancy by design, big tiles kept on chip in shared_memory")
    assert _one(low_occupancy(_row(k, pct_of_peak=19.99))).id == "low_occupancy"


def test_no_limiter_recorded_is_a_question_mark_and_cpu_rows_are_never_judged() -> None:
    k = _kernel()
    del k["occupancy_limiter"]
    got = _one(low_occupancy(_row(k, pct_of_peak=None)))
    assert got.message.startswith(
        "pytorch_flash::flash_fwd_kernel<Flash_fwd_kernel_…: 12.5% theoretical occupancy, limited by ?;"
    )
    assert low_occupancy(_row(_kernel(), device_kind="cpu", pct_of_peak=5.0)) == []


def test_a_zero_theoretical_occupancy_has_no_ratio() -> None:
    k = _kernel(occ=0.0)
    got = _one(low_occupancy(_row(k, pct_of_peak=None, ncu=_ncu())))
    assert got.evidence["achieved_over_theoretical_pct"] is None
    assert "Nsight Compute: 11.9% achieved, top stall 'wait'" in got.message


def test_what_ncu_read_rounds_megabytes_by_the_decimal_rule_and_says_when_it_read_nothing() -> None:
    deep = {"status": "ok", "kernels": [{"trace_kernel": 1, "dram_read_bytes": 50_050_001.0}]}
    got = _one(opaque_library(_cudnn_row(ncu=deep)))
    assert got.message.endswith("; Nsight Compute read it: 50.1 MB read from DRAM")  # 50.050001 MB, not 50.0
    empty = {"status": "ok", "kernels": [{"trace_kernel": 1}]}
    got = _one(opaque_library(_cudnn_row(ncu=empty)))
    assert got.message == OPAQUE + "; Nsight Compute collected no counters for it"
    assert got.advice.startswith("a clean trace is not less work: the counters above are what it did")


def test_ids_and_variants_of_the_error_insights_and_a_sub_microsecond_gpu_time() -> None:
    nan = _one(numerics_off({"variant": "v", "nonfinite": True, "max_rel_error": 1.0, "error_tolerance": 0.02}))
    assert (nan.id, nan.variant) == ("numerics_off", "v")
    tiny = _one(cpu_bound(_timed(0.6, 0.5)))  # a 0.5 µs call is measured, not missing
    assert tiny.id == "cpu_bound" and tiny.evidence["cpu_over_gpu_pct"] == 120


def test_opaque_library_two_generated_calls_without_helpers_and_one_call_with_two() -> None:
    gen2 = CUDNN.replace("knob_7", "knob_9")
    ks = [
        {"name": CUDNN, "category": "attention", "duration_us": 100.0},
        {"name": gen2, "category": "attention", "duration_us": 50.0},
    ]
    got = _one(opaque_library({"variant": "cudnn_frontend", "kernels": ks, "source": "run"}))
    assert (got.id, got.variant) == ("opaque_library", "cudnn_frontend")
    assert got.message.startswith(
        "2 cuDNN kernels in 2 calls (150.0 µs: cudnn_generated_fort_native_sdpa_sm90_flash_fprop_wgmma…, launched "
        "outside any recorded op (a library call the profiler shows no aten op for)) do the whole attention"
    )
    helpers = [
        {"name": CUDNN, "category": "attention", "duration_us": 100.0, "launched_by": "aten::_cudnn_attention_forward"},
        {"name": "void cudnn::fusion::lean_reduction_kernel<0>", "category": "attention", "duration_us": 3.0},
        {"name": "void cudnn::convert_dq_to_16bits<1>", "category": "copy", "duration_us": 2.0},
    ]
    got = _one(opaque_library({"variant": "sdpa_cudnn", "kernels": helpers, "source": "run"}))
    assert got.message.startswith(
        "3 cuDNN kernels (105.0 µs: cudnn_generated_fort_native_sdpa_sm90_flash_fprop_wgmma… with "
        "cudnn::convert_dq_to_16bits<1>, cudnn::fusion::lean_reduction_kernel<0>, launched by "
        "aten::_cudnn_attention_forward) do the whole attention"
    )


def test_numerics_off_names_the_tensors_that_overflow() -> None:
    # naive fp16, soft-cap 10,000, fwd_bwd: autograd multiplies dL/d(capped score) (~8) by c = 10,000 before
    # dividing by it, past fp16's 65,504, so dq and dk are Inf while out and dv are finite
    r = {
        "variant": "naive",
        "nonfinite": True,
        "case": {"dtype": "fp16"},
        "rel_errors": {"out": 5.0e-4, "dq": None, "dk": float("inf"), "dv": 4.8e-4},
    }
    got = _one(numerics_off(r))
    assert got.message == "dq, dk hold NaN or Inf (out, dv finite): a wrong result, whatever its speed"
    assert got.advice == (
        "fp16 tops out at 65,504: a gradient past it is Inf (bf16 has fp32's range); do not use this variant for "
        "this case"
    )
    assert got.evidence == {"nonfinite": True, "nonfinite_tensors": ["dq", "dk"]}
    one = _one(numerics_off({**r, "rel_errors": {"out": None, "dq": None, "dk": None, "dv": None}}))
    assert one.message == "the output holds NaN or Inf: a wrong result, whatever its speed"
    bf16 = _one(numerics_off({**r, "case": {"dtype": "bf16"}, "rel_errors": {"out": 1e-3, "dq": None}}))
    assert bf16.message.startswith("dq holds NaN or Inf (out finite)")
    assert bf16.advice.startswith("check masking of fully masked rows")
