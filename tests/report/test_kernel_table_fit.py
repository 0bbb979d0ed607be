"""`--kernels` fits each table by measuring one row of each column's widest cell: the same columns and name width
as measuring the whole table with rich, whatever the names hold (markup, emoji codes, wide characters)."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console
from rich.measure import Measurement

from attnscope.report.text.kernels import DROP_ORDER, fitted_kernels_table, kernels_table

RUN = Path(__file__).parents[1] / "data" / "h200" / "run.json"


def _whole_table_fit(r: dict[str, Any], console: Console) -> tuple[list[str], int]:
    """The fit as rich measures the whole table: the first (columns left out, name width) that fits; a column whose
    every cell is empty (as the whole table holds it) is never drawn and never counted as left out."""
    wide = console.options.update(width=1 << 16, max_width=1 << 16)
    full = kernels_table(r)
    empty = tuple(c.header for c in full.columns if c.header in DROP_ORDER and not any(str(x) for x in c._cells))
    order = [c for c in DROP_ORDER if c not in empty]
    for n in range(len(order) + 1):
        for name_width in (48, 36, 28):
            t = kernels_table(r, empty + tuple(order[:n]), name_width)
            if Measurement.get(console, wide, t).maximum <= console.width:
                return order[:n], name_width
    return order, 20  # nothing fits with every column gone: the shortest name, so that the numbers keep their digits


def _kernel(name: str, **kw: Any) -> dict[str, Any]:
    return {"name": name, "category": "gemm", "duration_us": 1.0, **kw}


ODD = {
    "variant": "odd",
    "status": "ok",
    "kernels": [
        _kernel("void at::native::elementwise_kernel<128, 4>"),
        _kernel("[bold]markup_looking_kernel_name_that_shrinks_when_parsed[/bold]", launched_by="aten::mm"),
        _kernel("y", launched_by="[bold][italic][bold][italic]an_op_in_markup[/italic][/bold][/italic][/bold]"),
        _kernel("emoji:thumbs_up::thumbs_up::thumbs_up::thumbs_up::thumbs_up:_kernel"),
        _kernel("全角の名前を持つカーネル_wide_characters_count_twice", grid=[1024, 1, 1]),
        _kernel("x", launched_by="[link]aten::_scaled_dot_product_flash_attention[/link]"),
    ],
}


def _rows() -> list[dict[str, Any]]:
    doc = json.loads(RUN.read_text())
    return [r for r in doc["results"] if r.get("kernels")] + [ODD]


@pytest.mark.parametrize("width", [60, 80, 100, 120, 160, 200])
def test_the_fit_is_the_whole_tables(width: int) -> None:
    console = Console(file=io.StringIO(), width=width, force_terminal=False, color_system=None)
    for r in _rows():
        t, dropped = fitted_kernels_table(r, console)
        (name,) = [c for c in t.columns if c.header == "name"]
        assert (dropped, name.max_width) == _whole_table_fit(r, console), r["variant"]
        assert t.row_count == len(r["kernels"])
