"""Reading tour answers, and the pieces of a verdict that need no measurement."""

from __future__ import annotations

import pytest

from attnscope.core.answers import AnswerError, read_answer
from attnscope.tour.judge import combine, predictions
from attnscope.tour.steps import STEPS, case_for

Q = {q.id: q for s in STEPS for q in s.questions}
ITEMS = ("naive_inplace", "sdpa_math", "sdpa_flash")


@pytest.mark.parametrize(
    ("qid", "text", "want"),
    [
        ("naive_kernels", "5", 5),
        ("naive_kernels", "4-6", [4, 6]),
        ("naive_kernels", "4 to 6", [4, 6]),
        ("naive_copy", "Yes", True),
        ("naive_copy", "n", False),
        ("inplace_speedup", "1.25", [1.0, 1.5625]),
        ("inplace_speedup", "1.05+", 1.05),
        ("inplace_speedup", ">=2", 2.0),
        ("inplace_speedup", "1.25", [1.0, 1.5625]),
        ("inplace_speedup", "0.5-2", [0.5, 2.0]),
        ("flash_occupancy", "12", [2.0, 22.0]),
        ("flash_occupancy", "5", [0.0, 15.0]),
        ("default_backend", "cud", "cudnn"),
        ("occupancy_design", "design", "design"),
    ],
)
def test_read_answer(qid: str, text: str, want: object) -> None:
    assert read_answer(Q[qid], text) == want


@pytest.mark.parametrize(
    ("qid", "text"),
    [
        ("naive_kernels", "five"),
        ("naive_kernels", "6-4"),
        ("naive_copy", "maybe"),
        ("inplace_speedup", "0"),
        ("inplace_speedup", "-1"),
        ("inplace_speedup", "nan"),
        ("default_backend", "xformers"),
        ("default_backend", ""),
    ],
)
def test_bad_answers_say_why(qid: str, text: str) -> None:
    with pytest.raises(AnswerError):
        read_answer(Q[qid], text)


def test_ranking_by_names_or_numbers_and_every_item_once() -> None:
    q = Q["bwd_ranking"]
    assert read_answer(q, "3,1,2", ITEMS) == ["sdpa_flash", "naive_inplace", "sdpa_math"]
    assert read_answer(q, "sdpa_f > naive > sdpa_m", ITEMS) == ["sdpa_flash", "naive_inplace", "sdpa_math"]
    for bad in ("1,2", "1,1,2", "1,2,4"):
        with pytest.raises(AnswerError):
            read_answer(q, bad, ITEMS)


def test_ranking_and_winner_become_faster_than_pairs() -> None:
    pairs = predictions(Q["bwd_ranking"], ["a", "b", "c"], ("a", "b", "c"))
    assert [(p.variant, p.expected["variant"]) for p in pairs] == [("a", "b"), ("a", "c"), ("b", "c")]
    assert all(p.kind == "faster_than" and p.expected["by"] == 1.0 for p in pairs)
    win = predictions(Q["sliding_winner"], "b", ("a", "b", "c"))
    assert [(p.variant, p.expected["variant"]) for p in win] == [("b", "a"), ("b", "c")]
    (ratio,) = predictions(Q["math_ratio"], [2.0, 4.0], ())
    assert (ratio.variant, ratio.kind, ratio.expected) == (
        "sdpa_math",
        "slower_than",
        {"variant": "naive", "by": [2.0, 4.0]},
    )


def test_combine_pairs() -> None:
    assert combine(["hit", "hit"]) == "hit"
    assert combine(["hit", "close"]) == "close"
    assert combine(["close", "miss", "hit"]) == "miss"
    assert combine(["unknown", "unknown"]) == "unknown"
    assert combine(["unknown", "hit"]) == "close"


def test_cases_are_valid_and_the_gpu_size_is_the_study() -> None:
    for s in STEPS:
        for size in ("gpu", "cpu", "tiny"):
            case_for(s.case, size, "cpu")
    c = case_for("prefill", "gpu", "cuda")
    assert (c.batch, c.heads, c.seq_q, c.head_dim, c.dtype, c.causal) == (4, 16, 2048, 64, "bf16", True)
    d = case_for("decode", "gpu", "cuda")
    assert (d.batch, d.heads, d.kv_heads, d.seq_q, d.seq_kv, d.head_dim) == (8, 32, 8, 1, 8192, 128)


def test_the_tour_assesses_its_host_from_the_load_and_every_variants_host_time(tmp_path) -> None:
    """Load 3.0 on 2 cores is 1.5 per core, above 1.25: loaded.  Two timings, one with IQR/median
    (300 − 100)/200 = 1.0 > 0.5 and one with (105 − 95)/100 = 0.1: one of two is wide, half, so 'spread' too."""
    from attnscope.core.host_line import host_line
    from attnscope.tour.session import Session

    s = Session("cpu", "tiny", lambda *a: ("", ""), tmp_path / "t.json", lambda m: None)
    s._load = (3.0, 2)
    s._cache = {
        ("naive", "k"): {"cpu_time": {"p25_us": 100.0, "median_us": 200.0, "p75_us": 300.0}},
        ("sdpa_math", "k"): {"cpu_time": {"p25_us": 95.0, "median_us": 100.0, "p75_us": 105.0}},
        ("flex", "k"): {"status": "skipped"},
    }
    h = s.host()
    assert h["loaded"] is True and h["signs"] == ["load", "spread"]
    assert "load average 3.00 on 2 cores (1.50 per core, above 1.25)" in h["why"]
    assert "1 of 2 timings spread wide" in h["why"] and "naive k: 100%" in h["why"]
    assert host_line(h).startswith("host loaded: load average 3.00")
    s._load = (2.0, 2)  # 1.0 per core, and the one timing left is tight: no sign
    s._cache.pop(("naive", "k"))
    assert s.host()["loaded"] is False
