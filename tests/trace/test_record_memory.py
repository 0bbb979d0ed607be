"""What one record costs: the reader keeps 10^5-10^6 of them, so bytes per record are the trace's memory.

Expected sizes are CPython's object layout worked by hand (64-bit): an object without the cyclic GC's header is
16 bytes of header (reference count, type) and 8 bytes per field; one the GC tracks carries 16 bytes more."""

from __future__ import annotations

import gc
import sys
from pathlib import Path

import pytest

from attnscope.trace import CpuOp, load_trace
from tests.synth import doc, op, write_kineto

pytest.importorskip("msgspec")


def test_an_op_is_seven_pointers_and_a_header() -> None:
    """name, tid, ts, dur, ext_id, pid, shapes: 16 + 7 * 8 = 72 bytes (a slotted class took 88: 16 more for the GC)."""
    o = CpuOp("aten::mm", 1, 10.0, 2.5, 7)
    assert sys.getsizeof(o) == 16 + 7 * 8


def test_recorded_shapes_and_value_equality() -> None:
    o = CpuOp.recorded("aten::mm", 1, 10.0, 2.5, 7, [[2, 3], [3, 4]], ["float", "float"], pid=5)
    assert (o.input_dims, o.input_types, o.input_strides, o.concrete_inputs, o.pid) == (
        [[2, 3], [3, 4]],
        ["float", "float"],
        None,
        None,
        5,
    )
    assert o == CpuOp.recorded("aten::mm", 1, 10.0, 2.5, 7, [[2, 3], [3, 4]], ["float", "float"], pid=5)
    assert o != CpuOp("aten::mm", 1, 10.0, 2.5, 7, pid=5)  # the same op without its shapes
    assert CpuOp.recorded("aten::add", 1, 0.0, 1.0, None)._shapes is None  # nothing recorded: nothing kept
    assert o.end == 12.5


def test_the_readers_ops_are_not_tracked_by_the_gc(tmp_path: Path) -> None:
    """No op refers to another: the cyclic GC need not track 10^5-10^6 of them (nor pay its 16-byte header)."""
    evs = [op("aten::add", 0.0, 4.25, 1), op("aten::mm", 10.0, 2.0, 2, **{"Input Dims": [[2, 3], [3, 4]]})]
    tr = load_trace(write_kineto(tmp_path / "t.json", doc(evs)))
    assert [o.name for o in tr.cpu_ops] == ["aten::add", "aten::mm"]
    assert not any(map(gc.is_tracked, tr.cpu_ops))
    assert tr.cpu_ops[1].input_dims == [[2, 3], [3, 4]]
