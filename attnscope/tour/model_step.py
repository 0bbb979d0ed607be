"""The tour's optional last step: your model (``--model CONFIG``), one prefill step per
``attn_implementation``, measured as ``attnscope model`` measures it (``attnscope.api.model``), its rows turned
into results the ``--guess`` judge reads (the step time as the time per call)."""

from __future__ import annotations

from typing import Any

from attnscope.core.answers import Question
from attnscope.tour.steps import Size, Step

SEQ = {"gpu": 2048, "cpu": 128, "tiny": 32}
BATCH = {"gpu": 2, "cpu": 1, "tiny": 1}
LAYERS = {"gpu": 2, "cpu": 2, "tiny": 1}  # depth cut so that a big config fits and stays quick

MODEL_STEP = Step(
    "model",
    "Your model",
    "One prefill step of your model per attn_implementation (eager, sdpa, flex_attention, flash_attention_2 where "
    "they run). Attention is the kernel plus the work around it: projections, rotary, masks, repeat_kv, upcasts.",
    (
        Question(
            "model_share",
            "What % of a prefill step is attention (with the work around it)? (x or lo-hi)",
            "number",
            "pct",
            "10-25",
            "attention_share",
            judge="model_share",
        ),
        Question(
            "model_impl",
            "Which attn_implementation is fastest?",
            "choice",
            "choice",
            "sdpa",
            "attention_share",
            judge="winner",
        ),
    ),
    ("eager", "sdpa", "flex_attention", "flash_attention_2"),
    "model",
    "At long sequences attention's share grows with S² while the projections and MLP grow with S; the "
    "implementation decides the kernel and the copies around it (eager's repeat_kv and fp32 softmax).",
    (
        "Llama-3-8B-shaped model (2 of its 32 layers), prefill B2 S2048 bf16: attention (kernel + projections + "
        "work around it) is 15.5% of sdpa's step (kernel 2.4%), 16.8% of flex_attention's, 44.3% of eager's; "
        "sdpa 12,411 µs vs flex_attention 12,596 µs vs eager 20,006 µs",
    ),
    "attnscope model on one H200 (docs/results/model_h200.md)",
)


def measure_model(config: str, device: str, size: Size) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """(results for the judge, the model's description and rows for the transcript): one prefill point per
    implementation through ``attnscope.api.model`` (the one campaign loop, in this process), annotated there."""
    from attnscope.api import model
    from attnscope.api.modeling import ModelGrid

    grid = ModelGrid.build(
        config, modes=["prefill"], points=[(BATCH[size], SEQ[size])], dtype="bf16", device=device, layers=LAYERS[size]
    )
    doc = model(grid, budget_s=0.3 if size == "gpu" else 0.1, executor="inline")
    rows, recs = doc["results"], doc["recommendations"]
    kind = "gpu" if device.startswith("cuda") else "cpu"
    results = []
    for r in rows:
        t = r.get("step_time")
        ok = r["status"] == "ok" and t is not None
        results.append(
            {
                "variant": r["impl"],
                "status": "ok" if ok else r["status"],
                "reason": r.get("reason"),
                "device_kind": kind,
                f"{kind}_time_us": t["median_us"] if ok and t is not None else None,
                f"{kind}_time": t,
                "attention_share": _share(r),
                "insights": r.get("insights") or [],
                "num_kernels": None,
                "kernels": [],
            }
        )
    about = {
        "config": grid.spec.name,
        "model": {k: v for k, v in doc["config"].items() if k not in ("name", "source", "about")},
        "recommendation": recs.get("prefill"),
        "seq": SEQ[size],
        "batch": BATCH[size],
    }
    return results, about


def _share(row: dict[str, Any]) -> float | None:
    """Attention's share of the profiled step, over the same step total the model's insight and table use (the
    step's parts, GPU idle and CPU-only time included), so the reveal and the insight quote one figure."""
    attn, bd = row.get("attention") or {}, row.get("breakdown") or {}
    total = (bd.get("step") or {}).get("step_us") or bd.get("total_us")
    if attn.get("time_us") is None or not total:
        return attn.get("share")
    return float(attn["time_us"]) / float(total)
