"""Size before work: how much memory and time each variant needs, estimated before a tensor exists.  Pure.

Every estimate is arithmetic on the case (B, H, KV heads, Sq, Sk, D, dtype) and is written so
that a reader can redo it by hand: ``parts`` names each term in bytes.  An estimate is an upper
guide, not a measurement; the run's own ``mem MiB`` column is the measurement.

Memory per variant (extra peak of one call, while the inputs and the reference's output stay):

- naive, naive_inplace: two score matrices live at once (the product and its scaled copy; then the
  scores and softmax's output), in the case's dtype; the S×S bool mask built once outside the call.
- sdpa_math, flex (eager): the scores in fp32 (16-bit inputs are upcast), four matrices at the
  peak (scores, additive mask, softmax, the safe-softmax guard), plus fp32 copies of q, k, v.
- fused kernels (flash, efficient, cuDNN, default, compiled flex): the output and one fp32
  log-sum-exp per query row; the scores stay on chip.
- a serving case (paged or ragged cache): the inputs hold the whole pool (every allocated page, the last page's
  empty slots included); the serving variants' terms are in :func:`serving_variant_bytes`; the reference walks
  one sequence at a time.
- every variant: the error check's fp64 copy of the output and its difference to the reference, and a
  fixed workspace allowance (``WORKSPACE_BYTES``).

Time: the case's FLOPs over the fastest matmul rate the device could reach, times the calls the run
makes (warm-up, timing, profiling): a floor.  A variant whose floor is above ``MAX_VARIANT_S`` is
skipped rather than left to run for hours.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from attnscope.core.flops import attention_flops
from attnscope.core.serving import pool_tokens
from attnscope.core.types import DTYPE_BYTES, Case
from attnscope.core.units import fmt_bytes

GIB = 1024**3
FP32, FP64 = 4, 8
SCORE_FAMILIES = {"naive": "naive", "naive_inplace": "naive", "sdpa_math": "upcast", "flex": "upcast"}
HEADROOM = 0.85  # of the free memory: the allocator, the profiler and torch's (or transformers') buffers need the rest
# Kernel workspaces, allocator rounding and per-thread buffers, measured as 0.2 MiB (CPU, flash's
# per-thread blocks) to 0.5 MiB (H200, compiled flex) beyond the terms below on the committed runs.
WORKSPACE_BYTES = 8 * 1024**2
MIN_CALLS = 10  # 3 warm-up, at least 5 timed, 1 profiled, 1 for peak memory
MAX_VARIANT_S = 300.0
# Above every matmul rate a device of that kind reaches today (dense, 16-bit): a time floor
# computed with it holds on any machine, before anything is measured.
CEILING_TFLOPS = {"cpu": 20.0, "cuda": 2500.0}


@dataclass(frozen=True)
class Estimate:
    """Bytes one call needs beyond the inputs, with each term named."""

    variant: str
    bytes: int
    parts: dict[str, int] = field(default_factory=dict)

    def text(self) -> str:
        terms = " + ".join(f"{k} {fmt_bytes(v)}" for k, v in self.parts.items() if v)
        return f"~{fmt_bytes(self.bytes)} ({terms})"


def _elems(case: Case) -> tuple[int, int, int, int]:
    """(q, k-or-v, output, score-matrix) element counts.  A serving case's K and V are its pool (whole pages, or the
    packed sequences: attnscope.core.serving.pool_tokens), its scores those of each sequence's own keys."""
    b, h, kvh, sq, sk, d = case.batch, case.heads, case.num_kv_heads, case.seq_q, case.num_seq_kv, case.head_dim
    if case.is_serving:
        lens = case.kv_lengths
        return b * h * sq * d, pool_tokens(lens, case.page_size) * kvh * d, b * h * sq * d, h * sq * sum(lens)
    return b * h * sq * d, b * kvh * sk * d, b * h * sq * d, b * h * sq * sk


def input_bytes(case: Case) -> int:
    """q, k and v in the case's dtype."""
    q, kv, _, _ = _elems(case)
    return (q + 2 * kv) * DTYPE_BYTES[case.dtype]


def input_peak_bytes(case: Case) -> int:
    """While making the inputs: each is drawn in fp32 and then cast, so one fp32 draft lives beside them."""
    q, kv, _, _ = _elems(case)
    return input_bytes(case) + max(q, kv) * FP32


def reference_bytes(case: Case, chunk_bytes: int | None = None) -> tuple[int, int]:
    """(peak while computing, resident after) of the fp64 reference.

    ``chunk_bytes=None``: one call of the math backend on fp64 copies (four S×S fp64 matrices at
    its peak); else the chunked reference (attnscope.workloads.reference), whose scores never exceed
    ``chunk_bytes`` per chunk of one batch row and one KV head's query heads (three such buffers:
    scores, softmax, probabilities).
    """
    q, kv, out, score = _elems(case)
    resident = out * FP64
    if case.is_serving:  # one sequence at a time (workloads/paged_cache.py): its K, V per query head and scores in fp64
        cap = max(case.kv_lengths)
        return resident + 2 * case.heads * cap * case.head_dim * FP64 + 3 * case.heads * case.seq_q * cap * FP64, (
            resident
        )
    if chunk_bytes is None:
        gqa = 2 * case.batch * case.heads * case.num_seq_kv * case.head_dim if case.is_gqa else 0
        return (q + 2 * kv + gqa) * FP64 + 4 * score * FP64 + resident, resident
    # one chunk covers one batch row and one KV head's group of query heads
    group_scores = (case.heads // case.num_kv_heads) * case.seq_q * case.num_seq_kv * FP64
    per_head_kv = 2 * case.num_seq_kv * case.head_dim * FP64
    return resident + 3 * min(chunk_bytes, group_scores) + per_head_kv, resident


def serving_variant_bytes(case: Case, variant: str) -> Estimate:
    """A serving variant's extra peak: the gather's dense K and V (B·H_kv·max L·D each) and its boolean mask, with
    SDPA's math path as the upper bound of its scores (4 fp32 B·H·Sq·max L matrices); eager flex's fp32 scores over
    the whole pool (B·H·Sq·pool tokens, 4 of them), its two int32 maps of the pool and the pool's K broadcast to every
    batch element and query head (B·H·pool·D fp32); a fused kernel its output and log-sum-exp."""
    e = DTYPE_BYTES[case.dtype]
    b, h, kvh, sq, d = case.batch, case.heads, case.num_kv_heads, case.seq_q, case.head_dim
    cap = max(case.kv_lengths)
    pool = pool_tokens(case.kv_lengths, case.page_size)
    out = b * h * sq * d
    parts: dict[str, int]
    if variant.startswith("paged_gather"):
        parts = {"gathered K, V": 2 * b * kvh * cap * d * e, "mask": b * sq * cap}
        if variant == "paged_gather_sdpa":
            parts["4 fp32 score matrices (math path, upper bound)"] = 4 * b * h * sq * cap * FP32
    elif variant == "paged_flex":
        parts = {"4 fp32 score matrices over the pool": 4 * b * h * sq * pool * FP32, "pool maps": 2 * pool * 4}
        parts["fp32 q, k, v"] = (out + 2 * pool * kvh * d) * FP32 if e < FP32 else 0
        # the batched matmul broadcasts the pool's K (then V) to every batch element and query head, in fp32: seen on
        # the H200 (torch 2.11) as one allocation of B·H·pool·D·4 B (299 GiB at B=32 H=32, 613,024 pool tokens)
        parts["K (then V) broadcast over batch and heads, fp32"] = b * h * pool * d * FP32
    else:
        parts = {"log-sum-exp": b * h * sq * FP32, "pool maps": 2 * pool * 4}
    parts.update({"output": out * e, "workspace allowance": WORKSPACE_BYTES, "error check (fp64)": 2 * out * FP64})
    return Estimate(variant, sum(parts.values()), parts)


def variant_bytes(case: Case, variant: str) -> Estimate:
    """The extra peak of one call of ``variant``, including this run's error check."""
    if case.is_serving:
        return serving_variant_bytes(case, variant)
    e = DTYPE_BYTES[case.dtype]
    q, kv, out, score = _elems(case)
    mask = case.seq_q * case.num_seq_kv if case.causal else 0
    check = 2 * out * FP64
    family = SCORE_FAMILIES.get(variant, "fused")
    gqa = 2 * case.batch * case.heads * case.num_seq_kv * case.head_dim * e if case.is_gqa else 0
    parts: dict[str, int]
    if family == "naive":
        parts = {"2 score matrices": 2 * score * e, "mask": mask, "K/V repeated for GQA": gqa}
    elif family == "upcast":
        parts = {
            "4 fp32 score matrices": 4 * score * FP32,
            "fp32 q, k, v": (q + 2 * kv) * FP32 if e < FP32 else 0,
            "mask": mask * FP32,
        }
    else:
        parts = {"log-sum-exp": case.batch * case.heads * case.seq_q * FP32}
    parts.update({"output": out * e, "workspace allowance": WORKSPACE_BYTES, "error check (fp64)": check})
    return Estimate(variant, sum(parts.values()), parts)


def call_floor_s(case: Case, rate_tflops: float) -> float:
    """Seconds the run needs at least for one variant: MIN_CALLS calls at ``rate_tflops``."""
    return MIN_CALLS * attention_flops(case) / (rate_tflops * 1e12)


def usable_bytes(free_bytes: int) -> int:
    """The one "fits in memory" rule: what an estimate may take of ``free_bytes`` (:data:`HEADROOM` of it), for an
    attention case here and a transformers model (attnscope.workloads.hf.size) alike."""
    return int(free_bytes * HEADROOM)


def fits(need_bytes: int, free_bytes: int) -> bool:
    """Whether an estimate of ``need_bytes`` fits in the usable part of ``free_bytes`` (:func:`usable_bytes`)."""
    return need_bytes <= usable_bytes(free_bytes)


def variant_skip(case: Case, variant: str, free_bytes: int, rate_tflops: float) -> str | None:
    """Why ``variant`` is not run on this case (with the estimate and the limit), else None."""
    budget = usable_bytes(free_bytes) - input_bytes(case) - reference_bytes(case)[1]
    est = variant_bytes(case, variant)
    if est.bytes > budget:
        return (
            f"does not fit: needs {est.text()} beyond the inputs, "
            f"above the {fmt_bytes(max(budget, 0))} left of {fmt_bytes(free_bytes)} free "
            f"({HEADROOM:.0%} headroom, less the inputs and the reference's output); estimated, not run"
        )
    floor = call_floor_s(case, rate_tflops)
    if floor > MAX_VARIANT_S:
        return (
            f"too slow to measure: {MIN_CALLS} calls of {attention_flops(case):.2e} FLOP need at least "
            f"{floor:,.0f} s even at {rate_tflops:g} TFLOP/s (limit {MAX_VARIANT_S:.0f} s); estimated, not run"
        )
    return None


def case_skip(case: Case, free_bytes: int, chunk_bytes: int | None = None) -> str | None:
    """Why the case cannot start at all: the inputs, or the inputs and the reference, do not fit."""
    room = usable_bytes(free_bytes)
    need = input_peak_bytes(case)
    if not fits(need, free_bytes):
        return (
            f"the case does not fit: its inputs need ~{fmt_bytes(need)} (q, k, v and an fp32 draft), "
            f"above {HEADROOM:.0%} of the {fmt_bytes(free_bytes)} free on {case.device}"
        )
    ref_peak, _ = reference_bytes(case, chunk_bytes)
    if input_bytes(case) + ref_peak > room:
        return (
            f"the case does not fit: the fp64 reference needs ~{fmt_bytes(ref_peak)} beside "
            f"{fmt_bytes(input_bytes(case))} of inputs, above {HEADROOM:.0%} of the {fmt_bytes(free_bytes)} "
            f"free on {case.device}"
        )
    return None


def reference_chunk_bytes() -> int:
    """The chunk size of the run's fp64 reference (attnscope.workloads.reference computes it in chunks)."""
    from attnscope.workloads.reference import CHUNK_BYTES

    return int(CHUNK_BYTES)
