"""CUDA graph replays: every replayed event linked to its graph launch and to the op of the capture.

Synthetic traces written by hand (tests/synth.py); every expected value is read off the events written here.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from attnscope.api import analyze
from attnscope.trace import load_trace
from attnscope.trace.safe import trace_from_doc
from tests.synth import doc, kernel, launch, op, write_kineto

FLASH = "void pytorch_flash::flash_fwd_kernel<x>"
OPS = ("aten::mm", "aten::_scaled_dot_product_flash_attention", "aten::add")
KERNELS = ("nvjet_gemm", FLASH, "elementwise_add_kernel")
DURS = (10.0, 20.0, 5.0)


def _capture(t0: float = 0.0, brackets: bool = True) -> list[dict[str, Any]]:
    """aten::mm, the flash SDPA op and aten::add, each launching one kernel into a graph (nothing runs)."""
    ev = [launch(t0 + 5, 900, None, name="cudaStreamBeginCapture")] if brackets else []
    for i, name in enumerate(OPS):
        ev += [op(name, t0 + 10 + 30 * i, 20, 1 + i), launch(t0 + 12 + 30 * i, 11 + i, 1 + i)]
    if brackets:
        ev.append(launch(t0 + 100, 901, None, name="cudaStreamEndCapture"))
    return ev


def _replay(t: float, corr: int, node_ids: tuple[int, ...] | None = None, order=(0, 1, 2)) -> list[dict[str, Any]]:
    """One cudaGraphLaunch and its three kernels, all carrying its correlation id; started in ``order``."""
    ev = [launch(t, corr, None, name="cudaGraphLaunch")]
    for slot, i in enumerate(order):
        extra = {} if node_ids is None else {"graph id": 7, "graph node id": node_ids[i]}
        ev.append(kernel(KERNELS[i], t + 10 + 30 * slot, DURS[i], corr, **extra))
    return ev


def _write(tmp_path: Path, events: list[dict[str, Any]], name: str = "t.json") -> Path:
    return write_kineto(tmp_path / name, doc(events))


def test_captured_launches_give_every_replayed_kernel_its_capture_op(tmp_path: Path) -> None:
    p = _write(tmp_path, _capture() + _replay(1000, 50) + _replay(2000, 60))
    s = analyze(p).trace_summary
    g = s["cuda_graphs"]
    assert (g["launches"], g["replayed_events"], g["matched_events"], g["unmatched_events"]) == (2, 6, 6, 0)
    assert g["methods"] == {"order and kind": 2}
    assert g["capture"]["kind"] == "captured launches" and g["capture"]["launches_per_capture"] == [3]
    # each op's time: its kernel's duration × 2 replays
    assert {o["op"]: o["time_us"] for o in s["top_ops"]} == {OPS[i]: 2 * DURS[i] for i in range(3)}
    assert s["attribution"]["graph"] == 6 and s["attribution"]["none"] == 0
    assert {k["name"]: k["launched_by"] for k in s["top_kernels"]}[FLASH] == [{"op": OPS[1], "count": 2}]


def test_without_brackets_a_run_of_launches_that_did_not_run_is_the_capture(tmp_path: Path) -> None:
    p = _write(tmp_path, _capture(brackets=False) + _replay(1000, 50))
    g = analyze(p).trace_summary["cuda_graphs"]
    assert g["matched_events"] == 3 and g["capture"]["num_captures"] == 1


def test_no_capture_leaves_the_replay_on_its_launch_and_says_why(tmp_path: Path) -> None:
    p = _write(tmp_path, _replay(1000, 50))
    s = analyze(p).trace_summary
    g = s["cuda_graphs"]
    assert g["matched_events"] == 0 and g["unmatched_events"] == 3
    assert "--capture" in g["notes"][0]["why"]
    assert [o["op"] for o in s["top_ops"]] == ["cudaGraphLaunch (replay not matched to a capture)"]
    assert s["top_ops"][0]["time_us"] == sum(DURS)


def test_a_capture_of_other_launches_matches_nothing(tmp_path: Path) -> None:
    """A capture of two launches cannot stand for a replay of three events: nothing is guessed."""
    ev = _capture()
    ev = [e for e in ev if not (e.get("args", {}).get("correlation") == 13 or e["name"] == "aten::add")]
    g = analyze(_write(tmp_path, ev + _replay(1000, 50))).trace_summary["cuda_graphs"]
    assert g["matched_events"] == 0
    assert "3 events" in g["notes"][0]["why"] and "2 launches" in g["notes"][0]["why"]


def _eager(t0: float) -> list[dict[str, Any]]:
    """The same three ops run eagerly: each launches its kernel, which runs (names known)."""
    ev: list[dict[str, Any]] = []
    for i, name in enumerate(OPS):
        ev += [
            op(name, t0 + 30 * i, 20, 101 + i),
            launch(t0 + 2 + 30 * i, 111 + i, 101 + i),
            kernel(KERNELS[i], t0 + 5 + 30 * i, DURS[i], 111 + i),
        ]
    return ev


def test_graph_node_ids_order_the_replay_and_match_eager_kernels_by_name(tmp_path: Path) -> None:
    """The replay's kernels start in another order than the eager step launched them (streams run at once); the
    node ids give the capture's order, names match the eager kernels, the second replay reuses the first by node."""
    nodes = (3, 4, 5)  # node ids in capture order
    ev = _eager(0) + _replay(1000, 50, nodes, order=(2, 0, 1)) + _replay(2000, 60, nodes, order=(1, 2, 0))
    s = analyze(_write(tmp_path, ev)).trace_summary
    g = s["cuda_graphs"]
    assert g["order"] == "graph node id" and g["graph_ids"] == [7]
    assert g["methods"] == {"order and name": 1, "graph node id": 1}
    assert g["matched_events"] == 6 and g["capture"]["kind"] == "eager kernels"
    # eager once + replayed twice: three times each kernel's duration per op
    assert {o["op"]: o["time_us"] for o in s["top_ops"]} == {OPS[i]: 3 * DURS[i] for i in range(3)}


def test_start_order_without_node_ids_names_what_does_not_match(tmp_path: Path) -> None:
    """Without node ids a replay whose kernels started out of capture order matches only the longest run of names."""
    ev = _eager(0) + _replay(1000, 50, None, order=(2, 0, 1))
    g = analyze(_write(tmp_path, ev)).trace_summary["cuda_graphs"]
    assert g["order"] == "start time"
    assert g["matched_events"] == 2  # mm, flash in order; add started first and matches nothing after them
    assert "1 of 3" in g["notes"][0]["why"]


def test_capture_from_another_trace(tmp_path: Path) -> None:
    cap = _write(tmp_path, _capture(), "capture.json")
    rep = _write(tmp_path, _replay(1000, 50) + _replay(2000, 60), "replay.json")
    s = analyze(rep, capture=cap).trace_summary
    g = s["cuda_graphs"]
    assert g["capture"]["source"] == str(cap) and g["matched_events"] == 6
    assert {o["op"]: o["time_us"] for o in s["top_ops"]} == {OPS[i]: 2 * DURS[i] for i in range(3)}
    # the flash op's family reaches the replayed kernels through the capture trace
    fams = {f["family"]: f["num_kernels"] for f in s["attention_families"]}
    assert fams == {"flash": 2}


def test_both_readers_keep_the_graph_node_id(tmp_path: Path) -> None:
    d = doc(_replay(1000, 50, (3, 4, 5)))
    fast = load_trace(write_kineto(tmp_path / "f.json", d))
    safe = trace_from_doc(d)
    assert [(g.graph_id, g.graph_node_id) for g in fast.gpu] == [(7, 3), (7, 4), (7, 5)]
    assert [(g.graph_id, g.graph_node_id) for g in safe.gpu] == [(7, 3), (7, 4), (7, 5)]


@pytest.mark.parametrize("bad", ["missing.json"])
def test_cli_refuses_a_missing_capture_in_one_line(tmp_path: Path, bad: str) -> None:
    rep = _write(tmp_path, _replay(1000, 50))
    out = subprocess.run(
        [sys.executable, "-m", "attnscope", "analyze", str(rep), "--capture", str(tmp_path / bad)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert out.returncode == 2
    assert out.stderr.strip().count("\n") == 0 and "--capture" in out.stderr


def test_cli_prints_the_graph_lines(tmp_path: Path) -> None:
    cap = _write(tmp_path, _capture(), "capture.json")
    rep = _write(tmp_path, _replay(1000, 50), "replay.json")
    out = subprocess.run(
        [sys.executable, "-m", "attnscope", "analyze", str(rep), "--capture", str(cap)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert out.returncode == 0, out.stderr
    assert "1 graph launch(es) replayed 3 GPU events" in out.stdout
    assert "3 matched to the op of the capture" in out.stdout


def test_a_replay_on_several_streams_is_matched_with_a_warning(tmp_path: Path) -> None:
    ev = _capture() + _replay(1000, 50)
    ev[-1]["args"]["stream"] = 9  # the add kernel on another stream
    g = analyze(_write(tmp_path, ev)).trace_summary["cuda_graphs"]
    assert g["matched_events"] == 3 and g["methods"] == {"order and kind": 1}
    assert "2 streams" in g["notes"][0]["why"]


def test_launch_kinds_by_runtime_call_name() -> None:
    from attnscope.analysis.fingerprint.graphs import launch_kind

    assert launch_kind("cudaLaunchKernel") == "kernel" and launch_kind("cuLaunchKernelEx") == "kernel"
    assert launch_kind("cudaMemcpyAsync") == "memcpy" and launch_kind("cudaMemsetAsync") == "memset"
    # copies to and from a symbol are set-up, not a launch a graph replays
    assert launch_kind("cudaMemcpyToSymbol") is None and launch_kind("cudaMemcpyFromSymbol") is None
    assert launch_kind("cudaStreamSynchronize") is None


def test_an_event_of_the_first_replay_is_matched() -> None:
    from attnscope.analysis.fingerprint.graphs import GraphAttribution

    ga = GraphAttribution([], [0, -1, 1, 0], ["aten::mm", "aten::add", None, "aten::mm"], [None] * 4, [None] * 4,
                          "start time", "this trace")  # fmt: skip
    # replay 0 (the first) with a capture op: matched; no replay, or no op: not
    assert [ga.matched(k) for k in range(4)] == [True, False, False, True]


def test_a_launch_that_runs_inside_the_brackets_does_not_split_the_capture(tmp_path: Path) -> None:
    ev = _capture()
    # a kernel launched and run on another stream at 45 µs, between the captured mm and flash launches
    ev += [op("aten::fill_", 44, 3, 50), launch(45, 500, 50), kernel("fill_kernel", 46, 1.0, 500, stream=9)]
    g = analyze(_write(tmp_path, ev + _replay(1000, 50))).trace_summary["cuda_graphs"]
    assert g["capture"]["launches_per_capture"] == [3] and g["matched_events"] == 3


def test_launches_before_an_end_without_its_begin_are_no_capture(tmp_path: Path) -> None:
    # the trace starts inside a capture: three launches that never ran, then EndCapture with no BeginCapture before
    # it; a whole capture of two launches (mm, flash) follows, between its brackets
    head = [e for e in _capture() if e["name"] != "cudaStreamBeginCapture"]
    whole = [launch(150, 902, None, name="cudaStreamBeginCapture")]
    for i in range(2):
        whole += [op(OPS[i], 160 + 30 * i, 20, 21 + i), launch(162 + 30 * i, 31 + i, 21 + i)]
    whole.append(launch(250, 903, None, name="cudaStreamEndCapture"))
    g = analyze(_write(tmp_path, head + whole + _replay(1000, 50))).trace_summary["cuda_graphs"]
    assert g["capture"]["launches_per_capture"] == [2] and g["matched_events"] == 0
    assert g["notes"][0]["why"] == (
        "the replay ran 3 events (3 kernels); no capture recorded that sequence (captures of 2 launches)"
    )


def test_a_captured_launch_without_an_external_id_takes_the_op_around_it(tmp_path: Path) -> None:
    ev = _capture(brackets=False)
    for e in ev:
        if e["cat"] == "cuda_runtime":
            del e["args"]["External id"]
    s = analyze(_write(tmp_path, ev + _replay(1000, 50))).trace_summary
    g = s["cuda_graphs"]
    assert g["capture"]["kind"] == "captured launches" and g["matched_events"] == 3
    assert {o["op"]: o["time_us"] for o in s["top_ops"]} == {OPS[i]: DURS[i] for i in range(3)}


def test_the_notes_of_a_replay_say_what_ran_and_what_was_captured(tmp_path: Path) -> None:
    ev = _capture()
    ev = [e for e in ev if not (e.get("args", {}).get("correlation") == 13 or e["name"] == "aten::add")]
    g = analyze(_write(tmp_path, ev + _replay(1000, 50))).trace_summary["cuda_graphs"]
    assert g["notes"][0]["why"] == (
        "the replay ran 3 events (3 kernels); no capture recorded that sequence (captures of 2 launches)"
    )
    ev = _capture() + _replay(1000, 50)
    ev[-1]["args"]["stream"] = 9
    g = analyze(_write(tmp_path, ev, "s.json")).trace_summary["cuda_graphs"]
    assert g["notes"][0]["why"] == (
        "the replay ran on 2 streams and carries no graph node id: its start order may differ from the capture's, "
        "and kinds alone cannot tell (matched by start order anyway)"
    )


def test_each_replay_of_a_captured_backward_call_counts_as_a_backward_call(tmp_path: Path) -> None:
    bwd = "aten::_scaled_dot_product_flash_attention_backward"
    ev = [launch(5, 900, None, name="cudaStreamBeginCapture"), op(bwd, 10, 20, 1), launch(12, 11, 1)]
    ev.append(launch(100, 901, None, name="cudaStreamEndCapture"))
    for t, corr in ((1000, 50), (2000, 60)):
        ev += [launch(t, corr, None, name="cudaGraphLaunch"), kernel("flash_bwd_kernel", t + 10, 30.0, corr)]
    s = analyze(_write(tmp_path, ev)).trace_summary
    (fam,) = s["attention_families"]
    assert fam["family"] == "flash"
    assert (fam["num_forward_calls"], fam["num_backward_calls"]) == (0, 2)


def _impls(s: dict[str, Any]) -> dict[str, list[str]]:
    return {f["family"]: f["implementations"] for f in s["attention_families"]}


def test_kernels_of_no_family_under_an_attention_op_say_how_they_belong(tmp_path: Path) -> None:
    """A gemm under the math SDPA op is math 'decomposed into generic kernels'; a fill kernel under the flash op is
    flash's 'helper kernel' (neither name names a family)."""
    ev = [
        op("aten::_scaled_dot_product_attention_math", 0, 100, 1),
        op("aten::bmm", 10, 20, 2),
        launch(12, 11, 2),
        kernel("nvjet_gemm", 200, 10.0, 11),
        op("aten::_scaled_dot_product_flash_attention", 300, 50, 3),
        launch(305, 12, 3),
        kernel("void at::native::fill_kernel", 400, 2.0, 12),
    ]
    s = analyze(_write(tmp_path, ev)).trace_summary
    assert _impls(s) == {"math": ["decomposed into generic kernels"], "flash": ["helper kernel"]}


def test_replayed_kernels_of_no_family_take_the_capture_trace_s_op_family(tmp_path: Path) -> None:
    """The capture (another trace) records a gemm launched under the math SDPA op and a fill under the flash op;
    replayed here, the two kernels read as math's generic kernels and flash's helper."""
    cap = [
        launch(5, 900, None, name="cudaStreamBeginCapture"),
        op("aten::_scaled_dot_product_attention_math", 10, 40, 1),
        op("aten::bmm", 15, 20, 2),
        launch(17, 11, 2),
        op("aten::_scaled_dot_product_flash_attention", 60, 30, 3),
        launch(65, 12, 3),
        launch(100, 901, None, name="cudaStreamEndCapture"),
    ]
    rep = [
        launch(1000, 50, None, name="cudaGraphLaunch"),
        kernel("nvjet_gemm", 1010, 10.0, 50),
        kernel("void at::native::fill_kernel", 1030, 2.0, 50),
    ]
    s = analyze(_write(tmp_path, rep, "replay.json"), capture=_write(tmp_path, cap, "capture.json")).trace_summary
    assert _impls(s) == {"math": ["decomposed into generic kernels"], "flash": ["helper kernel"]}


def test_a_capture_outside_the_profiled_call_is_not_used(tmp_path: Path) -> None:
    """The trace's attnscope::call range holds only the replay; the capture before it lies outside the analysed
    window (its ops are not in the tree), so the replay is matched to no capture."""
    call = {"ph": "X", "cat": "user_annotation", "name": "attnscope::call", "pid": 100, "tid": 100, "ts": 990,
            "dur": 200}  # fmt: skip
    g = analyze(_write(tmp_path, [*_capture(), call, *_replay(1000, 50)])).trace_summary["cuda_graphs"]
    assert g["matched_events"] == 0 and g["capture"]["num_captures"] == 0


def test_an_eager_backward_call_beside_graph_replays_counts_as_backward(tmp_path: Path) -> None:
    """The replay stands for the capture's flash forward (1 forward call); the flash backward op launched its kernel
    itself, eagerly (1 backward call)."""
    bwd = [
        op("aten::_scaled_dot_product_flash_attention_backward", 3000, 50, 30),
        launch(3005, 70, 30),
        kernel("flash_bwd_kernel", 3100, 40.0, 70),
    ]
    s = analyze(_write(tmp_path, _capture() + _replay(1000, 50) + bwd)).trace_summary
    fam = {f["family"]: (f["num_forward_calls"], f["num_backward_calls"]) for f in s["attention_families"]}
    assert fam == {"flash": (1, 1)}
