"""Fixtures for rules no committed trace exercised: an fp16 upcast, a typed host-to-device
transfer, the mask rebuilt found by its kernel's name alone, and analyze's peak memory and host
span.  Each synthetic trace is small enough to count by hand."""

from __future__ import annotations

from attnscope.analysis.fingerprint.build import analyse
from attnscope.api import analyze
from attnscope.trace import trace_from_doc
from tests.synth import PID, TID, doc, kernel, launch, op, write_kineto


def _typed(name, ts, dur, ext, dst, src, dims):
    return op(name, ts, dur, ext, **{"Input type": [dst, src, "bool"], "Input Dims": [dims, dims, []]})


def _fp(events):
    return analyse(trace_from_doc(doc(events))).fingerprint


def test_fp16_upcast_is_found_like_bf16():
    """copy_(float ← c10::Half) of a [2, 4, 8, 16] tensor inside the math op: one upcast of
    2·4·8·16 = 1024 elements, 4096 B written in fp32, caused by the math op (aten::to is only the
    wrapper).  The fp32 → fp16 copy back is a downcast: neither an upcast nor a hidden copy."""
    dims = [2, 4, 8, 16]
    fp = _fp(
        [
            op("aten::_scaled_dot_product_attention_math", 0, 500, 1),
            op("aten::to", 10, 50, 2),
            _typed("aten::copy_", 20, 30, 3, "float", "c10::Half", dims),
            launch(25, corr=11, ext=3),
            kernel("half_to_float_copy_kernel", 100, 6, corr=11),
            op("aten::to", 300, 50, 4),
            _typed("aten::copy_", 310, 30, 5, "c10::Half", "float", dims),
            launch(315, corr=12, ext=5),
            kernel("float_to_half_copy_kernel", 400, 6, corr=12),
        ]
    )
    (u,) = fp.upcasts
    assert (u.op, u.src_dtype, u.dst_dtype, u.dims, u.bytes) == (
        "aten::_scaled_dot_product_attention_math",
        "c10::Half",
        "float",
        (2, 4, 8, 16),
        4096,
    )
    assert fp.upcast_fp32 is True
    assert fp.hidden_copies == ()


def test_typed_host_to_device_transfer_is_not_a_hidden_copy():
    """x.to('cuda') of a bf16 [64, 64] tensor: copy_(bf16 ← bf16) whose device work is an HtoD
    memcpy.  A transfer the user asked for, not a hidden copy.  The same typed copy_ done on
    the device (DtoD) is one: 64·64·2 = 8192 B, caused by aten::contiguous's caller."""
    dims = [64, 64]
    fp = _fp(
        [
            op("aten::to", 0, 50, 1),
            op("aten::_to_copy", 2, 45, 2),
            _typed("aten::copy_", 5, 40, 3, "c10::BFloat16", "c10::BFloat16", dims),
            launch(10, corr=11, ext=3, name="cudaMemcpyAsync"),
            kernel("Memcpy HtoD (Pageable -> Device)", 60, 4, corr=11, cat="gpu_memcpy", bytes=8192),
            op("aten::transpose_then_copy", 100, 50, 4),
            op("aten::contiguous", 102, 45, 5),
            _typed("aten::copy_", 105, 40, 6, "c10::BFloat16", "c10::BFloat16", dims),
            launch(110, corr=12, ext=6, name="cudaMemcpyAsync"),
            kernel("Memcpy DtoD (Device -> Device)", 160, 3, corr=12, cat="gpu_memcpy", bytes=8192),
        ]
    )
    (c,) = fp.hidden_copies
    assert (c.op, c.copy_op, c.bytes, c.dims) == ("aten::transpose_then_copy", "aten::copy_", 8192, (64, 64))
    assert (c.device_event, c.duration_us) == ("Memcpy DtoD (Device -> Device)", 3.0)
    assert fp.num_memcpy == 2


def test_device_to_host_transfer_is_not_a_hidden_copy_either():
    fp = _fp(
        [
            op("aten::to", 0, 50, 1),
            _typed("aten::copy_", 5, 40, 3, "float", "float", [128]),
            launch(10, corr=11, ext=3, name="cudaMemcpyAsync"),
            kernel("Memcpy DtoH (Device -> Pinned)", 60, 4, corr=11, cat="gpu_memcpy", bytes=512),
        ]
    )
    assert fp.hidden_copies == ()


def test_mask_rebuilt_found_by_kernel_name_when_no_tril_op_is_recorded():
    """A trace whose op names do not include aten::tril/triu (e.g. a custom op building the mask)
    still shows the mask rebuilt by its kernel: at::native::triu_tril_kernel."""
    tril = "void at::native::triu_tril_kernel<bool, int, false, 8, false>(at::cuda::detail::TensorInfo<bool, int>)"
    fp = _fp(
        [
            op("mylib::causal_mask", 0, 50, 1),
            launch(10, corr=11, ext=1),
            kernel(tril, 60, 2, corr=11),
            op("aten::bmm", 100, 50, 2),
            launch(110, corr=12, ext=2),
            kernel("sm90_xmma_gemm_bf16bf16_bf16f32", 160, 20, corr=12),
        ]
    )
    assert fp.mask_rebuilt is True
    assert fp.mask_ops == ("triu_tril_kernel",)


def test_no_mask_rebuilt_without_tril_op_or_kernel():
    fp = _fp(
        [
            op("aten::bmm", 100, 50, 2),
            launch(110, corr=12, ext=2),
            kernel("sm90_xmma_gemm_bf16bf16_bf16f32", 160, 20, corr=12),
        ]
    )
    assert fp.mask_rebuilt is False and fp.mask_ops == ()


def test_tril_op_is_named_before_the_kernel_fallback():
    fp = _fp(
        [
            op("aten::tril", 0, 50, 1),
            launch(10, corr=11, ext=1),
            kernel("void at::native::triu_tril_kernel<bool, int, false, 8, false>", 60, 2, corr=11),
        ]
    )
    assert fp.mask_ops == ("aten::tril",)


def _memory(ts, total, nbytes, device_type=1):
    a = {"Device Type": device_type, "Device Id": 0, "Addr": 1, "Bytes": nbytes, "Total Allocated": total}
    return {"ph": "i", "cat": "cpu_instant_event", "s": "t", "name": "[memory]", "pid": PID, "tid": TID, "ts": ts,
            "args": a}  # fmt: skip


def _analyze_file(tmp_path, events):
    return analyze(write_kineto(tmp_path / "t.json", doc(events)), summary=False)


ANALYZE_EVENTS = [
    _memory(5, 100, 100),  # before the first op: the base
    op("aten::mm", 10, 50, 1),
    launch(20, corr=11, ext=1),
    kernel("gemm_kernel", 30, 12, corr=11),
    _memory(20, 400, 300),  # the peak: 400 − 100 = 300 B
    _memory(40, 10**9, 10**9, device_type=0),  # host memory: not the GPU's
    op("aten::softmax", 100, 50, 2),
    launch(110, corr=12, ext=2),
    kernel("softmax_kernel", 120, 3, corr=12),
    _memory(120, 250, -150),
    _memory(200, 10_000, 9750),  # after the last op ends (150): not counted
]


def test_analyze_peak_memory_and_host_span(tmp_path):
    """No attnscope::call: the window is the ops' span, 10 → 150 = 140 µs of host time; GPU
    time 12 + 3 = 15 µs; peak extra memory 400 − 100 = 300 B from the [memory] events."""
    r = _analyze_file(tmp_path, ANALYZE_EVENTS)
    assert r.peak_memory_bytes == 300
    assert r.peak_memory_source is not None and "[memory]" in r.peak_memory_source
    assert r.cpu_time is not None and r.cpu_time.median_us == 140.0 and r.cpu_time.num_samples == 1
    assert r.gpu_time is not None and r.gpu_time.median_us == 15.0


def test_analyze_peak_memory_without_an_event_before_the_ops(tmp_path):
    """Without an event before the first op, the base is the first event's total minus its own
    allocation: 400 − 300 = 100 → peak extra 300 B again."""
    r = _analyze_file(tmp_path, ANALYZE_EVENTS[1:])
    assert r.peak_memory_bytes == 300


def test_analyze_without_memory_events_says_nothing_about_memory(tmp_path):
    r = _analyze_file(tmp_path, [e for e in ANALYZE_EVENTS if e["name"] != "[memory]"])
    assert r.peak_memory_bytes is None and r.peak_memory_source is None
