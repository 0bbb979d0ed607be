"""A user's mask against the built-in masks, entry by entry.  Pure.

A mask is given row by row as *runs*: for each query row, the half-open intervals ``[start, end)`` of the
keys it keeps, ascending and disjoint, adjacent ones merged.  Runs hold every entry of the (Sq, Sk) boolean
mask and nothing else (:func:`runs_of` builds them from booleans), so two masks whose runs are equal are equal
in every entry; :func:`first_difference` names the first entry where they are not.

The built-ins tried are those whose parameters can be read off the user's mask: none; causal (both alignments
when Sq != Sk); sliding with the window of the widest row; prefix with the keys of the first row; document with
the lengths given by where the rows' runs start (the block structure of a packed sequence).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from attnscope.core.masks import MaskSpec, check_mask

Run = tuple[int, int]
Runs = tuple[Run, ...]


def runs_of(row: Sequence[bool]) -> Runs:
    """The kept intervals of one row of booleans."""
    out: list[Run] = []
    start = None
    for k, keep in enumerate(row):
        if keep and start is None:
            start = k
        elif not keep and start is not None:
            out.append((start, k))
            start = None
    if start is not None:
        out.append((start, len(row)))
    return tuple(out)


def _span(lo: int, hi: int) -> Runs:
    return ((lo, hi),) if hi > lo else ()


def builtin_runs(m: MaskSpec, seq_q: int, seq_kv: int) -> list[Runs]:
    """Each query row's kept keys under the built-in mask ``m`` (padding, which depends on the batch element,
    is not a kind this speaks of): the closed forms of :mod:`attnscope.core.masks`, row by row."""
    off = m.offset(seq_q, seq_kv)
    rows: list[Runs] = []
    if m.kind == "document":
        start = 0
        for n in m.lengths:
            rows.extend(_span(start, i + 1) for i in range(start, start + n))
            start += n
        return rows
    for i in range(seq_q):
        p = i + off  # the query's key position
        upto = min(p + 1, seq_kv)  # keys 0..p that exist
        if m.kind == "none":
            rows.append(_span(0, seq_kv))
        elif m.kind == "causal":
            rows.append(_span(0, upto))
        elif m.kind == "sliding":
            rows.append(_span(max(0, p - (m.window or 1) + 1), upto))
        elif m.kind == "prefix":
            rows.append(_span(0, max(min(m.prefix or 0, seq_kv), upto)))
        else:
            raise ValueError(f"no row form for mask kind {m.kind!r}")
    return rows


def first_difference(a: Sequence[Runs], b: Sequence[Runs]) -> tuple[int, int] | None:
    """The first (query, key) entry, row-major, kept by one mask and not the other; None when equal."""
    for q, (ra, rb) in enumerate(zip(a, b, strict=True)):
        if ra == rb:
            continue
        edges = sorted({x for run in (*ra, *rb) for x in run})
        for k in edges:  # membership changes only at a run's edge: the first such key that differs
            if _holds(ra, k) != _holds(rb, k):
                return q, k
    return None


def _holds(runs: Runs, k: int) -> bool:
    return any(lo <= k < hi for lo, hi in runs)


def _alignments(seq_q: int, seq_kv: int) -> tuple[str | None, ...]:
    return (None,) if seq_q == seq_kv else ("top_left", "lower_right")


def candidates(rows: Sequence[Runs], seq_q: int, seq_kv: int) -> list[MaskSpec]:
    """The built-ins worth comparing, their parameters inferred from ``rows``; simplest first."""
    out = [MaskSpec("none")]
    aligns = _alignments(seq_q, seq_kv)
    out += [MaskSpec("causal", align=a) for a in aligns]
    single = all(len(r) <= 1 for r in rows)
    if not single or not rows:
        return out
    widths = [hi - lo for r in rows for lo, hi in r]
    if widths:
        out += [MaskSpec("sliding", window=max(widths), align=a) for a in aligns]
    if rows[0] and rows[0][0][0] == 0:
        out += [MaskSpec("prefix", prefix=rows[0][0][1], align=a) for a in aligns]
    if seq_q == seq_kv and all(r and r[0][1] == q + 1 for q, r in enumerate(rows)):
        starts = sorted({r[0][0] for r in rows})
        if starts and starts[0] == 0:
            ends = [*starts[1:], seq_q]
            out.append(MaskSpec("document", lengths=tuple(b - a for a, b in zip(starts, ends, strict=True))))
    return out


@dataclass(frozen=True)
class MaskMatch:
    """The outcome of the comparison: the first built-in equal in every entry (canonical name), the entries
    compared for it, and for each built-in tried the first differing (query, key)."""

    equivalent_builtin: str | None
    checked_entries: int
    tried: dict[str, tuple[int, int] | None] = field(default_factory=dict)


def match_builtin(rows: Sequence[Runs], seq_q: int, seq_kv: int, batch: int = 1) -> MaskMatch:
    """Compare the user's mask (``rows``: one Runs per query row, Sq rows over Sk keys) with each candidate
    built-in, every entry; the first equal one is the equivalent.  A candidate the case would refuse (a row
    with no key) is skipped."""
    if len(rows) != seq_q:
        raise ValueError(f"{len(rows)} rows given for seq_q={seq_q}")
    tried: dict[str, tuple[int, int] | None] = {}
    for m in candidates(rows, seq_q, seq_kv):
        try:
            check_mask(m, batch, seq_q, seq_kv)
        except ValueError:
            continue
        diff = first_difference(rows, builtin_runs(m, seq_q, seq_kv))
        tried[m.canonical] = diff
        if diff is None:
            return MaskMatch(m.canonical, seq_q * seq_kv, tried)
    return MaskMatch(None, seq_q * seq_kv, tried)
