"""Where a model step's time goes, by module: attention (kernel and the work around it) and the rest.

Pure: a :class:`~attnscope.trace.Trace` in, a JSON-shaped dict out, no torch.  The trace must carry
the ``attnscope.model:*`` ranges (see :mod:`attnscope.core.scopes`); op→kernel attribution,
hidden copies and upcasts come from :mod:`attnscope.analysis`.

The unit of time:

- GPU traces: each GPU event's duration (kernel, memcpy, memset), given to the op that launched it
  (correlation id → runtime call → op) and from that op to the scopes around it on its thread;
- CPU traces: each op's self time (its duration less its children's), given to the scopes around it;
  the step's wall time not inside any op (Python, hooks, the profiler) is reported apart.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from attnscope.analysis.fingerprint.attribution import OpTree, attribute, build_op_tree
from attnscope.analysis.fingerprint.build import HALF_TYPES, copies_and_upcasts_at
from attnscope.analysis.fingerprint.spans import union_length
from attnscope.core.scopes import (
    AROUND_PARTS,
    ATTENTION_PARTS,
    AUTOGRAD_NODE,
    REST_PARTS,
    Scope,
    attention_part,
    module_scope,
    parse_scope,
    rest_part,
)
from attnscope.trace import Annotation, GpuEvent, Trace

ATTENTION_ROLES = frozenset({"attention", "mask", "rotary_emb", "core", "repeat_kv", "rotary", "kv_cache"})
_EPS_US = 1e-3

Ctx = dict[str, Scope]


def scopes_of(trace: Trace) -> tuple[list[tuple[Scope, Annotation]], str]:
    """The attnscope.model ranges, or else the with_stack module ranges; and which of the two."""
    out = []
    for a in trace.annotations:
        if a.cat != "user_annotation":
            continue
        s = parse_scope(a.name)
        if s is not None:
            out.append((s, a))
    if any(s.role == "attention" for s, _ in out):
        return out, "attnscope.model ranges"
    for a in trace.modules:  # step-level attnscope ranges (loss, optimizer), if any, stay
        s = module_scope(a.name)
        if s is not None:
            out.append((s, a))
    return out, "with_stack module ranges (forward only)"


def _window(scoped: list[tuple[Scope, Annotation]]) -> tuple[float, float] | None:
    steps = [a for s, a in scoped if s.role == "step"]
    if not steps:
        return None
    a = max(steps, key=lambda x: x.ts)  # the last step: the profiled one after any warm-up
    return a.ts, a.ts + a.dur


def _contexts(tree: OpTree, scoped: list[tuple[Scope, Annotation]]) -> list[tuple[Ctx, bool]]:
    """For each op: the innermost scope of each role around it (same thread), and whether one is a backward scope."""
    by_thread: dict[object, list[tuple[Scope, Annotation]]] = defaultdict(list)
    for s, a in scoped:
        by_thread[a.tid].append((s, a))
    for v in by_thread.values():
        v.sort(key=lambda sa: (sa[1].ts, -sa[1].dur))
    out: list[tuple[Ctx, bool]] = [({}, False)] * len(tree.ops)
    memo: dict[tuple[object, ...], tuple[Ctx, bool]] = {}
    cursor: dict[object, int] = defaultdict(int)
    active: dict[object, list[int]] = defaultdict(list)
    # tree.ops is sorted by start within each thread: one sweep per thread.
    for i, op in enumerate(tree.ops):
        mine = by_thread.get(op.tid)
        if not mine:
            continue
        k, act = cursor[op.tid], active[op.tid]
        while k < len(mine) and mine[k][1].ts <= op.ts + _EPS_US:
            act.append(k)
            k += 1
        cursor[op.tid] = k
        act[:] = [j for j in act if mine[j][1].ts + mine[j][1].dur >= op.ts + op.dur - _EPS_US]
        key = (op.tid, *act)
        hit = memo.get(key)
        if hit is None:
            ctx: Ctx = {}
            for j in act:  # in start order: later (inner) scopes overwrite outer ones of the same role
                ctx[mine[j][0].role] = mine[j][0]
            hit = (ctx, any(mine[j][0].backward for j in act))
            memo[key] = hit
        out[i] = hit
    return out


def _nodes(tree: OpTree) -> list[str | None]:
    """The autograd node each op runs under in a backward pass (None in the forward)."""
    node: list[str | None] = [None] * len(tree.ops)
    for i, op in enumerate(tree.ops):
        if op.name.startswith(AUTOGRAD_NODE):
            node[i] = op.name[len(AUTOGRAD_NODE) :]
        elif tree.parent[i] >= 0:
            node[i] = node[tree.parent[i]]
    return node


def _copy_kind(tree: OpTree, i: int) -> str | None:
    op = tree.ops[i]
    if op.name != "aten::copy_":
        return None
    types, dims = op.input_types or [], op.input_dims or []
    if len(types) < 2 or not dims or not isinstance(dims[0], list) or not dims[0]:
        return None
    if types[0] == "float" and types[1] in HALF_TYPES:
        return "upcast"
    return "copy" if types[0] == types[1] else None


def _layer_of(ctx: Ctx) -> str | None:
    if "layer" in ctx:
        return ctx["layer"].path
    for role in ("attention", "mlp"):
        if role in ctx:
            return ctx[role].path.rpartition(".")[0] or None
    return None


def _self_times(tree: OpTree) -> list[float]:
    own = [op.dur for op in tree.ops]
    for i, p in enumerate(tree.parent):
        if p >= 0:
            own[p] -= tree.ops[i].dur
    return [max(0.0, t) for t in own]


class _Sums:
    def __init__(self) -> None:
        self.attention: dict[str, float] = defaultdict(float)
        self.rest: dict[str, float] = defaultdict(float)
        self.layers: dict[str, dict[str, float]] = defaultdict(lambda: defaultdict(float))
        self.unattributed = 0.0


def _classify(tree: OpTree, ctxs: list[tuple[Ctx, bool]], nodes: list[str | None], have_core: bool) -> list[Any]:
    """Per op: (group, part, layer, context part for copies), group 'attention' or 'rest'."""
    out: list[Any] = []
    for i in range(len(tree.ops)):
        ctx, bwd_scope = ctxs[i]
        node = nodes[i]
        layer = _layer_of(ctx)
        if ATTENTION_ROLES.intersection(ctx):
            part = attention_part(ctx, node, _copy_kind(tree, i), have_core)
            where = attention_part(ctx, node, None, have_core)
            out.append(("attention", part, layer, where, bwd_scope or node is not None))
        else:
            out.append(("rest", rest_part(ctx, bwd_scope or node is not None), layer, None, node is not None))
    return out


def _add(sums: _Sums, cls: Any, t: float) -> None:
    group, part, layer = cls[0], cls[1], cls[2]
    (sums.attention if group == "attention" else sums.rest)[part] += t
    if layer is not None:
        row = sums.layers[layer]
        row["total_us"] += t
        if group == "attention":
            row["attention_us"] += t
            key = "kernel_us" if part == "kernel" else "projections_us" if part == "projections" else "around_us"
            row[key] += t
        elif part == "mlp":
            row["mlp_us"] += t


def breakdown(trace: Trace) -> dict[str, Any] | None:
    """The split of the (last) annotated step, or None when the trace carries no attnscope.model ranges."""
    scoped, source = scopes_of(trace)
    if not any(s.role == "attention" for s, _ in scoped):
        return None
    win = _window(scoped)
    ops = [o for o in trace.cpu_ops if win is None or (o.ts >= win[0] - _EPS_US and o.end <= win[1] + _EPS_US)]
    runtime = [r for r in trace.runtime if win is None or win[0] <= r.ts <= win[1]]
    corr = {r.correlation for r in runtime if r.correlation is not None}
    gpu = [g for g in trace.gpu if win is None or g.correlation in corr]
    tree = build_op_tree(ops)
    att = attribute(tree, runtime, gpu)
    ctxs = _contexts(tree, scoped)
    nodes = _nodes(tree)
    have_core = any(s.role == "core" for s, _ in scoped)
    cls = _classify(tree, ctxs, nodes, have_core)
    sums = _Sums()
    gpu_side = bool(gpu)
    if gpu_side:
        for li, g in zip(att.launcher, att.gpu, strict=True):
            if li < 0:
                sums.unattributed += g.dur
            else:
                _add(sums, cls[li], g.dur)
        total = sum(g.dur for g in att.gpu)
    else:
        for i, t in enumerate(_self_times(tree)):
            _add(sums, cls[i], t)
        span = (win[1] - win[0]) if win else (max(o.end for o in ops) - min(o.ts for o in ops) if ops else 0.0)
        total = span
        sums.unattributed = max(0.0, span - sum(sums.attention.values()) - sum(sums.rest.values()))
    copies, upcasts = _attention_copies(tree, cls, att.by_op(), gpu_side)
    doc = _document(sums, total, copies, upcasts, gpu_side, have_core, scoped)
    doc["step"] = step_parts(doc, att.gpu, win)
    doc["scopes"]["source"] = source
    doc["scopes"]["impl"] = _impl(scoped)
    doc["scopes"]["mode"] = next((s.path for s, _ in scoped if s.role == "step"), None)
    return doc


def step_parts(doc: dict[str, Any], gpu: list[GpuEvent], win: tuple[float, float] | None) -> dict[str, Any]:
    """The profiled step as parts that add up to it (µs), on one clock:

    ``attention + rest + unattributed − overlap + gpu_idle + cpu_only = step``

    - on a GPU, the step runs from the start of its range to the later of the range's end and the last GPU
      event's end; ``overlap`` is GPU time counted twice where events of several streams run at once;
      ``gpu_idle`` the gaps between the first and the last GPU event; ``cpu_only`` the time before the first GPU
      event and after the last one while the host still runs the step;
    - on a CPU, the step is the range's span, nothing is idle, and ``overlap`` is self time of ops on several
      threads beyond the span (``unattributed`` already holds the span outside any op).
    """
    attn, rest, unattr = doc["attention"]["time_us"], doc["rest"]["time_us"], doc["unattributed_us"]
    busy = sum(g.dur for g in gpu)
    if gpu:
        first, last = min(g.ts for g in gpu), max(g.ts + g.dur for g in gpu)
        union = union_length((g.ts, g.ts + g.dur) for g in gpu)
        start = win[0] if win else first
        end_of_step = max(win[1], last) if win else last
        idle = (last - first) - union
        cpu_only = max(0.0, first - start) + max(0.0, end_of_step - last)
        step = end_of_step - start
        overlap = max(0.0, busy - union)
    else:
        step = doc["total_us"]
        idle = cpu_only = 0.0
        overlap = max(0.0, attn + rest + unattr - step)
    return {
        "step_us": _r(step),
        "attention_us": attn,
        "rest_us": rest,
        "unattributed_us": unattr,
        "gpu_idle_us": _r(idle),
        "cpu_only_us": _r(cpu_only),
        "overlap_us": _r(overlap),
        "method": "attention + rest + unattributed − overlap + gpu_idle + cpu_only = step (the profiled step's span)",
    }


def _impl(scoped: list[tuple[Scope, Annotation]]) -> str | None:
    """The attention implementation the core ranges name (eager's is its function), if one."""
    names = {s.path for s, _ in scoped if s.role == "core"}
    names = {"eager" if n == "eager_attention_forward" else n for n in names}
    return names.pop() if len(names) == 1 else None


def _attention_copies(
    tree: OpTree, cls: list[Any], by_op: dict[int, list[GpuEvent]], gpu_side: bool
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Hidden copies and upcasts inside attention, found by the analysis side on each part's ops."""
    groups: dict[tuple[Any, ...], list[int]] = defaultdict(list)
    for i, c in enumerate(cls):
        if c[0] == "attention":
            groups[(c[3], c[2], c[4])].append(i)
    copies: list[dict[str, Any]] = []
    upcasts: list[dict[str, Any]] = []
    for (where, layer, bwd), idx in groups.items():
        sub = build_op_tree([tree.ops[i] for i in idx])
        old = {id(tree.ops[i]): i for i in idx}
        sub_by_op = {j: by_op[old[id(o)]] for j, o in enumerate(sub.ops) if old[id(o)] in by_op}
        found, ups, up_at = copies_and_upcasts_at(sub, sub_by_op)
        tag = {"part": where, "layer": layer, "backward": bwd}
        for c in found:
            copies.append({**_fields(c), **tag})
        for u, j in zip(ups, up_at, strict=True):
            t = sum(g.dur for g in sub_by_op.get(j, [])) if gpu_side else sub.ops[j].dur
            upcasts.append({**_fields(u), "duration_us": round(t, 3), **tag})
    return copies, upcasts


def _fields(obj: Any) -> dict[str, Any]:
    import dataclasses

    d = dataclasses.asdict(obj)
    return {k: (list(v) if isinstance(v, tuple) else v) for k, v in d.items()}


def _r(v: float) -> float:
    return round(v, 3)


def _document(
    sums: _Sums,
    total: float,
    copies: list[dict[str, Any]],
    upcasts: list[dict[str, Any]],
    gpu_side: bool,
    have_core: bool,
    scoped: list[tuple[Scope, Annotation]],
) -> dict[str, Any]:
    attn = sum(sums.attention.values())
    rest = sum(sums.rest.values())
    kernel = sums.attention.get("kernel", 0.0)
    around = sum(sums.attention.get(p, 0.0) for p in AROUND_PARTS)

    def share(v: float) -> float:
        return round(v / total, 4) if total > 0 else 0.0

    layers = [
        {"layer": name, **{k: _r(v) for k, v in sorted(row.items())}, "attention_share": share(row["attention_us"])}
        for name, row in sorted(sums.layers.items(), key=lambda kv: _layer_key(kv[0]))
    ]
    return {
        "device": "gpu" if gpu_side else "cpu",
        "method": (
            "GPU time of the kernels, memcpys and memsets of one profiled step, each given to the op that launched "
            "it and from that op to the attnscope.model ranges around it"
            if gpu_side
            else "self time of each op of one profiled step (CPU), given to the attnscope.model ranges around it; "
            "the step's wall time outside any op is 'unattributed'"
        ),
        "total_us": _r(total),
        "attention": {
            "time_us": _r(attn),
            "share": share(attn),
            "kernel_us": _r(kernel),
            "around_us": _r(around),
            "projections_us": _r(sums.attention.get("projections", 0.0)),
            "parts": {p: _r(sums.attention.get(p, 0.0)) for p in ATTENTION_PARTS},
            "hidden_copies": copies,
            "upcasts": upcasts,
        },
        "rest": {
            "time_us": _r(rest),
            "share": share(rest),
            "parts": {p: _r(sums.rest.get(p, 0.0)) for p in REST_PARTS},
        },
        "unattributed_us": _r(sums.unattributed),
        "layers": layers,
        "scopes": {
            "num": len(scoped),
            "core": have_core,
            "backward": any(s.backward for s, _ in scoped),
        },
    }


def _layer_key(name: str) -> tuple[str, int]:
    head, _, tail = name.rpartition(".")
    return (head, int(tail)) if tail.isdigit() else (name, -1)


# The profiled step may differ from the timed one by this factor either way before its µs are scaled: the
# profiler's cost per op (on a CPU, record_shapes and the op records make a step several times longer).
PROFILE_MISMATCH = 1.25


def _scaled(obj: Any, f: float, in_parts: bool = False) -> Any:
    """Every µs figure below ``obj`` times ``f``: keys ending in ``_us`` and the values of ``parts``."""
    if isinstance(obj, dict):
        return {
            k: (
                _r(v * f)
                if isinstance(v, int | float) and not isinstance(v, bool) and (in_parts or k.endswith("_us"))
                else _scaled(v, f, k == "parts")
            )
            for k, v in obj.items()
        }
    if isinstance(obj, list):
        return [_scaled(v, f) for v in obj]
    return obj


def fit_to_timed(split: dict[str, Any], timed_us: float | None) -> dict[str, Any]:
    """``split`` with its profiled step set against the timed step's median (``profile``), and, where the two
    differ by more than :data:`PROFILE_MISMATCH` either way, every µs figure scaled by timed / profiled: the
    profiled step's shares applied to the timed step.  Shares are unchanged by the scaling; the µs become an
    estimate (the profiler's cost is per op, so parts made of many small ops keep too large a share)."""
    step = (split.get("step") or {}).get("step_us") or split.get("total_us") or 0.0
    if not timed_us or timed_us <= 0 or step <= 0:
        return split
    ratio = step / timed_us
    mismatch = ratio > PROFILE_MISMATCH or ratio < 1 / PROFILE_MISMATCH
    profile = {
        "profiled_step_us": _r(step),
        "timed_step_us": _r(timed_us),
        "profiled_over_timed": round(ratio, 3),
        "scaled": mismatch,
        "method": (
            f"the profiled step took {ratio:.2f}× the timed median (beyond {PROFILE_MISMATCH}× either way): every µs "
            f"of the split is scaled by {1 / ratio:.4f} (timed / profiled), the profiled step's shares applied to "
            "the timed step: an estimate, since the profiler's cost is per op"
            if mismatch
            else f"the profiled step took {ratio:.2f}× the timed median (within {PROFILE_MISMATCH}× either way): "
            "µs as profiled"
        ),
    }
    out = _scaled(split, 1 / ratio) if mismatch else dict(split)
    out["profile"] = profile
    return out


def breakdown_per_step(trace: Trace) -> list[dict[str, Any]]:
    """:func:`breakdown` of each step of a decode loop, the steps read from their ``attnscope.step[...]`` ranges
    (analysis/fingerprint/loop_steps.py), each holding one ``step`` scope: per step, attention, the rest and the
    unattributed (µs), their total (the step's GPU time on CUDA, its span on CPU) and attention's share.  A step
    whose window holds no attention scope gets Nones."""
    import bisect
    from dataclasses import replace

    from attnscope.analysis.fingerprint.loop_steps import find_steps

    found = find_steps(trace.annotations)
    if found is None or found[1] != "host":
        return []
    by_ts = sorted(trace.annotations, key=lambda a: a.ts)
    starts = [a.ts for a in by_ts]
    ops = sorted(trace.cpu_ops, key=lambda o: o.ts)
    op_starts = [o.ts for o in ops]
    rts = sorted(trace.runtime, key=lambda r: r.ts)
    rt_starts = [r.ts for r in rts]
    out: list[dict[str, Any]] = []
    for st in found[2]:
        t0, t1 = st.range.ts - _EPS_US, st.range.ts + st.range.dur + _EPS_US

        def cut(xs: list[Any], at: list[float], t0: float = t0, t1: float = t1) -> list[Any]:
            return xs[bisect.bisect_left(at, t0) : bisect.bisect_right(at, t1)]

        inside = [a for a in cut(by_ts, starts) if a.ts + a.dur <= t1]
        runtime = cut(rts, rt_starts)
        corr = {r.correlation for r in runtime if r.correlation is not None}
        sub = replace(
            trace,
            annotations=inside,
            cpu_ops=cut(ops, op_starts),
            runtime=runtime,
            gpu=[g for g in trace.gpu if g.correlation in corr],
            modules=[],
        )
        b = breakdown(sub)
        if b is None:
            out.append({"attention_us": None, "rest_us": None, "unattributed_us": None, "total_us": None,
                        "attention_share": None})  # fmt: skip
            continue
        a, r, u, total = b["attention"]["time_us"], b["rest"]["time_us"], b["unattributed_us"], b["total_us"]
        out.append(
            {
                "attention_us": a,
                "rest_us": r,
                "unattributed_us": u,
                "total_us": total,
                "attention_share": round(a / total, 4) if total else None,
            }
        )
    return out
