"""The error tolerance per dtype: right results pass, a deliberately wrong one is flagged ✗.

The reference is written here with torch on fp64 (softmax(Q·Kᵀ·scale + causal mask)·V), not
taken from the runner, so a wrong reference in the tool cannot hide a wrong result.
"""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

from attnscope.analysis.rules.execution import numerics_off  # noqa: E402
from attnscope.core.types import Result  # noqa: E402
from attnscope.measure.timing import TOLERANCE, relative_error  # noqa: E402
from attnscope.report.text.table import _err  # noqa: E402

DTYPES = {"fp32": torch.float32, "fp16": torch.float16, "bf16": torch.bfloat16}
B, H, S, D = 2, 3, 48, 32


def _inputs(dtype):
    g = torch.Generator().manual_seed(7)
    q, k, v = (torch.randn(B, H, S, D, generator=g).to(dtype) for _ in range(3))
    return q, k, v


def _fp64_reference(q, k, v, causal=True):
    q, k, v = (t.to(torch.float64) for t in (q, k, v))
    s = q @ k.transpose(-2, -1) * D**-0.5
    if causal:
        keep = torch.ones(S, S, dtype=torch.bool).tril()
        s = s.masked_fill(~keep, float("-inf"))
    return torch.softmax(s, dim=-1) @ v


def _row(err, nonfinite, dtype_name):
    r = Result("v", None, "ok", max_rel_error=err, error_tolerance=TOLERANCE[dtype_name], nonfinite=nonfinite)
    return {
        "variant": "v",
        "status": "ok",
        "source": "run",
        "case": {"dtype": dtype_name},
        "max_rel_error": err,
        "error_tolerance": TOLERANCE[dtype_name],
        "nonfinite": nonfinite,
        "numerics_ok": r.numerics_ok,
    }


@pytest.mark.parametrize("name", DTYPES)
def test_a_right_result_in_each_dtype_passes(name):
    q, k, v = _inputs(DTYPES[name])
    out = torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True)
    err, nonfinite = relative_error(out, _fp64_reference(q, k, v))
    row = _row(err, nonfinite, name)
    assert row["numerics_ok"] is True, (name, err)
    assert "✓" in str(_err(row))
    assert numerics_off(row) == []


# A result off by this much (relative, in every head) is wrong in that dtype and must be flagged:
# well above the rounding of the dtype (fp32 ~1e-7, fp16 ~5e-4, bf16 ~4e-3 per element).
WRONG_BY = {"fp32": 1e-3, "fp16": 1e-2, "bf16": 5e-2}


@pytest.mark.parametrize("name", DTYPES)
def test_a_slightly_wrong_result_is_flagged_in_each_dtype(name):
    q, k, v = _inputs(DTYPES[name])
    ref = _fp64_reference(q, k, v)
    wrong = ref * (1 + WRONG_BY[name])  # computed in fp64: its error is exactly WRONG_BY
    err, nonfinite = relative_error(wrong, ref)
    assert err == pytest.approx(WRONG_BY[name], rel=1e-9) and not nonfinite
    row = _row(err, nonfinite, name)
    assert row["numerics_ok"] is False
    assert "✗" in str(_err(row))
    (ins,) = numerics_off(row)
    assert ins.id == "numerics_off" and ins.severity == "error"
    assert ins.evidence["dtype"] == name


@pytest.mark.parametrize("name", DTYPES)
def test_a_missing_causal_mask_is_flagged_in_each_dtype(name):
    """A realistic bug: the mask forgotten.  Its output differs from the causal reference by far
    more than any tolerance."""
    q, k, v = _inputs(DTYPES[name])
    out = torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=False)
    err, _ = relative_error(out, _fp64_reference(q, k, v))
    assert err > 0.1
    assert _row(err, False, name)["numerics_ok"] is False


def test_tolerances_grow_with_coarser_dtypes():
    """fp32 (24-bit significand) < fp16 (11) < bf16 (8): a looser dtype never gets a tighter bound."""
    assert TOLERANCE["fp32"] < TOLERANCE["fp16"] < TOLERANCE["bf16"]
    assert TOLERANCE["fp32"] < WRONG_BY["fp32"] and TOLERANCE["fp16"] < WRONG_BY["fp16"]
    assert TOLERANCE["bf16"] < WRONG_BY["bf16"]


def test_error_is_the_worst_head_not_the_average():
    """One head of six 10 % off, the rest exact: max over (batch, head) is 0.10; an average
    over heads would be 0.0167 and pass the bf16 tolerance."""
    q, k, v = _inputs(torch.float32)
    ref = _fp64_reference(q, k, v)
    out = ref.clone()
    out[1, 2] *= 1.10
    err, _ = relative_error(out, ref)
    assert err == pytest.approx(0.10, rel=1e-9)


def test_nan_output_is_wrong_whatever_the_tolerance():
    q, k, v = _inputs(torch.float32)
    ref = _fp64_reference(q, k, v)
    out = ref.clone()
    out[0, 0, 5, 3] = float("nan")
    err, nonfinite = relative_error(out, ref)
    assert nonfinite is True
    row = _row(err, nonfinite, "bf16")
    assert row["numerics_ok"] is False
    assert "NaN/Inf ✗" in str(_err(row))


def test_an_all_zero_reference_is_judged_against_the_floor_not_float64_tiny():
    """dq of a mask where each query sees one key is exactly 0.  Rounding of 2e-7 in every element must
    read as small, not as 2e-7 / float64's tiny (≈ 1e+301, the old ✗).  By hand: one (batch, head) slice of
    n = 4·2 = 8 elements, each off by 2e-7: ‖out − ref‖ = 2e-7·√8; the floor at scale 0.5 is
    0.1·0.5·√8; the error is 2e-7 / 0.05 = 4e-6, inside fp32's 1e-4."""
    ref = torch.zeros(1, 1, 4, 2, dtype=torch.float64)
    out = torch.full((1, 1, 4, 2), 2e-7, dtype=torch.float32)
    err, nonfinite = relative_error(out, ref, scale=0.5)
    assert not nonfinite
    assert err == pytest.approx(4e-6, rel=1e-6)
    assert _row(err, False, "fp32")["numerics_ok"] is True


def test_the_floor_leaves_a_slice_of_ordinary_size_alone():
    """A slice whose RMS is above a tenth of the scale keeps its own norm as the denominator: ref of
    eight 1.0s (‖ref‖ = √8), out 1 % off everywhere → 0.01 whatever the scale up to 10."""
    ref = torch.ones(1, 1, 4, 2, dtype=torch.float64)
    out = ref * 1.01
    assert relative_error(out, ref, scale=9.9)[0] == pytest.approx(0.01, rel=1e-9)
    # at scale 20 the floor (0.1·20·√8 = 2·√8) is twice ‖ref‖: the error halves
    assert relative_error(out, ref, scale=20.0)[0] == pytest.approx(0.005, rel=1e-9)


def test_the_floor_defaults_to_the_references_own_rms():
    """Two heads: one of 1.0s, one of 0.01s (RMS of the whole: √((1 + 1e-4)/2) = 0.70714).  The small head
    off by 0.01 in every element: its own relative error would be 1.0; floored at 0.1·0.70714 per element it
    is 0.01 / 0.070714 = 0.14142."""
    ref = torch.stack([torch.ones(4, 2), torch.full((4, 2), 0.01)]).to(torch.float64).unsqueeze(0)
    out = ref.clone()
    out[0, 1] += 0.01
    assert relative_error(out, ref)[0] == pytest.approx(0.01 / (0.1 * ((1 + 1e-4) / 2) ** 0.5), rel=1e-9)


@pytest.mark.slow
def test_a_correct_backward_where_each_query_sees_one_key_passes():
    """The repro: sliding:1 fwd_bwd, fp32, through the runner's own error check.  Exact dq and dk are 0;
    every backend's rounding must pass (it read 5.1e+301 ✗ for sdpa_flash)."""
    from attnscope.core.case import Case
    from attnscope.execute.worker import _errors
    from attnscope.workloads.attention import make_inputs, reference_grads

    case = Case(batch=1, heads=2, seq_q=16, head_dim=16, dtype="fp32", mask="sliding:1", mode="fwd_bwd")
    x = make_inputs(case, 0, requires_grad=True)
    ref = reference_grads(case, x)
    assert float(ref["dq"].abs().max()) == 0.0 and float(ref["dk"].abs().max()) == 0.0
    # a backend's result: the exact one plus rounding noise of 2e-7 in every element of every output
    g = torch.Generator().manual_seed(1)
    outs = tuple((r + 2e-7 * torch.randn(r.shape, generator=g, dtype=torch.float64)).float() for r in ref.values())
    errs, bad = _errors(outs, ref)
    assert not bad
    assert max(errs.values()) < TOLERANCE["fp32"], errs


@pytest.mark.slow
@pytest.mark.parametrize(
    ("kw", "variant"),
    [
        ({"seq_q": 1, "kv_heads": 2, "mask": "causal_lower_right", "dtype": "fp32"}, "sdpa_default"),
        ({"seq_q": 48, "mask": "sliding:1", "dtype": "fp16"}, "sdpa_flash"),
    ],
)
def test_fwd_bwd_with_one_key_per_query_matches_fp64(kw, variant):
    """The two cases the fuzzer (benchmarks/fuzz.py) found flagged ✗ with errors of ~1e301 on right results."""
    from attnscope.api import run
    from attnscope.core.types import Case

    fields = {"batch": 2, "heads": 4, "head_dim": 64, "mode": "fwd_bwd", **kw}
    r = run(Case(**fields), variant, timing_budget_s=0.002, measure_peak=False).results[0]
    assert r.status == "ok" and r.numerics_ok is True, (r.rel_errors, r.error_tolerance)
