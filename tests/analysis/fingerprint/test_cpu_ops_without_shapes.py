"""A CPU trace's op count (leaf compute aten ops) where the profiler recorded no input shapes
(``record_shapes=False``): an op is left out as a scalar op only where its recorded inputs say so; without shapes
it counted as a scalar op, so every such trace read 'ops 0'."""

from __future__ import annotations

import attnscope
from tests.synth import doc, op, write_kineto


def _ops(tmp_path, **dims):
    """aten::linear → aten::addmm (the leaf), then a lone aten::add_ and an aten::empty (metadata: never counted)."""
    events = [
        op("aten::linear", 10.0, 40.0, 1, **dims),
        op("aten::addmm", 12.0, 30.0, 2, **dims),
        op("aten::add_", 60.0, 5.0, 3, **dims),
        op("aten::empty", 70.0, 1.0, 4, **dims),
    ]
    res = attnscope.analyze(str(write_kineto(tmp_path / "t.json", doc(events))))
    return res.fingerprint.num_kernels


def test_ops_without_recorded_shapes_count(tmp_path):
    assert _ops(tmp_path) == 2  # the leaves addmm and add_; linear has a child, empty is metadata


def test_ops_with_shapes_count_as_before(tmp_path):
    assert _ops(tmp_path, **{"Input Dims": [[4, 8], [8, 4]], "Input type": ["float", "float"]}) == 2


def test_ops_whose_inputs_are_all_scalars_do_not_count(tmp_path):
    assert _ops(tmp_path, **{"Input Dims": [[], []], "Input type": ["Scalar", "Scalar"]}) == 0
