"""The per-variant kernel tables of ``--kernels``, fitted to the terminal: the least read columns are left out first
(and said once), never squeezed into a column a character wide."""

from __future__ import annotations

import functools
from typing import Any

from rich.console import Console
from rich.table import Table

from attnscope.core.units import fmt_us
from attnscope.report.text.plain_table import plain_table
from attnscope.report.text.terminal import bullet

COLUMNS = (
    "#",
    "name",
    "category",
    "µs",
    "TC",
    "grid",
    "block",
    "regs",
    "smem B",
    "occ. theor.",
    "limiter",
    "occ. kineto",
    "launched by",
)
NUMERIC = frozenset(("µs", "regs", "smem B", "occ. theor.", "occ. kineto"))
# Left out in this order while a table is wider than the terminal.
DROP_ORDER = ("occ. kineto", "launched by", "block", "limiter", "regs", "TC", "smem B", "occ. theor.", "grid")


def _cells(i: int, k: dict[str, Any]) -> dict[str, str]:
    return {
        "#": str(i),
        "name": k["name"].removeprefix("void "),
        "category": k.get("category") or "",
        "µs": fmt_us(k["duration_us"], unit=False) if k.get("duration_us") is not None else "",
        # a CPU op has no tensor cores to use or not: no cell (not "?", which says a GPU kernel is unknown)
        "TC": ""
        if k.get("device") == "cpu"
        else k.get("tensor_core_precision") or {True: "yes", False: "no", None: "?"}[k.get("tensor_cores")],
        "grid": "×".join(map(str, k["grid"])) if k.get("grid") else "",
        "block": "×".join(map(str, k["block"])) if k.get("block") else "",
        "regs": str(k.get("registers_per_thread") or ""),
        "smem B": f"{k['shared_memory_bytes']:,}" if k.get("shared_memory_bytes") is not None else "",
        "occ. theor.": f"{k['theoretical_occupancy_pct']:.1f}%"
        if k.get("theoretical_occupancy_pct") is not None
        else "",
        "limiter": k.get("occupancy_limiter") or "",
        "occ. kineto": f"{k['kineto_occupancy_pct']:.0f}%" if k.get("kineto_occupancy_pct") is not None else "",
        "launched by": k.get("launched_by") or "",
    }


def _table(title: str, rows: list[dict[str, str]], drop: tuple[str, ...], name_width: int) -> Table:
    cols = [c for c in COLUMNS if c not in drop]
    return _table_of(title, cols, name_width, [[cells[c] for c in cols] for cells in rows])


def _table_of(title: str, cols: list[str], name_width: int, rows: list[list[str]]) -> Table:
    t = Table(title=title or None, header_style="bold")
    for col in cols:
        if col == "name":
            t.add_column(col, no_wrap=True, overflow="ellipsis", max_width=name_width)
        else:  # numbers right-aligned, so that their digits line up
            t.add_column(col, no_wrap=True, justify="right" if col in NUMERIC else "left")
    for cells in rows:
        t.add_row(*cells)
    return t


def kernels_table(r: dict[str, Any], drop: tuple[str, ...] = (), name_width: int = 48) -> Table:
    """One variant's kernels; ``drop``: columns left out; ``name_width``: the name column's most characters."""
    rows = [_cells(i, k) for i, k in enumerate(r.get("kernels") or [])]
    return _table(f"{r['variant']}: kernels", rows, drop, name_width)


def _widest(console: Console, rows: list[dict[str, str]]) -> list[dict[str, str]]:
    """One row of each column's widest cell, as the table measures a cell (none without rows): a table of it
    measures as wide as the whole one (a column is as wide as its widest cell), in 13 cells instead of 10^5."""
    from rich.cells import cell_len
    from rich.measure import Measurement

    if not rows:
        return []
    wide = console.options.update(width=1 << 16, max_width=1 << 16)
    known: dict[str, int] = {}

    def width(s: str) -> int:
        if s.isprintable() and "[" not in s and ":" not in s:  # no markup, no emoji code: the text as it is
            return cell_len(s)
        if s not in known:
            known[s] = Measurement.get(console, wide, s).maximum
        return known[s]

    return [{c: max((cells[c] for cells in rows), key=width) for c in COLUMNS}]


Rows = list[dict[str, str]]


def empty_columns(rows: Rows) -> tuple[str, ...]:
    """The columns no row has a value in (a CPU op has no grid, block, registers, occupancy or tensor cores): not
    drawn, and not "left out" either, since there is nothing in them to show."""
    return tuple(c for c in DROP_ORDER if not any(row[c] for row in rows))


def _fit(r: dict[str, Any], console: Console) -> tuple[Rows, list[str], tuple[str, ...], int, bool]:
    """(rows, columns left out, empty columns, name width, whether it fits), each try measured on one row of each
    column's widest cell."""
    from rich.measure import Measurement

    rows = [_cells(i, k) for i, k in enumerate(r.get("kernels") or [])]
    empty = empty_columns(rows)
    order = [c for c in DROP_ORDER if c not in empty]
    widest = _widest(console, rows)
    wide = console.options.update(width=1 << 16, max_width=1 << 16)
    for n in range(len(order) + 1):
        for name_width in (48, 36, 28):
            proxy = _table("", widest, empty + tuple(order[:n]), name_width)
            if Measurement.get(console, wide, proxy).maximum <= console.width:
                return rows, order[:n], empty, name_width, True
    # every column that can go gone: a shorter name before the numbers are cut (a 60-column terminal keeps every
    # digit of "1,003.9")
    fits = Measurement.get(console, wide, _table("", widest, empty + tuple(order), 20)).maximum <= console.width
    return rows, order, empty, 20, fits


def fitted_kernels_table(r: dict[str, Any], console: Console) -> tuple[Table, list[str]]:
    """The table with the fewest columns left out for it to fit ``console`` (a shorter name column is tried
    before each column goes; a column empty in every row is never drawn); each try measured on one row of each
    column's widest cell.  The list: the columns left out that had values."""
    rows, dropped, empty, name_width, _fits = _fit(r, console)
    return _table(f"{r['variant']}: kernels", rows, empty + tuple(dropped), name_width), dropped


def left_out_note(width: int, left_out: dict[str, list[str]], tables: int) -> str | None:
    """The one line that says which columns were left out: of every table alike, or per table where they differ
    (``left_out``: each variant's columns left out, in its table's order; ``tables``: how many tables were drawn)."""
    cut = {v: cols for v, cols in left_out.items() if cols}
    if not cut:
        return None
    by_cols: dict[tuple[str, ...], list[str]] = {}
    for v, cols in cut.items():
        by_cols.setdefault(tuple(cols), []).append(v)
    if len(by_cols) == 1 and len(cut) == tables:
        what = f"{', '.join(next(iter(by_cols)))} left out"
    else:
        what = "; ".join(f"{', '.join(cols)} left out of {', '.join(vs)}" for cols, vs in by_cols.items())
    return f"  (kernel tables at {width} columns: {what}; a wider terminal or --json has them)"


def print_kernels(doc: dict[str, Any], console: Console) -> None:
    left_out: dict[str, list[str]] = {}
    tables = 0
    for r in doc["results"]:
        if r["status"] == "ok" and r.get("kernels"):
            rows, dropped, empty, name_width, fits = _fit(r, console)
            title, drop = f"{r['variant']}: kernels", empty + tuple(dropped)
            if fits:
                cols = [c for c in COLUMNS if c not in drop]
                cells = [[row[c] for c in cols] for row in rows]
                console.print(plain_table(functools.partial(_table_of, title, cols, name_width), cells, console))
            else:
                console.print(_table(title, rows, drop, name_width))
            left_out[str(r["variant"])] = dropped
            tables += 1
    note = left_out_note(console.width, left_out, tables)
    if note:  # wrapped under its own text
        console.print(bullet(console, "  ", note.removeprefix("  ")))
