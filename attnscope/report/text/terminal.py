"""What reaches the terminal: names are data, never markup or control sequences.

Every name printed comes from something the tool does not control: a variant or a plugin, a kernel or op name read
from a trace, a config, a row of a store.  :func:`clean` removes the characters a terminal acts on (C0 controls but
newline and tab, DEL, the C1 controls, and so ESC and every CSI/OSC sequence's introducer) and :func:`console` is
the rich Console the commands print with: rich markup and emoji codes are off (``[/]`` or ``[link=…]`` in a name
is printed as written, never parsed), and every segment is cleaned on its way out, whatever built it (a table cell,
a ``Text``, a progress line).  The styling the tool means is given as styles (``Text``, ``style=``), never as markup.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

# C0 but \t and \n, DEL, C1 (U+0080–U+009F): ESC (U+001B) opens CSI and OSC sequences, U+009B and U+009D are their
# 8-bit forms, BEL and ST end OSC; a terminal acts on each of these
_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def clean(text: str) -> str:
    """``text`` without the characters a terminal acts on (newline and tab kept)."""
    return _CONTROL.sub("", text) if _CONTROL.search(text) else text


def one_line(text: str, limit: int = 500) -> str:
    """``text`` cleaned, its white space runs made single spaces, cut at ``limit`` characters (an error message)."""
    return " ".join(clean(text).split())[:limit]


def console(**kwargs: Any) -> Any:
    """The Console every command prints with (``kwargs`` as rich's: ``stderr``, ``width``, ``record``, …)."""
    return _console_class()(**{"markup": False, "emoji": False, **kwargs})


_CLASS: list[Any] = []


def _console_class() -> Any:
    """rich's Console with every rendered segment cleaned (made on first use: rich is imported only by then)."""
    if _CLASS:
        return _CLASS[0]
    from rich.console import Console
    from rich.segment import Segment

    class SafeConsole(Console):  # type: ignore[misc]
        def on_broken_pipe(self) -> None:  # rich's own exits 1, the status of a regression: 141, quietly
            raise SystemExit(pipe_closed())

        def render(self, renderable: Any, options: Any = None) -> Iterable[Segment]:
            for seg in super().render(renderable, options):
                if seg.control is None and _CONTROL.search(seg.text):
                    yield Segment(clean(seg.text), seg.style)
                else:
                    yield seg

    _CLASS.append(SafeConsole)
    return SafeConsole


def bullet(console: Any, prefix: Any, body: Any) -> Any:
    """:func:`hanging` on a console that wraps; ``prefix`` and ``body`` as one line on a console that soft-wraps
    (``Console(soft_wrap=True)``: a line is never broken)."""
    from rich.text import Text

    if console.soft_wrap:
        return Text.assemble(prefix, body)
    return hanging(prefix, body)


def hung(console: Any, prefix: str, body: str, style: str | None = None, *, markup: bool = False) -> None:
    """Print ``prefix`` then ``body`` (plain text, or rich markup with ``markup``: the tour's, whose names are
    escaped), ``body`` wrapped under its own first column where the terminal is narrower than the line (a hanging
    indent), never back at column 0."""
    from rich.text import Text

    said = Text.from_markup(body, style=style or "") if markup else Text(body, style=style or "")
    console.print(bullet(console, Text(prefix, style=style or ""), said), highlight=False)


def indented(console: Any, line: str, style: str | None = None, *, markup: bool = False) -> None:
    """Print ``line`` with its leading spaces as a hanging indent (:func:`hung`): where the terminal is narrower
    than the line, the rest goes under its own text, not back at column 0."""
    from rich.text import Text

    body = line.lstrip(" ")
    pad = len(line) - len(body)
    if pad:
        hung(console, " " * pad, body, style, markup=markup)
    else:
        said = Text.from_markup(body, style=style or "") if markup else Text(body, style=style or "")
        console.print(said, highlight=False)


def host_caveat(console: Any, host: Any) -> None:
    """The one line a loaded host gets (:func:`attnscope.core.host_line.host_line`), in yellow and indented, under
    what a command printed; nothing for a quiet or unassessed host."""
    from attnscope.core.host_line import host_line

    busy = host_line(host)
    if busy:
        indented(console, f"  {busy}", style="yellow")


def hanging(prefix: Any, body: Any, style: str | None = None) -> Any:
    """``prefix`` then ``body``, ``body`` wrapped at word boundaries under its own first column (a hanging
    indent): a bullet or an advice line that needs two lines keeps its shape instead of being cut with "…"."""
    from rich.table import Table

    g = Table.grid()
    g.add_column(no_wrap=True)
    g.add_column(overflow="fold")  # a word longer than the line (a path) is folded, never lost
    g.add_row(prefix, body, style=style)
    return g


def fit(table: Any) -> Any:
    """``table`` drawn as a table where the width it is printed in leaves every column at least as wide as its
    longest word (rich wraps cells at word boundaries), else as one block per row (:class:`Blocks`): a grid
    narrower than its words would be shredded into pieces of a few characters."""
    return Fitted(table)


class Fitted:
    """See :func:`fit`: the choice is made when printed, at the width given then."""

    def __init__(self, table: Any) -> None:
        self.table = table

    def __rich_console__(self, console: Any, options: Any) -> Any:
        if not words_fit(self.table, console, options):
            yield Blocks(self.table)
            return
        yield from title_above(self.table, console, options)


def title_above(table: Any, console: Any, options: Any) -> Any:
    """``table``, its title printed as a line of its own above it where the title is wider than the table (rich
    wraps a title to the table's width: a narrow grid under a long title would cut it into short lines)."""
    import copy

    from rich.cells import cell_len
    from rich.measure import Measurement
    from rich.text import Text

    title = table.title
    if not isinstance(title, (str, Text)) or table.expand:
        yield table
        return
    width = min(Measurement.get(console, options, table).maximum, options.max_width)
    if cell_len(str(title)) <= width:
        yield table
        return
    untitled = copy.copy(table)
    untitled.title = None
    yield Text(str(title), style=table.title_style or "table.title") if isinstance(title, str) else title
    yield untitled


def words_fit(table: Any, console: Any, options: Any) -> bool:
    """Whether rich lays ``table`` out in ``options.max_width`` with every column at least as wide as its longest
    word (the widths rich's own layout gives; its measure of each column says the longest word)."""
    from rich.measure import Measurement

    try:
        widths = table._calculate_column_widths(console, options.update_width(options.max_width - table._extra_width))
        least = [table._measure_column(console, options, c).minimum for c in table.columns]
    except AttributeError:  # another rich: whether the table fits unwrapped
        return bool(Measurement.get(console, options, table).maximum <= options.max_width)
    return all(w >= m for w, m in zip(widths, least, strict=True))


class Blocks:
    """A rich Table drawn as one block per row: the title, then each row's first cell as its heading and the other
    non-empty cells under it as ``header: value`` pairs, as many on a line as fit (separated by " · "); a pair too
    long for a line of its own wraps under its value (a hanging indent), its words whole where they fit."""

    INDENT = "    "

    def __init__(self, table: Any) -> None:
        self.table = table

    def __rich_console__(self, console: Any, options: Any) -> Any:
        from rich.text import Text

        t = self.table
        width = options.max_width
        if t.title:
            yield Text(str(t.title), style="bold")
        heads = [Text(str(c.header)) if isinstance(c.header, str) else c.header for c in t.columns]
        cells = [list(c.cells) for c in t.columns]
        for i in range(t.row_count):
            row = [col[i] if i < len(col) else "" for col in cells]
            first = row[0] if row else ""
            yield hanging(Text("• ", style="bold"), first if isinstance(first, Text) else Text(str(first)))
            line = Text(self.INDENT)
            for head, cell in zip(heads[1:], row[1:], strict=True):
                value = cell if isinstance(cell, Text) else Text(str(cell))
                if "\n" in value.plain:  # a cell's lines, one after the other
                    value = Text("; ").join(part for part in value.split("\n") if part.plain.strip())
                if not value.plain.strip():
                    continue
                pair = head + Text(": ") + value
                sep = Text(" · ") if line.plain.strip() else Text("")
                if line.cell_len + sep.cell_len + pair.cell_len <= width:
                    line += sep + pair
                    continue
                if line.plain.strip():
                    yield line
                line = Text(self.INDENT)
                if len(self.INDENT) + pair.cell_len <= width:
                    line += pair
                else:
                    yield from self._long(head, value, width)
            if line.plain.strip():
                yield line

    def _long(self, head: Any, value: Any, width: int) -> Any:
        """A pair wider than a line: its value wrapped under itself, or under its label where a word of it would
        not fit beside the label."""
        from rich.cells import cell_len
        from rich.text import Text

        label = Text(self.INDENT) + head + Text(": ")
        longest = max((cell_len(w) for w in value.plain.split()), default=0)
        if longest > width - label.cell_len:
            yield label
            yield hanging(Text(self.INDENT + "  "), value)
        else:
            yield hanging(label, value)


PIPE_CLOSED = 141  # 128 + SIGPIPE: what a shell reports for a command whose output pipe was closed


def pipe_closed() -> int:
    """stdout's reader is gone (``attnscope … | head``): stdout is pointed at /dev/null, so that nothing written or
    flushed later fails again, and the exit status is 141 (128 + SIGPIPE), quietly."""
    import os
    import sys

    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError):  # no file descriptor behind stdout (a test's capture): nothing to point
        pass
    return PIPE_CLOSED
