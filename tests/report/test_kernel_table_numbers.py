"""The numbers of the --kernels tables: thousands separators (as every other time attnscope prints) and
right-aligned, so that a column's digits line up (a CPU run's 3049.4 sat left-aligned above 103.5)."""

from __future__ import annotations

import io

from attnscope.report.text.kernels import kernels_table
from attnscope.report.text.terminal import console

ROW = {
    "variant": "naive",
    "kernels": [
        {
            "name": "aten::bmm",
            "category": "gemm",
            "duration_us": 3049.4,
            "device": "cpu",
            "launched_by": "aten::matmul",
        },
        {"name": "aten::mul", "category": "elementwise", "duration_us": 103.5, "device": "cpu"},
        {
            "name": "k",
            "category": "gemm",
            "duration_us": 12.0,
            "shared_memory_bytes": 213188,
            "registers_per_thread": 168,
        },
    ],
}


def test_times_have_separators_and_line_up_right():
    out = io.StringIO()
    console(file=out, width=200, color_system=None).print(kernels_table(ROW))
    lines = out.getvalue().splitlines()
    bmm = next(x for x in lines if "aten::bmm" in x)
    mul = next(x for x in lines if "aten::mul" in x)
    assert "3,049.4" in bmm and "3049.4" not in bmm
    assert bmm.index("3,049.4") + len("3,049.4") == mul.index("103.5") + len("103.5")  # right edges meet
    k = next(x for x in lines if "│ k " in x)
    assert "213,188" in k
