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


def test_a_gradient_that_is_zero_in_exact_arithmetic_is_judged_on_the_calls_scale():
    """One key per query (sliding:1): softmax of one score is 1 whatever the score, so dq = dk = 0 exactly, and fp64
    leaves rounding (or exact zeros) there. A result off by 1e-8 then had a 'relative error' of ~1e301 (✗ on a
    right result); measured against the call's largest slice norm it is ~1e-8 (✓), while a result that is really
    wrong in such a slice stays far past the tolerance."""
    g = torch.Generator().manual_seed(3)
    ref = torch.randn(2, 3, 8, 4, generator=g, dtype=torch.float64)
    ref[0, 1] = 0.0  # an exactly-zero slice
    scale = float(ref.flatten(2).norm(dim=-1).max())
    close = ref + 1e-8 * torch.randn(ref.shape, generator=g, dtype=torch.float64)
    err, _ = relative_error(close, ref, scale)
    assert err < 1e-6  # ‖1e-8·N(0,1)‖ over 32 entries ≈ 6e-8, against ‖slice‖ ≈ sqrt(32) ≈ 5.7: about 1e-8
    wrong = ref.clone()
    wrong[0, 1] = 1.0
    err, _ = relative_error(wrong, ref, scale)
    assert err > 0.1  # ‖ones(8,4)‖ = sqrt(32) against the same scale: about 1
    # a slice that is merely small (not zero up to rounding) keeps its own norm as the denominator
    small = ref.clone()
    small[1, 2] *= 1e-3
    off = small.clone()
    off[1, 2] *= 1.01
    err, _ = relative_error(off, small, scale)
    assert abs(err - 0.01) < 1e-9


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
