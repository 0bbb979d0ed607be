"""Documents for the HTML report's tests: the committed H200 run, a hostile copy of it, a small sweep
and a model document of the shape `attnscope model` writes."""

from __future__ import annotations

import copy
import json
import shutil
from pathlib import Path
from typing import Any

from tests.rawtrace import H200, VARIANTS

SCRIPT_VARIANT = '<script>window.__pwned = "variant"</script>'
IMG_KERNEL = "<img src=x onerror=\"window.__pwned = 'kernel'\">&amp;"


def h200_run() -> dict[str, Any]:
    return json.loads((H200 / "run.json").read_text())


def hostile_run(tmp: Path) -> Path:
    """The H200 run with a <script> variant name and an <img onerror> kernel name (its traces beside it)."""
    doc = h200_run()
    for v in VARIANTS:
        shutil.copy(H200 / f"{v}.json", tmp / f"{v}.json")
    r = doc["results"][0]
    r["variant"] = SCRIPT_VARIANT
    r["kernels"] = copy.deepcopy(r["kernels"])
    r["kernels"][1]["name"] = IMG_KERNEL
    for k in r["kernels"]:
        k["start_us"] = 1000.0 + len(k["name"])  # start times in the document: no trace needed for this one
    r["trace_path"] = str(tmp / "javascript:alert(1).json")
    doc["results"][1]["pct_of_peak"] = 150.0  # impossible: must be flagged, not shown as a win
    p = tmp / "hostile.json"
    p.write_text(json.dumps(doc))
    return p


SWEEP_VARIANTS = ("sdpa_flash", "sdpa_cudnn", "sdpa_default", "naive")


def sweep_rows() -> list[dict[str, Any]]:
    """A small sweep: 4 variants × 4 seq × 2 head_dim × fwd/fwd_bwd; cudnn is fastest except at S=128.
    Quartiles ±2% of the median: sdpa_default (0.81) is inside cudnn's (0.8) noise, not flash's (0.5)."""
    rows = []
    for mode in ("fwd", "fwd_bwd"):
        for d in (64, 128):
            for s in (128, 512, 2048, 8192):
                for v in SWEEP_VARIANTS:
                    base = s * s * d / 4e6
                    us = {"sdpa_flash": 1.0, "sdpa_cudnn": 0.8, "sdpa_default": 0.81, "naive": 5.0}[v] * base
                    if s == 128 and v == "sdpa_flash":
                        us = 0.5 * base
                    us *= 3.5 if mode == "fwd_bwd" else 1.0
                    case = {"batch": 2, "heads": 8, "seq_q": s, "head_dim": d, "dtype": "bf16", "causal": True}
                    flops = 4 * 2 * 8 * s * s * d / 2 * (3.5 if mode == "fwd_bwd" else 1.0)
                    rows.append(
                        {
                            "variant": v,
                            "case": {**case, "device": "cuda", "mode": mode},
                            "status": "ok",
                            "gpu_time_us": us,
                            "gpu_time": {"median_us": us, "p25_us": us * 0.98, "p75_us": us * 1.02},
                            "tflops": flops / us / 1e6,
                            "numerics_ok": True,
                        }
                    )
    rows.append({"variant": "sdpa_math", "case": rows[0]["case"], "status": "oom", "reason": "CUDA out of memory"})
    return rows


def model_document() -> dict[str, Any]:
    """The shape `attnscope model` writes, with round numbers: eager prefill's attention is 1,500 of a
    10,000 µs profiled step (kernel 900, projections 300, around 300: mask 100, repeat_kv 200)."""
    results = []
    for impl, kern in (("eager", 900.0), ("sdpa", 300.0)):
        for mode in ("prefill", "train"):
            f = 3.0 if mode == "train" else 1.0
            around = {"mask": 100.0 * f, "repeat_kv": (200.0 if impl == "eager" else 0.0) * f}
            att = {"kernel_us": kern * f, "projections_us": 300.0 * f, "around_us": sum(around.values())}
            att["time_us"] = att["kernel_us"] + att["projections_us"] + att["around_us"]
            att["parts"] = {"kernel": att["kernel_us"], "projections": att["projections_us"], **around}
            copy = {"op": "aten::reshape", "copy_op": "aten::copy_", "bytes": 4 * 2**20, "part": "repeat_kv"}
            att["hidden_copies"] = [copy, copy] if impl == "eager" else []
            total = 10_000.0 * f
            rest = {"time_us": total - att["time_us"], "parts": {"mlp": total - att["time_us"]}}
            layers = [
                {"layer": f"model.layers.{i}", "total_us": total / 2, "attention_us": att["time_us"] / 2}
                for i in range(2)
            ]
            step = {"median_us": total * 0.9, "p25_us": total * 0.85, "p75_us": total * 0.95, "noisy": False}
            results.append(
                {"impl": impl, "mode": mode, "status": "ok", "reason": None, "step_time": step}
                | {"step_time_us": step["median_us"], "attention": att, "rest": rest, "layers": layers}
                | {"breakdown": {"total_us": total, "unattributed_us": 0.0, "method": "self time"}, "insights": []}
            )
    results.append({"impl": "flash_attention_2", "mode": "prefill", "status": "skipped", "reason": "no flash-attn"})
    recs = {"prefill": {"best": "sdpa", "text": "sdpa at 9,000.0 µs per step"}}
    return {"schema_version": 1, "tool": "attnscope", "kind": "model", "env": h200_run()["env"]} | {
        "config": {"name": "tiny", "model_type": "llama"},
        "case": {"device": "cuda", "batch": 2, "seq": 2048},
        "results": results,
        "recommendations": recs,
    }
