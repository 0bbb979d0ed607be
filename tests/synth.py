"""Small synthetic Kineto traces, built as dicts, to pin one analysis rule at a time."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

PID, TID = 100, 100


def op(name: str, ts: float, dur: float, ext: int | None, tid: int = TID, **args: Any) -> dict[str, Any]:
    a = dict(args)
    if ext is not None:
        a["External id"] = ext
    return {"ph": "X", "cat": "cpu_op", "name": name, "pid": PID, "tid": tid, "ts": ts, "dur": dur, "args": a}


def launch(ts: float, corr: int, ext: int | None, dur: float = 5.0, tid: int = TID, name: str = "cudaLaunchKernel"):
    a: dict[str, Any] = {"correlation": corr}
    if ext is not None:
        a["External id"] = ext
    return {"ph": "X", "cat": "cuda_runtime", "name": name, "pid": PID, "tid": tid, "ts": ts, "dur": dur, "args": a}


def kernel(
    name: str,
    ts: float,
    dur: float,
    corr: int | None,
    ext: int | None = None,
    stream: int = 7,
    cat: str = "kernel",
    **args: Any,
) -> dict[str, Any]:
    a: dict[str, Any] = {"device": 0, "stream": stream, **args}
    if corr is not None:
        a["correlation"] = corr
    if ext is not None:
        a["External id"] = ext
    return {"ph": "X", "cat": cat, "name": name, "pid": 0, "tid": stream, "ts": ts, "dur": dur, "args": a}


def doc(events: list[dict[str, Any]], **top: Any) -> dict[str, Any]:
    return {"schemaVersion": 1, "deviceProperties": [], **top, "traceEvents": events}


def write_kineto(path: Path, d: dict[str, Any]) -> Path:
    """Write in Kineto's own layout (events indented by two spaces), which the fast reader streams."""
    head = {k: v for k, v in d.items() if k != "traceEvents"}
    lines = ["{"]
    for k, v in head.items():
        lines.append(f'  "{k}": {json.dumps(v)},')
    lines.append('  "traceEvents": [')
    body = []
    for e in d["traceEvents"]:
        inner = json.dumps(e, indent=2).replace("\n", "\n  ")
        body.append("  " + inner)
    lines.append(",\n".join(body))
    lines.append("  ],")
    lines.append('  "traceName": "synthetic"')
    lines.append("}")
    path.write_text("\n".join(lines) + "\n")
    return path
