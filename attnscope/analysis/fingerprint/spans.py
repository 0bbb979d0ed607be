"""Spans of time on one clock: their runs and the length of their union.  Pure, no torch.

A span is ``(start, end)`` with ``end >= start`` (µs in a trace).  Spans that overlap or touch (one starts where
the other ends) form one *run*; the union's length is the runs' lengths summed, so time covered by several spans at
once (kernels on several streams, collectives on several threads) counts once.  The gaps between runs are the idle
time between them.  GPU busy time (``breakdown.idle_time``, ``model_split.step_parts``) and the host collectives'
time in flight (``collectives.cpu_collectives``) are read from here.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator

Span = tuple[float, float]


def runs(spans: Iterable[Span]) -> Iterator[tuple[int, float, float]]:
    """The runs of ``spans``, which come in start order: each maximal stretch of spans that overlap or touch, as
    (index of its first span, its start, its end), in order.  A run's end is the latest end of its spans, so the last
    run ends at the latest end of all.  The spans are read once, as they come (an iterator of pairs made on the fly
    holds no list of every end); spans out of start order are a caller's bug and raise ``ValueError``."""
    it = iter(spans)
    first = next(it, None)
    if first is None:
        return
    first_i, (run_start, run_end) = 0, first
    last_start = run_start
    for i, (s, e) in enumerate(it, 1):
        if s > run_end:
            yield first_i, run_start, run_end
            first_i, run_start, run_end = i, s, e
        elif s < last_start:
            raise ValueError(f"span {i} starts at {s}, before span {i - 1} ({last_start}): spans must come by start")
        elif e > run_end:
            run_end = e
        last_start = s
    yield first_i, run_start, run_end


def union_length(spans: Iterable[Span]) -> float:
    """The length of the union of ``spans`` (start, end), in any order: the lengths of their runs summed in start
    order (one rounding per run); 0.0 for none."""
    total = 0.0
    for _, s, e in runs(sorted(spans)):
        total += e - s
    return total
