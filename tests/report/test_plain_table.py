"""`--kernels` draws a long table's rows itself: byte for byte what rich draws for the whole table, in plain text,
in colour and in a recorded console (export), with names cut by an ellipsis, wide characters, markup and emoji."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console

from attnscope.report.text.kernels import fitted_kernels_table, left_out_note, print_kernels
from attnscope.report.text.terminal import bullet

RUN = Path(__file__).parents[1] / "data" / "h200" / "run.json"


def _kernel(i: int, name: str, **kw: Any) -> dict[str, Any]:
    return {
        "name": name,
        "category": ("gemm", "elementwise", "attention")[i % 3],
        "duration_us": 1.25 * i,
        "tensor_cores": (True, False, None)[i % 3],
        "grid": [i + 1, 2, 1],
        "block": [128, 1, 1],
        "registers_per_thread": 32 + i,
        "theoretical_occupancy_pct": 12.5 * (i % 8),
        "occupancy_limiter": "registers" if i % 2 else None,
        "launched_by": f"aten::op_{i % 5}",
        **kw,
    }


def _step(n: int, extra: list[str]) -> dict[str, Any]:
    names = [
        "void at::native::vectorized_elementwise_kernel<4, at::native::BinaryFunctor<float, float, float>>",
        "nvjet_sm90_tst_256x128_64x4_1x2_h_bz_coopA_NNT",
        "全角の名前を持つカーネル_wide_characters_count_twice_and_are_cut_whole",
        "short",
        *extra,
    ]
    return {"variant": "step", "status": "ok", "kernels": [_kernel(i, names[i % len(names)]) for i in range(n)]}


def _docs() -> list[dict[str, Any]]:
    return [
        json.loads(RUN.read_text()),
        {"results": [_step(40, [])]},
        {"results": [_step(12, ["[bold]markup in a name[/bold]"])]},  # rich draws it: the name is not plain
        {"results": [_step(12, ["a :thumbs_up: emoji code"])]},
    ]


def _console(kind: str, width: int) -> Console:
    if kind == "color":
        return Console(file=io.StringIO(), width=width, force_terminal=True, color_system="truecolor")
    if kind == "record":
        return Console(file=io.StringIO(), width=width, record=True, force_terminal=False)
    return Console(file=io.StringIO(), width=width, force_terminal=False, color_system=None)


def _by_rich(doc: dict[str, Any], console: Console) -> None:
    """The tables as rich lays out every cell (the fit of fitted_kernels_table, tested against rich's measure)."""
    left_out: dict[str, list[str]] = {}
    for r in doc["results"]:
        if r["status"] == "ok" and r.get("kernels"):
            t, dropped = fitted_kernels_table(r, console)
            console.print(t)
            left_out[r["variant"]] = dropped
    note = left_out_note(console.width, left_out, len(left_out))
    if note:
        console.print(bullet(console, "  ", note.removeprefix("  ")))


def _out(console: Console) -> str:
    return console.export_html() + console.export_text() if console.record else console.file.getvalue()  # type: ignore[attr-defined]


@pytest.mark.parametrize("kind", ["plain", "color", "record"])
@pytest.mark.parametrize("width", [50, 80, 120, 200])
def test_rows_drawn_as_rich_draws_the_whole_table(kind: str, width: int) -> None:
    for doc in _docs():
        mine, rich_ = _console(kind, width), _console(kind, width)
        print_kernels(doc, mine)
        _by_rich(doc, rich_)
        assert _out(mine) == _out(rich_)


def _summary_like(title: str, cells: list[list[str]]) -> Any:
    from rich.table import Table

    t = Table(title=title, header_style="bold")
    t.add_column("name", overflow="fold")
    t.add_column("calls", justify="right")
    t.add_column("launched by", overflow="fold")
    for row in cells:
        t.add_row(*row)
    return t


SUMMARY_ROWS = [
    ["void at::native::vectorized_elementwise_kernel<4, at::native::BinaryFunctor<float>>", "1,024", "aten::mul ×980"],
    ["nvjet_sm90_tst_256x128_64x4_1x2_h_bz_coopA_NNT", "12  ", "aten::mm ×490, aten::addmm ×2"],  # trailing spaces
    ["全角の名前を持つカーネル", "3", ""],
    ["short", "7", "torch::autograd::CppNode<SplitLookupFunction_rowwise_adagrad_Op> ×2"],
]


@pytest.mark.parametrize("kind", ["plain", "color", "record"])
@pytest.mark.parametrize("width", [40, 80, 120, 200])
def test_summary_tables_drawn_as_rich_draws_them(kind: str, width: int) -> None:
    from attnscope.report.text.plain_table import plain_table

    for rows in (SUMMARY_ROWS, [*SUMMARY_ROWS, ["[bold]x[/bold]", "1", "y"]]):  # the second: rich draws it all
        mine, rich_ = _console(kind, width), _console(kind, width)
        mine.print(plain_table(lambda cells: _summary_like("top kernels", cells), rows, mine))
        rich_.print(_summary_like("top kernels", rows))
        assert _out(mine) == _out(rich_)
