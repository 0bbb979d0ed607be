"""The advice for a copy asked for by a layout op, one sentence per op, each written out: the op named in full
and said to have made the copy, with a reason true of that op (torch's own semantics: reshape and flatten copy only
when no view of the new shape exists; contiguous only for a non-contiguous input; to for a change of dtype, device
or memory format, or copy=True; clone always; expand_as and view_as return views and never copy)."""

from __future__ import annotations

import pytest

from attnscope.analysis.rules.insights import LAYOUT_COPY_OPS, hidden_copy

REWRITE = "make the producer write contiguous output, or keep the strided layout for the consumer, so no copy is needed"
VIEW_ONLY = (
    "returns a view and copies nothing itself: the copy recorded under it is of the tensor it was given: make that "
    "tensor in the layout it is used in, so no copy is needed"
)
EXPECTED = {
    "aten::reshape": f"aten::reshape made a copy because its input's strides allow no view of the new shape: {REWRITE}",
    "aten::flatten": f"aten::flatten made a copy because its input's strides allow no view of the new shape: {REWRITE}",
    "aten::contiguous": f"aten::contiguous made a copy because its input was not contiguous: {REWRITE}",
    "aten::to": (
        "aten::to made a copy: a change of dtype, device or memory format (or copy=True) is never a view: make the "
        "tensor in the dtype, device and memory format it is used in, so no conversion is needed"
    ),
    "aten::clone": (
        "aten::clone made a copy, as a clone always does: drop the clone where neither tensor is changed in place "
        "afterwards"
    ),
    "aten::expand_as": f"aten::expand_as {VIEW_ONLY}",
    "aten::view_as": f"aten::view_as {VIEW_ONLY}",
}


def test_every_layout_op_has_its_sentence() -> None:
    assert {f"aten::{o}" for o in LAYOUT_COPY_OPS} == set(EXPECTED)


@pytest.mark.parametrize("kind", [None, "value", "layout"])
@pytest.mark.parametrize("op", sorted(EXPECTED))
def test_the_sentence_names_the_op_and_reads_as_a_sentence(op: str, kind: str | None) -> None:
    copy = {"op": op, "copy_op": "aten::copy_", "bytes": 1 << 20, "kind": kind}
    r = {"variant": "v", "device_kind": "gpu", "source": "trace", "hidden_copies": [copy]}
    (got,) = hidden_copy(r)
    assert got.advice == EXPECTED[op]
    assert " copied because" not in got.advice  # the old "to copied because ...": a verb where a noun belongs
