"""The note under analyze's steps table says what its %spec column divides by."""

from __future__ import annotations

from attnscope.report.text.summary import steps_note

SPEC = "NVIDIA H100 datasheet, SXM column (989 TFLOP/s dense BF16; 3.35 TB/s)"


def _steps(*rooflines: dict) -> dict:
    steps = [{"roofline": r} for r in rooflines]
    return {"by_kind": {"decode": len(rooflines)}, "outside_steps_us": 16.9, "steps": steps}


def test_the_spec_bandwidth_is_named_where_a_step_has_a_percent_of_it():
    """H100 decode replay: 2.666 TB/s read as 79.6% (2.666 / 3.35 = 0.796): the note names the 3.35 TB/s."""
    note = steps_note(_steps({"tbps": 2.666, "pct_bandwidth_spec": 79.6, "spec_source": SPEC}, {}))
    assert note.endswith(f"; %spec: TB/s over the device's spec memory bandwidth ({SPEC})")


def test_no_percent_no_spec_words():
    assert "%spec" not in steps_note(_steps({"tbps": None, "pct_bandwidth_spec": None}, {}))
