"""A sweep's plan (execute/sweep_plan.py): the default set for the sweep's device kinds with why each variant is
left out, the one line that says so, and the jobs, each carrying the options and whether its variant was named."""

from __future__ import annotations

import pytest

from attnscope.core.types import Case
from attnscope.execute import sweep_plan
from attnscope.execute.job import Options
from attnscope.variants.base import Variant

WHY_OPT_IN = "; `attnscope variants` says why"


def _variant(name: str, devices: tuple[str, ...] = ("cpu", "cuda"), opt_in_on: tuple[str, ...] = ()) -> Variant:
    return Variant(
        name=name, family="test", description="-", check=lambda c: None, prepare=None,  # type: ignore[arg-type]
        devices=devices, opt_in_on=opt_in_on,
    )  # fmt: skip


@pytest.fixture
def declared(monkeypatch: pytest.MonkeyPatch) -> None:
    """Five declarations instead of the registry's: where each has kernels, where each is opt-in."""
    fake = [
        _variant("both"),
        _variant("gpu_only", devices=("cuda",)),
        _variant("nowhere", devices=()),
        _variant("opt_in_everywhere", opt_in_on=("cpu", "cuda")),
        _variant("opt_in_on_cpu", opt_in_on=("cpu",)),
    ]
    monkeypatch.setattr("attnscope.variants.resolve", lambda spec: fake)


def test_a_sweep_on_both_kinds_leaves_out_only_what_neither_runs_by_default(declared: None) -> None:
    kept, left = sweep_plan.default_variants(["cpu", "cuda:1"])
    assert kept == ["both", "gpu_only", "opt_in_on_cpu"]  # runs (by default) on one of the two: kept
    assert left == {"nowhere": "no cpu/cuda kernels", "opt_in_everywhere": "opt-in on cpu/cuda" + WHY_OPT_IN}


def test_a_cpu_sweep_says_which_have_no_cpu_kernels_and_which_are_opt_in_there(declared: None) -> None:
    kept, left = sweep_plan.default_variants(["cpu"])
    assert kept == ["both"]
    assert left == {
        "gpu_only": "no cpu kernels",
        "nowhere": "no cpu kernels",
        "opt_in_everywhere": "opt-in on cpu" + WHY_OPT_IN,
        "opt_in_on_cpu": "opt-in on cpu" + WHY_OPT_IN,
    }


def test_the_left_out_line_names_each_with_why_and_how_to_measure_it_anyway() -> None:
    line = sweep_plan.left_out_line({"a": "no cpu kernels", "b": "opt-in on cpu"}, "cpu")
    assert line == (
        "left out of the default set on cpu (each would be a skipped row in every case): a (no cpu kernels); "
        "b (opt-in on cpu). Name them with --variants to measure them anyway"
    )


@pytest.mark.parametrize("explicit", [True, False])
def test_each_job_carries_the_sweeps_options_and_whether_its_variant_was_named(explicit: bool) -> None:
    case = Case(batch=1, heads=1, seq_q=16, head_dim=8, dtype="fp32", causal=False, device="cpu")
    opts = Options(timing_budget_s=0.05, measure_peak=False)  # not the defaults (0.5 s, a peak)
    jobs = sweep_plan.plan([case], ["naive"], opts, explicit=explicit, done=set())
    assert [(j.variant, j.options, j.explicit) for j in jobs] == [("naive", opts, explicit)]
    assert jobs[0].trace_name == "naive-b1-h1-s16-d8-fp32-fwd.json"
