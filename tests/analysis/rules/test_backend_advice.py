"""The memory-bound advice names a backend that fits where the row ran: FlashInfer only where it is known to import
there, cuDNN only on a row that is not cuDNN already, and what to install where the library is missing or not known.

Documents built by hand: a decode row at 1 query × 4096 keys, K and V of 8 heads × 128 bf16 (2·8·4096·128·2 B =
16,777,216 B) in 100 µs is 0.17 TB/s, a few % of an H100's spec bandwidth: memory-bound with bandwidth unused.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from attnscope.api import annotate

H100_DOC = Path(__file__).resolve().parents[2] / "data" / "h100" / "paged_decode_run.json"


def _row(variant: str = "flex_compiled", kernel: str = "triton_tem_fused_flex_attention_0", **extra: Any) -> dict:
    row: dict[str, Any] = {
        "variant": variant,
        "source": "run",
        "status": "ok",
        "device_kind": "gpu",
        "device_name": "NVIDIA H100 80GB HBM3",
        "case": {
            "batch": 1,
            "heads": 32,
            "kv_heads": 8,
            "seq_q": 1,
            "seq_kv": 4096,
            "head_dim": 128,
            "dtype": "bf16",
            "device": "cuda",
            "mask": "none",
        },
        "flops": 4 * 32 * 4096 * 128,
        "gpu_time_us": 100.0,
        "tflops": 0.01,
        "pct_of_peak": 0.01,
        "kernels": [
            {
                "name": kernel,
                "category": "attention",
                "duration_us": 100.0,
                "device": "gpu",
                "tensor_cores": True,
                "grid": [256, 1, 1],
                "theoretical_occupancy_pct": 12.5,
                "occupancy_limiter": "shared_memory",
            }
        ],
    }
    row.update(extra)
    return row


def _memory_bound(rows: list[dict[str, Any]], variant: str | None = None) -> dict[str, Any]:
    doc = annotate({"results": rows})
    r = next(r for r in doc["results"] if variant is None or r["variant"] == variant)
    (i,) = [i for i in r["insights"] if i["id"] == "memory_bound"]
    return i


def _compared(advice: str) -> str:
    """The clause that names what to compare (up to the first ';')."""
    return advice.split(";")[0]


def test_flashinfer_named_where_it_imports() -> None:
    env = {"cudnn": "91900", "libraries": {"flashinfer": "0.2.5"}}
    i = _memory_bound([_row(env=env)])
    assert "FlashInfer, which imports where this ran (attnscope run --variants flashinfer_decode)" in i["advice"]
    assert "cuDNN" in _compared(i["advice"])
    assert "pip install" not in i["advice"]
    assert i["evidence"]["flashinfer_imports"] is True


def test_a_flashinfer_row_of_the_case_is_cited_not_asked_for_again() -> None:
    ran = {"variant": "flashinfer_decode", "status": "ok", "case": _row()["case"], "device_kind": "gpu"}
    i = _memory_bound([_row(), ran], "flex_compiled")
    assert "FlashInfer, which imports where this ran (flashinfer_decode ran on this case)" in i["advice"]
    assert "--variants flashinfer_decode" not in i["advice"]


def test_flashinfer_not_named_as_a_choice_where_it_does_not_import() -> None:
    env = {"cudnn": "91900", "libraries": {"flashinfer": None}}
    i = _memory_bound([_row(env=env)])
    assert "FlashInfer" not in _compared(i["advice"])
    assert "cuDNN (SDPA's cuDNN backend)" in _compared(i["advice"])
    assert "FlashInfer does not import where this ran: pip install flashinfer-python" in i["advice"]
    assert i["evidence"]["flashinfer_imports"] is False


def test_a_skipped_flashinfer_row_of_the_case_says_it_does_not_import() -> None:
    skipped = {
        "variant": "flashinfer_decode",
        "status": "skipped",
        "reason": "flashinfer-python is not usable here: import flashinfer: ModuleNotFoundError: No module named 'x'",
        "case": _row()["case"],
    }
    i = _memory_bound([_row(), skipped], "flex_compiled")
    assert "FlashInfer" not in _compared(i["advice"])
    assert "FlashInfer does not import where this ran" in i["advice"]
    assert i["evidence"]["flashinfer_known_from"].startswith("flashinfer_decode was skipped")


def test_unknown_environment_says_what_to_install_not_that_it_is_there() -> None:
    i = _memory_bound([_row()])  # no env, no peers: a trace, or a document written before the field
    assert "FlashInfer" not in _compared(i["advice"])
    assert "FlashInfer too where it imports (pip install flashinfer-python" in i["advice"]
    assert "does not record whether it imports" in i["advice"]
    assert i["evidence"]["flashinfer_imports"] is None


def test_a_cudnn_row_is_not_told_to_compare_cudnn() -> None:
    env = {"cudnn": "91900", "libraries": {"flashinfer": "0.2.5"}}
    i = _memory_bound([_row("sdpa_cudnn", "cudnn_generated_fort_native_sdpa_sm90_flash_fprop_kernel", env=env)])
    assert "cuDNN" not in i["advice"]
    assert "FlashInfer, which imports where this ran" in i["advice"]


def test_the_h100_paged_decode_document() -> None:
    """The H100 document's paged_flashinfer row was skipped because flashinfer did not import (read from the raw
    JSON here); its memory-bound rows named FlashInfer as a backend to compare, and the cuDNN row cuDNN itself."""
    raw = json.loads(H100_DOC.read_text())
    (fi,) = [r for r in raw["results"] if r["variant"] == "paged_flashinfer"]
    assert fi["status"] == "skipped" and "import flashinfer" in fi["reason"]
    doc = annotate(raw)
    advice = {
        r["variant"]: i["advice"] for r in doc["results"] for i in r.get("insights") or [] if i["id"] == "memory_bound"
    }
    assert set(advice) == {"paged_gather_sdpa", "paged_flex_compiled"}
    for text in advice.values():
        assert "FlashInfer" not in _compared(text)
        assert "pip install flashinfer-python to compare it, then attnscope run --variants paged_flashinfer" in text
    (gather,) = [r for r in raw["results"] if r["variant"] == "paged_gather_sdpa"]
    assert gather["sdpa_backend"] == "cudnn"
    assert "cuDNN" not in advice["paged_gather_sdpa"]
    assert "cuDNN (SDPA's cuDNN backend; paged_gather_sdpa ran it on this case)" in advice["paged_flex_compiled"]


def test_env_records_which_libraries_import(monkeypatch: pytest.MonkeyPatch) -> None:
    import attnscope.measure.env as env_mod
    from attnscope.core.libraries import Library

    fake = (
        Library("json", "json", "json", ()),
        Library("absent", "attnscope_no_such_module", "x", ()),
        Library("broken", "attnscope.core.no_such_submodule", "x", ()),  # the package imports, the module not
    )
    monkeypatch.setattr(env_mod, "LIBRARIES", fake)
    env_mod.libraries.cache_clear()
    try:
        got = env_mod.libraries()
    finally:
        env_mod.libraries.cache_clear()
    assert got == {
        "json": json.__version__,
        "attnscope_no_such_module": None,
        "attnscope.core.no_such_submodule": None,
    }


def test_the_table_of_libraries_matches_the_variants() -> None:
    """Each library's variants are registered, and the external ones import the module the table names."""
    from attnscope.core.libraries import LIBRARIES
    from attnscope.variants import REGISTRY
    from attnscope.variants.external import _MODULE_OF

    for lib in LIBRARIES:
        for v in lib.variants:
            assert v in REGISTRY, v
            assert _MODULE_OF.get(v, lib.module) == lib.module, v
    assert {m for m in _MODULE_OF.values()} <= {lib.module for lib in LIBRARIES}
