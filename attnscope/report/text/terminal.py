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
        def render(self, renderable: Any, options: Any = None) -> Iterable[Segment]:
            for seg in super().render(renderable, options):
                if seg.control is None and _CONTROL.search(seg.text):
                    yield Segment(clean(seg.text), seg.style)
                else:
                    yield seg

    _CLASS.append(SafeConsole)
    return SafeConsole
