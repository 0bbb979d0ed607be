"""The attribution line of ``analyze``'s summary puts each count beside the way it was found."""

from __future__ import annotations

from attnscope.report.text.summary import _launch_lines

LAUNCH = {
    "launch_to_start_us": {"p50_us": 1.0, "p95_us": 2.0, "max_us": 3.0},
    "runtime_calls": [{"name": "cudaLaunchKernel", "num": 1204, "total_us": 9475.0}],
    "runtime_total_us": 9475.0,
    "num_shorter_than_launch": 0,
}


def test_each_count_stands_before_its_method():
    """HTA's recommender trace: 1,188 of its 1,204 events found by the op around the launch call (rule "time").
    The line once read "by time on the thread 1,188", a thread's id to the reader."""
    att = {"correlation": 0, "time": 1188, "external_id": 0, "none": 16}
    line = _launch_lines(LAUNCH, att)[0]
    assert line.startswith("launching op found for 1,188 of 1,204 GPU events (")
    assert "1,188 by the op around the launch call on its thread" in line
    assert "0 by their launch call's External id" in line and "0 by their own External id" in line
    assert "thread 1,188" not in line


def test_graph_count_named_only_where_there_is_one():
    att = {"correlation": 5, "time": 0, "external_id": 2, "none": 1, "graph": 40}
    line = _launch_lines(LAUNCH, att)[0]
    assert "launching op found for 47 of 48 GPU events" in line  # 5 + 2 + 40 found, 1 not
    assert "5 by their launch call's External id" in line and "2 by their own External id" in line
    assert line.endswith(", 40 by the op of a CUDA graph's capture)")
    assert "CUDA graph" not in _launch_lines(LAUNCH, {"correlation": 3, "time": 0, "external_id": 0, "none": 0})[0]
