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
