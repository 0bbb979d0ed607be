"""A terminal strip of a fingerprint's kernels in time order: one letter per category, each kernel's width
proportional to its duration (at least one cell), so a hidden copy or a mask rebuild shows as a letter
that should not be there.  Pure: reads a document's ``kernels`` list."""

from __future__ import annotations

from typing import Any

LETTERS = {
    "gemm": "G",
    "attention": "A",
    "softmax": "S",
    "elementwise": "e",
    "reduction": "r",
    "copy": "C",
    "memcpy": "M",
    "memset": "z",
    "communication": "x",
    "other": "o",
}
STYLES = {"G": "cyan", "A": "green", "S": "magenta", "C": "bold red", "M": "bold red", "z": "yellow"}


def letter(category: str) -> str:
    return LETTERS.get(category, "?")


def in_time_order(kernels: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Kernels sorted by their start (those without one keep their place at the end)."""
    timed = [k for k in kernels if k.get("start_us") is not None]
    rest = [k for k in kernels if k.get("start_us") is None]
    return sorted(timed, key=lambda k: k["start_us"]) + rest


def cells(kernels: list[dict[str, Any]], width: int = 60) -> str:
    """The strip as plain letters, ``width`` cells at most beyond one per kernel."""
    ks = in_time_order(kernels)
    total = sum(max(float(k.get("duration_us") or 0.0), 0.0) for k in ks)
    out = []
    for k in ks:
        share = (float(k.get("duration_us") or 0.0) / total) if total > 0 else 0.0
        out.append(letter(k.get("category", "")) * max(1, round(share * width)))
    return "".join(out)


def rich_strip(kernels: list[dict[str, Any]], width: int = 60) -> str:
    """The strip with rich markup, one colour per category."""
    text = cells(kernels, width)
    out, i = [], 0
    while i < len(text):
        j = i
        while j < len(text) and text[j] == text[i]:
            j += 1
        style = STYLES.get(text[i])
        out.append(f"[{style}]{text[i:j]}[/{style}]" if style else text[i:j])
        i = j
    return "".join(out)


def legend(kernels: list[dict[str, Any]]) -> str:
    used = dict.fromkeys(letter(k.get("category", "")) for k in kernels)
    names = {v: k for k, v in LETTERS.items()}
    return "  ".join(f"{c} {names.get(c, 'other')}" for c in used)
