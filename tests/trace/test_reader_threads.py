"""Each op keeps its own thread and process ids, whatever events come between two ops of a run.

The reader interns a thread's ids once per run of ops on it; these traces interleave threads,
processes and runtime calls on other threads.  Expected ids are the ones written into each event.
"""

from __future__ import annotations

from attnscope.trace import load_trace
from tests.synth import doc, kernel, launch, op, write_kineto


def test_ops_keep_their_thread_between_runtime_calls_of_other_threads(tmp_path):
    events = [
        op("aten::mm", 0, 10, 1, tid=11),
        launch(1, corr=1, ext=1, tid=99),  # a runtime call on another thread between two ops of thread 11
        op("aten::add", 20, 5, 2, tid=11),
        op("aten::mul", 30, 5, 3, tid=12),
        launch(31, corr=2, ext=3, tid=98),
        op("aten::div", 40, 5, 4, tid=11),
        kernel("gemm", 50, 3, corr=1),
    ]
    events[2]["pid"] = 7  # another process, same thread id
    tr = load_trace(write_kineto(tmp_path / "t.json", doc(events)))
    want = [("aten::mm", events[0]["pid"], 11), ("aten::add", 7, 11), ("aten::mul", events[0]["pid"], 12)]
    want.append(("aten::div", events[0]["pid"], 11))
    assert [(o.name, o.pid, o.tid) for o in tr.cpu_ops] == want
    assert [(r.tid, r.correlation) for r in tr.runtime] == [(99, 1), (98, 2)]


def test_ops_of_one_name_share_one_name_object(tmp_path):
    events = [op("aten::mm", 10 * i, 5, i, tid=11 + i % 2) for i in range(6)]
    tr = load_trace(write_kineto(tmp_path / "t.json", doc(events)))
    assert len(tr.cpu_ops) == 6 and len({id(o.name) for o in tr.cpu_ops}) == 1
    assert [o.tid for o in tr.cpu_ops] == [11, 12, 11, 12, 11, 12]


def test_a_grid_that_is_not_three_numbers_reads_as_none_through_the_safe_path(tmp_path, capsys):
    events = [
        op("aten::mm", 0, 10, 1),
        launch(1, corr=1, ext=1),
        kernel("gemm", 20, 3, corr=1, grid=[4, 2], block=[128, 1, 1]),  # two numbers: not a grid
        kernel("gemm", 30, 3, corr=2, grid=[4, "2", 1], block=[64, 1, 1]),  # a number written as text
    ]
    tr = load_trace(write_kineto(tmp_path / "t.json", doc(events)))
    assert [(g.grid, g.block) for g in tr.gpu] == [(None, (128, 1, 1)), ((4, 2, 1), (64, 1, 1))]
    assert "read by the safe JSON path" in capsys.readouterr().err
