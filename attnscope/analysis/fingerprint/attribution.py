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
import math
from array import array
from collections.abc import Iterable
from dataclasses import dataclass, field
from operator import attrgetter

from attnscope.trace import CpuOp, GpuEvent, RuntimeCall

RULES = ("correlation", "time", "external_id", "none")


@dataclass
class OpTree:
    """CPU ops of one window with parent links (nesting by time on the same thread).

    ``ops`` holds each thread's ops together, sorted by start (longest first on a tie), so a
    parent always comes before its children.  The links are kept as compact arrays, not one
    object per op: a training step of 10^6 ops would otherwise need ~100 MB for them alone.
    """

    ops: list[CpuOp]
    parent: array[int]  # -1 for roots
    # (pid, tid) → the slice of ``ops`` that thread holds: for rule 2
    threads: dict[tuple[object, object], tuple[int, int]] = field(default_factory=dict)
    starts: array[float] = field(default_factory=lambda: array("d"))  # ops[i].ts, sorted within a thread
    _ext_sorted: array[int] = field(default_factory=lambda: array("q"))  # External ids, ascending
    _ext_index: array[int] = field(default_factory=lambda: array("l"))  # the op of each, the last on a tie
    _children: list[list[int]] | None = None
    _names: frozenset[str] | None = None

    @property
    def names(self) -> frozenset[str]:
        """The distinct op names: a pass over 10^5 ops can first ask which names it cares about."""
        if self._names is None:
            self._names = frozenset([op.name for op in self.ops])
        return self._names

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

    def subtree(self, i: int) -> list[int]:
        """``i`` and every op nested in it, in order.  A parent comes before its children and an op's
        descendants follow it without a gap, so the walk stops at the first op whose parent is outside
        (an op that starts the instant ``i`` ends and runs past it is a sibling, not a child)."""
        out, mine = [i], {i}
        parent = self.parent
        for j in range(i + 1, len(parent)):
            if parent[j] not in mine:
                break
            mine.add(j)
            out.append(j)
        return out

    def op_of_ext(self, ext: int | None) -> int:
        """The op whose External id is ``ext`` (the last such op in ``ops``); -1 if none."""
        if ext is None:
            return -1
        keys = self._ext_sorted
        k = bisect.bisect_right(keys, ext) - 1
        return self._ext_index[k] if k >= 0 and keys[k] == ext else -1

    @property
    def by_ext_id(self) -> dict[int, int]:
        """External id → op index, as a dict (for callers that want one; the tree keeps arrays)."""
        return dict(zip(self._ext_sorted, self._ext_index, strict=True))

    def innermost_at(self, pid: object, tid: object, ts: float) -> int:
        """The deepest op on this thread whose span covers ``ts``; -1 if none does."""
        hit = self.threads.get((pid, tid))
        if hit is None:
            return -1
        lo, hi = hit
        i = bisect.bisect_right(self.starts, ts, lo, hi) - 1
        if i < lo:
            return -1
        while i >= 0 and self.ops[i].ts + self.ops[i].dur < ts:
            i = self.parent[i]
        return i


def _start_key(op: CpuOp) -> tuple[float, float]:
    return (op.ts, -op.dur)


_TS = attrgetter("ts")


def _sort_by_start(ops: list[CpuOp]) -> None:
    """By start, the longer first on a tie.  Kineto writes a thread's ops in start order, and
    starts rarely tie: sort by start alone (linear on sorted input) unless two ops share one."""
    ops.sort(key=_TS)
    starts = [op.ts for op in ops]
    if len(set(starts)) != len(starts):
        ops.sort(key=_start_key)


_EXT = attrgetter("ext_id")


def build_op_tree(ops: Iterable[CpuOp]) -> OpTree:
    # Per thread (in order of first appearance), by start, longest first: a parent comes before
    # the children that start with it.
    by_thread: dict[tuple[object, object], list[CpuOp]] = {}
    last: tuple[object, object] | None = None
    same: list[CpuOp] = []
    for op in ops:  # a thread's ops come in runs: look its list up once per run
        key = (op.pid, op.tid)
        if key != last:
            last = key
            same = by_thread.setdefault(key, [])
        same.append(op)
    sorted_ops: list[CpuOp] = []
    threads: dict[tuple[object, object], tuple[int, int]] = {}
    for thread, of_thread in by_thread.items():
        _sort_by_start(of_thread)
        threads[thread] = (len(sorted_ops), len(sorted_ops) + len(of_thread))
        sorted_ops += of_thread
    del by_thread
    n = len(sorted_ops)
    parent = [-1] * n
    starts = array("d", [op.ts for op in sorted_ops])
    ends = [op.ts + op.dur for op in sorted_ops]
    for lo, hi in threads.values():
        # The ops still open (index, end), above a bottom that never closes: the top is the parent.
        open_i, open_end = [-1], [math.inf]
        pop_i, pop_end, push_i, push_end = open_i.pop, open_end.pop, open_i.append, open_end.append
        top_end = math.inf
        for i in range(lo, hi):
            end = ends[i]
            until = end - 1e-3
            if top_end < until:
                pop_i()
                pop_end()
                while open_end[-1] < until:
                    pop_i()
                    pop_end()
            parent[i] = open_i[-1]
            push_i(i)
            push_end(end)
            top_end = end
    del ends
    # External id → op; of equal ids, the last op wins (a dict built in order keeps the last)
    by_ext = dict(zip(map(_EXT, sorted_ops), range(n), strict=True))
    by_ext.pop(None, None)
    ids = sorted(by_ext)
    keys, index = array("q", ids), array("l", map(by_ext.__getitem__, ids))
    del by_ext, ids
    return OpTree(sorted_ops, array("l", parent), threads, starts, keys, index)


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
    of_ext, innermost = tree.op_of_ext, tree.innermost_at
    events = sorted(gpu, key=_ts)
    launcher: list[int] = []
    calls: list[RuntimeCall | None] = []
    rules: list[str] = []
    for g in events:
        rt = by_corr.get(g.correlation) if g.correlation is not None else None  # type: ignore[arg-type]
        i, rule = -1, "none"
        if rt is not None:
            i = of_ext(rt.ext_id)
            if i >= 0:
                rule = "correlation"
            else:
                i = innermost(rt.pid, rt.tid, rt.ts)
                if i >= 0:
                    rule = "time"
        else:
            i = of_ext(g.ext_id)
            if i >= 0:
                rule = "external_id"
        launcher.append(i)
        calls.append(rt)
        rules.append(rule)
    return Attribution(tree, events, launcher, calls, rules)


def _ts(e: GpuEvent) -> float:
    return e.ts
