"""The results table's counts carry thousands separators, as the summary under it does ('6,910 GPU events'):
the DDP rank's 6005 kernels read '6005' in the table and '6,005' nowhere else."""

from __future__ import annotations

import io

from attnscope.report.text.table import results_table
from attnscope.report.text.terminal import console


def test_kernel_and_copy_counts_have_separators():
    row = {
        "variant": "rank0",
        "status": "ok",
        "device_kind": "gpu",
        "num_kernels": 6005,
        "num_memcpy": 1560,
        "num_memset": 345,
        "hidden_copies": [],
        "upcast_fp32": False,
    }
    out = io.StringIO()
    console(file=out, width=300, color_system=None).print(results_table({"results": [row]}))
    line = next(x for x in out.getvalue().splitlines() if "rank0" in x)
    assert "6,005" in line and "1,560/345" in line and "6005" not in line
