"""Raw-trace helpers for tests: read the Kineto JSON directly, independent of attnscope."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

DATA = Path(__file__).parent / "data"
H200 = DATA / "h200"
H200_BIG = H200 / "b1h32s4096d128"
VARIANTS = [
    "naive",
    "naive_inplace",
    "sdpa_math",
    "sdpa_efficient",
    "sdpa_flash",
    "sdpa_cudnn",
    "sdpa_default",
    "flex",
    "flex_compiled",
]


def raw_events(path: Path) -> list[dict[str, Any]]:
    return json.loads(path.read_text())["traceEvents"]


def raw_call_window(events: list[dict[str, Any]]) -> tuple[float, float]:
    ann = [e for e in events if e.get("cat") == "user_annotation" and e["name"] == "attnscope::call"]
    assert len(ann) == 1
    return ann[0]["ts"], ann[0]["ts"] + ann[0]["dur"]


def raw_gpu_events_in_call(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """GPU events whose launch (runtime call) lies inside the attnscope::call window."""
    t0, t1 = raw_call_window(events)
    corr = {
        e["args"]["correlation"]
        for e in events
        if e.get("cat") in ("cuda_runtime", "cuda_driver") and t0 <= e["ts"] <= t1
    }
    return [
        e
        for e in events
        if e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset") and e["args"].get("correlation") in corr
    ]


def raw_mask_kernels(path: Path, dims: list[int]) -> list[dict[str, Any]]:
    """GPU events launched (runtime call by correlation, then the cpu_ops around it on its thread) under an
    aten::ones or aten::tril of ``dims``, or an aten::where whose first input is that boolean mask."""
    ev = raw_events(path)
    calls = {e["args"]["correlation"]: e for e in ev if e.get("cat") in ("cuda_runtime", "cuda_driver")}
    ops = [e for e in ev if e.get("cat") == "cpu_op"]

    def mask_op(o: dict[str, Any]) -> bool:
        a = o.get("args", {})
        if o["name"] == "aten::ones":
            return a.get("Concrete Inputs", [""])[0] == str(dims)
        first = (a.get("Input Dims") or [None])[0]
        if o["name"] == "aten::tril":
            return first == dims
        return o["name"] == "aten::where" and first == dims and a.get("Input type", [""])[0] == "bool"

    out = []
    for g in raw_gpu_events_in_call(ev):
        c = calls[g["args"]["correlation"]]
        around = [o for o in ops if o["tid"] == c["tid"] and o["ts"] <= c["ts"] <= o["ts"] + o["dur"]]
        if any(mask_op(o) for o in around):
            out.append(g)
    return out


LLAMA_TRACE = "llama_train_sdpa.json.gz"
LLAMA = DATA / LLAMA_TRACE  # a Llama training step profiled with SDPA, kept in the repository


def raw_gz_events(path: Path) -> list[dict[str, Any]]:
    """The trace's events, gzipped or not."""
    import gzip

    text = gzip.open(path, "rt").read() if path.name.endswith(".gz") else path.read_text()
    return json.loads(text)["traceEvents"]


def _end(e: dict[str, Any]) -> float:
    return e["ts"] + e["dur"]


def raw_kernels_with_ops(path: Path) -> list[tuple[dict[str, Any], list[str]]]:
    """Every kernel event with the names of the cpu_ops on its runtime call's thread whose span holds the call
    (outermost first): the ops that launched it, read by correlation id and time alone."""
    ev = raw_gz_events(path)
    calls = {e["args"]["correlation"]: e for e in ev if e.get("cat") in ("cuda_runtime", "cuda_driver")}
    ops = sorted((e for e in ev if e.get("cat") == "cpu_op"), key=lambda o: (o["ts"], -o["dur"]))
    out = []
    for k in ev:
        if k.get("cat") != "kernel":
            continue
        c = calls.get(k["args"].get("correlation"))
        around = (
            []
            if c is None
            else [o["name"] for o in ops if o["tid"] == c["tid"] and o["ts"] <= c["ts"] <= o["ts"] + o["dur"]]
        )
        out.append((k, around))
    return out
