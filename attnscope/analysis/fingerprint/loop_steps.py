"""The steps of a serving or training loop, read from ``record_function`` ranges, and attention's share of each.

Pure: plain data in, a JSON-shaped dict out, no torch.

Step ranges recognised (first family found wins; a ``ProfilerStep#N`` around the others is only their container):

- ``attnscope.step[<kind>] <N>``, optionally followed by `` kv=<L>`` or `` kv=<L1>,<L2>,...``: attnscope's decode
  loop; the kind is ``<kind>`` (prefill, decode, ...);
- ``execute_context_<P>(<Pt>)_generation_<D>(<Dt>)``: vLLM's GPU model runner (P prefill requests of Pt tokens, D
  decode requests of Dt tokens); prefill when D = 0, decode when P = 0, else mixed;
- ``decode_step_<N>``, ``prefill_step_<N>`` (``_``, ``-`` or a space between the words, any case): ranges named by
  hand; the kind is the first word;
- ``ProfilerStep#<N>``: ``torch.profiler.profile.step()``; kind unknown.

A GPU event belongs to the step whose host range (``user_annotation``) holds its launch call on the same thread
(a replayed graph's events: the ``cudaGraphLaunch``), or, from a thread with no step range of its own (autograd's
backward thread), the step whose range holds the call's start; without host ranges, to the
``gpu_user_annotation`` range that holds its start.  Each step's GPU time splits into three parts that sum to it:

- ``attention``: events of an attention family (the kernel's name, or launched inside an attention op, or standing
  for one in a CUDA graph's capture: breakdown.kernel_families);
- ``rest``: every other event whose launching op is known (a replayed event: matched to the op of its capture);
- ``unattributed``: no op known (rule ``none``, or a graph replay matched to no capture).

Each step's attention calls are the attention ops that launched its attention events (for a graph replay, the ops
of the capture, in this trace or the ``--capture`` one), their shapes read from the ops' ``Input Dims``
(analysis/shape.py): with a static cache that is the
cache's full length, what the kernel is given.  analysis/annotate.py turns them into the step's roofline.
"""

from __future__ import annotations

import bisect
import re
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from typing import Any

from attnscope.analysis.fingerprint.attribution import Attribution
from attnscope.analysis.fingerprint.shape import attention_calls_at
from attnscope.trace import Annotation

ATTNSCOPE_STEP = re.compile(r"^attnscope\.step\[(?P<kind>[a-z_]+)\]\s*(?P<index>\d+)?(?:.*?\bkv=(?P<kv>\d+(?:,\d+)*))?")
VLLM_STEP = re.compile(r"^execute_context_(?P<np>\d+)\((?P<pt>\d+)\)_generation_(?P<nd>\d+)\((?P<dt>\d+)\)")
PROFILER_STEP = re.compile(r"^ProfilerStep#(?P<index>\d+)$")
# a range a user names by hand: decode_step_12, prefill-step 0, decode step#3
NAMED_STEP = re.compile(r"^(?P<kind>prefill|decode)[_\- ]?step[_\-# ]?(?P<index>\d+)$", re.IGNORECASE)
SOURCES = (
    ("attnscope.step ranges", ATTNSCOPE_STEP),
    ("vLLM execute_context ranges", VLLM_STEP),
    ("decode_step_<N> / prefill_step_<N> ranges", NAMED_STEP),
    ("ProfilerStep ranges", PROFILER_STEP),
)
MAX_STEPS = 2000  # steps listed in the JSON (the counts and sums cover every step)


@dataclass
class Step:
    name: str
    kind: str
    index: int | None
    range: Annotation
    kv_annotated: list[int] | None = None
    tokens: dict[str, int] | None = None
    events: list[int] = field(default_factory=list)


def parse(name: str) -> tuple[str, str, int | None, list[int] | None, dict[str, int] | None] | None:
    """(source, kind, index, annotated KV lengths, tokens) of a step range's name; None for any other name."""
    for source, pat in SOURCES:
        m = pat.match(name)
        if m is None:
            continue
        g = m.groupdict()
        if pat is VLLM_STEP:
            n_p, n_d = int(g["np"]), int(g["nd"])
            kind = "mixed" if n_p and n_d else "prefill" if n_p else "decode" if n_d else "unknown"
            tokens = {"prefill_requests": n_p, "prefill_tokens": int(g["pt"]),
                      "decode_requests": n_d, "decode_tokens": int(g["dt"])}  # fmt: skip
            return source, kind, None, None, tokens
        kv = [int(x) for x in g["kv"].split(",")] if g.get("kv") else None
        index = int(g["index"]) if g.get("index") else None
        return source, (g.get("kind") or "unknown").lower(), index, kv, None
    return None


def find_steps(annotations: list[Annotation]) -> tuple[str, str, list[Step]] | None:
    """(source, timeline, steps): the step ranges of the first family (SOURCES order) the trace holds, host ranges
    before GPU ones; None when it holds none."""
    for cat, timeline in (("user_annotation", "host"), ("gpu_user_annotation", "gpu")):
        found: dict[str, list[Step]] = defaultdict(list)
        for a in annotations:
            if a.cat != cat:
                continue
            got = parse(a.name)
            if got is not None:
                source, kind, index, kv, tokens = got
                found[source].append(Step(a.name, kind, index, a, kv, tokens))
        for source, _ in SOURCES:
            if found.get(source):
                return source, timeline, sorted(found[source], key=lambda s: s.range.ts)
    return None


def _assign(att: Attribution, steps: list[Step], timeline: str) -> list[int]:
    """Each GPU event's step (index into ``steps``), -1 outside every step."""
    out = [-1] * len(att.gpu)
    if timeline == "gpu":
        starts = [s.range.ts for s in steps]
        for k, g in enumerate(att.gpu):
            j = bisect.bisect_right(starts, g.ts) - 1
            if j >= 0 and g.ts <= steps[j].range.ts + steps[j].range.dur:
                out[k] = j
        return out
    by_tid: dict[object, list[int]] = defaultdict(list)
    for j, s in enumerate(steps):
        by_tid[s.range.tid].append(j)
    every = list(range(len(steps)))  # steps is sorted by start
    starts_of = {t: [steps[j].range.ts for j in js] for t, js in by_tid.items()}
    starts_of[None] = [s.range.ts for s in steps]
    ops = att.tree.ops
    tid: object
    for k, rt in enumerate(att.runtime):
        if rt is not None:
            tid, ts = rt.tid, rt.ts
        elif att.launcher[k] >= 0 and att.rule[k] != "graph":
            o = ops[att.launcher[k]]
            tid, ts = o.tid, o.ts
        else:
            continue
        js = by_tid.get(tid)
        if js is None:  # a thread with no step range of its own (autograd's backward thread): the step by time
            js, tid = every, None
        i = bisect.bisect_right(starts_of[tid], ts) - 1
        if i >= 0:
            s = steps[js[i]]
            if ts <= s.range.ts + s.range.dur:
                out[k] = js[i]
    return out


def _outermost_call(att: Attribution, calls: dict[int, Any], i: int) -> int | None:
    if i in calls:
        return i
    return next((a for a in att.tree.ancestors(i) if a in calls), None)


def summary(att: Attribution, fams: list[Any], annotations: list[Annotation]) -> dict[str, Any] | None:
    """The ``steps`` section of a trace summary; None when the trace holds no step range."""
    got = find_steps(annotations)
    if got is None:
        return None
    source, timeline, steps = got
    of = _assign(att, steps, timeline)
    for k, j in enumerate(of):
        if j >= 0:
            steps[j].events.append(k)
    calls = dict(attention_calls_at(att.tree))
    graph = att.graph
    dur = att.durations
    rows = []
    outside = sum(d for d, j in zip(dur, of, strict=True) if j < 0)
    for s in steps:
        att_us = rest_us = none_us = 0.0
        mine: dict[tuple[str, int], Any] = {}  # the step's attention calls: (where, call op index) → call
        for k in s.events:
            d = dur[k]
            li = att.launcher[k]
            unmatched = graph is not None and graph.replay_of[k] >= 0 and graph.op_name[k] is None
            if fams[k] is not None:
                att_us += d
                if graph is not None and (gc := graph.call[k]) is not None:  # the op of a graph's capture
                    mine[("capture", gc[0])] = gc[1]
                elif li >= 0 and not unmatched and (c := _outermost_call(att, calls, li)) is not None:
                    mine[("trace", c)] = calls[c]
            elif (li >= 0 and not unmatched) or (graph is not None and graph.op_name[k] is not None):
                rest_us += d
            else:
                none_us += d
        total = att_us + rest_us + none_us
        rows.append(_row(s, total, att_us, rest_us, none_us, [mine[c] for c in sorted(mine)]))
    kinds = Counter(s.kind for s in steps)
    return {
        "source": source,
        "timeline": timeline,
        "num_steps": len(steps),
        "by_kind": dict(kinds),
        "outside_steps_us": round(outside, 3),
        "steps": rows[:MAX_STEPS],
        "basis": (
            "a GPU event belongs to the step whose "
            + (
                "host range holds its launch call on the same thread (a graph replay: its cudaGraphLaunch)"
                if timeline == "host"
                else "GPU-timeline range holds its start"
            )
            + "; attention: events of an attention family (kernel name, or launched inside an attention op or the "
            "op of a graph's capture); rest: the other events with a known op; unattributed: no op known (or a "
            "graph replay matched to no capture); attention_us + rest_us + unattributed_us = gpu_time_us"
        ),
    }


def _row(s: Step, total: float, att_us: float, rest_us: float, none_us: float, calls: list[Any]) -> dict[str, Any]:
    shapes: Counter[tuple[Any, ...]] = Counter()
    flops: int | None = 0
    for c in calls:
        v = c.values
        shapes[tuple(v.get(f) for f in ("batch", "heads", "kv_heads", "seq_q", "seq_kv", "head_dim", "dtype"))] += 1
        f = c.flops()
        flops = None if f is None or flops is None else flops + f
    row: dict[str, Any] = {
        "name": s.name,
        "kind": s.kind,
        "index": s.index,
        "ts": s.range.ts,
        "host_us": round(s.range.dur, 3),
        "num_gpu_events": len(s.events),
        "gpu_time_us": round(total, 3),
        "attention_us": round(att_us, 3),
        "rest_us": round(rest_us, 3),
        "unattributed_us": round(none_us, 3),
        "attention_share_pct": round(100.0 * att_us / total, 2) if total > 0 else None,
        "kv_annotated": s.kv_annotated,
        "tokens": s.tokens,
        "attention_calls": [
            {
                **dict(zip(("batch", "heads", "kv_heads", "seq_q", "seq_kv", "head_dim", "dtype"), key, strict=True)),
                "count": n,
            }
            for key, n in shapes.items()
        ],
        "attention_flops": flops if calls else None,
        "kv_source": (
            "the Input Dims of the attention ops that launched this step's attention kernels (for a graph replay, "
            "the ops of its capture: a static cache's full length)"
            if calls
            else None
        ),
    }
    return row
