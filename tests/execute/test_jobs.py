"""Jobs, the worker and the executors on CPU: rows for every failure, workers reused and replaced."""

from __future__ import annotations

import json

import pytest

torch = pytest.importorskip("torch")

from attnscope.core.types import Case, Fingerprint, Result  # noqa: E402
from attnscope.document.schema import result_from_dict, result_to_dict, row_bytes  # noqa: E402
from attnscope.execute import worker  # noqa: E402
from attnscope.execute.executors import make_executor, parse_devices  # noqa: E402
from attnscope.execute.job import Options, job_key  # noqa: E402
from attnscope.execute.worker import AttentionJob  # noqa: E402
from tests.inline import run  # noqa: E402

TINY = Case(batch=1, heads=2, seq_q=64, head_dim=16, dtype="fp32", causal=True, device="cpu")
FAST = Options(timing_budget_s=0.02, measure_peak=False)


def test_row_round_trips_and_notes_never_overwrite_each_other():
    notes = ("from the trace",)
    fp = Fingerprint((), 0, 0, 0, (), (), False, (), None, "cpu", None, None, None, 1.0, None, notes=notes)
    r = Result(
        "naive", TINY, "ok", fingerprint=fp, notes=("from the run",), extra={"notes": "a plugin's", "status": "x"}
    )
    row = json.loads(row_bytes(result_to_dict(r)))
    assert row["notes"] == ["from the trace"]
    assert row["run_notes"] == ["from the run"]
    assert row["status"] == "ok" and row["extra"] == {"notes": "a plugin's", "status": "x"}
    assert result_from_dict(row) == r


def test_real_result_round_trips_through_a_json_line():
    rep = run(TINY, ["naive", "sdpa_flash"], FAST)
    for r in rep.results:
        assert r.status == "ok", r.reason
        assert r.family and r.env is not None and r.cost_s and r.cost_s["timing"] > 0
        assert result_from_dict(json.loads(row_bytes(result_to_dict(r)))) == r
    assert [r.backend for r in rep.results] == [None, "flash"]


def test_fwd_bwd_checks_gradients_against_fp64_and_counts_3_5x_flops(test_variants):
    case = Case(batch=1, heads=2, seq_q=64, head_dim=16, dtype="fp32", causal=True, device="cpu", mode="fwd_bwd")
    rows = {r.variant: r for r in run(case, ["naive", "sdpa_math", "sdpa_flash", "t_bad_grad"], FAST).results}
    for name in ("naive", "sdpa_math", "sdpa_flash"):
        r = rows[name]
        assert r.status == "ok", r.reason
        assert set(r.rel_errors or {}) == {"out", "dq", "dk", "dv"}
        assert r.numerics_ok, r.rel_errors
        # causal keeps S·(S+1)/2 scores per (b, h), the diagonal included: 1·2·64·65/2 = 4160;
        # forward 4·D per kept score = 4·16·4160 = 266240; fwd+bwd = 3.5× that
        assert r.flops == 931840
    names = {k.name for k in rows["sdpa_flash"].fingerprint.kernels}
    assert any(n.endswith("_backward") for n in names), names  # the backward is in the fingerprint
    bad = rows["t_bad_grad"]
    assert bad.rel_errors["out"] < 1e-6 and bad.rel_errors["dq"] == pytest.approx(0.1, rel=1e-3)
    assert bad.rel_errors["dk"] < 1e-6 and not bad.numerics_ok


def test_inline_oom_is_a_row_and_frees_the_cached_workload(test_variants):
    ok = worker.measure_one(AttentionJob(TINY, "naive", FAST))
    assert ok.status == "ok" and worker._workload  # the case's inputs are cached after a job
    oom = worker.measure_one(AttentionJob(TINY, "t_oom", FAST))
    assert oom.status == "oom" and "64.00 GiB" in oom.reason
    assert not worker._workload  # dropped: the next case gets its memory


def test_job_key_ignores_field_order_and_separates_modes():
    a = job_key("naive", {"batch": 1, "heads": 2, "mode": "fwd"})
    assert a == job_key("naive", {"heads": 2, "batch": 1})  # no mode written: fwd
    assert a != job_key("naive", {"batch": 1, "heads": 2, "mode": "fwd_bwd"})


@pytest.mark.parametrize(
    "spec,want", [(None, None), ("cpu", None), ("cuda:0,cuda:1", ["0", "1"]), ("cuda", ["0"]), ("3", ["3"])]
)
def test_parse_devices(spec, want):
    assert parse_devices(spec) == want


@pytest.mark.parametrize(
    ("spec", "said"),
    [
        ("gpu0", "devices 'gpu0': attnscope measures on cpu or cuda[:N]"),
        ("cuda:0,cuda:0", "devices 'cuda:0,cuda:0': names a GPU twice"),
        ("0,cuda:0", "devices '0,cuda:0': names a GPU twice"),  # a bare index is cuda:N
        ("cuda:x", "devices 'cuda:x': attnscope measures on cpu or cuda[:N]"),
        ("cudaXYZ", "devices 'cudaXYZ': attnscope measures on cpu or cuda[:N]"),
        ("cuda:0,cpu", "devices 'cuda:0,cpu': takes cuda:N[,cuda:M...] or all, got 'cpu'"),
    ],
)
def test_parse_devices_refuses_nonsense_in_the_one_device_parser_s_words(spec, said):
    with pytest.raises(ValueError) as e:
        parse_devices(spec)
    assert str(e.value).startswith(said) and "--" not in str(e.value)


@pytest.mark.slow
def test_process_executor_turns_every_failure_into_a_row(test_variants):
    names = ["naive", "t_raise", "t_abort", "naive_inplace", "t_hang", "t_oom", "t_sticky", "naive"]
    jobs = [AttentionJob(TINY, n, FAST) for n in names]
    ex = make_executor("process", timeout_s=30)  # generous: 2 shared cores
    started = []
    try:
        rows = list(ex.run(jobs, on_start=lambda j: started.append(j.variant)))
    finally:
        ex.close()
    assert started == names
    by = [(r.variant, r.status) for r in rows]
    assert by == list(zip(names, ["ok", "error", "crashed", "ok", "timeout", "oom", "crashed", "ok"], strict=True)), by
    assert "kernel exploded on purpose" in rows[1].reason
    # the signal, and the last line the dying worker wrote (faulthandler's, after the variant's own)
    assert "signal SIGABRT" in rows[2].reason and "Fatal Python error: Aborted" in rows[2].reason
    assert rows[4].reason == "no result within the timeout of 30 s: the worker was stopped"  # the library's words
    # a worker is reused while healthy and replaced after a death, a hang or a sticky CUDA fault
    fresh = ["worker_start" in (r.cost_s or {}) for r in rows]
    assert fresh == [True, False, False, True, False, True, False, True], fresh


# --- the numerics check of one call: every output and gradient, by hand ------------------------------------------


def _ones() -> torch.Tensor:
    return torch.ones(1, 1, 2, 2, dtype=torch.float64)


def test_fwd_bwd_errors_check_every_output_and_gradient_for_nan():
    ref = {name: _ones() for name in ("out", "dq", "dk", "dv")}
    nan_dq = _ones()
    nan_dq[0, 0, 1, 0] = float("nan")
    # dk 1.5× the reference: ‖0.5·1‖ over the 4 entries of the (batch, head) slice = 1, over ‖1‖ = 2: 0.5
    errs, bad = worker._errors((_ones(), nan_dq, 1.5 * _ones(), _ones()), ref)
    assert bad is True  # a NaN in dq (neither the first output nor the last) makes the whole call non-finite
    assert errs == {"out": 0.0, "dq": float("inf"), "dk": 0.5, "dv": 0.0}
    errs, bad = worker._errors((_ones(), _ones(), 1.5 * _ones(), _ones()), ref)
    assert bad is False and errs == {"out": 0.0, "dq": 0.0, "dk": 0.5, "dv": 0.0}
    inf_dv = _ones()
    inf_dv[0, 0, 0, 0] = float("inf")
    assert worker._errors((_ones(), _ones(), _ones(), inf_dv), ref)[1] is True


def test_errors_without_a_reference_check_every_output_for_finiteness():
    inf_dk = _ones()
    inf_dk[0, 0, 0, 1] = float("-inf")
    assert worker._errors((_ones(), _ones(), inf_dk, _ones()), None) == ({}, True)
    assert worker._errors((_ones(), _ones(), _ones(), _ones()), None) == ({}, False)
    assert worker._errors(inf_dk, None) == ({}, True)  # a forward call's one output
    assert worker._errors(_ones(), None) == ({}, False)


def test_a_zero_gradient_is_judged_against_the_whole_result_s_scale():
    # dq exact = 0 (a reference of zeros); the floor's scale is the RMS of all four references together:
    # 12 ones and 4 zeros → √(12/16) = √0.75.  Floor = 0.1 · √0.75 · √4 (entries per slice) = 0.2·√0.75;
    # the error ‖1e-9 · 1‖ = 2e-9 over that floor.
    ref = {"out": _ones(), "dq": torch.zeros(1, 1, 2, 2, dtype=torch.float64), "dk": _ones(), "dv": _ones()}
    errs, bad = worker._errors((_ones(), 1e-9 * _ones(), _ones(), _ones()), ref)
    assert bad is False
    assert errs["dq"] == pytest.approx(2e-9 / (0.2 * 0.75**0.5), rel=1e-12)


def test_an_output_of_the_wrong_shape_breaks_the_plugin_contract():
    ref = {"out": _ones(), "dq": _ones()}
    with pytest.raises(ValueError) as e:
        worker._errors((_ones(), torch.ones(1, 1, 2, 3)), ref)
    assert str(e.value) == (
        "the variant broke the plugin contract: its dq has shape (1, 1, 2, 3), expected (1, 1, 2, 2) "
        "([batch, heads, seq_q, head_dim], as the inputs' layout)"
    )
