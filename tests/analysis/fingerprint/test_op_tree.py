"""The op tree and the launch attribution on hand-made ops, runtime calls and GPU events: nesting by
time (ties at the start, the end and Kineto's 1 ns rounding), the innermost op at a time, and the
index -1 for "nothing", whichever op is first."""

from __future__ import annotations

from attnscope.analysis.fingerprint.attribution import attribute, build_op_tree
from attnscope.trace import CpuOp, GpuEvent, RuntimeCall

PID, TID = 0, 1


def _op(name: str, ts: float, dur: float, ext: int | None = None, tid: int = TID) -> CpuOp:
    return CpuOp(name, tid, ts, dur, ext, pid=PID)


def _launch(ts: float, corr: int, ext: int | None) -> RuntimeCall:
    return RuntimeCall("cudaLaunchKernel", TID, ts, 1.0, corr, ext, pid=PID)


def _kernel(ts: float, corr: int | None, ext: int | None = None) -> GpuEvent:
    return GpuEvent("kernel", f"k{ts}", ts, 1.0, corr, ext, device=0, stream=7)


def _parents(ops: list[CpuOp]) -> dict[str, str | None]:
    tree = build_op_tree(ops)
    return {o.name: (tree.ops[p].name if p >= 0 else None) for o, p in zip(tree.ops, tree.parent, strict=True)}


def test_an_op_starting_with_its_parent_nests_under_it_and_roots_are_minus_one():
    """inner [0, 4] and outer [0, 10] start together; whatever their order in the trace, the longer
    one is the parent: ops sorted outer first, parent links [-1, 0]."""
    tree = build_op_tree([_op("inner", 0, 4), _op("outer", 0, 10)])
    assert [o.name for o in tree.ops] == ["outer", "inner"]
    assert list(tree.parent) == [-1, 0]  # an array of parent indexes


def test_an_op_ending_with_its_parent_is_its_child():
    """parent [0, 10], child [5, 10]: same end, nested."""
    assert _parents([_op("parent", 0, 10), _op("child", 5, 5)]) == {"parent": None, "child": "parent"}


def test_an_op_overrunning_its_parent_by_1_ns_is_still_its_child():
    """Kineto rounds to the ns, so an overrun of up to 1 ns still nests: child [2, 2 + 8.001] ends
    10.001, and 10 < 10.001 − 0.001 is false (both sums are exact in binary floating point here:
    2 + 8.001 == 10.001 and 10.001 − 0.001 == 10.0).  Half a ns over nests too."""
    assert 2 + 8.001 == 10.001 and 10.001 - 1e-3 == 10.0  # the arithmetic the case relies on
    assert _parents([_op("parent", 0, 10), _op("child", 2, 8.001)]) == {"parent": None, "child": "parent"}
    assert _parents([_op("parent", 0, 10), _op("child", 2, 8.0005)]) == {"parent": None, "child": "parent"}


def test_an_op_overrunning_its_parent_by_more_is_not_its_child():
    """child [5, 10.5] ends 0.5 µs after parent [0, 10]: not nested, a root of its own."""
    assert _parents([_op("parent", 0, 10), _op("later", 5, 5.5)]) == {"parent": None, "later": None}


def _tree():
    # thread TID: a [0, 10] holds b [2, 4]; c [20, 25] alone.  Sorted: a=0, b=1, c=2.
    return build_op_tree([_op("a", 0, 10, ext=1), _op("b", 2, 2, ext=2), _op("c", 20, 5, ext=3)])


def test_innermost_op_at_a_time():
    tree = _tree()
    assert [o.name for o in tree.ops] == ["a", "b", "c"]
    at = {ts: tree.innermost_at(PID, TID, ts) for ts in (-1, 0, 3, 4, 6, 10, 15, 22, 30)}
    # before any op; a's start; inside b; b's last instant (ends are inclusive); a after b;
    # a's last instant; after a (its parent is none); inside c; after everything
    assert at == {-1: -1, 0: 0, 3: 1, 4: 1, 6: 0, 10: 0, 15: -1, 22: 2, 30: -1}


def test_innermost_op_of_a_thread_without_ops_is_minus_one():
    assert _tree().innermost_at(PID, TID + 1, 3) == -1
    assert _tree().innermost_at(PID + 1, TID, 3) == -1


def test_the_first_op_launches_by_correlation_and_owns_its_events():
    """Op 0 (a) launches k1 through its runtime call's External id: rule correlation, not time."""
    tree = _tree()
    att = attribute(tree, [_launch(1, corr=11, ext=1)], [_kernel(50, corr=11)])
    assert att.launcher == [0] and att.rule == ["correlation"]
    assert att.launcher_of(0) is tree.ops[0]
    assert att.by_op() == {0: att.gpu}


def test_the_first_op_found_by_time_owns_its_events():
    """A runtime call without External id at t=6, inside a (op 0) only: rule time, launcher 0."""
    tree = _tree()
    att = attribute(tree, [_launch(6, corr=11, ext=None)], [_kernel(50, corr=11)])
    assert att.launcher == [0] and att.rule == ["time"]
    assert att.by_op() == {0: att.gpu}


def test_an_event_nothing_links_is_minus_one_and_has_no_launcher():
    """k1's correlation names no runtime call and its own External id (99) no op; k2 has neither."""
    tree = _tree()
    att = attribute(tree, [], [_kernel(50, corr=11, ext=99), _kernel(60, corr=None)])
    assert att.launcher == [-1, -1] and att.rule == ["none", "none"]
    assert att.launcher_of(0) is None and att.launcher_of(1) is None
    assert att.by_op() == {}
    assert att.rule_counts() == {"correlation": 0, "time": 0, "external_id": 0, "none": 2}


def test_subtree_is_the_op_and_what_nests_in_it_by_the_trees_rule() -> None:
    """a [0, 10] ⊃ b [2, 5] ⊃ c [3, 4]; d [10, 10] (zero length at a's end: inside a, as the tree nests it);
    f [1, 2] on another thread.  Then a [0, 10] and e [10, 12] (starts at a's end, runs past it): a sibling."""
    t = build_op_tree([_op("a", 0, 10), _op("b", 2, 3), _op("c", 3, 1), _op("d", 10, 0), _op("f", 1, 1, tid=TID + 1)])
    assert [o.name for o in t.ops] == ["a", "b", "c", "d", "f"]
    assert list(t.parent) == [-1, 0, 1, 0, -1]
    assert [t.subtree(i) for i in range(5)] == [[0, 1, 2, 3], [1, 2], [2], [3], [4]]
    t = build_op_tree([_op("a", 0, 10), _op("e", 10, 2)])
    assert list(t.parent) == [-1, -1]
    assert (t.subtree(0), t.subtree(1)) == ([0], [1])


def test_an_op_of_another_thread_never_nests_under_one_that_spans_it_in_time():
    """Thread 1: a [0, 100] (still open when thread 2's ops start); thread 2: b [10, 20] ⊃ c [12, 15].  Nesting is
    per thread: b is a root, c is b's child, and a has no child."""
    assert _parents([_op("a", 0, 100), _op("b", 10, 10, tid=TID + 1), _op("c", 12, 3, tid=TID + 1)]) == {
        "a": None,
        "b": None,
        "c": "b",
    }


def test_an_external_id_equal_to_another_ops_index_is_still_found():
    """Ops in start order: o0 (External id 3), o1, o2 (none), o3 (id 1).  Sorted by id: (1, index 3), (3, index
    0): the index of id 1's op (3) equals the next id (3), and both ids are found at their own op."""
    t = build_op_tree([_op("o0", 0, 1, 3), _op("o1", 2, 1), _op("o2", 4, 1), _op("o3", 6, 1, 1)])
    assert (t.op_of_ext(1), t.op_of_ext(3), t.op_of_ext(2)) == (3, 0, -1)
    assert t.by_ext_id == {1: 3, 3: 0}
