"""Pure calculators at their exact boundaries: the timing summary and its noise flag, the diff
threshold, the prediction bounds, the FLOP formula with Sq ≠ Sk and GQA, the score matrix.

Every expected value is worked by hand in the test; none comes from the function under test.
"""

from __future__ import annotations

import pytest

from attnscope.analysis.predict import matches
from attnscope.api.diff import diff
from attnscope.core.flops import attention_flops, mask_flop_note, mode_flops, tflops
from attnscope.core.types import Case, Prediction, Timing
from attnscope.measure.timing import summarise

# ---- timing summary -----------------------------------------------------------------------------


def test_summary_median_and_quartiles_by_hand():
    """Ten samples 1..10 given out of order.  Median: (5 + 6) / 2 = 5.5.  Quartiles by linear
    interpolation on positions (n − 1)·p of the sorted list (numpy's default, statistics'
    'inclusive'): p25 at 9·0.25 = 2.25 → 3 + 0.25·(4 − 3) = 3.25; p75 at 6.75 → 7 + 0.75 = 7.75."""
    t = summarise([10.0, 1.0, 9.0, 2.0, 8.0, 3.0, 7.0, 4.0, 6.0, 5.0], "by hand")
    assert t.median_us == 5.5
    assert t.p25_us == 3.25
    assert t.p75_us == 7.75
    assert t.min_us == 1.0
    assert t.num_samples == 10
    assert t.method == "by hand"
    # IQR / median = 4.5 / 5.5 = 0.818...: noisy
    assert t.iqr_rel == pytest.approx(4.5 / 5.5)
    assert t.noisy is True


def test_summary_of_an_odd_skewed_sample():
    """Five samples 1, 2, 3, 4, 100: median 3 (the middle one, not the mean 22); p25 at position
    1 → 2; p75 at position 3 → 4; min 1."""
    t = summarise([100.0, 3.0, 1.0, 4.0, 2.0], "x")
    assert (t.median_us, t.p25_us, t.p75_us, t.min_us) == (3.0, 2.0, 4.0, 1.0)


def test_summary_of_one_sample():
    t = summarise([42.0], "one")
    assert (t.median_us, t.p25_us, t.p75_us, t.min_us, t.num_samples) == (42.0, 42.0, 42.0, 42.0, 1)
    assert t.noisy is False


def test_noise_flag_exactly_at_ten_percent_is_not_noisy():
    """90, 95, 100, 105, 110: median 100, p25 95, p75 105 → IQR/median = 10/100 = 0.10 exactly:
    not noisy (the rule is IQR/median > 10 %)."""
    t = summarise([110.0, 90.0, 100.0, 95.0, 105.0], "x")
    assert (t.p25_us, t.median_us, t.p75_us) == (95.0, 100.0, 105.0)
    assert t.iqr_rel == 0.1
    assert t.noisy is False


def test_noise_flag_just_above_ten_percent_is_noisy():
    """p75 105.01 → IQR/median = 10.01/100 > 0.10: noisy."""
    t = summarise([110.0, 90.0, 100.0, 95.0, 105.01], "x")
    assert t.noisy is True


@pytest.mark.parametrize(
    ("p25", "p75", "noisy"),
    [(95.0, 105.0, False), (94.0, 105.0, True), (80.0, 120.0, True), (99.0, 101.0, False), (70.0, 110.0, True)],
)
def test_noise_flag_is_iqr_over_median_above_ten_percent(p25, p75, noisy):
    """Median 100: IQR 10 → 0.10 (no), 11 → 0.11 (yes), 40 → 0.40 (yes), 2 → 0.02 (no), 40 (yes)."""
    t = Timing(100.0, p25, p75, p25, 9, "x")
    assert t.iqr_rel == pytest.approx((p75 - p25) / 100.0)
    assert t.noisy is noisy


def test_json_timing_carries_noisy_and_iqr():
    from attnscope.document.schema import _timing

    d = _timing(Timing(100.0, 94.0, 105.0, 90.0, 9, "m"))
    assert d == {
        "median_us": 100.0,
        "p25_us": 94.0,
        "p75_us": 105.0,
        "min_us": 90.0,
        "num_samples": 9,
        "iqr_rel": pytest.approx(0.11),
        "noisy": True,
        "method": "m",
    }


# ---- FLOPs --------------------------------------------------------------------------------------


def test_flops_with_different_query_and_key_lengths():
    """B=2, H=4, Sq=128, Sk=512, D=64, no mask: QKᵀ is 2·B·H·Sq·Sk·D = 2·2·4·128·512·64
    = 67,108,864 and PV the same → 134,217,728."""
    c = Case(2, 4, 128, 64, causal=False, seq_kv=512)
    assert attention_flops(c) == 134_217_728
    # swapping the lengths gives the same product
    assert attention_flops(Case(2, 4, 512, 64, causal=False, seq_kv=128)) == 134_217_728
    # and Sk = Sq (seq_kv unset) is 4·2·4·128·128·64 = 33,554,432: a quarter
    assert attention_flops(Case(2, 4, 128, 64, causal=False)) == 33_554_432


def test_gqa_flops_count_query_heads():
    """GQA shares K/V between query heads, but each of the 32 query heads still does its own
    QKᵀ and PV: 4·1·32·256·256·128 = 1,073,741,824, whatever kv_heads is."""
    full = Case(1, 32, 256, 128, causal=False)
    gqa = Case(1, 32, 256, 128, causal=False, kv_heads=8)
    mqa = Case(1, 32, 256, 128, causal=False, kv_heads=1)
    assert attention_flops(full) == attention_flops(gqa) == attention_flops(mqa) == 1_073_741_824


@pytest.mark.parametrize(
    ("kw", "kept", "why"),
    [
        # a window longer than the sequence is plain causal: 1+2+3+4 = 10
        ({"batch": 1, "heads": 1, "seq_q": 4, "mask": "sliding:10"}, 10, "window capped"),
        # GQA and batch: sliding:2 on 6×6 keeps 1+2+2+2+2+2 = 11 per (batch, head);
        # 2 batches × 4 query heads (2 KV heads are shared, not fewer GEMMs) = 88
        ({"batch": 2, "heads": 4, "kv_heads": 2, "seq_q": 6, "mask": "sliding:2"}, 88, "GQA"),
        # documents restart the causal count per document in every batch: (1+2)+(1+2+3) = 9, ×2
        ({"batch": 2, "heads": 1, "seq_q": 5, "mask": "document:2,3"}, 18, "documents"),
        # decode-like lower-right, Sq=3 < Sk=7: queries sit at key positions 4, 5, 6 → 5+6+7 = 18 per head
        ({"batch": 1, "heads": 2, "kv_heads": 1, "seq_q": 3, "seq_kv": 7, "mask": "causal@lower_right"}, 36, "lr"),
        # the same with a window of 3: every query keeps 3 keys → 9
        ({"batch": 1, "heads": 1, "seq_q": 3, "seq_kv": 7, "mask": "sliding:3@lower_right"}, 9, "lr window"),
    ],
    ids=lambda v: v if isinstance(v, str) else None,
)
def test_flops_count_the_kept_scores_of_each_mask(kw, kept, why):
    """FLOPs = 4·D·(kept score entries over batch and query heads); D = 8."""
    c = Case(head_dim=8, dtype="fp32", **kw)
    assert attention_flops(c) == 4 * 8 * kept, why


def test_tflops_unit():
    """10^12 FLOP in 10^6 µs (one second) is 1 TFLOP/s; in 500,000 µs it is 2 (both exact in binary
    floating point, so compared exactly: a unit off by one part in 10^12 shows)."""
    assert tflops(10**12, 1e6) == 1.0
    assert tflops(2 * 10**12, 1e6) == 2.0
    assert tflops(10**12, 5e5) == 2.0
    assert tflops(10**12, 0.0) is None and tflops(10**12, None) is None and tflops(10**12, -1.0) is None


def test_tflops_of_a_sub_microsecond_call():
    """10^6 FLOP in half a µs: 10^6 / 0.5e-6 s = 2·10^12 FLOP/s = 2 TFLOP/s (a time under 1 µs is a time)."""
    assert tflops(10**6, 0.5) == pytest.approx(2.0)


@pytest.mark.parametrize(("mode", "fwd", "flops"), [("fwd", 1000, 1000), ("bwd", 1000, 2500), ("fwd_bwd", 1000, 3500)])
def test_mode_flops_backward_is_two_and_a_half_forwards(mode, fwd, flops):
    assert mode_flops(fwd, mode) == flops


def test_mode_flops_stays_an_integer():
    """2.5 × 6 = 15 and 3.5 × 6 = 21, as ints; an odd forward rounds down: 2.5 × 3 = 7.5 → 7."""
    assert [mode_flops(6, m) for m in ("fwd", "bwd", "fwd_bwd")] == [6, 15, 21]
    assert mode_flops(3, "bwd") == 7 and isinstance(mode_flops(3, "bwd"), int)


def test_mask_flop_note_by_hand():
    """causal over 4 queries and keys keeps 1+2+3+4 = 10 per (batch, head); B=2, H=3 → 60 of
    2·3·4·4 = 96 = 62.5 %."""
    c = Case(2, 3, 4, 8, causal=True)
    assert mask_flop_note(c) == (
        "mask causal: Σ over queries of the keys at or before the query's position (offset Sk−Sq when "
        "lower-right) = 60 kept scores (62.5% of B·H·Sq·Sk)"
    )
    big = Case(1, 1000, 4, 8, causal=False)  # 16,000 kept: the thousands separator
    assert mask_flop_note(big).endswith("= 16,000 kept scores (100.0% of B·H·Sq·Sk)")


def test_the_printed_formula_times_the_printed_count_is_the_printed_flops():
    """B=1, H=2, S=128, D=32 causal: 128·129/2 = 8,256 kept per head, 16,512 over the two heads (the number the
    note prints); the forward is 4·32·16,512 = 2,113,536 FLOPs.  The formula before the note must multiply that
    printed count by 4·D alone: with a factor H as well (4·H·D·16,512 = 4,227,072) a reader gets twice the total."""
    from attnscope.core.flops import flop_formula

    c = Case(1, 2, 128, 32, causal=True)
    assert mask_flop_note(c).endswith("= 16,512 kept scores (50.4% of B·H·Sq·Sk)")
    assert attention_flops(c) == 2_113_536
    assert flop_formula("fwd").startswith("4·D·(score entries the mask keeps, over batch and heads)")
    assert "no mask keeps B·H·Sq·Sk" in flop_formula("fwd")


def test_score_matrix_uses_the_key_length():
    """B=1, H=2, Sq=64, Sk=1024, fp32: one score matrix is 1·2·64·1024·4 = 524,288 B = 0.5 MiB.
    With Sk ignored it would be 1·2·64·64·4 = 32 KiB.  Peak 1 MiB = 2.0× the score matrix."""
    from attnscope.analysis.rules.memory import score_matrix

    case = Case(1, 2, 64, 32, dtype="fp32", causal=False, seq_kv=1024).to_dict()
    # the premise: matrix work outside a fused kernel (naive's QKᵀ as an aten::bmm)
    gemm = {"name": "aten::bmm", "category": "gemm", "duration_us": 1.0}
    r = {"variant": "naive", "case": case, "peak_memory_bytes": 1024 * 1024, "status": "ok", "kernels": [gemm]}
    out = score_matrix(r)
    assert isinstance(out, list) and len(out) == 1
    assert out[0].evidence["score_matrix_bytes"] == 524_288
    assert out[0].evidence["peak_over_score"] == 2.0
    # a peak below one score matrix says nothing is materialised
    assert score_matrix(dict(r, peak_memory_bytes=524_287)) == []


# ---- diff threshold -----------------------------------------------------------------------------


def _doc(gpu_a: float, gpu_b: float) -> tuple[dict, dict]:
    def one(gpu: float) -> dict:
        r = {"variant": "v", "status": "ok", "gpu_time_us": gpu, "cpu_time_us": None, "kernels": []}
        return {"schema_version": 1, "results": [r]}

    return one(gpu_a), one(gpu_b)


def test_diff_threshold_is_strict_growth_beyond_it():
    """100 → 110 µs is +10.0 %: not beyond a 10 % threshold; 100 → 110.01 (+10.01 %) is."""
    a, b = _doc(100.0, 110.0)
    d = diff(a, b, threshold_pct=10.0)
    assert d["variants"][0]["gpu_time_us"]["delta_pct"] == 10.0
    assert d["regressions"] == []
    a, b = _doc(100.0, 110.01)
    d = diff(a, b, threshold_pct=10.0)
    assert [(r["variant"], r["metric"], r["delta_pct"]) for r in d["regressions"]] == [("v", "gpu_time_us", 10.01)]


def test_diff_threshold_zero_flags_any_growth_and_never_a_speed_up():
    a, b = _doc(100.0, 100.5)
    assert len(diff(a, b, threshold_pct=0.0)["regressions"]) == 1
    a, b = _doc(100.0, 100.0)
    assert diff(a, b, threshold_pct=0.0)["regressions"] == []
    a, b = _doc(100.0, 50.0)  # −50 %: faster, never a regression
    assert diff(a, b, threshold_pct=0.0)["regressions"] == []


def test_diff_delta_by_hand():
    """80 → 100 µs: delta +20 µs, +25 %."""
    a, b = _doc(80.0, 100.0)
    g = diff(a, b)["variants"][0]["gpu_time_us"]
    assert (g["a"], g["b"], g["delta"], g["delta_pct"]) == (80.0, 100.0, 20.0, 25.0)


# ---- prediction bounds --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("kind", "expected", "measured", "hit"),
    [
        ("gpu_us", [100.0, 200.0], 100.0, True),  # lower bound included
        ("gpu_us", [100.0, 200.0], 200.0, True),  # upper bound included
        ("gpu_us", [100.0, 200.0], 99.99, False),
        ("gpu_us", [100.0, 200.0], 200.01, False),
        ("kernels", [4, 8], 4, True),
        ("kernels", [4, 8], 8, True),
        ("kernels", [4, 8], 3, False),
        ("kernels", [4, 8], 9, False),
        ("kernels", 5, 5, True),
        ("kernels", 5, 6, False),
        ("kernels", 5, 4, False),
        ("upcast", True, True, True),
        ("upcast", True, False, False),
        ("backend", "flash", "flash", True),
        ("backend", "flash", "cudnn", False),
        # "at least `by`": exactly 2.0× hits, 1.99× misses, more is still a hit
        ("faster_than", {"variant": "x", "by": 2.0}, 2.0, True),
        ("faster_than", {"variant": "x", "by": 2.0}, 1.99, False),
        ("faster_than", {"variant": "x", "by": 2.0}, 9.0, True),
        ("slower_than", {"variant": "x", "by": 2.0}, 2.0, True),
        ("slower_than", {"variant": "x", "by": 2.0}, 1.99, False),
        # a ratio range: both ends included
        ("faster_than", {"variant": "x", "by": [2.0, 3.0]}, 2.0, True),
        ("faster_than", {"variant": "x", "by": [2.0, 3.0]}, 3.0, True),
        ("faster_than", {"variant": "x", "by": [2.0, 3.0]}, 3.01, False),
        ("faster_than", {"variant": "x", "by": [2.0, 3.0]}, 1.99, False),
    ],
)
def test_prediction_bounds_are_inclusive(kind, expected, measured, hit):
    assert matches(expected, measured, kind) is hit


def test_prediction_at_its_bound_is_a_hit_through_check_predictions():
    """The whole verdict path at the boundary: a measured 150.0 µs against [100, 150]."""
    from attnscope.analysis.predict import check_predictions

    r = {
        "variant": "v",
        "status": "ok",
        "device_kind": "gpu",
        "gpu_time_us": 150.0,
        "gpu_time": None,
        "insights": [],
    }
    # A timed value is judged with its noise band (at least ±2% of the median on a GPU: 147.06–153.0 µs):
    # at its bound it is too close to call; a bound the whole band clears is a hit or a miss.
    (hit,) = check_predictions([Prediction("v", "gpu_us", [100.0, 153.0])], [r])
    (close,) = check_predictions([Prediction("v", "gpu_us", [100.0, 150.0])], [r])
    (close2,) = check_predictions([Prediction("v", "gpu_us", [100.0, 149.99])], [r])
    (miss,) = check_predictions([Prediction("v", "gpu_us", [100.0, 147.0])], [r])
    assert (hit.outcome, hit.measured) == ("hit", 150.0)
    assert close.outcome == close2.outcome == "close"
    assert (miss.outcome, miss.measured) == ("miss", 150.0)


# ---- the main kernel ----------------------------------------------------------------------------


def test_main_kernel_is_the_longest_compute_kernel_not_the_first():
    """Kernels in start order: a 5 µs elementwise, the 80 µs attention kernel, a 200 µs DtoD
    memcpy (not compute), a 10 µs reduction.  The main kernel is the attention kernel, and the
    occupancy a prediction is checked against is its 12.5 %."""
    from attnscope.analysis.predict import measured_value
    from attnscope.analysis.rules.insights import main_kernel

    ks = [
        {"name": "elementwise", "category": "elementwise", "duration_us": 5.0, "theoretical_occupancy_pct": 100.0},
        {"name": "flash_fwd", "category": "attention", "duration_us": 80.0, "theoretical_occupancy_pct": 12.5},
        {"name": "Memcpy DtoD", "category": "memcpy", "duration_us": 200.0, "theoretical_occupancy_pct": None},
        {"name": "reduce", "category": "reduction", "duration_us": 10.0, "theoretical_occupancy_pct": 50.0},
    ]
    r = {"variant": "v", "kernels": ks}
    k = main_kernel(r)
    assert k is not None and k["name"] == "flash_fwd"
    assert measured_value("occupancy_pct", [10, 15], r, {}) == 12.5
    assert main_kernel({"variant": "v", "kernels": [ks[2]]}) is None  # a memcpy alone is no compute kernel
