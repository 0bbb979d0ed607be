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
