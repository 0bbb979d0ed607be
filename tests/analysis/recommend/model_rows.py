"""Hand-made `model --out` rows for the model path's tests: one step's timing and an attention breakdown whose
parts sum by hand (kernel 300 + projections 100 + repeat_kv 50 = 450 µs of a 1000 µs step)."""

from __future__ import annotations

from typing import Any


def timing(median: float, p25: float, p75: float) -> dict[str, Any]:
    # noisy as the timing loop flags it: interquartile range over the median above 10 %
    return {"median_us": median, "p25_us": p25, "p75_us": p75, "noisy": (p75 - p25) / median > 0.1, "method": "wall"}


def row(
    impl: str, t: dict[str, Any], copies: list[dict[str, Any]] | None = None, mode: str = "train", status: str = "ok"
) -> dict[str, Any]:
    """An implementation's row; a status other than ok has no timing and no attention (refused)."""
    ok = status == "ok"
    parts = dict.fromkeys(
        ("kernel", "projections", "mask", "repeat_kv", "upcasts", "copies", "rotary", "kv_cache", "other"), 0.0
    )
    parts.update(kernel=300.0, projections=100.0, repeat_kv=50.0)
    attention = {
        "time_us": 450.0,
        "share": 0.45,
        "kernel_us": 300.0,
        "around_us": 50.0,
        "projections_us": 100.0,
        "parts": parts,
        "hidden_copies": copies or [],
        "upcasts": [],
    }
    return {
        "impl": impl,
        "mode": mode,
        "status": status,
        "reason": None if ok else "refused",
        "step_time": t if ok else None,
        "attention": attention if ok else None,
        "breakdown": {"total_us": 1000.0},
        "insights": [],
    }
