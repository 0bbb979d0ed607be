"""The verdicts ``run --guess`` has no kind for (occupancy by design, the decode bound, the share of the copy
bandwidth), on hand-made results with the expected values worked out by hand."""

from __future__ import annotations

from typing import Any

import pytest

from attnscope.tour.judge import verdict
from attnscope.tour.steps import STEPS

Q = {q.id: q for s in STEPS for q in s.questions}
# decode B1 H4 KV2 Sq1 Sk256 D32 bf16: bytes = 2·32·(2·1·4·1 + 2·1·2·256) = 66,048; FLOPs = 4·4·1·256·32 = 131,072
CASE = {"batch": 1, "heads": 4, "kv_heads": 2, "seq_q": 1, "seq_kv": 256, "head_dim": 32, "dtype": "bf16"}


def _decode(us: float, peak_tflops: float) -> dict[str, Any]:
    t = {"median_us": us, "p25_us": us, "p75_us": us, "min_us": us, "num_samples": 9, "method": "wall"}
    return {
        "variant": "sdpa_default",
        "status": "ok",
        "device_kind": "cpu",
        "case": CASE,
        "flops": 131_072,
        "cpu_time_us": us,
        "cpu_time": t,
        "peak": {"tflops": peak_tflops},
        "insights": [],
    }


def test_bound_memory_and_too_close_near_the_balance() -> None:
    # balance = 1e12 / 1e11 = 10 FLOP/B; intensity 131072/66048 = 1.98, below 10/2: memory-bound, a clear verdict
    v = verdict(Q["decode_bound"], "memory", [_decode(10.0, 1.0)], (), {"copy_bytes_per_s": 1e11})
    assert (v["outcome"], v["measured"]) == ("hit", "memory")
    v = verdict(Q["decode_bound"], "compute", [_decode(10.0, 1.0)], (), {"copy_bytes_per_s": 1e11})
    assert v["outcome"] == "miss"
    # balance 3 FLOP/B: 1.98 is within 2× of it, too close to call either way
    v = verdict(Q["decode_bound"], "memory", [_decode(10.0, 0.3)], (), {"copy_bytes_per_s": 1e11})
    assert v["outcome"] == "close"
    assert verdict(Q["decode_bound"], "memory", [_decode(10.0, 1.0)], (), {})["outcome"] == "unknown"


@pytest.mark.parametrize(("guess", "want"), [([5.0, 8.0], "hit"), ([6.5, 8.0], "close"), ([8.0, 9.0], "miss")])
def test_bandwidth_share_with_the_noise_band(guess: list[float], want: str) -> None:
    # 66,048 B in 10 µs = 6.6048 GB/s = 6.6048% of 100 GB/s; the CPU floor ±10% on the time:
    # times 9.0909–11 µs → 6.0044–7.2653%
    v = verdict(Q["decode_bandwidth"], guess, [_decode(10.0, 1.0)], (), {"copy_bytes_per_s": 1e11})
    assert v["measured"] == pytest.approx(6.6, abs=0.05)
    assert v["band"] == [pytest.approx(6.0, abs=0.05), pytest.approx(7.3, abs=0.05)]
    assert v["outcome"] == want


def _flash(insight: str, severity: str) -> dict[str, Any]:
    return {
        "variant": "sdpa_flash",
        "status": "ok",
        "insights": [{"id": insight, "severity": severity, "message": "m"}],
    }


def test_occupancy_by_design_or_hurting_from_the_insight() -> None:
    q = Q["occupancy_design"]
    assert verdict(q, "design", [_flash("low_occupancy_by_design", "info")], (), {})["outcome"] == "hit"
    assert verdict(q, "hurting", [_flash("low_occupancy_by_design", "info")], (), {})["outcome"] == "miss"
    assert verdict(q, "hurting", [_flash("low_occupancy", "warning")], (), {})["outcome"] == "hit"
    # an info-level low_occupancy cannot tell (no rate or peak): not measurable, not a miss
    assert verdict(q, "design", [_flash("low_occupancy", "info")], (), {})["outcome"] == "unknown"
    assert verdict(q, "design", [], (), {})["outcome"] == "unknown"
