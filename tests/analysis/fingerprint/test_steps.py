"""Steps read from record_function ranges: which GPU events each holds, attention's share, the decode roofline.

Synthetic traces written by hand (tests/synth.py) and a real one of HTA's (tests/data/hta); expected values are
worked out here by hand or read from the raw JSON with the json module.
"""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any

import pytest

from attnscope.analysis.fingerprint.loop_steps import parse
from attnscope.api import analyze, analyze_traces
from tests.rawtrace import DATA
from tests.synth import PID, TID, doc, kernel, launch, op, write_kineto

BF16 = "c10::BFloat16"
FLASH = "void pytorch_flash::flash_fwd_kernel<x>"
B, H, HKV, SK, D = 2, 8, 2, 1024, 64


def _sdpa_args() -> dict[str, Any]:
    """Public SDPA (q, k, v, attn_mask, dropout_p, is_causal, scale, enable_gqa): q [B, H, 1, D], k, v [B, Hkv, Sk, D]
    (is_causal False: the one query sees every key)."""
    return {
        "Input Dims": [[B, H, 1, D], [B, HKV, SK, D], [B, HKV, SK, D], [], [], [], [], []],
        "Input type": [BF16] * 3 + ["", "Scalar", "Scalar", "Scalar", "Scalar"],
        "Concrete Inputs": ["", "", "", "", "0.", "False", "", "True"],
    }


def _range(name: str, ts: float, dur: float, tid: int = TID, cat: str = "user_annotation") -> dict[str, Any]:
    return {"ph": "X", "cat": cat, "name": name, "pid": PID, "tid": tid, "ts": ts, "dur": dur}


def _capture() -> list[dict[str, Any]]:
    return [
        launch(5, 900, None, name="cudaStreamBeginCapture"),
        op("aten::mm", 10, 20, 1),
        launch(12, 11, 1),
        op("aten::scaled_dot_product_attention", 40, 20, 2, **_sdpa_args()),
        launch(42, 12, 2),
        op("aten::add", 70, 10, 3),
        launch(72, 13, 3),
        launch(100, 901, None, name="cudaStreamEndCapture"),
    ]


def _graph_step(i: int, t: float, corr: int, flash_us: float) -> list[dict[str, Any]]:
    return [
        _range(f"attnscope.step[decode] {i}", t - 5, 60),
        launch(t, corr, None, name="cudaGraphLaunch"),
        kernel("nvjet_gemm", t + 10, 10.0, corr),
        kernel(FLASH, t + 25, flash_us, corr),
        kernel("elementwise_add_kernel", t + 50, 5.0, corr),
    ]


def _write(tmp_path: Path, events: list[dict[str, Any]], **top: Any) -> Path:
    return write_kineto(tmp_path / "t.json", doc(events, **top))


def test_parse_reads_the_three_families() -> None:
    assert parse("attnscope.step[decode] 12 kv=1037") == ("attnscope.step ranges", "decode", 12, [1037], None)
    assert parse("attnscope.step[prefill] 0")[1:3] == ("prefill", 0)  # type: ignore[index]
    got = parse("execute_context_0(0)_generation_32(32)")
    assert (
        got is not None
        and got[1] == "decode"
        and got[4]
        == {
            "prefill_requests": 0,
            "prefill_tokens": 0,
            "decode_requests": 32,
            "decode_tokens": 32,
        }
    )
    assert parse("execute_context_2(4096)_generation_0(0)")[1] == "prefill"  # type: ignore[index]
    assert parse("execute_context_1(512)_generation_31(31)")[1] == "mixed"  # type: ignore[index]
    assert parse("ProfilerStep#7")[1:3] == ("unknown", 7)  # type: ignore[index]
    assert parse("decode_step_12")[1:3] == ("decode", 12)  # type: ignore[index]
    assert parse("Prefill-step 3")[1:3] == ("prefill", 3)  # type: ignore[index]
    assert parse("decode_step_x") is None
    assert parse("ProfilerStep#7 extra") is None and parse("attnscope.model:layer:x") is None


def test_graph_replayed_decode_steps_split_into_attention_rest_and_nothing_unattributed(tmp_path: Path) -> None:
    ev = _capture() + _graph_step(0, 1000, 50, 20.0) + _graph_step(1, 2000, 60, 30.0)
    ev.append(_range("ProfilerStep#0", 990, 1100))  # a container: the attnscope ranges are the steps
    p = _write(tmp_path, ev, deviceProperties=[{"name": "NVIDIA H200", "computeMajor": 9, "computeMinor": 0}])
    d, errors = analyze_traces([p])
    assert not errors and d is not None
    st = d["results"][0]["trace_summary"]["steps"]
    assert st["source"] == "attnscope.step ranges" and st["by_kind"] == {"decode": 2}
    s0, s1 = st["steps"]
    assert (s0["attention_us"], s0["rest_us"], s0["unattributed_us"], s0["gpu_time_us"]) == (20.0, 15.0, 0.0, 35.0)
    assert (s1["attention_us"], s1["rest_us"], s1["unattributed_us"], s1["gpu_time_us"]) == (30.0, 15.0, 0.0, 45.0)
    assert s1["attention_share_pct"] == round(100 * 30 / 45, 2)
    call = {"batch": B, "heads": H, "kv_heads": HKV, "seq_q": 1, "seq_kv": SK, "head_dim": D, "dtype": "bf16"}
    assert s0["attention_calls"] == [{**call, "count": 1}]
    # FLOPs 4·B·H·Sq·Sk·D (one query sees every key); bytes: Q read + O written (2·B·H·1·D·2) + K, V (2·B·Hkv·Sk·D·2)
    assert s0["attention_flops"] == 4 * B * H * 1 * SK * D == 4_194_304
    nbytes = 2 * B * H * 1 * D * 2 + 2 * B * HKV * SK * D * 2
    assert s0["roofline"]["bytes"] == nbytes == 1_052_672
    assert s1["roofline"]["tbps"] == pytest.approx(nbytes / 30e-6 / 1e12)
    assert s1["roofline"]["pct_bandwidth_spec"] == pytest.approx(100 * nbytes / 30e-6 / 1e12 / 4.81, rel=1e-3)


def test_a_replay_matched_to_no_capture_is_unattributed_except_its_attention_kernel(tmp_path: Path) -> None:
    p = _write(tmp_path, _graph_step(0, 1000, 50, 20.0))
    (s,) = analyze(p).trace_summary["steps"]["steps"]
    # the flash kernel is attention by its name; the gemm and the add stand for no known op
    assert (s["attention_us"], s["rest_us"], s["unattributed_us"]) == (20.0, 0.0, 15.0)
    assert s["attention_calls"] == [] and s["attention_flops"] is None


def test_vllm_steps_and_a_launch_from_a_thread_without_ranges(tmp_path: Path) -> None:
    """Two vLLM steps on the main thread; one kernel launched on another thread during the second step (as
    autograd's thread would) belongs to it by time; a kernel launched between the steps belongs to none."""
    ev = [
        _range("execute_context_1(512)_generation_0(0)", 0, 100),
        op("aten::mm", 10, 20, 1),
        launch(12, 11, 1),
        kernel("nvjet_gemm", 20, 7.0, 11),
        op("aten::add", 150, 10, 2),
        launch(152, 12, 2),
        kernel("elementwise_add_kernel", 160, 3.0, 12),
        _range("execute_context_0(0)_generation_4(4)", 200, 100),
        op("aten::mul", 210, 10, 3, tid=TID + 1),
        launch(212, 13, 3, tid=TID + 1),
        kernel("elementwise_mul_kernel", 220, 2.0, 13),
    ]
    st = analyze(_write(tmp_path, ev)).trace_summary["steps"]
    assert st["source"] == "vLLM execute_context ranges" and st["by_kind"] == {"prefill": 1, "decode": 1}
    pre, dec = st["steps"]
    assert (pre["gpu_time_us"], pre["rest_us"], dec["gpu_time_us"], dec["rest_us"]) == (7.0, 7.0, 2.0, 2.0)
    assert st["outside_steps_us"] == 3.0
    assert dec["tokens"]["decode_requests"] == 4


def test_gpu_ranges_alone_hold_the_events_that_start_in_them(tmp_path: Path) -> None:
    ev = [
        _range("attnscope.step[prefill] 0", 0, 50, cat="gpu_user_annotation"),
        op("aten::mm", 0, 5, 1),
        launch(1, 11, 1),
        kernel("nvjet_gemm", 10, 8.0, 11),
        kernel("nvjet_gemm", 60, 4.0, None),  # after the range, no launch: outside
    ]
    st = analyze(_write(tmp_path, ev)).trace_summary["steps"]
    assert st["timeline"] == "gpu" and st["steps"][0]["gpu_time_us"] == 8.0 and st["outside_steps_us"] == 4.0


def test_profiler_steps_of_a_real_trace_hold_what_the_raw_json_says() -> None:
    """HTA's trace_filter_sampled_rank-0: each GPU event's runtime call (by correlation) starts inside one
    ProfilerStep#N range; per step, the sum of those events' durations, from the raw JSON."""
    path = DATA / "hta" / "trace_filter_sampled_rank-0.json.gz"
    ev = json.loads(gzip.open(path).read())["traceEvents"]
    steps = sorted(
        (e for e in ev if e.get("cat") == "user_annotation" and e["name"].startswith("ProfilerStep#")),
        key=lambda e: e["ts"],
    )
    calls = {e["args"]["correlation"]: e for e in ev if e.get("cat") in ("cuda_runtime", "cuda_driver")}
    want = [0.0] * len(steps)
    for g in ev:
        if g.get("cat") not in ("kernel", "gpu_memcpy", "gpu_memset"):
            continue
        c = calls.get(g["args"].get("correlation"))
        if c is None:
            continue
        for i, s in enumerate(steps):
            if s["ts"] <= c["ts"] <= s["ts"] + s["dur"]:
                want[i] += g["dur"]
    got = analyze(path).trace_summary["steps"]
    assert got["num_steps"] == len(steps) == 2
    assert [s["gpu_time_us"] for s in got["steps"]] == pytest.approx(want)
    for s in got["steps"]:
        assert s["attention_us"] + s["rest_us"] + s["unattributed_us"] == pytest.approx(s["gpu_time_us"])


def test_a_call_replayed_twice_counts_its_flops_twice(tmp_path: Path) -> None:
    """One captured SDPA call, two replays: 2 × 4·B·H·Sq·Sk·D FLOPs over the two flash kernels' 20 + 30 µs."""
    r = analyze(_write(tmp_path, _capture() + _graph_step(0, 1000, 50, 20.0) + _graph_step(1, 2000, 60, 30.0)))
    assert r.flops == 2 * 4 * B * H * 1 * SK * D
    assert r.tflops == pytest.approx(2 * 4 * B * H * SK * D / 50e-6 / 1e12)
    assert "run 2 times" in (r.flops_basis or "")


def test_a_step_named_with_its_kv_length_also_gets_the_bandwidth_on_that_length(tmp_path: Path) -> None:
    """The op is given the static cache (Sk = 1024); the range says the step attends over 100 keys: the second
    roofline counts K and V over 100 keys per sequence: 2·B·H·1·D·2 + 2·B·Hkv·100·D·2 bytes."""
    ev = _capture() + _graph_step(0, 1000, 50, 20.0)
    ev[len(_capture())]["name"] = "attnscope.step[decode] 0 kv=100"
    d, _ = analyze_traces([_write(tmp_path, ev)])
    assert d is not None
    (s,) = d["results"][0]["trace_summary"]["steps"]["steps"]
    assert s["kv_annotated"] == [100]
    assert s["roofline"]["bytes"] == 2 * B * H * D * 2 + 2 * B * HKV * SK * D * 2
    assert s["roofline_kv_annotated"]["bytes"] == 2 * B * H * D * 2 + 2 * B * HKV * 100 * D * 2


def test_a_kernel_with_no_launch_call_goes_to_the_step_of_its_op(tmp_path: Path) -> None:
    """No runtime call recorded: the kernel's External id names its op, and the op's start places it in a step."""
    ev = [
        _range("attnscope.step[decode] 0", 0, 100),
        op("aten::mm", 10, 20, 1),
        kernel("nvjet_gemm", 20, 7.0, None, ext=1),
        _range("attnscope.step[decode] 1", 200, 100),
        op("aten::add", 210, 10, 2),
        kernel("elementwise_add_kernel", 220, 3.0, None, ext=2),
    ]
    st = analyze(_write(tmp_path, ev)).trace_summary["steps"]
    assert [s["gpu_time_us"] for s in st["steps"]] == [7.0, 3.0] and st["outside_steps_us"] == 0.0


def test_a_launch_goes_to_its_own_thread_s_step_where_steps_of_two_threads_overlap(tmp_path: Path) -> None:
    """Thread 1's step 0 spans 0–300 µs, thread 2's step 1 spans 100–300 µs: a launch on thread 1 at 150 µs (inside
    both) belongs to thread 1's step, though thread 2's started later; thread 2's launch at 250 µs to its own."""
    ev = [
        _range("decode_step_0", 0, 300),
        _range("decode_step_1", 100, 200, tid=TID + 1),
        op("aten::mm", 140, 20, 1),
        launch(150, 11, 1),
        kernel("nvjet_gemm", 400, 5.0, 11),
        op("aten::add", 240, 20, 2, tid=TID + 1),
        launch(250, 12, 2, tid=TID + 1),
        kernel("elementwise_add_kernel", 420, 2.0, 12),
    ]
    st = analyze(_write(tmp_path, ev)).trace_summary["steps"]
    assert [s["gpu_time_us"] for s in st["steps"]] == [5.0, 2.0]


def test_vllm_step_with_no_request_is_of_unknown_kind() -> None:
    assert parse("execute_context_0(0)_generation_0(0)") == (
        "vLLM execute_context ranges",
        "unknown",
        None,
        None,
        {"prefill_requests": 0, "prefill_tokens": 0, "decode_requests": 0, "decode_tokens": 0},
    )


def test_an_unmatched_replay_launched_inside_an_op_is_still_unattributed(tmp_path: Path) -> None:
    """The graph launch sits inside an op (found by time): its replayed gemm and add still stand for no known op."""
    ev = [op("CUDAGraph::replay", 990, 30, None), *_graph_step(0, 1000, 50, 20.0)]
    (s,) = analyze(_write(tmp_path, ev)).trace_summary["steps"]["steps"]
    assert (s["attention_us"], s["rest_us"], s["unattributed_us"]) == (20.0, 0.0, 15.0)
