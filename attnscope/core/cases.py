"""Default cases per device and a small grid helper."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from attnscope.core.types import Case

# CPU: small enough that every default variant runs in well under a minute on 2 cores.
CPU_DEFAULT = Case(batch=1, heads=8, seq_q=512, head_dim=64, dtype="bf16", causal=True, device="cpu")
# GPU: the study's case.
GPU_DEFAULT = Case(batch=4, heads=16, seq_q=2048, head_dim=64, dtype="bf16", causal=True, device="cuda")

DTYPE_ALIASES = {
    "bf16": "bf16",
    "bfloat16": "bf16",
    "fp16": "fp16",
    "float16": "fp16",
    "half": "fp16",
    "fp32": "fp32",
    "float32": "fp32",
    "float": "fp32",
}


def default_case(device: str) -> Case:
    base = GPU_DEFAULT if device.startswith("cuda") else CPU_DEFAULT
    return replace(base, device=device)


def parse_dtype(s: str) -> str:
    try:
        return DTYPE_ALIASES[s.lower()]
    except KeyError:
        raise ValueError(f"unknown dtype {s!r}; use one of bf16, fp16, fp32") from None


def make_case(device: str, **overrides: Any) -> Case:
    """The device's default case with any fields overridden (None means keep).  The device is
    named: :func:`attnscope.measure.env.default_device` picks one where the caller has none."""
    c = default_case(device)
    fields = {k: v for k, v in overrides.items() if v is not None}
    if "dtype" in fields:
        fields["dtype"] = parse_dtype(fields["dtype"])
    return replace(c, **fields)
