"""Insights on real H200 traces and on the run's own JSON: triggered where they should be, and only there.

Expected numbers are recomputed from the raw Kineto events (tests/rawtrace.py), not from attnscope.
"""

from __future__ import annotations

import copy
import json
import re
from functools import cache
from pathlib import Path
from typing import Any

import pytest

from attnscope.analysis.annotate import annotate
from attnscope.api import analyze
from attnscope.document.schema import result_to_dict
from tests.rawtrace import H200, VARIANTS, raw_events, raw_gpu_events_in_call, raw_mask_kernels

RUN_JSON = Path(__file__).parents[2] / "data" / "h200" / "run.json"  # the run that captured these traces
MIB = 1024 * 1024


@cache
def analyzed() -> dict[str, dict[str, Any]]:
    """`attnscope analyze` of every H200 trace, annotated together (case read from the SDPA ops)."""
    results = [result_to_dict(analyze(H200 / f"{v}.json", variant=v)) for v in VARIANTS]
    doc = annotate({"results": results})
    return {r["variant"]: r for r in doc["results"]}


@cache
def run_doc() -> dict[str, Any]:
    return json.loads(RUN_JSON.read_text())


def run_results(doc: dict[str, Any] | None = None) -> dict[str, dict[str, Any]]:
    return {r["variant"]: r for r in annotate(doc or run_doc())["results"]}


def ids(r: dict[str, Any]) -> set[str]:
    return {i["id"] for i in r["insights"]}


def one(r: dict[str, Any], rid: str) -> dict[str, Any]:
    got = [i for i in r["insights"] if i["id"] == rid]
    assert len(got) == 1, (r["variant"], rid, ids(r))
    return got[0]


def raw_gpu(variant: str) -> list[dict[str, Any]]:
    return raw_gpu_events_in_call(raw_events(H200 / f"{variant}.json"))


# ---- trace-only insights (the same from run and analyze) ----------------------------------


def test_hidden_copy_names_op_and_bytes_from_raw_memcpy():
    memcpy = [e for e in raw_gpu("naive") if e["cat"] == "gpu_memcpy" and "DtoD" in e["name"]]
    assert len(memcpy) == 1
    i = one(analyzed()["naive"], "hidden_copy")
    assert i["evidence"]["op"] == "aten::masked_fill"
    assert i["evidence"]["bytes"] == memcpy[0]["args"]["bytes"] == 4 * 16 * 2048 * 2048 * 2
    assert i["evidence"]["copy_us"] == pytest.approx(memcpy[0]["dur"], abs=0.05)
    assert "masked_fill_" in i["advice"]


@pytest.mark.parametrize("variant", ["naive_inplace", "sdpa_math", "sdpa_flash", "sdpa_cudnn", "flex_compiled"])
def test_no_hidden_copy_where_nothing_is_copied(variant):
    assert "hidden_copy" not in ids(analyzed()[variant])


def test_fp32_upcast_share_of_gpu_time_from_raw_kernels():
    ev = raw_gpu("sdpa_math")
    ffma = sum(e["dur"] for e in ev if e["cat"] == "kernel" and "ffma" in e["name"])
    total = sum(e["dur"] for e in ev)
    i = one(analyzed()["sdpa_math"], "fp32_upcast")
    assert i["evidence"]["num_upcasts"] == 3
    assert i["evidence"]["fp32_matrix_share_pct"] == pytest.approx(100 * ffma / total, abs=0.06)
    assert f"{100 * ffma / total:.1f}% of GPU time" in i["message"]


@pytest.mark.parametrize("variant", ["naive", "naive_inplace", "sdpa_efficient", "sdpa_flash", "sdpa_cudnn"])
def test_no_upcast_and_no_cuda_core_insight_for_16bit_paths(variant):
    assert not {"fp32_upcast", "no_tensor_cores"} & ids(analyzed()[variant])


def test_mask_rebuilt_and_safe_softmax_only_in_math_paths():
    r = analyzed()["sdpa_math"]
    mask = one(r, "mask_rebuilt")
    raw_mask = raw_mask_kernels(H200 / "sdpa_math.json", [2048, 2048])  # B4 H16 S2048: ones(S, S).tril() etc.
    assert sum("triu_tril" in e["name"] for e in raw_mask) == 1
    assert mask["evidence"]["num_mask_kernels"] == len(raw_mask)
    assert mask["evidence"]["mask_us"] == pytest.approx(sum(e["dur"] for e in raw_mask), abs=0.05)
    assert mask["evidence"]["mask_ops"] == ["aten::ones", "aten::tril", "aten::where"]
    assert mask["evidence"]["is_causal_passed"] is True  # Concrete Inputs[5] of the public SDPA op
    assert mask["evidence"]["built_inside"] == "aten::_scaled_dot_product_attention_math"
    assert "is_causal=True is already passed" in mask["advice"]
    guard = one(r, "safe_softmax")
    assert "aten::isneginf" in guard["ops"]
    for v in ("naive", "naive_inplace", "sdpa_flash", "sdpa_cudnn", "sdpa_efficient", "flex_compiled"):
        assert not {"mask_rebuilt", "safe_softmax"} & ids(analyzed()[v]), v


def test_opaque_library_only_for_generated_cudnn_kernel():
    i = one(analyzed()["sdpa_cudnn"], "opaque_library")
    raw = [e for e in raw_gpu("sdpa_cudnn") if e["cat"] == "kernel" and "cudnn_generated" in e["name"]]
    assert i["evidence"]["kernel"] == raw[0]["name"]
    for v in ("sdpa_flash", "sdpa_efficient", "naive", "flex_compiled"):
        assert "opaque_library" not in ids(analyzed()[v])


def test_analyze_leaves_out_what_a_trace_cannot_tell_and_says_so():
    r = analyzed()["sdpa_math"]
    missing = {n["id"]: n["why"] for n in r["insights_not_checked"]}
    assert {"numerics_off", "cpu_bound"} <= set(missing)
    assert "fp64 reference" in missing["numerics_off"]
    # the shape is read from the SDPA op: math's 2448 MiB peak over its 512 MiB bf16 score matrix is told
    assert one(r, "score_matrix")["evidence"]["score_matrix_bytes"] == 4 * 16 * 2048 * 2048 * 2
    # naive has no attention op: its shape stays unknown, and the rule says why
    naive = {n["id"]: n["why"] for n in analyzed()["naive"]["insights_not_checked"]}
    assert "no attention op" in naive["score_matrix"] and "slower_than_best" in naive
    assert "sdpa_why" in {n["id"] for n in analyzed()["sdpa_default"]["insights_not_checked"]}
    # occupancy from a trace: the limiter, but no by-design verdict without the rate
    occ = one(analyzed()["sdpa_flash"], "low_occupancy")
    assert occ["severity"] == "info" and occ["evidence"]["by_design"] is None


# ---- run-level insights on the run's own JSON ----------------------------------------------


def test_score_matrix_numbers():
    rs = run_results()
    i = one(rs["naive"], "score_matrix")
    assert i["evidence"]["score_matrix_bytes"] == 4 * 16 * 2048 * 2048 * 2
    assert i["evidence"]["minimum_bytes"] == 4 * 16 * 2048 * 64 * 2
    assert i["evidence"]["peak_memory_bytes"] == rs["naive"]["peak_memory_bytes"]
    assert "score_matrix" in ids(rs["sdpa_math"]) and "score_matrix" in ids(rs["flex"])
    for v in ("sdpa_flash", "sdpa_cudnn", "sdpa_efficient", "flex_compiled"):
        assert "score_matrix" not in ids(rs[v]), v


def test_low_occupancy_by_design_told_apart_from_hurting():
    rs = run_results()
    flash = one(rs["sdpa_flash"], "low_occupancy_by_design")
    assert flash["evidence"]["limiter"] == "registers" and flash["evidence"]["theoretical_occupancy_pct"] == 12.5
    assert flash["evidence"]["pct_of_peak"] == pytest.approx(rs["sdpa_flash"]["pct_of_peak"], abs=0.05)
    assert "low_occupancy_by_design" in ids(rs["sdpa_cudnn"])
    eff = one(rs["sdpa_efficient"], "low_occupancy")
    assert eff["severity"] == "warning" and eff["evidence"]["by_design"] is False
    assert not {"low_occupancy", "low_occupancy_by_design"} & ids(rs["naive"])  # softmax at 37.5%
    assert not {"low_occupancy", "low_occupancy_by_design"} & ids(rs["sdpa_math"])  # fp32 story instead


def test_cpu_bound_only_when_host_time_reaches_gpu_time():
    rs = run_results()
    assert not any("cpu_bound" in ids(r) for r in rs.values())  # measured: host < GPU everywhere
    doc = copy.deepcopy(run_doc())
    flash = next(r for r in doc["results"] if r["variant"] == "sdpa_flash")
    flash["cpu_time_us"] = flash["gpu_time_us"] * 1.5
    i = one(run_results(doc)["sdpa_flash"], "cpu_bound")
    assert i["evidence"]["cpu_over_gpu_pct"] == 150 and "CUDA graph" in i["advice"]


def test_slower_than_best_ratio_and_no_claim_inside_the_noise():
    rs = run_results()
    i = one(rs["sdpa_math"], "slower_than_best")
    best = min((r for r in rs.values() if r["status"] == "ok"), key=lambda r: r["gpu_time_us"])
    assert i["evidence"]["best"] == best["variant"]
    assert i["evidence"]["ratio"] == pytest.approx(rs["sdpa_math"]["gpu_time_us"] / best["gpu_time_us"], abs=0.01)
    # sdpa_cudnn and sdpa_default run the same kernel: their IQRs overlap, no "slower" claim
    assert "slower_than_best" not in ids(rs["sdpa_cudnn"]) and "slower_than_best" not in ids(rs["sdpa_default"])


def test_numerics_off_triggers_only_above_tolerance():
    assert not any("numerics_off" in ids(r) for r in run_results().values())
    doc = copy.deepcopy(run_doc())
    flash = next(r for r in doc["results"] if r["variant"] == "sdpa_flash")
    flash["max_rel_error"], flash["numerics_ok"] = 0.05, False
    rs = run_results(doc)
    i = one(rs["sdpa_flash"], "numerics_off")
    assert i["severity"] == "error" and i["evidence"]["tolerance"] == flash["error_tolerance"]
    assert "slower_than_best" not in ids(rs["sdpa_flash"])  # judged on numerics, not speed


def test_sdpa_choice_reports_kernel_backend_and_torch_reasons():
    doc = copy.deepcopy(run_doc())
    d = next(r for r in doc["results"] if r["variant"] == "sdpa_default")
    d["sdpa_why"] = {
        "chosen": "cudnn",
        "order": ["flash", "cudnn", "efficient", "math"],
        "checks": [
            {"backend": "flash", "usable": False, "reasons": ["head_dim 512 > 256"]},
            {"backend": "cudnn", "usable": True, "reasons": []},
        ],
    }
    i = one(run_results(doc)["sdpa_default"], "sdpa_choice")
    assert i["evidence"]["ran"] == "cudnn" and "cudnn_generated" in i["evidence"]["seen_in"]
    assert i["evidence"]["rejected"] == ["flash: head_dim 512 > 256"]
    assert "flash: head_dim 512 > 256" in i["message"]


# ---- every number in a message is in the evidence --------------------------------------------

NUM = re.compile(r"(?<![\w.])\d[\d,]*(?:\.\d+)?")


def _numbers(v: Any) -> list[float]:
    if isinstance(v, bool) or v is None:
        return []
    if isinstance(v, int | float):
        return [float(v)]
    if isinstance(v, str):
        return [float(x.replace(",", "")) for x in NUM.findall(v)]
    if isinstance(v, list | tuple):
        return [x for e in v for x in _numbers(e)]
    if isinstance(v, dict):
        return [x for e in v.values() for x in _numbers(e)]
    return []


def _traceable(n: float, pool: list[float], shown: str) -> bool:
    decimals = len(shown.split(".")[1]) if "." in shown else 0
    tol = 0.5 * 10**-decimals + 1e-9
    return any(abs(n - p) <= tol for p in pool)


@pytest.mark.parametrize("source", ["run", "analyze"])
def test_every_number_in_a_message_is_in_its_evidence(source):
    rs = run_results() if source == "run" else analyzed()
    checked = 0
    for r in rs.values():
        for i in r["insights"]:
            pool = _numbers(i["evidence"]) + _numbers(list(i["kernels"])) + _numbers(list(i["ops"]))
            for shown in NUM.findall(i["message"]):
                assert _traceable(float(shown.replace(",", "")), pool, shown), (i["id"], shown, i["message"])
                checked += 1
    assert checked > 20


def test_sdpa_why_short_reasons_from_real_torch_211_messages():
    """explain() output captured on the H200 (torch 2.11, cuDNN 9.19): order, choice, and torch's words."""
    from attnscope.variants.sdpa_why import shorten

    why = json.loads((H200 / "sdpa_why_torch211.json").read_text())
    assert why["default"]["order"] == ["cudnn", "flash", "efficient", "math"]
    assert why["default"]["chosen"] == "cudnn" and why["d512"]["chosen"] == "efficient"
    for case in why.values():
        for c in case["checks"]:
            assert [shorten(m) for m in c["torch_messages"]] == c["reasons"]
    flash_512 = next(c for c in why["d512"]["checks"] if c["backend"] == "flash")
    assert flash_512["reasons"] == ["head_dim 512 > 256"]
