"""Model-scale summary of one trace: where GPU time goes and why.  Pure, no torch.

Built from the same :class:`~attnscope.analysis.fingerprint.build.Analysis` as the
fingerprint (one pass over the trace), into the JSON-shaped ``trace_summary``:
categories, attention families, top kernels with their launching ops, launch
overhead, GPU idle time, and the top hidden copies and upcasts.
"""

from __future__ import annotations

import bisect
import heapq
from collections import Counter, defaultdict
from itertools import compress, islice, repeat
from operator import add, attrgetter, eq, le
from typing import Any, get_args

from attnscope.analysis.fingerprint import kernels as K
from attnscope.analysis.fingerprint.attribution import Attribution, OpTree
from attnscope.analysis.fingerprint.build import Analysis
from attnscope.analysis.fingerprint.collectives import cpu_collectives
from attnscope.analysis.fingerprint.graphs import family_calls as graph_family_calls
from attnscope.analysis.fingerprint.graphs import summary as graph_summary
from attnscope.analysis.fingerprint.loop_steps import summary as steps_summary
from attnscope.analysis.fingerprint.spans import runs
from attnscope.core.types import Category
from attnscope.trace import GpuEvent, Trace

CATEGORIES: tuple[str, ...] = get_args(Category)  # the one list, in types.py
# Idle gaps between GPU events, bucketed by length (µs): upper bounds.
GAP_BUCKETS_US = (10.0, 100.0, 1000.0, float("inf"))
GAP_LABELS = ("<10us", "10-100us", "100us-1ms", ">1ms")
_TS, _DUR, _NAME = attrgetter("ts"), attrgetter("dur"), attrgetter("name")
_DEVICE, _STREAM = attrgetter("device"), attrgetter("stream")


def percentile(sorted_vals: list[float], q: float) -> float | None:
    """Nearest-rank percentile of an already sorted list (q in 0..100)."""
    if not sorted_vals:
        return None
    k = min(len(sorted_vals) - 1, max(0, round(q / 100 * (len(sorted_vals) - 1))))
    return sorted_vals[k]


def _dist(vals: list[float]) -> dict[str, float | int | None]:
    s = sorted(vals)
    total = sum(s)
    return {
        "num": len(s),
        "total_us": round(total, 3),
        "mean_us": round(total / len(s), 3) if s else None,
        "p50_us": _r(percentile(s, 50)),
        "p95_us": _r(percentile(s, 95)),
        "max_us": _r(s[-1]) if s else None,
    }


def _r(v: float | None) -> float | None:
    return round(v, 3) if v is not None else None


def _pct(part: float, whole: float) -> float:
    return round(100.0 * part / whole, 2) if whole > 0 else 0.0


def op_families(tree: OpTree) -> list[K.AttentionFamily | None]:
    """Attention family of each op from itself or its nearest ancestor (math has no kernel of its own)."""
    fam: list[K.AttentionFamily | None] = [None] * len(tree.ops)
    for i, f in _op_family_of(tree).items():
        fam[i] = f
    return fam


def _op_family_of(tree: OpTree) -> dict[int, K.AttentionFamily]:
    """:func:`op_families` of the ops that have one (those inside attention ops: a few of 10^5)."""
    fam: dict[int, K.AttentionFamily] = {}
    own = {n: f for n in tree.names if (f := K.attention_op_family(n)) is not None}
    if not own:
        return fam
    parent, names = tree.parent, tree.op_names
    # Only the subtrees of the ops with a family of their own get one.  tree.ops is sorted by start within a
    # thread, so a parent comes before its children and an op's subtree follows it without a gap: each
    # outermost such op's subtree is walked once, in order (an inner one with its own family overrides).
    covered = -1  # ops up to here were walked inside an outer subtree
    for i in tree.indices_named(own.keys()):
        if i <= covered:
            continue
        sub = tree.subtree(i)
        fam[i] = own[names[i]]
        for j in sub[1:]:
            f = own.get(names[j])
            fam[j] = fam[parent[j]] if f is None else f
        covered = sub[-1]
    return fam


def kernel_families(att: Attribution) -> list[tuple[K.AttentionFamily, str] | None]:
    """(family, implementation) per GPU event: the kernel's name first, then the op above it."""
    keys = att.kernel_keys
    impl = {k: K.attention_impl(k[0]) if k[1] == "kernel" else None for k in dict.fromkeys(keys)}  # once a kernel
    out = [impl[key] for key, _ in zip(keys, att.launcher, strict=True)]
    fam_of = _op_family_of(att.tree)
    # the events launched inside an attention op, picked out in C: a kernel of no family of its own gets the op's
    for k in compress(range(len(out)), map(fam_of.__contains__, att.launcher)):
        if out[k] is None:
            f = fam_of[att.launcher[k]]
            out[k] = (f, "decomposed into generic kernels" if f in ("math", "flex") else "helper kernel")
    g = att.graph
    if g is not None:  # replayed events matched to a capture read from another trace: the capture op's family
        for k, f in enumerate(g.family):
            if f is not None and out[k] is None:
                out[k] = (f, "decomposed into generic kernels" if f in ("math", "flex") else "helper kernel")
    return out


def _categories_of(att: Attribution) -> list[str]:
    """The category of each GPU event, worked out once per (name, kind)."""
    keys = att.kernel_keys
    memo = {k: K.classify_gpu(*k) for k in dict.fromkeys(keys)}
    return list(map(memo.__getitem__, keys))


def categories(att: Attribution, total_us: float, cats: list[str] | None = None) -> list[dict[str, Any]]:
    each = cats if cats is not None else _categories_of(att)
    t: dict[str, float] = {}
    for c, d in zip(each, att.durations, strict=True):
        t[c] = t.get(c, 0.0) + d
    n = Counter(each)
    return [
        {
            "category": c,
            "num_kernels": n[c],
            "time_us": round(t.get(c, 0.0), 3),
            "share_pct": _pct(t.get(c, 0.0), total_us),
        }
        for c in CATEGORIES
    ]


def families(
    att: Attribution, fams: list[tuple[K.AttentionFamily, str] | None], total_us: float, top: int
) -> list[dict[str, Any]]:
    agg: dict[str, dict[str, Any]] = {}
    by_name: dict[str, dict[str, float]] = defaultdict(lambda: defaultdict(float))
    for g, hit in zip(att.gpu, fams, strict=True):
        if hit is None:
            continue
        fam, impl = hit
        a = agg.setdefault(fam, {"family": fam, "implementations": set(), "num_kernels": 0, "time_us": 0.0})
        a["implementations"].add(impl)
        a["num_kernels"] += 1
        a["time_us"] += g.dur
        by_name[fam][g.name] += g.dur
    calls = _family_calls(att.tree) if att.graph is None else graph_family_calls(att, fams)
    out = []
    for name, a in sorted(agg.items(), key=lambda kv: -kv[1]["time_us"]):
        fwd, bwd = calls.get(name, (0, 0))
        row: dict[str, Any] = {
            "family": name,
            "implementations": sorted(a["implementations"]),
            "num_kernels": a["num_kernels"],
            "num_distinct_kernels": len(by_name[name]),
            "time_us": round(a["time_us"], 3),
            "share_pct": _pct(a["time_us"], total_us),
            "num_forward_calls": fwd,
            "num_backward_calls": bwd,
            "kernels": sorted(by_name[name], key=lambda k: -by_name[name][k])[:top],
        }
        if fwd == bwd == 0:  # kernels but no attention op above them: the calls are not in the trace
            row["num_forward_calls"] = row["num_backward_calls"] = None
            row["calls_unknown"] = (
                "no attention op above these kernels (a library called outside aten, e.g. FlashInfer or the cuDNN "
                "frontend): the trace does not say how many calls they were"
            )
        out.append(row)
    return out


def _family_calls(tree: OpTree) -> dict[str, tuple[int, int]]:
    """Outermost attention ops per family (an SDPA call nests several), forward and backward."""
    calls: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    wanted = {n for n in tree.names if K.attention_op_family(n) is not None and K.attention_call_op(n)}
    for i in tree.indices_named(wanted):
        name = tree.ops[i].name
        f = K.attention_op_family(name) or "other"  # not None: the name is in ``wanted``
        p = tree.parent[i]
        if p >= 0 and K.attention_op_family(tree.ops[p].name) == f:
            continue
        calls[f][1 if "backward" in name.lower() else 0] += 1
    return {f: (v[0], v[1]) for f, v in calls.items()}


def _time_by(keys: list[str], durations: list[float]) -> dict[str, float]:
    """GPU time per key, added in event order (first key seen first)."""
    time: dict[str, float] = {}
    get = time.get
    for k, d in zip(keys, durations, strict=True):
        time[k] = get(k, 0.0) + d
    return time


def _counts_of(pairs: Counter[tuple[str, str]], key: str) -> Counter[str]:
    """The counts of ``(key, x)`` pairs as a Counter of x, in the order the pairs were first seen."""
    return Counter({x: c for (k, x), c in pairs.items() if k == key})


def top_kernels(
    att: Attribution, fams: list[tuple[K.AttentionFamily, str] | None], total_us: float, top: int
) -> list[dict[str, Any]]:
    names = att.kernel_names
    time = _time_by(names, att.durations)
    count = Counter(names)
    first_hit = dict(zip(reversed(names), reversed(fams), strict=True))  # built from the end: the first stays
    kinds = dict(att.kernel_keys)
    ranked = sorted(time, key=lambda k: -time[k])[:top]
    wanted = set(ranked)
    launchers = Counter(p for p in zip(names, att.launcher_names, strict=True) if p[0] in wanted)
    return [
        {
            "name": k,
            "category": K.classify_gpu(k, kinds[k]),
            "attention_family": hit[0] if (hit := first_hit[k]) else None,
            "num_calls": count[k],
            "time_us": round(time[k], 3),
            "mean_us": round(time[k] / count[k], 3),
            "share_pct": _pct(time[k], total_us),
            "launched_by": [{"op": op, "count": c} for op, c in _counts_of(launchers, k).most_common(3)],
        }
        for k in ranked
    ]


def top_ops(att: Attribution, total_us: float, top: int, cats_of: list[str] | None = None) -> list[dict[str, Any]]:
    """Launching ops ranked by the GPU time of the kernels they launched."""
    each = cats_of if cats_of is not None else _categories_of(att)
    ops = att.launcher_names
    time = _time_by(ops, att.durations)
    count = Counter(ops)
    ranked = sorted(time, key=lambda k: -time[k])[:top]
    wanted = set(ranked)
    cats = Counter(p for p in zip(ops, each, strict=True) if p[0] in wanted)
    return [
        {
            "op": op,
            "num_kernels": count[op],
            "time_us": round(time[op], 3),
            "share_pct": _pct(time[op], total_us),
            "categories": dict(_counts_of(cats, op).most_common()),
        }
        for op in ranked
    ]


def launch_stats(att: Attribution, trace: Trace, window: tuple[float, float] | None) -> dict[str, Any]:
    """Runtime-call time per API and the delay from each launch to its GPU event's start."""
    calls = trace.runtime if window is None else [r for r in trace.runtime if window[0] <= r.ts <= window[1]]
    names, durs = list(map(_NAME, calls)), list(map(_DUR, calls))
    per_api: dict[str, list[float]] = {}
    for k, d in zip(names, durs, strict=True):
        v = per_api.get(k)
        if v is None:
            per_api[k] = [d]
        else:
            v.append(d)
    delays: list[float] = []
    launch_bound = 0
    for g, rt in zip(att.gpu, att.runtime, strict=True):
        if rt is not None:
            delays.append(g.ts - rt.ts)
            if g.dur < rt.dur:
                launch_bound += 1
    apis = sorted(per_api.items(), key=lambda kv: -sum(kv[1]))
    return {
        "runtime_calls": [{"name": k, **_dist(v)} for k, v in apis],
        "runtime_total_us": round(sum(durs), 3),
        "num_linked_gpu_events": len(delays),
        "launch_to_start_us": _dist(delays),
        "num_shorter_than_launch": launch_bound,
    }


def idle_time(gpu: list[GpuEvent], top: int = 5) -> dict[str, Any]:
    """Per device: span, busy (union over streams), idle gaps between GPU events; per stream: busy."""
    devs = list(map(_DEVICE, gpu))
    seen = dict.fromkeys(devs)
    # one device (the usual case): its events are all of them; else each device's, picked out in C
    devices = {d: gpu if len(seen) == 1 else list(compress(gpu, map(eq, devs, repeat(d)))) for d in seen}
    streams: dict[tuple[int | None, int | None], list[float]] = {}
    for key, dur in zip(zip(devs, map(_STREAM, gpu), strict=True), map(_DUR, gpu), strict=True):
        v = streams.get(key)
        if v is None:
            streams[key] = [dur]
        else:
            v.append(dur)
    return {
        "devices": [_device_idle(dev, evs, top) for dev, evs in sorted(devices.items(), key=lambda kv: str(kv[0]))],
        "streams": [
            {"device": d, "stream": s, "num_events": len(v), "busy_us": round(sum(v), 3)}
            for (d, s), v in sorted(streams.items(), key=lambda kv: -sum(kv[1]))
        ],
    }


def _device_idle(dev: int | None, evs: list[GpuEvent], top: int) -> dict[str, Any]:
    """Span, busy time and idle gaps of one device's events.  The gaps are counted into their buckets as they come and
    only the ``top`` largest kept (a min-heap): a list of every gap and of every end was the summary's largest
    transient, 16.7 MiB of objects on the Llama trace at 8x, and where ``analyze --json`` reached its peak."""
    starts = list(map(_TS, evs))
    if not all(map(le, starts, islice(starts, 1, None))):  # in start order when they come from an Attribution
        evs = sorted(evs, key=_TS)
        starts = list(map(_TS, evs))
    busy = 0.0
    num_gaps = 0
    buckets = [0] * len(GAP_BUCKETS_US)
    heap: list[tuple[float, float, int]] = []  # (gap, start, index of the event after it): the largest ``top``
    run_end: float | None = None
    for i, s, e in runs(zip(starts, map(add, starts, map(_DUR, evs)), strict=True)):
        busy += e - s
        if run_end is not None:
            gap = s - run_end
            num_gaps += 1
            buckets[bisect.bisect_right(GAP_BUCKETS_US, gap)] += 1  # the first bucket whose bound exceeds it
            if len(heap) < top:
                heapq.heappush(heap, (gap, run_end, i))
            elif top > 0 and gap >= heap[0][0] and (gap, run_end, i) > heap[0]:
                heapq.heapreplace(heap, (gap, run_end, i))
        run_end = e
    assert run_end is not None  # a device has events
    span = run_end - starts[0]  # the last run ends at the latest end
    largest = sorted(heap, reverse=True)  # = heapq.nlargest(top, every gap): the gaps are distinct by index
    return {
        "device": dev,
        "span_us": round(span, 3),
        "busy_us": round(busy, 3),
        "idle_us": round(span - busy, 3),
        "idle_pct": _pct(span - busy, span),
        "num_gaps": num_gaps,
        "gaps_by_length": dict(zip(GAP_LABELS, buckets, strict=True)),
        "largest_gaps": [
            {"gap_us": round(g, 3), "after_us": round(s - evs[0].ts, 3), "before": evs[i - 1].name, "next": evs[i].name}
            for g, s, i in largest
        ],
    }


def _ranked(items: list[tuple[tuple[Any, ...], int, float]], keys: tuple[str, ...], top: int) -> dict[str, Any]:
    """Group (key, bytes, µs) items by key: count, bytes and time per group, most time first."""
    agg: dict[tuple[Any, ...], list[float]] = {}
    for key, nbytes, us in items:
        a = agg.setdefault(key, [0, 0, 0.0])
        a[0] += 1
        a[1] += nbytes
        a[2] += us
    rows: list[dict[str, Any]] = [
        {**dict(zip(keys, k, strict=True)), "count": int(v[0]), "bytes": int(v[1]), "time_us": round(v[2], 3)}
        for k, v in agg.items()
    ]
    rows.sort(key=lambda r: (-r["time_us"], -r["bytes"]))
    return {
        "num": len(items),
        "bytes": sum(b for _, b, _ in items),
        "time_us": round(sum(us for _, _, us in items), 3),
        "top": rows[:top],
    }


def top_copies(an: Analysis, top: int) -> dict[str, Any]:
    items = [
        ((c.op, c.copy_op, c.device_event, c.kind, c.inside), c.bytes, c.duration_us or 0.0)
        for c in an.fingerprint.hidden_copies
    ]
    return _ranked(items, ("op", "copy_op", "device_event", "kind", "inside"), top)


def top_upcasts(an: Analysis, top: int) -> dict[str, Any]:
    items = [
        ((u.op, u.src_dtype, u.dst_dtype, u.inside), u.bytes, us or 0.0)
        for u, us in zip(an.fingerprint.upcasts, an.upcast_us, strict=True)
    ]
    return _ranked(items, ("op", "src_dtype", "dst_dtype", "inside"), top)


def summarize(trace: Trace, an: Analysis, *, top: int = 15) -> dict[str, Any]:
    """The ``trace_summary`` section of one analysed trace."""
    att = an.attribution
    total = sum(att.durations)
    host_span = an.fingerprint.trace_cpu_time_us
    fams = kernel_families(att)
    cats = _categories_of(att)
    return {
        "rank": trace.rank,
        "num_events": trace.num_events,
        "num_skipped_events": trace.num_skipped,
        "num_cpu_ops": len(att.tree.ops),
        "num_gpu_events": len(att.gpu),
        "gpu_time_us": round(total, 3),
        "categories": categories(att, total, cats),
        "attention_families": families(att, fams, total, 5),
        "top_kernels": top_kernels(att, fams, total, top),
        "top_ops": top_ops(att, total, top, cats),
        "attribution": att.rule_counts(),
        "launch": launch_stats(att, trace, an.window),
        "idle": idle_time(att.gpu) if att.gpu else None,
        "hidden_copies": top_copies(an, top),
        "upcasts": top_upcasts(an, top),
        **({"cuda_graphs": graph_summary(att, att.graph, total, top)} if att.graph is not None else {}),
        **({"steps": steps} if (steps := steps_summary(att, fams, trace.annotations)) is not None else {}),
        **({"cpu_collectives": cc} if (cc := cpu_collectives(trace, att, an.window, host_span)) is not None else {}),
    }
