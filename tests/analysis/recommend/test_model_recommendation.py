"""The model path's recommendation and insights on hand-made rows: which copies count, which timings warn."""

from __future__ import annotations

from typing import Any

from attnscope.analysis.recommend.model import annotate_rows, recommend

MIB = 1024 * 1024


def _timing(median: float, p25: float, p75: float) -> dict[str, Any]:
    # noisy as the timing loop flags it: interquartile range over the median above 10 %
    return {"median_us": median, "p25_us": p25, "p75_us": p75, "noisy": (p75 - p25) / median > 0.1, "method": "wall"}


def _row(impl: str, t: dict[str, Any], copies: list[dict[str, Any]] | None = None, mode: str = "train") -> dict:
    parts = dict.fromkeys(
        ("kernel", "projections", "mask", "repeat_kv", "upcasts", "copies", "rotary", "kv_cache", "other"), 0.0
    )
    parts.update(kernel=300.0, projections=100.0, repeat_kv=50.0)
    return {
        "impl": impl,
        "mode": mode,
        "status": "ok",
        "step_time": t,
        "attention": {
            "time_us": 450.0,
            "share": 0.45,
            "kernel_us": 300.0,
            "around_us": 50.0,
            "projections_us": 100.0,
            "parts": parts,
            "hidden_copies": copies or [],
            "upcasts": [],
        },
        "breakdown": {"total_us": 1000.0},
        "insights": [],
    }


def _copy(layer: str, backward: bool, nbytes: int) -> dict[str, Any]:
    return {
        "op": "aten::reshape",
        "copy_op": "aten::copy_",
        "bytes": nbytes,
        "part": "repeat_kv",
        "layer": layer,
        "backward": backward,
    }


def test_a_training_step_counts_the_forward_repeat_kv_copies_only():
    """Per layer: K and V repeated in the forward (2 × 4 MiB), and 3 copies of 8 MiB in the backward (gradient
    layouts, not repeat_kv's): the insight counts 2 per layer, 4 in all, 16 MiB."""
    copies = []
    for layer in ("l.0", "l.1"):
        copies += [_copy(layer, False, 4 * MIB), _copy(layer, False, 4 * MIB)]
        copies += [_copy(layer, True, 8 * MIB)] * 3
    eager = _row("eager", _timing(10_000, 9_900, 10_100), copies)
    annotate_rows([eager])
    [kv] = [i for i in eager["insights"] if i["id"] == "repeat_kv_copy"]
    ev = kv["evidence"]
    assert ev["copies_per_layer"] == 2 and ev["num_copies"] == 4 and ev["num_layers"] == 2
    assert ev["bytes_per_copy"] == 4 * MIB and ev["bytes_total"] == 16 * MIB
    assert "2×4.00 MiB per layer per train step (4 copies in 2 layers, 16.0 MiB in all" in kv["message"]


def test_backward_copies_alone_give_no_repeat_kv_insight():
    eager = _row("eager", _timing(10_000, 9_900, 10_100), [_copy("l.0", True, 8 * MIB)])
    annotate_rows([eager])
    assert not [i for i in eager["insights"] if i["id"] == "repeat_kv_copy"]


def test_a_noisy_runner_up_is_named_in_the_recommendation():
    """Best 8 000 µs (IQR 100: 1.25 %, steady), runner-up 10 000 µs with IQR 2 000 (20 %: noisy); the quartiles
    do not overlap (8 050 < 9 000), so it is no tie, and the noisy one is named."""
    best = _row("sdpa", _timing(8_000, 7_950, 8_050))
    nxt = _row("eager", _timing(10_000, 9_000, 11_000))
    rec = recommend([best, nxt])
    assert rec["best"] == "sdpa" and rec["runner_up"] == "eager" and rec["tied"] == []
    assert rec["margin"] == 1.25  # 10 000 / 8 000
    assert "but eager timed noisy (IQR/median > 10%)" in rec["text"]


def test_a_noisy_best_and_runner_up_are_both_named():
    best = _row("sdpa", _timing(8_000, 7_000, 8_900))
    nxt = _row("eager", _timing(12_000, 11_000, 13_500))
    rec = recommend([best, nxt])
    assert rec["tied"] == []
    assert "but sdpa and eager timed noisy" in rec["text"]


def test_steady_timings_give_no_noise_warning():
    rec = recommend([_row("sdpa", _timing(8_000, 7_950, 8_050)), _row("eager", _timing(10_000, 9_950, 10_050))])
    assert "noisy" not in rec["text"]
