"""Host sampler, graph/stream bookkeeping and the footnote that says which GPU time is shown (no GPU)."""

from __future__ import annotations

import gc
import os
import time

import pytest

from attnscope.core.types import Timing
from attnscope.measure import timing as measure
from attnscope.measure.timing import _iterations, _waits_inside, launch_overhead, summarise
from attnscope.report.text.table import footnotes


def _t(median: float) -> Timing:
    return Timing(median, median, median, median, 1, "test")


def test_batched_host_sampler_divides_each_batch_by_its_calls() -> None:
    calls = []

    def fn() -> None:
        calls.append(1)
        time.sleep(200e-6)  # sleeps at least this long: a lower bound on every per-call sample

    t = measure.time_host_batched(fn, cuda=False, budget_s=0.05, calls_per_sample=4, lo=5, hi=5)
    assert t.num_samples == 5
    assert len(calls) == 3 + 5 * 4  # three probe calls (the fastest sizes the batch), then 5 batches of 4
    assert t.min_us >= 200.0
    assert t.median_us < 4 * 200.0 + 2000.0  # not the whole batch's time
    assert "batches of 4 calls" in t.method


@pytest.fixture
def fake_device(monkeypatch):
    """torch.cuda's synchronize and the event drain replaced: a 'device' whose queue the fake calls fill."""
    torch = pytest.importorskip("torch")
    state = {"queued": 0, "drains": 0}

    def drain() -> None:
        state["queued"] = 0
        state["drains"] += 1

    monkeypatch.setattr(torch.cuda, "synchronize", drain)
    monkeypatch.setattr(measure, "_spin_drain", drain)
    return state


def _busy(us: float) -> None:
    end = time.perf_counter() + us * 1e-6
    while time.perf_counter() < end:
        pass


def test_host_time_on_cuda_is_batched_to_about_a_millisecond_a_sample(fake_device) -> None:
    def fn() -> None:  # 40 µs of host work, never waits for the device
        fake_device["queued"] += 1
        _busy(40)

    t = measure.time_host_cuda(fn, budget_s=0.2)
    calls = int(t.method.split("batches of ")[1].split()[0])
    assert 1000 / 40 * 0.5 <= calls <= 1000 / 40 * 1.2  # ~25 calls of 40 µs in a 1 ms sample (first call slower)
    assert "the last allowed core pinned" in t.method and "spinning on an event" in t.method
    assert 40 <= t.median_us < 80


def test_a_call_that_waits_for_the_device_inside_is_timed_one_call_per_sample(fake_device) -> None:
    def fn() -> None:  # waits for everything queued before it: 100 µs of "device" per earlier call
        _busy(20 + 100 * fake_device["queued"])
        fake_device["queued"] += 1

    t = measure.time_host_cuda(fn, budget_s=0.2)
    assert "batches" not in t.method and "waits for the device inside it" in t.method
    assert t.median_us < 100  # one call after a drain: its own 20 µs, not its batch's queue
    ratio = float(t.method.split("took ")[1].split("×")[0])
    assert ratio > measure.WAITS_INSIDE_RATIO


def test_slow_first_batches_on_a_newly_pinned_core_are_no_reason_to_fall_back(fake_device, monkeypatch) -> None:
    """The first calls after pinning run cold (seen on the H200): 3 of the probe's 5 batches slow, 2 fast."""
    import contextlib

    state = {"cold": 0}
    real = measure.quiet_host

    @contextlib.contextmanager
    def cold_start(core: str = "first"):
        with real(core):
            state["cold"] = 3 + 3 * 5  # the three sizing calls, then three batches of five
            yield

    monkeypatch.setattr(measure, "quiet_host", cold_start)

    def fn() -> None:
        if state["cold"] > 0:
            state["cold"] -= 1
            _busy(150)
        else:
            _busy(40)

    t = measure.time_host_cuda(fn, budget_s=0.2)
    assert "batches of" in t.method and "waits for the device" not in t.method
    assert 40 <= t.median_us < 80


def test_on_the_cpu_the_batched_sampler_never_pins() -> None:
    before = os.sched_getaffinity(0) if hasattr(os, "sched_getaffinity") else None
    seen = []

    def fn() -> None:
        if before is not None:
            seen.append(len(os.sched_getaffinity(0)))

    t = measure.time_host_batched(fn, cuda=False, budget_s=0.01, core="last", lo=3, hi=3)
    assert "no pinning" in t.method
    if before is not None:
        assert set(seen) == {len(before)}


def test_quiet_host_restores_gc_and_affinity() -> None:
    before = os.sched_getaffinity(0) if hasattr(os, "sched_getaffinity") else None
    assert gc.isenabled()
    with measure.quiet_host():
        assert not gc.isenabled()
        if before is not None:
            assert len(os.sched_getaffinity(0)) == 1
    assert gc.isenabled()
    if before is not None:
        assert os.sched_getaffinity(0) == before


def test_launch_overhead_is_stream_minus_device() -> None:
    # The H200 numbers for flash at B1 H8 S512 D64: 14.7 µs stream, 11.0 µs graph replay.
    la = measure.launch_overhead(_t(14.7), _t(11.0))
    assert la is not None
    assert la["launch_gap_us"] == pytest.approx(3.7)
    assert la["launch_gap_pct"] == pytest.approx(100 * 3.7 / 14.7, abs=0.01)
    assert measure.launch_overhead(_t(14.7), None) is None


def test_footnote_names_the_gpu_column_and_the_graph_time() -> None:
    la = measure.launch_overhead(_t(35.0), _t(30.2))
    doc = {
        "results": [
            {"variant": "naive", "status": "ok", "source": "run", "gpu_time_graph": {}, "launch": la},
            {"variant": "flex", "status": "ok", "source": "run", "gpu_time_graph": None, "gpu_time_graph_why": "nope"},
        ]
    }
    lines = footnotes(doc)
    assert any(line.startswith("GPU µs is stream time per call") for line in lines)
    assert any("naive: device 30.2 µs, stream 35.0 µs, launch/gap overhead 4.8 µs (13.7%)" in line for line in lines)
    assert any("flex: nope" in line for line in lines)


def test_graph_slower_than_stream_is_not_called_launch_overhead() -> None:
    # naive at B4 H16 S2048 D64 on the H200: stream 2254.8 µs, graph replay 2385.0 µs (graph_check.json)
    la = measure.launch_overhead(_t(2254.8), _t(2385.0))
    assert la is not None and la["launch_gap_us"] < 0 and "no launch overhead" in la["what"]
    doc = {"results": [{"variant": "naive", "status": "ok", "source": "run", "gpu_time_graph": {}, "launch": la}]}
    assert any("graph replay slower than the stream" in line for line in footnotes(doc))


# The pure parts of attnscope/measure.py that mutation testing found unpinned: the timing summary at two
# samples, the iteration count from a budget, the launch-overhead record and the host timer's note when a call
# waits inside.  Every expected value is worked by hand in the docstring (no CUDA needed).


def _t_s(median: float, lo: float | None = None, method: str = "m") -> Timing:
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
    got = launch_overhead(_t_s(100.12341), _t_s(90.06782))
    assert got == {
        "stream_us": 100.123,
        "device_us": 90.068,
        "launch_gap_us": 10.056,
        "launch_gap_pct": 10.04,
        "what": GAP_WHAT,
    }


def test_launch_overhead_at_no_gap_a_small_gap_and_a_slower_replay():
    """gap 0 (equal times) and 0.5 µs are launch overhead (0 and 0.5 % of 100 µs); replay 2 µs slower is not."""
    assert launch_overhead(_t_s(100.0), _t_s(100.0))["what"] == GAP_WHAT
    half = launch_overhead(_t_s(100.0), _t_s(99.5))
    assert (half["launch_gap_us"], half["launch_gap_pct"], half["what"]) == (0.5, 0.5, GAP_WHAT)
    slower = launch_overhead(_t_s(100.0), _t_s(102.0))
    assert (slower["launch_gap_us"], slower["launch_gap_pct"], slower["what"]) == (-2.0, -2.0, SLOWER_WHAT)


def test_launch_overhead_share_of_a_zero_and_of_a_sub_microsecond_stream_time():
    """Stream 0 µs: no share (no division); stream 0.5 µs, device 0.25 µs: 50 %."""
    assert launch_overhead(_t_s(0.0), _t_s(0.0))["launch_gap_pct"] is None
    assert launch_overhead(_t_s(0.5), _t_s(0.25))["launch_gap_pct"] == 50.0
    assert launch_overhead(None, _t_s(1.0)) is None and launch_overhead(_t_s(1.0), None) is None


def test_a_call_that_waits_inside_says_how_much_slower_its_fastest_batch_was():
    """single-call median 10 µs, fastest batch 25 µs per call: 25 / 10 = 2.5×."""
    got = _waits_inside(_t_s(10.0, method="one call"), _t_s(30.0, lo=25.0))
    assert got.method == (
        "one call (back-to-back, even the fastest batch took 2.5× longer per call: the call waits for the device "
        "inside it)"
    )
    assert (got.median_us, got.num_samples) == (10.0, 9)


def test_copy_bandwidth_is_twice_the_bytes_over_the_median_of_the_one_timing_loop(monkeypatch):
    """The tour's copy bandwidth is timed by time_host on a CPU (the one timing loop): with every call timed at
    exactly 2,000 µs (a stub clock), 4 MiB copied read + written → 2 × 4,194,304 B ÷ 0.002 s = 4,194,304,000 B/s."""
    from attnscope.measure import timing

    ticks = iter(range(0, 10**9, 2000))  # perf_counter in µs steps of 2,000: each call measures 2,000 µs
    monkeypatch.setattr(timing.time, "perf_counter", lambda: next(ticks) * 1e-6)
    bw, how = timing.copy_bandwidth("cpu", 4 * 2**20, budget_s=0.02)
    assert bw == pytest.approx(2 * 4 * 2**20 / 0.002)
    assert how.startswith("device copy of 4 MiB, 2×bytes (read + write) ÷ median; wall time per call, median of 10")
