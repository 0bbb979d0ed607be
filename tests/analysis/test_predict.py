"""Guess first: predictions of every kind, hit and miss, against the H200 run's JSON; the file format;
the recommendation; the interactive questions with injected input."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from attnscope.analysis.annotate import annotate
from attnscope.analysis.predict import KINDS, PredictionError, parse_predictions, to_toml
from attnscope.analysis.recommend.run import recommend
from attnscope.cli.guess import Question, ask, parse_answer, questions, strict_failure
from attnscope.core.types import Case, Prediction

RUN_JSON = Path(__file__).parents[1] / "data" / "h200" / "run.json"  # the run that captured these traces
DOC = json.loads(RUN_JSON.read_text())
R = {r["variant"]: r for r in DOC["results"]}
MIB = 1024 * 1024

# (variant, kind, a value that hits, a value that misses, what to find in the miss explanation)
CASES: list[tuple[str, str, Any, Any, str]] = [
    ("sdpa_math", "kernels", R["sdpa_math"]["num_kernels"], 5, "fp32 upcast"),
    ("sdpa_math", "kernels", [15, 25], [1, 6], "safe softmax"),
    ("naive", "memcpy", 1, 0, "masked_fill"),
    ("naive", "hidden_copy", True, False, "masked_fill"),
    ("naive_inplace", "hidden_copy", False, True, "nothing in the trace"),
    ("sdpa_math", "upcast", True, False, "fp32"),
    ("sdpa_math", "tensor_cores", False, True, "CUDA cores"),
    ("sdpa_flash", "tensor_cores", True, False, "nothing in the trace"),
    ("sdpa_math", "mask_rebuilt", True, False, "aten::tril"),
    ("sdpa_flash", "gpu_us", [100, 200], [1000, 2000], "slower than"),
    ("sdpa_flash", "cpu_us", [10, 100], [500, 900], "slower than"),
    ("naive", "peak_memory_mib", [1000, 1100], [0, 100], "score matrix"),
    ("sdpa_flash", "occupancy_pct", [10, 15], [40, 100], "by design"),
    ("sdpa_default", "backend", "cudnn", "flash", "cudnn"),
    ("sdpa_flash", "faster_than", {"variant": "naive", "by": 10.0}, {"variant": "naive", "by": 20.0}, "slower than"),
    ("sdpa_math", "slower_than", {"variant": "naive", "by": [2.0, 3.0]}, {"variant": "naive", "by": 3.7}, "fp32"),
]


def verdicts(preds: list[Prediction], doc: dict[str, Any] = DOC) -> list[dict[str, Any]]:
    return annotate(doc, preds)["verdicts"]


def test_every_kind_is_exercised():
    assert {c[1] for c in CASES} == set(KINDS)


@pytest.mark.parametrize(("variant", "kind", "hit", "miss", "why"), CASES)
def test_hit_and_miss(variant, kind, hit, miss, why):
    v_hit, v_miss = verdicts([Prediction(variant, kind, hit), Prediction(variant, kind, miss)])
    assert v_hit["outcome"] == "hit", v_hit
    assert v_hit["explanation"] is None
    assert v_miss["outcome"] == "miss", v_miss
    assert why in v_miss["explanation"], v_miss
    assert v_hit["measured"] == v_miss["measured"] is not None
    assert "measured" in v_miss["text"]


def test_kernel_miss_is_explained_like_the_study():
    (v,) = verdicts([Prediction("sdpa_math", "kernels", 5)])
    assert v["text"] == "sdpa_math kernels: predicted 5, measured 20"
    assert v["explanation"].startswith("fp32 upcast (5 dtype-conversion kernels); mask rebuilt (1: tril); safe softmax")


def test_ratio_is_measured_from_the_median_times():
    (v,) = verdicts([Prediction("sdpa_flash", "faster_than", {"variant": "naive", "by": 2.0})])
    assert v["measured"] == pytest.approx(R["naive"]["gpu_time_us"] / R["sdpa_flash"]["gpu_time_us"], abs=0.01)


def test_unknown_when_nothing_was_measured():
    doc = copy.deepcopy(DOC)
    for r in doc["results"]:
        if r["variant"] == "sdpa_cudnn":
            r.update(status="skipped", reason="CUDNN_ATTENTION refused: cudnn: head_dim > 256")
    v1, v2 = verdicts([Prediction("sdpa_cudnn", "kernels", 1), Prediction("nope", "kernels", 1)], doc)
    assert v1["outcome"] == "unknown" and "head_dim > 256" in v1["explanation"]
    assert v2["outcome"] == "unknown" and v2["explanation"] == "not in this run"
    # --strict fails on clear misses only: a prediction nothing here could measure does not flap CI
    assert strict_failure(annotate(doc, [Prediction("sdpa_cudnn", "kernels", 1)])) is None
    assert strict_failure(annotate(DOC, [Prediction("naive", "hidden_copy", True)])) is None
    assert strict_failure(annotate(DOC, [Prediction("naive", "hidden_copy", False)])) is not None


FILE = """
[[predict]]
variant = "sdpa_math"
kernels = 5
faster_than = { variant = "naive", by = 2.0 }
note = "math is a fused path, surely"

[[predict]]
variant = "sdpa_default"
backend = "flash"
"""


def test_file_format_and_round_trip():
    preds = parse_predictions(FILE, set(R))
    assert [(p.variant, p.kind) for p in preds] == [
        ("sdpa_math", "kernels"),
        ("sdpa_math", "faster_than"),
        ("sdpa_default", "backend"),
    ]
    assert preds[0].note == "math is a fused path, surely"
    again = parse_predictions(to_toml(preds), set(R))
    assert [(p.variant, p.kind, p.expected) for p in again] == [(p.variant, p.kind, p.expected) for p in preds]


@pytest.mark.parametrize(
    ("text", "msg"),
    [
        ("x = 1", "unknown top-level key"),
        ("[[predict]]\nkernels = 5", "needs variant"),
        ('[[predict]]\nvariant = "nope"\nkernels = 5', "unknown variant 'nope'"),
        ('[[predict]]\nvariant = "naive"\nkernal = 5', "unknown key 'kernal'"),
        ('[[predict]]\nvariant = "naive"\nkernels = 2.5', "integer"),
        ('[[predict]]\nvariant = "naive"\ngpu_us = 100', "range [lo, hi]"),
        ('[[predict]]\nvariant = "naive"\ngpu_us = [300, 100]', "lo > hi"),
        ('[[predict]]\nvariant = "naive"\nupcast = "yes"', "true or false"),
        ('[[predict]]\nvariant = "sdpa_default"\nbackend = "fast"', "expected one of"),
        ('[[predict]]\nvariant = "naive"\nfaster_than = { variant = "x", by = 2 }', "unknown variant 'x'"),
        ('[[predict]]\nvariant = "naive"\nfaster_than = { variant = "sdpa_math", by = 0 }', "positive"),
        ('[[predict]]\nvariant = "naive"', "nothing predicted"),
        ("[[predict", "not valid TOML"),
    ],
)
def test_file_errors_name_block_and_key(text, msg):
    with pytest.raises(PredictionError, match=msg.replace("[", r"\[").replace("]", r"\]")):
        parse_predictions(text, set(R))


def test_recommendation_ties_inside_the_noise():
    rec = recommend(DOC["results"])
    assert rec is not None and {rec.best, rec.runner_up} == {"sdpa_default", "sdpa_cudnn"}
    # sdpa_default ran cuDNN: the same kernel as sdpa_cudnn, so the two are one choice
    assert rec.within_noise is True and "same kernels" in rec.text and "flex_compiled" in rec.text


def test_recommendation_ties_same_kernels_even_outside_the_iqr():
    doc = copy.deepcopy(DOC)
    for r in doc["results"]:
        if r["variant"] in ("sdpa_default", "sdpa_cudnn"):  # make their quartiles disjoint
            us = r["gpu_time_us"] * (1.0 if r["variant"] == "sdpa_default" else 1.01)
            r["gpu_time_us"] = us
            r["gpu_time"].update(median_us=us, p25_us=us * 0.999, p75_us=us * 1.001)
    rec = recommend(doc["results"])
    assert rec is not None and rec.best == "sdpa_default" and rec.runner_up == "sdpa_cudnn"
    assert rec.within_noise is True and "same kernels" in rec.text


def test_recommendation_noise_between_different_kernels():
    doc = copy.deepcopy(DOC)
    doc["results"] = [r for r in doc["results"] if r["variant"] in ("sdpa_flash", "sdpa_efficient")]
    flash, eff = sorted(doc["results"], key=lambda r: r["variant"] != "sdpa_flash")
    eff["gpu_time_us"] = flash["gpu_time_us"] * 1.02
    eff["gpu_time"].update(
        median_us=eff["gpu_time_us"], p25_us=flash["gpu_time"]["p25_us"], p75_us=eff["gpu_time_us"] * 1.05
    )
    rec = recommend(doc["results"])
    assert rec is not None and rec.within_noise is True and "inside the noise" in rec.text


def test_recommendation_clear_margin_and_numerics_excluded():
    doc = copy.deepcopy(DOC)
    doc["results"] = [r for r in doc["results"] if r["variant"] in ("sdpa_flash", "sdpa_efficient", "sdpa_cudnn")]
    cud = next(r for r in doc["results"] if r["variant"] == "sdpa_cudnn")
    cud["numerics_ok"] = False
    rec = recommend(doc["results"])
    assert rec is not None and rec.best == "sdpa_flash" and rec.runner_up == "sdpa_efficient"
    assert rec.margin == pytest.approx(R["sdpa_efficient"]["gpu_time_us"] / R["sdpa_flash"]["gpu_time_us"])
    assert rec.within_noise is False and "noise" not in rec.text
    assert rec.excluded == ("sdpa_cudnn (numerics off)",)


def test_no_recommendation_across_unknown_cases():
    results = [dict(r, case=None) for r in DOC["results"]]
    assert recommend(results) is None


# ---- interactive questions -----------------------------------------------------------------


def test_questions_follow_device_dtype_and_variants():
    gpu = Case(4, 16, 2048, 64, device="cuda")
    qs = questions(gpu, ["naive", "sdpa_math", "sdpa_default", "sdpa_flash"])
    assert ("sdpa_math", "upcast") in {(q.variant, q.kind) for q in qs}
    assert ("sdpa_flash", "occupancy_pct") in {(q.variant, q.kind) for q in qs}
    cpu32 = Case(1, 8, 512, 64, dtype="fp32", device="cpu")
    qs = questions(cpu32, ["sdpa_math", "sdpa_default"])
    assert {(q.variant, q.kind) for q in qs} == {("sdpa_math", "kernels"), ("sdpa_default", "backend")}
    assert "flash or math" in next(q.prompt for q in qs if q.kind == "backend")


def test_ask_with_injected_input_reasks_skips_and_stops():
    qs = [
        Question("naive", "kernels", "k?", "count"),
        Question("naive", "hidden_copy", "copy?", "bool"),
        Question("sdpa_math", "slower_than", "ratio?", "ratio", "naive"),
        Question("sdpa_default", "backend", "backend?", "choice"),
        Question("sdpa_flash", "occupancy_pct", "occ?", "range"),
    ]
    answers = iter(["five", "5", "", "2..4", "cudnn"])
    printed: list[str] = []

    def fake_input(prompt: str) -> str:
        printed.append(prompt)
        try:
            return next(answers)
        except StopIteration:
            raise EOFError from None

    preds = ask(qs, fake_input, printed.append)
    assert [(p.variant, p.kind, p.expected) for p in preds] == [
        ("naive", "kernels", 5),
        ("sdpa_math", "slower_than", {"variant": "naive", "by": [2.0, 4.0]}),
        ("sdpa_default", "backend", "cudnn"),
    ]
    assert any("could not read 'five'" in line for line in printed)


@pytest.mark.parametrize(
    ("answer", "text", "expected"),
    [
        ("count", "4-8", [4, 8]),
        ("count", "20", 20),
        ("bool", "Yes", True),
        ("bool", "n", False),
        ("range", "10 to 20", [10.0, 20.0]),
        ("choice", "Math", "math"),
        ("ratio", "3", {"variant": "x", "by": 3.0}),
    ],
)
def test_parse_answer(answer, text, expected):
    assert parse_answer(Question("v", "k", "?", answer, "x"), text) == expected


@pytest.mark.parametrize(
    ("answer", "text"), [("count", "8-4"), ("bool", "maybe"), ("range", "12"), ("ratio", "0"), ("choice", "fast")]
)
def test_parse_answer_rejects(answer, text):
    with pytest.raises(ValueError):
        parse_answer(Question("v", "k", "?", answer, "x"), text)


def test_recommendation_warns_when_a_timing_is_noisy():
    doc = copy.deepcopy(DOC)
    doc["results"] = [r for r in doc["results"] if r["variant"] in ("sdpa_flash", "sdpa_efficient")]
    rec = recommend(doc["results"])
    assert rec is not None and "noisy" not in rec.text
    eff = next(r for r in doc["results"] if r["variant"] == "sdpa_efficient")
    eff["gpu_time"]["noisy"] = True
    rec = recommend(doc["results"])
    assert rec is not None and "sdpa_efficient timed noisy" in rec.text and "--budget" in rec.text
