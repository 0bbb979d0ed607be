"""The profiled call's window, on a synthetic trace built to break every way of getting it wrong.

Timeline (µs), main thread 100 of process 100:

      0 ─ 100   attnscope::call #1 (warm-up): aten::warm launches warm_kernel
    190         a launch just before the profiled call: early_kernel runs at 205, inside the span
    200 ─ 300   attnscope::call #2 (the profiled one)
                  aten::scaled_dot_product_attention [200, 300] (same span as the annotation)
                    aten::mm [210, 250]       launches mm_kernel (runs at 400, after the call: still its own)
                    aten::softmax [260, 290]  launches softmax_kernel (runs at 420)
    310 ─ 330   aten::after launches after_kernel: outside the call
    thread 200 (same process): dataloader::next [150, 450] straddles the call: not part of it
               autograd::engine::evaluate_function: MmBackward0 [275, 295], wholly inside the call:
               its runtime call at 280 launches bwd_kernel (autograd's device thread, as in a
               forward+backward call); it belongs to the call
    process 999: aten::other_process [220, 230]: another process, never part of the call
    GPU side: a gpu_user_annotation named attnscope::call at [500, 550] is the GPU's copy of a
    marker, not the host call, and a ProfilerStep annotation covers everything.

[memory] events (GPU, Device Type 1): 9000 B at 50 (warm-up), 1000 at 90 (freed: the base),
1500 at 215, 1800 at 265 (the peak), 1300 at 285, 5000 at 320 (after).  A CPU event (type 0) of
10^9 B at 240 belongs to the host.  Peak extra inside the call = 1800 − 1000 = 800 B.
"""

from __future__ import annotations

from typing import Any

import pytest

from attnscope.analysis.fingerprint.build import analyse, select_window
from attnscope.trace import load_trace, trace_from_doc
from tests.synth import PID, doc, kernel, launch, op, write_kineto

MAIN, OTHER = 100, 200


def annotation(name: str, ts: float, dur: float, cat: str = "user_annotation", tid: int = MAIN) -> dict[str, Any]:
    pid = PID if cat == "user_annotation" else 0
    return {"ph": "X", "cat": cat, "name": name, "pid": pid, "tid": tid, "ts": ts, "dur": dur, "args": {}}


def memory(ts: float, total: int, nbytes: int, device_type: int = 1) -> dict[str, Any]:
    a = {"Device Type": device_type, "Device Id": 0, "Addr": 1, "Bytes": nbytes, "Total Allocated": total}
    return {"ph": "i", "cat": "cpu_instant_event", "s": "t", "name": "[memory]", "pid": PID, "tid": MAIN, "ts": ts,
            "args": a}  # fmt: skip


def events() -> list[dict[str, Any]]:
    other_process = op("aten::other_process", 220, 10, 90, tid=300)
    other_process["pid"] = 999
    return [
        annotation("ProfilerStep#0", 0, 1000),
        annotation("attnscope::call", 0, 100),
        op("aten::warm", 10, 50, 1),
        launch(20, corr=1, ext=1),
        kernel("warm_kernel", 30, 10, corr=1),
        launch(190, corr=5, ext=None),
        kernel("early_kernel", 205, 5, corr=5),
        annotation("attnscope::call", 200, 100),
        op("aten::scaled_dot_product_attention", 200, 100, 10),
        op("aten::mm", 210, 40, 2),
        launch(220, corr=2, ext=2),
        kernel("mm_kernel", 400, 10, corr=2),
        op("aten::softmax", 260, 30, 3),
        launch(270, corr=3, ext=3),
        kernel("softmax_kernel", 420, 5, corr=3),
        op("aten::after", 310, 20, 4),
        launch(315, corr=4, ext=4),
        kernel("after_kernel", 430, 7, corr=4),
        op("dataloader::next", 150, 300, 6, tid=OTHER),
        op("autograd::engine::evaluate_function: MmBackward0", 275, 20, 8, tid=OTHER),
        launch(280, corr=7, ext=None, tid=OTHER),
        kernel("bwd_kernel", 440, 3, corr=7),
        other_process,
        annotation("attnscope::call", 500, 50, cat="gpu_user_annotation", tid=7),
        memory(50, 9000, 8000),
        memory(90, 1000, -8000),
        memory(215, 1500, 500),
        memory(240, 10**9, 10**9, device_type=0),
        memory(265, 1800, 300),
        memory(285, 1300, -500),
        memory(320, 5000, 3700),
    ]


@pytest.fixture(params=["dict", "kineto_file"])
def trace(request, tmp_path):
    """The same events through both readers: the whole-document parse and the streaming one."""
    d = doc(events())
    if request.param == "dict":
        return trace_from_doc(d)
    return load_trace(write_kineto(tmp_path / "window.json", d))


def test_the_last_host_call_annotation_is_the_window(trace):
    _, _, win = select_window(trace)
    assert win == (200.0, 300.0)


def test_ops_of_the_call_only(trace):
    """The warm-up's op, the op after the call, an op of another thread straddling the call and
    an op of another process are all left out; the op spanning exactly the call is kept, and so is
    the backward op of the same process's other thread, wholly inside the call."""
    ops, _, _ = select_window(trace)
    names = sorted(o.name for o in ops)
    assert names == [
        "aten::mm",
        "aten::scaled_dot_product_attention",
        "aten::softmax",
        "autograd::engine::evaluate_function: MmBackward0",
    ]


def test_gpu_events_are_chosen_by_launch_not_by_when_they_run(trace):
    """mm_kernel and softmax_kernel run after the call ended but were launched inside it;
    early_kernel runs inside the span but was launched before it; the warm-up's kernel and the
    one launched after the call are out.  bwd_kernel was launched inside the span from another
    thread (as autograd's device thread does) and belongs to the call."""
    _, gpu, _ = select_window(trace)
    assert sorted(g.name for g in gpu) == ["bwd_kernel", "mm_kernel", "softmax_kernel"]


def test_fingerprint_of_the_window(trace):
    fp = analyse(trace).fingerprint
    assert [k.name for k in fp.kernels] == ["mm_kernel", "softmax_kernel", "bwd_kernel"]
    assert [k.launched_by for k in fp.kernels] == [
        "aten::mm",
        "aten::softmax",
        "autograd::engine::evaluate_function: MmBackward0",  # by time on its own thread
    ]
    assert fp.trace_gpu_time_us == 10 + 5 + 3  # the three kernels' own durations
    assert fp.trace_cpu_time_us == 100.0  # the annotation's span, 300 − 200


def test_peak_memory_inside_the_window(trace):
    """Base 1000 B (the last GPU total before the call), peak 1800 B inside → 800 B.  The warm-up's
    9000 B, the 5000 B after the call and the host's 10^9 B do not count."""
    assert analyse(trace).fingerprint.trace_peak_memory_bytes == 800


def test_without_annotation_the_whole_trace_is_the_window():
    """No attnscope::call (an `analyze` of somebody's trace): every op and GPU event; the host
    span runs from the first op's start to the last op's end."""
    evs = [e for e in events() if e.get("cat") != "user_annotation"]
    tr = trace_from_doc(doc(evs))
    ops, gpu, win = select_window(tr)
    assert win is None
    assert len(ops) == sum(e.get("cat") == "cpu_op" for e in evs)
    assert len(gpu) == sum(e.get("cat") == "kernel" for e in evs)
    fp = analyse(tr).fingerprint
    # first op starts at 10 (aten::warm); last ends at 450 (dataloader::next, 150 + 300)
    assert fp.trace_cpu_time_us == 440.0
    assert fp.trace_gpu_time_us == 10 + 5 + 10 + 5 + 7 + 3


def test_a_gpu_marker_alone_does_not_make_a_window():
    """Only the host's user_annotation marks the call: a GPU-side copy of the name is ignored."""
    evs = [e for e in events() if e.get("cat") != "user_annotation"]
    evs.append(annotation("attnscope::call", 500, 50, cat="gpu_user_annotation", tid=7))
    _, _, win = select_window(trace_from_doc(doc(evs)))
    assert win is None


# ---- the real forward+backward traces (H200): the backward runs on autograd's own thread ---------

FWD_BWD = ["flash", "cudnn", "efficient", "math"]


@pytest.mark.parametrize("backend", FWD_BWD)
def test_backward_kernels_on_autograd_thread_are_in_the_call(backend):
    """Counts and launchers read from the raw JSON: every GPU event whose runtime call lies inside
    attnscope::call (either thread), each launched by the op whose External id its runtime call
    carries.  The backward's runtime calls are on another tid than the annotation's."""
    import json

    from attnscope.analysis.fingerprint.build import fingerprint
    from tests.rawtrace import H200, raw_gpu_events_in_call

    path = H200 / "context" / f"fwd_bwd_{backend}.json"
    events = json.loads(path.read_text())["traceEvents"]
    (ann,) = [e for e in events if e.get("cat") == "user_annotation" and e["name"] == "attnscope::call"]
    t0, t1 = ann["ts"], ann["ts"] + ann["dur"]
    rt = {
        e["args"]["correlation"]: e
        for e in events
        if e.get("cat") in ("cuda_runtime", "cuda_driver") and t0 <= e["ts"] <= t1
    }
    other_thread = {c for c, e in rt.items() if e["tid"] != ann["tid"]}
    assert other_thread, "the backward launches from autograd's thread"
    op_by_ext = {e["args"]["External id"]: e["name"] for e in events if e.get("cat") == "cpu_op"}

    def launcher(e):
        return op_by_ext.get(rt[e["args"]["correlation"]]["args"].get("External id"))

    gpu = raw_gpu_events_in_call(events)
    fp = fingerprint(load_trace(path))
    assert fp.num_kernels == sum(e["cat"] == "kernel" for e in gpu)
    assert fp.num_memcpy == sum(e["cat"] == "gpu_memcpy" for e in gpu)
    assert fp.trace_gpu_time_us == pytest.approx(sum(e["dur"] for e in gpu))
    assert sorted(str(k.launched_by) for k in fp.kernels) == sorted(str(launcher(e)) for e in gpu)
    backward = [e for e in gpu if e["args"]["correlation"] in other_thread]
    assert backward and all(launcher(e) for e in backward)
