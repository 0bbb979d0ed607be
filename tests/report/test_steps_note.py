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


def test_families_note_says_why_they_count_more_than_the_attention_row():
    """The Llama training trace: the cuDNN family holds 640 GPU events (32,739.4 µs), the attention row 480
    (32,615.3 µs): 160 memsets ran inside the attention ops (160 = 640 − 480, read off the two tables)."""
    from attnscope.report.text.summary import families_note

    s = {
        "attention_families": [{"family": "cudnn", "num_kernels": 640, "time_us": 32739.369}],
        "categories": [{"category": "attention", "num_kernels": 480, "time_us": 32615.3}],
    }
    assert families_note(s) == (
        "the families count every GPU event launched inside their attention ops: 640, 32,739.4 µs, against the "
        "category table's attention row (480, 32,615.3 µs): the other 160 ran inside those ops and are counted "
        "there under their own category"
    )
    s["attention_families"][0]["num_kernels"] = 480
    assert families_note(s) is None


def test_the_page_says_it_under_the_families_too(tmp_path):
    """The Llama trace's page: the same note under 'Attention by family'."""
    from attnscope.api import analyze_traces
    from attnscope.report.html.page import render_html
    from tests.rawtrace import DATA

    doc, errors = analyze_traces([str(DATA / "llama_train_sdpa.json.gz")], jobs=1)
    assert not errors
    html = render_html([doc])
    at = html.index("Attention by family")
    assert "the other 160 ran inside those ops" in html[at : html.index("Top kernels and the ops", at)]
