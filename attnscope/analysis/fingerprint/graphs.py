"""Kernels replayed from CUDA graphs: each linked to the graph launch that replayed it and to the op of the capture.

Pure: plain data in, plain data out, no torch.

A graph replay is one runtime call (``cudaGraphLaunch``) whose correlation id every replayed GPU event carries, so
rule 1 of :mod:`attribution` links all of them to the op around that call (often none): a decode loop's whole GPU
time then sits on one row.  What each replayed event stands for is found here, in two steps.

1. **Order the replay.**  Where Kineto wrote ``graph node id`` on the events (non-zero for a replayed event), they
   are ordered by it, and replays of the same ``graph id`` are known to be the same nodes; otherwise by start time.
2. **Match it to a capture**: the launches the graph recorded, in order.
   - *captured launches*: launch calls (``cudaLaunchKernel``, ``cuLaunchKernelEx``, ``cudaMemcpyAsync``, ...)
     whose correlation id no GPU event carries: recorded into a graph, not run.  Grouped per thread between
     ``cudaStreamBeginCapture``/``cudaStreamEndCapture`` calls where the trace has them, else into runs not
     interrupted by a launch that ran.  They name their op (External id, else the op around the call) and the kind
     of event (kernel, memcpy, memset), not the kernel: matched **by order and kind**, the whole sequence or nothing.
   - *eager kernels*: without captured launches, the GPU events that ran outside any graph (an eager warm-up of the
     same step): matched **by order and name** (the longest matching blocks of kernel names, difflib), each match
     giving the op that launched the eager kernel.

   The capture comes from the trace itself, or from a second trace (``analyze replay.json --capture capture.json``).
   A replay of a graph id already matched reuses that match node for node (**graph node id**).

Whatever is not matched stays linked to its graph launch alone, and says why (``notes``).
"""

from __future__ import annotations

from collections import Counter, defaultdict
from dataclasses import dataclass, field
from operator import attrgetter
from typing import Any

from attnscope.analysis.fingerprint import kernels as K
from attnscope.analysis.fingerprint.attribution import Attribution, OpTree
from attnscope.trace import GpuEvent, RuntimeCall

GRAPH_LAUNCH_PREFIXES = ("cudaGraphLaunch", "cuGraphLaunch", "hipGraphLaunch")
_KERNEL_LAUNCH = (
    "cudaLaunchKernel",
    "cuLaunchKernel",
    "cudaLaunchCooperativeKernel",
    "cuLaunchCooperativeKernel",
    "hipLaunchKernel",
    "hipModuleLaunchKernel",
    "hipExtModuleLaunchKernel",
    "hipExtLaunchKernel",
)
CAPTURE_BEGIN = ("cudaStreamBeginCapture", "cuStreamBeginCapture", "hipStreamBeginCapture")
CAPTURE_END = ("cudaStreamEndCapture", "cuStreamEndCapture", "hipStreamEndCapture")
METHODS = ("graph node id", "order and name", "order and kind", "none")
_TS = attrgetter("ts")


def is_graph_launch(name: str) -> bool:
    return name.startswith(GRAPH_LAUNCH_PREFIXES)


def launch_kind(name: str) -> str | None:
    """The kind of GPU event a runtime call launches: kernel, memcpy, memset; None for any other call."""
    if name.startswith(_KERNEL_LAUNCH):
        return "kernel"
    if "Memcpy" in name and not name.startswith(("cudaMemcpyToSymbol", "cudaMemcpyFromSymbol")):
        return "memcpy"
    if "Memset" in name:
        return "memset"
    return None


@dataclass(frozen=True)
class Captured:
    """One launch a graph recorded, or one eager event standing for it."""

    kind: str  # kernel | memcpy | memset
    name: str | None  # the kernel's name (eager events); None for a captured launch (nothing ran)
    op: int  # index of its op in the analysed trace's tree; -1 when the capture is another trace's
    op_name: str | None  # its op's name (kept for a capture read from another trace)
    family: K.AttentionFamily | None  # the attention family of that op or an op around it
    call: Any = None  # the attention call (shape.AttentionCall) its op belongs to, with its recorded shapes
    call_id: int = -1  # that call's op index in the capture's own trace


@dataclass
class Capture:
    items: list[Captured]
    ts: float  # when it was recorded (its first launch)
    source: str  # "captured launches" | "eager kernels"


@dataclass
class Replay:
    """One graph launch and the GPU events it replayed (indices into ``Attribution.gpu``, in node order)."""

    call: RuntimeCall
    events: list[int]
    graph_id: int | None
    method: str = "none"
    matched: int = 0
    why: str | None = None


@dataclass
class GraphAttribution:
    replays: list[Replay]
    replay_of: list[int]  # per GPU event: index into ``replays``, -1 for an event no graph replayed
    op_name: list[str | None]  # per GPU event: the capture op it stands for, when matched
    family: list[K.AttentionFamily | None]  # per GPU event: that op's attention family
    call: list[tuple[int, Any] | None]  # per GPU event: (call id, AttentionCall) of the capture op's attention call
    order: str  # "graph node id" | "start time" | "graph node id and start time"
    capture_source: str  # "this trace" or the capture trace's path
    captures: list[Capture] = field(default_factory=list)

    def matched(self, k: int) -> bool:
        return self.replay_of[k] >= 0 and self.op_name[k] is not None


def captures_in(
    tree: OpTree, runtime: list[RuntimeCall], gpu: list[GpuEvent], launcher: list[int], families: list[Any]
) -> list[Capture]:
    """The captures a trace holds (see the module doc): captured launches, else its eager events as one capture.

    ``launcher`` and ``families`` are per event of ``gpu`` (sorted by start), as :func:`attribute` gives them."""
    ran = {g.correlation for g in gpu if g.correlation is not None}
    by_thread: dict[tuple[object, object], list[RuntimeCall]] = defaultdict(list)
    for r in runtime:
        if launch_kind(r.name) is not None or r.name.startswith(CAPTURE_BEGIN + CAPTURE_END):
            by_thread[(r.pid, r.tid)].append(r)
    caps: list[Capture] = []
    op_fam = _op_family_table(tree)
    call_of = _CallOf(tree)
    for calls in by_thread.values():
        calls.sort(key=_TS)
        bracketed = any(c.name.startswith(CAPTURE_BEGIN) for c in calls)
        current: list[Captured] | None = None if bracketed else []
        start = 0.0
        for c in calls:
            if c.name.startswith(CAPTURE_BEGIN):
                current, start = [], c.ts
                continue
            if c.name.startswith(CAPTURE_END):
                if current:
                    caps.append(Capture(current, start, "captured launches"))
                current = None if bracketed else []
                continue
            if current is None:
                continue
            if c.correlation is not None and c.correlation in ran:  # it ran: not recorded into a graph
                if not bracketed and current:
                    caps.append(Capture(current, start, "captured launches"))
                    current = []
                continue
            if not current:
                start = c.ts
            i = tree.op_of_ext(c.ext_id)
            if i < 0:
                i = tree.innermost_at(c.pid, c.tid, c.ts)
            kind = launch_kind(c.name) or "kernel"
            current.append(Captured(kind, None, i, tree.ops[i].name if i >= 0 else None, op_fam[i], *call_of(i)))
        if current and not bracketed:
            caps.append(Capture(current, start, "captured launches"))
    if caps:
        return sorted(caps, key=_TS)
    eager = [
        Captured(g.kind, g.name, li, tree.ops[li].name if li >= 0 else None, _family_of(g, li, op_fam, families, k),
                 *call_of(li))
        for k, (g, li) in enumerate(zip(gpu, launcher, strict=True))
    ]  # fmt: skip
    return [Capture(eager, gpu[0].ts, "eager kernels")] if eager else []


def _family_of(g: GpuEvent, li: int, op_fam: dict[int, Any], families: list[Any], k: int) -> Any:
    hit = families[k] if k < len(families) else None
    if hit is not None:
        return hit[0]
    return op_fam[li]


class _CallOf:
    """The attention call (analysis/shape.py) op ``i`` belongs to, as (call, index of the call's op); (None, -1)
    outside every attention call.  The calls are read on first use."""

    def __init__(self, tree: OpTree) -> None:
        self.tree = tree
        self.calls: dict[int, Any] | None = None

    def __call__(self, i: int) -> tuple[Any, int]:
        if i < 0:
            return None, -1
        if self.calls is None:
            from attnscope.analysis.fingerprint.shape import attention_calls_at

            self.calls = dict(attention_calls_at(self.tree))
        if not self.calls:
            return None, -1
        if i in self.calls:
            return self.calls[i], i
        a = next((a for a in self.tree.ancestors(i) if a in self.calls), None)
        return (self.calls[a], a) if a is not None else (None, -1)


class _op_family_table(dict[int, "K.AttentionFamily | None"]):
    """The attention family of op ``i``: its own, else its nearest ancestor's (math has no kernel of its own);
    worked out on first use (the few ops a capture names)."""

    def __init__(self, tree: OpTree) -> None:
        super().__init__()
        self.tree = tree

    def __missing__(self, i: int) -> K.AttentionFamily | None:
        if i < 0:
            return None
        names = self.tree.op_names
        f = K.attention_op_family(names[i])
        if f is None:
            f = next((g for a in self.tree.ancestors(i) if (g := K.attention_op_family(names[a])) is not None), None)
        self[i] = f
        return f


def for_other_trace(caps: list[Capture]) -> list[Capture]:
    """Captures read from another trace: their op indices mean nothing here (names and families stay)."""
    return [Capture([Captured(c.kind, c.name, -1, c.op_name, c.family, c.call, c.call_id) for c in cap.items],
                    cap.ts, cap.source)
            for cap in caps]  # fmt: skip


def resolve(
    att: Attribution, runtime: list[RuntimeCall], captures: list[Capture] | None, capture_source: str = "this trace"
) -> GraphAttribution | None:
    """Find the graph replays in ``att`` and match each to ``captures`` (None: the trace's own, read from its
    runtime calls ``runtime``).

    Sets ``att.launcher`` of each matched event to its capture op when the capture is in the same trace (every
    summary then reads the op as for an eager launch) and ``att.rule`` to ``graph``; returns the per-event links,
    or None when nothing was replayed from a graph."""
    n = len(att.gpu)
    replay_of = [-1] * n
    by_call: dict[int, Replay] = {}
    replays: list[Replay] = []
    for k, rt in enumerate(att.runtime):
        if rt is None or not is_graph_launch(rt.name):
            continue
        r = by_call.get(id(rt))
        if r is None:
            r = by_call[id(rt)] = Replay(rt, [], None)
            replays.append(r)
        r.events.append(k)
    if not replays:
        return None
    replays.sort(key=lambda r: r.call.ts)
    with_node = 0
    for j, r in enumerate(replays):
        evs = [att.gpu[k] for k in r.events]
        if all(g.graph_node_id for g in evs):  # 0 or None: not written, or not from a graph
            r.events.sort(key=lambda k: (att.gpu[k].graph_node_id, att.gpu[k].ts))
            ids = {g.graph_id for g in evs}
            r.graph_id = ids.pop() if len(ids) == 1 else None
            with_node += 1
        for k in r.events:
            replay_of[k] = j
    order = (
        "graph node id"
        if with_node == len(replays)
        else "start time"
        if not with_node
        else "graph node id and start time"
    )
    if captures is None:
        captures = captures_in(att.tree, runtime, _not_replayed(att, replay_of),
                               _not_replayed_list(att.launcher, replay_of), [])  # fmt: skip
    ga = GraphAttribution(replays, replay_of, [None] * n, [None] * n, [None] * n, order, capture_source, captures)
    known: dict[int, dict[int, Captured]] = {}  # graph id → node id → what it stands for
    for r in replays:
        _match(att, ga, r, captures, known)
    return ga


def _not_replayed(att: Attribution, replay_of: list[int]) -> list[GpuEvent]:
    return [g for g, j in zip(att.gpu, replay_of, strict=True) if j < 0]


def _not_replayed_list(launcher: list[int], replay_of: list[int]) -> list[int]:
    return [li for li, j in zip(launcher, replay_of, strict=True) if j < 0]


def _assign(att: Attribution, ga: GraphAttribution, k: int, c: Captured) -> None:
    ga.op_name[k] = c.op_name if c.op_name is not None else "(no op)"
    ga.family[k] = c.family
    if c.call is not None:
        ga.call[k] = (c.call_id, c.call)
    if c.op >= 0:
        att.launcher[k] = c.op
    att.rule[k] = "graph"


def _match(
    att: Attribution, ga: GraphAttribution, r: Replay, caps: list[Capture], known: dict[int, dict[int, Any]]
) -> None:
    gpu = att.gpu
    if r.graph_id is not None and r.graph_id in known:
        nodes = known[r.graph_id]
        hits = [(k, nodes[g]) for k in r.events if (g := gpu[k].graph_node_id) is not None and g in nodes]
        for k, c in hits:
            _assign(att, ga, k, c)
        r.method, r.matched = "graph node id", len(hits)
        if len(hits) < len(r.events):
            r.why = f"{len(r.events) - len(hits)} node(s) not in the earlier replay of graph {r.graph_id}"
        return
    if not caps:
        r.why = "no capture: the trace holds no captured launches and no eager kernels (pass --capture TRACE)"
        return
    kinds = [gpu[k].kind for k in r.events]
    names = [gpu[k].name for k in r.events]
    pairs: list[tuple[int, Captured]] = []
    named = [cap for cap in caps if cap.source == "eager kernels"]
    if named:
        import difflib  # here: only a trace that replays graphs beside eager kernels matches by name

        best: tuple[float, list[tuple[int, Captured]]] = (0.0, [])
        for cap in named:
            ref = [c.name or "" for c in cap.items]
            sm = difflib.SequenceMatcher(None, ref, names, autojunk=False)
            got = [(r.events[b + t], cap.items[a + t]) for a, b, size in sm.get_matching_blocks() for t in range(size)]
            if len(got) > len(best[1]):
                best = (sm.ratio(), got)
        pairs = best[1]
        r.method = "order and name" if pairs else "none"
        if len(pairs) < len(r.events):
            r.why = (
                f"{len(r.events) - len(pairs)} of {len(r.events)} replayed events match no eager kernel by order "
                "and name"
            )
    else:
        same = [cap for cap in caps if [c.kind for c in cap.items] == kinds]
        if same:
            cap = max((c for c in same if c.ts <= r.call.ts), key=_TS, default=same[0])  # the latest before it
            pairs = list(zip(r.events, cap.items, strict=True))
            r.method = "order and kind"
            streams = {gpu[k].stream for k in r.events}
            if len(streams) > 1 and r.graph_id is None:
                r.why = (
                    f"the replay ran on {len(streams)} streams and carries no graph node id: its start order may "
                    "differ from the capture's, and kinds alone cannot tell (matched by start order anyway)"
                )
        else:
            sizes = Counter(len(c.items) for c in caps)
            r.method = "none"
            r.why = (
                f"the replay ran {len(r.events)} events ({_kinds_text(kinds)}); no capture recorded that sequence "
                f"(captures of {', '.join(f'{n} launches' for n in sorted(sizes))})"
            )
    for k, c in pairs:
        _assign(att, ga, k, c)
    r.matched = len(pairs)
    if r.graph_id is not None and pairs:
        known[r.graph_id] = {g: c for k, c in pairs if (g := gpu[k].graph_node_id) is not None}


def _kinds_text(kinds: list[str]) -> str:
    n = Counter(kinds)
    return ", ".join(f"{v} {k}{'s' if v != 1 else ''}" for k, v in n.items())


def summary(att: Attribution, ga: GraphAttribution, total_us: float, top: int = 10) -> dict[str, Any]:
    """The ``cuda_graphs`` section of a trace summary."""
    dur = att.durations
    replayed = [k for k, j in enumerate(ga.replay_of) if j >= 0]
    matched = [k for k in replayed if ga.op_name[k] is not None]
    t_rep = sum(dur[k] for k in replayed)
    t_match = sum(dur[k] for k in matched)
    by_op: dict[str, list[float]] = defaultdict(lambda: [0, 0.0])
    for k in matched:
        row = by_op[ga.op_name[k] or ""]
        row[0] += 1
        row[1] += dur[k]
    methods = Counter(r.method for r in ga.replays)
    caps = ga.captures
    return {
        "launches": len(ga.replays),
        "graph_ids": sorted({r.graph_id for r in ga.replays if r.graph_id is not None}),
        "replayed_events": len(replayed),
        "replayed_time_us": round(t_rep, 3),
        "replayed_share_pct": round(100.0 * t_rep / total_us, 2) if total_us > 0 else 0.0,
        "matched_events": len(matched),
        "matched_time_us": round(t_match, 3),
        "unmatched_events": len(replayed) - len(matched),
        "order": ga.order,
        "methods": {m: methods[m] for m in METHODS if methods[m]},
        "capture": {
            "source": ga.capture_source,
            "kind": caps[0].source if caps else None,
            "num_captures": len(caps),
            "launches_per_capture": [len(c.items) for c in caps][:20],
        },
        "ops": [
            {
                "op": op,
                "num_events": int(v[0]),
                "time_us": round(v[1], 3),
                "share_pct": round(100.0 * v[1] / total_us, 2) if total_us > 0 else 0.0,
            }
            for op, v in sorted(by_op.items(), key=lambda kv: -kv[1][1])[:top]
        ],
        "notes": [
            {"launch_ts": r.call.ts, "num_events": len(r.events), "matched": r.matched, "why": r.why}
            for r in ga.replays
            if r.why
        ][:5],
        "basis": (
            "each replayed GPU event is linked to its graph launch by the correlation id it shares with the "
            "cudaGraphLaunch call; to the op of the capture by the method named per launch (methods)"
        ),
    }


def captures_of_trace(trace: Any) -> list[Capture]:
    """The captures held by another trace (``--capture``): its captured launches, else its eager events (those no
    graph replayed), with op names and families; op indices cleared (they index that trace's ops)."""
    from attnscope.analysis.fingerprint.attribution import attribute, build_op_tree

    tree = build_op_tree(trace.cpu_ops)
    catt = attribute(tree, trace.runtime, trace.gpu)
    keep = [rt is None or not is_graph_launch(rt.name) for rt in catt.runtime]
    fams = [K.attention_impl(g.name) if g.kind == "kernel" else None for g, y in zip(catt.gpu, keep, strict=True) if y]
    gpu = [g for g, y in zip(catt.gpu, keep, strict=True) if y]
    launcher = [li for li, y in zip(catt.launcher, keep, strict=True) if y]
    return for_other_trace(captures_in(tree, trace.runtime, gpu, launcher, fams))


def call_runs(att: Attribution, call_ops: list[int]) -> list[int]:
    """How many times each call (the index of its outermost op) ran: once if the ops below it launched GPU events
    themselves, plus once per graph replay that ran events matched to them.  Without replays, 1 each."""
    g = att.graph
    if g is None:
        return [1] * len(call_ops)
    owner: dict[int, int] = {}
    for c in call_ops:
        for j in att.tree.subtree(c):
            owner[j] = c
    eager: set[int] = set()
    replays: dict[int, set[int]] = defaultdict(set)
    for k, li in enumerate(att.launcher):
        o = owner.get(li)
        if o is None:
            continue
        if g.replay_of[k] >= 0 and g.op_name[k] is not None:
            replays[o].add(g.replay_of[k])
        else:
            eager.add(o)
    return [(c in eager) + len(replays[c]) for c in call_ops]


def family_calls(att: Attribution, fams: list[Any]) -> dict[str, tuple[int, int]]:
    """Attention calls per family (forward, backward) in a trace that replays graphs: each replay of a capture's
    attention call counts once (the distinct (replay, call) pairs of the replayed events), and each outermost
    attention op of the trace once if it launched events itself (an eager call; a captured op that only recorded
    launches is counted through its replays)."""
    from attnscope.analysis.fingerprint.shape import attention_calls_at

    g = att.graph
    out: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    seen: set[tuple[int, int]] = set()
    if g is not None:
        for k, gc in enumerate(g.call):
            if gc is not None and (g.replay_of[k], gc[0]) not in seen:
                seen.add((g.replay_of[k], gc[0]))
                fam = fams[k][0] if fams[k] is not None else gc[1].family
                out[fam][1 if gc[1].direction == "backward" else 0] += 1
    owner: dict[int, int] = {}
    at = attention_calls_at(att.tree)
    for i, _ in at:
        for j in att.tree.subtree(i):
            owner[j] = i
    eager = {owner[li] for k, li in enumerate(att.launcher) if li in owner and (g is None or g.replay_of[k] < 0)}
    for i, c in at:
        if i in eager:
            out[c.family][1 if c.direction == "backward" else 0] += 1
    return {f: (v[0], v[1]) for f, v in out.items()}
