"""Which CPU op launched which GPU event.  Pure: plain data in, plain data out.

Rules, tried in order for every kernel, memcpy and memset (each one pinned by a test):

1. ``correlation``: the GPU event's correlation id names its runtime call
   (``cudaLaunchKernel``, ``cuLaunchKernelEx``, ``cudaMemcpyAsync``...), and the runtime
   call's ``External id`` names the innermost cpu_op around it.
2. ``time``: the runtime call was found but its External id matches no op (missing, or
   outside the analysed window): the innermost op on the call's thread whose span
   covers the call's start.  Ops nest by time on a thread; Kineto links no parents.
3. ``external_id``: no runtime call (flows dropped, driver-only traces): the GPU
   event's own ``External id``.
4. ``none``: nothing links it.
"""

from __future__ import annotations

import bisect
from collections.abc import Iterable
from dataclasses import dataclass, field

from attnscope.trace import CpuOp, GpuEvent, RuntimeCall

RULES = ("correlation", "time", "external_id", "none")


@dataclass
class OpTree:
    """CPU ops of one window with parent links (nesting by time on the same thread)."""

    ops: list[CpuOp]
    parent: list[int]  # -1 for roots
    by_ext_id: dict[int, int]
    # (pid, tid) → (start times, op indices), both sorted by start: for rule 2
    by_thread: dict[tuple[object, object], tuple[list[float], list[int]]] = field(default_factory=dict)
    _children: list[list[int]] | None = None

    @property
    def children(self) -> list[list[int]]:
        """Child indices per op, built on first use: a training step has 10^5 ops and most
        analyses walk up (ancestors), not down, so the lists are not built otherwise."""
        if self._children is None:
            kids: list[list[int]] = [[] for _ in self.parent]
            for i, p in enumerate(self.parent):
                if p >= 0:
                    kids[p].append(i)
            self._children = kids
        return self._children

    def ancestors(self, i: int) -> Iterable[int]:
        p = self.parent[i]
        while p >= 0:
            yield p
            p = self.parent[p]

    def innermost_at(self, pid: object, tid: object, ts: float) -> int:
        """The deepest op on this thread whose span covers ``ts``; -1 if none does."""
        hit = self.by_thread.get((pid, tid))
        if hit is None:
            return -1
        starts, idx = hit
        k = bisect.bisect_right(starts, ts) - 1
        if k < 0:
            return -1
        i = idx[k]
        while i >= 0 and self.ops[i].ts + self.ops[i].dur < ts:
            i = self.parent[i]
        return i


def build_op_tree(ops: list[CpuOp]) -> OpTree:
    # Per thread, by start, longest first: a parent comes before the children that start with it.
    by_thread: dict[tuple[object, object], list[CpuOp]] = {}
    for op in ops:
        by_thread.setdefault((op.pid, op.tid), []).append(op)
    sorted_ops: list[CpuOp] = []
    for same in by_thread.values():
        same.sort(key=lambda o: (o.ts, -o.dur))
        sorted_ops += same
    n = len(sorted_ops)
    parent = [-1] * n
    thread_index: dict[tuple[object, object], tuple[list[float], list[int]]] = {}
    stack: list[int] = []
    last: object = object()
    ends = [op.ts + op.dur for op in sorted_ops]
    starts: list[float] = []
    idx: list[int] = []
    for i, op in enumerate(sorted_ops):
        key = (op.pid, op.tid)
        if key != last:
            stack = []
            last = key
            starts, idx = thread_index.setdefault(key, ([], []))
        end = ends[i]
        while stack and ends[stack[-1]] < end - 1e-3:
            stack.pop()
        if stack:
            parent[i] = stack[-1]
        stack.append(i)
        starts.append(op.ts)
        idx.append(i)
    by_ext = {op.ext_id: i for i, op in enumerate(sorted_ops) if op.ext_id is not None}
    return OpTree(sorted_ops, parent, by_ext, thread_index)


@dataclass
class Attribution:
    """For each GPU event (sorted by start): its launching op, runtime call and rule."""

    tree: OpTree
    gpu: list[GpuEvent]
    launcher: list[int]  # index into tree.ops, -1 when nothing links it
    runtime: list[RuntimeCall | None]
    rule: list[str]  # one of RULES

    def launcher_of(self, k: int) -> CpuOp | None:
        i = self.launcher[k]
        return self.tree.ops[i] if i >= 0 else None

    def by_op(self) -> dict[int, list[GpuEvent]]:
        out: dict[int, list[GpuEvent]] = {}
        for g, i in zip(self.gpu, self.launcher, strict=True):
            if i >= 0:
                out.setdefault(i, []).append(g)
        return out

    def rule_counts(self) -> dict[str, int]:
        counts = dict.fromkeys(RULES, 0)
        for r in self.rule:
            counts[r] += 1
        return counts


def attribute(tree: OpTree, runtime: list[RuntimeCall], gpu: list[GpuEvent]) -> Attribution:
    """Link every GPU event to its runtime call and launching op (rules in the module doc)."""
    by_corr: dict[int, RuntimeCall] = {}
    for r in runtime:
        if r.correlation is not None:
            by_corr.setdefault(r.correlation, r)
    by_ext = tree.by_ext_id
    events = sorted(gpu, key=lambda e: e.ts)
    launcher: list[int] = []
    calls: list[RuntimeCall | None] = []
    rules: list[str] = []
    for g in events:
        rt = by_corr.get(g.correlation) if g.correlation is not None else None
        i, rule = -1, "none"
        if rt is not None:
            j = by_ext.get(rt.ext_id, -1) if rt.ext_id is not None else -1
            if j >= 0:
                i, rule = j, "correlation"
            else:
                j = tree.innermost_at(rt.pid, rt.tid, rt.ts)
                if j >= 0:
                    i, rule = j, "time"
        elif g.ext_id is not None and g.ext_id in by_ext:
            i, rule = by_ext[g.ext_id], "external_id"
        launcher.append(i)
        calls.append(rt)
        rules.append(rule)
    return Attribution(tree, events, launcher, calls, rules)
