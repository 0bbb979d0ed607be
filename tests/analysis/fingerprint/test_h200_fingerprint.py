"""The fingerprint of each real H200 trace, checked against the raw trace JSON itself."""

from __future__ import annotations

import math

import pytest

from attnscope.analysis.fingerprint.build import fingerprint
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
