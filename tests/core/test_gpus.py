"""The spec table: bandwidth from clock × bus by hand, and the device names torch reports."""

from __future__ import annotations

import pytest

from attnscope.core.gpus import bandwidth_from_clock, lookup


def test_h200_bandwidth_from_its_memory_clock_and_bus() -> None:
    # 3,201,000 kHz = 3.201e9 Hz; × 2 (DDR) = 6.402e9; × 6016 bit = 38,514.432e9; / 8 = 4.814304e12 B/s
    assert bandwidth_from_clock(3_201_000, 6016) == pytest.approx(4.814304, rel=1e-9)
    spec = lookup("NVIDIA H200")
    assert spec is not None and spec.bandwidth_tbps == pytest.approx(4.814304, rel=1e-9) and spec.sms == 132


@pytest.mark.parametrize(
    ("name", "want"),
    [
        ("NVIDIA H100 80GB HBM3", "NVIDIA H100 SXM"),
        ("NVIDIA H100 PCIe", "NVIDIA H100 PCIe"),
        ("NVIDIA A100-SXM4-40GB", "NVIDIA A100 40GB"),
        ("NVIDIA A100-SXM4-80GB", "NVIDIA A100 80GB"),
        ("NVIDIA L4", "NVIDIA L4"),
        ("NVIDIA L40S", "NVIDIA L40S"),
        ("NVIDIA GeForce RTX 4090", "NVIDIA GeForce RTX 4090"),
        ("NVIDIA B200", "NVIDIA B200"),
    ],
)
def test_device_names_map_to_their_spec(name: str, want: str) -> None:
    spec = lookup(name)
    assert spec is not None and spec.name == want


@pytest.mark.parametrize("name", [None, "", "Tesla T4", "AMD Instinct MI300X"])
def test_unknown_devices_have_no_spec(name: str | None) -> None:
    assert lookup(name) is None
