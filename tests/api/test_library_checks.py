"""The library as careful as the command line: what ``attnscope run`` and ``sweep`` refuse before any work, the
API functions refuse too, with the same one line as an exception (in the library's words, never a ``--flag``).
And a crashed row is measured again by a resume, the new row taking its place."""

from __future__ import annotations

import json

import pytest

from attnscope.core.arguments import UsageError
from attnscope.core.types import Case, Result

torch = pytest.importorskip("torch")
needs_no_cuda = pytest.mark.skipif(torch.cuda.is_available(), reason="checks the refusal where no GPU is")


def _one_line_without_flags(e: BaseException) -> None:
    assert "\n" not in str(e) and "--" not in str(e), str(e)


@needs_no_cuda
def test_a_gpu_sweep_without_a_gpu_is_refused_up_front(tmp_path):
    """It once gave permanent `crashed` rows: every job's worker failed on the device."""
    from attnscope.api import sweep
    from attnscope.core.cases import grid

    out = tmp_path / "s.jsonl"
    cases = [Case(1, 2, 16, 8, "fp32", device="cuda")]
    with pytest.raises(UsageError) as e:
        sweep(cases, "naive", out=out, executor="inline")
    assert "case.device cuda" in str(e.value) and "no CUDA GPU" in str(e.value)
    _one_line_without_flags(e.value)
    assert not out.exists() and not (tmp_path / "s.jsonl.settings.json").exists()
    from attnscope.core.cases import Axes

    with pytest.raises(UsageError):  # the grid helper's cases, as the repro built them
        sweep(grid(Axes(), "cuda"), out=out)


@needs_no_cuda
def test_a_gpu_run_without_a_gpu_is_refused_up_front():
    from attnscope.api import run

    with pytest.raises(UsageError) as e:
        run(Case(1, 2, 16, 8, "fp32", device="cuda"), "naive")
    _one_line_without_flags(e.value)


def test_a_case_that_cannot_fit_is_refused_by_run_as_by_the_command_line():
    """B·H·S·S scores of 2^20·2^14·2^24·2^24 entries: no memory holds them (the CLI refuses the same case)."""
    from attnscope.api import run

    with pytest.raises(UsageError) as e:
        run(Case(1 << 20, 1 << 14, 1 << 24, 64, "fp32", mask="none"), "naive")
    _one_line_without_flags(e.value)


@pytest.mark.parametrize(
    ("kw", "needle"),
    [
        ({"executor": "inline", "timeout_s": 5.0}, "timeout_s needs a worker"),
        ({"executor": "thread"}, "executor 'thread'"),
        ({"workers": 0}, "workers"),
        ({"workers": 2.5}, "workers"),
        ({"timeout_s": float("inf")}, "timeout_s"),
        ({"timing_budget_s": float("nan")}, "timing_budget_s"),
    ],
)
def test_sweep_refuses_what_the_command_line_refuses(tmp_path, kw, needle):
    from attnscope.api import sweep

    with pytest.raises(UsageError) as e:
        sweep([Case(1, 2, 16, 8, "fp32")], "naive", out=tmp_path / "s.jsonl", **kw)
    assert needle in str(e.value)
    _one_line_without_flags(e.value)
    assert not (tmp_path / "s.jsonl").exists()


def _row(status: str, case: Case) -> dict:
    from attnscope.document.schema import result_to_dict

    return result_to_dict(Result(variant="naive", case=case, status=status, reason=f"a {status} row written here"))


@pytest.mark.slow
def test_a_resume_measures_a_crashed_row_again_and_keeps_a_timeout(tmp_path):
    from attnscope.api import sweep
    from attnscope.document.load import result_rows
    from attnscope.execute.store import Store

    out = tmp_path / "s.jsonl"
    crashed, hung = Case(1, 2, 16, 8, "fp32"), Case(1, 2, 32, 8, "fp32")
    out.write_text(json.dumps(_row("crashed", crashed)) + "\n" + json.dumps(_row("timeout", hung)) + "\n")
    new = sweep([crashed, hung], "naive", out=out, resume=True, executor="inline", timing_budget_s=0.01)
    assert [(r.case, r.status) for r in new] == [(crashed, "ok")]  # the timeout row stays done
    assert len(out.read_text().splitlines()) == 3  # append-only: the crashed line is still in the file
    rows = Store(out).rows()
    assert sorted((r["case"]["seq_q"], r["status"]) for r in rows) == [(16, "ok"), (32, "timeout")]
    read, _ = result_rows([out])  # what recommend and report read: the same two rows
    assert sorted((r["case"]["seq_q"], r["status"]) for r in read) == [(16, "ok"), (32, "timeout")]
    # and a second resume has nothing left to do
    assert sweep([crashed, hung], "naive", out=out, resume=True, executor="inline", timing_budget_s=0.01) == []


@pytest.mark.slow
def test_a_resume_with_other_settings_is_refused_unless_forced(tmp_path):
    from attnscope.api import sweep

    out = tmp_path / "s.jsonl"
    case = Case(1, 2, 16, 8, "fp32")
    sweep([case], "naive", out=out, executor="inline", timing_budget_s=0.01, measure_peak=False)
    recorded = json.loads((tmp_path / "s.jsonl.settings.json").read_text())
    assert recorded["budget_s"] == 0.01
    with pytest.raises(UsageError) as e:
        sweep([case], "naive,sdpa_math", out=out, resume=True, executor="inline", timing_budget_s=0.02)
    assert "timing_budget_s 0.01 → 0.02" in str(e.value)
    _one_line_without_flags(e.value)
    rows = sweep([case], "naive,sdpa_math", out=out, resume=True, executor="inline", timing_budget_s=0.02, force=True)
    assert [r.variant for r in rows] == ["sdpa_math"]
