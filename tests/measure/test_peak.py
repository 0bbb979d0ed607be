"""The % of peak baseline: measured in the case's dtype, or the faster fp32 rate with the reason; a rate
above it is flagged, never printed plain."""

from __future__ import annotations

import io

import pytest
from rich.console import Console

from attnscope.analysis.rules.execution import rate_above_peak
from attnscope.measure.peak import choose_peak
from attnscope.report.text.table import results_table


def test_own_dtype_when_it_is_the_fastest() -> None:
    rate, src = choose_peak("bf16", {"bf16": 0.143, "fp32": 0.032}, "1024³ matmul")
    assert rate == 0.143 and "slower" not in src


def test_fp16_on_a_cpu_without_fp16_gemm_falls_back_to_fp32_and_says_why() -> None:
    # measured on this 2-core x86: fp16 1024³ in 4.4 s (0.000487 TFLOP/s), fp32 in 0.066 s (0.0324)
    rate, src = choose_peak("fp16", {"fp16": 0.000487, "fp32": 0.0324}, "matmuls")
    assert rate == 0.0324
    assert "fp16 ran at 0.000487 TFLOP/s, slower than fp32 (0.0324)" in src


def _r(pct: float | None, rate: float = 1.0) -> dict:
    return {"variant": "sdpa_flash", "status": "ok", "tflops": rate, "pct_of_peak": pct, "flop_formula": "f"}


def test_rate_above_peak_is_an_error_insight_with_its_numbers() -> None:
    assert rate_above_peak(_r(100.0)) == [] and rate_above_peak(_r(None)) == []
    (i,) = rate_above_peak(_r(1532.9, rate=0.0613))
    assert i.severity == "error" and i.evidence["pct_of_peak"] == 1532.9
    # the peak is recovered from the two printed numbers: 0.0613 / 15.329 = 0.00400
    assert i.evidence["peak_tflops"] == 0.004
    assert "1532.9%" in i.message and "inconsistency" in i.message


def test_table_marks_a_pct_above_100() -> None:
    doc = {"results": [dict(_r(150.0), device_kind="cpu", num_kernels=1, num_memcpy=0, num_memset=0)]}
    buf = io.StringIO()
    Console(file=buf, width=200).print(results_table(doc))
    assert "150.0 !" in buf.getvalue()


@pytest.mark.slow
def test_fp16_cpu_run_never_prints_an_unflagged_pct_above_100(tmp_path) -> None:
    import json

    pytest.importorskip("torch")
    from attnscope.cli.main import main

    out = tmp_path / "fp16.json"
    argv = ["run", "--device", "cpu", "--dtype", "fp16", "--batch", "1", "--heads", "2", "--seq", "128"]
    assert main([*argv, "--head-dim", "32", "--variants", "sdpa_flash", "--budget", "0.05", "--json", str(out)]) == 0
    doc = json.loads(out.read_text())
    assert doc["peak"]["tflops"] > 0.001  # not the 0.0 of an fp16 GEMM emulated element by element
    for r in doc["results"]:
        above = r["pct_of_peak"] is not None and r["pct_of_peak"] > 100
        assert above == any(i["id"] == "rate_above_peak" for i in r["insights"])
