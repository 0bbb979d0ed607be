"""A call that waits on the device is not called CPU-bound."""

from __future__ import annotations

from typing import Any

from attnscope.analysis.rules.execution import cpu_bound


def _row(copy: str | None) -> dict[str, Any]:
    ks: list[dict[str, Any]] = [{"name": "triton_tem_fused_0", "category": "attention", "duration_us": 90.0}]
    if copy:
        ks.append({"name": copy, "category": "memcpy", "duration_us": 1.0})
    return {"variant": "flex", "device_kind": "gpu", "source": "run", "cpu_time_us": 120.0, "gpu_time_us": 100.0,
            "kernels": ks}  # fmt: skip


def test_a_pageable_copy_inside_the_call_means_the_host_waits() -> None:
    (i,) = cpu_bound(_row("Memcpy HtoD (Pageable -> Device)"))
    assert i.id == "host_waits_on_device"
    assert "CPU-bound, the GPU waits" not in i.message and "not CPU-bound" in i.message


def test_without_a_synchronising_copy_it_is_cpu_bound() -> None:
    (i,) = cpu_bound(_row(None))
    assert i.id == "cpu_bound"
