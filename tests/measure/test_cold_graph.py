"""Cold-L2 graph replay without a GPU: how many input copies, which figure a row carries, and the footnote.
Every expected number is worked by hand in the test."""

from __future__ import annotations

import pytest

from attnscope.core.types import Timing
from attnscope.measure import timing as measure
from attnscope.measure.timing import graph_calls, graph_choice, rotation_copies
from attnscope.report.text.table import footnotes

MIB = 1 << 20


def _t(median: float) -> Timing:
    return Timing(median, median, median, median, 5, "graph")


@pytest.mark.parametrize(
    ("ws_mib", "l2_mib", "want"),
    [
        (8, 50, 13),  # 2·50 = 100 MiB; ⌊100/8⌋ + 1 = 13 copies, 104 MiB > 100 MiB (12 would be 96)
        (10, 50, 11),  # ⌊100/10⌋ + 1 = 11: 110 MiB; 10 copies are exactly 100 MiB, not more than 2× the L2
        (49, 50, 3),  # ⌊100/49⌋ + 1 = 3: 147 MiB; 2 copies are 98 MiB
        (99, 50, 2),
        (100, 50, 1),  # one set is 2× the L2 already: warm = cold
        (268, 60, 1),  # decode KV 8k B8: 268 MiB against an H200's 60 MiB L2
    ],
)
def test_the_fewest_copies_whose_bytes_exceed_twice_the_l2(ws_mib, l2_mib, want):
    n, why = rotation_copies(ws_mib * MIB, l2_mib * MIB)
    assert n == want
    assert n * ws_mib > 2 * l2_mib or n == 1
    if n == 3:
        assert why.endswith("each call's inputs were last used 2 calls earlier")
    assert n == 1 or (n - 1) * ws_mib <= 2 * l2_mib  # the fewest
    assert ("warm = cold" in why) is (n == 1)


def test_copies_are_capped_by_the_count_and_the_spare_memory():
    # 1 MiB against 50 MiB: 101 copies wanted; 64 at most, then "partly warm"
    n, why = rotation_copies(1 * MIB, 50 * MIB)
    assert n == 64 and "capped at 64" in why and "101 copies" in why and "partly warm" in why
    # 10 MiB, spare memory 35 MiB: 3 copies fit (30 MiB), not the 11 wanted
    n, why = rotation_copies(10 * MIB, 50 * MIB, spare_bytes=35 * MIB)
    assert n == 3 and "capped at 3" in why
    # spare memory below one copy: still 1 (the call's own inputs)
    assert rotation_copies(10 * MIB, 50 * MIB, spare_bytes=MIB)[0] == 1


def test_unknown_sizes_measure_warm_only():
    assert rotation_copies(None, 50 * MIB) == (
        1,
        "working set unknown: one set of inputs, the cold figure is not measured",
    )
    assert rotation_copies(8 * MIB, None)[0] == 1 and "L2 size unknown" in rotation_copies(8 * MIB, None)[1]
    assert rotation_copies(0, 50 * MIB)[0] == 1


def test_the_rotation_says_the_copies_and_their_bytes():
    _, why = rotation_copies(8 * MIB, 50 * MIB)
    assert (
        why == "13 copies × 8.0 MiB = 104.0 MiB > 2 × L2 (50.0 MiB): each call's inputs were last used 12 calls earlier"
    )


def test_cold_is_used_wherever_it_was_measured():
    warm, cold = _t(10.0), _t(13.0)
    assert graph_choice(warm, cold, 13) == (cold, "cold")
    assert graph_choice(warm, None, 13) == (warm, "warm")  # the cold replay failed
    assert graph_choice(warm, cold, 1) == (warm, "warm")


def test_a_replay_holds_enough_calls_for_its_sample_and_one_per_copy():
    assert graph_calls(10.0, 2000.0) == 200  # 2000 µs / 10 µs
    assert graph_calls(0.5, 2000.0) == 1000  # at most 1000
    assert graph_calls(5000.0, 2000.0) == 1  # at least one
    assert graph_calls(5000.0, 2000.0, copies=13) == 13  # every copy used once per replay
    assert graph_calls(10.0, 2000.0, copies=13) == 200


def test_time_graphs_rotates_through_fresh_copies_and_keeps_both(monkeypatch):
    """With time_graph replaced by a fake: the warm replay gets the call alone, the cold one the call and
    n − 1 = 12 copies (8 MiB against 50 MiB: 13), and the row carries cold."""
    seen = []

    def fake(fn, *, budget_s, rotate=None, **kw):
        seen.append(rotate)
        return (_t(13.0) if rotate else _t(10.0)), None

    monkeypatch.setattr(measure, "time_graph", fake)
    made = []

    def copy():
        made.append(1)
        return lambda: len(made)

    def call():
        return 0

    used, why, both = measure.time_graphs(call, copy, budget_s=0.1, working_set_bytes=8 * MIB, l2_bytes=50 * MIB)
    assert why is None and used == _t(13.0)
    assert seen[0] is None and len(seen[1]) == 13 and seen[1][0] is call and len(made) == 12
    assert both.graph_used == "cold" and both.copies == 13
    assert both.graph_warm == _t(10.0) and both.graph_cold == _t(13.0)
    assert both.working_set_bytes == 8 * MIB and both.l2_bytes == 50 * MIB


def test_time_graphs_keeps_warm_when_copying_fails_or_is_not_needed(monkeypatch):
    monkeypatch.setattr(measure, "time_graph", lambda fn, *, budget_s, rotate=None, **kw: (_t(10.0), None))

    def broken():
        raise RuntimeError("out of memory")

    used, _, both = measure.time_graphs(lambda: 0, broken, budget_s=0.1, working_set_bytes=8 * MIB, l2_bytes=50 * MIB)
    assert used == _t(10.0) and both.graph_used == "warm" and both.graph_cold is None and both.copies == 1
    assert "cold replay failed (RuntimeError: out of memory): the warm figure is used" in both.rotation
    used, _, both = measure.time_graphs(lambda: 0, None, budget_s=0.1, working_set_bytes=8 * MIB, l2_bytes=50 * MIB)
    assert both.graph_used == "warm" and "no way to copy" in both.rotation
    used, _, both = measure.time_graphs(lambda: 0, broken, budget_s=0.1, working_set_bytes=200 * MIB, l2_bytes=50 * MIB)
    assert both.graph_cold is None and both.copies == 1 and "warm = cold" in both.rotation


def test_time_graphs_passes_on_a_call_that_cannot_be_captured(monkeypatch):
    monkeypatch.setattr(measure, "time_graph", lambda fn, *, budget_s, rotate=None, **kw: (None, "not capturable"))
    assert measure.time_graphs(lambda: 0, None, budget_s=0.1, working_set_bytes=1, l2_bytes=1) == (
        None,
        "not capturable",
        None,
    )


def test_the_footnote_says_which_graph_figure_a_row_carries():
    la = measure.launch_overhead(_t(14.0), _t(10.0))
    timing = {
        "graph_warm": {"median_us": 10.0},
        "graph_cold": {"median_us": 13.0},
        "graph_used": "cold",
        "rotation": "13 copies",
    }
    doc = {
        "results": [
            {
                "variant": "sdpa_flash",
                "status": "ok",
                "source": "run",
                "gpu_time_graph": {},
                "launch": la,
                "timing": timing,
            }
        ]
    }
    lines = footnotes(doc)
    assert any(
        "graph figure used: cold L2 13.0 µs (13 copies); warm L2 (the same inputs every call) 10.0 µs, cold/warm 1.30"
        in line
        for line in lines
    )
    doc["results"][0]["timing"] = {"graph_used": "warm", "rotation": "warm = cold"}
    assert any("graph figure used: warm (warm = cold)" in line for line in footnotes(doc))


def test_the_working_set_counts_inputs_and_outputs():
    torch = pytest.importorskip("torch")
    from attnscope.execute.worker import working_set_bytes
    from attnscope.variants import Inputs

    q = torch.zeros(1, 8, 1, 128, dtype=torch.bfloat16)  # 2 KiB
    kv = torch.zeros(1, 8, 2048, 128, dtype=torch.bfloat16)  # 4 MiB each
    # q 2 KiB + k 4 MiB + v 4 MiB + the output (q's size) 2 KiB
    assert working_set_bytes(Inputs(q, kv, kv, 1.0)) == 2 * 2048 + 8 * MIB
    # fwd_bwd: dO (2 KiB) read, and dq, dk, dv written (2 KiB + 8 MiB) on top
    assert working_set_bytes(Inputs(q, kv, kv, 1.0, grad_out=q)) == 2 * 2048 + 8 * MIB + 2048 + (2048 + 8 * MIB)


def test_a_copy_of_the_inputs_is_the_same_values_in_fresh_memory():
    torch = pytest.importorskip("torch")
    from attnscope.execute.worker import _copy_inputs
    from attnscope.variants import Inputs

    q = torch.randn(1, 2, 4, 8, requires_grad=True)
    k = torch.randn(1, 2, 4, 8)
    x = Inputs(q, k, k, 0.5, grad_out=torch.ones(1, 2, 4, 8))
    c = _copy_inputs(x)
    assert torch.equal(c.q, q) and torch.equal(c.k, k) and torch.equal(c.grad_out, x.grad_out)
    assert c.q.data_ptr() != q.data_ptr() and c.k.data_ptr() != k.data_ptr()
    assert c.q.requires_grad and not c.k.requires_grad and c.scale == 0.5
    assert _copy_inputs(Inputs(q, k, k, 1.0)).grad_out is None


def test_slow_copies_stop_at_the_preparation_budget(monkeypatch):
    """Each copy 'takes' 4 s on a fake clock: after the second copy (8 s) the third passes 10 s, so the
    rotation stops at 1 + 3 = 4 of the 13 copies wanted, and says so."""
    monkeypatch.setattr(
        measure, "time_graph", lambda fn, *, budget_s, rotate=None, **kw: (_t(12.0 if rotate else 10.0), None)
    )
    clock = [0.0]
    monkeypatch.setattr(measure.time, "perf_counter", lambda: clock[0])

    def copy():
        clock[0] += 4.0
        return lambda: 0

    _, _, both = measure.time_graphs(lambda: 0, copy, budget_s=0.1, working_set_bytes=8 * MIB, l2_bytes=50 * MIB)
    assert both.copies == 4 and both.graph_used == "cold"
    assert "preparing the copies took over 10 s: stopped at 4 of 13, the cold figure is partly warm" in both.rotation


# Tests written for the survivors of mutation testing: boundaries, exact words and what time_graphs passes on.


def test_rotation_at_the_smallest_sizes_and_exact_words():
    # L2 1 B, working set 1 B: 2 × 1 = 2 B; ⌊2/1⌋ + 1 = 3 copies
    assert rotation_copies(1, 1)[0] == 3
    assert rotation_copies(8 * MIB, 0) == (1, "L2 size unknown: one set of inputs, the cold figure is not measured")
    assert rotation_copies(100 * MIB, 50 * MIB) == (
        1,
        "the working set (100.0 MiB) is at least 2× the L2 (50.0 MiB): every call streams it from DRAM already, one "
        "set of inputs (warm = cold)",
    )


def test_a_cap_equal_to_the_copies_wanted_is_no_cap():
    # 10 MiB against 50 MiB: 11 wanted; 110 MiB spare hold exactly 11
    n, why = rotation_copies(10 * MIB, 50 * MIB, spare_bytes=110 * MIB)
    assert n == 11 and why.startswith("11 copies × 10.0 MiB = 110.0 MiB > 2 × L2")
    n, why = rotation_copies(1 * MIB, 50 * MIB)
    assert why == (
        "101 copies of 1.0 MiB would exceed 2× the L2 (50.0 MiB); capped at 64 (64.0 MiB): the cold figure is "
        "partly warm"
    )


def test_two_copies_are_cold_and_a_replay_of_small_calls():
    warm, cold = _t(10.0), _t(13.0)
    assert graph_choice(warm, cold, 2) == (cold, "cold")
    assert graph_calls(0.5, 100.0) == 200  # 100 µs / 0.5 µs


def test_time_graphs_passes_the_call_the_budget_and_the_sampler_on(monkeypatch):
    sampler = object()
    seen = []

    def fake(fn, *, budget_s, rotate=None, sampler=None):
        seen.append((fn, budget_s, sampler, rotate))
        return (_t(13.0) if rotate else _t(10.0)), None

    monkeypatch.setattr(measure, "time_graph", fake)

    def call():
        return 0

    # 99 MiB against 50 MiB: 2 copies; spare 35 MiB caps 10 MiB at 3 copies
    _, _, both = measure.time_graphs(
        call, lambda: lambda: 1, budget_s=0.25, working_set_bytes=99 * MIB, l2_bytes=50 * MIB, sampler=sampler
    )
    assert [(f, b, s) for f, b, s, _ in seen] == [(call, 0.25, sampler), (call, 0.25, sampler)]
    assert len(seen[1][3]) == 2 and both.copies == 2 and both.graph_used == "cold"
    seen.clear()
    _, _, both = measure.time_graphs(
        call, lambda: lambda: 1, budget_s=0.25, working_set_bytes=10 * MIB, l2_bytes=50 * MIB, spare_bytes=35 * MIB
    )
    assert both.copies == 3 and len(seen[1][3]) == 3


def test_time_graphs_adds_to_the_rotation_words_never_replaces_them(monkeypatch):
    monkeypatch.setattr(measure, "time_graph", lambda fn, *, budget_s, rotate=None, **kw: (_t(10.0), None))

    def broken():
        raise RuntimeError("y" * 200)

    _, _, both = measure.time_graphs(lambda: 0, broken, budget_s=0.1, working_set_bytes=8 * MIB, l2_bytes=50 * MIB)
    assert both.rotation == (
        "13 copies × 8.0 MiB = 104.0 MiB > 2 × L2 (50.0 MiB): each call's inputs were last used 12 calls earlier; "
        f"cold replay failed (RuntimeError: {'y' * 160}): the warm figure is used"
    )
    _, _, both = measure.time_graphs(lambda: 0, None, budget_s=0.1, working_set_bytes=99 * MIB, l2_bytes=50 * MIB)
    assert both.rotation == (
        "2 copies × 99.0 MiB = 198.0 MiB > 2 × L2 (50.0 MiB): each call's inputs were last used 1 call earlier; "
        "no way to copy this call's inputs: the warm figure is used"
    )
    _, _, both = measure.time_graphs(lambda: 0, None, budget_s=0.1, working_set_bytes=200 * MIB, l2_bytes=50 * MIB)
    assert "no way to copy" not in both.rotation  # one set is enough: nothing to copy


def _clocked(monkeypatch, step_s):
    monkeypatch.setattr(
        measure, "time_graph", lambda fn, *, budget_s, rotate=None, **kw: (_t(12.0 if rotate else 10.0), None)
    )
    clock = [0.0]
    monkeypatch.setattr(measure.time, "perf_counter", lambda: clock[0])

    def copy():
        clock[0] += step_s
        return lambda: 0

    return copy


def test_the_preparation_budget_at_its_bounds(monkeypatch):
    # 30 MiB against 50 MiB: 4 copies (3 made); 5 s each: 10 s after the second is not past 10 s
    copy = _clocked(monkeypatch, 5.0)
    _, _, both = measure.time_graphs(lambda: 0, copy, budget_s=0.1, working_set_bytes=30 * MIB, l2_bytes=50 * MIB)
    assert both.copies == 4 and "preparing" not in both.rotation
    # 49 MiB: 3 copies (2 made), 6 s each: past 10 s only once the last is made, which is no stop
    copy = _clocked(monkeypatch, 6.0)
    _, _, both = measure.time_graphs(lambda: 0, copy, budget_s=0.1, working_set_bytes=49 * MIB, l2_bytes=50 * MIB)
    assert both.copies == 3 and "preparing" not in both.rotation
    copy = _clocked(monkeypatch, 11.0)
    _, _, both = measure.time_graphs(lambda: 0, copy, budget_s=0.1, working_set_bytes=8 * MIB, l2_bytes=50 * MIB)
    assert both.rotation.startswith("13 copies × 8.0 MiB") and both.rotation.endswith(
        "; preparing the copies took over 10 s: stopped at 2 of 13, the cold figure is partly warm"
    )


def test_rms_by_hand():
    torch = pytest.importorskip("torch")
    assert measure.rms() == 0.0
    assert measure.rms(torch.tensor([3.0])) == 3.0
    assert measure.rms(torch.tensor([3.0]), torch.tensor([4.0, 0.0])) == pytest.approx((25 / 3) ** 0.5)
    # squares of 1e20 overflow fp32 (max 3.4e38): the sum is taken in fp64
    assert measure.rms(torch.tensor([1e20, 1e20], dtype=torch.float32)) == pytest.approx(1e20, rel=1e-6)


def test_the_error_of_a_large_fp32_reference_is_taken_in_fp64():
    torch = pytest.importorskip("torch")
    from attnscope.measure.timing import relative_error

    ref = torch.full((1, 1, 2, 2), 1e20, dtype=torch.float32)  # its norm's squares overflow in fp32
    assert relative_error(ref * 1.01, ref)[0] == pytest.approx(0.01, rel=1e-4)
