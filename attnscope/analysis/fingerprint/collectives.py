"""Collectives that run on the host: gloo's.  Pure, no torch.

``ProcessGroupGloo`` runs a collective on the CPU, also for CUDA tensors: the c10d op that enqueues it
(``c10d::allreduce_``, ``c10d::broadcast_``, ...) copies the tensor to pinned host memory (a ``Memcpy DtoH``
launched by the ``aten::copy_`` inside it), gloo's worker thread runs the collective over the network or shared
memory and copies the result back (a ``Memcpy HtoD`` launched inside its ``gloo:<op>`` range).  The device
therefore sees memcpys and no communication kernel: the GPU share of communication is 0 by construction, and the
collectives' time is what the host measured of them.

Kineto records each collective as a user annotation ``gloo:<op>`` (``gloo:all_reduce``, ``gloo:broadcast``) on the
worker thread that ran it: its duration is the host wall time of the collective there (waiting for the staging copy
and for the peer ranks included, profiler overhead included).  Collectives on several worker threads overlap, so
their time *in flight* is the union of the ranges, never their sum.
"""

from __future__ import annotations

import bisect
import math
from collections import defaultdict
from typing import Any

from attnscope.analysis.fingerprint.attribution import Attribution
from attnscope.analysis.fingerprint.spans import union_length
from attnscope.trace.events import Annotation, Trace

PREFIX = "gloo:"
TIMING = (
    "host wall time of gloo's gloo:<op> ranges on its worker threads (Kineto user annotations, profiler overhead "
    "included); in flight: their union, since the threads' collectives overlap"
)


def _inside(ranges: dict[object, tuple[list[float], list[Annotation]]], tid: object, ts: float) -> bool:
    """Whether ``ts`` on thread ``tid`` lies inside one of that thread's gloo ranges (sequential on a thread)."""
    got = ranges.get(tid)
    if got is None:
        return False
    starts, anns = got
    i = bisect.bisect_right(starts, ts) - 1
    return i >= 0 and ts <= anns[i].ts + anns[i].dur


def _cuda_on_gloo(info: object) -> bool:
    """Whether CUDA tensors go through gloo: Kineto's ``distributedInfo`` names gloo as the backend, or a process
    group's ``backend_config`` names ``cuda:gloo``; without distributedInfo the gloo ranges are the only word, and the
    copies inside the c10d ops are taken as gloo's."""
    if not isinstance(info, dict):
        return True
    if info.get("backend") == "gloo":
        return True
    groups = [pg for pg in info.get("pg_config") or [] if isinstance(pg, dict)]
    return any("cuda:gloo" in str(pg.get("backend_config")) for pg in groups)


def cpu_collectives(
    trace: Trace, att: Attribution, window: tuple[float, float] | None, host_span_us: float | None
) -> dict[str, Any] | None:
    """What the trace's gloo collectives did, or None where it holds none: each op's count and summed host time,
    their time in flight (and its share of ``host_span_us``, the traced region's host span), and the device copies
    that staged them (each a memcpy: to the host inside the enqueuing c10d op, back inside the gloo range)."""
    anns = [
        a
        for a in trace.annotations
        if a.cat == "user_annotation"
        and a.name.startswith(PREFIX)
        and (window is None or (a.ts < window[1] and a.ts + a.dur > window[0]))
    ]
    if not anns:
        return None
    per_op: dict[str, list[float]] = defaultdict(lambda: [0, 0.0])
    for a in anns:
        per_op[a.name.removeprefix(PREFIX)][0] += 1
        per_op[a.name.removeprefix(PREFIX)][1] += a.dur
    by_tid: dict[object, list[Annotation]] = defaultdict(list)
    for a in anns:
        by_tid[a.tid].append(a)
    ranges = {}
    for tid, xs in by_tid.items():
        xs.sort(key=lambda a: a.ts)
        ranges[tid] = ([a.ts for a in xs], xs)
    info = trace.meta.get("distributedInfo")
    cuda_on_gloo = _cuda_on_gloo(info)
    copies: dict[str, list[float]] = defaultdict(lambda: [0, 0.0, 0])
    for k, g in enumerate(att.gpu):
        if g.kind != "memcpy":
            continue
        rt, op = att.runtime[k], att.launcher[k]
        staged = rt is not None and _inside(ranges, rt.tid, rt.ts)
        if not staged and op >= 0 and cuda_on_gloo:  # under NCCL a c10d op's copies are NCCL's business
            staged = any(att.tree.ops[i].name.startswith("c10d::") for i in (op, *att.tree.ancestors(op)))
        if staged:
            c = copies[g.name]
            c[0] += 1
            c[1] += g.dur
            c[2] += g.bytes or 0
    lo, hi = window if window is not None else (-math.inf, math.inf)
    in_flight = union_length([(max(a.ts, lo), min(a.ts + a.dur, hi)) for a in anns])  # inside the traced region
    memcpy_us = sum(g.dur for g in att.gpu if g.kind == "memcpy")
    staged_us = sum(c[1] for c in copies.values())
    return {
        "backend": "gloo",
        "backend_source": "distributedInfo" if isinstance(info, dict) and info.get("backend") == "gloo" else PREFIX,
        "runs_on": "cpu",
        "num": len(anns),
        "threads": len(by_tid),
        "ops": [
            {"op": op, "count": int(n), "host_us": round(us, 3)}
            for op, (n, us) in sorted(per_op.items(), key=lambda kv: -kv[1][1])
        ],
        "host_us_summed": round(sum(a.dur for a in anns), 3),
        "in_flight_us": round(in_flight, 3),
        "host_span_us": round(host_span_us, 3) if host_span_us else None,
        "in_flight_pct": round(100.0 * in_flight / host_span_us, 2) if host_span_us else None,
        "timing": TIMING,
        "device_copies": {
            "num": int(sum(c[0] for c in copies.values())),
            "time_us": round(staged_us, 3),
            "bytes": int(sum(c[2] for c in copies.values())),
            "memcpy_share_pct": round(100.0 * staged_us / memcpy_us, 2) if memcpy_us > 0 else None,
            "by_name": [
                {"name": name, "count": int(c[0]), "time_us": round(c[1], 3)}
                for name, c in sorted(copies.items(), key=lambda kv: -kv[1][1])
            ],
        },
    }


__all__ = ["PREFIX", "TIMING", "cpu_collectives"]
