"""Host sampler, graph/stream bookkeeping and the footnote that says which GPU time is shown (no GPU)."""

from __future__ import annotations

import gc
import os
import time

import pytest

from attnscope.core.types import Timing
from attnscope.measure import timing as measure
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
