"""Cases from the table of the case's fields (:mod:`attnscope.core.case`): the device's default case, a case of
given fields on it, and a sweep's axes and their product."""

from __future__ import annotations

import itertools
import json
import math
from collections.abc import Iterable
from dataclasses import replace
from typing import Any

from attnscope.core.arguments import MAX_BUDGET_TOKENS, UsageError, check_once, check_whole, fields_of
from attnscope.core.case import AXIS_FIELDS, FIELD, Case, default_fields
from attnscope.core.masks import parse_mask

MAX_JOBS = 100_000  # far beyond a day on one GPU: a larger grid is a typo


def default_case(device: str) -> Case:
    """The device's default case: each field's default for the device (attnscope.core.case.FIELDS)."""
    return Case(**default_fields(device), device=device)


# CPU: small enough that every default variant runs in well under a minute on 2 cores.  GPU: the study's case.
CPU_DEFAULT = default_case("cpu")
GPU_DEFAULT = default_case("cuda")


def make_case(device: str, **overrides: Any) -> Case:
    """The device's default case with any fields overridden (None means keep).  The device is
    named: :func:`attnscope.measure.env.default_device` picks one where the caller has none."""
    c = default_case(device)
    fields = {k: v for k, v in overrides.items() if v is not None}
    for k, v in fields.items():
        coerce = FIELD[k].coerce if k in FIELD else None
        if coerce is not None:
            fields[k] = coerce(v)
    return replace(c, **fields)


class Axes:
    """A sweep's axes: the values of each, named as its flag (``seq``, ``head_dim``, ``mask``, …: the fields
    of :data:`attnscope.core.case.AXIS_FIELDS`); an axis left out takes the table's default.

    ``None`` in ``kv_heads``/``seq_kv`` means = heads / = seq, in ``mask`` the causal axis decides, in ``softcap``
    no soft-capping; ``budget_tokens`` sets batch = N / seq (B·S kept constant).
    """

    def __init__(self, budget_tokens: int | None = None, **values: Any) -> None:
        known = {f.dest: f for f in AXIS_FIELDS}
        unknown = sorted(set(values) - set(known))
        if unknown:
            raise TypeError(f"no sweep axis named {', '.join(unknown)}; the axes: {', '.join(known)}")
        object.__setattr__(self, "values", {d: list(values.get(d, f.axis_values())) for d, f in known.items()})
        object.__setattr__(self, "budget_tokens", budget_tokens)

    values: dict[str, list[Any]]
    budget_tokens: int | None

    def __getattr__(self, name: str) -> list[Any]:
        values = self.__dict__.get("values", {})
        if name in values:
            return values[name]  # type: ignore[no-any-return]
        raise AttributeError(name)

    def __setattr__(self, name: str, value: Any) -> None:
        if name in self.values:
            self.values[name] = list(value)
        else:
            object.__setattr__(self, name, value)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Axes) and (self.values, self.budget_tokens) == (other.values, other.budget_tokens)

    def __repr__(self) -> str:
        given = ", ".join(f"{k}={v!r}" for k, v in self.values.items())
        return f"Axes({given}, budget_tokens={self.budget_tokens!r})"


def _point_text(point: dict[str, Any]) -> str:
    """A grid point by the fields that have a short name, e.g. 'B=1 H=8 KV=3 S=1024 D=64 mask=sliding:4 alibi'."""
    parts = []
    for f in AXIS_FIELDS:
        v = point[f.name]
        if f.short is None or v is None or v is False:
            continue
        parts.append(f.short if v is True else f"{f.short}={v:g}" if isinstance(v, float) else f"{f.short}={v}")
    return " ".join(parts)


class Grid(list[Case]):
    """A sweep's cases and, per case measured, the other spellings of its mask it stands for (``merged``, from
    :func:`one_per_mask`: written into each of its rows as ``same_masks``, so a later reader of the rows sees the
    merge)."""

    def __init__(self, cases: list[Case], merged: dict[Case, list[str]] | None = None) -> None:
        super().__init__(cases)
        self.merged = merged or {}

    @property
    def same_masks(self) -> list[dict[str, Any]]:
        """The masks measured once for several spellings: each ``{"measured", "same", "points", "where"}``."""
        return _grouped((str(kept.mask), tuple(same), kept) for kept, same in self.merged.items())


def mask_at_shape(c: Case) -> Case:
    """``c`` with its mask spelled as its shapes make it (:meth:`attnscope.core.masks.MaskSpec.at_shape`): two
    cases that differ only in an alignment where Sq == Sk give the same case here."""
    if c.mask is None or c.seq_q != c.num_seq_kv:
        return c
    spec = parse_mask(c.mask)
    bare = spec.at_shape(c.seq_q, c.num_seq_kv)
    return c if bare == spec else replace(c, mask=bare.canonical)


SAME_MASK_WHERE = "seq_q == seq_kv (there top-left and lower-right put each query at the same keys)"


def _grouped(found: Iterable[tuple[str, tuple[str, ...], Any]]) -> list[dict[str, Any]]:
    """(the mask measured, the other spellings, the point) → one entry per mask and spellings, with how many
    distinct points, in order of first appearance."""
    points: dict[tuple[str, tuple[str, ...]], set[Any]] = {}
    for measured, same, point in found:
        points.setdefault((measured, same), set()).add(point)
    return [
        {"measured": m, "same": list(s), "points": len(p), "where": SAME_MASK_WHERE} for (m, s), p in points.items()
    ]


def one_per_mask(cases: list[Case]) -> Grid:
    """``cases`` less those whose mask is, at their shape, the mask of an earlier case (the same point otherwise):
    at Sq == Sk ``causal``, ``causal@top_left`` and ``causal_lower_right`` are one mask, and the variants run the
    same code for each, so it is measured once, under the spelling listed first.  The grid's ``same_masks`` says
    which spellings were measured as which, at how many points."""
    first: dict[Case, Case] = {}
    merged: dict[Case, list[str]] = {}
    for c in cases:
        kept = first.setdefault(mask_at_shape(c), c)
        if kept is not c and c.mask not in merged.setdefault(kept, []):
            merged[kept].append(str(c.mask))
    return Grid(list(first.values()), {kept: same for kept, same in merged.items() if same})


def same_masks_of(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The ``same_masks`` entries (as a :class:`Grid` gives them) that rows recorded: each row measured for several
    spellings carries them in its ``same_masks`` (the other spellings, its case's ``mask`` the one measured);
    ``points`` counts the distinct cases."""
    recorded = [
        r
        for r in rows
        if r.get("same_masks") and isinstance(r["same_masks"], list)
        and isinstance(r.get("case"), dict) and r["case"].get("mask")
    ]  # fmt: skip
    return _grouped(
        (
            str(r["case"]["mask"]),
            tuple(str(s) for s in r["same_masks"]),
            json.dumps(r["case"], sort_keys=True, default=str),  # one point per case
        )
        for r in recorded
    )


def grid(axes: Axes, device: str) -> Grid:
    """Every combination, in the table's order (the last axis varies fastest); a combination that is not a
    valid case is an error naming it, and so is an axis that lists a value twice (each point is measured once).  A
    mask sets causal itself: with masks given, the causal axis is left out.  Masks that are one mask at a point's
    shapes (alignments where seq_q == seq_kv) are measured once there (:func:`one_per_mask`: ``same_masks`` says
    which)."""
    for f in AXIS_FIELDS:
        check_once(f.dest, axes.values[f.dest])
    lists = {f.name: list(axes.values[f.dest]) for f in AXIS_FIELDS}
    if axes.budget_tokens is not None:
        check_whole("budget_tokens", axes.budget_tokens, maximum=MAX_BUDGET_TOKENS)
        lists["batch"] = [None]
    if lists["mask"] != [None]:
        lists["causal"] = [False]  # a mask sets causal itself
    n = math.prod(len(v) for v in lists.values())
    if n > MAX_JOBS:
        raise UsageError(f"the grid holds {n:,} cases, over {MAX_JOBS:,}: narrow it")
    cases: list[Case] = []
    for combo in itertools.product(*lists.values()):
        point = dict(zip(lists, combo, strict=True))
        if point["batch"] is None:
            assert axes.budget_tokens is not None
            if axes.budget_tokens % point["seq_q"]:
                raise UsageError(
                    f"budget_tokens {axes.budget_tokens} is not a multiple of seq {point['seq_q']} "
                    "(B·S must stay constant)",
                    fields=("budget_tokens",),
                )
            point["batch"] = axes.budget_tokens // point["seq_q"]
        try:
            c = Case(**point, device=device)
        except ValueError as e:
            raise UsageError(f"the grid point {_point_text(point)}: {e}", fields=fields_of(e)) from None
        cases.append(c)
    return one_per_mask(list(dict.fromkeys(cases)))


def axes_from(args: Any) -> Axes:
    """Axes from parsed command-line strings, each read by its field's parser (None: the axis default)."""
    a = Axes()
    for f in AXIS_FIELDS:
        given = getattr(args, f.dest, None)
        if given is None:
            continue
        if f.excludes is not None and getattr(args, FIELD[f.excludes[0]].dest, None) is not None:
            raise UsageError(f.excludes[1], fields=(f.dest, FIELD[f.excludes[0]].dest))
        assert f.axis is not None
        a.values[f.dest] = f.axis(given)
    if getattr(args, "budget_tokens", None) is not None:
        if getattr(args, "batch", None) is not None:
            raise UsageError(
                "budget_tokens sets the number of sequences (N / seq): give it or batch, not both",
                fields=("budget_tokens", "batch"),
            )
        a.budget_tokens = args.budget_tokens
    return a
