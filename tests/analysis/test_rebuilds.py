"""Per-shape work found in a serving loop's trace: rebuild ranges inside step ranges, and ops on few steps."""

from __future__ import annotations

from attnscope.analysis.rebuilds import rebuilds_in_trace
from attnscope.trace import load_trace
from tests.synth import PID, TID, doc, op, write_kineto


def _range(name, ts, dur):
    return {"ph": "X", "cat": "user_annotation", "name": name, "pid": PID, "tid": TID, "ts": ts, "dur": dur, "args": {}}


def test_rebuilds_and_rare_ops_per_step(tmp_path):
    """Four decode steps of 100 µs: steps 0 and 2 hold a 30 µs and a 10 µs rebuild[graph_capture]; step 2 also
    runs an op no other step runs (a build nobody marked).  aten::mm runs on every step."""
    evs = []
    for t in range(4):
        t0 = 1000.0 * t
        evs.append(_range(f"attnscope.step[decode] {t}", t0, 100.0))
        evs.append(op("aten::mm", t0 + 50, 10.0, None))
        if t in (0, 2):
            evs.append(_range("attnscope.rebuild[graph_capture]", t0 + 1, 30.0 if t == 0 else 10.0))
        if t == 2:
            evs.append(op("cudnn_graph_build", t0 + 70, 5.0, None))
    evs.append(_range("attnscope.rebuild[graph_capture]", 9000.0, 5.0))  # outside every step: not counted
    found = rebuilds_in_trace(load_trace(write_kineto(tmp_path / "loop.json", doc(evs))))
    assert found["steps"] == 4 and found["steps_with_rebuild"] == 2 and found["kinds"] == ["decode"]
    assert found["rebuild_host_us_per_step"] == [30.0, 0.0, 10.0, 0.0]
    assert found["rebuild_host_us_median"] == 5.0  # median of 0, 0, 10, 30
    assert found["by_kind"] == {"graph_capture": {"count": 2, "host_us": 40.0}}
    assert found["ops_on_few_steps"] == {"cudnn_graph_build": 1}


def test_no_step_ranges_no_answer(tmp_path):
    path = write_kineto(tmp_path / "t.json", doc([op("aten::mm", 0.0, 1.0, None)]))
    assert rebuilds_in_trace(load_trace(path)) is None
