"""Timing, peak memory and numerical error of one prepared call.  Needs torch."""

from __future__ import annotations

import contextlib
import dataclasses
import gc
import math
import os
import statistics
import time
from collections.abc import Callable, Iterator
from typing import Any

from attnscope.core.types import GraphTiming, Timing
from attnscope.core.units import fmt_mib

L2_FLUSH_BYTES = 256 * 1024 * 1024  # larger than any current L2 (H200: 60 MB)

# torch.cuda._sleep spins in clock cycles; ~2 GHz SM clocks (H100/H200 boost ~1.98 GHz).
# Sleeping longer than needed only costs time, never accuracy.
SLEEP_CYCLES_PER_US = 2000

TOLERANCE = {"fp32": 1e-4, "fp16": 5e-3, "bf16": 2e-2}

# Cold-L2 graph replay: the calls rotate through copies of the inputs that together exceed this many L2s, so a
# call's inputs were evicted since its copy was last used (an LRU-like L2 keeps at most one L2 of them).
COLD_L2_FACTOR = 2.0
MAX_COPIES = 64  # preparing a variant per copy costs time: beyond this the cold figure is partly warm, and said
COPY_MEMORY_SHARE = 0.25  # of the free device memory, at most, for the copies
COPY_BUDGET_S = 10.0  # preparing the copies (a variant's prepare per copy) stops past this many seconds


def summarise(samples_us: list[float], method: str) -> Timing:
    s = sorted(samples_us)
    q = statistics.quantiles(s, n=4, method="inclusive") if len(s) >= 2 else [s[0]] * 3
    return Timing(
        median_us=statistics.median(s),
        p25_us=q[0],
        p75_us=q[2],
        min_us=s[0],
        num_samples=len(s),
        method=method,
    )


def _iterations(one_call_s: float, budget_s: float, lo: int, hi: int) -> int:
    if one_call_s <= 0:
        return hi
    return max(lo, min(hi, int(budget_s / one_call_s)))


def time_gpu(
    fn: Callable[[], Any],
    *,
    budget_s: float,
    flush_l2: bool,
    host_us: float | None = None,
    lo: int = 10,
    hi: int = 200,
    before: Callable[[], None] | None = None,
) -> Timing:
    """CUDA events around each call, after warm-up; median of many calls.  ``before`` runs ahead of
    every call, outside the timed region (a model's decode step restores its cache there).

    When the host takes longer to dispatch a call than the GPU takes to run it, the start
    event fires on an idle GPU and the sample counts host dispatch too.  Given the measured
    host time per call, each call is queued behind a GPU sleep longer than that, so the
    kernels are already waiting when the start event fires: the sample is device time only.
    """
    import torch

    flush = torch.empty(L2_FLUSH_BYTES, dtype=torch.uint8, device="cuda") if flush_l2 else None
    cycles = int((2.0 * host_us + 50.0) * SLEEP_CYCLES_PER_US) if host_us else 0
    if before:
        before()
    t0 = time.perf_counter()
    fn()
    torch.cuda.synchronize()
    n = _iterations(time.perf_counter() - t0, budget_s, lo, hi)
    starts = [torch.cuda.Event(enable_timing=True) for _ in range(n)]
    ends = [torch.cuda.Event(enable_timing=True) for _ in range(n)]
    for i in range(n):
        if before:
            before()
        if flush is not None:
            flush.zero_()
        if cycles:
            torch.cuda._sleep(cycles)
        starts[i].record()
        fn()
        ends[i].record()
    torch.cuda.synchronize()
    samples = [s.elapsed_time(e) * 1e3 for s, e in zip(starts, ends, strict=True)]
    method = f"CUDA events around each call, median of {n}"
    if cycles:
        method += ", each call queued behind a GPU sleep so host dispatch is not counted"
    if flush_l2:
        method += ", L2 flushed between calls"
    return summarise(samples, method)


def time_host(
    fn: Callable[[], Any],
    *,
    cuda: bool,
    budget_s: float,
    lo: int = 5,
    hi: int = 200,
    before: Callable[[], None] | None = None,
) -> Timing:
    """Host time per call.  On CUDA: the dispatch cost, with the device drained outside
    the timed region so a full launch queue never blocks the call.  On CPU: wall time.
    ``before`` runs ahead of every call, outside the timed region."""
    sync: Callable[[], None]
    if cuda:
        import torch

        sync = torch.cuda.synchronize
    else:

        def sync() -> None:
            return None

    if before:
        before()
    t0 = time.perf_counter()
    fn()
    sync()
    n = _iterations(time.perf_counter() - t0, budget_s, lo, hi)
    samples = []
    for _ in range(n):
        if before:
            before()
        sync()
        a = time.perf_counter()
        fn()
        b = time.perf_counter()
        samples.append((b - a) * 1e6)
    sync()
    what = "host time per call, no synchronize inside" if cuda else "wall time per call"
    return summarise(samples, f"{what}, median of {n}")


def copy_bandwidth(device: str, nbytes: int, budget_s: float = 0.3) -> tuple[float, str]:
    """Bytes per second of ``dst.copy_(src)`` for an ``nbytes`` float32 buffer, timed by :func:`time_gpu` on CUDA
    (no L2 flush: the tour's GPU buffer, 1 GiB, is far larger than any L2) or :func:`time_host` on a CPU: 2 × bytes
    (read + write) ÷ the median; and how, in words."""
    import torch

    n = max(1, nbytes // 4)
    src = torch.ones(n, dtype=torch.float32, device=device)
    dst = torch.empty_like(src)
    cuda = device.startswith("cuda")
    fn = lambda: dst.copy_(src)  # noqa: E731
    t = time_gpu(fn, budget_s=budget_s, flush_l2=False) if cuda else time_host(fn, cuda=False, budget_s=budget_s)
    how = f"device copy of {4 * n / 2**20:,.0f} MiB, 2×bytes (read + write) ÷ median; {t.method}"
    return 2 * 4 * n / (t.median_us * 1e-6), how


def cuda_peak_extra_bytes(fn: Callable[[], Any]) -> int:
    """Peak allocated during one call minus what was allocated before it."""
    import torch

    torch.cuda.synchronize()
    base = torch.cuda.memory_allocated()
    torch.cuda.reset_peak_memory_stats()
    out = fn()
    torch.cuda.synchronize()
    peak = torch.cuda.max_memory_allocated()
    del out
    return max(0, peak - base)


# A (batch, head) slice's norm is floored at the norm it would have if every element were this fraction of the
# call's RMS (all its reference outputs together): where the reference is zero or tiny (dq and dk when each query
# sees one key), the error becomes absolute error at a tenth of the result's scale, as torch.testing's atol bounds
# |out - ref| where |ref| is near 0, instead of rounding divided by float64's smallest number.
ERROR_FLOOR = 0.1


def rms(*tensors: Any) -> float:
    """Root mean square over every element of ``tensors`` together (fp64)."""
    import torch

    n = sum(t.numel() for t in tensors)
    if n == 0:
        return 0.0
    sq = sum(float(t.detach().to(torch.float64).square().sum()) for t in tensors)
    return math.sqrt(sq / n)


def relative_error(out: Any, ref: Any, scale: float | None = None) -> tuple[float, bool]:
    """max over (batch, head) of ‖out − ref‖ / max(‖ref‖, ERROR_FLOOR·scale·√n), and whether out has NaN/Inf.

    ``n``: the elements of one (batch, head) slice; ``scale``: the RMS the floor is scaled to (the call's
    reference outputs together; by default ``ref``'s own)."""
    import torch

    o = out.detach().to(torch.float64)
    nonfinite = not bool(torch.isfinite(o).all())
    if nonfinite:
        return float("inf"), True
    r = ref.to(torch.float64).flatten(2)
    num = (o.flatten(2) - r).norm(dim=-1)
    m = rms(ref) if scale is None else scale
    floor = ERROR_FLOOR * m * math.sqrt(r.shape[-1])
    den = r.norm(dim=-1).clamp_min(max(floor, torch.finfo(torch.float64).tiny))
    return float((num / den).max()), False


def _mib(n: float) -> str:
    return fmt_mib(n, grouped=True)  # the one size formatter: KiB below 1 MiB, never 0.0 MiB


def rotation_copies(
    working_set_bytes: int | None,
    l2_bytes: int | None,
    *,
    spare_bytes: int | None = None,
    factor: float = COLD_L2_FACTOR,
    max_copies: int = MAX_COPIES,
) -> tuple[int, str]:
    """How many copies of a call's inputs cold-L2 replay rotates through, and why: the fewest whose bytes
    together exceed ``factor`` × L2 (n = ⌊factor·L2 / working set⌋ + 1), 1 where one set already does or a size
    is unknown, at most ``max_copies`` and what ``spare_bytes`` holds (then the figure is partly warm, and said)."""
    if not l2_bytes or l2_bytes <= 0:
        return 1, "L2 size unknown: one set of inputs, the cold figure is not measured"
    if not working_set_bytes or working_set_bytes <= 0:
        return 1, "working set unknown: one set of inputs, the cold figure is not measured"
    target = factor * l2_bytes
    if working_set_bytes >= target:
        return 1, (
            f"the working set ({_mib(working_set_bytes)}) is at least {factor:g}× the L2 ({_mib(l2_bytes)}): every "
            "call streams it from DRAM already, one set of inputs (warm = cold)"
        )
    n = int(target // working_set_bytes) + 1
    cap = max_copies
    if spare_bytes is not None:
        cap = min(cap, max(1, int(spare_bytes // working_set_bytes)))
    if n > cap:
        return cap, (
            f"{n} copies of {_mib(working_set_bytes)} would exceed {factor:g}× the L2 ({_mib(l2_bytes)}); capped at "
            f"{cap} ({_mib(cap * working_set_bytes)}): the cold figure is partly warm"
        )
    return n, (
        f"{n} copies × {_mib(working_set_bytes)} = {_mib(n * working_set_bytes)} > {factor:g} × L2 "
        f"({_mib(l2_bytes)}): each call's inputs were last used {n - 1} call{'s' if n > 2 else ''} earlier"
    )


def graph_choice(warm: Timing | None, cold: Timing | None, copies: int) -> tuple[Timing | None, str]:
    """The graph figure a result carries: cold wherever it was measured (decode and small shapes, whose inputs
    fit in L2), else warm (one set of inputs already streams from DRAM: the two are the same measurement)."""
    if copies > 1 and cold is not None:
        return cold, "cold"
    return warm, "warm"


def time_graphs(
    fn: Callable[[], Any],
    copy: Callable[[], Callable[[], Any]] | None,
    *,
    budget_s: float,
    working_set_bytes: int | None,
    l2_bytes: int | None,
    spare_bytes: int | None = None,
    sampler: Any = None,
) -> tuple[Timing | None, str | None, GraphTiming | None]:
    """Warm and cold-L2 graph replay: (the figure used, why not capturable, both).  ``copy()`` makes the call
    again on a fresh copy of its inputs (prepared as the first was); without it, or where one set of inputs
    exceeds 2× the L2, only the warm figure is measured and used."""
    warm, why = time_graph(fn, budget_s=budget_s, sampler=sampler)
    if warm is None:
        return None, why, None
    n, rotation = rotation_copies(working_set_bytes, l2_bytes, spare_bytes=spare_bytes)
    cold = None
    if n > 1 and copy is not None:
        try:
            fns = [fn]
            t0 = time.perf_counter()
            while len(fns) < n:
                fns.append(copy())
                if len(fns) < n and time.perf_counter() - t0 > COPY_BUDGET_S:
                    rotation += (
                        f"; preparing the copies took over {COPY_BUDGET_S:g} s: stopped at {len(fns)} of {n}, the "
                        "cold figure is partly warm"
                    )
                    n = len(fns)
            cold, cwhy = time_graph(fn, budget_s=budget_s, rotate=fns, sampler=sampler)
            del fns
        except Exception as e:  # noqa: BLE001 - the warm figure stands; say why the cold one is missing
            cold, cwhy = None, f"{type(e).__name__}: {' '.join(str(e).split())[:160]}"
        if cold is None:
            rotation += f"; cold replay failed ({cwhy}): the warm figure is used"
    elif n > 1:
        rotation += "; no way to copy this call's inputs: the warm figure is used"
    used, which = graph_choice(warm, cold, n if cold is not None else 1)
    both = GraphTiming(
        graph_warm=warm,
        graph_cold=cold,
        graph_used=which,
        copies=n if cold is not None else 1,
        working_set_bytes=working_set_bytes,
        l2_bytes=l2_bytes,
        rotation=rotation,
    )
    return used, None, both


def time_graph(
    fn: Callable[[], Any],
    *,
    budget_s: float,
    min_sample_us: float = 2000.0,
    samples: int = 15,
    rotate: list[Callable[[], Any]] | None = None,
    sampler: Any = None,
) -> tuple[Timing | None, str | None]:
    """Device time per call by CUDA-graph replay: (timing, None), or (None, why not capturable).

    Several calls are captured into one graph so that one replay lasts at least
    ``min_sample_us``; a sample is the replay's event time divided by the calls in it.  Replay
    launches the whole graph at once, so what is left is the kernels and the gaps the GPU
    itself needs between them: no per-kernel launch from the host, no event per call.

    ``rotate``: calls on copies of the inputs (``fn``'s own first); call i of the graph is ``rotate[i mod n]``,
    and the graph holds at least one call per copy, so no call finds its inputs in L2 from the call before.
    ``sampler`` (attnscope.measure.device_state.Sampler): NVML sampled during the timed replays.
    """
    import torch

    fns = list(rotate) if rotate else [fn]
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    try:
        with torch.cuda.stream(side):
            for _ in range(2):  # capture needs the lazy inits and allocations done outside it
                for f in fns:
                    f()
        torch.cuda.current_stream().wait_stream(side)
        torch.cuda.synchronize()
        one = _capture(fns, len(fns))
        t = _replay_us(one, 3)
        per_call = min(t) / len(fns) if t else 0.0
        n_calls = graph_calls(per_call, min_sample_us, len(fns))
        del one
        graph = _capture(fns, n_calls)
    except (RuntimeError, torch.cuda.OutOfMemoryError) as e:  # capture refused: sync, host ops, allocator
        torch.cuda.synchronize()
        return None, "not capturable in a CUDA graph: " + " ".join(str(e).split())[:200]
    n = _iterations(per_call * n_calls * 1e-6, budget_s, 3, samples)
    with sampler.window(n * n_calls) if sampler is not None else contextlib.nullcontext():
        replays = _replay_us(graph, n)
    us = [s / n_calls for s in replays]
    del graph
    what = f"CUDA-graph replay of {n_calls} calls, per call, median of {n} replays"
    if len(fns) > 1:
        what += f", rotating through {len(fns)} copies of the inputs (cold L2)"
    return summarise(us, what), None


def graph_calls(per_call_us: float, min_sample_us: float, copies: int = 1) -> int:
    """Calls in one replay: enough for ``min_sample_us``, at most 1000, at least one per copy."""
    n = max(1, min(1000, int(min_sample_us / max(per_call_us, 1e-3))))
    return max(n, copies)


def _capture(fns: list[Callable[[], Any]], n_calls: int) -> Any:
    import torch

    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        for i in range(n_calls):
            fns[i % len(fns)]()
    torch.cuda.synchronize()
    return g


def _replay_us(graph: Any, n: int) -> list[float]:
    import torch

    graph.replay()  # the first replay uploads the graph
    torch.cuda.synchronize()
    starts = [torch.cuda.Event(enable_timing=True) for _ in range(n)]
    ends = [torch.cuda.Event(enable_timing=True) for _ in range(n)]
    for i in range(n):
        starts[i].record()
        graph.replay()
        ends[i].record()
    torch.cuda.synchronize()
    return [s.elapsed_time(e) * 1e3 for s, e in zip(starts, ends, strict=True)]


def launch_overhead(stream: Timing | None, graph: Timing | None) -> dict[str, Any] | None:
    """Stream time (events around each call) against device time (graph replay) per call."""
    if stream is None or graph is None:
        return None
    gap = stream.median_us - graph.median_us
    return {
        "stream_us": round(stream.median_us, 3),
        "device_us": round(graph.median_us, 3),
        "launch_gap_us": round(gap, 3),
        "launch_gap_pct": round(100.0 * gap / stream.median_us, 2) if stream.median_us > 0 else None,
        "what": "stream time (CUDA events around each call) minus device time (CUDA-graph replay): "
        "event overhead and launch gaps between kernels, not attention work"
        if gap >= 0
        else "graph replay took longer than the stream time: no launch overhead to remove here "
        "(replay runs the call's allocations from the graph's own memory pool)",
    }


@contextlib.contextmanager
def quiet_host(core: str = "first") -> Iterator[None]:
    """No garbage collection and, where the OS allows, one pinned core while host time is taken.

    ``core``: ``"first"`` or ``"last"`` of the allowed cores (the first is where a VM's device
    interrupts usually land), or ``"none"`` to leave the affinity alone."""
    was_gc = gc.isenabled()
    gc.collect()
    gc.disable()
    affinity = None
    if core != "none" and hasattr(os, "sched_getaffinity"):
        affinity = os.sched_getaffinity(0)
        with contextlib.suppress(OSError):
            os.sched_setaffinity(0, {min(affinity) if core == "first" else max(affinity)})
    try:
        yield
    finally:
        if affinity is not None:
            with contextlib.suppress(OSError):
                os.sched_setaffinity(0, affinity)
        if was_gc:
            gc.enable()


def time_host_batched(
    fn: Callable[[], Any],
    *,
    cuda: bool,
    budget_s: float,
    calls_per_sample: int = 10,
    lo: int = 15,
    hi: int = 300,
    spin: bool = False,
    core: str = "first",
    target_sample_us: float | None = None,
    max_calls_per_sample: int = 64,
) -> Timing:
    """Host time per call from batches of back-to-back calls, gc off, pinned to one core.

    A sample is one batch's wall time over its calls: a single descheduling or cache miss is
    spread over the batch instead of deciding a sample.  On CUDA the device is drained before
    each batch only, never inside it; a batch of 10 fused calls stays far below the launch
    queue's depth, so no call waits for the GPU.  ``target_sample_us``: size the batch from one
    call's host time so that a sample lasts about that long (1 to ``max_calls_per_sample`` calls)."""
    sync: Callable[[], None] = _spin_drain if (cuda and spin) else _sync_for(cuda)
    if not cuda:
        core = "none"  # on the CPU the call's own intra-op threads need the other cores
    with quiet_host(core):
        sync()
        t0 = time.perf_counter()
        host_s = math.inf
        for _ in range(3):  # the fastest of three: the first call on a newly pinned core runs cold
            a = time.perf_counter()
            fn()
            host_s = min(host_s, time.perf_counter() - a)
        sync()
        whole_s = (time.perf_counter() - t0) / 3  # the batch's size from the host time, its count from both
        if target_sample_us is not None:
            calls_per_sample = max(1, min(max_calls_per_sample, math.ceil(target_sample_us / max(host_s * 1e6, 1e-3))))
        n = _iterations(whole_s * calls_per_sample, budget_s, lo, hi)
        samples: list[float] = []
        deadline = time.perf_counter() + 2 * budget_s  # a batch far slower than its first call: stop early
        for _ in range(n):
            if len(samples) >= 3 and time.perf_counter() > deadline:
                break
            sync()
            a = time.perf_counter()
            for _ in range(calls_per_sample):
                fn()
            b = time.perf_counter()
            samples.append((b - a) * 1e6 / calls_per_sample)
        sync()
    what = "host time per call, no synchronize inside" if cuda else "wall time per call"
    drain = ", device drained by spinning on an event" if (cuda and spin) else ""
    pinned = {"first": "the first allowed core pinned", "last": "the last allowed core pinned"}.get(core, "no pinning")
    return summarise(
        samples,
        f"{what}, batches of {calls_per_sample} calls, gc off, {pinned}{drain}, median of {n} batches",
    )


# Host time per call on CUDA (the run's CPU µs column): each sample spreads about 1 ms of back-to-back
# calls (docs/results/h200_launch_host.md: single calls after a synchronize had IQRs of 30-70% on the
# H200 at B4 H16 S2048 D64; batches cut them), the device drained by spinning so the thread never
# sleeps, pinned to the last allowed core (a VM's device interrupts land on the first).
HOST_SAMPLE_US = 1000.0


WAITS_INSIDE_RATIO = 1.5  # fastest batch over the single-call median above which the call waits inside it


def time_host_cuda(fn: Callable[[], Any], *, budget_s: float) -> Timing:
    """The dispatch cost per call on CUDA, from batches of back-to-back calls (:data:`HOST_SAMPLE_US` each).

    A call that waits for the device inside it (a synchronize, a copy from pageable memory) would wait
    for the calls before it in its batch: where the batched median exceeds the single-call one by
    :data:`WAITS_INSIDE_RATIO` even in its fastest batch, the single-call timing (each call after a drained
    device) is the answer."""
    single = time_host(fn, cuda=True, budget_s=budget_s / 4)
    # The fastest batch decides, never the median: a noisy moment of the machine slows some batches, a call
    # that waits for the device inside it slows every one.
    probe = time_host_batched(
        fn, cuda=True, budget_s=budget_s / 20, spin=True, core="last", calls_per_sample=5, lo=5, hi=5
    )
    if probe.min_us > WAITS_INSIDE_RATIO * single.median_us:  # seen on 5 calls: no long batches to wait through
        return _waits_inside(single, probe)
    batched = time_host_batched(
        fn, cuda=True, budget_s=budget_s * 3 / 4, spin=True, core="last", target_sample_us=HOST_SAMPLE_US
    )
    if batched.min_us > WAITS_INSIDE_RATIO * single.median_us:
        return _waits_inside(single, batched)
    return batched


def _waits_inside(single: Timing, batched: Timing) -> Timing:
    return dataclasses.replace(
        single,
        method=single.method + f" (back-to-back, even the fastest batch took {batched.min_us / single.median_us:.1f}× "
        "longer per call: the call waits for the device inside it)",
    )


def _spin_drain() -> None:
    """Wait for the device by polling an event: the thread never sleeps, so the next call starts hot
    (a blocking synchronize may yield the core while a long kernel runs)."""
    import torch

    e = torch.cuda.Event()
    e.record()
    while not e.query():
        pass


def _sync_for(cuda: bool) -> Callable[[], None]:
    if cuda:
        import torch

        return torch.cuda.synchronize

    def sync() -> None:
        return None

    return sync
