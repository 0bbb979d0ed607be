"""Spec sheets of known GPUs: dense 16-bit tensor-core rate, DRAM bandwidth, SM count.  Pure data.

`analyze` has no live device, so a roofline read from a trace takes its ceilings from here, keyed
by the device name the trace records, and says so.  Rates are dense (no 2:4 sparsity), BF16 inputs
with FP32 accumulation; bandwidth is the vendor's DRAM figure (memory clock × bus width × 2 for
double data rate, over 8 bits a byte).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class GpuSpec:
    name: str
    bf16_tflops: float  # dense tensor-core rate, FP32 accumulate
    bandwidth_tbps: float  # DRAM, TB/s (10^12 bytes per second)
    sms: int
    source: str


def bandwidth_from_clock(memory_clock_khz: float, bus_width_bits: int) -> float:
    """Peak DRAM bandwidth in TB/s from the device's memory clock and bus width (double data rate)."""
    return memory_clock_khz * 1e3 * 2 * bus_width_bits / 8 / 1e12


# Ordered: the first whose every key word is in the device name wins (so "H100 PCIe" before "H100").
KNOWN: tuple[tuple[tuple[str, ...], GpuSpec], ...] = (
    (
        ("h200",),
        GpuSpec(
            "NVIDIA H200",
            989.4,
            bandwidth_from_clock(3_201_000, 6016),
            132,
            "NVIDIA H200 datasheet (989 TFLOP/s dense BF16); bandwidth from the device's memory clock "
            "3,201,000 kHz × 6016-bit bus × 2 (4.81 TB/s; datasheet 4.8)",
        ),
    ),
    (
        ("h100", "pcie"),
        GpuSpec(
            "NVIDIA H100 PCIe",
            756.0,
            2.0,
            114,
            "NVIDIA H100 datasheet, PCIe column (1,513 sparse = 756 dense BF16; 2 TB/s)",
        ),
    ),
    (
        ("h100",),
        GpuSpec(
            "NVIDIA H100 SXM", 989.4, 3.35, 132, "NVIDIA H100 datasheet, SXM column (989 TFLOP/s dense BF16; 3.35 TB/s)"
        ),
    ),
    (
        ("a100", "40gb"),
        GpuSpec("NVIDIA A100 40GB", 312.0, 1.555, 108, "NVIDIA A100 datasheet (312 TFLOP/s BF16; 40GB: 1,555 GB/s)"),
    ),
    (
        ("a100",),
        GpuSpec(
            "NVIDIA A100 80GB", 312.0, 2.039, 108, "NVIDIA A100 datasheet (312 TFLOP/s BF16; 80GB SXM: 2,039 GB/s)"
        ),
    ),
    (
        ("l40s",),
        GpuSpec("NVIDIA L40S", 362.05, 0.864, 142, "NVIDIA L40S datasheet (733 sparse = 362 dense BF16; 864 GB/s)"),
    ),
    (
        ("l4",),
        GpuSpec("NVIDIA L4", 121.0, 0.300, 58, "NVIDIA L4 datasheet (242 sparse = 121 dense BF16; 300 GB/s)"),
    ),
    (
        ("4090",),
        GpuSpec(
            "NVIDIA GeForce RTX 4090",
            165.2,
            1.008,
            128,
            "NVIDIA Ada Lovelace architecture whitepaper (165.2 TFLOP/s BF16 with FP32 accumulate; 1,008 GB/s)",
        ),
    ),
    (
        ("b200",),
        GpuSpec(
            "NVIDIA B200", 2250.0, 8.0, 148, "NVIDIA HGX B200 datasheet, per GPU (2.25 PFLOP/s dense BF16; 8 TB/s)"
        ),
    ),
)


def lookup(device_name: str | None) -> GpuSpec | None:
    """The spec of ``device_name`` (as torch / a trace names it), or None for a GPU not in the table."""
    if not device_name:
        return None
    low = device_name.lower()
    words = set(low.replace("-", " ").split())
    for keys, spec in KNOWN:
        # "l4" must match the word, not the start of "l40s"
        if all((k in words) if k in ("l4",) else (k in low) for k in keys):
            return spec
    return None


# Dense 16-bit (BF16/FP16 in, FP32 accumulate) tensor-core FLOPs per clock per SM, by compute capability, from
# NVIDIA's figures: rate = SMs × clock × FLOPs/clock/SM, so FLOPs/clock/SM = rate / (SMs × clock).
#   sm90 (H100 SXM5): 989.4 TFLOP/s / (132 SMs × 1.830 GHz boost) = 4096.0 (H100 PCIe: 756.4 / (114 × 1.620) = 4096)
#   sm80 (A100):      312 TFLOP/s / (108 SMs × 1.410 GHz boost) = 2048.9 → 2048 (2048 × 108 × 1.41 GHz = 311.9)
# Other architectures are left out rather than guessed: the peak at the sampled clock is then null.
FLOPS_PER_CLOCK_PER_SM: dict[tuple[int, int], dict[str, int]] = {
    (9, 0): {"bf16": 4096, "fp16": 4096},
    (8, 0): {"bf16": 2048, "fp16": 2048},
}


def flops_per_clock_per_sm(capability: tuple[int, int] | None, dtype: str) -> int | None:
    """Dense tensor-core FLOPs per clock per SM for the case's dtype on this architecture; None where unknown."""
    if capability is None:
        return None
    return FLOPS_PER_CLOCK_PER_SM.get(tuple(capability), {}).get(dtype)  # type: ignore[arg-type]
