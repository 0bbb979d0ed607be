"""The fingerprint of each real H200 trace, checked against the raw trace JSON itself."""

from __future__ import annotations

import math
from typing import Any

import pytest

from attnscope.analysis.fingerprint.attribution import Attribution, build_op_tree
from attnscope.analysis.fingerprint.build import (
    _limits_for,
    _orphan_dtod,
    _peak_memory,
    analyse,
    copies_and_upcasts_at,
    fingerprint,
    gpu_kernel_records,
    select_window,
)
from attnscope.analysis.fingerprint.occupancy import ArchLimits
from attnscope.core.types import HiddenCopy, KernelRecord, Upcast
from attnscope.trace import CpuOp, GpuEvent, MemEvent, Trace, load_trace, trace_from_doc
from tests.rawtrace import H200, H200_BIG, VARIANTS, raw_events, raw_gpu_events_in_call
from tests.synth import PID, TID, doc, kernel, launch, op

ALL_TRACES = [H200 / f"{v}.json" for v in VARIANTS] + [H200_BIG / f"{v}.json" for v in VARIANTS]


@pytest.mark.parametrize("path", ALL_TRACES, ids=lambda p: f"{p.parent.name}/{p.stem}")
def test_counts_match_raw_trace(path):
    evs = raw_gpu_events_in_call(raw_events(path))
    fp = fingerprint(load_trace(path))
    assert fp.device_kind == "gpu" and fp.device_name == "NVIDIA H200"
    assert fp.compute_capability == (9, 0)
    assert fp.num_kernels == sum(e["cat"] == "kernel" for e in evs)
    assert fp.num_memcpy == sum(e["cat"] == "gpu_memcpy" for e in evs)
    assert fp.num_memset == sum(e["cat"] == "gpu_memset" for e in evs)
    assert sorted(k.name for k in fp.kernels) == sorted(e["name"] for e in evs)
    assert fp.trace_gpu_time_us == pytest.approx(sum(e["dur"] for e in evs))


# Every (registers/thread, shared memory/block, threads/block) launch in the committed H200
# traces, with its occupancy worked by hand (sm90: 64 warps, 32 blocks, 16384 registers per
# sub-partition in 256-register units per warp, 233472 B shared memory in 128 B units plus
# 1024 B reserved per block; see tests/analysis/rules/test_occupancy_rules.py for the rules):
#   (regs, smem, threads): (pct, limiter)   # regs/warp → warps by regs; smem/block → blocks
H200_OCCUPANCY_BY_HAND: dict[tuple[int, int, int], tuple[float, str]] = {
    (16, 0, 64): (100.0, "warps+blocks"),  # 512 → 128 warps → 64 blk; 2 warps → 32 by warps = 32 blocks
    (16, 0, 128): (100.0, "warps"),  # 512 → 32 blk by regs; 4 warps → 16 by warps
    (18, 0, 128): (100.0, "warps"),  # 576→768 → 21/part → 84 warps → 21 blk; 16 by warps
    (20, 0, 128): (100.0, "warps"),  # 640→768 → 21 blk; 16 by warps
    (28, 0, 128): (100.0, "registers+warps"),  # 896→1024 → 16/part → 64 warps → 16 blk; 16 by warps
    (30, 0, 128): (100.0, "registers+warps"),  # 960→1024 → 16 blk; 16 by warps
    (30, 128, 1024): (100.0, "registers+warps"),  # 64 warps → 2 blk of 32 warps; 64//32 = 2
    (32, 0, 128): (100.0, "registers+warps"),  # 1024 → 16 blk; 16 by warps
    (32, 16, 512): (100.0, "registers+warps"),  # 64 warps → 4 blk of 16 warps; 64//16 = 4
    (80, 0, 128): (37.5, "registers"),  # 2560 → 16384//2560 = 6/part → 24 warps → 6 blk = 24/64
    (121, 12672, 128): (25.0, "registers"),  # 3872→4096 → 4/part → 16 warps → 4 blk; smem 13696 → 17
    (128, 18944, 128): (25.0, "registers"),  # 4096 → 4 blk; smem 19968 → 11
    (128, 52224, 256): (25.0, "registers"),  # 4096 → 16 warps → 2 blk of 8; smem 53248 → 4
    (168, 134144, 384): (18.75, "registers+shared_memory"),  # 5376 → 3/part → 12 warps → 1; 135168 → 1
    (168, 163972, 384): (18.75, "registers+shared_memory"),  # smem 164996 → 165120 → 1
    (168, 213188, 384): (18.75, "registers+shared_memory"),  # smem 214212 → 214272 → 1
    (168, 232448, 384): (18.75, "registers+shared_memory"),  # smem 233472 = the whole SM → 1
    (195, 131072, 256): (12.5, "registers+shared_memory"),  # 6240→6400 → 2/part → 8 warps → 1; 132096 → 1
    (254, 33792, 128): (12.5, "registers"),  # 8128→8192 → 2/part → 8 warps → 2 blk; smem 34816 → 6
    (255, 33792, 128): (12.5, "registers"),  # 8160→8192 → 2 blk; smem 34816 → 6
    (255, 49152, 128): (12.5, "registers"),  # 2 blk; smem 50176 → 4
    (255, 65536, 128): (12.5, "registers"),  # 2 blk; smem 66560 → 3
    (255, 114688, 128): (12.5, "registers+shared_memory"),  # 2 blk; smem 115712 → 2
}


@pytest.mark.parametrize("path", ALL_TRACES, ids=lambda p: f"{p.parent.name}/{p.stem}")
def test_occupancy_of_every_kernel_equals_the_hand_table(path):
    """Each kernel's launch fields read from the raw JSON, its occupancy from the table above."""
    raw = [e for e in raw_gpu_events_in_call(raw_events(path)) if e["cat"] == "kernel"]
    expected = {}
    for e in raw:
        a = e["args"]
        key = (a["registers per thread"], a["shared memory"], math.prod(a["block"]))
        assert key in H200_OCCUPANCY_BY_HAND, f"{e['name'][:60]}: work {key} out by hand and add it to the table"
        expected.setdefault(e["name"], set()).add(H200_OCCUPANCY_BY_HAND[key])
    fp = fingerprint(load_trace(path))
    assert sum(k.category not in ("memcpy", "memset") for k in fp.kernels) == len(raw)
    for k in fp.kernels:
        if k.category in ("memcpy", "memset"):
            assert k.theoretical_occupancy_pct is None
        else:
            assert (k.theoretical_occupancy_pct, k.occupancy_limiter) in expected[k.name]


def _only_kernel(fp, category="attention"):
    ks = [k for k in fp.kernels if k.category == category]
    assert len(ks) == 1, [k.name for k in fp.kernels]
    return ks[0]


def test_flash_kernel_by_hand():
    fp = fingerprint(load_trace(H200 / "sdpa_flash.json"))
    k = _only_kernel(fp)
    assert "pytorch_flash::flash_fwd_kernel" in k.name
    assert k.launched_by == "aten::_flash_attention_forward"
    assert k.tensor_cores is True
    # By hand from the trace's own fields: regs/thread, smem/block, threads/block.
    regs, smem, threads = k.registers_per_thread, k.shared_memory_bytes, math.prod(k.block)
    regs_per_warp = -(-regs * 32 // 256) * 256
    warps_by_regs = (65536 // 4 // regs_per_warp) * 4
    blocks = min(warps_by_regs // (threads // 32), 233472 // (smem + 1024), 64 // (threads // 32), 32)
    assert k.theoretical_occupancy_pct == pytest.approx(100 * blocks * (threads // 32) / 64)
    assert k.theoretical_occupancy_pct == pytest.approx(12.5)  # the seed's "13%", by design
    assert k.kineto_occupancy_pct is not None
    assert fp.sdpa_backend == "flash" and not fp.upcasts and not fp.hidden_copies and not fp.mask_rebuilt


def test_cudnn_kernel_by_hand_and_memset():
    fp = fingerprint(load_trace(H200 / "sdpa_cudnn.json"))
    k = _only_kernel(fp)
    assert k.name.startswith("cudnn_generated_fort_native_sdpa_sm90")
    assert k.tensor_cores is True and k.launched_by == "aten::_cudnn_attention_forward"
    assert (k.registers_per_thread, math.prod(k.block)) == (168, 384)
    assert k.theoretical_occupancy_pct == pytest.approx(18.75)
    assert k.kineto_occupancy_pct == 0  # why occupancy is computed, not copied
    assert fp.num_memset == 1 and fp.num_memcpy == 0
    assert fp.sdpa_backend == "cudnn"
    # no transposes: cuDNN takes the strided layout as it is
    raw = raw_events(H200 / "sdpa_cudnn.json")
    assert not [e for e in raw if e.get("cat") == "cpu_op" and e["name"] == "aten::transpose"]


def test_efficient_kernel():
    fp = fingerprint(load_trace(H200 / "sdpa_efficient.json"))
    k = _only_kernel(fp)
    assert k.name.startswith("fmha_cutlassF_bf16")
    assert k.tensor_cores is True and fp.sdpa_backend == "efficient"


def test_naive_hidden_copy_is_attributed_to_masked_fill():
    path = H200 / "naive.json"
    raw = raw_events(path)
    memcpy = [e for e in raw_gpu_events_in_call(raw) if e["cat"] == "gpu_memcpy"]
    assert len(memcpy) == 1 and "DtoD" in memcpy[0]["name"]
    fp = fingerprint(load_trace(path))
    assert len(fp.hidden_copies) == 1
    c = fp.hidden_copies[0]
    assert c.op == "aten::masked_fill" and c.copy_op == "aten::copy_"
    assert c.bytes == memcpy[0]["args"]["bytes"] == 4 * 16 * 2048 * 2048 * 2
    assert c.device_event == memcpy[0]["name"]
    assert c.duration_us == pytest.approx(memcpy[0]["dur"])
    # the memset is cuBLAS workspace under the first bmm, not a hidden copy
    ms = [k for k in fp.kernels if k.category == "memset"]
    assert len(ms) == 1 and ms[0].launched_by == "aten::bmm"
    assert not fp.upcasts and fp.tensor_cores is True


def test_naive_inplace_has_no_hidden_copy():
    fp = fingerprint(load_trace(H200 / "naive_inplace.json"))
    assert fp.hidden_copies == () and fp.num_memcpy == 0
    assert fp.num_kernels == fingerprint(load_trace(H200 / "naive.json")).num_kernels


def test_math_upcast_mask_and_cuda_core_gemms():
    path = H200 / "sdpa_math.json"
    raw = raw_events(path)
    # upcasts read from the raw recorded dtypes: copy_(float ← BFloat16) of full tensors
    raw_up = [
        e
        for e in raw
        if e.get("cat") == "cpu_op"
        and e["name"] == "aten::copy_"
        and e["args"]["Input type"][:2] == ["float", "c10::BFloat16"]
        and e["args"]["Input Dims"][0]
    ]
    fp = fingerprint(load_trace(path))
    assert len(fp.upcasts) == len(raw_up) == 3  # q, k and v
    assert {u.op for u in fp.upcasts} == {"aten::_scaled_dot_product_attention_math"}
    assert fp.mask_rebuilt and "aten::tril" in fp.mask_ops
    gemms = [k for k in fp.kernels if k.category == "gemm"]
    assert gemms and all("ffma" in k.name and k.tensor_cores is False for k in gemms)
    assert fp.tensor_cores is False
    assert fp.num_kernels == 20
    assert fp.sdpa_backend == "math"


def test_flex_compiled_single_triton_kernel():
    fp = fingerprint(load_trace(H200 / "flex_compiled.json"))
    k = _only_kernel(fp)
    assert k.name.startswith("triton_tem_fused_flex_attention")
    assert k.tensor_cores is True
    assert fp.sdpa_backend is None


def test_default_sdpa_ran_cudnn_on_h200():
    fp = fingerprint(load_trace(H200 / "sdpa_default.json"))
    assert fp.sdpa_backend == "cudnn"
    assert _only_kernel(fp).name.startswith("cudnn_generated_fort_native_sdpa")


def test_compiled_flex_tensor_cores_follow_the_template_ops_input_dtype(tmp_path):
    """The same real trace with the template op's recorded inputs as fp32: the name alone says tensor cores,
    but fp32 tl.dot runs IEEE FMA by default (ncu on the H200, tests/data/ncu/h200_tensor_pipe_rest.csv) and
    TF32 only under a flag the trace does not hold: unknown, never guessed."""
    import json

    doc = json.loads((H200 / "flex_compiled.json").read_text())
    bf16 = _only_kernel(fingerprint(load_trace(H200 / "flex_compiled.json")))
    assert bf16.input_dtype == "bf16" and bf16.tensor_cores is True
    n = 0
    for e in doc["traceEvents"]:
        if e.get("cat") == "cpu_op" and e["name"].startswith("triton_tem_fused_flex_attention"):
            e["args"]["Input type"] = ["float" if t == "c10::BFloat16" else t for t in e["args"]["Input type"]]
            n += 1
    assert n == 1
    p = tmp_path / "flex_fp32.json"
    p.write_text(json.dumps(doc))
    fp32 = _only_kernel(fingerprint(load_trace(p)))
    assert fp32.input_dtype == "fp32" and fp32.tensor_cores is None and fp32.tensor_core_precision is None


# analysis/fingerprint.py, rule by rule, on traces small enough to work out by hand.
#
# Pinned here: which ops and GPU events belong to the profiled call (the window's edges, the
# External-id fallback), the device properties that decide the compute capability and override the
# occupancy table, every field of a GPU and a CPU kernel record (tensor cores and TF32 from the name
# and from the launching op's dtype, occupancy of odd launches), which CPU ops count as kernels, the
# hidden copies and upcasts of ``aten::copy_`` (scalars, broadcasts, unknown dtypes, DtoD memcpys no
# typed copy accounts for), peak memory at the window's edges, and the notes of the fingerprint.
#
# Where the expected values come from: every trace is synthetic, written here as a dict (tests/synth.py
# builds the Kineto events), and each expected value is read off those events or worked by hand in the
# test's docstring or comments: counts, sums and byte sizes by arithmetic, tensor-core verdicts from the
# rule table rows quoted beside them (analysis/kernels.py), occupancy by the calculator's arithmetic
# (sm90: 64 warps, 32 blocks, 65536 registers in 4 sub-partitions and 256-register units per warp,
# 233472 B shared memory in 128 B units plus 1024 B reserved per block; test_h200_fingerprint.py
# holds the same table of launches).  No expected value is computed by the code under test.


H200_DEVICE = {"id": 0, "name": "NVIDIA H200", "computeMajor": 9, "computeMinor": 0}
DTOD = "Memcpy DtoD (Device -> Device)"
SDPA = "aten::scaled_dot_product_attention"


def annotation(name: str, ts: float, dur: float) -> dict[str, Any]:
    return {"ph": "X", "cat": "user_annotation", "name": name, "pid": PID, "tid": TID, "ts": ts, "dur": dur}


def shaped(name: str, ts: float, dur: float, ext: int | None, dims: list[Any], types: list[str] | None = None):
    """A cpu_op with its recorded input dims (and types)."""
    args: dict[str, Any] = {"Input Dims": dims}
    if types is not None:
        args["Input type"] = types
    return op(name, ts, dur, ext, **args)


def memcpy(name: str, ts: float, dur: float, corr: int | None, **args: Any) -> dict[str, Any]:
    return kernel(name, ts, dur, corr, cat="gpu_memcpy", **args)


def gpu_trace(events: list[dict[str, Any]], props: dict[str, Any] | None = None) -> Trace:
    return trace_from_doc(doc(events, deviceProperties=[props or H200_DEVICE]))


# ---- the window of the profiled call -------------------------------------------------------------


def window_events() -> list[dict[str, Any]]:
    """attnscope::call spans [0, 100] on the main thread.

    ops: SDPA [0, 100.001] (ends exactly at the end plus the 1e-3 µs rounding tolerance: in),
    aten::mm [10, 30] without an External id (in), aten::late [50, 100.5] (ends 0.5 µs after the
    call: out), aten::after [150, 160] (out).
    GPU events: launched at 0 (the call's first instant: in) and at 100 (its last: in); launched
    at 100.5 (out, though its External id is an op's inside); no correlation but the External id
    of SDPA (in), of aten::after (out), or none at all (out)."""
    return [
        annotation("attnscope::call", 0, 100),
        op(SDPA, 0, 100.001, 10),
        op("aten::mm", 10, 20, None),
        op("aten::late", 50, 50.5, 11),
        op("aten::after", 150, 10, 20),
        launch(0, corr=1, ext=10),
        kernel("k_launched_at_start", 200, 1, corr=1),
        launch(100, corr=2, ext=10),
        kernel("k_launched_at_end", 210, 2, corr=2),
        launch(100.5, corr=3, ext=20),
        kernel("k_launched_after_ext_inside", 220, 4, corr=3, ext=10),
        kernel("k_ext_inside", 230, 8, corr=None, ext=10),
        kernel("k_ext_outside", 240, 16, corr=None, ext=20),
        kernel("k_no_ids", 250, 32, corr=None),
    ]


def test_the_window_keeps_ops_ending_within_the_tolerance_and_launches_at_either_edge():
    ops, gpu, win = select_window(trace_from_doc(doc(window_events())))
    assert win == (0.0, 100.0)
    assert sorted(o.name for o in ops) == ["aten::mm", SDPA]
    assert sorted(g.name for g in gpu) == ["k_ext_inside", "k_launched_at_end", "k_launched_at_start"]


def test_the_call_span_is_the_annotation_not_the_ops_inside_it():
    """The only op inside the call runs [10, 40]; the call's host time is still its span, 100 − 0."""
    tr = trace_from_doc(doc([annotation("attnscope::call", 0, 100), op("aten::add", 10, 30, 1)]))
    a = analyse(tr)
    assert a.window == (0.0, 100.0)
    assert a.fingerprint.trace_cpu_time_us == 100.0


# ---- device properties ---------------------------------------------------------------------------


def test_device_properties_override_the_occupancy_table():
    """sm90's row with the trace's registers (32768), shared memory (102400 B) and threads (1536 →
    1536 // 32 = 48 warps, an int) in place of the table's; the rest of the row as the CUDA guide
    gives it: 32 blocks, 255 registers per thread, 256-register units, 232448 B per block opt-in,
    1024 B reserved per block, 128 B units."""
    props = dict(
        H200_DEVICE, regsPerMultiprocessor=32768, sharedMemPerMultiprocessor=102400, maxThreadsPerMultiprocessor=1536
    )
    lim, cc, name = _limits_for(Trace(path="p", device_properties=[props]))
    assert lim == ArchLimits("sm90", 48, 32, 32768, 255, 256, 102400, 232448, 1024, 128)
    assert type(lim.max_warps_per_sm) is int
    assert (cc, name) == ((9, 0), "NVIDIA H200")


def test_a_gpu_without_compute_capability_is_0_0_with_a_note():
    props = {"id": 0, "name": "Mystery GPU"}
    fp = fingerprint(gpu_trace([kernel("some_kernel", 0, 1, corr=None)], props))
    assert fp.compute_capability == (0, 0)
    assert fp.device_name == "Mystery GPU"
    assert fp.notes == ("no occupancy limits for compute capability 0.0",)


def test_the_minor_compute_capability_is_read_and_a_known_one_has_no_note():
    props = {"id": 0, "name": "NVIDIA A10", "computeMajor": 8, "computeMinor": 6}
    fp = fingerprint(gpu_trace([kernel("some_kernel", 0, 1, corr=None)], props))
    assert fp.compute_capability == (8, 6)
    assert fp.notes == ()


def test_an_unknown_compute_capability_is_named_in_the_note():
    props = {"id": 0, "name": "Tesla T4", "computeMajor": 7, "computeMinor": 5}
    fp = fingerprint(gpu_trace([kernel("some_kernel", 0, 1, corr=None)], props))
    assert fp.compute_capability == (7, 5)
    assert fp.notes == ("no occupancy limits for compute capability 7.5",)
    assert fp.kernels[0].theoretical_occupancy_pct is None


def test_malformed_events_are_counted_in_a_note():
    """One cpu_op without a ts: skipped, and said so."""
    bad = {"ph": "X", "cat": "cpu_op", "name": "aten::add", "pid": PID, "tid": TID, "dur": 1}
    fp = fingerprint(trace_from_doc(doc([op("aten::mul", 0, 5, None), bad])))
    assert fp.notes == ("1 malformed trace events skipped",)


def test_a_cpu_profile_on_a_gpu_machine_is_a_cpu_fingerprint():
    """deviceProperties lists the GPU, but no GPU event was recorded: a CPU trace, no device name,
    no compute capability, no GPU time; its leaf op is its one kernel."""
    tr = trace_from_doc(doc([shaped("aten::add", 0, 5, None, [[4, 4], [4, 4]])], deviceProperties=[H200_DEVICE]))
    fp = fingerprint(tr)
    assert fp.device_kind == "cpu"
    assert (fp.device_name, fp.compute_capability, fp.trace_gpu_time_us) == (None, None, None)
    assert fp.kernels == (KernelRecord("aten::add", "elementwise", 5.0, device="cpu", start_us=0.0),)


def test_a_call_that_launched_nothing_in_a_gpu_trace_is_still_a_gpu_fingerprint():
    """The trace holds a kernel, launched after the call: the call launched none (GPU time 0)."""
    evs = [
        annotation("attnscope::call", 0, 100),
        op("aten::add", 10, 30, 1),
        op("aten::after", 150, 10, 2),
        launch(155, corr=1, ext=2),
        kernel("after_kernel", 170, 3, corr=1),
    ]
    fp = fingerprint(gpu_trace(evs))
    assert fp.device_kind == "gpu"
    assert (fp.device_name, fp.compute_capability) == ("NVIDIA H200", (9, 0))
    assert fp.kernels == ()
    assert fp.trace_gpu_time_us == 0


# ---- GPU kernel records --------------------------------------------------------------------------

NVJET = "nvjet_tst_128x64_64x8_1x1_v_bz_TNN"
CUTLASS_F32 = "fmha_cutlassF_f32_aligned_64x64_rf_sm80"


def test_every_field_of_a_kernel_and_a_memcpy_record():
    """nvjet (gemm; "cuBLAS nvjet kernels on sm90 issue wgmma": tensor cores) launched by a bf16
    aten::mm; (80 regs, 0 B, 128 threads) on sm90: 80·32 = 2560 registers per warp, 16384 // 2560 =
    6 warps per partition → 24 warps → 6 blocks of 4 → 24/64 = 37.5 %, registers.  The DtoD memcpy
    of aten::copy_: 128 B, no launch shape, not matrix work (no tensor cores, no dtype)."""
    bf16 = ["c10::BFloat16", "c10::BFloat16"]
    evs = [
        shaped("aten::mm", 0, 50, 1, [[64, 64], [64, 64]], bf16),
        launch(5, corr=1, ext=1),
        kernel(NVJET, 60, 12.5, corr=1, grid=[4, 2, 1], block=[128, 1, 1], **{
            "registers per thread": 80, "shared memory": 0, "est. achieved occupancy %": 31}),
        shaped("aten::copy_", 100, 20, 2, [[4, 8], [4, 8], []], ["float", "float", "Scalar"]),
        launch(105, corr=2, ext=2, name="cudaMemcpyAsync"),
        memcpy(DTOD, 130, 2.0, corr=2, stream=9, bytes=128),
    ]  # fmt: skip
    fp = fingerprint(gpu_trace(evs))
    assert fp.kernels == (
        KernelRecord(
            name=NVJET,
            category="gemm",
            duration_us=12.5,
            device="gpu",
            launched_by="aten::mm",
            tensor_cores=True,
            tensor_core_precision=None,
            grid=(4, 2, 1),
            block=(128, 1, 1),
            registers_per_thread=80,
            shared_memory_bytes=0,
            theoretical_occupancy_pct=37.5,
            occupancy_limiter="registers",
            kineto_occupancy_pct=31.0,
            bytes=None,
            stream=7,
            start_us=60.0,
            input_dtype="bf16",
        ),
        KernelRecord(
            name=DTOD,
            category="memcpy",
            duration_us=2.0,
            device="gpu",
            launched_by="aten::copy_",
            tensor_cores=False,
            bytes=128,
            stream=9,
            start_us=130.0,
        ),
    )


def test_tensor_cores_and_tf32_from_the_name_alone_when_nothing_launched_the_kernel():
    """No launcher, so no dtype: fmha_cutlassF_f32 is attention on "TF32" tensor cores (its own
    row), nvjet gemm on tensor cores, an unknown name is unknown (None)."""
    evs = [
        kernel(CUTLASS_F32, 0, 1, corr=None),
        kernel(NVJET, 10, 1, corr=None),
        kernel("my_custom_kernel", 20, 1, corr=None),
    ]
    fp = fingerprint(gpu_trace(evs))
    got = [(k.name, k.category, k.tensor_cores, k.tensor_core_precision, k.launched_by) for k in fp.kernels]
    assert got == [
        (CUTLASS_F32, "attention", True, "TF32", None),
        (NVJET, "gemm", True, None, None),
        ("my_custom_kernel", "other", None, None, None),
    ]


def test_fp32_inputs_keep_tf32_and_the_first_op_of_the_trace_gives_its_dtype():
    """The cutlass fp32 kernel launched by the trace's first op (index 0) with float inputs: the
    dtype rule leaves it on tensor cores, so it stays TF32, and its input dtype is fp32."""
    f32 = ["float", "float", "float"]
    evs = [
        shaped("aten::_efficient_attention_forward", 0, 50, 1, [[1, 2, 64, 32]] * 3, f32),
        launch(5, corr=1, ext=1),
        kernel(CUTLASS_F32, 60, 7, corr=1),
    ]
    (k,) = fingerprint(gpu_trace(evs)).kernels
    assert (k.launched_by, k.tensor_cores, k.tensor_core_precision, k.input_dtype) == (
        "aten::_efficient_attention_forward",
        True,
        "TF32",
        "fp32",
    )


def test_fp32_flex_kernels_are_unknown_on_tensor_cores_even_from_the_first_op():
    """Inductor's flex template with fp32 inputs runs IEEE FMA or TF32 MMA, which the trace does
    not say: tensor cores None (the dtype row), so no TF32 precision either, even for a name the
    name table alone would call TF32 (``_tf32`` in it).  The first one is launched by op 0."""
    f32 = ["float", "float", "float"]
    flex, flex_tf32 = "triton_tem_fused_flex_attention_0", "triton_tem_fused_flex_attention_tf32_1"
    evs = [
        shaped(flex, 0, 50, 1, [[1, 2, 64, 32]] * 3, f32),
        launch(5, corr=1, ext=1),
        kernel(flex, 60, 7, corr=1),
        shaped(flex_tf32, 100, 50, 2, [[1, 2, 64, 32]] * 3, f32),
        launch(105, corr=2, ext=2),
        kernel(flex_tf32, 160, 7, corr=2),
    ]
    fp = fingerprint(gpu_trace(evs))
    got = [(k.name, k.launched_by, k.tensor_cores, k.tensor_core_precision, k.input_dtype) for k in fp.kernels]
    assert got == [(flex, flex, None, None, "fp32"), (flex_tf32, flex_tf32, None, None, "fp32")]


def _occupancy_of(props: dict[str, Any], **args: Any) -> tuple[float | None, str | None]:
    (k,) = fingerprint(gpu_trace([kernel("some_kernel", 0, 1, corr=None, **args)], props)).kernels
    return k.theoretical_occupancy_pct, k.occupancy_limiter


def test_occupancy_of_a_kernel_without_recorded_registers():
    """32 threads (1 warp), no registers, 0 B shared memory on sm90: warps 64 // 1 = 64, blocks 32,
    registers unlimited (as many as blocks: 32), shared memory 233472 // 1024 = 228 → 32 blocks of
    1 warp = 32/64 = 50 %; the block limit binds, and registers, not recorded, are never named."""
    assert _occupancy_of(H200_DEVICE, block=[32, 1, 1], **{"shared memory": 0}) == (50.0, "blocks")


def test_occupancy_of_a_three_dimensional_block():
    """Block 32 × 2 × 2 = 128 threads, 16 registers, 0 B: the (16, 0, 128) launch, 100 % by warps
    (4 warps per block → 16 blocks fill 64 warps; 512 registers per warp allow 32 blocks)."""
    assert _occupancy_of(H200_DEVICE, block=[32, 2, 2], **{"registers per thread": 16, "shared memory": 0}) == (
        100.0,
        "warps",
    )


def test_occupancy_under_the_traces_own_shared_memory_and_none_recorded_for_the_kernel():
    """The trace says 16384 B of shared memory per SM.  1 warp, 16 registers, shared memory not
    recorded (0 B): 0 + 1024 reserved = 1024 B per block → 16384 // 1024 = 16 blocks; registers
    allow 16384 // 512 = 32 warps per partition → 128 blocks, warps 64, blocks 32 → 16 blocks of
    1 warp = 16/64 = 25 %, shared memory."""
    props = dict(H200_DEVICE, sharedMemPerMultiprocessor=16384)
    assert _occupancy_of(props, block=[32, 1, 1], **{"registers per thread": 16}) == (25.0, "shared_memory")


def test_a_malformed_attribution_is_refused_not_truncated():
    """An Attribution whose launcher list is shorter than its events: a ValueError, not records
    (or orphan copies) for the first events only."""
    ev = GpuEvent("memcpy", DTOD, 0.0, 1.0, None, None, 0, 7)
    tree = build_op_tree([])
    bad = Attribution(tree, [ev, ev], [-1], [None], ["none"])
    with pytest.raises(ValueError):
        gpu_kernel_records(bad, None)
    with pytest.raises(ValueError):
        _orphan_dtod(bad, set())


# ---- CPU kernel records --------------------------------------------------------------------------


def cpu_tree_events() -> list[dict[str, Any]]:
    """One thread, no GPU.  Nesting (by time) and what counts as a CPU kernel:

    aten::linear [0, 100]            not counted: compute below it
      aten::t [1, 3]                 metadata
      aten::addmm [5, 85]            counted: fused (atomic) op, launched by aten::linear
        aten::copy_ [10, 30]         inside the fused op: not counted on its own
      aten::view [90, 95]            metadata, the last child
    aten::dropout [110, 160]         counted: nothing but metadata below it
      aten::empty_like [111, 113]    metadata
    aten::mul [200, 210]             0-dim inputs only (a scalar op): not counted
    aten::add [220, 230]             counted: a leaf on 1-D tensors
    aten::softmax [240, 280]         not counted: compute below it
      aten::_softmax [245, 275]      counted: fused op, launched by aten::softmax
    """
    return [
        shaped("aten::linear", 0, 100, None, [[4, 8], [16, 8], [16]]),
        shaped("aten::t", 1, 2, None, [[16, 8]]),
        shaped("aten::addmm", 5, 80, None, [[16], [4, 8], [8, 16]]),
        shaped("aten::copy_", 10, 20, None, [[4, 16], [4, 16]]),
        shaped("aten::view", 90, 5, None, [[4, 16]]),
        shaped("aten::dropout", 110, 50, None, [[4, 16]]),
        shaped("aten::empty_like", 111, 2, None, [[4, 16]]),
        shaped("aten::mul", 200, 10, None, [[], []]),
        shaped("aten::add", 220, 10, None, [[16], [16]]),
        shaped("aten::softmax", 240, 40, None, [[4, 16]]),
        shaped("aten::_softmax", 245, 30, None, [[4, 16]]),
    ]


def test_a_cpu_only_trace_counts_leaf_and_fused_ops_not_their_parents():
    fp = fingerprint(trace_from_doc(doc(cpu_tree_events())))
    assert fp.device_kind == "cpu"
    assert fp.kernels == (
        KernelRecord("aten::addmm", "gemm", 80.0, device="cpu", launched_by="aten::linear", start_us=5.0),
        KernelRecord("aten::dropout", "elementwise", 50.0, device="cpu", launched_by=None, start_us=110.0),
        KernelRecord("aten::add", "elementwise", 10.0, device="cpu", launched_by=None, start_us=220.0),
        KernelRecord("aten::_softmax", "softmax", 30.0, device="cpu", launched_by="aten::softmax", start_us=245.0),
    )
    assert (fp.num_kernels, fp.trace_gpu_time_us) == (4, None)


# ---- copies and upcasts --------------------------------------------------------------------------


def _copies(*ops: CpuOp) -> tuple[list[HiddenCopy], list[Upcast], list[int]]:
    return copies_and_upcasts_at(build_op_tree(list(ops)), {})


def copy_op(ts: float, dims: Any, types: Any) -> CpuOp:
    return CpuOp.recorded("aten::copy_", 1, ts, 10.0, None, input_dims=dims, input_types=types)


def test_a_copy_with_nothing_above_it_is_its_own_cause():
    """4 × 8 floats = 32 · 4 = 128 B, on the host: no device event, no device time, no strides."""
    copies, upcasts, _ = _copies(copy_op(0, [[4, 8], [4, 8], []], ["float", "float", "Scalar"]))
    assert copies == [HiddenCopy("aten::copy_", "aten::copy_", 128, (4, 8), None, None, None, None)]
    assert upcasts == []


def test_a_copy_of_0_dim_tensors_copies_nothing():
    assert _copies(copy_op(0, [[], [], []], ["float", "float", "Scalar"])) == ([], [], [])


def test_an_untyped_copy_is_skipped_and_the_next_one_still_read():
    """The first copy_ recorded no types; the second, 2 × 3 bf16 = 6 · 2 = 12 B, is reported."""
    copies, _, _ = _copies(
        copy_op(0, [[2, 3], [2, 3]], None),
        copy_op(20, [[2, 3], [2, 3]], ["c10::BFloat16", "c10::BFloat16"]),
    )
    assert [(c.op, c.bytes, c.dims) for c in copies] == [("aten::copy_", 12, (2, 3))]


def test_a_copy_with_types_but_no_dims_is_skipped():
    assert _copies(copy_op(0, None, ["float", "float"])) == ([], [], [])


def test_a_broadcasting_copy_is_the_size_of_its_destination():
    """dst [4, 16], src [1, 16] (broadcast): 64 floats written = 256 B, dims the destination's."""
    copies, _, _ = _copies(copy_op(0, [[4, 16], [1, 16], []], ["float", "float", "Scalar"]))
    assert [(c.bytes, c.dims) for c in copies] == [(256, (4, 16))]


def test_a_copy_of_a_dtype_without_a_known_size_reports_0_bytes():
    """complex<double> is not in TYPE_BYTES: the copy is reported, its size as 0 B (unknown)."""
    copies, _, _ = _copies(copy_op(0, [[2, 3], [2, 3]], ["c10::complex<double>", "c10::complex<double>"]))
    assert [(c.op, c.bytes, c.dims) for c in copies] == [("aten::copy_", 0, (2, 3))]


def test_an_upcast_with_no_device_work_has_no_device_time():
    """A CPU trace: the bf16 → fp32 copy_ of 4 × 8 (32 · 4 = 128 B written) launched nothing."""
    tr = trace_from_doc(doc([shaped("aten::copy_", 0, 10, None, [[4, 8], [4, 8], []], ["float", "c10::BFloat16"])]))
    a = analyse(tr)
    assert a.fingerprint.upcasts == (Upcast("aten::copy_", "c10::BFloat16", "float", (4, 8), 128),)
    assert a.upcast_us == [None]


def test_a_typed_copy_with_two_recorded_types_owns_its_dtod_memcpy():
    """copy_ with its two tensors' types only (no non_blocking) launching a DtoD: one hidden copy
    with the memcpy as its device event, not a second one for the memcpy."""
    evs = [
        shaped("aten::copy_", 0, 20, 1, [[4, 8], [4, 8]], ["float", "float"]),
        launch(5, corr=1, ext=1, name="cudaMemcpyAsync"),
        memcpy(DTOD, 30, 2.0, corr=1, bytes=128),
    ]
    fp = fingerprint(gpu_trace(evs))
    assert fp.hidden_copies == (HiddenCopy("aten::copy_", "aten::copy_", 128, (4, 8), DTOD, 2.0, None, None),)


def test_a_dtod_memcpy_of_an_op_that_is_not_a_copy_is_an_orphan_copy():
    """The efficient-attention backend (shapes recorded, not a copy_) launches a 4096 B DtoD inside
    SDPA: reported from the memcpy alone, caused by SDPA, inside SDPA, no dims."""
    evs = [
        op(SDPA, 0, 100, 1),
        shaped("aten::_scaled_dot_product_efficient_attention", 5, 90, 2, [[1, 2, 64, 32]] * 3, ["float"] * 3),
        launch(10, corr=1, ext=2, name="cudaMemcpyAsync"),
        memcpy(DTOD, 120, 3.5, corr=1, bytes=4096),
    ]
    fp = fingerprint(gpu_trace(evs))
    assert fp.hidden_copies == (
        HiddenCopy(SDPA, "aten::_scaled_dot_product_efficient_attention", 4096, (), DTOD, 3.5, None, SDPA),
    )


def test_an_unlinked_dtod_memcpy_after_a_kernel_is_an_unknown_copy():
    """A kernel first (not a memcpy: passed over), then a DtoD that nothing links (no correlation,
    no External id) and that recorded no bytes: op and copy op unknown, 0 B, inside nothing, though
    the trace's last op sits inside SDPA."""
    evs = [
        op(SDPA, 0, 100, 1),
        op("aten::mm", 10, 20, 2),
        launch(15, corr=1, ext=2),
        kernel(NVJET, 110, 1, corr=1),
        memcpy(DTOD, 120, 3.0, corr=None),
    ]
    fp = fingerprint(gpu_trace(evs))
    assert fp.hidden_copies == (HiddenCopy("unknown", "unknown", 0, (), DTOD, 3.0, None, None),)


def test_a_dtod_memcpy_of_the_first_op_of_an_unshaped_trace():
    """No record_shapes: the copy_ (the trace's first op, index 0) has no types, so only its 256 B
    DtoD memcpy says it copied; it is its own cause and copy op."""
    evs = [
        op("aten::copy_", 0, 20, 1),
        launch(5, corr=1, ext=1, name="cudaMemcpyAsync"),
        memcpy(DTOD, 30, 2.0, corr=1, bytes=256),
    ]
    fp = fingerprint(gpu_trace(evs))
    assert fp.hidden_copies == (HiddenCopy("aten::copy_", "aten::copy_", 256, (), DTOD, 2.0, None, None),)


# ---- mask builds ---------------------------------------------------------------------------------


def test_a_mask_build_on_the_gpu_lists_its_kernels():
    """aten::tril of an 8 × 8 float tensor (diagonal 0, not of ones: no mask kind), nothing takes
    it; it launched one 2.5 µs triu_tril_kernel."""
    tril = op("aten::tril", 0, 20, 1, **{
        "Input Dims": [[8, 8], []], "Input type": ["float", "Scalar"], "Concrete Inputs": ["", "0"]})  # fmt: skip
    fp = fingerprint(gpu_trace([tril, launch(5, corr=1, ext=1), kernel("triu_tril_kernel", 30, 2.5, corr=1)]))
    assert fp.mask_ops == ("aten::tril",)
    assert fp.mask_builds == (
        {
            "op": "aten::tril",
            "dims": [8, 8],
            "diagonal": 0,
            "mask": None,
            "built_by": ["aten::tril"],
            "built_inside": None,
            "taken_by": None,
            "linked_by": None,
            "converted_by": [],
            "backend": None,
            "is_causal": None,
            "num_kernels": 1,
            "kernel_us": 2.5,
            "kernels": ["triu_tril_kernel"],
        },
    )


# ---- peak memory ---------------------------------------------------------------------------------


def _peak(events: list[tuple[float, int, int, int]], gpu_side: bool = True, ops: list[CpuOp] | None = None):
    """Peak extra memory over the window of one op [100, 200]; events (ts, device type, total, bytes)."""
    tr = Trace(path="m", device_properties=[], memory=[MemEvent(*e) for e in events])
    return _peak_memory(tr, [CpuOp("aten::add", 1, 100.0, 100.0, None)] if ops is None else ops, gpu_side)


def test_peak_memory_with_memory_events_only_before_the_window_is_0():
    assert _peak([(50, 1, 1000, 1000)]) == 0


def test_peak_memory_with_memory_events_only_after_the_window_is_unknown():
    assert _peak([(250, 1, 1000, 1000)]) is None


def test_peak_memory_without_ops_is_unknown():
    assert _peak([(50, 1, 1000, 1000)], ops=[]) is None


def test_an_allocation_at_the_windows_first_instant_is_inside_it():
    """At t0 = 100: total 1500 after +500 → base 1500 − 500 = 1000, peak 1500 → 500 B."""
    assert _peak([(100, 1, 1500, 500)]) == 500


def test_an_allocation_at_the_windows_last_instant_is_inside_it():
    """Base 1000 (at 50); 1200 at 150; 1800 at t1 = 200 → 1800 − 1000 = 800 B."""
    assert _peak([(50, 1, 1000, 1000), (150, 1, 1200, 200), (200, 1, 1800, 600)]) == 800


def test_a_window_that_only_frees_memory_has_peak_0():
    """Base 1000, then 800 inside: 800 − 1000 < 0 → 0."""
    assert _peak([(50, 1, 1000, 1000), (150, 1, 800, -200)]) == 0


def test_a_cpu_window_reads_the_hosts_memory_events():
    """Host (type 0): base 100, 400 inside → 300 B; the GPU's 10^6 B (type 1) is not the host's."""
    evs = [(50, 0, 100, 100), (150, 0, 400, 300), (150, 1, 10**6, 10**6)]
    assert _peak(evs, gpu_side=False) == 300
