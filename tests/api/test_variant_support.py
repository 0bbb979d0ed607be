"""`attnscope variants` as a function: every registered variant, and whether it runs a CPU case here.

On a CPU, torch's SDPA has the MATH and FLASH_ATTENTION backends only (torch's documentation), so the forced
EFFICIENT and CUDNN variants cannot run; flex_compiled is left out of the CPU default set (opt-in)."""

from __future__ import annotations

import pytest

pytest.importorskip("torch")

from attnscope.api import variant_support
from attnscope.core.types import Case
from attnscope.variants import REGISTRY


def test_every_variant_is_listed_with_whether_it_runs_on_a_cpu_case(capsys):
    case = Case(batch=1, heads=2, seq_q=64, head_dim=16, dtype="bf16", causal=True, device="cpu")
    rows = variant_support(case)
    assert [r["variant"] for r in rows] == list(REGISTRY)
    by = {r["variant"]: r for r in rows}
    assert {by[n]["runs_here"] for n in ("naive", "naive_inplace", "sdpa_math", "sdpa_flash")} == {"yes"}
    for n in ("sdpa_efficient", "sdpa_cudnn"):
        assert by[n]["runs_here"] == "no" and "no CPU kernel" in by[n]["reason"]
    assert by["flex_compiled"]["runs_here"] == "opt-in" and "--variants" in by["flex_compiled"]["reason"]
    assert all((r["reason"] == "") == (r["runs_here"] == "yes") for r in rows)
