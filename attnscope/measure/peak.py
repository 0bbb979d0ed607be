"""Which measured matmul rate is the % of peak baseline, and why.  Pure.

The peak is measured in the case's dtype.  On a CPU a 16-bit matmul can run far below fp32: on
this 2-core x86 a 1024³ fp16 torch.matmul took 4.4 s (0.0005 TFLOP/s) against 0.066 s in fp32
(0.032), and flash in fp16 then read 1532.9% of "peak".  The baseline is then the faster rate
measured, with the reason stated beside it.  Each rate is the fastest of its
samples: a peak is the best the device did, and a busy machine only slows samples down.
"""

from __future__ import annotations


def choose_peak(dtype: str, rates_tflops: dict[str, float], what: str) -> tuple[float, str]:
    """(rate, source in words) from the rates measured per dtype; ``what`` describes one measurement."""
    own = rates_tflops[dtype]
    best_dtype = max(rates_tflops, key=lambda d: rates_tflops[d])
    if best_dtype == dtype:
        return own, f"measured in this run: {what}, fastest sample"
    best = rates_tflops[best_dtype]
    return best, (
        f"measured in this run, fastest sample: {what}; {dtype} ran at {own:.3g} TFLOP/s, slower than {best_dtype} "
        f"({best:.3g}), so the {best_dtype} rate is the baseline (kernels that accumulate in {best_dtype} can reach it)"
    )
