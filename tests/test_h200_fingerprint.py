"""The fingerprint of each real H200 trace, checked against the raw trace JSON itself."""

from __future__ import annotations

import math

import pytest

from attnscope.analysis.fingerprint import fingerprint
from attnscope.analysis.occupancy import ARCH_LIMITS, theoretical_occupancy
from attnscope.trace import load_trace
from tests.rawtrace import H200, H200_BIG, VARIANTS, raw_events, raw_gpu_events_in_call

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


@pytest.mark.parametrize("path", ALL_TRACES, ids=lambda p: f"{p.parent.name}/{p.stem}")
def test_occupancy_recomputed_from_raw_registers_smem_block(path):
    """Every kernel's occupancy equals the calculator applied to the raw trace fields."""
    evs = {e["args"]["correlation"]: e for e in raw_gpu_events_in_call(raw_events(path)) if e["cat"] == "kernel"}
    fp = fingerprint(load_trace(path))
    by_name = {}
    for e in evs.values():
        a = e["args"]
        b = a["block"]
        occ = theoretical_occupancy(
            a["registers per thread"], a["shared memory"], b[0] * b[1] * b[2], ARCH_LIMITS[(9, 0)]
        )
        by_name.setdefault(e["name"], set()).add(round(occ.pct, 2) if occ else None)
    for k in fp.kernels:
        if k.category in ("memcpy", "memset"):
            assert k.theoretical_occupancy_pct is None
        else:
            assert k.theoretical_occupancy_pct in by_name[k.name]


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
