"""The op tree's lookups by name and by External id, against a plain scan of the ops."""

from __future__ import annotations

import random

from attnscope.analysis.fingerprint.attribution import build_op_tree
from attnscope.trace import CpuOp

# names a regex would read as syntax, if the lookup ever put them in a pattern
NAMES = ["aten::copy_", "]", "^", "-", "\\", "[a-z]", "a|b", ".*", "(", "aten::mm"] + [f"op{k}" for k in range(290)]


def _ops(n: int, seed: int) -> list[CpuOp]:
    rnd = random.Random(seed)
    ops = []
    for k in range(n):
        ext = rnd.choice([None, rnd.randrange(200)])  # repeated ids and ops without one
        ops.append(CpuOp(rnd.choice(NAMES), rnd.choice([1, 2]), float(k // 2), 1.0, ext, pid=0))
    return ops


def test_indices_named_are_the_ops_of_those_names_ascending():
    tree = build_op_tree(_ops(3000, 1))
    for wanted in ({"aten::copy_"}, {"]", "^", "-", "\\"}, {"[a-z]", "a|b", ".*", "("}, set(NAMES[:150]), {"absent"}):
        assert tree.indices_named(wanted) == [i for i, op in enumerate(tree.ops) if op.name in wanted]
    assert tree.indices_named(frozenset()) == []
    assert tree.indices_named({"op3": 1}.keys()) == [i for i, op in enumerate(tree.ops) if op.name == "op3"]


def test_ops_of_ext_is_the_last_op_with_that_id_or_minus_one():
    tree = build_op_tree(_ops(3000, 2))
    exts = [None, -5, 10**12, *range(205)]
    want = []
    for e in exts:
        hits = [i for i, op in enumerate(tree.ops) if e is not None and op.ext_id == e]
        want.append(hits[-1] if hits else -1)
    assert tree.ops_of_ext(exts) == want
    assert [tree.op_of_ext(e) for e in exts] == want


def test_indices_named_with_more_distinct_names_than_below_the_surrogate_code_points():
    """One character per distinct name: 60,000 names reach code points U+D800–U+DFFF (lone surrogates)."""
    ops = [CpuOp(f"n{k}", 1, float(k), 0.5, None, pid=0) for k in range(60_000)]
    tree = build_op_tree(ops)
    wanted = {f"n{k}" for k in (0, 55_295, 55_296, 57_000, 59_999)}
    assert tree.indices_named(wanted) == [i for i, op in enumerate(tree.ops) if op.name in wanted]


def test_tree_end_is_the_latest_op_end():
    ops = _ops(500, 3)
    assert build_op_tree(ops).end == max(op.ts + op.dur for op in ops)
    assert build_op_tree([]).end == float("-inf")


def test_events_of_some_ops_are_those_of_all_ops_kept_for_them():
    from attnscope.analysis.fingerprint.attribution import Attribution
    from attnscope.trace import GpuEvent

    tree = build_op_tree(_ops(50, 4))
    gpu = [GpuEvent("kernel", f"k{k}", float(k), 1.0, None, None, 0, 7) for k in range(40)]
    launcher = [(k * 7) % 51 - 1 for k in range(40)]  # -1 (unattributed) .. 49
    att = Attribution(tree, gpu, launcher, [None] * 40, ["none"] * 40)
    every = att.by_op()
    assert every == {i: [g for g, li in zip(gpu, launcher, strict=True) if li == i] for i in set(launcher) if i >= 0}
    of = {-1, 0, 4, 11, 30, 49}
    assert att.by_op(of) == {i: evs for i, evs in every.items() if i in of}
