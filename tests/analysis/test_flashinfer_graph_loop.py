"""FlashInfer's decode loop replayed from one CUDA graph, planned on the host before every replay (H100, torch 2.11,
FlashInfer 0.7.0; tests/data/h100/serving_fi): the rebuild ranges per step as the loop wrote them, and a GPU trace
in which CUPTI recorded nothing said as such.  Expected values are read from the raw JSON with the json module."""

from __future__ import annotations

import gzip
import json
import re
from typing import Any

from attnscope.analysis.rebuilds import rebuilds_in_trace
from attnscope.api import analyze_traces
from attnscope.trace import load_trace
from tests.rawtrace import DATA

FI = DATA / "h100" / "serving_fi"
GRAPH, CAPTURE = FI / "paged_flashinfer-decode_loop_graph.json.gz", FI / "paged_flashinfer-decode_capture.json.gz"


def _doc(path: Any) -> dict[str, Any]:
    return json.loads(gzip.open(path).read())


def _ranges(path: Any, pattern: str) -> list[dict[str, Any]]:
    return [e for e in _doc(path)["traceEvents"] if e.get("cat") == "user_annotation" and re.match(pattern, e["name"])]


def test_every_replayed_step_holds_its_plan():
    """Each replayed step's range holds one flashinfer_plan range (the host plan before the replay)."""
    steps = _ranges(GRAPH, r"attnscope\.step\[decode\] \d+$")
    plans = _ranges(GRAPH, r"attnscope\.rebuild\[flashinfer_plan\]$")
    inside = [
        sum(1 for p in plans if p["tid"] == s["tid"] and s["ts"] <= p["ts"] <= p["ts"] + p["dur"] <= s["ts"] + s["dur"])
        for s in steps
    ]
    assert len(steps) == 31 and set(inside) == {1}  # read from the raw trace: 31 steps, one plan in each
    found = rebuilds_in_trace(load_trace(GRAPH))
    assert found is not None
    assert (found["steps"], found["steps_with_rebuild"]) == (len(steps), len(steps))
    assert found["by_kind"]["flashinfer_plan"]["count"] == len(plans)
    assert found["by_kind"]["flashinfer_plan"]["host_us"] == sum(p["dur"] for p in plans)


def test_the_capture_holds_the_first_plan_and_the_graph():
    """The capture step: one graph_capture range holding the first plan; its replay one cudaGraphLaunch."""
    cap = _ranges(CAPTURE, r"attnscope\.rebuild\[graph_capture\]$")
    plan = _ranges(CAPTURE, r"attnscope\.rebuild\[flashinfer_plan\]$")
    assert len(cap) == 1 and len(plan) == 1
    assert cap[0]["ts"] <= plan[0]["ts"] and plan[0]["ts"] + plan[0]["dur"] <= cap[0]["ts"] + cap[0]["dur"]
    launches = [e for e in _doc(CAPTURE)["traceEvents"] if e.get("name") == "cudaGraphLaunch"]
    assert len(launches) == 1
    # the capture runs before the step's range opens (the range wraps the replay): no rebuild inside the step
    [step] = _ranges(CAPTURE, r"attnscope\.step\[decode\] \d+$")
    assert cap[0]["ts"] + cap[0]["dur"] <= step["ts"]
    found = rebuilds_in_trace(load_trace(CAPTURE))
    assert found is not None and (found["steps"], found["steps_with_rebuild"]) == (1, 0)


def test_a_gpu_trace_with_nothing_recorded_on_the_gpu_says_so():
    """The graph loop's trace lists the H100 but CUPTI recorded no GPU event and no runtime call (counted in the raw
    file): the row says that every figure is the host's.  A trace with GPU events says nothing of the kind."""
    doc = _doc(GRAPH)
    gpu_cats = {"kernel", "gpu_memcpy", "gpu_memset", "cuda_runtime", "cuda_driver"}
    assert doc["deviceProperties"] and not [e for e in doc["traceEvents"] if e.get("cat") in gpu_cats]
    doc_out, _ = analyze_traces([GRAPH])
    assert doc_out is not None
    [row] = doc_out["results"]
    said = [n for n in row["notes"] if "holds no GPU event and no CUDA runtime call" in n]
    assert len(said) == 1 and doc["deviceProperties"][0]["name"] in said[0]
    doc_out, _ = analyze_traces([CAPTURE])
    assert doc_out is not None
    [row] = doc_out["results"]
    assert not [n for n in row["notes"] if "holds no GPU event" in n]


def test_the_terminal_says_it_at_80_columns(tmp_path):
    """A reader of the terminal at 80 columns (brief footnotes, no --verbose) sees it too."""
    import os
    import subprocess
    import sys

    env = {**os.environ, "COLUMNS": "80"}
    out = subprocess.run(
        [sys.executable, "-m", "attnscope.cli.main", "analyze", str(GRAPH)], capture_output=True, text=True, env=env
    )
    text = " ".join(out.stdout.split())
    assert out.returncode == 0 and "holds no GPU event and no CUDA runtime call" in text
