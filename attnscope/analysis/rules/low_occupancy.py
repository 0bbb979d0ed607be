"""The low-occupancy verdict: whether a kernel's low occupancy is paying off (measured matmul peak, Nsight
Compute's tensor-pipe share and achieved occupancy), and only where the roofline says occupancy is the question.
Pure."""

from __future__ import annotations

from typing import Any

from attnscope.analysis.rules.insights import (
    HIGH_RATE_PCT,
    LOW_OCCUPANCY_PCT,
    Out,
    main_kernel,
    on_gpu,
    r1,
    short,
)
from attnscope.analysis.rules.occupancy import not_the_question
from attnscope.analysis.rules.peers import ALONE, Peers
from attnscope.core.types import Insight, Severity

# Share of the tensor pipe's peak (Nsight Compute, sm__pipe_tensor_cycles_active) at or above which a
# low occupancy is paying off, when no matmul peak was measured: the fused H200 kernels that reach
# 211-330 TFLOP/s at 12.5-18.8% occupancy keep the pipe 35-45% busy, efficient at 103 TFLOP/s 26%
# (tests/data/ncu/h200_deep.csv, docs/results/raw/ncu/run_ncu.json).
HIGH_TENSOR_PIPE_PCT = 30.0


def _ran_ncu(r: dict[str, Any]) -> bool:
    return (r.get("ncu") or {}).get("status") == "ok"


def _ncu_kernel(r: dict[str, Any], k: dict[str, Any]) -> dict[str, Any] | None:
    """The --ncu entry of kernel ``k`` of result ``r`` (matched by its index in the result's kernels)."""
    deep, ks = r.get("ncu") or {}, r.get("kernels") or []
    if not deep.get("kernels"):
        return None
    idx = next((i for i, x in enumerate(ks) if x is k), None)
    if idx is None:
        return None
    return next((d for d in deep.get("kernels") or [] if d.get("trace_kernel") == idx), None)


def _how_to_decide(r: dict[str, Any], rate: float | None, kernel: str) -> str:
    """What would decide by design against hurting, for where this result came from (``kernel``: its name, said in
    the advice, which is printed once apart from the findings that name it)."""
    if r.get("source") == "trace":
        return (
            "attnscope run on this case measures the rate against a matmul peak; Nsight Compute on "
            f"{short(kernel, 56)} gives its achieved occupancy and tensor-pipe use"
        )
    first = (
        "the rate needs the case's FLOPs" if rate is None else "run without --no-peak: a measured matmul peak decides"
    )
    return first + ("" if _ran_ncu(r) else ", or add --ncu for achieved occupancy and tensor-pipe use")


def _stall_hint(r: dict[str, Any], ev: dict[str, Any]) -> str:
    if ev.get("top_stall"):
        return f"its warps wait most on '{ev['top_stall']}' (Nsight Compute)"
    if r.get("source") == "trace":
        return "check achieved occupancy and stall reasons in Nsight Compute"
    return "check achieved occupancy and stall reasons with --ncu"


def _occupancy_verdict(
    head: str, ev: dict[str, Any], r: dict[str, Any], hit: dict[str, Any] | None
) -> tuple[str, Severity, str, str]:
    """(id, severity, message, advice): low occupancy by design, hurting, or not decidable."""
    pct, rate, lim = r.get("pct_of_peak"), r.get("tflops"), ev["limiter"]
    on_chip = "registers" in lim or "shared_memory" in lim
    if r.get("source") == "trace" and ev.get("category") != "attention":
        # a trace's FLOPs count its attention calls only: their rate says nothing of a GEMM or other kernel
        ev["by_design"] = None
        why = (
            "the trace's FLOP count covers its attention calls, not this kernel"
            if r.get("attention_calls")
            else "no FLOP count covers this kernel (a trace's FLOPs are counted for attention calls, and it holds none)"
        )
        return (
            "low_occupancy",
            "info",
            head + "; by design or hurting cannot be told: " + why,
            f"Nsight Compute gives {short(str(ev['kernel']), 56)}'s achieved occupancy and throughput",
        )
    if pct is not None and rate is not None:
        ev.update(tflops=r1(rate), pct_of_peak=r1(pct), high_rate_pct=HIGH_RATE_PCT)
        busy = f"{ev['tflops']:.1f} TFLOP/s ({ev['pct_of_peak']:.1f}% of peak)"
        high, threshold = pct >= HIGH_RATE_PCT, f"{ev['high_rate_pct']:.1f}%"
    elif hit is not None and hit.get("tensor_pipe_pct") is not None:
        ev.update(tensor_pipe_pct=r1(hit["tensor_pipe_pct"]), high_tensor_pipe_pct=HIGH_TENSOR_PIPE_PCT)
        if rate is not None:
            ev["tflops"] = r1(rate)
        busy = f"the tensor pipe {ev['tensor_pipe_pct']:.1f}% busy (Nsight Compute; no matmul peak was measured)"
        high, threshold = hit["tensor_pipe_pct"] >= HIGH_TENSOR_PIPE_PCT, f"{HIGH_TENSOR_PIPE_PCT:.1f}% busy"
    else:
        ev["by_design"] = None
        if rate is not None:
            ev["tflops"] = r1(rate)
        need = (
            "the rate (needs the case's FLOPs)"
            if rate is None
            else f"the share of peak ({ev['tflops']:.1f} TFLOP/s, but no matmul peak was measured for this result)"
        )
        return ("low_occupancy", "info", head + f"; by design or hurting cannot be told without {need}",
                _how_to_decide(r, rate, str(ev["kernel"])))  # fmt: skip
    if high and on_chip:
        ev["by_design"] = True
        return (
            "low_occupancy_by_design",
            "info",
            f"{head}, yet {busy}: low occupancy by design, big tiles kept on chip in {lim}",
            "nothing to fix: more resident blocks would mean smaller tiles and more memory traffic",
        )
    ev["by_design"] = False
    if high:  # a high rate, but few blocks or warps per SM are the limit: not tiles kept on chip
        return (
            "low_occupancy",
            "info",
            f"{head}, yet {busy}: it holds up with few resident warps (limited by {lim}, not by tiles on chip)",
            f"nothing urgent; more blocks per SM might still help: {_stall_hint(r, ev)}",
        )
    return (
        "low_occupancy",
        "warning",
        f"{head}, with only {busy}, below {threshold}: low occupancy that is not paying off",
        f"too few warps to hide latency at this rate: compare a backend with another tiling (flash, cuDNN); "
        f"{_stall_hint(r, ev)}",
    )


def low_occupancy(r: dict[str, Any], peers: Peers = ALONE) -> Out:
    k = main_kernel(r) if on_gpu(r) else None
    if k is None or k.get("theoretical_occupancy_pct") is None or k.get("tensor_cores") is False:
        return []  # fp32 CUDA-core kernels: fp32_upcast / no_tensor_cores tell the real story
    occ, lim = k["theoretical_occupancy_pct"], k.get("occupancy_limiter") or "?"
    if occ > LOW_OCCUPANCY_PCT:
        return []
    ev: dict[str, Any] = {
        "kernel": k["name"],
        "theoretical_occupancy_pct": r1(occ),
        "limiter": lim,
        "registers_per_thread": k.get("registers_per_thread"),
        "shared_memory_bytes": k.get("shared_memory_bytes"),
        "kernel_us": r1(k["duration_us"]),
        "category": k["category"],
    }
    hit = _ncu_kernel(r, k)
    head = f"{short(k['name'], 50)}: {ev['theoretical_occupancy_pct']:.1f}% theoretical occupancy, limited by {lim}"
    head += _achieved_text(hit, ev)
    elsewhere = not_the_question(r, k, head, peers.results)  # only a compute-bound kernel is judged on its occupancy
    if elsewhere is not None:
        return [elsewhere]
    rid, sev, msg, advice = _occupancy_verdict(head, ev, r, hit)
    return [
        Insight(
            id=rid, variant=r["variant"], severity=sev, message=msg, advice=advice, evidence=ev, kernels=(k["name"],)
        )
    ]


def _achieved_text(hit: dict[str, Any] | None, ev: dict[str, Any]) -> str:
    """With --ncu: what the kernel achieved against what its launch allowed, and its top stall."""
    if hit is None or hit.get("achieved_occupancy_pct") is None:
        return ""
    ach = hit["achieved_occupancy_pct"]
    ev["achieved_occupancy_pct"] = r1(ach)
    ev["achieved_over_theoretical_pct"] = (
        round(100 * ach / ev["theoretical_occupancy_pct"]) if ev["theoretical_occupancy_pct"] else None
    )
    text = f"; Nsight Compute: {ev['achieved_occupancy_pct']:.1f}% achieved"
    if ev["achieved_over_theoretical_pct"] is not None:
        text += f" ({ev['achieved_over_theoretical_pct']}% of theoretical)"
    stalls = hit.get("top_stalls") or []
    if stalls:
        ev["top_stall"] = stalls[0]["reason"]
        text += f", top stall '{stalls[0]['reason']}'"
    return text
