"""The case's fields as a user types them: one value (``run``) or an axis of values (``sweep``).

Each parser raises :class:`~attnscope.core.arguments.UsageError` with one line that names the field (as the library
calls it: ``mask``, ``head_dim``; the command line says it as its flag) and says what it takes; the table of fields
(:mod:`attnscope.core.case`) says which parser reads which field.  An axis parser returns the values in the order
given, a value listed twice kept twice (each in its canonical spelling, so ``bf16,bfloat16`` is ``bf16`` twice): the
command line refuses it by its flag, the grid (:func:`attnscope.core.cases.grid`) by its axis.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable

from attnscope.core.arguments import UsageError
from attnscope.core.masks import KINDS, parse_mask

_RANGE = re.compile(r"^(\d+)\.\.(\d+)(?:([x+])(\d+))?$", re.ASCII)
_NUMBER = re.compile(r"^\d+$", re.ASCII)
MAX_AXIS_VALUES = 4096

DTYPE_ALIASES = {
    "bf16": "bf16",
    "bfloat16": "bf16",
    "fp16": "fp16",
    "float16": "fp16",
    "half": "fp16",
    "fp32": "fp32",
    "float32": "fp32",
    "float": "fp32",
}
CAUSAL = {"yes": [True], "no": [False], "both": [True, False]}
ALIBI = {"no": [False], "yes": [True], "both": [False, True]}
MASK_NAMES = ("causal_lower_right", "causal_top_left", *KINDS)  # what starts an entry of --mask
LIST_KINDS = ("document", "padding")  # whose argument is itself a comma list


def parse_dtype(s: str) -> str:
    try:
        return DTYPE_ALIASES[s.lower()]
    except KeyError:
        raise UsageError(f"dtype {s!r}: use one of bf16, fp16, fp32", fields=("dtype",)) from None


def parse_int_axis(name: str, text: str, limit: int | None = None) -> list[int]:
    """'512,1024', '512..16384x2' (×2 each step) or '64..256+64' (+64 each step); each value in
    [1, limit], in the order given (a value listed twice is there twice)."""
    out: list[int] = []
    for part in (p.strip() for p in text.split(",")):
        if not part:
            raise UsageError(f"{name} {text!r}: an empty item between commas", fields=(name,))
        m = _RANGE.match(part)
        if m is None:
            if not _NUMBER.match(part):
                raise UsageError(
                    f"{name} {text!r}: {part!r} is neither a whole number nor a range like 512..16384x2", fields=(name,)
                )
            out.append(int(part))
            continue
        lo, hi, op, step = int(m[1]), int(m[2]), m[3] or "+", int(m[4] or 1)
        if lo > hi:
            raise UsageError(f"{name} {part!r}: the range runs backwards ({lo} > {hi})", fields=(name,))
        if (op == "x" and step < 2) or step < 1 or lo < 1:
            raise UsageError(
                f"{name} {part!r}: a range starts at 1 or more and grows (x2 or more, +1 or more)", fields=(name,)
            )
        v = lo
        while v <= hi and len(out) <= MAX_AXIS_VALUES:
            out.append(v)
            v = v * step if op == "x" else v + step
    if len(out) > MAX_AXIS_VALUES:
        raise UsageError(f"{name} {text!r}: more than {MAX_AXIS_VALUES} values", fields=(name,))
    for v in out:
        if v < 1:
            raise UsageError(f"{name} {text!r}: values must be at least 1, got {v}", fields=(name,))
        if limit is not None and v > limit:
            raise UsageError(
                f"{name} {text!r}: {v:,} is beyond any case this tool measures (max {limit:,})", fields=(name,)
            )
    return out


def parse_choice_axis(name: str, text: str, choices: Iterable[str]) -> list[str]:
    allowed = list(choices)
    out = [p.strip() for p in text.split(",")]
    bad = [p for p in out if p not in allowed]
    if bad:
        raise UsageError(f"{name} {text!r}: use a comma list of {', '.join(allowed)}", fields=(name,))
    return out


def parse_dtype_axis(text: str) -> list[str]:
    """``bf16,fp32``: each spelling of :data:`DTYPE_ALIASES`, in its short name."""
    try:
        return [parse_dtype(t.strip()) for t in text.split(",")]
    except UsageError as e:  # the item's own message ("dtype 'x': …"), then the whole axis
        raise UsageError(f"{e} (in dtype {text!r})", fields=("dtype",)) from None


def parse_mask_axis(text: str) -> list[str]:
    """``none,sliding:256,document:1000,1500,600,996``: a new entry starts at a mask name (before any ':' or
    '@'); a bare number continues the list of the entry before it (document or padding lengths).  Each entry
    is parsed by :func:`attnscope.core.masks.parse_mask` and kept in its canonical spelling."""
    entries: list[str] = []
    for part in (p.strip() for p in text.split(",")):
        if not part:
            raise UsageError(f"mask {text!r}: an empty item between commas", fields=("mask",))
        name = re.split(r"[:@]", part, maxsplit=1)[0].lower()
        if name in MASK_NAMES:
            entries.append(part)
            continue
        if not entries:
            raise UsageError(
                f"mask {text!r}: it must start with a mask name ({', '.join(MASK_NAMES)})", fields=("mask",)
            )
        kind = re.split(r"[:@]", entries[-1], maxsplit=1)[0].lower()
        if kind not in LIST_KINDS or "@" in entries[-1]:
            raise UsageError(
                f"mask {text!r}: {part!r} is no mask name, and only document and padding take a comma list "
                f"({entries[-1]!r} does not); give each mask its name, e.g. sliding:256,sliding:512",
                fields=("mask",),
            )
        entries[-1] += "," + part
    out = []
    for e in entries:
        try:
            out.append(parse_mask(e).canonical)
        except ValueError as err:  # the entry's own message ("mask 'sliding:x': …"), then the whole axis
            raise UsageError(
                f"{err}" + (f" (in mask {text!r})" if e != text.strip() else ""), fields=("mask",)
            ) from None
    return out


def parse_softcap_axis(text: str) -> list[float | None]:
    """``0,30``: 0 means no soft-capping; any other value a positive finite cap."""
    out: list[float | None] = []
    for part in (p.strip() for p in text.split(",")):
        try:
            v = float(part)
        except ValueError:
            raise UsageError(
                f"softcap {text!r}: {part!r} is not a number (0: no soft-capping)", fields=("softcap",)
            ) from None
        if not math.isfinite(v) or v < 0:
            raise UsageError(
                f"softcap {text!r}: each cap is 0 (none) or a positive finite number, got {part!r}", fields=("softcap",)
            )
        out.append(None if v == 0 else v)
    return out


def parse_page_axis(text: str) -> list[int | None]:
    """``0,16,64``: 0 means a contiguous cache (no pages); any other value a page size in tokens."""
    vals = [0 if p.strip() == "0" else p.strip() for p in text.split(",")]
    out: list[int | None] = []
    for v in vals:
        if v == 0:
            out.append(None)
        else:
            out += parse_int_axis("page-size", str(v), limit=1 << 16)
    return out


def parse_alibi_axis(text: str) -> list[bool]:
    """``no``, ``yes``, ``both`` or a comma list of yes and no."""
    out: list[bool] = []
    for part in (p.strip() for p in text.split(",")):
        if part not in ALIBI:
            raise UsageError(f"alibi {text!r}: use yes, no, both, or a comma list of yes and no", fields=("alibi",))
        out += ALIBI[part]
    return out


def parse_causal(text: str) -> list[bool]:
    try:
        return CAUSAL[text.strip()]
    except KeyError:
        raise UsageError(f"causal {text!r}: use yes, no or both", fields=("causal",)) from None
