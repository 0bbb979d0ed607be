"""The call window holds autograd's backward, which CUDA runs on its own thread."""

from __future__ import annotations

from attnscope.analysis.fingerprint.build import CALL_ANNOTATION, fingerprint
from attnscope.trace import trace_from_doc
from tests.synth import PID, TID, doc, kernel, launch, op

BWD_TID = 200  # autograd's device thread


def _call_trace():
    ann = {"ph": "X", "cat": "user_annotation", "name": CALL_ANNOTATION, "pid": PID, "tid": TID}
    ann.update(ts=1000, dur=1000)
    return doc(
        [
            ann,
            op("aten::_flash_attention_forward", 1100, 100, 1),
            launch(1110, 11, 1),
            kernel("flash_fwd_kernel", 1200, 50, 11),
            op("aten::_flash_attention_backward", 1500, 300, 2, tid=BWD_TID),
            launch(1510, 12, 2, tid=BWD_TID),
            kernel("flash_bwd_dq_dk_dv_loop_seqk_parallel_kernel", 1600, 90, 12),
            # the next step's backward, after the call: not this call's
            op("aten::_flash_attention_backward", 2500, 300, 3, tid=BWD_TID),
            launch(2510, 13, 3, tid=BWD_TID),
            kernel("flash_bwd_dq_dk_dv_loop_seqk_parallel_kernel", 2600, 90, 13),
        ]
    )


def test_backward_thread_ops_inside_the_window_are_part_of_the_call():
    fp = fingerprint(trace_from_doc(_call_trace()))
    got = [(k.name, k.launched_by, k.duration_us) for k in fp.kernels]
    assert got == [
        ("flash_fwd_kernel", "aten::_flash_attention_forward", 50),
        ("flash_bwd_dq_dk_dv_loop_seqk_parallel_kernel", "aten::_flash_attention_backward", 90),
    ]
    assert fp.trace_gpu_time_us == 140


def test_ops_of_another_process_stay_out():
    d = _call_trace()
    for e in d["traceEvents"]:
        if e.get("tid") == BWD_TID:
            e["pid"] = PID + 1
    fp = fingerprint(trace_from_doc(d))
    bwd = [k for k in fp.kernels if "bwd" in k.name]
    # the launch still ties the kernel to the window's time span, but no op of this process launched it
    assert [k.launched_by for k in bwd] == [None]
