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

A GPU event replayed from a CUDA graph is linked by rule 1 to the ``cudaGraphLaunch`` call; :mod:`graphs` then
links it to the op of the capture it stands for (rule ``graph``), and keeps the launch beside it (``graph``).
"""

from __future__ import annotations

import bisect
import math
import re
from array import array
from collections.abc import Iterable, Iterator, Set
from dataclasses import dataclass, field
from functools import cached_property
from itertools import compress, groupby, islice, repeat
from operator import add, attrgetter, lt
from typing import Any

from attnscope.trace import CpuOp, GpuEvent, RuntimeCall

RULES = ("correlation", "time", "external_id", "none")
UNATTRIBUTED = "(unattributed)"  # the launcher name of an event no op launched


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
    # ops[i].ts, sorted within a thread: a list, as compact as an array (the floats are the ops' own)
    starts: list[float] = field(default_factory=list)
    _ext: tuple[array[int], array[int]] | None = None  # see _ext_arrays
    end: float = -math.inf  # the latest end (ts + dur) of any op
    _children: list[list[int]] | None = None
    _names: frozenset[str] | None = None
    _op_names: list[str] | None = None
    _name_codes: tuple[str, dict[str, str]] | None = None  # see indices_named

    @property
    def op_names(self) -> list[str]:
        """``ops[i].name`` for every op, read once: passes over 10^5 ops compare names in C through it."""
        if self._op_names is None:
            self._op_names = list(map(_NAME, self.ops))
        return self._op_names

    @property
    def names(self) -> frozenset[str]:
        """The distinct op names: a pass over 10^5 ops can first ask which names it cares about."""
        if self._names is None:
            self._names = frozenset(self.op_names)
        return self._names

    def indices_named(self, wanted: Set[str]) -> list[int]:
        """The indices of the ops whose name is in ``wanted``, ascending.

        Each op's name is one character of a string (a character per distinct name), so finding a few
        names among 10^5 ops is one regex scan in C that stops only at the ops it finds."""
        if self._name_codes is None:
            code_of = {n: chr(k) for k, n in enumerate(self.names)}
            self._name_codes = "".join(map(code_of.__getitem__, self.op_names)), code_of
        codes, code_of = self._name_codes
        chars = "".join([code_of[n] for n in wanted if n in code_of])
        if not chars:
            return []
        return [m.start() for m in re.finditer(f"[{re.escape(chars)}]", codes)]

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

    def _ext_arrays(self) -> tuple[array[int], array[int]]:
        """External ids, ascending, and the op of each (the last such op in ``ops``): built on first use."""
        if self._ext is None:
            # of equal ids, the last op wins (a dict built in order keeps the last)
            by_ext = dict(zip(map(_EXT, self.ops), range(len(self.ops)), strict=True))
            by_ext.pop(None, None)
            ids = sorted(by_ext)
            self._ext = array("q", ids), array("l", map(by_ext.__getitem__, ids))
        return self._ext

    def op_of_ext(self, ext: int | None) -> int:
        """The op whose External id is ``ext`` (the last such op in ``ops``); -1 if none."""
        if ext is None:
            return -1
        keys, index = self._ext_arrays()
        k = bisect.bisect_right(keys, ext) - 1
        return index[k] if k >= 0 and keys[k] == ext else -1

    def ops_of_ext(self, exts: list[int | None]) -> list[int]:
        """:meth:`op_of_ext` of each id in ``exts``, in one pass over the ops: a GPU step's 10^4 launches
        name a tenth of its ops, so only the ops with a wanted id go into the (small) lookup."""
        wanted = set(exts)
        wanted.discard(None)
        ids = list(map(_EXT, self.ops))
        at = list(compress(range(len(ids)), map(wanted.__contains__, ids)))
        found = dict(zip(map(ids.__getitem__, at), at, strict=True))  # in order: the last op wins
        return [found.get(e, -1) for e in exts]

    @property
    def by_ext_id(self) -> dict[int, int]:
        """External id → op index, as a dict (for callers that want one; the tree keeps arrays)."""
        return dict(zip(*self._ext_arrays(), strict=True))

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


_TS, _DUR, _EXT, _NAME = attrgetter("ts"), attrgetter("dur"), attrgetter("ext_id"), attrgetter("name")
_PID, _TID, _CORR, _KIND = attrgetter("pid"), attrgetter("tid"), attrgetter("correlation"), attrgetter("kind")


def _sort_by_start(ops: list[CpuOp]) -> list[float]:
    """By start, the longer first on a tie; returns the starts.  Kineto writes a thread's ops in start
    order, and starts rarely tie: sort by start alone (linear on sorted input) unless two ops share one."""
    starts = list(map(_TS, ops))
    if all(map(lt, starts, islice(starts, 1, None))):
        return starts  # strictly increasing: already in order, no tie
    ops.sort(key=_TS)
    if len(set(starts)) != len(starts):
        ops.sort(key=_start_key)
    return list(map(_TS, ops))


def build_op_tree(ops: Iterable[CpuOp]) -> OpTree:
    # Per thread (in order of first appearance), by start, longest first: a parent comes before
    # the children that start with it.  A thread's ops come in runs: one list lookup per run.
    by_thread: dict[tuple[object, object], list[CpuOp]] = {}
    for tid, run in groupby(ops, _TID):
        for pid, same in groupby(run, _PID):  # no (pid, tid) tuple per op
            by_thread.setdefault((pid, tid), []).extend(same)
    sorted_ops: list[CpuOp] = []
    starts: list[float] = []
    threads: dict[tuple[object, object], tuple[int, int]] = {}
    for thread, of_thread in by_thread.items():
        starts += _sort_by_start(of_thread)
        threads[thread] = (len(sorted_ops), len(sorted_ops) + len(of_thread))
        sorted_ops += of_thread
    del by_thread
    n = len(sorted_ops)
    parent = array("l", [-1]) * n
    ends = list(map(add, starts, map(_DUR, sorted_ops)))  # op.ts + op.dur
    last_end = max(ends, default=-math.inf)
    ends.append(math.inf)  # ends[-1]: the bottom of every stack, which never closes
    for lo, hi in threads.values():
        # The ops still open, above the bottom (-1): the top is the parent.
        open_ops = [-1]
        pop, push = open_ops.pop, open_ops.append
        top_end = math.inf
        for i in range(lo, hi):
            end = ends[i]
            until = end - 1e-3
            if top_end < until:
                pop()
                while ends[open_ops[-1]] < until:
                    pop()
            parent[i] = open_ops[-1]
            push(i)
            top_end = end
    del ends
    return OpTree(sorted_ops, parent, threads, starts, end=last_end)


@dataclass
class Attribution:
    """For each GPU event (sorted by start): its launching op, runtime call and rule."""

    tree: OpTree
    gpu: list[GpuEvent]
    launcher: list[int]  # index into tree.ops, -1 when nothing links it
    runtime: list[RuntimeCall | None]
    rule: list[str]  # one of RULES, or "graph" (graphs.py: a replayed event matched to the op of its capture)
    graph: Any = None  # graphs.GraphAttribution where the trace replayed CUDA graphs

    # Columns read once (the summary's tables each pass over the 10^4-10^5 events); replace() starts afresh.
    @cached_property
    def durations(self) -> list[float]:
        """``gpu[k].dur`` of every event."""
        return list(map(_DUR, self.gpu))

    @cached_property
    def kernel_names(self) -> list[str]:
        """``gpu[k].name`` of every event."""
        return list(map(_NAME, self.gpu))

    @cached_property
    def kernel_keys(self) -> list[tuple[str, str]]:
        """``(gpu[k].name, gpu[k].kind)`` of every event."""
        return list(zip(self.kernel_names, map(_KIND, self.gpu), strict=True))

    @cached_property
    def launcher_names(self) -> list[str]:
        """The name of the op that launched each event, UNATTRIBUTED where none did."""
        names = self.tree.op_names
        out = [names[li] if li >= 0 else UNATTRIBUTED for li in self.launcher]
        g = self.graph
        if g is not None:  # replayed events: the op of the capture, or the launch that replayed them
            for k, j in enumerate(g.replay_of):
                if j >= 0:
                    op = g.op_name[k]
                    out[k] = op if op is not None else f"{g.replays[j].call.name} (replay not matched to a capture)"
        return out

    def launcher_of(self, k: int) -> CpuOp | None:
        i = self.launcher[k]
        return self.tree.ops[i] if i >= 0 else None

    def by_op(self, of: Set[int] | None = None) -> dict[int, list[GpuEvent]]:
        """The GPU events each op launched, in start order; only the ops in ``of`` when given."""
        out: dict[int, list[GpuEvent]] = {}
        pairs: Iterator[tuple[GpuEvent, int]] = zip(self.gpu, self.launcher, strict=True)
        if of is not None:  # the few events of those ops, picked out in C
            pairs = compress(pairs, map(of.__contains__, self.launcher))
        for g, i in pairs:
            if i >= 0:
                out.setdefault(i, []).append(g)
        return out

    def rule_counts(self) -> dict[str, int]:
        counts = dict.fromkeys(RULES, 0)
        for r in self.rule:
            counts[r] = counts.get(r, 0) + 1
        return counts


def attribute(tree: OpTree, runtime: list[RuntimeCall], gpu: list[GpuEvent]) -> Attribution:
    """Link every GPU event to its runtime call and launching op (rules in the module doc)."""
    # correlation → the first runtime call that carries it (a dict built from the end keeps the first)
    by_corr: dict[int | None, RuntimeCall] = dict(zip(map(_CORR, reversed(runtime)), reversed(runtime), strict=True))
    by_corr.pop(None, None)
    events = sorted(gpu, key=_TS)
    calls: list[RuntimeCall | None] = list(map(by_corr.get, map(_CORR, events)))
    # rules 1 and 3 look up the runtime call's External id, or the event's own without a call
    found = tree.ops_of_ext([g.ext_id if rt is None else rt.ext_id for g, rt in zip(events, calls, strict=True)])
    launcher = found
    rules = [
        ("correlation" if rt is not None else "external_id") if i >= 0 else "none"
        for i, rt in zip(found, calls, strict=True)
    ]
    # rule 2 for the runtime calls whose External id names no op (few): the op around the call on its thread
    for k in compress(range(len(found)), map(lt, found, repeat(0))):
        rt = calls[k]
        if rt is not None and (i := tree.innermost_at(rt.pid, rt.tid, rt.ts)) >= 0:
            launcher[k], rules[k] = i, "time"
    return Attribution(tree, events, launcher, calls, rules)
