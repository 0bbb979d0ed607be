"""Occupancy is judged only where it is the question: on the real H200 decode traces, and a dense-mask row.

Expected values come from the raw Kineto JSON (kernel grids, durations, the device's SM count) and hand
arithmetic, never from attnscope's output.
"""

from __future__ import annotations

from functools import cache
from typing import Any

import pytest

from attnscope.api import analyze, annotate
from attnscope.document.schema import result_to_dict
from tests.rawtrace import H200, raw_events

DECODE = H200 / "decode"
OCCUPANCY_IDS = {"low_occupancy", "low_occupancy_by_design"}


@cache
def insights(variant: str) -> tuple[dict[str, Any], ...]:
    doc = annotate({"results": [result_to_dict(analyze(DECODE / f"{variant}.json", variant=variant))]})
    return tuple(doc["results"][0]["insights"])


def _raw_kernel(variant: str, part: str) -> dict[str, Any]:
    (k,) = [e for e in raw_events(DECODE / f"{variant}.json") if e.get("cat") == "kernel" and part in e["name"]]
    return k


@pytest.mark.parametrize("variant", ["sdpa_cudnn", "sdpa_flash", "sdpa_default", "cudnn_frontend"])
def test_no_low_occupancy_verdict_on_decode(variant: str) -> None:
    assert not [i for i in insights(variant) if i["id"] in OCCUPANCY_IDS]


def test_cudnn_decode_is_memory_bound_near_the_ceiling() -> None:
    (i,) = [i for i in insights("sdpa_cudnn") if i["id"] == "memory_bound"]
    k = _raw_kernel("sdpa_cudnn", "cudnn_generated")
    nbytes = 2 * 32 * 128 * 2 + 2 * 8 * 8192 * 128 * 2  # Q, O; K, V cache of 8 heads × 8192 × 128 bf16
    pct = 100 * nbytes / (k["dur"] * 1e-6) / 4.814304e12  # 3,201,000 kHz × 2 × 6016 bit / 8
    assert i["evidence"]["pct_bandwidth_spec"] == pytest.approx(pct, abs=0.05)
    assert pct >= 70 and "near the bandwidth ceiling" in i["message"]


def test_a_grid_smaller_than_the_sms_cannot_fill_the_gpu() -> None:
    k = _raw_kernel("cudnn_frontend", "cudnn_generated")
    blocks = k["args"]["grid"][0] * k["args"]["grid"][1] * k["args"]["grid"][2]
    (i,) = [i for i in insights("cudnn_frontend") if i["id"] == "shape_cannot_fill_gpu"]
    assert blocks < 132
    assert f"({blocks} blocks vs 132 SMs)" in i["message"]


def _dense_row(mask: str) -> dict[str, Any]:
    return {
        "variant": "sdpa_cudnn",
        "source": "run",
        "status": "ok",
        "device_kind": "gpu",
        "device_name": "NVIDIA H200",
        "dense_mask": True,
        "case": {"batch": 1, "heads": 1, "seq_q": 4, "head_dim": 8, "dtype": "bf16", "device": "cuda", "mask": mask},
        "flops": 10**12,
        "tflops": 1.0,
        "pct_of_peak": 0.1,
        "gpu_time_us": 1e6,
        "kernels": [
            {
                "name": "cudnn_generated_fort_native_sdpa_sm90_flash_fprop_kernel",
                "category": "attention",
                "duration_us": 1e6,
                "device": "gpu",
                "tensor_cores": True,
                "grid": [256, 1, 1],
                "theoretical_occupancy_pct": 12.5,
                "occupancy_limiter": "registers",
            }
        ],
    }


def test_under_a_dense_mask_the_thrown_away_share_is_said() -> None:
    # causal at S=4 keeps 1+2+3+4 = 10 of 16 scores: 6/16 = 37.5% thrown away
    doc = annotate({"results": [_dense_row("causal")]})
    got = [i for i in doc["results"][0]["insights"] if i["id"] in OCCUPANCY_IDS | {"masked_scores"}]
    (i,) = got
    assert i["id"] == "masked_scores"
    assert i["evidence"]["thrown_away_pct"] == pytest.approx(37.5)
    assert "37.5%" in i["message"]


def test_dense_mask_under_cudnn_does_not_blame_flash() -> None:
    from attnscope.analysis.rules.masks import dense_mask

    row = _dense_row("causal")
    row["sdpa_backend"] = "cudnn"
    (i,) = dense_mask(row)
    assert "FlashAttention takes no arbitrary mask" not in i.message
    assert "torch ran cudnn (first in torch's SDPA order on Hopper, mask or not)" in i.message
