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
    # balance = 1e12 / 1e11 = 10 FLOP/B; intensity 131072/66048 = 1.98, below 10/2: memory-bound, a clear verdict.
    # The time, 0.8 µs, is what the bytes explain: 66,048 B ÷ 1e11 B/s = 0.66048 µs, 82.6% of it.
    v = verdict(Q["decode_bound"], "memory", [_decode(0.8, 1.0)], (), {"copy_bytes_per_s": 1e11})
    assert (v["outcome"], v["measured"]) == ("hit", "memory")
    v = verdict(Q["decode_bound"], "compute", [_decode(0.8, 1.0)], (), {"copy_bytes_per_s": 1e11})
    assert v["outcome"] == "miss"
    # balance 3 FLOP/B: 1.98 is within 2× of it, too close to call either way
    v = verdict(Q["decode_bound"], "memory", [_decode(0.8, 0.3)], (), {"copy_bytes_per_s": 1e11})
    assert v["outcome"] == "close"
    assert verdict(Q["decode_bound"], "memory", [_decode(0.8, 1.0)], (), {})["outcome"] == "unknown"


@pytest.mark.parametrize(
    ("us", "guess", "want", "measured"),
    [
        # 0.66048 µs of bytes (the FLOPs at 1 TFLOP/s: 0.131072 µs) in 10 µs: 6.6% explained → overhead-bound
        (10.0, "memory", "miss", "overhead"),
        (10.0, "overhead", "hit", "overhead"),
        # in 1.32 µs the roofs explain 0.66048 / 1.32 = 50.0%: within 1.25× of the 50% line, too close to call
        (1.32, "memory", "close", "overhead"),
        (1.32, "overhead", "close", "overhead"),
    ],
)
def test_a_time_the_roofs_do_not_explain_is_overhead_bound(us: float, guess: str, want: str, measured: str) -> None:
    """A CPU decode step at 4–7% of the copy bandwidth is not "memory-bound → hit": its time is the call's own."""
    v = verdict(Q["decode_bound"], guess, [_decode(us, 1.0)], (), {"copy_bytes_per_s": 1e11})
    assert (v["outcome"], v["measured"]) == (want, measured)
    if us == 10.0:
        assert "6.6% of the measured 10.0 µs" in v["text"]


def _host(variant: str, cpu_us: float, gpu_us: float) -> dict[str, Any]:
    t = {"median_us": cpu_us, "p25_us": cpu_us, "p75_us": cpu_us, "min_us": cpu_us, "num_samples": 50, "method": "h"}
    return {
        "variant": variant,
        "status": "ok",
        "device_kind": "gpu",
        "cpu_time_us": cpu_us,
        "cpu_time": t,
        "gpu_time_us": gpu_us,
        "insights": [],
    }


@pytest.mark.parametrize(("guess", "want"), [("2", "miss"), ("1.55", "close"), ("1.05+", "close"), ("0.8-1.3", "hit")])
def test_cudnn_host_ratio_against_flash_with_the_cpu_noise_floor(guess: str, want: str) -> None:
    """cuDNN 20.0 µs of host time, flash 18.7 (the H200 figures): 20.0 / 18.7 = 1.0695×; each time's band is ±10%
    (the CPU floor, quartiles tight): (20/1.1) / (18.7·1.1) = 0.8839 to (20·1.1) / (18.7/1.1) = 1.2941.
    "2" is about 2 (1.6–2.5): the band lies below it → miss; the article's "1.55" (1.24–1.9375) and "1.05+" overlap
    the band's top or straddle it → close; 0.8–1.3 holds the whole band → hit."""
    from attnscope.core.answers import read_answer

    q = Q["cudnn_host_ratio"]
    rows = [_host("sdpa_flash", 18.7, 160.7), _host("sdpa_cudnn", 20.0, 104.7)]
    v = verdict(q, read_answer(q, guess), rows, ("sdpa_flash", "sdpa_cudnn"), {})
    assert (v["outcome"], v["measured"]) == (want, 1.07)
    assert v["text"] == (
        "measured 1.07× (noise band 0.88–1.29×): sdpa_cudnn 20.0 µs of host time per call against its 104.7 µs on "
        "the GPU, sdpa_flash 18.7 µs against its 160.7 µs on the GPU"
    )
    assert verdict(q, 1.0, rows[:1], ("sdpa_flash",), {})["outcome"] == "unknown"


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
