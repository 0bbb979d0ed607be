"""Tables of plain cells drawn as rich draws them, without rich laying out every cell (7 s for the `--kernels`
table of a training step's 11k kernels; a few ms for a summary's tables).

Where every cell is plain text (no markup, no emoji code, no control character), the table fits and the console
draws Unicode boxes, rich's table of one row of each column's widest cell has the whole table's title, header,
column widths and bottom edge: those lines are rich's own, and each row is its cells padded to those widths
between the box's bars, as rich justifies a one-line cell (left: padded; right: stripped, then padded before).
Otherwise rich draws the whole table.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from rich.cells import cell_len, set_cell_size
from rich.console import Console, ConsoleOptions
from rich.measure import Measurement
from rich.segment import Segment
from rich.table import Table

Cells = list[str]


def plain_rows(console: Console, rows: Iterable[Iterable[str]]) -> bool:
    """Whether every cell is drawn as its own text: no markup, no emoji code, no control character."""
    seen: dict[str, bool] = {}
    for cells in rows:
        for s in cells:
            if s.isascii() and s.isprintable() and "[" not in s and ":" not in s:
                continue
            if s not in seen:
                t = console.render_str(s, highlight=False)
                seen[s] = s.isprintable() and t.plain == s and not t.spans and not t.style
            if not seen[s]:
                return False
    return True


def _cell(s: str, width: int, justify: str) -> str:
    """A one-line cell in ``width`` cells as rich's Text draws it: cut with an ellipsis, or padded."""
    if justify == "right":
        s = s.rstrip()
        n = cell_len(s)
        return set_cell_size(s, width - 1) + "…" if n > width else " " * (width - n) + s
    n = cell_len(s)
    return set_cell_size(s, width - 1) + "…" if n > width else s + " " * (width - n)


def _drawable(t: Table) -> bool:
    """A table whose cells this module draws as rich does: default padding, no footer, lines, expansion or fixed
    widths; columns justified left or right, and cut (never folded) where they have a most width."""
    plain_table = (
        t.show_header
        and t.show_edge
        and not t.show_footer
        and not t.show_lines
        and not t.expand
        and t.width is None
        and t.min_width is None
        and not t.caption
        and not t.row_styles
        and t.leading == 0
        and t.padding == (0, 1, 0, 1)
        and t.pad_edge
        and not t.collapse_padding
        and t.style in (None, "", "none")
        and not t.border_style
    )
    return plain_table and all(
        c.justify in ("left", "right")
        and c.vertical == "top"
        and c.width is None
        and c.min_width is None
        and not c.style
        and not c.highlight
        and (c.max_width is None or (c.no_wrap and c.overflow == "ellipsis"))
        for c in t.columns
    )


def plain_table(make: Callable[[list[Cells]], Table], rows: list[Cells], console: Console) -> Any:
    """``make(rows)`` (a table of these rows of cells, in its columns' order) to print on ``console``: drawn row by
    row where its cells are plain, else the table itself."""
    if len(rows) < 3 or not plain_rows(console, rows):  # a row or two: the measuring would cost what it saves
        return make(rows)
    widest = [max(column, key=cell_len) for column in zip(*rows, strict=True)]
    proxy = make([widest])
    if not _drawable(proxy):
        return make(rows)
    return PlainRows(proxy, rows, lambda: make(rows))


class PlainRows:
    """The table ``widest`` (one row of each column's widest cell) drawn with ``rows`` in place of its row;
    ``whole()``: the table of every row, drawn by rich where it does not fit or the console draws other boxes."""

    def __init__(self, widest: Table, rows: list[Cells], whole: Callable[[], Table]) -> None:
        self.widest, self.rows, self.whole = widest, rows, whole

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> Iterable[Any]:
        box = self.widest.box
        other_box = options.legacy_windows or options.ascii_only or box is None
        wide = options.update_width(1 << 16)  # measured unbounded: rich measures a table within the width it has
        if other_box or Measurement.get(console, wide, self.widest).maximum > options.max_width:
            yield self.whole()  # another box than the one drawn below, or columns rich would narrow
            return
        assert box is not None
        lines = list(Segment.split_lines(console.render(self.widest, options)))
        *head, _row, bottom = lines
        edge = "".join(seg.text for seg in bottom)
        widths = [len(part) for part in edge[len(box.bottom_left) : -len(box.bottom_right)].split(box.bottom_divider)]
        for line in head:
            yield from line
            yield Segment.line()
        # a cell's padding: one space each side
        shape = [(w - 2, str(c.justify)) for w, c in zip(widths, self.widest.columns, strict=True)]
        last = len(self.rows) - 1
        for i, cells in enumerate(self.rows):
            left, bar, right = (
                (box.foot_left, box.foot_vertical, box.foot_right)
                if i == last
                else (box.mid_left, box.mid_vertical, box.mid_right)
            )
            text = bar.join(f" {_cell(s, w, j)} " for s, (w, j) in zip(cells, shape, strict=True))
            yield Segment(f"{left}{text}{right}")
            yield Segment.line()
        yield from bottom
        yield Segment.line()
