"""Insights about how the work executed: host cost, opaque libraries, numerics, a rate above the peak.  Pure."""

from __future__ import annotations

import math
from typing import Any

from attnscope.analysis.fingerprint.eager_attention import holds_attention
from attnscope.analysis.fingerprint.kernels import attention_op_family
from attnscope.analysis.rules.insights import Out, by_launching_op, on_gpu, r1, short
from attnscope.analysis.rules.low_occupancy import _ncu_kernel
from attnscope.analysis.rules.occupancy import waits_on_device
from attnscope.analysis.rules.row_kernels import compute_kernels, names, read_once
from attnscope.core.types import Insight, NotChecked

# ---- host cost, libraries, numerics ----------------------------------------------------------


def cpu_bound(r: dict[str, Any]) -> Out:
    if not on_gpu(r):
        return []
    if r.get("source") == "trace":
        return NotChecked(
            "cpu_bound",
            "needs host and GPU time per call measured without the profiler; "
            "a traced host span includes profiler overhead",
        )
    cpu, gpu = r.get("cpu_time_us"), r.get("gpu_time_us")
    if cpu is None or gpu is None or gpu <= 0:
        return NotChecked("cpu_bound", "host or GPU time per call was not measured")
    ratio = cpu / gpu
    if ratio < 0.5:
        return []
    ev = {"cpu_us": r1(cpu), "gpu_us": r1(gpu), "cpu_over_gpu_pct": round(100 * ratio)}
    bound = ratio >= 1.0
    text = (
        f"host time per call {ev['cpu_us']:.1f} µs is {ev['cpu_over_gpu_pct']}% of its GPU time {ev['gpu_us']:.1f} µs"
    )
    if bound and (waits := waits_on_device(r, ev, text)) is not None:
        return [waits]
    msg = (
        f"host time per call {ev['cpu_us']:.1f} µs is {ev['cpu_over_gpu_pct']}% of its GPU time "
        f"{ev['gpu_us']:.1f} µs: "
        + (
            "CPU-bound, the GPU waits for launches"
            if bound
            else "close to CPU-bound; at a smaller shape the GPU would wait for launches"
        )
    )
    more = "give each call more work (larger batch, fewer smaller calls)"
    why_not = r.get("gpu_time_graph_why") if r.get("gpu_time_graph") is None else None
    if why_not:  # the run tried to capture this call in a CUDA graph and could not: never advise one
        ev["graph_capture"] = why_not
        advice = f"{more}; a CUDA graph cannot hold this call ({short(str(why_not), 90)})"
    else:
        advice = (
            "capture the step in a CUDA graph (torch.compile mode='reduce-overhead' or torch.cuda.CUDAGraph), "
            f"or {more}"
        )
    return [
        Insight(
            id="cpu_bound" if bound else "near_cpu_bound",
            variant=r["variant"],
            severity="warning" if bound else "info",
            message=msg,
            advice=advice,
            evidence=ev,
        )
    ]


def opaque_library(r: dict[str, Any]) -> Out:
    # cudnn_generated_* and the rest; each distinct name lowered once (a training step launches 10^4 kernels)
    cudnn = {n for n in read_once(r, names) if "cudnn" in n.lower()}
    if not cudnn:
        return []
    # only cuDNN's attention: its convolutions and GEMMs (a CNN's trace) sit under their own aten op, no attention
    # moved out of view, and there is no attention backend to weigh them against
    every = compute_kernels(r)
    held = holds_attention(r)
    ks = [k for k in every if k["name"] in cudnn and _in_attention(k, held)]
    if not ks:
        return []
    k = max(ks, key=lambda x: x["duration_us"])
    main = [x for x in ks if "cudnn_generated" in x["name"]] or [k]
    helpers = sorted({x["name"] for x in ks} - {x["name"] for x in main})
    ev = {
        "kernel": k["name"],
        "kernel_us": r1(k["duration_us"]),
        "launched_by": k.get("launched_by"),
        "num_cudnn_kernels": len(ks),
        "num_generated_kernels": len(main),
        "cudnn_us": r1(sum(x["duration_us"] for x in ks)),
        "helper_kernels": helpers,
        "num_memset": r.get("num_memset"),
    }
    by = (
        f"launched by {ev['launched_by']}"
        if ev["launched_by"]
        else "launched outside any recorded op (a library call the profiler shows no aten op for)"
    )
    by_op = by_launching_op(ks)
    split = sum(1 for o in by_op if o["op"]) > 1
    if split:  # forward and backward: each op with its own kernels' time, not the sum under one name
        ev["by_op"] = by_op
        by = "; ".join(
            f"{o['num_kernels']} "
            + (f"launched by {o['op']}" if o["op"] else "with no recorded op")
            + f", {o['us']:.1f} µs"
            for o in by_op
        )
    what = (
        f"one cuDNN-generated kernel ({short(k['name'], 56)}, {ev['kernel_us']:.1f} µs, {by}) does"
        if len(ks) == 1
        else f"{len(ks)} cuDNN kernels"
        + (f" in {len(main)} calls" if len(main) > 1 else "")
        + f" ({ev['cudnn_us']:.1f} µs: {short(k['name'], 56)}"
        + (f" with {', '.join(short(h, 40) for h in helpers)}" if helpers else "")
        + ("; " if split else ", ")
        + f"{by}) do"
    )
    msg = (
        f"{what} the whole attention: the work moved into a library, out of the profiler's view (no aten steps, "
        "no transposes to see)"
    )
    ops = tuple(o["op"] for o in by_op if o["op"]) if split else (str(ev["launched_by"]),) if ev["launched_by"] else ()
    hit = _ncu_kernel(r, k)
    if hit is not None:
        msg += "; " + _inside_text(hit, ev)
        look = "a clean trace is not less work: the counters above are what it did"
    elif r.get("source") == "trace":  # the advice is said once under its findings: it names the kernel
        look = f"a clean trace is not less work: look inside with Nsight Compute on {short(k['name'], 56)}"
    else:
        look = "a clean trace is not less work: look inside with --ncu (Nsight Compute)"
    if r.get("source") == "trace":  # cpu_bound is not checked on a trace: its host span includes the profiler's cost
        weigh = ", and time its host cost per call against flash with attnscope run on this case (a trace cannot)"
    else:
        weigh = ", and weigh its host cost per call against flash (see cpu_bound / the CPU µs column)"
    return [
        Insight(
            id="opaque_library",
            variant=r["variant"],
            severity="info",
            message=msg,
            advice=look + weigh,
            evidence=ev,
            kernels=tuple(dict.fromkeys(x["name"] for x in ks)),
            ops=ops,
        )
    ]


def _in_attention(k: dict[str, Any], held: bool) -> bool:
    """Whether a cuDNN kernel is attention work: classed so by its name, launched by an attention op, or (a helper
    of the same library call) launched by no recorded op where the result holds attention (``held``)."""
    if k.get("category") == "attention":
        return True
    op = k.get("launched_by")
    return attention_op_family(str(op)) is not None if op else held


def _inside_text(hit: dict[str, Any], ev: dict[str, Any]) -> str:
    """What Nsight Compute read inside one kernel, in words; each number also goes into ``ev``."""
    parts = []
    for key, fmt in (
        ("tensor_pipe_pct", "tensor pipe {:.1f}% busy"),
        ("sm_throughput_pct", "SM throughput {:.1f}% of peak"),
        ("achieved_occupancy_pct", "{:.1f}% achieved occupancy"),
    ):
        if hit.get(key) is not None:
            ev[key] = r1(hit[key])
            parts.append(fmt.format(ev[key]))
    if hit.get("dram_read_bytes") is not None:
        ev["dram_read_bytes"] = int(hit["dram_read_bytes"])
        parts.append(f"{ev['dram_read_bytes'] / 1e6:,.1f} MB read from DRAM")
    stalls = hit.get("top_stalls") or []
    if stalls:
        ev["top_stall"] = stalls[0]["reason"]
        parts.append(f"top stall '{ev['top_stall']}'")
    return "Nsight Compute read it: " + ", ".join(parts) if parts else "Nsight Compute collected no counters for it"


def _nonfinite(r: dict[str, Any]) -> Insight:
    """Which tensors hold NaN or Inf: an error of ``rel_errors`` stored as null (inf) is one; the finite ones are
    said too, so "the output is right, its gradients overflow" reads as such."""
    errs = r.get("rel_errors") or {}
    bad = [k for k, v in errs.items() if v is None or not math.isfinite(v)]
    good = [k for k in errs if k not in bad]
    ev: dict[str, Any] = {"nonfinite": True}
    if bad and good:
        ev["nonfinite_tensors"] = bad
        what = f"{', '.join(bad)} hold{'s' if len(bad) == 1 else ''} NaN or Inf ({', '.join(good)} finite)"
    else:
        what = "the output holds NaN or Inf"
    dtype = (r.get("case") or {}).get("dtype")
    hint = "check masking of fully masked rows and the dtype's range"
    if good and "out" in good and dtype == "fp16":
        hint = "fp16 tops out at 65,504: a gradient past it is Inf (bf16 has fp32's range)"
    return Insight(
        id="numerics_off",
        variant=r["variant"],
        severity="error",
        message=f"{what}: a wrong result, whatever its speed",
        advice=f"{hint}; do not use this variant for this case",
        evidence=ev,
    )


def numerics_off(r: dict[str, Any]) -> Out:
    if r.get("source") == "trace":
        return NotChecked("numerics_off", "needs the output and an fp64 reference, which a trace does not hold")
    if r.get("nonfinite"):
        return [_nonfinite(r)]
    err, tol = r.get("max_rel_error"), r.get("error_tolerance")
    if err is None or tol is None:
        return NotChecked("numerics_off", "the error against the fp64 reference was not measured")
    if err <= tol:
        return []
    dtype = (r.get("case") or {}).get("dtype")
    ev = {"max_rel_error": float(f"{err:.2e}"), "tolerance": tol, "dtype": dtype, "over_tolerance": r1(err / tol)}
    return [
        Insight(
            id="numerics_off",
            variant=r["variant"],
            severity="error",
            message=f"max relative error {ev['max_rel_error']:.2e} against the fp64 reference is "
            f"{ev['over_tolerance']:.1f}× the {dtype} tolerance {tol:g}",
            advice="treat its timings as meaningless until the numerics are fixed",
            evidence=ev,
        )
    ]


def rate_above_peak(r: dict[str, Any]) -> Out:
    """A rate above the measured matmul peak cannot be true of the same device: flag it, never print it plain."""
    pct, rate = r.get("pct_of_peak"), r.get("tflops")
    if pct is None or rate is None or pct <= 100.0:
        return []
    ev = {
        "tflops": float(f"{rate:.3g}"),
        "pct_of_peak": r1(pct),
        "peak_tflops": float(f"{100.0 * rate / pct:.3g}"),
        "flop_formula": r.get("flop_formula"),
    }
    return [
        Insight(
            id="rate_above_peak",
            variant=r["variant"],
            severity="error",
            message=f"{ev['tflops']:g} TFLOP/s is {ev['pct_of_peak']:.1f}% of the matmul rate measured in this run "
            f"({ev['peak_tflops']:g} TFLOP/s): an inconsistency, attention cannot outrun a plain matmul",
            advice="do not read this %peak: either the FLOP count overstates the work for this mask and shape, "
            "or the peak's samples were slowed (re-run on a quiet machine)",
            evidence=ev,
        )
    ]
