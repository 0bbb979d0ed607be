"""The model split on real H200 traces of a transformers Llama step (tests/data/h200/model), against the raw
trace walked here on its own: every GPU event goes, through its launch call (same correlation id), to the
attnscope.model ranges whose span holds that call on the call's thread.  Nothing of attnscope's attribution
is used to compute the expected values."""

from __future__ import annotations

import gzip
import json
import re
from functools import cache
from typing import Any

import pytest

from attnscope.analysis.fingerprint.model_split import breakdown
from attnscope.api import analyze
from attnscope.trace import load_trace
from tests.rawtrace import H200

DECODE = H200 / "model" / "model_sdpa_decode.json.gz"
# Ranges that belong to attention (attnscope/model/scopes.py's docstring): the attention module and the
# functions it calls (core, repeat_kv, rotary, kv_cache, mask) and the model-level rotary_emb and mask builders.
ATTENTION_ROLES = {"attention", "core", "repeat_kv", "rotary", "kv_cache", "mask", "rotary_emb"}
ATTENTION_KERNEL = re.compile(r"cudnn_generated_fort_native_sdpa|cudnn::fusion::")  # what the H200 ran here


@cache
def raw_walk() -> dict[str, Any]:
    ev = json.loads(gzip.decompress(DECODE.read_bytes()))["traceEvents"]
    ranges = []
    for e in ev:
        if e.get("cat") == "user_annotation" and e["name"].startswith("attnscope.model:"):
            role = e["name"].split(":")[1]
            ranges.append((role, e["tid"], e["ts"], e["ts"] + e["dur"], e["name"]))
    (step,) = [r for r in ranges if r[0] == "step"]
    launches = {
        e["args"]["correlation"]: e
        for e in ev
        if e.get("cat") in ("cuda_runtime", "cuda_driver") and step[2] <= e["ts"] <= step[3]
    }
    gpu = [
        e
        for e in ev
        if e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset") and e["args"].get("correlation") in launches
    ]

    def roles_of(g: dict[str, Any]) -> set[str]:
        c = launches[g["args"]["correlation"]]
        return {r[0] for r in ranges if r[1] == c["tid"] and r[2] <= c["ts"] <= r[3]}

    out: dict[str, Any] = {"total": 0.0, "attention": 0.0, "core": 0.0, "attention_kernels": 0.0, "mlp": 0.0}
    out["attention_kernel_roles"] = []
    for g in gpu:
        roles = roles_of(g)
        out["total"] += g["dur"]
        if roles & ATTENTION_ROLES:
            out["attention"] += g["dur"]
        if "core" in roles:
            out["core"] += g["dur"]
        if "mlp" in roles:
            out["mlp"] += g["dur"]
        if ATTENTION_KERNEL.search(g["name"]):
            out["attention_kernels"] += g["dur"]
            out["attention_kernel_roles"].append(roles)
    out["num_gpu"] = len(gpu)
    out["num_core_ranges"] = sum(1 for r in ranges if r[0] == "core")
    return out


@cache
def split() -> dict[str, Any]:
    s = breakdown(load_trace(DECODE))
    assert s is not None
    return s


def test_decode_step_total_is_every_gpu_event_of_the_step() -> None:
    assert split()["total_us"] == pytest.approx(raw_walk()["total"], abs=1e-3)
    assert split()["unattributed_us"] == 0


def test_attention_kernels_sit_under_the_core_ranges_and_sum_to_the_kernel_part() -> None:
    w = raw_walk()
    # two layers, one sdpa core range each; each attention kernel was launched inside one of them
    assert w["num_core_ranges"] == 2 and len(w["attention_kernel_roles"]) == 4
    assert all({"core", "attention", "layer"} <= roles for roles in w["attention_kernel_roles"])
    # what the core ranges launched is exactly the attention kernels: the split's kernel part equals both
    assert w["core"] == pytest.approx(w["attention_kernels"], abs=1e-6)
    assert split()["attention"]["kernel_us"] == pytest.approx(w["attention_kernels"], abs=1e-3)


def test_attention_and_mlp_time_match_the_raw_ranges() -> None:
    w, s = raw_walk(), split()
    assert s["attention"]["time_us"] == pytest.approx(w["attention"], abs=1e-3)
    assert s["rest"]["parts"]["mlp"] == pytest.approx(w["mlp"], abs=1e-3)
    assert s["attention"]["share"] == pytest.approx(w["attention"] / w["total"], abs=1e-4)


def test_analyze_carries_the_same_split() -> None:
    r = analyze(DECODE)
    assert r.model_split is not None
    assert r.model_split["attention"]["kernel_us"] == pytest.approx(raw_walk()["attention_kernels"], abs=1e-3)
    assert r.model_split["total_us"] == pytest.approx(r.gpu_time.median_us if r.gpu_time else -1, abs=1e-3)


def test_a_gemm_is_never_judged_by_the_attention_rate() -> None:
    from attnscope.analysis.annotate import annotate
    from attnscope.document.schema import result_to_dict

    path = H200 / "model" / "model_sdpa_train.json.gz"
    ev = json.loads(gzip.decompress(path.read_bytes()))["traceEvents"]
    longest = max((e for e in ev if e.get("cat") == "kernel"), key=lambda e: e["dur"])
    assert longest["name"].startswith("nvjet")  # a GEMM of the model, not attention
    r = annotate({"results": [result_to_dict(analyze(path))]})["results"][0]
    assert r["tflops"] is not None  # the attention calls' rate
    occ = [i for i in r["insights"] if i["id"].startswith("low_occupancy")]
    assert occ and occ[0]["evidence"]["kernel"] == longest["name"]
    assert "TFLOP/s" not in occ[0]["message"] and "attention calls, not this kernel" in occ[0]["message"]
