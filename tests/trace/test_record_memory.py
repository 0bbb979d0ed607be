"""What one record costs: the reader keeps 10^5-10^6 of them, so bytes per record are the trace's memory.

Expected sizes are CPython's object layout worked by hand (64-bit): an object without the cyclic GC's header is
16 bytes of header (reference count, type) and 8 bytes per field; one the GC tracks carries 16 bytes more."""

from __future__ import annotations

import math
import sys
from pathlib import Path

import pytest

from attnscope.trace import CpuOp, load_trace
from tests.synth import doc, kernel, launch, op, write_kineto

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


def _trace(tmp_path: Path) -> Path:
    evs = [
        op("aten::add", 0.0, 4.25, 1),
        op("aten::mul", 10.0, 4.25, 2),  # the same duration as the add, written again in the text
        op("aten::relu", 20.0, -0.0, 3),  # -0.0 keeps its sign (0.0 == -0.0: not shared with a 0.0)
        op("aten::sub", 30.0, 0.0, 4),
        op("aten::div", 40.0, 1024.0, 5),
        launch(1.0, 11, 1, dur=4.25),
        launch(11.0, 12, 2, dur=4.25),
        kernel("k1", 50.0, 4.25, 11, 1, **{"shared memory": 1024, "est. achieved occupancy %": 37.5}),
        kernel("k2", 60.0, 4.25, 12, 2, **{"shared memory": 1024, "est. achieved occupancy %": 37.5}),
    ]
    return write_kineto(tmp_path / "t.json", doc(evs))


def test_equal_numbers_are_one_object(tmp_path: Path) -> None:
    """A duration, an occupancy or a shared memory size that recurs is one object: at 24-32 bytes each, the numbers
    were half of what the records held (the Llama trace: 29,732 distinct durations among its 58,850 ops)."""
    tr = load_trace(_trace(tmp_path))
    ops = {o.name: o for o in tr.cpu_ops}
    assert ops["aten::add"].dur == 4.25 and ops["aten::add"].dur is ops["aten::mul"].dur
    assert tr.runtime[0].dur is tr.runtime[1].dur is ops["aten::add"].dur
    g1, g2 = tr.gpu
    assert g1.dur is g2.dur is ops["aten::add"].dur
    assert g1.shared_memory_bytes is g2.shared_memory_bytes
    assert g1.kineto_occupancy_pct is g2.kineto_occupancy_pct


def test_sharing_keeps_each_value_as_written(tmp_path: Path) -> None:
    """Sharing compares by ==: -0.0 == 0.0 and 1024 == 1024.0, yet each keeps its own sign and type."""
    tr = load_trace(_trace(tmp_path))
    ops = {o.name: o for o in tr.cpu_ops}
    assert math.copysign(1.0, ops["aten::relu"].dur) == -1.0
    assert math.copysign(1.0, ops["aten::sub"].dur) == 1.0
    assert type(ops["aten::div"].dur) is float
    smem = tr.gpu[0].shared_memory_bytes
    assert type(smem) is int and smem == 1024
