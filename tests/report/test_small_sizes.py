"""Sizes under 1 MiB read in KiB or bytes wherever the report prints a size, never 0.0 MiB: the HTML page's
hidden-copy and peak-memory cells of a real CPU run, a trace summary's hidden copies and upcasts, the trace page's
ranked blocks, diff's flag values; a column whose header names MiB says "<0.1" for a few KiB.  The expected sizes
are hand arithmetic on the case's shapes."""

from __future__ import annotations

import pytest

from attnscope.core.units import fmt_mib, fmt_mib_cell

# naive at B=1 H=1 S=64 fp32: masked_fill copies the 1·1·64·64 fp32 scores, 16,384 B = 16.0 KiB
SCORES = 1 * 1 * 64 * 64 * 4


def test_fmt_mib_grouped_and_the_mib_column_cell():
    assert fmt_mib(3 * 1024**3, grouped=True) == "3,072.0 MiB"  # 3 GiB in MiB, thousands separated
    assert fmt_mib(SCORES, grouped=True) == "16.0 KiB"
    assert fmt_mib_cell(SCORES) == "<0.1"  # 16 KiB is 0.0156 MiB: not zero
    assert fmt_mib_cell(0) == "0.0"  # nothing is nothing
    assert fmt_mib_cell(5 * 1024**2 // 100) == "<0.1"  # 0.05 MiB − 0.4 B rounds to 0.0 at one decimal
    assert fmt_mib_cell(1024**2 // 20 + 1) == "0.1"
    assert fmt_mib_cell(1536 * 1024**2) == "1,536.0"


def test_a_cpu_runs_page_says_its_small_hidden_copy_and_peak_in_kib(tmp_path):
    pytest.importorskip("torch")
    from attnscope.api.running import RunRequest, run_request
    from attnscope.report.html.run import _cells
    from attnscope.report.text.table import results_table

    case = {"batch": 1, "heads": 1, "seq_q": 64, "head_dim": 16, "dtype": "fp32"}
    req = RunRequest(case=case, device="cpu", variants="naive", measure_peak=False, timing_budget_s=0.01)
    doc = run_request(req)
    (r,) = doc["results"]
    assert r["status"] == "ok" and [c["bytes"] for c in r["hidden_copies"]] == [SCORES]
    cells = _cells(r)
    assert "16.0 KiB" in str(cells["hidden copy"]) and "MiB" not in str(cells["hidden copy"])
    peak = r["peak_memory_bytes"]
    assert 0 < peak < 1024**2  # a few score matrices: KiB, not MiB
    assert cells["peak mem"] == fmt_mib(peak) and cells["peak mem"].endswith(("KiB", " B"))
    from io import StringIO

    from rich.console import Console

    out = StringIO()
    Console(file=out, width=200).print(results_table(dict(doc)))
    row = next(line for line in out.getvalue().splitlines() if "naive" in line)
    assert "16.0 KiB" in row and "<0.1" in row and " 0.0 " not in row  # the mem MiB column


def test_a_trace_summarys_small_copies_and_upcasts_are_kib():
    from attnscope.report.text.summary import _offender_lines

    # 2 copies of the 16 KiB scores; 3 upcasts of a 1·2·64·16 bf16 tensor to fp32: 3 × 8,192 B = 24.0 KiB
    copy = {"count": 2, "copy_op": "aten::copy_", "op": "aten::masked_fill", "bytes": 2 * SCORES, "time_us": 3.0}
    up = {"count": 3, "src_dtype": "c10::BFloat16", "dst_dtype": "float", "op": "aten::to", "bytes": 3 * 8192}
    s = {
        "hidden_copies": {"num": 2, "bytes": 2 * SCORES, "time_us": 3.0, "top": [copy]},
        "upcasts": {"num": 3, "bytes": 3 * 8192, "time_us": 2.0, "top": [{**up, "time_us": 2.0}]},
    }
    lines = _offender_lines(s, 5)
    assert lines[0] == "hidden copies: 2, 32.0 KiB, 3.0 µs on the GPU"
    assert lines[1].startswith("   2× aten::copy_ caused by aten::masked_fill: 32.0 KiB, 3.0 µs")
    assert lines[2] == "fp32 upcasts: 3, 24.0 KiB written, 2.0 µs"
    assert lines[3] == "   3× c10::BFloat16 → float inside aten::to: 24.0 KiB, 2.0 µs"
    assert not any("0.0 MiB" in line for line in lines)


def test_the_trace_pages_ranked_block_and_diffs_flag_value_are_kib():
    from attnscope.report.html.trace import ranked_block
    from attnscope.report.text.diff import _flag_value

    sec = {"num": 1, "bytes": SCORES, "time_us": 1.5, "top": [{"op": "aten::masked_fill", "bytes": SCORES}]}
    html = str(ranked_block(sec, "hidden copies", ("op",)))
    assert "1 hidden copies, 16.0 KiB, 1.5 µs of GPU time" in html and "<td>16.0 KiB</td>" in html
    assert "MiB" not in html
    assert _flag_value("hidden_copies", [1, SCORES]) == "1 (16.0 KiB)"
    assert _flag_value("hidden_copies", [1, 1536 * 1024**2]) == "1 (1,536.0 MiB)"
