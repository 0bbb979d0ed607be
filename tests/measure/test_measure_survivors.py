"""The pure parts of attnscope/measure.py that mutation testing found unpinned: the timing summary at two
samples, the iteration count from a budget, the launch-overhead record and the host timer's note when a call
waits inside.  Every expected value is worked by hand in the docstring (no CUDA needed)."""

from __future__ import annotations

import pytest

from attnscope.core.types import Timing
from attnscope.measure.timing import _iterations, _waits_inside, launch_overhead, summarise


def _t(median: float, lo: float | None = None, method: str = "m") -> Timing:
    return Timing(median, median, median, median if lo is None else lo, 9, method)


def test_two_samples_get_inclusive_quartiles_not_the_single_sample_rule():
    """[20, 10] sorted [10, 20]; inclusive quartiles: 10 + 0.25·10 = 12.5, 10 + 0.75·10 = 17.5; median 15."""
    t = summarise([20.0, 10.0], "two")
    assert (t.median_us, t.p25_us, t.p75_us, t.min_us, t.num_samples, t.method) == (15.0, 12.5, 17.5, 10.0, 2, "two")


def test_one_sample_is_its_own_quartiles():
    t = summarise([7.0], "one")
    assert (t.median_us, t.p25_us, t.p75_us, t.min_us, t.num_samples) == (7.0, 7.0, 7.0, 7.0, 1)


@pytest.mark.parametrize(
    ("one_call_s", "budget_s", "want"),
    [
        (0.0, 10.0, 1000),  # a call too fast to time: the most iterations, no division by zero
        (0.5, 10.0, 20),  # 10 / 0.5 = 20, inside [1, 1000]
        (2.0, 10.0, 5),  # 10 / 2 = 5
        (20.0, 10.0, 1),  # 10 / 20 = 0.5 → 0, raised to the floor of 1
        (1e-6, 10.0, 1000),  # 10 / 1e-6 = 10^7, capped at 1000
    ],
)
def test_iterations_fill_the_budget_between_the_bounds(one_call_s, budget_s, want):
    assert _iterations(one_call_s, budget_s, 1, 1000) == want


GAP_WHAT = (
    "stream time (CUDA events around each call) minus device time (CUDA-graph replay): event overhead and launch "
    "gaps between kernels, not attention work"
)
SLOWER_WHAT = (
    "graph replay took longer than the stream time: no launch overhead to remove here (replay runs the call's "
    "allocations from the graph's own memory pool)"
)


def test_launch_overhead_rounds_to_three_decimals_and_the_share_to_two():
    """stream 100.12341, device 90.06782 µs: gap 10.05559 µs; rounded 100.123, 90.068, 10.056; share
    100 · 10.05559 / 100.12341 = 10.0432 % → 10.04."""
    got = launch_overhead(_t(100.12341), _t(90.06782))
    assert got == {
        "stream_us": 100.123,
        "device_us": 90.068,
        "launch_gap_us": 10.056,
        "launch_gap_pct": 10.04,
        "what": GAP_WHAT,
    }


def test_launch_overhead_at_no_gap_a_small_gap_and_a_slower_replay():
    """gap 0 (equal times) and 0.5 µs are launch overhead (0 and 0.5 % of 100 µs); replay 2 µs slower is not."""
    assert launch_overhead(_t(100.0), _t(100.0))["what"] == GAP_WHAT
    half = launch_overhead(_t(100.0), _t(99.5))
    assert (half["launch_gap_us"], half["launch_gap_pct"], half["what"]) == (0.5, 0.5, GAP_WHAT)
    slower = launch_overhead(_t(100.0), _t(102.0))
    assert (slower["launch_gap_us"], slower["launch_gap_pct"], slower["what"]) == (-2.0, -2.0, SLOWER_WHAT)


def test_launch_overhead_share_of_a_zero_and_of_a_sub_microsecond_stream_time():
    """Stream 0 µs: no share (no division); stream 0.5 µs, device 0.25 µs: 50 %."""
    assert launch_overhead(_t(0.0), _t(0.0))["launch_gap_pct"] is None
    assert launch_overhead(_t(0.5), _t(0.25))["launch_gap_pct"] == 50.0
    assert launch_overhead(None, _t(1.0)) is None and launch_overhead(_t(1.0), None) is None


def test_a_call_that_waits_inside_says_how_much_slower_its_fastest_batch_was():
    """single-call median 10 µs, fastest batch 25 µs per call: 25 / 10 = 2.5×."""
    got = _waits_inside(_t(10.0, method="one call"), _t(30.0, lo=25.0))
    assert got.method == (
        "one call (back-to-back, even the fastest batch took 2.5× longer per call: the call waits for the device "
        "inside it)"
    )
    assert (got.median_us, got.num_samples) == (10.0, 9)
