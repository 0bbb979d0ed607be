"""The one place that knows FLOP formulas.  Peaks are measured per run (worker.measure_peak)."""

from __future__ import annotations

from attnscope.core.masks import kept_formula, kept_pairs
from attnscope.core.serving import causal_kept
from attnscope.core.types import Case

# The kept count is over batch and heads, as the note after it shows (kept_scores): 4·D times that number is the
# forward's FLOPs, so a reader can multiply the printed numbers and get the printed total.
FLOP_FORMULA = (
    "4·D·(score entries the mask keeps, over batch and heads): two GEMMs, 2 FLOP per multiply-add, "
    "counted only on kept scores (no mask keeps B·H·Sq·Sk)"
)


def attention_flops(case: Case) -> int:
    """Forward attention FLOPs: QKᵀ and PV, each 2·D per score entry the mask keeps."""
    return 4 * case.head_dim * kept_scores(case)


def kept_scores(case: Case) -> int:
    """Score entries the case's mask keeps, over batch and heads (exact: closed forms per mask kind).  A serving
    case counts each sequence on its own KV length (attnscope.core.serving.causal_kept), never the padded longest."""
    if case.is_serving:
        causal = case.mask_spec.kind == "causal"
        per = (causal_kept(case.seq_q, n) if causal else case.seq_q * n for n in case.kv_lengths)
        return case.heads * sum(per)
    return case.heads * kept_pairs(case.mask_spec, case.batch, case.seq_q, case.num_seq_kv)


def kept_fraction(case: Case) -> float:
    """Of the scores a dense call over the same keys would compute: B·H·Sq·Sk, or Σ_b H·Sq·L_b for a serving case."""
    return kept_scores(case) / (case.heads * case.seq_q * sum(case.kv_lengths))


def mask_flop_note(case: Case) -> str:
    """How this case's kept entries were counted, for the FLOP footnote."""
    m = case.mask_spec
    if case.is_serving:
        how = "Sq·L_b - Sq·(Sq-1)/2 per sequence (lower-right causal)" if m.kind == "causal" else "Sq·L_b per sequence"
        return (
            f"mask {m.canonical} on each sequence's own KV length L_b: H·Σ_b({how}) = {kept_scores(case):,} kept "
            f"scores ({100 * kept_fraction(case):.1f}% of H·Sq·Σ L_b)"
        )
    return (
        f"mask {m.canonical}: {kept_formula(m)} = {kept_scores(case):,} kept scores "
        f"({100 * kept_fraction(case):.1f}% of B·H·Sq·Sk)"
    )


def tflops(flops: int, time_us: float | None) -> float | None:
    if time_us is None or time_us <= 0:
        return None
    return flops / (time_us * 1e-6) / 1e12


# Backward: dV = PᵀdO and dP = dO·Vᵀ (two GEMMs), dS → dQ = dS·K and dK = dSᵀ·Q (two more), plus
# recomputing S = QKᵀ in fused kernels: counted as 2.5× the forward, the convention FlashAttention's
# papers use, so fwd+bwd is 3.5×.  Stated beside every number it produces.
MODE_FACTOR: dict[str, tuple[int, int]] = {"fwd": (1, 1), "bwd": (5, 2), "fwd_bwd": (7, 2)}  # numerator, denominator
MODE_FORMULA: dict[str, str] = {
    "fwd": "",
    "bwd": " × 2.5 (backward = 2.5× forward)",
    "fwd_bwd": " × 3.5 (forward + backward, backward = 2.5× forward)",
}


def mode_flops(forward_flops: int, mode: str) -> int:
    """FLOPs of ``mode`` given the forward's: exact in integers (the forward count is even)."""
    num, den = MODE_FACTOR[mode]
    return forward_flops * num // den


def flop_formula(mode: str) -> str:
    return FLOP_FORMULA + MODE_FORMULA[mode]
