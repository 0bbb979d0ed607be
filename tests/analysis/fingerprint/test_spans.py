"""Spans' runs and the length of their union, on hand-made spans; every expected value worked by hand in the test."""

from __future__ import annotations

import pytest

from attnscope.analysis.fingerprint.spans import runs, union_length


def test_no_spans_have_no_runs_and_no_length():
    assert list(runs([])) == []
    assert list(runs(iter([]))) == []
    assert union_length([]) == 0.0
    assert isinstance(union_length([]), float)


def test_one_span_is_one_run():
    assert list(runs([(2.0, 7.0)])) == [(0, 2.0, 7.0)]
    assert union_length([(2.0, 7.0)]) == 5.0


def test_disjoint_spans_are_runs_of_their_own():
    # [0, 1], [3, 4.5], [10, 12]: 1 + 1.5 + 2 = 4.5
    spans = [(0.0, 1.0), (3.0, 4.5), (10.0, 12.0)]
    assert list(runs(spans)) == [(0, 0.0, 1.0), (1, 3.0, 4.5), (2, 10.0, 12.0)]
    assert union_length(spans) == 4.5


def test_overlapping_spans_count_their_shared_time_once():
    # [0, 10] and [5, 15] cover [0, 15]: 15, not 10 + 10 = 20
    assert list(runs([(0.0, 10.0), (5.0, 15.0)])) == [(0, 0.0, 15.0)]
    assert union_length([(0.0, 10.0), (5.0, 15.0)]) == 15.0


def test_a_nested_span_adds_nothing_and_does_not_shorten_its_run():
    # [0, 20] holds [5, 8]: the run ends at 20 (the later span's end, 8, does not pull it back); then [30, 31]
    spans = [(0.0, 20.0), (5.0, 8.0), (30.0, 31.0)]
    assert list(runs(spans)) == [(0, 0.0, 20.0), (2, 30.0, 31.0)]
    assert union_length(spans) == 21.0


def test_touching_spans_are_one_run():
    # [0, 4] then [4, 6]: the second starts where the first ends, no gap between: one run [0, 6]
    assert list(runs([(0.0, 4.0), (4.0, 6.0)])) == [(0, 0.0, 6.0)]
    # a gap of 0.5 splits them: [0, 4] and [4.5, 6]
    assert list(runs([(0.0, 4.0), (4.5, 6.0)])) == [(0, 0.0, 4.0), (1, 4.5, 6.0)]
    assert union_length([(0.0, 4.0), (4.0, 6.0)]) == 6.0


def test_a_run_reaches_the_latest_end_of_its_spans():
    # [0, 10], [2, 3], [9, 12], [11, 11.5], [12, 13]: [2, 3] inside, [9, 12] extends to 12, [11, 11.5] inside,
    # [12, 13] touches: one run [0, 13]; [20, 21] starts after it
    spans = [(0.0, 10.0), (2.0, 3.0), (9.0, 12.0), (11.0, 11.5), (12.0, 13.0), (20.0, 21.0)]
    assert list(runs(spans)) == [(0, 0.0, 13.0), (5, 20.0, 21.0)]
    assert union_length(spans) == 14.0


def test_spans_with_the_same_start_are_in_start_order_either_way():
    # [0, 2] and [0, 5] start together: one run [0, 5] whichever comes first
    assert list(runs([(0.0, 2.0), (0.0, 5.0)])) == [(0, 0.0, 5.0)]
    assert list(runs([(0.0, 5.0), (0.0, 2.0)])) == [(0, 0.0, 5.0)]


def test_zero_length_spans():
    # a zero-length span alone is a run of length 0; one inside a run adds nothing; one on a run's end touches it
    assert list(runs([(3.0, 3.0)])) == [(0, 3.0, 3.0)]
    assert union_length([(3.0, 3.0)]) == 0.0
    spans = [(0.0, 4.0), (2.0, 2.0), (4.0, 4.0), (7.0, 7.0), (9.0, 10.0)]
    # runs: [0, 4] (with [2, 2] and [4, 4]), [7, 7], [9, 10]
    assert list(runs(spans)) == [(0, 0.0, 4.0), (3, 7.0, 7.0), (4, 9.0, 10.0)]
    assert union_length(spans) == 5.0


def test_union_length_takes_spans_in_any_order():
    # the spans of the nested test, shuffled, and a generator: [0, 20] ∪ [30, 31] = 21
    assert union_length([(30.0, 31.0), (5.0, 8.0), (0.0, 20.0)]) == 21.0
    assert union_length(iter([(5.0, 15.0), (0.0, 10.0)])) == 15.0
    assert union_length(s for s in [(4.0, 6.0), (0.0, 4.0)]) == 6.0


def test_runs_refuses_spans_out_of_start_order():
    # [0, 10] then [-1, 5]: the second starts before the first, inside its run: the caller did not sort
    with pytest.raises(ValueError) as e:
        list(runs([(0.0, 10.0), (-1.0, 5.0)]))
    assert str(e.value) == "span 1 starts at -1.0, before span 0 (0.0): spans must come by start"
    # [0, 10], [5, 6], [4, 7]: the third starts before the second (4 < 5), though after the run's start
    with pytest.raises(ValueError) as e:
        list(runs([(0.0, 10.0), (5.0, 6.0), (4.0, 7.0)]))
    assert str(e.value) == "span 2 starts at 4.0, before span 1 (5.0): spans must come by start"


def test_runs_reads_its_spans_once_as_they_come():
    """A generator of spans is read once (one pass, no list of them made); the runs come before the spans end."""
    read: list[int] = []

    def gen():
        for k, sp in enumerate([(0.0, 1.0), (2.0, 3.0), (2.5, 4.0), (9.0, 9.5)]):
            read.append(k)
            yield sp

    it = runs(gen())
    assert next(it) == (0, 0.0, 1.0)
    assert read == [0, 1]  # the first run is known once the second span starts after it
    assert list(it) == [(1, 2.0, 4.0), (3, 9.0, 9.5)]
    assert read == [0, 1, 2, 3]


def test_union_sums_run_lengths_in_start_order():
    """One subtraction per run, added to 0.0 in start order: runs [0, 0.1] and [1, 1.2] (1.2 - 1 is
    0.19999999999999996 in binary floating point) give 0.1 + (1.2 - 1), as the breakdown's busy time always summed."""
    expected = 0.0
    expected += 0.1 - 0.0
    expected += 1.2 - 1.0
    assert union_length([(1.0, 1.2), (0.0, 0.1)]) == expected
