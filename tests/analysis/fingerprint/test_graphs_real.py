"""A real graph-replayed decode loop (H100, torch 2.11, tests/data/h100/serving): every replayed kernel attributed to
its cudaGraphLaunch and to the op of the capture, and each step split into attention, the rest and the unattributed.

Expected values are read from the raw JSON with the json module: the capture's launch calls that ran no kernel, in
order, each named by the cpu_op carrying its External id; the replay's kernels per cudaGraphLaunch, in start order.
"""

from __future__ import annotations

import gzip
import json
from collections import defaultdict
from typing import Any

import pytest

from attnscope.api import analyze_traces
from tests.rawtrace import DATA

SERVING = DATA / "h100" / "serving"
REPLAY, CAPTURE = SERVING / "decode_graph_replay.json.gz", SERVING / "decode_capture.json.gz"
LAUNCHES = ("cudaLaunchKernel", "cuLaunchKernelEx")


def _events(path: Any) -> list[dict[str, Any]]:
    return json.loads(gzip.open(path).read())["traceEvents"]


def _capture_ops() -> list[str]:
    """The op of each launch the capture recorded (its correlation ran no kernel), in launch order."""
    ev = _events(CAPTURE)
    ran = {e["args"].get("correlation") for e in ev if e.get("cat") == "kernel"}
    launches = sorted(
        (e for e in ev if e.get("cat") in ("cuda_runtime", "cuda_driver") and e["name"] in LAUNCHES
         and e["args"].get("correlation") not in ran),
        key=lambda e: e["ts"],
    )  # fmt: skip
    op_of_ext = {
        e["args"]["External id"]: e["name"] for e in ev if e.get("cat") == "cpu_op" and "External id" in e["args"]
    }
    return [op_of_ext[e["args"]["External id"]] for e in launches]


def _replays() -> tuple[list[dict[str, Any]], dict[int, list[dict[str, Any]]]]:
    """The cudaGraphLaunch calls and, per launch correlation, its kernels in start order."""
    ev = _events(REPLAY)
    launches = sorted((e for e in ev if e.get("cat") == "cuda_runtime" and e["name"] == "cudaGraphLaunch"),
                      key=lambda e: e["ts"])  # fmt: skip
    corr = {e["args"]["correlation"] for e in launches}
    kernels: dict[int, list[dict[str, Any]]] = defaultdict(list)
    for e in ev:
        if e.get("cat") == "kernel" and e["args"].get("correlation") in corr:
            kernels[e["args"]["correlation"]].append(e)
    for ks in kernels.values():
        ks.sort(key=lambda e: e["ts"])
    return launches, kernels


@pytest.fixture(scope="module")
def summary() -> dict[str, Any]:
    doc, errors = analyze_traces([REPLAY], capture=str(CAPTURE))
    assert not errors and doc is not None
    return doc["results"][0]["trace_summary"]


def test_every_replayed_kernel_is_matched_to_the_op_of_the_capture(summary: dict[str, Any]) -> None:
    ops = _capture_ops()
    launches, kernels = _replays()
    assert len(ops) == 37 and len(launches) == 16
    assert all(len(kernels[e["args"]["correlation"]]) == len(ops) for e in launches)
    g = summary["cuda_graphs"]
    n = sum(len(k) for k in kernels.values())
    assert (g["launches"], g["replayed_events"], g["matched_events"], g["unmatched_events"]) == (16, n, n, 0)
    assert g["methods"] == {"order and kind": 16} and g["order"] == "start time"
    assert g["capture"]["launches_per_capture"] == [37]
    # each op's replayed GPU time: the k-th kernel of every replay belongs to the k-th captured launch's op
    want: dict[str, float] = defaultdict(float)
    for ks in kernels.values():
        for op, k in zip(ops, ks, strict=True):
            want[op] += k["dur"]
    assert {o["op"]: o["time_us"] for o in g["ops"]} == pytest.approx(dict(want), abs=1e-3)
    # the kernel names agree with the ops they were matched to (a check the order-and-kind match never used)
    for ks in kernels.values():
        for op, k in zip(ops, ks, strict=True):
            if "cudnn_generated" in k["name"]:
                assert op == "aten::_cudnn_attention_forward"
            if k["name"].startswith("nvjet"):
                assert op == "aten::mm"


def test_each_step_is_attention_the_rest_and_nothing_unattributed(summary: dict[str, Any]) -> None:
    ev = _events(REPLAY)
    ops = _capture_ops()
    launches, kernels = _replays()
    steps = sorted((e for e in ev if e.get("cat") == "user_annotation" and e["name"].startswith("decode_step_")),
                   key=lambda e: e["ts"])  # fmt: skip
    got = summary["steps"]
    assert got["num_steps"] == len(steps) == 16 and got["by_kind"] == {"decode": 16}
    for s, row in zip(steps, got["steps"], strict=True):
        (launch,) = [e for e in launches if s["ts"] <= e["ts"] <= s["ts"] + s["dur"]]
        ks = kernels[launch["args"]["correlation"]]
        total = sum(k["dur"] for k in ks)
        attention = sum(k["dur"] for op, k in zip(ops, ks, strict=True) if "attention" in op)
        assert row["gpu_time_us"] == pytest.approx(total, abs=1e-3)
        assert row["attention_us"] == pytest.approx(attention, abs=1e-3)
        assert row["unattributed_us"] == 0.0
        assert row["attention_us"] + row["rest_us"] + row["unattributed_us"] == pytest.approx(row["gpu_time_us"])


def test_each_step_gets_a_roofline_from_the_capture_shapes(summary: dict[str, Any]) -> None:
    """Four SDPA calls in the capture, q [8, 32, 1, 128], k and v [8, 8, 4096, 128] bf16 (read from the raw JSON):
    Q read and O written 2·B·H·1·D·2, K and V read 2·B·Hkv·Sk·D·2, per call; over the step's attention time."""
    ev = _events(CAPTURE)
    sdpa = [
        e["args"]["Input Dims"]
        for e in ev
        if e.get("cat") == "cpu_op" and e["name"] == "aten::scaled_dot_product_attention"
    ]
    assert len(sdpa) == 4
    (b, h, sq, d), (_, hkv, sk, _) = sdpa[0][0], sdpa[0][1]
    nbytes = 4 * (2 * b * h * sq * d * 2 + 2 * b * hkv * sk * d * 2)
    for row in summary["steps"]["steps"]:
        (call,) = row["attention_calls"]
        assert (call["batch"], call["heads"], call["kv_heads"], call["seq_q"], call["seq_kv"], call["count"]) == (
            b, h, hkv, sq, sk, 4)  # fmt: skip
        rf = row["roofline"]
        assert rf["bytes"] == nbytes
        assert rf["tbps"] == pytest.approx(nbytes / (row["attention_us"] * 1e-6) / 1e12, rel=1e-3)
        assert rf["impossible"] is None


def test_an_impossible_bandwidth_is_flagged() -> None:
    """default_growing_kv passed one tensor as K and V: the shapes describe twice the bytes the kernel read, and the
    step's TB/s comes out over the H100's spec (3.35 TB/s): flagged, not hidden."""
    doc, _ = analyze_traces([SERVING / "default_growing_kv.json.gz"])
    assert doc is not None
    rows = doc["results"][0]["trace_summary"]["steps"]["steps"]
    assert len(rows) == 12
    over = [r for r in rows if r["roofline"]["pct_bandwidth_spec"] > 100]
    assert over == rows and all(r["roofline"]["impossible"] == ["pct_bandwidth_spec"] for r in rows)


def test_each_replay_of_each_captured_attention_call_counts_as_a_call(summary: dict[str, Any]) -> None:
    """4 SDPA ops in the capture, 16 replays: 64 forward calls of the family its kernels name (cuDNN)."""
    ev = _events(CAPTURE)
    n_sdpa = sum(1 for e in ev if e.get("cat") == "cpu_op" and e["name"] == "aten::scaled_dot_product_attention")
    launches, _ = _replays()
    (fam,) = summary["attention_families"]
    assert fam["family"] == "cudnn" and fam["num_forward_calls"] == n_sdpa * len(launches) == 64
    assert fam["num_backward_calls"] == 0
