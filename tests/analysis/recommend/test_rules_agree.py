"""Every rule, over a fuzz space of result documents, agrees with the recommendation,
with the device and with its own premise.

The documents are real runs (the H200 study, tests/data/h200/run.json; a CPU run of every variant,
tests/data/cpu/run_all.json) with the case shape, timings (medians and quartiles), peak memory,
numerics and the set of variants drawn at random.  The invariants are stated from the documents'
raw fields (kernel categories, quartiles), never from the rules' own helpers.
"""

from __future__ import annotations

import copy
import json
import random
import re
from pathlib import Path
from typing import Any

import pytest

from attnscope.api import annotate

DATA = Path(__file__).parents[2] / "data"
BASES = {"gpu": DATA / "h200" / "run.json", "cpu": DATA / "cpu" / "run_all.json"}
N_DOCS = 300
GPU_ONLY_WORDS = re.compile(r"tensor core|cudnn|efficient|tf32|cuda|nsight|\bgpu\b", re.IGNORECASE)
FUSED = ("flash", "efficient", "cudnn")


def _base(kind: str) -> list[dict[str, Any]]:
    doc = json.loads(BASES[kind].read_text())
    out = []
    for r in doc["results"]:
        r = {k: v for k, v in r.items() if k not in ("insights", "insights_not_checked")}
        out.append(r)
    return out


BASE = {k: _base(k) for k in BASES}


def _timing(rng: random.Random, median: float) -> dict[str, Any]:
    width = rng.choice([0.0, 0.02, 0.08, 0.3, 0.9])
    lo, hi = median * (1 - width * rng.random()), median * (1 + width * rng.random())
    iqr = (hi - lo) / median
    return {
        "median_us": median,
        "p25_us": lo,
        "p75_us": hi,
        "min_us": lo * 0.9,
        "num_samples": 50,
        "iqr_rel": iqr,
        "noisy": iqr > 0.1,
        "method": "fuzz",
    }


def fuzz_doc(seed: int) -> dict[str, Any]:
    rng = random.Random(seed)
    kind = rng.choice(["gpu", "cpu"])
    results = [copy.deepcopy(r) for r in BASE[kind] if r["status"] == "ok"]
    results = rng.sample(results, rng.randint(1, len(results)))
    case = dict(results[0]["case"])
    case.update(
        batch=rng.choice([1, 2, 4]),
        heads=rng.choice([1, 8, 16]),
        seq_q=rng.choice([16, 64, 512, 2048, 8192]),
        head_dim=rng.choice([32, 64, 128, 256]),
        dtype=rng.choice(["bf16", "fp16", "fp32"]),
        causal=rng.random() < 0.7,
        seq_kv=None,
    )
    elem = {"bf16": 2, "fp16": 2, "fp32": 4}[case["dtype"]]
    score = case["batch"] * case["heads"] * case["seq_q"] ** 2 * elem
    out_bytes = case["batch"] * case["heads"] * case["seq_q"] * case["head_dim"] * elem
    shared = rng.uniform(50, 5000)  # some variants share one time: same kernels, or a plain tie
    for r in results:
        r["case"] = case
        median = shared if rng.random() < 0.3 else rng.uniform(50, 5000)
        t = _timing(rng, median)
        key = "gpu_time" if kind == "gpu" else "cpu_time"
        r[key], r[f"{key}_us"] = t, median
        if kind == "gpu":
            r["cpu_time"], r["cpu_time_us"] = _timing(rng, median * rng.uniform(0.05, 1.5)), None
            r["cpu_time_us"] = r["cpu_time"]["median_us"]
        r["peak_memory_bytes"] = rng.choice(
            [None, 0, int(out_bytes * rng.uniform(1, 3)), int(score * rng.uniform(0.5, 8)), int(out_bytes + score)]
        )
        r["numerics_ok"] = rng.random() > 0.1
        r["tflops"] = rng.uniform(0.01, 300)
        r["pct_of_peak"] = rng.choice([rng.uniform(0.1, 99), rng.uniform(99, 1600), 100.0, None])
    return annotate({"schema_version": 1, "results": results, "case": case})


def _fused(r: dict[str, Any]) -> bool:
    ks = [k for k in r.get("kernels") or [] if k["category"] not in ("memcpy", "memset")]
    return r.get("sdpa_backend") in FUSED or any(k["category"] == "attention" for k in ks)


def _writes_scores(r: dict[str, Any]) -> bool:
    ks = [k for k in r.get("kernels") or [] if k["category"] not in ("memcpy", "memset")]
    return not _fused(r) and any(k["category"] == "gemm" for k in ks)


def _time(r: dict[str, Any]) -> dict[str, Any] | None:
    return r.get("gpu_time") if r.get("device_kind") == "gpu" else r.get("cpu_time")


def _overlap(a: dict[str, Any], b: dict[str, Any]) -> bool:
    return a["p75_us"] >= b["p25_us"] and b["p75_us"] >= a["p25_us"]


def _same_kernels(a: dict[str, Any], b: dict[str, Any]) -> bool:
    def names(r: dict[str, Any]) -> set[str]:
        return {k["name"] for k in r.get("kernels") or [] if k["category"] not in ("memcpy", "memset")}

    return bool(names(a)) and names(a) == names(b)


DOCS = [fuzz_doc(s) for s in range(N_DOCS)]


def _all_insights(doc: dict[str, Any]) -> list[tuple[dict[str, Any], dict[str, Any]]]:
    return [(r, i) for r in doc["results"] for i in r.get("insights") or []]


def test_the_fuzz_space_reaches_every_situation() -> None:
    """The invariants below are only worth something if their premises occur."""
    recs = [d["recommendation"] for d in DOCS if d["recommendation"]]
    by = {r["variant"]: r for d in DOCS for r in d["results"]}
    assert any(_writes_scores(by[r["best"]]) for r in recs)  # a score-writing best happens
    assert any("tied within the noise with" in r["text"] for r in recs)
    assert any(i["id"] == "slower_than_best" for _, i in _all_insights_all())  # a fused one preferred in a tie
    assert sum(1 for _, i in _all_insights_all() if i["id"] == "score_matrix") > 50
    assert any(i["id"] == "sdpa_choice" and "force" in i["advice"] for _, i in _all_insights_all())
    assert any(d["results"][0]["device_kind"] == "cpu" for d in DOCS)


def _all_insights_all() -> list[tuple[dict[str, Any], dict[str, Any]]]:
    return [x for d in DOCS for x in _all_insights(d)]


@pytest.mark.parametrize("seed", range(N_DOCS))
def test_rules_agree_with_the_recommendation(seed: int) -> None:
    doc = DOCS[seed]
    results = {r["variant"]: r for r in doc["results"]}
    rec = doc["recommendation"]
    ranked = [r for r in doc["results"] if r.get("numerics_ok") is not False and _time(r)]
    # a variant that writes the scores out is "best" only when every fused one is slower beyond the noise
    # (a tie across more than 1.5× names no best: the text says to measure again)
    if rec and rec.get("unresolved"):
        assert rec["text"].startswith("unresolved: ") and "measure again on a quiet machine" in rec["text"]
    elif rec:
        best = results[rec["best"]]
        if _writes_scores(best):
            for f in (r for r in ranked if _fused(r)):
                assert not _overlap(_time(best), _time(f)) and not _same_kernels(best, f), (seed, f["variant"])
                assert _time(f)["median_us"] > _time(best)["median_us"]
            assert "writes the S×S score matrix out" in rec["text"]
    for r, i in _all_insights(doc):
        text = f"{i['message']} {i['advice']}"
        # advice names only what exists on the device it ran on
        if r["device_kind"] == "cpu":
            assert not GPU_ONLY_WORDS.search(i["advice"]), (seed, r["variant"], i["id"], i["advice"])
        # no insight fires when its premise is false
        if i["id"] == "score_matrix":
            assert _writes_scores(r), (seed, r["variant"])
            c = r["case"]
            elem = {"bf16": 2, "fp16": 2, "fp32": 4}[c["dtype"]]
            out_b = c["batch"] * c["heads"] * c["seq_q"] * c["head_dim"] * elem
            assert r["peak_memory_bytes"] - out_b >= c["batch"] * c["heads"] * c["seq_q"] ** 2 * elem
        if "pass is_causal=True" in text:
            assert not r["variant"].startswith("sdpa_") and r.get("sdpa_backend") is None
        # advice to force a backend never contradicts a tie
        m = re.search(r"force (\w+)", i["advice"])
        if m:
            other = results[m.group(1)]
            assert not _overlap(_time(r), _time(other)) and not _same_kernels(r, other), (seed, i["message"])
            assert _time(other)["median_us"] * 1.10 < _time(r)["median_us"]
        # "use X" names the recommendation's choice
        if i["id"] == "slower_than_best":
            assert rec and f"use {rec['best']} " in i["advice"], (seed, i["advice"], rec and rec["text"])
            best = results[rec["best"]]
            assert not _same_kernels(r, best) and not _overlap(_time(r), _time(best)), (seed, r["variant"])
    # a % of peak over 100 is never left unflagged
    for r in doc["results"]:
        flagged = any(i["id"] == "rate_above_peak" for i in r.get("insights") or [])
        assert flagged == (r.get("pct_of_peak") is not None and r["pct_of_peak"] > 100), (seed, r["variant"])
    if rec and results[rec["best"]]["device_kind"] == "cpu":
        assert not GPU_ONLY_WORDS.search(rec["text"].replace(rec["basis"], ""))
