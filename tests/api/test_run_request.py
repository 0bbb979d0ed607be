"""``attnscope.api.run_request``: what ``attnscope run`` is asked, in plain values (``RunRequest``), checked before
any tensor in the library's words (each value named as the library calls it and listed in ``UsageError.fields``,
which the command line says as its flag), measured, then the document written to ``json`` and the page to
``html``; a file that cannot be written is said in ``unwritten``, never raised, and the measurement is kept."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from attnscope.api.report import write_outputs
from attnscope.api.running import DEFAULT_BUDGET_S, RunRequest, check_run, run_request
from attnscope.cli.errors import as_flags
from attnscope.core.arguments import UsageError

TINY = {"batch": 1, "heads": 1, "seq_q": 16, "head_dim": 8, "dtype": "fp32"}
SERVING = {**TINY, "batch": 2, "seq_q": 4, "kv_lens": "list:16,8", "page_size": 4}
H200 = Path(__file__).resolve().parents[1] / "data" / "h200"


def _request(**kw: object) -> RunRequest:
    base: dict[str, object] = {"case": TINY, "device": "cpu", "variants": "naive", "measure_peak": False}
    return RunRequest(**{**base, **kw})  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("kw", "library", "command_line", "fields"),
    [
        ({"variants": "all,naive"}, "variants: 'all' stands alone", "--variants: 'all' stands alone", {"variants"}),
        (
            {"steps": 8},
            "steps grows a serving cache: give page_size and/or kv_lens",
            "--steps grows a serving cache: give --page-size and/or --kv-lens",
            {"steps", "page_size", "kv_lens"},
        ),
        (
            {"steps": 8, "case": SERVING},
            "steps decodes one new token per sequence per step: give seq_q 1, not 4",
            "--steps decodes one new token per sequence per step: give --seq 1, not 4",
            {"steps", "seq_q"},
        ),
        (
            {"timeout_s": 5.0},
            "timeout_s needs a worker it can stop, and executor inline runs the jobs in this process",
            "--timeout needs a worker it can stop, and --executor inline runs the jobs in this process",
            {"timeout_s", "executor"},
        ),
        (
            {"device": "tpu"},
            "device 'tpu': attnscope measures on cpu",
            "--device 'tpu': attnscope measures",
            {"device"},
        ),
    ],
    ids=["all-alone", "steps-dense", "steps-seq", "timeout-inline", "device"],
)
def test_a_request_is_refused_in_the_librarys_words_which_the_command_line_says_as_flags(
    kw, library, command_line, fields
):
    with pytest.raises(UsageError) as e:
        check_run(_request(**kw))
    assert str(e.value).startswith(library), str(e.value)
    assert set(e.value.fields) == fields
    assert as_flags(e.value).startswith(command_line), as_flags(e.value)


def test_an_output_where_a_kept_trace_would_go_is_refused_naming_both(tmp_path):
    """trace_dir keeps naive's trace as naive.json (the variant's name): a json of that path would replace it."""
    clash = str(tmp_path / "naive.json")
    with pytest.raises(UsageError) as e:
        check_run(_request(trace_dir=str(tmp_path), json=clash))
    assert str(e.value).startswith(f"json {clash} is where trace_dir keeps the trace naive.json")
    assert as_flags(e.value).startswith(f"--json {clash} is where --trace-dir keeps the trace naive.json")
    check_run(_request(trace_dir=str(tmp_path), json=str(tmp_path / "study.json")))  # another name passes


def test_the_budget_is_the_devices_default_unless_given():
    assert check_run(_request()).options.timing_budget_s == DEFAULT_BUDGET_S["cpu"] == 0.2
    assert check_run(_request(timing_budget_s=0.05)).options.timing_budget_s == 0.05
    with pytest.raises(UsageError, match="timing_budget_s"):
        check_run(_request(timing_budget_s=0.0))


def test_a_checked_request_holds_the_case_its_fields_ask_for_on_the_device():
    checked = check_run(_request(case={**TINY, "seq_q": 32, "causal": False}, variants=None))
    c = checked.case
    assert (c.batch, c.heads, c.seq_q, c.head_dim, c.dtype, c.causal, c.device) == (1, 1, 32, 8, "fp32", False, "cpu")
    assert "naive" in checked.variants and checked.predictions is None


@pytest.fixture(scope="module")
def measured(tmp_path_factory):
    pytest.importorskip("torch")
    pytest.importorskip("plotly")
    d = tmp_path_factory.mktemp("req")
    blocked = d / "a-file"
    blocked.write_text("not a folder")
    events: list[object] = []
    ok = run_request(
        _request(json=str(d / "r.json"), html=str(d / "r.html"), timing_budget_s=0.01), on_event=events.append
    )
    lost = run_request(_request(json=str(blocked / "r.json"), html=str(d / "kept.html"), timing_budget_s=0.01))
    return d, ok, lost, events


def test_the_document_goes_to_json_and_the_page_to_html(measured):
    d, doc, _, _ = measured
    assert doc.unwritten == {}
    written = json.loads((d / "r.json").read_text())
    assert [r["variant"] for r in written["results"]] == ["naive"] and "partial" not in written
    assert written["results"][0]["status"] == doc["results"][0]["status"] == "ok"
    assert "<html" in (d / "r.html").read_text()[:2000].lower()


def test_a_json_that_cannot_be_written_is_said_and_the_measurement_and_the_page_are_kept(measured):
    d, _, doc, _ = measured
    assert set(doc.unwritten) == {"json"}
    assert doc.unwritten["json"].startswith(f"{d / 'a-file' / 'r.json'}: not written: ")
    assert [r["status"] for r in doc["results"]] == ["ok"]
    assert (d / "kept.html").exists()


def test_the_progress_is_told_the_case_before_the_first_variant(measured):
    """The command line's spinner names the case, which only the API builds: the Planned event carries its label."""
    from attnscope.api.campaign import Planned, Started

    events = measured[3]
    assert events[0] == Planned(1, 0, 0, "B=1 H=1 S=16 D=8 fp32 causal on cpu")
    assert isinstance(events[1], Started) and events[1].variant == "naive"


def test_write_outputs_tries_the_page_whatever_became_of_the_json(tmp_path):
    doc = json.loads((H200 / "run.json").read_text())
    (tmp_path / "f").write_text("")
    got = write_outputs(doc, json=str(tmp_path / "f" / "x.json"), html=str(tmp_path / "p.html"))
    assert list(got) == ["json"] and got["json"].startswith(f"{tmp_path / 'f' / 'x.json'}: not written: ")
    assert (tmp_path / "p.html").exists()
    got = write_outputs(doc, json=str(tmp_path / "x.json"), html=str(tmp_path / "f" / "p.html"))
    assert list(got) == ["html"] and json.loads((tmp_path / "x.json").read_text()) == doc
    assert write_outputs(doc) == {}
