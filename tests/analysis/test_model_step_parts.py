"""A model step's parts add up to the step: GPU idle and CPU-only time are parts of their own.

Synthetic traces with sums worked out by hand, and the H200 Llama training trace walked here on its own."""

from __future__ import annotations

import gzip
import json
from typing import Any

import pytest

from attnscope.analysis.fingerprint.model_split import breakdown
from attnscope.core.scopes import scope_name
from attnscope.trace import load_trace, trace_from_doc
from tests.rawtrace import H200
from tests.synth import PID, TID, doc, kernel, launch, op


def scope(role: str, path: str, ts: float, dur: float) -> dict[str, Any]:
    return {
        "ph": "X",
        "cat": "user_annotation",
        "name": scope_name(role, path),
        "pid": PID,
        "tid": TID,
        "ts": ts,
        "dur": dur,
    }


def launched(name: str, ts: float, ext: int, kts: float, kdur: float) -> list[Any]:
    return [op(name, ts, 10, ext), launch(ts + 1, corr=ext, ext=ext, dur=0.5), kernel(f"k_{ext}", kts, kdur, corr=ext)]


def _step() -> dict[str, Any]:
    return breakdown(
        trace_from_doc(
            doc(
                [
                    scope("step", "train", 0, 1000),
                    scope("attention", "m.layers.0.self_attn", 5, 30),
                    scope("core", "sdpa", 6, 20),
                    *launched("aten::scaled_dot_product_attention", 10, 1, 100, 200),  # GPU 100..300
                    scope("mlp", "m.layers.0.mlp", 38, 40),
                    *launched("aten::mm", 40, 2, 400, 100),  # GPU 400..500
                    *launched("aten::mm", 60, 3, 450, 100),  # GPU 450..550, a second stream: 50 µs overlap
                    *launched("aten::add", 900, 4, 1100, 50),  # GPU 1100..1150, after the range's end
                ]
            )
        )
    )


def test_synthetic_gpu_step_parts_by_hand():
    s = _step()["step"]
    # busy 200 + 100 + 100 + 50 = 450; union [100,300] [400,550] [1100,1150] = 400
    assert s["attention_us"] == pytest.approx(200)
    assert s["rest_us"] == pytest.approx(250)
    assert s["overlap_us"] == pytest.approx(50)
    assert s["gpu_idle_us"] == pytest.approx((1150 - 100) - 400)  # 650: gaps between the first and last event
    assert s["cpu_only_us"] == pytest.approx(100)  # 0..100 before the first kernel; none after 1150
    assert s["step_us"] == pytest.approx(1150)  # the range ends at 1000, its last kernel at 1150
    total = s["attention_us"] + s["rest_us"] + s["unattributed_us"] - s["overlap_us"] + s["gpu_idle_us"]
    assert total + s["cpu_only_us"] == pytest.approx(s["step_us"])


def test_synthetic_cpu_step_parts_by_hand():
    b = breakdown(
        trace_from_doc(
            doc(
                [
                    scope("step", "prefill", 0, 200),
                    scope("attention", "m.layers.0.attn", 0, 100),
                    op("aten::scaled_dot_product_attention", 10, 50, 1),
                    scope("mlp", "m.layers.0.mlp", 110, 70),
                    op("aten::mm", 120, 50, 3),
                ]
            )
        )
    )
    s = b["step"]
    assert (s["step_us"], s["attention_us"], s["rest_us"], s["unattributed_us"]) == pytest.approx((200, 50, 50, 100))
    assert s["gpu_idle_us"] == s["cpu_only_us"] == s["overlap_us"] == 0


def _raw_parts(path: Any) -> dict[str, float]:
    ev = json.loads(gzip.decompress(path.read_bytes()))["traceEvents"]
    (step,) = [e for e in ev if e.get("cat") == "user_annotation" and e["name"].startswith("attnscope.model:step")]
    a, b = step["ts"], step["ts"] + step["dur"]
    corr = {
        e["args"]["correlation"] for e in ev if e.get("cat") in ("cuda_runtime", "cuda_driver") and a <= e["ts"] <= b
    }
    gpu = sorted(
        (e["ts"], e["ts"] + e["dur"])
        for e in ev
        if e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset") and e["args"].get("correlation") in corr
    )
    covered, reach = 0.0, gpu[0][0]
    for s, t in gpu:
        covered += max(0.0, t - max(s, reach))
        reach = max(reach, t)
    last = max(t for _, t in gpu)
    return {
        "step": max(b, last) - a,
        "idle": last - gpu[0][0] - covered,
        "cpu_only": gpu[0][0] - a + max(0.0, b - last),
        "busy": sum(t - s for s, t in gpu),
    }


@pytest.mark.parametrize("name", ["model_sdpa_train", "model_sdpa_decode"])
def test_real_llama_step_parts_add_up(name):
    path = H200 / "model" / f"{name}.json.gz"
    raw = _raw_parts(path)
    s = breakdown(load_trace(path))["step"]
    assert s["step_us"] == pytest.approx(raw["step"], abs=0.1)
    assert s["gpu_idle_us"] == pytest.approx(raw["idle"], abs=0.1)
    assert s["cpu_only_us"] == pytest.approx(raw["cpu_only"], abs=0.1)
    assert s["attention_us"] + s["rest_us"] + s["unattributed_us"] == pytest.approx(raw["busy"], abs=0.1)
    parts = s["attention_us"] + s["rest_us"] + s["unattributed_us"] - s["overlap_us"] + s["gpu_idle_us"]
    assert parts + s["cpu_only_us"] == pytest.approx(s["step_us"], abs=0.1)
    if name == "model_sdpa_train":
        assert s["gpu_idle_us"] > 1000  # the idle a GPU-time-only split used to leave out (4.3 ms here)


def _gpu(*spans: tuple[float, float]) -> list[Any]:
    from attnscope.trace import GpuEvent

    return [GpuEvent("kernel", f"k{ts:g}", ts, dur, None, None, 0, s) for s, (ts, dur) in enumerate(spans)]


PARTS = {"attention": {"time_us": 40.0}, "rest": {"time_us": 20.0}, "unattributed_us": 5.0, "total_us": 65.0}
METHOD = "attention + rest + unattributed − overlap + gpu_idle + cpu_only = step (the profiled step's span)"


@pytest.mark.parametrize(
    ("win", "step", "cpu_only"),
    [
        # the range starts with the first kernel (nothing before it) and ends 90 µs after the last one (110)
        ((0.0, 200.0), 200.0, 0.0 + 90.0),
        # 20 µs of host time before the first kernel as well: 20 + 90
        ((-20.0, 200.0), 220.0, 20.0 + 90.0),
        # the range ends before the last kernel does: the step runs to the kernel's end, 110
        ((0.0, 50.0), 110.0, 0.0),
        # no range: the first kernel's start to the last one's end
        (None, 110.0, 0.0),
    ],
)
def test_step_parts_of_hand_made_kernels(win, step, cpu_only):
    """Kernels [0, 30], [20, 45] (another stream: overlaps the first by 10 µs) and [100, 110]: busy 30 + 25 + 10 = 65,
    union [0, 45] + [100, 110] = 55, so overlap 65 - 55 = 10 and GPU idle (110 - 0) - 55 = 55."""
    from attnscope.analysis.fingerprint.model_split import step_parts

    s = step_parts(PARTS, _gpu((20.0, 25.0), (0.0, 30.0), (100.0, 10.0)), win)
    assert s == {
        "step_us": step,
        "attention_us": 40.0,
        "rest_us": 20.0,
        "unattributed_us": 5.0,
        "gpu_idle_us": 55.0,
        "cpu_only_us": cpu_only,
        "overlap_us": 10.0,
        "method": METHOD,
    }
    assert 40 + 20 + 5 - 10 + 55 + cpu_only == step  # the parts add up to the step


def test_step_parts_on_a_cpu_count_self_time_beyond_the_span_as_overlap():
    """No GPU events: the step is the document's span (100 µs); attention 50 + rest 40 + unattributed 30 = 120 µs of
    self time on several threads, 20 beyond the span: the overlap.  Within the span, no overlap."""
    from attnscope.analysis.fingerprint.model_split import step_parts

    cpu = {"attention": {"time_us": 50.0}, "rest": {"time_us": 40.0}, "unattributed_us": 30.0, "total_us": 100.0}
    s = step_parts(cpu, [], (0.0, 100.0))
    assert (s["step_us"], s["overlap_us"], s["gpu_idle_us"], s["cpu_only_us"]) == (100.0, 20.0, 0.0, 0.0)
    assert step_parts({**cpu, "total_us": 130.0}, [], None)["overlap_us"] == 0.0
