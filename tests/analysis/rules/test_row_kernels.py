"""The compute kernels read once per row while annotating: the same answers as reading them each time."""

from __future__ import annotations

import collections
import dataclasses
from typing import Any

from attnscope.analysis.annotate import as_data
from attnscope.analysis.rules.insights import main_kernel, safe_softmax_kernels
from attnscope.analysis.rules.row_kernels import compute_kernels, kernels_read_once, names, read_once


def _k(name: str, category: str, us: float, launched_by: str | None = None) -> dict[str, Any]:
    return {"name": name, "category": category, "duration_us": us, "launched_by": launched_by}


def _row() -> dict[str, Any]:
    return {
        "kernels": [
            _k("Memcpy HtoD", "memcpy", 9.0),
            _k("gemm_a", "gemm", 3.0, "aten::mm"),
            _k("Memset", "memset", 8.0),
            _k("gemm_b", "gemm", 5.0, "aten::mm"),
            _k("elementwise", "elementwise", 5.0, "aten::isneginf"),
            _k("reduce", "reduction", 1.0, "aten::all"),
        ]
    }


def test_compute_kernels_leave_out_memcpy_and_memset_inside_and_outside_the_scope():
    r = _row()
    outside = compute_kernels(r)
    with kernels_read_once():
        first, second = compute_kernels(r), compute_kernels(r)
    assert [k["name"] for k in outside] == ["gemm_a", "gemm_b", "elementwise", "reduce"]
    assert first == second == outside
    assert all(a is b for a, b in zip(first, r["kernels"][1:2] + r["kernels"][3:], strict=True))  # the row's dicts
    first.pop()  # a caller's list is its own
    with kernels_read_once():
        compute_kernels(r).clear()
        assert len(compute_kernels(r)) == 4


def test_main_kernel_is_the_first_longest_compute_kernel():
    r = _row()  # the memcpy (9 µs) is longer but not compute; gemm_b and elementwise tie at 5 µs: the first wins
    assert main_kernel(r)["name"] == "gemm_b"
    with kernels_read_once():
        assert main_kernel(r)["name"] == "gemm_b"
        assert read_once(r, names) == frozenset({"gemm_a", "gemm_b", "elementwise", "reduce"})


def test_a_row_given_new_kernels_inside_the_scope_is_read_afresh():
    r = _row()
    with kernels_read_once():
        assert main_kernel(r)["name"] == "gemm_b"
        r["kernels"] = [_k("attn", "attention", 1.0)]
        assert main_kernel(r)["name"] == "attn"
        assert [k["name"] for k in compute_kernels({"kernels": []})] == []


def test_safe_softmax_guard_found_by_its_launching_op():
    r = _row()  # isneginf (launched_by) starts the guard, all follows; the first gemm before it does not count
    assert [k["name"] for k in safe_softmax_kernels(r)] == ["elementwise", "reduce"]
    r["kernels"][4]["launched_by"] = None
    assert safe_softmax_kernels(r) == []
    r["kernels"][4]["name"] = "isneginf_kernel"  # starts the scan by its name; not an aten op's: only "all" counts
    assert [k["name"] for k in safe_softmax_kernels(r)] == ["reduce"]


Pair = collections.namedtuple("Pair", "a b")


@dataclasses.dataclass
class _Inner:
    values: list[Any]
    pair: Any = None


@dataclasses.dataclass
class _Outer:
    evidence: dict[Any, Any]
    inner: _Inner
    names: tuple[str, ...] = ()
    other: Any = None


def test_as_data_is_dataclasses_asdict():
    shared = [1, 2]
    o = _Outer(
        {"dims": [shared, (3, 4.5)], 7: None, "nested": {"x": [True, "s"]}, "od": collections.OrderedDict(k=[1])},
        _Inner([{"a": shared}], Pair(1, [2])),
        ("n1", "n2"),
        frozenset({3}),
    )
    got, want = as_data(o), dataclasses.asdict(o)
    assert got == want and repr(got) == repr(want)  # same values, same container types, same key order
    assert got["evidence"]["dims"][0] is not shared  # a copy, as asdict's
