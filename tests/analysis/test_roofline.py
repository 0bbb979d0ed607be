"""The roofline: bytes, intensity, bound and %peak worked by hand, and the real H200 decode trace."""

from __future__ import annotations

from typing import Any

import pytest

from attnscope.analysis.roofline import call_bytes, roofline, row_roofline
from attnscope.api import analyze
from attnscope.core.gpus import lookup
from attnscope.document.schema import result_to_dict
from tests.rawtrace import H200, raw_events

H200_SPEC = lookup("NVIDIA H200")


def test_bytes_of_a_forward_call() -> None:
    # Q, O: 2·4·16·8·2 = 2048 B each; K, V the same (no GQA, Sk = Sq)
    case = {"batch": 2, "heads": 4, "seq_q": 16, "head_dim": 8, "dtype": "bf16"}
    assert call_bytes(case)[0] == 4 * 2048


def test_bytes_of_decode_read_the_kv_cache() -> None:
    # Q, O: 32·128·2 = 8192 B each; K, V: 8·8192·128·2 = 16,777,216 B each
    case = {"batch": 1, "heads": 32, "kv_heads": 8, "seq_q": 1, "seq_kv": 8192, "head_dim": 128, "dtype": "bf16"}
    nbytes, source = call_bytes(case)
    assert nbytes == 2 * 8192 + 2 * 16_777_216
    assert "KV cache" in source


def test_bytes_of_forward_backward_add_grads_and_lse() -> None:
    # fp32, B=H=1, S=4, D=2: each of Q, K, V, O, dO, dQ, dK, dV is 4·2·4 = 32 B; the LSE 4 rows × 4 B, written and read
    case = {"batch": 1, "heads": 1, "seq_q": 4, "head_dim": 2, "dtype": "fp32", "mode": "fwd_bwd"}
    assert call_bytes(case)[0] == 8 * 32 + 2 * 16


def test_a_dense_mask_adds_its_bytes() -> None:
    case = {"batch": 1, "heads": 1, "seq_q": 4, "head_dim": 2, "dtype": "fp32"}
    nbytes, source = call_bytes(case, mask_bytes=16)
    assert nbytes == 4 * 32 + 16 and "dense mask" in source


def test_compute_bound_figures_by_hand() -> None:
    # 1e12 FLOP and 1e9 B in one second: 1 TFLOP/s, 0.001 TB/s, intensity 1000 FLOP/B > 989.4 / 4.815 ≈ 205.5
    rf = roofline(flops=10**12, nbytes=10**9, bytes_source="x", time_us=1e6, spec=H200_SPEC, peak_tflops_measured=800.0)
    assert rf is not None
    assert rf["bound"] == "compute"
    assert rf["intensity"] == pytest.approx(1000.0)
    assert rf["ridge"] == pytest.approx(989.4 / 4.814304, rel=1e-6)
    assert rf["tflops"] == pytest.approx(1.0) and rf["tbps"] == pytest.approx(0.001)
    assert rf["pct_compute_spec"] == pytest.approx(100 / 989.4)
    assert rf["pct_compute_measured"] == pytest.approx(100 / 800)
    assert rf["pct_bandwidth_spec"] == pytest.approx(0.1 / 4.814304)
    assert rf["pct_bandwidth_measured"] is None


def test_memory_bound_below_the_ridge() -> None:
    # 4e9 FLOP over 1e9 B: intensity 4 < 205.5; 1e9 B in 250 µs = 4 TB/s = 83.07% of 4.814 TB/s
    rf = roofline(flops=4 * 10**9, nbytes=10**9, bytes_source="x", time_us=250.0, spec=H200_SPEC)
    assert rf is not None and rf["bound"] == "memory"
    assert rf["pct_bandwidth_spec"] == pytest.approx(400 / 4.814304)


@pytest.mark.parametrize(
    ("us", "grid", "call", "want"),
    [
        (5.0, 256, True, "latency"),
        (50.0, 100, True, "latency"),
        (5.0, 256, False, "memory"),
        (50.0, 132, True, "memory"),
    ],
)
def test_latency_bound(us: float, grid: int, call: bool, want: str) -> None:
    rf = roofline(flops=4, nbytes=1, bytes_source="x", time_us=us, spec=H200_SPEC, grid_blocks=grid, call=call)
    assert rf is not None and rf["bound"] == want


def _decode_row(variant: str) -> dict[str, Any]:
    return result_to_dict(analyze(H200 / "decode" / f"{variant}.json", variant=variant))


@pytest.mark.parametrize(
    ("variant", "kernel"), [("sdpa_cudnn", "cudnn_generated"), ("sdpa_flash", "flash_fwd_splitkv_kernel")]
)
def test_h200_decode_trace_is_memory_bound(variant: str, kernel: str) -> None:
    rf = row_roofline(_decode_row(variant))
    assert rf is not None
    assert rf["bound"] == "memory"
    # by hand from the raw trace: the attention kernel's duration and the bytes of B1 H32 KV8 Sq1 Sk8192 D128 bf16
    (k,) = [
        e for e in raw_events(H200 / "decode" / f"{variant}.json") if e.get("cat") == "kernel" and kernel in e["name"]
    ]
    nbytes = 2 * 32 * 128 * 2 + 2 * 8 * 8192 * 128 * 2
    (kr,) = rf["kernels"]
    assert kr["bound"] == "memory"
    assert kr["tbps"] == pytest.approx(nbytes / (k["dur"] * 1e-6) / 1e12, rel=1e-6)
    assert kr["grid_blocks"] == k["args"]["grid"][0] * k["args"]["grid"][1] * k["args"]["grid"][2]


def test_h200_prefill_trace_is_compute_bound() -> None:
    r = result_to_dict(analyze(H200 / "b1h32s4096d128" / "sdpa_cudnn.json", variant="sdpa_cudnn"))
    rf = row_roofline(r)
    assert rf is not None and rf["bound"] == "compute"
    assert "spec table for NVIDIA H200" in rf["spec_note"]


def test_graph_replay_rates_by_hand() -> None:
    # decode B8 H32 KV8 Sq1 Sk8192 D128 bf16: Q, O 2·8·32·1·128·2 = 131,072 B; K, V 2·8·8·8192·128·2 = 268,435,456 B
    case = {"batch": 8, "heads": 32, "kv_heads": 8, "seq_q": 1, "seq_kv": 8192, "head_dim": 128, "dtype": "bf16"}
    row = {
        "case": case,
        "device_name": "NVIDIA H200",
        "gpu_time_us": 70.0,
        "flops": 4 * 8 * 32 * 1 * 8192 * 128,
        "gpu_time_graph": {"median_us": 66.0, "method": "CUDA-graph replay"},
        "kernels": [],
    }
    rf = row_roofline(row, bandwidth_tbps_measured=4.0)
    assert rf is not None
    g = rf["graph_replay"]
    nbytes = 131_072 + 268_435_456
    assert g["time_us"] == 66.0
    assert g["tbps"] == pytest.approx(nbytes / 66e-6 / 1e12)
    assert g["pct_bandwidth_measured"] == pytest.approx(100 * nbytes / 66e-6 / 1e12 / 4.0)
    assert g["pct_bandwidth_spec"] == pytest.approx(100 * nbytes / 66e-6 / 1e12 / H200_SPEC.bandwidth_tbps)
    # the call's own figure stays on the CUDA-event time
    assert rf["tbps"] == pytest.approx(nbytes / 70e-6 / 1e12)
    del row["gpu_time_graph"]
    rf2 = row_roofline(row)
    assert rf2 is not None and rf2["graph_replay"] is None


def test_a_trace_of_many_calls_has_no_call_roofline() -> None:
    # the Llama training trace: 160 attention calls, its GPU time every kernel's (GEMMs, norms, the optimizer):
    # one call's bytes against all calls' FLOPs over the whole step read 229,488 FLOP/B at 0.0001 TB/s
    row = {
        "source": "trace",
        "device_kind": "gpu",
        "device_name": "NVIDIA H200",
        "case": {"batch": 4, "heads": 16, "seq_q": 2048, "head_dim": 64, "dtype": "bf16", "causal": True},
        "gpu_time_us": 287_447.3,
        "flops": 9_625_424_363_520,
        "kernels": [],
    }
    many = row_roofline({**row, "attention_calls": [{"direction": "forward"}, {"direction": "backward"}]})
    assert many is None
    one = row_roofline({**row, "attention_calls": [{"direction": "forward"}]})
    assert one is not None and one["bytes"] > 0  # one traced call keeps its roofline


def _two_kernel_row(mode: str) -> dict[str, Any]:
    """A fwd_bwd call: a forward kernel of 30 µs and a backward of 70 µs (100 µs in all) on an H200."""
    case = {"batch": 4, "heads": 16, "seq_q": 2048, "head_dim": 64, "dtype": "bf16", "device": "cuda", "mode": mode}
    ks = [
        {"name": "flash_fwd_kernel", "category": "attention", "duration_us": 30.0, "grid": [16, 64, 1]},
        {"name": "flash_bwd_dq_dk_dv_loop_kernel", "category": "attention", "duration_us": 70.0, "grid": [16, 64, 1]},
    ]
    return {"variant": "sdpa_flash", "case": case, "device_kind": "gpu", "device_name": "NVIDIA H200",
            "gpu_time_us": 100.0, "flops": 10**11, "kernels": ks}  # fmt: skip


def test_kernels_that_share_a_calls_work_get_no_roofline_of_their_own() -> None:
    """The call's 1e11 FLOP on the forward kernel's 30 µs alone would read 3,333 TFLOP/s, 337% of the H200's 989.4:
    a forward and a backward kernel share the work and no model splits it, so only the call's roofline is given
    (1e11 FLOP in 100 µs = 1,000 TFLOP/s, the row's own)."""
    rf = row_roofline(_two_kernel_row("fwd_bwd"))
    assert rf is not None
    assert rf["kernels"] == [] and rf["kernels_why"].startswith("2 matrix kernels share the call's work")
    assert rf["tflops"] == pytest.approx(1000.0)


def test_one_matrix_kernel_carries_the_calls_work_on_its_own_time() -> None:
    row = _two_kernel_row("fwd")
    row["kernels"] = row["kernels"][:1]  # the forward kernel alone: 1e11 FLOP in 30 µs = 3,333.3 TFLOP/s
    rf = row_roofline(row)
    assert rf is not None and "kernels_why" not in rf
    (k,) = rf["kernels"]
    assert k["name"] == "flash_fwd_kernel" and k["tflops"] == pytest.approx(1e11 / 30e-6 / 1e12)


def test_a_trace_of_one_forward_and_its_backward_has_the_fwd_bwd_roofline() -> None:
    """ctx/layout_flash_bhsd.json: one SDPA forward and its flash backward, B=4 H=16 S=2048 D=64 bf16 causal.
    Bytes by hand (the fwd_bwd model): Q, K, V, O, dO, dQ, dK, dV each 4·16·2048·64·2 = 16,777,216 B, and the LSE
    2·4·16·2048·4 = 1,048,576 B: 135,266,304 B.  FLOPs: causal keeps 2048·2049/2 = 2,098,176 scores per (b, h),
    ×64 = 134,283,264; forward 4·64 per score = 34,376,515,584, ×3.5 with the backward = 120,317,804,544.  Time: the
    sum of the trace's GPU event durations, read from the raw JSON."""
    path = H200 / "ctx" / "layout_flash_bhsd.json"
    row = result_to_dict(analyze(path))
    assert row["case"]["mode"] == "fwd_bwd"
    rf = row_roofline(row)
    assert rf is not None
    assert rf["bytes"] == 8 * 16_777_216 + 1_048_576
    us = sum(e["dur"] for e in raw_events(path) if e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset"))
    assert row["flops"] == 120_317_804_544
    assert rf["tflops"] == pytest.approx(120_317_804_544 / (us * 1e-6) / 1e12, rel=1e-6)
    assert rf["kernels"] == [] and rf["kernels_why"].startswith("2 matrix kernels")  # flash_fwd and dq_dk_dv


def test_a_trace_of_many_calls_still_has_no_row_roofline() -> None:
    row = result_to_dict(analyze(H200 / "ctx" / "layout_flash_bhsd.json"))
    row["attention_calls"] = row["attention_calls"] * 2  # two training calls: one call's bytes model no longer fits
    assert row_roofline(row) is None
