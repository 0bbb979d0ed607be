"""The %peak column is of the ceiling the roofline's bound names, and the footnote says which (TFLOP/s or TB/s)."""

from __future__ import annotations

from attnscope.analysis.roofline import peak_basis
from attnscope.report.text.notes import peak_lines

# decode on the H200 (issue 19): 268 MB of KV cache read in 64.5 µs = 4.16 TB/s; 4.8 TB/s spec -> 86.6 %
DECODE_RF = {
    "bound": "memory",
    "tflops": 8.3,
    "tbps": 268e6 / 64.5e-6 / 1e12,
    "pct_compute_spec": 0.8,
    "pct_compute_measured": 1.0,
    "pct_bandwidth_spec": 100 * (268e6 / 64.5e-6 / 1e12) / 4.8,
    "pct_bandwidth_measured": 100 * (268e6 / 64.5e-6 / 1e12) / 4.38,
}
PREFILL_RF = {"bound": "compute", "tflops": 400.0, "tbps": 0.5, "pct_compute_spec": 40.4, "pct_compute_measured": 50.0}


def test_memory_bound_is_of_the_spec_bandwidth():
    b = peak_basis(DECODE_RF)
    assert b is not None and b["unit"] == "TB/s" and b["source"] == "spec"
    assert round(b["pct"], 1) == 86.6 and round(b["ceiling_value"], 2) == 4.8


def test_compute_bound_is_of_the_measured_matmul_rate():
    b = peak_basis(PREFILL_RF)
    assert b is not None and b["unit"] == "TFLOP/s" and b["source"] == "measured"
    assert b["pct"] == 50.0 and b["ceiling_value"] == 800.0  # 400 TFLOP/s is 50% of 800


def test_no_bound_no_basis():
    assert peak_basis(None) is None and peak_basis({"bound": None}) is None


def _row(variant, rf):
    return {"variant": variant, "peak_basis": peak_basis(rf), "pct_of_peak": 1.0}


def test_footnote_names_each_ceiling():
    doc = {"peak": {"tflops": 800.0, "source": "measured"}}
    [line] = peak_lines(doc, [_row("sdpa_cudnn", DECODE_RF), _row("sdpa_flash", PREFILL_RF)])
    assert "memory-bound (sdpa_cudnn) against the bandwidth ceiling, 4.8 TB/s (spec)" in line
    assert "compute-bound (sdpa_flash) against the compute ceiling, 800.0 TFLOP/s (measured)" in line


def test_footnote_for_one_ceiling_and_for_a_cpu():
    doc = {"peak": {"tflops": 0.1, "source": "measured in this run"}}
    [line] = peak_lines(doc, [_row("a", DECODE_RF), _row("b", DECODE_RF)])
    assert (
        line
        == "% peak against the bandwidth ceiling, 4.8 TB/s (spec): every row is memory-bound (the roofline's bound)"
    )
    cpu = [{"variant": "naive", "peak_basis": None, "pct_of_peak": 3.0}]
    assert peak_lines(doc, cpu) == ["% peak against 0.1 TFLOP/s (measured in this run)"]


def test_the_table_prints_the_bound_s_figure():
    from rich.console import Console

    from attnscope.report.text.table import results_table

    r = {
        "variant": "sdpa_cudnn",
        "status": "ok",
        "num_kernels": 1,
        "num_memcpy": 0,
        "num_memset": 0,
        "pct_of_peak": 1.0,  # of the matmul rate: what the column showed before
        "peak_basis": peak_basis(DECODE_RF),
        "device_kind": "gpu",
    }
    console = Console(width=300, record=True)
    console.print(results_table({"results": [r]}, None))
    text = console.export_text()
    assert "86.6" in text and " 1.0" not in text
