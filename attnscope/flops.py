"""The one place that knows FLOP formulas and device peaks (and where each peak comes from)."""

from __future__ import annotations

from dataclasses import dataclass

from attnscope.types import Case

FLOP_FORMULA = "4·B·H·Sq·Sk·D (two GEMMs, 2 FLOP per multiply-add), halved when causal"


def attention_flops(case: Case) -> int:
    """Forward attention FLOPs: QKᵀ and PV, each 2·B·H·Sq·Sk·D; causal keeps half."""
    f = 4 * case.batch * case.heads * case.seq_q * case.num_seq_kv * case.head_dim
    return f // 2 if case.causal else f


@dataclass(frozen=True)
class Peak:
    tflops: float
    source: str


# Dense 16-bit tensor-core peaks.  "measured" rows were measured in this project's
# workplace; "datasheet" rows are the vendor's numbers (leads, not measurements).
PEAK_TABLE: dict[str, dict[str, Peak]] = {
    "NVIDIA H200": {
        "bf16": Peak(790.0, "measured: 8192³ bf16 torch.matmul on an H200 (docs/results/h200.md)"),
        "fp16": Peak(790.0, "assumed equal to the measured bf16 matmul rate on an H200"),
        "fp32": Peak(67.0, "datasheet: H200 SXM fp32 (non-tensor-core)"),
    },
    "NVIDIA H100 80GB HBM3": {
        "bf16": Peak(989.0, "datasheet: H100 SXM dense bf16"),
        "fp16": Peak(989.0, "datasheet: H100 SXM dense fp16"),
        "fp32": Peak(67.0, "datasheet: H100 SXM fp32"),
    },
    "NVIDIA A100-SXM4-80GB": {
        "bf16": Peak(312.0, "datasheet: A100 SXM dense bf16"),
        "fp16": Peak(312.0, "datasheet: A100 SXM dense fp16"),
        "fp32": Peak(19.5, "datasheet: A100 fp32"),
    },
}


def table_peak(device_name: str | None, dtype: str) -> Peak | None:
    if device_name is None:
        return None
    return PEAK_TABLE.get(device_name, {}).get(dtype)


def tflops(flops: int, time_us: float | None) -> float | None:
    if time_us is None or time_us <= 0:
        return None
    return flops / (time_us * 1e-6) / 1e12
