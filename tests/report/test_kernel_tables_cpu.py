"""`--kernels` on a CPU run: a CPU op has no grid, block, registers, shared memory, occupancy or tensor cores, so
those columns are not drawn (they held only blanks, and "TC ?" read as an unknown GPU fact), and the note under the
tables names only columns that held something and were left out, per table where the tables differ (it named
TC and smem B as left out while the naive table showed them)."""

from __future__ import annotations

import io
from typing import Any

from rich.console import Console

from attnscope.report.text.kernels import left_out_note, print_kernels

GPU_ONLY = ("grid", "block", "regs", "smem B", "occ. theor.", "limiter", "occ. kineto", "TC")


def _op(name: str, category: str, us: float, by: str | None) -> dict[str, Any]:
    """An op as `run --json` writes it on the CPU (every GPU field None)."""
    none = dict.fromkeys(
        ("tensor_cores", "tensor_core_precision", "grid", "block", "registers_per_thread", "shared_memory_bytes"), None
    )
    none |= dict.fromkeys(("theoretical_occupancy_pct", "occupancy_limiter", "kineto_occupancy_pct"), None)
    return {"name": name, "category": category, "duration_us": us, "device": "cpu", "launched_by": by, **none}


DOC = {
    "results": [
        {
            "variant": "naive",
            "status": "ok",
            "kernels": [_op("aten::bmm", "gemm", 265.4, "aten::matmul"), _op("aten::_softmax", "softmax", 21.8, None)],
        },
        {
            "variant": "sdpa_default",
            "status": "ok",
            "kernels": [
                _op("aten::_scaled_dot_product_flash_attention_for_cpu", "attention", 73.2, "aten::scaled_dot_product")
            ],
        },
    ]
}


def _render(width: int) -> list[str]:
    buf = io.StringIO()
    print_kernels(DOC, Console(file=buf, width=width, force_terminal=False, color_system=None))
    return buf.getvalue().splitlines()


def test_cpu_tables_draw_no_gpu_only_column() -> None:
    lines = _render(120)
    headers = [line for line in lines if "name" in line and "#" in line]
    assert len(headers) == 2
    for h in headers:
        cells = [c.strip() for c in h.strip("┃ ").split("┃")]
        assert not set(cells) & set(GPU_ONLY), cells
        assert cells == ["#", "name", "category", "µs", "launched by"]
    assert not any("left out" in line for line in lines)  # at 120 columns every column with a value fits


def test_the_note_names_what_each_table_left_out() -> None:
    # by hand: only sdpa_default's table lost a column with values
    assert left_out_note(80, {"naive": [], "sdpa_default": ["launched by"]}, 2) == (
        "  (kernel tables at 80 columns: launched by left out of sdpa_default; a wider terminal or --json has them)"
    )
    # every table lost the same columns: said once
    assert left_out_note(80, {"a": ["regs", "TC"], "b": ["regs", "TC"]}, 2) == (
        "  (kernel tables at 80 columns: regs, TC left out; a wider terminal or --json has them)"
    )
    assert left_out_note(80, {"a": ["regs"], "b": ["regs", "TC"], "c": ["regs"]}, 3) == (
        "  (kernel tables at 80 columns: regs left out of a, c; regs, TC left out of b; a wider terminal or --json "
        "has them)"
    )
    assert left_out_note(80, {"a": [], "b": []}, 2) is None


def test_the_note_wraps_under_its_own_text() -> None:
    lines = _render(60)
    at = next(i for i, line in enumerate(lines) if line.startswith("  (kernel tables at 60 columns: "))
    note = [line.rstrip() for line in lines[at:]]
    assert len(note) >= 2 and note[-1].endswith("has them)")  # longer than 60 columns
    assert all(line.startswith("  ") and len(line) <= 60 for line in note)
