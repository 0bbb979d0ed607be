"""A question asked before anything is measured, and the one reader of a typed answer.  Pure.

`attnscope guess` and the tour ask questions of one :class:`Question` type and read the answers with
:func:`read_answer`.  How an answer is read (``answer``):

- ``count``: a whole number or lo-hi (a trailing ``+`` or a leading ``>=`` is read as the number);
- ``yesno``: y/yes/true or n/no/false;
- ``choice``: one of ``choices`` (or of the measured ``items`` for a question judged by its winner), by its name or
  the start of exactly one name;
- ``ranking``: every item once, by name, start of a name or 1-based number, separated by commas, spaces or ``>``;
- ``at_least``: a ratio: x means "at least x", lo-hi a range;
- ``ratio``: a ratio: x means "about x" (``[x / RATIO_SPREAD, x · RATIO_SPREAD]``), x+ or >=x "at least x", lo-hi a
  range;
- ``range``: lo-hi of numbers ≥ 0 (a single number is refused);
- ``pct``: a percentage: x means ``[x - PCT_SPREAD, x + PCT_SPREAD]`` (not below 0), lo-hi a range.

"to" and ".." stand for "-" in a range.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Literal

Kind = Literal["number", "choice", "ranking"]
Answer = Literal["count", "yesno", "choice", "ranking", "at_least", "ratio", "range", "pct"]

RATIO_SPREAD = 1.25  # a plain number x for an "about" ratio stands for [x/1.25, x·1.25]
PCT_SPREAD = 10.0  # a plain number x for a percentage stands for [x-10, x+10]


class AnswerError(ValueError):
    """An answer that cannot be read; the message is the hint."""


@dataclass(frozen=True)
class Question:
    """One question.  ``predict``: the ``run --guess`` prediction its answer is, as (variant, kind, other variant);
    the tour's fields: ``kind`` (how its page shows it), ``study`` (the answer ``--auto`` gives), ``insight`` (the
    insight that explains a surprise), ``judge`` (how it is judged when it is no prediction), ``gpu_only``."""

    id: str
    prompt: str
    kind: Kind = "number"
    answer: Answer = "count"
    study: Any = None
    insight: str = ""
    predict: tuple[str, str, str | None] | None = None
    choices: tuple[str, ...] = ()
    judge: str = "predict"  # predict | ranking | winner | occupancy_design | bound | bandwidth_pct | model_share
    gpu_only: bool = False


def _num(s: str) -> float:
    try:
        v = float(s)
    except ValueError:
        raise AnswerError(f"not a number: {s!r}") from None
    if not math.isfinite(v) or v < 0:
        raise AnswerError(f"expected a finite number ≥ 0, got {s!r}")
    return v


def _pick(s: str, pool: tuple[str, ...]) -> str:
    hits = [c for c in pool if c == s] or [c for c in pool if c.startswith(s)]
    if len(hits) != 1:
        raise AnswerError(f"answer one of {', '.join(pool)}")
    return hits[0]


def read_answer(q: Question, text: str, items: tuple[str, ...] = ()) -> Any:
    """A typed answer → its expected value, in the shapes of ``run --guess`` (a number, [lo, hi], a string, a
    list of names); ``items``: the measured variants, for a ranking or a winner.  Raises :class:`AnswerError`."""
    s = str(text).strip().lower().replace(" to ", "-").replace("..", "-")
    if not s:
        raise AnswerError("empty answer")
    if q.answer == "yesno":
        if s in ("y", "yes", "true"):
            return True
        if s in ("n", "no", "false"):
            return False
        raise AnswerError("answer y or n")
    if q.answer == "choice":
        return _pick(s, items if q.judge == "winner" else q.choices)
    if q.answer == "ranking":
        return _ranking(s, items)
    s = s.replace(" ", "")
    if s.startswith((">=", "≥")):  # "at least x", as "x+"
        s = s.removeprefix(">=").removeprefix("≥") + "+"
    if q.answer == "count":
        s = s.removesuffix("+")
        lo, sep, hi = s.partition("-")
        try:
            got: Any = [int(lo), int(hi)] if sep else int(s)
        except ValueError:
            raise AnswerError("a whole number, or lo-hi") from None
        if sep and got[0] > got[1]:
            raise AnswerError("lo must be ≤ hi")
        return got
    lo, sep, hi = s.partition("-")
    if sep:
        rng = [_num(lo), _num(hi)]
        if rng[0] > rng[1]:
            raise AnswerError("lo must be ≤ hi")
        if q.answer in ("ratio", "at_least") and rng[0] <= 0:
            raise AnswerError("a ratio is > 0")
        return rng
    if q.answer == "range":
        raise AnswerError("give a range lo-hi")
    if q.answer in ("ratio", "at_least"):
        at_least = s.endswith("+") or q.answer == "at_least"
        x = _num(s.removesuffix("+"))
        if x <= 0:
            raise AnswerError("a ratio is > 0")
        return x if at_least else [round(x / RATIO_SPREAD, 4), round(x * RATIO_SPREAD, 4)]
    x = _num(s.removesuffix("+"))
    return [max(0.0, x - PCT_SPREAD), x + PCT_SPREAD]


def _ranking(s: str, items: tuple[str, ...]) -> list[str]:
    parts = [p for p in s.replace(">", ",").replace(" ", ",").split(",") if p]
    out: list[str] = []
    for p in parts:
        if p.isdigit() and 1 <= int(p) <= len(items):
            out.append(items[int(p) - 1])
            continue
        hits = [c for c in items if c == p] or [c for c in items if c.startswith(p)]
        if len(hits) != 1:
            raise AnswerError(f"{p!r} is none of {', '.join(items)}")
        out.append(hits[0])
    if sorted(out) != sorted(items):
        raise AnswerError(f"rank each of {', '.join(items)} once")
    return out
