"""Trace events → Fingerprint.  Pure: plain data in, plain data out, no torch.

One path serves ``attnscope run`` (a trace of one profiled call, marked by the
``attnscope::call`` annotation) and ``attnscope analyze`` (any trace, whole).
"""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass, replace
from operator import attrgetter

from attnscope.analysis.fingerprint import graphs as G
from attnscope.analysis.fingerprint import kernels as K
from attnscope.analysis.fingerprint.attribution import Attribution, OpTree, attribute, build_op_tree
from attnscope.analysis.fingerprint.copy_context import copy_kind, inside_of, library_op
from attnscope.analysis.fingerprint.eager_attention import chains as eager_chains
from attnscope.analysis.fingerprint.mask_ops import describe as describe_mask
from attnscope.analysis.fingerprint.mask_ops import find as find_masks
from attnscope.analysis.fingerprint.occupancy import ArchLimits, arch_limits
from attnscope.analysis.fingerprint.records import cpu_kernel_records, gpu_kernel_records
from attnscope.core.types import Fingerprint, HiddenCopy, Upcast
from attnscope.trace import CpuOp, GpuEvent, Trace

CALL_ANNOTATION = "attnscope::call"
_DUR, _NAME, _CATEGORY = attrgetter("dur"), attrgetter("name"), attrgetter("category")

# Kineto's "Input type" strings → bytes per element.
TYPE_BYTES: dict[str, int] = {
    "float": 4,
    "double": 8,
    "c10::BFloat16": 2,
    "c10::Half": 2,
    "long int": 8,
    "int": 4,
    "short int": 2,
    "signed char": 1,
    "unsigned char": 1,
    "bool": 1,
    "c10::Float8_e4m3fn": 1,
    "c10::Float8_e5m2": 1,
}
HALF_TYPES = frozenset({"c10::BFloat16", "c10::Half"})
# Ops that only carry a copy out for somebody else; the cause is the first op above them.
_COPY_OP = frozenset({"aten::copy_"})
# A gather of whole rows into a new tensor: paged KV's pages copied into a dense K/V (gather-then-attend)
_GATHER_OP = frozenset({"aten::index_select"})
COPY_WRAPPERS = frozenset({"aten::copy_", "aten::clone", "aten::contiguous", "aten::_to_copy", "aten::to"})
MASK_OPS = frozenset({"aten::tril", "aten::triu", "aten::tril_", "aten::triu_"})


def _numel(dims: object) -> int | None:
    if not isinstance(dims, list) or not dims:
        return None
    if not all(isinstance(d, int) for d in dims):
        return None
    return math.prod(dims)


def _limits_for(trace: Trace) -> tuple[ArchLimits | None, tuple[int, int] | None, str | None]:
    if not trace.device_properties:
        return None, None, None
    p = trace.device_properties[0]
    cc = (int(p.get("computeMajor", 0)), int(p.get("computeMinor", 0)))
    lim = arch_limits(cc)
    if lim is not None:
        # The trace's own device properties beat the table where it has them.
        over: dict[str, int] = {}
        if p.get("regsPerMultiprocessor"):
            over["registers_per_sm"] = int(p["regsPerMultiprocessor"])
        if p.get("sharedMemPerMultiprocessor"):
            over["shared_memory_per_sm"] = int(p["sharedMemPerMultiprocessor"])
        if p.get("maxThreadsPerMultiprocessor"):
            over["max_warps_per_sm"] = int(p["maxThreadsPerMultiprocessor"]) // 32
        lim = replace(lim, **over)  # type: ignore[arg-type]
    return lim, cc, p.get("name")


def _window(trace: Trace) -> tuple[float, float, object] | None:
    calls = [a for a in trace.annotations if a.name == CALL_ANNOTATION and a.cat == "user_annotation"]
    if not calls:
        return None
    a = calls[-1]
    return a.ts, a.ts + a.dur, a.tid


def select_window(trace: Trace) -> tuple[list[CpuOp], list[GpuEvent], tuple[float, float] | None]:
    """The ops and GPU events of the profiled call and its span, or the whole trace and None."""
    win = _window(trace)
    if win is None:
        return list(trace.cpu_ops), list(trace.gpu), None
    t0, t1, tid = win
    inside = [o for o in trace.cpu_ops if o.ts >= t0 and o.end <= t1 + 1e-3]
    # The call's own thread, and other threads of its process whose ops lie wholly inside the
    # call: autograd runs a CUDA backward on a thread of its own (backward copies live there).
    pids = {o.pid for o in inside if o.tid == tid}
    ops = [o for o in inside if o.tid == tid or o.pid in pids]
    corr = {r.correlation for r in trace.runtime if t0 <= r.ts <= t1 and r.correlation is not None}
    ext = {o.ext_id for o in ops if o.ext_id is not None}
    gpu = [
        g
        for g in trace.gpu
        if (g.correlation is not None and g.correlation in corr) or (g.correlation is None and g.ext_id in ext)
    ]
    return ops, gpu, (t0, t1)


def _cause(tree: OpTree, i: int) -> str:
    last = tree.ops[i].name
    for a in tree.ancestors(i):
        name = tree.ops[a].name
        if name not in COPY_WRAPPERS:
            return name
        last = name
    return last


def copies_and_upcasts_at(
    tree: OpTree, records_by_op: dict[int, list[GpuEvent]]
) -> tuple[list[HiddenCopy], list[Upcast], list[int]]:
    """Hidden copies, upcasts, and the index in ``tree.ops`` of each upcast's copy_ op."""
    copies: list[HiddenCopy] = []
    upcasts: list[Upcast] = []
    upcast_at: list[int] = []
    ops = tree.ops
    for i in tree.indices_named(_COPY_OP):
        all_dims, types, _, _ = ops[i].shapes()
        if not types or len(types) < 2:
            continue
        dims = all_dims[0] if all_dims else None
        numel = _numel(dims)
        if not numel:  # 0-dim scalar wraps (every `x * float`) and empty tensors copy nothing
            continue
        dst, src = types[0], types[1]
        devs = records_by_op.get(i, [])
        if dst == "float" and src in HALF_TYPES:
            upcasts.append(
                Upcast(_cause(tree, i), src, dst, tuple(dims), numel * 4, inside=inside_of(tree, i))  # type: ignore[arg-type]
            )
            upcast_at.append(i)
        elif dst == src:
            if any(g.kind == "memcpy" and "DtoD" not in g.name for g in devs):
                continue  # a host<->device transfer, not a hidden copy
            dev = devs[0] if devs else None
            copies.append(
                HiddenCopy(
                    op=_cause(tree, i),
                    copy_op=ops[i].name,
                    bytes=numel * TYPE_BYTES.get(dst, 0),
                    dims=tuple(dims),  # type: ignore[arg-type]
                    device_event=dev.name if dev else None,
                    duration_us=sum(g.dur for g in devs) if devs else None,
                    kind=copy_kind(tree, i),
                    inside=inside_of(tree, i),
                )
            )
    return copies, upcasts, upcast_at


def gathers_at(tree: OpTree, records_by_op: dict[int, list[GpuEvent]]) -> list[HiddenCopy]:
    """``index_select`` of 3-D or larger rows (``[tokens, heads, head_dim]``: a KV cache's shape) called by the user's
    code itself (no aten op above it: an embedding's lookup is not one): each
    writes a new tensor of the rows it picks, a copy of ``len(index) × (the row's elements) × (element bytes)``
    (kind ``gather``: e.g. a paged KV cache's pages gathered into a dense K or V before attention)."""
    out = []
    for i in tree.indices_named(_GATHER_OP):
        dims, types, _, concrete = tree.ops[i].shapes()
        if not dims or len(dims) < 3 or not types or not isinstance(dims[0], list) or len(dims[0]) < 3:
            continue  # a KV cache's rows are [heads, head_dim] matrices: a 1-D or 2-D lookup is left alone
        if any(tree.ops[a].name.startswith("aten::") or library_op(tree.ops[a].name) for a in tree.ancestors(i)):
            continue
        src, idx = dims[0], dims[2]
        try:
            dim = int(concrete[1]) if concrete and len(concrete) > 1 and concrete[1] not in ("", None) else 0
        except (TypeError, ValueError):
            continue
        n_idx, n_src = _numel(idx), _numel(src)
        if not n_idx or not n_src or not -len(src) <= dim < len(src) or not src[dim]:
            continue
        out_dims = list(src)
        out_dims[dim] = n_idx
        devs = records_by_op.get(i, [])
        out.append(
            HiddenCopy(
                op=_cause(tree, i),
                copy_op=tree.ops[i].name,
                bytes=n_idx * (n_src // src[dim]) * TYPE_BYTES.get(types[0], 0),
                dims=tuple(out_dims),
                device_event=devs[0].name if devs else None,
                duration_us=sum(g.dur for g in devs) if devs else None,
                kind="gather",
            )
        )
    return out


def _typed_copy(op: CpuOp) -> bool:
    """A copy_ whose recorded types and shape let copies_and_upcasts_at judge it."""
    return op.name == "aten::copy_" and len(op.input_types or []) >= 2 and bool(op.input_dims)


def _orphan_dtod(att: Attribution, linked: set[int]) -> list[HiddenCopy]:
    """DtoD memcpys no typed copy_ op accounts for (e.g. traces without record_shapes)."""
    out = []
    tree = att.tree
    for g, li in zip(att.gpu, att.launcher, strict=True):
        if g.kind != "memcpy" or "DtoD" not in g.name or id(g) in linked:
            continue
        out.append(
            HiddenCopy(
                op=_cause(tree, li) if li >= 0 else "unknown",
                copy_op=tree.ops[li].name if li >= 0 else "unknown",
                bytes=g.bytes or 0,
                dims=(),
                device_event=g.name,
                duration_us=g.dur,
                inside=inside_of(tree, li) if li >= 0 else None,
            )
        )
    return out


def _peak_memory(trace: Trace, ops: list[CpuOp], gpu_side: bool) -> int | None:
    if not trace.memory or not ops:
        return None
    t0 = min(o.ts for o in ops)
    t1 = max(o.end for o in ops)
    dev = 1 if gpu_side else 0
    evs = sorted((m for m in trace.memory if m.device_type == dev), key=lambda m: m.ts)
    if not evs:
        return None
    base = None
    peak = None
    for m in evs:
        if m.ts < t0:
            base = m.total_allocated
        elif m.ts <= t1:
            if base is None:
                base = m.total_allocated - m.bytes
            peak = m.total_allocated if peak is None else max(peak, m.total_allocated)
    if peak is None or base is None:
        return 0 if base is not None else None
    return max(0, peak - base)


@dataclass
class Analysis:
    """A fingerprint with the structures it was computed from, for model-scale summaries."""

    fingerprint: Fingerprint
    attribution: Attribution
    upcast_us: list[float | None]  # device time of each upcast's copy_ op, beside fp.upcasts
    window: tuple[float, float] | None  # the attnscope::call span, None for a whole trace


def fingerprint(trace: Trace) -> Fingerprint:
    """Analyse one trace (or the ``attnscope::call`` window inside it)."""
    return analyse(trace).fingerprint


def analyse(trace: Trace, capture: Trace | None = None) -> Analysis:
    """One pass: op tree, attribution (through CUDA graph replays: ``capture`` is a trace of the graphs' capture,
    else the trace's own captures are used), records, copies and upcasts."""
    ops, gpu, win = select_window(trace)
    tree = build_op_tree(ops)
    att = attribute(tree, trace.runtime, gpu)
    if any(map(G.is_graph_launch, {rt.name for rt in trace.runtime})):
        caps = G.captures_of_trace(capture) if capture is not None else None
        # the trace's own captures: within the analysed window (the ops of one outside it are not in the tree)
        runtime = trace.runtime if win is None else [r for r in trace.runtime if win[0] <= r.ts <= win[1]]
        att.graph = G.resolve(att, runtime, caps, capture.path if capture is not None else "this trace")
    gpu_side = bool(gpu) or bool(trace.device_properties and trace.has_gpu)
    # A CPU-only profile on a machine with a GPU still lists the GPU in deviceProperties.
    limits, cc, dev_name = _limits_for(trace) if gpu_side else (None, None, None)
    notes: list[str] = []
    if trace.num_skipped:
        notes.append(f"{trace.num_skipped} malformed trace events skipped")
    if gpu_side and limits is None and cc is not None:
        notes.append(f"no occupancy limits for compute capability {cc[0]}.{cc[1]}")
    if trace.device_properties and not gpu and not trace.runtime:
        name = trace.device_properties[0].get("name") or "a GPU"
        notes.append(
            f"the trace lists {name} but holds no GPU event and no CUDA runtime call: the profile recorded the CPU "
            "only, or CUPTI recorded nothing (seen in decode loops' traces profiled around a CUDA graph capture with "
            "CUDA activity asked for); every figure here is the host's"
        )

    copy_ops = tree.indices_named(_COPY_OP)
    # copies_and_upcasts_at and the DtoD links read the copy_ ops' events alone; gathers_at their own
    by_op = att.by_op(set(copy_ops) | set(tree.indices_named(_GATHER_OP)))
    records = gpu_kernel_records(att, limits) if gpu_side else cpu_kernel_records(tree)
    copies, upcasts, upcast_at = copies_and_upcasts_at(tree, by_op)
    copies += gathers_at(tree, by_op)
    if gpu_side:
        linked = {id(g) for i in copy_ops if i in by_op and _typed_copy(tree.ops[i]) for g in by_op[i]}
        copies += _orphan_dtod(att, linked)
    op_names = tree.names
    mask_ops = sorted(op_names & MASK_OPS)
    builds = tuple(describe_mask(tree, att if gpu_side else None, mb) for mb in find_masks(tree)) if mask_ops else ()
    if not mask_ops and any("triu_tril" in name for name in set(map(_NAME, records))):
        mask_ops = ["triu_tril_kernel"]
    backend = None
    if not op_names.isdisjoint(K.SDPA_BACKEND_OPS):
        backend = K.SDPA_BACKEND_OPS[tree.op_names[tree.indices_named(K.SDPA_BACKEND_OPS.keys())[0]]]
    window_us = win[1] - win[0] if win else None
    if window_us is None and ops:
        window_us = tree.end - min(tree.starts[lo] for lo, _ in tree.threads.values())  # sorted within a thread
    per_category = Counter(map(_CATEGORY, records))
    fp = Fingerprint(
        kernels=tuple(records),
        num_kernels=len(records) - per_category["memcpy"] - per_category["memset"],
        num_memcpy=per_category["memcpy"],
        num_memset=per_category["memset"],
        hidden_copies=tuple(copies),
        upcasts=tuple(upcasts),
        mask_rebuilt=bool(mask_ops),
        mask_ops=tuple(mask_ops),
        sdpa_backend=backend,
        device_kind="gpu" if gpu_side else "cpu",
        device_name=dev_name,
        compute_capability=cc,
        trace_gpu_time_us=sum(map(_DUR, gpu)) if gpu_side else None,
        trace_cpu_time_us=window_us,
        trace_peak_memory_bytes=_peak_memory(trace, ops, gpu_side),
        notes=tuple(notes),
        mask_builds=builds,
        tensor_cores=K.any_tensor_cores(records),
        eager_attention=eager_chains(tree),
    )
    upcast_us = [sum(g.dur for g in by_op[i]) if i in by_op else None for i in upcast_at]
    return Analysis(fp, att, upcast_us, win)
