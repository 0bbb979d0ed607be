"""The one place that knows FLOP formulas.  Peaks are measured per run (runner.measure_peak)."""

from __future__ import annotations

from attnscope.types import Case

FLOP_FORMULA = "4·B·H·Sq·Sk·D (two GEMMs, 2 FLOP per multiply-add), halved when causal"


def attention_flops(case: Case) -> int:
    """Forward attention FLOPs: QKᵀ and PV, each 2·B·H·Sq·Sk·D; causal keeps half."""
    f = 4 * case.batch * case.heads * case.seq_q * case.num_seq_kv * case.head_dim
    return f // 2 if case.causal else f


def tflops(flops: int, time_us: float | None) -> float | None:
    if time_us is None or time_us <= 0:
        return None
    return flops / (time_us * 1e-6) / 1e12
