"""``attnscope.api.run_request``: what ``attnscope run`` is asked, in plain values (``RunRequest``), checked before
any tensor in the library's words (each value named as the library calls it and listed in ``UsageError.fields``,
which the command line says as its flag), measured, then the document written to ``json`` and the page to
``html``; a file that cannot be written is said in ``unwritten``, never raised, and the measurement is kept."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from attnscope.api.campaign import Planned, Started
from attnscope.api.report import write_outputs
from attnscope.api.running import DEFAULT_BUDGET_S, RunRequest, check_run, default_budget, run_request
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
            "timeout_s needs a worker it can stop, and executor inline (given, or the default) runs the jobs in "
            "this process",
            "--timeout needs a worker it can stop, and --executor inline (given, or the default) runs the jobs in "
            "this process",
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


def test_the_device_kinds_default_budgets():
    assert default_budget("cpu") == 0.2 and default_budget("cuda") == default_budget("cuda:1") == 0.5


def test_all_alone_passes_and_a_timeout_is_named_as_the_library_calls_it():
    assert "naive" in check_run(_request(variants="all")).variants
    with pytest.raises(UsageError) as e:
        check_run(_request(executor="process", timeout_s=0.0))
    assert str(e.value) == "timeout_s: must be > 0, got 0" and e.value.fields == ("timeout_s",)


def test_a_decode_loop_on_a_serving_case_of_one_query_passes():
    checked = check_run(_request(case={**SERVING, "seq_q": 1}, steps=8, variants="paged_gather_sdpa"))
    assert checked.options.steps == 8


def test_the_requests_measuring_settings_become_the_jobs_options(tmp_path):
    from attnscope.execute.job import Options

    req = _request(flush_l2=True, trace_dir=str(tmp_path), measure_peak=True, timing_budget_s=0.05, bucket=64)
    want = Options(flush_l2=True, timing_budget_s=0.05, trace_dir=tmp_path, measure_peak=True, steps=0, bucket=64)
    assert check_run(req).options == want
    assert check_run(_request()).options == Options(timing_budget_s=0.2, measure_peak=False)


def test_an_html_where_a_kept_trace_would_go_is_refused_too(tmp_path):
    clash = str(tmp_path / "naive.json")
    with pytest.raises(UsageError) as e:
        check_run(_request(trace_dir=str(tmp_path), html=clash))
    assert as_flags(e.value).startswith(f"--html {clash} is where --trace-dir keeps the trace naive.json")


def test_a_case_only_a_named_opt_in_variant_could_run_is_refused_when_it_cannot_either():
    """flex_compiled is opt-in on a CPU: named, it counts among the variants that could run, and ten calls of this
    case (4·D·S² = 4·8·2^46 = 2.25e15 FLOP each) take 1,125 s even at a CPU's ceiling of 20 TFLOP/s, past the
    300 s limit, so the case is refused before any tensor."""
    slow = {"batch": 1, "heads": 1, "seq_q": 1 << 23, "head_dim": 8, "dtype": "fp32", "causal": False}
    with pytest.raises(UsageError, match="no variant can run this case here; flex_compiled, the lightest: too slow"):
        check_run(_request(case=slow, variants="flex_compiled"))


def test_the_guess_files_predictions_are_read_against_the_variants_run(tmp_path):
    from attnscope.api.guesses import PredictionError
    from attnscope.core.types import Prediction

    guess = tmp_path / "g.toml"
    guess.write_text('[[predict]]\nvariant = "naive"\nkernels = 4\n')
    checked = check_run(_request(guess=str(guess)))
    assert [(p.variant, p.kind, p.expected) for p in checked.predictions] == [("naive", "kernels", 4)]
    assert all(isinstance(p, Prediction) for p in checked.predictions)
    guess.write_text('[[predict]]\nvariant = "sdpa_math"\nkernels = 4\n')
    with pytest.raises(PredictionError, match="predictions name sdpa_math, which this run does not include"):
        check_run(_request(guess=str(guess)))


def _user_mask(tmp_path) -> str:
    f = tmp_path / "mine.py"
    f.write_text("def causal(b, h, q, k):\n    return q >= k\n")
    return f"{f}:causal"


def test_a_user_mask_is_measured_as_the_built_in_it_equals_unless_another_mask_was_stated(tmp_path):
    pytest.importorskip("torch")
    spec = _user_mask(tmp_path)
    checked = check_run(_request(case={**TINY, "mask_mod": spec}))
    assert checked.case.mask == "causal" and checked.user_mods["mask_mod"]["equivalent_builtin"] == "causal"
    with pytest.raises(UsageError, match="equals causal, not none, given as mask"):
        check_run(_request(case={**TINY, "mask_mod": spec, "causal": False}, mask_given=True))


def test_run_request_measures_says_its_progress_and_writes_the_json_and_the_page(tmp_path):
    pytest.importorskip("torch")
    pytest.importorskip("plotly")
    guess = tmp_path / "g.toml"
    guess.write_text('[[predict]]\nvariant = "naive"\nkernels = 1\n')  # naive is at least two matmuls: a miss
    events: list[object] = []
    req = _request(
        json=str(tmp_path / "r.json"), html=str(tmp_path / "r.html"), assets=str(tmp_path / "assets"),
        guess=str(guess), timing_budget_s=0.01,
    )  # fmt: skip
    doc = run_request(req, on_event=events.append, on_note=events.append)
    assert doc.unwritten == {}
    written = json.loads((tmp_path / "r.json").read_text())
    assert [r["variant"] for r in written["results"]] == ["naive"] and "partial" not in written
    assert written["results"][0]["status"] == doc["results"][0]["status"] == "ok"
    assert isinstance(written["results"][0]["insights"], list) and "recommendation" in written  # annotated
    assert [v["outcome"] for v in written["verdicts"]] == ["miss"]  # the guess file's prediction, judged
    page = (tmp_path / "r.html").read_text()
    assert "<html" in page[:2000].lower() and list((tmp_path / "assets").iterdir())  # plotly in the assets folder
    # the spinner is told the case before the first variant: only the API builds it
    assert events[0] == Planned(1, 0, 0, "B=1 H=1 S=16 D=8 fp32 causal on cpu")
    assert isinstance(events[1], Started) and events[1].variant == "naive"


def test_a_json_that_cannot_be_written_is_said_and_the_measurement_and_the_page_are_kept(tmp_path):
    pytest.importorskip("torch")
    pytest.importorskip("plotly")
    blocked = tmp_path / "a-file"
    blocked.write_text("not a folder")
    doc = run_request(_request(json=str(blocked / "r.json"), html=str(tmp_path / "kept.html"), timing_budget_s=0.01))
    assert set(doc.unwritten) == {"json"}
    assert doc.unwritten["json"].startswith(f"{blocked / 'r.json'}: not written: ")
    assert "variant(s) written before" not in doc.unwritten["json"]  # no row reached it
    assert [r["status"] for r in doc["results"]] == ["ok"]
    assert (tmp_path / "kept.html").exists()


def test_a_json_lost_at_the_end_says_how_many_rows_the_partial_one_holds(tmp_path, monkeypatch):
    """The document was rewritten after the variant (marked partial), then the whole one could not be written."""
    pytest.importorskip("torch")
    import attnscope.api.report as report

    monkeypatch.setattr(report, "write_outputs", lambda doc, **kw: {"json": "r.json: not written: full"})
    doc = run_request(_request(json=str(tmp_path / "r.json"), timing_budget_s=0.01))
    assert doc.unwritten == {
        "json": "r.json: not written: full; it holds the 1 variant(s) written before (marked partial)"
    }
    assert json.loads((tmp_path / "r.json").read_text())["partial"] is True


def test_write_outputs_tries_the_page_whatever_became_of_the_json(tmp_path):
    doc = json.loads((H200 / "run.json").read_text())
    (tmp_path / "f").write_text("")
    got = write_outputs(doc, json=str(tmp_path / "f" / "x.json"), html=str(tmp_path / "p.html"))
    assert list(got) == ["json"] and got["json"].startswith(f"{tmp_path / 'f' / 'x.json'}: not written: ")
    assert (tmp_path / "p.html").exists()
    got = write_outputs(doc, json=str(tmp_path / "x.json"), html=str(tmp_path / "f" / "p.html"))
    assert list(got) == ["html"] and json.loads((tmp_path / "x.json").read_text()) == doc
    assert write_outputs(doc) == {}


def test_a_run_with_the_users_mask_says_in_its_document_what_it_was_checked_equal_to(tmp_path):
    pytest.importorskip("torch")
    doc = run_request(_request(case={**TINY, "mask_mod": _user_mask(tmp_path)}, timing_budget_s=0.01))
    assert doc["mask_mod"]["equivalent_builtin"] == "causal"
    assert [r["variant"] for r in doc["results"]] == ["naive", "flex_user"]


def test_deep_mode_where_nsight_compute_cannot_run_is_a_note_and_the_rows_stay(tmp_path):
    pytest.importorskip("torch")
    notes: list[str] = []
    doc = run_request(_request(ncu=True, timing_budget_s=0.01), on_note=notes.append)
    assert len(notes) == 1 and notes[0].startswith("Nsight Compute: ")  # the library's words: no flag was typed
    assert "--" not in notes[0]
    assert notes[0].endswith("; the run's results are complete without it")
    assert [(r["status"], r["ncu"]["status"]) for r in doc["results"]] == [("ok", "unavailable")]


def test_the_answers_given_to_run_checked_are_judged_instead_of_the_guess_files(tmp_path):
    """attnscope guess: the predictions are the answers typed between the checks and the measurement."""
    pytest.importorskip("torch")
    from attnscope.api.running import run_checked
    from attnscope.core.types import Prediction

    guess = tmp_path / "g.toml"
    guess.write_text('[[predict]]\nvariant = "naive"\nhidden_copy = true\n')
    checked = check_run(_request(guess=str(guess), timing_budget_s=0.01))
    doc = run_checked(checked, predictions=[Prediction("naive", "kernels", 1)])
    assert [v["prediction"]["kind"] for v in doc["verdicts"]] == ["kernels"]


def test_a_guess_naming_an_unknown_variant_is_refused_as_unknown(tmp_path):
    from attnscope.api.guesses import PredictionError

    guess = tmp_path / "g.toml"
    guess.write_text('[[predict]]\nvariant = "nonesuch"\nkernels = 4\n')
    with pytest.raises(PredictionError, match="unknown variant 'nonesuch'; known: "):
        check_run(_request(guess=str(guess)))


def test_the_traces_not_kept_are_counted_from_the_rows_notes():
    """Two rows whose note says their trace could not be moved into trace_dir, one row with another note."""
    from attnscope.api.report import traces_not_kept

    rows = [
        {"variant": "a", "notes": ["trace not kept in out: no space left on device (ENOSPC)"]},
        {"variant": "b", "run_notes": ["trace not kept in out: no space left on device (ENOSPC)", "other"]},
        {"variant": "c", "notes": ["a note that is not about the trace"]},
    ]
    want = "2 trace(s) not kept in out: no space left on device (ENOSPC)"
    assert traces_not_kept(rows, "out") == {"trace_dir": want}
    assert traces_not_kept(rows[2:], "out") == {}
    # the first such note's cause, whole (a cause may hold ': ' itself); a note without a cause said as it is
    two = [
        {"notes": ["trace not kept in out: cannot move out/a.json: no space left on device (ENOSPC)"]},
        {"notes": ["trace not kept in out: read-only file system (EROFS)"]},
    ]
    got = traces_not_kept(two, "out")["trace_dir"]
    assert got == "2 trace(s) not kept in out: cannot move out/a.json: no space left on device (ENOSPC)"
    assert traces_not_kept([{"notes": ["trace not kept"]}], "out") == {
        "trace_dir": "1 trace(s) not kept in out: trace not kept"
    }


def test_the_checked_variants_are_those_of_the_cases_kind_as_measured(tmp_path):
    """Without variants, a dense case's checked variants are the dense default set and a serving case's the
    serving one: `attnscope guess` prints them as the variants the run measures, and a guess file is checked
    against them. Read from each variant's own `serving` flag."""
    from attnscope.variants import REGISTRY

    dense = check_run(_request(variants=None)).variants
    serving = check_run(_request(variants=None, case=SERVING)).variants
    assert "naive" in dense and not any(REGISTRY[n].serving for n in dense)
    assert "paged_gather_sdpa" in serving and all(REGISTRY[n].serving for n in serving)
    guess = tmp_path / "g.toml"
    guess.write_text('[[predict]]\nvariant = "paged_gather_sdpa"\nkernels = 3\n')
    with pytest.raises(ValueError, match="predictions name paged_gather_sdpa, which this run does not include"):
        check_run(_request(variants=None, guess=str(guess)))


def test_an_l2_flush_asked_on_a_cpu_is_said_once_in_the_document_and_its_notes(tmp_path):
    pytest.importorskip("torch")
    from attnscope.report.text.table import footnotes

    doc = run_request(_request(flush_l2=True, timing_budget_s=0.01, json=str(tmp_path / "r.json")))
    assert doc["results"][0]["status"] == "ok"
    (note,) = doc["notes"]  # once for the run, not once per variant
    assert note.startswith("flush_l2 (--flush-l2) asked") and "on a CPU it has no effect" in note
    assert json.loads((tmp_path / "r.json").read_text())["notes"] == [note]  # in the file a later reader opens
    assert footnotes(dict(doc)).count(note) == 1  # the terminal's and the page's notes under the table
    assert all(note not in (r.get("run_notes") or []) for r in doc["results"])
    assert "notes" not in run_request(_request(timing_budget_s=0.01))  # nothing asked, nothing said
