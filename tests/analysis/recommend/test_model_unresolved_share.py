"""A point whose quartiles overlap across more than 1.5× in median: the model's recommendation calls it unresolved,
and the share insight on each row reads the same quartiles the same way (never "within the noise", never a
saving).  The timings are typed in: sdpa median 1,000 µs (quartiles 900-3,100, a disturbed run), eager 3,000 µs
(2,000-3,200); the quartiles overlap (3,100 ≥ 2,000 and 3,200 ≥ 900) and 3,000 / 1,000 = 3.0 > 1.5."""

from __future__ import annotations

from attnscope.analysis.recommend.model_points import annotate_rows
from attnscope.analysis.rules.model_step import Step, share
from tests.analysis.recommend.model_rows import row as _row
from tests.analysis.recommend.model_rows import timing as _timing

QUIET = "measure again on a quiet machine"


def _share(r: dict) -> dict:
    (s,) = [i for i in r["insights"] if i["id"] == "attention_share"]
    return s


def test_the_share_and_the_recommendation_agree_on_an_unresolved_point() -> None:
    sdpa = _row("sdpa", _timing(1_000, 900, 3_100))
    eager = _row("eager", _timing(3_000, 2_000, 3_200))
    recs = annotate_rows([eager, sdpa])
    rec = recs["train"]
    assert rec["unresolved"] is True and "3.0× slower" in rec["text"] and rec["text"].startswith("unresolved: ")
    slow = _share(eager)
    assert "within the noise" not in slow["advice"] and "saves" not in slow["advice"]
    assert slow["advice"] == (
        "unresolved against sdpa: their interquartile ranges overlap although eager's median is 3.0× slower "
        f"(over 1.5×): the timings were disturbed, so they are neither tied nor told apart; {QUIET}"
    )
    assert slow["evidence"]["median_ratio"] == 3.0
    fast = _share(sdpa)  # the fastest row: fastest by median, but the point names no best
    assert fast["advice"] == (
        "the fastest implementation measured for train; but unresolved: eager's interquartile range overlaps this "
        "one although its median is 3.0× slower (over 1.5×): the timings were disturbed, so no implementation is "
        f"named best; {QUIET}"
    )
    assert fast["evidence"]["unresolved_with"] == "eager" and fast["evidence"]["median_ratio"] == 3.0


def test_a_tie_within_one_and_a_half_times_is_still_within_the_noise() -> None:
    """1,400 / 1,000 = 1.4 ≤ 1.5 with overlapping quartiles: a tie, as the recommendation says."""
    sdpa = _row("sdpa", _timing(1_000, 900, 1_500))
    eager = _row("eager", _timing(1_400, 1_300, 1_600))
    rec = annotate_rows([eager, sdpa])["train"]
    assert rec["unresolved"] is False and rec["tied"] == ["eager"]
    assert _share(eager)["advice"] == "sdpa is within the noise of it for train (interquartile ranges overlap)"
    assert _share(sdpa)["advice"] == "the fastest implementation measured for train"


def test_quartiles_apart_at_three_times_are_a_saving_not_unresolved() -> None:
    """No overlap (sdpa's p75 1,100 < eager's p25 2,900): the saving is read, 3,000 - 1,000 = 2,000 µs."""
    sdpa = _row("sdpa", _timing(1_000, 900, 1_100))
    eager = _row("eager", _timing(3_000, 2_900, 3_100))
    s = share(eager, Step(others=[sdpa], best=sdpa))
    assert s["advice"].startswith("switching eager → sdpa saves 2.00 ms per step") and s["severity"] == "warning"


def test_the_printed_model_page_says_unresolved_and_no_tie() -> None:
    """What `attnscope model` prints for the point: the recommendation and each row's advice, none of them a tie."""
    import io

    from attnscope.report.text.model import render
    from attnscope.report.text.terminal import console

    rows = [_row("eager", _timing(3_000, 2_000, 3_200)), _row("sdpa", _timing(1_000, 900, 3_100))]
    recs = annotate_rows(rows)
    for r in rows:  # what the page's footnote reads of the split; the rows' rest of the step: none (all attention)
        r["breakdown"]["method"] = "profiled"
        r["rest"] = {"time_us": 0.0, "parts": {}}
    out = io.StringIO()
    doc = {"case": {}, "results": rows, "recommendations": recs}
    render(doc, console(width=200, file=out, color_system=None), title="attnscope model")
    text = out.getvalue()
    assert "within the noise" not in text
    assert text.count("unresolved") >= 3, text  # the recommendation and both rows' advice
