"""Advice cites the docs or the run's own rows, never the repository's tests/ folder, and a fact seen on a GPU is said
as the H200's where the run was on a CPU or another GPU.  Documents built by hand, annotated as a run's are."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from attnscope.api import annotate

DATA = Path(__file__).resolve().parents[2] / "data"
FLEX_OP = "FlexAttentionAutogradOp"
MATH_OP = "aten::_scaled_dot_product_attention_math"
CPU_CASE = {"batch": 1, "heads": 4, "seq_q": 256, "head_dim": 64, "dtype": "bf16", "causal": True, "device": "cpu"}


def _flex_row(device_kind: str = "cpu", device_name: str | None = None) -> dict[str, Any]:
    return {
        "variant": "flex",
        "status": "ok",
        "source": "run",
        "device_kind": device_kind,
        "device_name": device_name,
        "case": CPU_CASE,
        "cpu_time_us": 900.0,
        "hidden_copies": [
            {"op": FLEX_OP, "copy_op": "aten::copy_", "bytes": 1 << 20, "kind": "layout", "inside": FLEX_OP}
        ],
        "upcasts": [
            {"op": FLEX_OP, "src_dtype": "c10::BFloat16", "dst_dtype": "float", "bytes": 1 << 20, "inside": FLEX_OP}
        ],
    }


_UP = {"op": "x", "src_dtype": "c10::BFloat16", "dst_dtype": "float", "bytes": 1}


def _compiled_row(**kw: Any) -> dict[str, Any]:
    return {"variant": "flex_compiled", "status": "ok", "source": "run", "device_kind": "cpu", "case": CPU_CASE,
            "cpu_time_us": 300.0, "hidden_copies": [], "upcasts": [], **kw}  # fmt: skip


def _advice(rows: list[dict[str, Any]], rule: str, variant: str = "flex") -> str:
    doc = annotate({"results": rows})
    r = next(r for r in doc["results"] if r["variant"] == variant)
    (i,) = [i for i in r["insights"] if i["id"] == rule]
    return str(i["advice"])


def _all_text(doc: dict[str, Any]) -> list[str]:
    return [f"{i['message']} {i['advice']}" for r in doc["results"] for i in r.get("insights") or []]


def test_a_cpu_run_that_measured_compiled_flex_cites_its_row() -> None:
    rows = [_flex_row(), _compiled_row()]
    copy = _advice(rows, "hidden_copy")
    upcast = _advice(rows, "fp32_upcast")
    assert "flex_compiled ran this case here without it (no hidden copy in its row)" in copy
    assert "flex_compiled ran this case here without it (no hidden upcast in its row)" in upcast
    for text in (copy, upcast):
        assert "H200" not in text and "tests/" not in text


def test_a_cpu_run_without_compiled_flex_says_the_fact_is_the_h200s() -> None:
    for rows in ([_flex_row()], [_flex_row(), _compiled_row(status="error")], [_flex_row(), _compiled_row(
            hidden_copies=[{"op": "x", "copy_op": "aten::copy_", "bytes": 1}], upcasts=[_UP])]):  # fmt: skip
        copy = _advice(rows, "hidden_copy")
        upcast = _advice(rows, "fp32_upcast")
        for text in (copy, upcast):
            assert "seen on an H200 GPU, not on this CPU: docs/fingerprint.md, 'Copies seen avoided'" in text
            assert "tests/" not in text and "ran this case here" not in text
            assert text.endswith(
                "; attnscope run --variants flex_compiled --batch 1 --heads 4 --seq 256 --head-dim 64 --dtype bf16 "
                "--causal --device cpu measures it here)"
            )


def test_another_gpu_is_told_the_fact_is_the_h200s() -> None:
    copy = _advice([_flex_row("gpu", "NVIDIA H100 80GB HBM3")], "hidden_copy")
    assert "seen on an H200, not on this NVIDIA H100 80GB HBM3: docs/fingerprint.md" in copy
    same = _advice([_flex_row("gpu", "NVIDIA H200")], "hidden_copy")
    assert "seen on an H200: docs/fingerprint.md" in same and "not on this" not in same


def test_math_backend_copy_on_a_cpu_cites_the_measured_flash_row() -> None:
    math = {**_flex_row(), "variant": "sdpa_math", "upcasts": []}
    math["hidden_copies"] = [{"op": MATH_OP, "copy_op": "aten::copy_", "bytes": 1 << 20, "kind": "value",
                              "inside": MATH_OP}]  # fmt: skip
    flash = {**_compiled_row(), "variant": "sdpa_flash"}
    with_flash = _advice([math, flash], "hidden_copy", "sdpa_math")
    assert "SDPA's CPU flash backend runs without it (sdpa_flash ran this case here without it" in with_flash
    alone = _advice([math], "hidden_copy", "sdpa_math")
    assert alone.endswith("SDPA's CPU flash backend runs without it (seen on a CPU: docs/fingerprint.md, "
                          "'Copies seen avoided')")  # fmt: skip


def test_no_insight_of_the_committed_documents_cites_tests() -> None:
    """The CPU, H100 and H200 documents, annotated: no insight sends a user to a tests/ path, and on the CPU none
    rests on a GPU without saying the GPU is not this machine."""
    for name in ("cpu/run_all.json", "h100/paged_decode_run.json", "h200/run.json"):
        doc = annotate(json.loads((DATA / name).read_text()))
        texts = _all_text(doc)
        assert texts, name
        assert not [t for t in texts if "tests/" in t], name
        if name.startswith("cpu/"):
            assert not [t for t in texts if ("H200" in t or "H100" in t) and "not on this CPU" not in t]


def _dense_row(cc: list[int], name: str) -> dict[str, Any]:
    case = {"batch": 1, "heads": 1, "seq_q": 4, "head_dim": 8, "dtype": "bf16", "device": "cuda", "mask": "causal"}
    return {"variant": "sdpa_default", "status": "ok", "source": "run", "device_kind": "gpu", "device_name": name,
            "compute_capability": cc, "dense_mask": True, "sdpa_backend": "cudnn", "case": case,
            "gpu_time_us": 10.0}  # fmt: skip


def test_torchs_hopper_order_is_said_only_of_a_hopper_row() -> None:
    doc = annotate({"results": [_dense_row([9, 0], "NVIDIA H100 80GB HBM3")]})
    (h,) = [i for i in doc["results"][0]["insights"] if i["id"] == "dense_mask"]
    assert "(first in torch's SDPA order on Hopper, mask or not)" in h["message"]
    doc = annotate({"results": [_dense_row([8, 0], "NVIDIA A100-SXM4-80GB")]})
    (a,) = [i for i in doc["results"][0]["insights"] if i["id"] == "dense_mask"]
    assert "Hopper" not in a["message"] and "torch ran cudnn, which computes all" in a["message"]
