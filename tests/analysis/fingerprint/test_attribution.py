"""Each attribution and model-scale rule pinned on a tiny synthetic trace."""

from __future__ import annotations

import pytest

from attnscope.analysis.fingerprint.breakdown import summarize
from attnscope.analysis.fingerprint.build import analyse
from attnscope.trace import trace_from_doc
from tests.synth import doc, kernel, launch, op


def _analyse(events):
    tr = trace_from_doc(doc(events))
    return tr, analyse(tr)


def test_correlation_runtime_external_id_names_the_innermost_op():
    # aten::linear [0,100] > aten::addmm [10,50] launches k1; aten::relu [60,30] launches k2
    events = [
        op("aten::linear", 0, 100, 1),
        op("aten::addmm", 10, 50, 2),
        op("aten::relu", 60, 30, 3),
        launch(20, corr=11, ext=2),
        launch(70, corr=12, ext=3),
        kernel("gemm_kernel", 200, 10, corr=11, ext=999),  # its own External id is ignored: rule 1 wins
        kernel("relu_kernel", 215, 5, corr=12),
    ]
    _, an = _analyse(events)
    att = an.attribution
    assert [att.launcher_of(k).name for k in range(2)] == ["aten::addmm", "aten::relu"]
    assert att.rule == ["correlation", "correlation"]
    assert [k.launched_by for k in an.fingerprint.kernels] == ["aten::addmm", "aten::relu"]


def test_runtime_without_external_id_falls_back_to_nesting_by_time_on_its_thread():
    events = [
        op("aten::matmul", 0, 100, 1),
        op("aten::mm", 10, 50, 2),
        op("aten::other_thread_op", 0, 100, 5, tid=200),  # same times, other thread: never chosen
        launch(30, corr=11, ext=None),  # inside aten::mm
        launch(80, corr=12, ext=None),  # after aten::mm ended, still inside aten::matmul
        kernel("k_in_mm", 200, 10, corr=11),
        kernel("k_in_matmul", 220, 10, corr=12),
    ]
    _, an = _analyse(events)
    att = an.attribution
    assert [att.launcher_of(k).name for k in range(2)] == ["aten::mm", "aten::matmul"]
    assert att.rule == ["time", "time"]


def test_gpu_external_id_is_the_fallback_when_no_runtime_call_exists():
    events = [op("aten::add", 0, 10, 7), kernel("add_kernel", 50, 3, corr=None, ext=7), kernel("lost", 60, 3, corr=44)]
    _, an = _analyse(events)
    assert an.attribution.rule == ["external_id", "none"]
    assert [k.launched_by for k in an.fingerprint.kernels] == ["aten::add", None]


def test_dtod_memcpy_without_typed_copy_is_a_hidden_copy_caused_by_the_op_above_the_copy():
    events = [
        op("aten::masked_fill", 0, 100, 1),
        op("aten::clone", 5, 80, 2),
        op("aten::copy_", 10, 60, 3),
        launch(20, corr=11, ext=3, name="cudaMemcpyAsync"),
        kernel("Memcpy DtoD (Device -> Device)", 100, 40, corr=11, cat="gpu_memcpy", bytes=1 << 20),
        op("aten::to", 200, 50, 4),
        op("aten::copy_", 210, 30, 5),
        launch(215, corr=12, ext=5, name="cudaMemcpyAsync"),
        kernel("Memcpy HtoD (Pageable -> Device)", 300, 10, corr=12, cat="gpu_memcpy", bytes=64),
    ]
    tr, an = _analyse(events)
    (c,) = an.fingerprint.hidden_copies  # HtoD is a transfer, not a hidden copy
    assert (c.op, c.copy_op, c.bytes, c.duration_us) == ("aten::masked_fill", "aten::copy_", 1 << 20, 40)
    s = summarize(tr, an)
    assert s["hidden_copies"]["top"][0]["op"] == "aten::masked_fill"
    cats = {c["category"]: c["num_kernels"] for c in s["categories"]}
    assert cats["memcpy"] == 2 and cats["gemm"] == 0


def test_upcast_time_is_the_device_time_of_its_copy():
    events = [
        op("aten::_scaled_dot_product_attention_math", 0, 500, 1),
        op("aten::to", 10, 50, 2),
        op("aten::copy_", 20, 30, 3, **{"Input type": ["float", "c10::BFloat16"], "Input Dims": [[4, 8], [4, 8]]}),
        launch(25, corr=11, ext=3),
        kernel("bfloat16_copy_kernel_cuda", 100, 6, corr=11),
        op("aten::bmm", 100, 50, 4),
        launch(110, corr=12, ext=4),
        kernel("sm80_xmma_gemm_f32f32_ffma", 120, 30, corr=12),
    ]
    tr, an = _analyse(events)
    s = summarize(tr, an)
    (u,) = s["upcasts"]["top"]
    assert (u["op"], u["count"], u["bytes"], u["time_us"]) == ("aten::_scaled_dot_product_attention_math", 1, 128, 6)
    # math is decomposed: both kernels belong to the math family through the op above them
    (fam,) = s["attention_families"]
    assert (fam["family"], fam["num_kernels"], fam["num_forward_calls"]) == ("math", 2, 1)


def test_idle_gaps_merge_streams_and_launch_delay_is_kernel_start_minus_launch_start():
    events = [op("aten::a", 0, 1000, 1)]
    # stream 7: [100,150] [300,350]; stream 8: [140,200] overlaps; gap 200→300 is the only idle gap
    for i, (ts, dur, stream) in enumerate([(100, 50, 7), (140, 60, 8), (300, 50, 7)]):
        events += [launch(10 + i, corr=20 + i, ext=1, dur=2), kernel(f"k{i}", ts, dur, corr=20 + i, stream=stream)]
    tr, an = _analyse(events)
    s = summarize(tr, an)
    (dev,) = s["idle"]["devices"]
    assert (dev["span_us"], dev["busy_us"], dev["idle_us"], dev["num_gaps"]) == (250, 150, 100, 1)
    assert dev["gaps_by_length"]["100us-1ms"] == 1
    assert {(x["stream"], x["busy_us"]) for x in s["idle"]["streams"]} == {(7, 100), (8, 60)}
    d = s["launch"]["launch_to_start_us"]
    assert (d["num"], d["max_us"], d["p50_us"]) == (3, 300 - 12, 140 - 11)
    assert s["launch"]["runtime_calls"][0] == {
        "name": "cudaLaunchKernel",
        "num": 3,
        "total_us": 6,
        "mean_us": 2,
        "p50_us": 2,
        "p95_us": 2,
        "max_us": 2,
    }


@pytest.mark.parametrize(
    ("name", "family", "impl"),
    [
        (
            "void pytorch_flash::flash_fwd_kernel<Flash_fwd_kernel_traits<64>>(pytorch_flash::Flash_fwd_params)",
            "flash",
            "FA2 (PyTorch bundled)",
        ),
        (
            "void flash_fwd_splitkv_kernel<Flash_fwd_kernel_traits<128>, false>(Flash_fwd_params)",
            "flash",
            "FA2 (flash-attn package)",
        ),
        (
            "void cutlass::device_kernel<flash::enable_sm90_or_later<flash::FlashAttnFwdSm90<...>>>(...)",
            "flash",
            "FA3 (flash-attn, Hopper)",
        ),
        (
            "fmha_cutlassF_bf16_aligned_64x64_rf_sm80(PyTorchMemEffAttention::AttentionKernel<...>::Params)",
            "efficient",
            "cutlass memory-efficient (PyTorch / xformers)",
        ),
        ("cudnn_generated_fort_native_sdpa_sm90_flash_fprop_wgmma_f16_knob_7", "cudnn", "cuDNN generated SDPA"),
        ("void cudnn::fusion::compute_dot_do_o_specialized<true, 64>(void const*)", "cudnn", "cuDNN generated SDPA"),
        ("triton_tem_fused_flex_attention_0", "flex", "FlexAttention (Triton template)"),
    ],
)
def test_attention_kernel_names_map_to_families(name, family, impl):
    from attnscope.analysis.fingerprint import kernels as K

    assert K.attention_impl(name) == (family, impl)
    assert K.classify_gpu(name) == "attention"


def test_copies_of_empty_tensors_are_not_hidden_copies():
    """A copy_ of a 0-element tensor (dims [0]) moves no bytes: never a hidden copy."""
    from attnscope.analysis.fingerprint.build import fingerprint
    from attnscope.trace import trace_from_doc

    def op(name, ts, dur, ext, dims, types):
        args = {"External id": ext, "Input Dims": dims, "Input type": types}
        return {"ph": "X", "cat": "cpu_op", "name": name, "pid": 1, "tid": 1, "ts": ts, "dur": dur, "args": args}

    events = [
        op("aten::to", 0.0, 10.0, 1, [[0], []], ["float", "Scalar"]),
        op("aten::copy_", 1.0, 5.0, 2, [[0], [0], []], ["float", "float", "Scalar"]),
        op("aten::clone", 20.0, 10.0, 3, [[4, 8], []], ["float", "Scalar"]),
        op("aten::copy_", 21.0, 5.0, 4, [[4, 8], [4, 8], []], ["float", "float", "Scalar"]),
    ]
    fp = fingerprint(trace_from_doc({"traceEvents": events}))
    assert [(c.op, c.bytes) for c in fp.hidden_copies] == [("aten::clone", 4 * 8 * 4)]


def test_a_gap_on_a_bucket_bound_goes_to_the_longer_bucket():
    """Buckets are [0, 10), [10, 100), [100, 1000), [1000, inf) µs: gaps of 9, 10, 100 and 1000 µs land one in each."""
    from attnscope.analysis.fingerprint.breakdown import idle_time
    from attnscope.trace import GpuEvent

    evs, t = [], 0.0
    for gap in (9.0, 10.0, 100.0, 1000.0, None):
        evs.append(GpuEvent("kernel", "k", t, 1.0, None, None, 0, 7))
        t += 1.0 + (gap or 0.0)
    (dev,) = idle_time(evs)["devices"]
    assert dev["gaps_by_length"] == {"<10us": 1, "10-100us": 1, "100us-1ms": 1, ">1ms": 1}


def test_a_repeated_correlation_id_names_the_first_runtime_call_that_carries_it():
    # two launches carry correlation 11 (the id reused): the kernel goes to the first, inside aten::addmm at 20 µs,
    # not the later one inside aten::relu at 70 µs
    events = [
        op("aten::linear", 0, 100, 1),
        op("aten::addmm", 10, 50, 2),
        op("aten::relu", 60, 30, 3),
        launch(20, corr=11, ext=2),
        launch(70, corr=11, ext=3),
        kernel("gemm_kernel", 200, 10, corr=11),
    ]
    _, an = _analyse(events)
    att = an.attribution
    assert att.launcher_of(0).name == "aten::addmm" and att.rule == ["correlation"]
    assert [k.launched_by for k in an.fingerprint.kernels] == ["aten::addmm"]


def test_a_copy_with_its_shape_but_one_recorded_type_leaves_its_dtod_a_hidden_copy():
    """copy_ with Input Dims but a single Input type cannot be judged by its types: its DtoD memcpy is still a
    hidden copy, read from the memcpy event (1 MiB, 40 µs), not dropped as if the typed path had counted it."""
    events = [
        op("aten::masked_fill", 0, 100, 1),
        op("aten::copy_", 10, 60, 3, **{"Input Dims": [[4, 8]], "Input type": ["float"]}),
        launch(20, corr=11, ext=3, name="cudaMemcpyAsync"),
        kernel("Memcpy DtoD (Device -> Device)", 100, 40, corr=11, cat="gpu_memcpy", bytes=1 << 20),
    ]
    _, an = _analyse(events)
    (c,) = an.fingerprint.hidden_copies
    assert (c.op, c.copy_op, c.bytes, c.duration_us) == ("aten::masked_fill", "aten::copy_", 1 << 20, 40)


def test_idle_time_sorts_events_given_out_of_start_order():
    from attnscope.analysis.fingerprint.breakdown import idle_time
    from attnscope.trace import GpuEvent

    def ev(ts: float, dur: float) -> GpuEvent:
        return GpuEvent("kernel", f"k{ts:g}", ts, dur, None, None, 0, 7)

    # by start: [0, 10], [50, 55], [100, 110]: span 110, busy 10 + 5 + 10 = 25, two gaps (40 and 45 µs)
    (d,) = idle_time([ev(100, 10), ev(0, 10), ev(50, 5)])["devices"]
    assert (d["span_us"], d["busy_us"], d["idle_us"], d["num_gaps"]) == (110, 25, 85, 2)


def test_idle_time_sorts_events_whose_last_two_are_out_of_order():
    """[0, 10], [100, 110], [50, 55]: only the last pair is out of start order (the first start is before both): the
    same device as sorted, span 110, busy 25, gaps 40 and 45 µs."""
    from attnscope.analysis.fingerprint.breakdown import idle_time
    from attnscope.trace import GpuEvent

    evs = [GpuEvent("kernel", f"k{ts:g}", ts, dur, None, None, 0, 7) for ts, dur in ((0, 10), (100, 10), (50, 5))]
    (d,) = idle_time(evs)["devices"]
    assert (d["span_us"], d["busy_us"], d["idle_us"], d["num_gaps"]) == (110, 25, 85, 2)
    gaps = [(g["gap_us"], g["before"], g["next"]) for g in d["largest_gaps"]]
    assert gaps == [(45, "k50", "k100"), (40, "k0", "k50")]


@pytest.mark.parametrize(
    ("top", "kept"),
    [
        (1, [(9.0, 7.0, "k6", "k16")]),
        (2, [(9.0, 7.0, "k6", "k16"), (7.0, 17.0, "k16", "k24")]),
        (3, [(9.0, 7.0, "k6", "k16"), (7.0, 17.0, "k16", "k24"), (5.0, 1.0, "k0", "k6")]),
    ],
)
def test_idle_time_keeps_the_largest_gaps_as_they_come(top, kept):
    """Kernels of 1 µs at 0, 6, 16, 24: gaps of 5 (after 1), 9 (after 7) and 7 µs (after 17), in that order.  The
    largest ``top`` are kept whichever came first: with one kept, 9 replaces 5; with two, 7 replaces 5 (the smaller
    kept one), though 7 is below 9."""
    from attnscope.analysis.fingerprint.breakdown import idle_time
    from attnscope.trace import GpuEvent

    evs = [GpuEvent("kernel", f"k{t:g}", t, 1.0, None, None, 0, 7) for t in (0.0, 6.0, 16.0, 24.0)]
    (d,) = idle_time(evs, top=top)["devices"]
    assert [(g["gap_us"], g["after_us"], g["before"], g["next"]) for g in d["largest_gaps"]] == kept
    assert (d["span_us"], d["busy_us"], d["num_gaps"]) == (25.0, 4.0, 3)


def test_attention_time_refuses_lists_that_do_not_line_up():
    from attnscope.analysis.fingerprint.attribution import build_op_tree
    from attnscope.analysis.fingerprint.shape import attention_time_us

    tree = build_op_tree(trace_from_doc(doc([op("aten::scaled_dot_product_attention", 0, 10, 1)])).cpu_ops)
    with pytest.raises(ValueError) as e:
        attention_time_us(tree, [0, -1], [3.0])
    assert str(e.value) == "2 launchers and 1 durations: the lists do not line up"
    # the op's own event (3 µs) is attention's; the one no op launched (-1) is not
    assert attention_time_us(tree, [0, -1], [3.0, 4.0]) == 3.0


def test_gathers_of_kv_rows_are_copies_of_the_rows_they_pick():
    """index_select of [pages, page tokens, heads, head_dim] rows called by the user's code: a copy of
    len(index) × (elements of one row) × 2 bytes (bf16).  A 2-D lookup and one under an aten op are not counted."""
    bf16 = "c10::BFloat16"

    def sel(ts: float, ext: int, src: list[int], n: int, concrete: bool = True, dim: str = "0", **kw):
        args = {"Input Dims": [src, [], [n]], "Input type": [bf16, "Scalar", "long int"]}
        if concrete:
            args["Concrete Inputs"] = ["", dim, ""]
        return op("aten::index_select", ts, 10, ext, **args, **kw)

    events = [
        sel(0, 1, [100, 8], 4),  # an embedding-like 2-D lookup: left alone
        op("aten::embedding", 20, 30, 2),
        sel(25, 3, [10, 4, 2, 8], 3),  # under an aten op: left alone
        sel(60, 6, [10, 4, 2, 8], 3, dim="x"),  # a dim that is no number: left alone
        sel(80, 7, [10, 4, 2, 8], 0),  # an empty index: copies nothing
        sel(100, 4, [64, 16, 2, 8], 6),
        launch(101, corr=11, ext=4),
        kernel("index_select_kernel", 300, 4.0, corr=11),
        sel(200, 5, [32, 16, 2, 8], 5, concrete=False),  # no dim recorded: dim 0
    ]
    _, an = _analyse(events)
    got = [(c.kind, c.bytes, c.dims, c.device_event, c.duration_us) for c in an.fingerprint.hidden_copies]
    # 6 pages × (16·2·8 elements) × 2 B = 3,072 B; 5 pages × 256 × 2 B = 2,560 B
    assert got == [
        ("gather", 3072, (6, 16, 2, 8), "index_select_kernel", 4.0),
        ("gather", 2560, (5, 16, 2, 8), None, None),
    ]


def test_idle_time_keeps_the_largest_gaps_ties_by_the_later_start():
    """Four kernels of 1 µs at 0, 10, 20, 30 and one of 50 µs at 31.5 (inside no gap, it ends last): gaps of 9 µs
    after 1, 11 and 21, and 0.5 µs after 31.  The two largest are equal in length: the later one first, then the
    earlier (the order of sorting (gap, start) descending); the span ends at the longest kernel's end, 81.5."""
    from attnscope.analysis.fingerprint.breakdown import idle_time
    from attnscope.trace import GpuEvent

    evs = [GpuEvent("kernel", f"k{t:g}", t, d, None, None, 0, 7) for t, d in ((0, 1), (10, 1), (20, 1), (30, 1))]
    evs.append(GpuEvent("kernel", "long", 31.5, 50.0, None, None, 0, 7))
    (d,) = idle_time(evs, top=2)["devices"]
    # busy: [0,1] [10,11] [20,21] [30,31] [31.5,81.5] = 1 + 1 + 1 + 1 + 50 = 54; span 81.5
    assert (d["span_us"], d["busy_us"], d["idle_us"], d["num_gaps"]) == (81.5, 54.0, 27.5, 4)
    assert d["gaps_by_length"] == {"<10us": 4, "10-100us": 0, "100us-1ms": 0, ">1ms": 0}
    assert d["largest_gaps"] == [
        {"gap_us": 9.0, "after_us": 21.0, "before": "k20", "next": "k30"},
        {"gap_us": 9.0, "after_us": 11.0, "before": "k10", "next": "k20"},
    ]
    (none,) = idle_time(evs, top=0)["devices"]
    assert none["largest_gaps"] == [] and none["num_gaps"] == 4


def test_idle_time_holds_no_list_of_every_gap():
    """100,000 kernels, each after a gap: what idle_time allocates at its peak stays near its four lists of a pointer
    per event (the devices, the stream's durations, the starts, the durations: 4 x 8 bytes x 100,000 = 3.2 MB).  A
    list of every gap as well (a 64-byte tuple of two 24-byte floats and a 28-byte int, ~150 bytes a gap) and of
    every end (a new float each) would add ~18 MB."""
    import tracemalloc

    from attnscope.analysis.fingerprint.breakdown import idle_time
    from attnscope.trace import GpuEvent

    n = 100_000
    evs = [GpuEvent("kernel", "k", 10.0 * k, 1.0, None, None, 0, 7) for k in range(n)]
    tracemalloc.start()
    try:
        (d,) = idle_time(evs)["devices"]
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert d["num_gaps"] == n - 1 and d["busy_us"] == n * 1.0
    assert peak < 2 * (4 * 8 * n)
