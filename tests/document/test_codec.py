"""Result ⇄ row dict: every field of every record goes out and comes back, under the key the schema names; rows
written by older versions (the committed documents) still load, and what they hold comes back unchanged."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

import pytest

from attnscope.core.types import (
    Case,
    Env,
    Fingerprint,
    GraphTiming,
    HiddenCopy,
    KernelRecord,
    PeakRate,
    Result,
    Timing,
    Upcast,
)
from attnscope.document.schema import check_document, result_from_dict, result_to_dict

ROOT = Path(__file__).resolve().parents[2]

KERNEL = KernelRecord(
    name="flash_fwd_kernel",
    category="attention",
    duration_us=12.5,
    device="cpu",
    launched_by="aten::_flash_attention_forward",
    tensor_cores=True,
    tensor_core_precision="TF32",
    grid=(4, 8, 2),
    block=(128, 1, 1),
    registers_per_thread=168,
    shared_memory_bytes=49152,
    theoretical_occupancy_pct=12.5,
    occupancy_limiter="registers",
    kineto_occupancy_pct=11.0,
    bytes=4096,
    stream=7,
    start_us=1000.25,
    input_dtype="bf16",
)
COPY = HiddenCopy("aten::masked_fill", "aten::copy_", 512, (2, 8, 16), "Memcpy DtoD", 3.5, "contiguous", "sdpa")
UPCAST = Upcast("aten::softmax", "bf16", "fp32", (2, 8, 16, 16), 16384, "accumulate", "flex")
FINGERPRINT = Fingerprint(
    kernels=(KERNEL, dataclasses.replace(KERNEL, name="memcpy", category="memcpy", grid=None)),
    num_kernels=1,
    num_memcpy=1,
    num_memset=0,
    hidden_copies=(COPY,),
    upcasts=(UPCAST,),
    mask_rebuilt=True,
    mask_ops=("aten::tril", "aten::where"),
    sdpa_backend="flash",
    device_kind="cpu",
    device_name="NVIDIA H200",
    compute_capability=(9, 0),
    trace_gpu_time_us=40.0,
    trace_cpu_time_us=55.0,
    trace_peak_memory_bytes=1 << 20,
    notes=("a trace note",),
    mask_builds=({"op": "aten::tril", "count": 2},),
    tensor_cores=False,
    eager_attention=({"ops": ["aten::bmm", "aten::softmax", "aten::bmm"], "scores_dims": [2, 8, 8], "num_chains": 1},),
)


def timing(median: float) -> Timing:
    return Timing(median, median - 1, median + 2, median - 1.5, 12, "CUDA events, median of 12")


RESULT = Result(
    variant="sdpa_flash",
    case=Case(
        2,
        8,
        64,
        32,
        dtype="fp16",
        causal=False,
        kv_heads=4,
        seq_kv=128,
        device="cuda",
        mask="sliding:16@lower_right",
        softcap=30.0,
        alibi=True,
        mode="fwd_bwd",
        mask_mod="/x/m.py:keep",
        score_mod="/x/m.py:cap",
    ),
    status="error",
    reason="why not",
    fingerprint=FINGERPRINT,
    gpu_time=timing(10.0),
    cpu_time=timing(20.0),
    peak_memory_bytes=123456,
    peak_memory_source="max_memory_allocated",
    flops=1_000_000,
    tflops=0.1,
    pct_of_peak=12.0,
    max_rel_error=1e-3,
    error_tolerance=2e-2,
    nonfinite=True,
    compile_time_s=3.0,
    trace_path="traces/sdpa_flash.json",
    source="trace",
    family="sdpa",
    backend="flash",
    env=Env(
        "2.13",
        "13.0",
        "9.1",
        "NVIDIA H200",
        "580",
        "3.11",
        "2026-01-01",
        "linux",
        host_cores=16,
        libraries={"flashinfer": "0.2.5", "flash_attn": None},
    ),
    peak=PeakRate(700.0, "measured matmul"),
    rel_errors={"out": 1e-3, "dq": 2e-3},
    notes=("a run note",),
    context_overhead_us=1.5,
    sdpa_why={"flash": "ok"},
    trace_summary={"steps": 1},
    attention_calls=[{"op": "aten::sdpa", "count": 3}],
    case_unknown={"mask": "not in the trace"},
    flops_basis="3 calls",
    flops_unknown="one call's shape",
    model_split={"total_us": 10.0},
    gpu_time_graph=timing(9.0),
    gpu_time_graph_why="capturable",
    timing=GraphTiming(
        graph_warm=timing(8.0),
        graph_cold=timing(9.0),
        graph_used="cold",
        copies=13,
        working_set_bytes=8 << 20,
        l2_bytes=50 << 20,
        rotation="13 copies",
    ),
    device_state={"sm_clock_mhz": {"min": 1755.0, "median": 1980.0, "max": 1980.0}, "throttle": ["sw_power_cap"]},
    launch={"gap_us": 1.0},
    ncu={"sm__throughput": 80.0},
    cost_s={"timing": 1.0},
    extra={"plugin": [1, 2]},
    modifier_checks=[{"modifier": "softcap", "difference": 0.5, "tolerance": 0.02, "needed": 0.08, "visible": True}],
)


def _non_default(obj: Any) -> list[str]:
    """The fields of a record that still hold their default: a field the round trip would not exercise."""
    out = []
    for f in dataclasses.fields(obj):
        if f.default_factory is not dataclasses.MISSING:
            default = f.default_factory()
        else:
            default = f.default
        if default is not dataclasses.MISSING and getattr(obj, f.name) == default:
            out.append(f.name)
    return out


# A serving cache takes no backward, soft-cap or ALiBi (core.case refuses them together): its two fields are set in
# a case of their own, round-tripped below.
SERVING_CASE = Case(2, 4, 1, 8, kv_heads=2, device="cuda", page_size=16, kv_lens="uniform:5..9@3", dtype="fp16")
SERVING_ONLY = ["page_size", "kv_lens"]


@pytest.mark.parametrize("record", [RESULT, FINGERPRINT, KERNEL, COPY, UPCAST, RESULT.env, RESULT.case, RESULT.timing])
def test_the_samples_set_every_field(record):
    # a field added to the types gets a value here, so the round trip covers it
    assert _non_default(record) == (SERVING_ONLY if record is RESULT.case else [])


def test_a_serving_case_sets_its_fields_and_comes_back_through_json():
    assert not set(SERVING_ONLY) & set(_non_default(SERVING_CASE))
    row = json.loads(json.dumps(result_to_dict(dataclasses.replace(RESULT, case=SERVING_CASE))))
    assert result_from_dict(row).case == SERVING_CASE


def test_every_field_goes_out_and_comes_back_through_json():
    row = json.loads(json.dumps(result_to_dict(RESULT)))
    assert result_from_dict(row) == RESULT


def test_keys_as_the_schema_names_them():
    row = result_to_dict(RESULT)
    assert row["run_notes"] == ["a run note"] and row["notes"] == ["a trace note"]  # run's and trace's notes apart
    assert row["gpu_time_us"] == 10.0 and row["cpu_time_us"] == 20.0
    assert row["gpu_time"]["noisy"] is True  # IQR/median 0.3 > 0.10
    assert row["gpu_time"]["iqr_rel"] == pytest.approx(3.0 / 10.0)  # (p75 - p25) / median = (12 - 9) / 10
    assert row["mode"] == "fwd_bwd" and row["numerics_ok"] is False  # nonfinite output
    assert row["num_kernels"] == 1 and row["kernels"][0]["grid"] in ((4, 8, 2), [4, 8, 2])
    assert row["compute_capability"] == [9, 0]
    assert row["upcast_fp32"] is True
    assert row["case"]["kv_heads"] == 4
    assert row["extra"] == {"plugin": [1, 2]}
    assert "fingerprint" not in row and "flop_formula" in row


def test_empty_ncu_is_null_and_a_missing_fingerprint_leaves_empty_lists():
    row = result_to_dict(Result("naive", None, "skipped"))
    assert row["ncu"] is None and row["extra"] == {}
    assert row["kernels"] == [] and row["mask_ops"] == [] and row["num_kernels"] is None
    assert row["compute_capability"] is None and row["upcast_fp32"] is None
    back = result_from_dict(row)
    assert back == Result("naive", None, "skipped")


def test_an_older_row_gets_defaults_and_unknown_keys_are_passed_over():
    row = {"variant": "naive", "status": "ok", "case": {"batch": 1, "heads": 2, "seq_q": 8, "head_dim": 4}}
    row |= {"mode": "fwd_bwd", "a_key_from_the_future": 1, "run_notes": None}
    r = result_from_dict(row)
    assert r.case == Case(1, 2, 8, 4, mode="fwd_bwd")  # rows before the case held its mode
    assert r.notes == () and r.ncu == {} and r.source == "run" and r.fingerprint is None


def _documents() -> list[Path]:
    paths = sorted((ROOT / "docs" / "results" / "raw").rglob("*.json")) + sorted(
        (ROOT / "tests" / "data").rglob("*.json")
    )
    out = []
    for p in paths:
        if p.stat().st_size > 30_000_000:
            continue
        with p.open("rb") as f:
            if b'"schema_version"' in f.read(4096) and b'"results"' in p.read_bytes():
                out.append(p)
    return out


DOCUMENTS = _documents()
DERIVED_OR_ADDED = {"flop_formula", "insights", "insights_not_checked", "main_kernel", "eager_fallback"}


def _holds(new: Any, old: Any) -> bool:
    """``new`` holds everything ``old`` held (objects may have gained keys a newer version writes)."""
    if isinstance(old, dict):
        return isinstance(new, dict) and all(k in new and _holds(new[k], v) for k, v in old.items())
    if isinstance(old, list):
        return isinstance(new, list) and len(new) == len(old) and all(map(_holds, new, old))
    return bool(new == old)


def _same(new: Any, old: Any) -> bool:
    return _holds(json.loads(json.dumps(new)), json.loads(json.dumps(old)))


def test_the_committed_documents_are_found():
    assert len(DOCUMENTS) >= 10  # docs/results/raw and tests/data hold documents of several versions


@pytest.mark.parametrize("path", DOCUMENTS, ids=lambda p: str(p.relative_to(ROOT)))
def test_a_committed_document_loads_and_its_rows_come_back_unchanged(path):
    doc = json.loads(path.read_text())
    model_rows = doc.get("kind") == "model"  # a model's rows carry variant and status too (the generic fields)
    if model_rows or not any(
        isinstance(r, dict) and "variant" in r and "status" in r for r in doc.get("results") or []
    ):
        pytest.skip("not a document of result rows (a model or recommendation document)")
    check_document(doc, str(path))
    for row in doc["results"]:
        again = result_to_dict(result_from_dict(row))
        for k, v in row.items():
            if k in again and k not in DERIVED_OR_ADDED:
                assert _same(again[k], v), (path.name, row["variant"], k)


def test_a_schema_1_row_reads_its_graph_figure_as_warm():
    """Before cold-L2 replay a row had one graph figure, replaying the same inputs: read back as warm."""
    row = json.loads(json.dumps(result_to_dict(RESULT)))
    del row["timing"]
    got = result_from_dict(row).timing
    assert got is not None and got.graph_warm == timing(9.0) and got.graph_cold is None
    assert got.graph_used == "warm" and got.copies == 1
    row["gpu_time_graph"] = None
    assert result_from_dict(row).timing is None
