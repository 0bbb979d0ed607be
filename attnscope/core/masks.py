"""The attention mask of a case, as plain data: parse, check against the shapes, count kept scores.

No torch here (the analysis side and ``types.Case`` import it); the mask and score functions that
run are built from this spec in :mod:`attnscope.variants.mask_mods`.

Grammar: ``KIND[:ARGS][@ALIGN]``

- ``none``; ``causal``; ``causal_lower_right`` (= ``causal@lower_right``); ``causal_top_left``
  (= ``causal@top_left``);
- ``sliding:W``: causal, each query sees the W most recent keys, itself included (a window at least as wide as
  every row's keys is causal, whatever its size: :meth:`MaskSpec.fitted` gives the window the tensors are built with);
- ``document:L1,L2,...``: packed documents, causal within each;
- ``prefix:P``: every query sees the first P keys, causal after (``prefix:0`` is causal; P at least the keys
  keeps every key);
- ``padding:K1,K2,...``: batch element b sees its first K_b keys (no causal part).

``ALIGN`` is ``top_left`` or ``lower_right`` and matters only when seq_q != seq_kv: top-left puts the
queries at positions 0..Sq-1 (what SDPA's ``is_causal`` does); lower-right puts them at the end of the
keys, Sk-Sq..Sk-1 (decode, chunked prefill).  Query i then sits at key position i + offset.
"""

from __future__ import annotations

from dataclasses import dataclass

from attnscope.core.arguments import UsageError

ALIGNS = ("top_left", "lower_right")
KINDS = ("none", "causal", "sliding", "document", "prefix", "padding")
# Kinds whose kept set depends on where the queries sit among the keys (ALiBi positions too).
POSITIONAL = ("causal", "sliding", "prefix")

MASK_HELP = (
    "none | causal | causal_lower_right | sliding:W | document:L1,L2,... | prefix:P | padding:K1,K2,... "
    "(optionally @top_left or @lower_right)"
)


def ambiguity_message(what: str, seq_q: int, seq_kv: int, mask: str = "causal") -> str:
    """One line explaining the two meanings of a positional mask (or ALiBi's positions) when Sq != Sk, and the
    spelling of each for ``mask`` (its canonical name): a sliding window is told ``sliding:W@lower_right``, not
    to become causal."""
    if mask != "causal":
        return (
            f"{what} with seq_q={seq_q} != seq_kv={seq_kv} is ambiguous: top-left (torch's is_causal: the queries "
            f"are positions 0..{seq_q - 1} of the keys) or lower-right (the queries are the last {seq_q} "
            f"positions, as in decode and chunked prefill); say which with mask {mask}@lower_right or mask "
            f"{mask}@top_left"
        )
    return (
        f"{what} with seq_q={seq_q} != seq_kv={seq_kv} is ambiguous: top-left (torch's is_causal: the queries "
        f"are positions 0..{seq_q - 1}, query i sees keys 0..i) or lower-right (the queries are the last "
        f"{seq_q} positions, as in decode and chunked prefill: query i sees keys 0..i+{seq_kv - seq_q}); "
        "say which with mask causal_lower_right or mask causal_top_left (or KIND:ARGS@lower_right)"
    )


@dataclass(frozen=True)
class MaskSpec:
    kind: str
    window: int | None = None  # sliding
    prefix: int | None = None  # prefix
    lengths: tuple[int, ...] = ()  # document lengths or padding key lengths
    align: str | None = None  # None: not stated

    @property
    def canonical(self) -> str:
        arg = {
            "sliding": f":{self.window}",
            "prefix": f":{self.prefix}",
            "document": ":" + ",".join(map(str, self.lengths)),
            "padding": ":" + ",".join(map(str, self.lengths)),
        }.get(self.kind, "")
        if self.kind == "causal" and self.align == "lower_right":
            return "causal_lower_right"
        return f"{self.kind}{arg}" + (f"@{self.align}" if self.align else "")

    def offset(self, seq_q: int, seq_kv: int) -> int:
        """Key position of query 0: 0 top-left, Sk-Sq lower-right (either, when Sq == Sk)."""
        return seq_kv - seq_q if self.align == "lower_right" else 0

    def fitted(self, seq_q: int, seq_kv: int) -> MaskSpec:
        """The same kept set with its numbers within the shapes: a window past Sq + Sk (no row reaches back that
        far: row i's lowest key, i + offset - W + 1, is below 0 for every row once W ≥ Sq + Sk) and a prefix past
        Sk (there are no more keys) are cut to those, so no tensor or index is asked to hold a number of the user's
        choosing (``sliding:99999999999999999999`` is causal, and fits an int64 as ``sliding:Sq+Sk``)."""
        if self.kind == "sliding" and self.window is not None and self.window > seq_q + seq_kv:
            return MaskSpec(self.kind, window=seq_q + seq_kv, align=self.align)
        if self.kind == "prefix" and self.prefix is not None and self.prefix > seq_kv:
            return MaskSpec(self.kind, prefix=seq_kv, align=self.align)
        return self

    def at_shape(self, seq_q: int, seq_kv: int) -> MaskSpec:
        """The mask as the shapes make it: without its alignment where Sq == Sk, where top-left and lower-right put
        every query at the same key position (offset 0), so ``causal``, ``causal@top_left`` and
        ``causal_lower_right`` are one mask there."""
        return MaskSpec(self.kind, self.window, self.prefix, self.lengths) if seq_q == seq_kv else self

    def is_top_left_causal(self, seq_q: int, seq_kv: int) -> bool:
        """Exactly what SDPA's is_causal=True computes."""
        return self.kind == "causal" and (seq_q == seq_kv or self.align != "lower_right")


def _ints(text: str, what: str, spec: str, least: int = 1) -> tuple[int, ...]:
    try:
        vals = tuple(int(p) for p in text.split(",") if p.strip() != "")
    except ValueError:
        must = "must be integers" if what.endswith("s") else "must be an integer"
        raise UsageError(f"mask {spec!r}: {what} {must}, got {text!r}", fields=("mask",)) from None
    if not vals:
        raise UsageError(f"mask {spec!r}: {what} missing", fields=("mask",))
    if min(vals) < least:
        raise UsageError(
            f"mask {spec!r}: every {what[:-1] if what.endswith('s') else what} must be >= {least}", fields=("mask",)
        )
    return vals


def _one_int(text: str, what: str, spec: str, kind: str, least: int = 1) -> int:
    vals = _ints(text, what, spec, least)
    if len(vals) != 1:
        raise UsageError(f"mask {spec!r}: {kind} takes one {what}, got {text!r}", fields=("mask",))
    return vals[0]


def parse_mask(spec: str) -> MaskSpec:
    """Parse the grammar above; one-line ValueError on anything else."""
    s = spec.strip().lower()
    align = None
    if "@" in s:
        s, align = s.split("@", 1)
        if align not in ALIGNS:
            raise UsageError(
                f"mask {spec!r}: alignment must be top_left or lower_right, got {align!r}", fields=("mask",)
            )
    if s == "causal_lower_right":
        if align == "top_left":
            raise UsageError(f"mask {spec!r}: causal_lower_right cannot be @top_left", fields=("mask",))
        return MaskSpec("causal", align="lower_right")
    if s == "causal_top_left":
        if align == "lower_right":
            raise UsageError(f"mask {spec!r}: causal_top_left cannot be @lower_right", fields=("mask",))
        s, align = "causal", "top_left"
    kind, _, arg = s.partition(":")
    if kind not in KINDS:
        raise UsageError(f"mask {spec!r}: no such mask; use {MASK_HELP}", fields=("mask",))
    if kind in ("none", "causal"):
        if arg:
            raise UsageError(f"mask {spec!r}: {kind} takes no argument", fields=("mask",))
        return MaskSpec(kind, align=align)
    if not arg:
        raise UsageError(f"mask {spec!r}: {kind} needs an argument ({MASK_HELP})", fields=("mask",))
    if kind == "sliding":
        return MaskSpec(kind, window=_one_int(arg, "window", spec, kind), align=align)
    if kind == "prefix":
        # prefix:0 is causal (said so by attnscope.analysis.equivalent), not refused
        return MaskSpec(kind, prefix=_one_int(arg, "prefix length", spec, kind, least=0), align=align)
    return MaskSpec(kind, lengths=_ints(arg, "lengths", spec), align=align)


def check_mask(
    m: MaskSpec, batch: int, seq_q: int, seq_kv: int, alibi: bool = False, stated: str | None = None
) -> None:
    """Refuse (one-line UsageError) a mask that does not fit the shapes or leaves a query with no key.
    ``stated``: how the user asked for it, for the message (default ``mask NAME``)."""
    name = m.canonical
    covers_all = m.kind == "prefix" and (m.prefix or 0) >= seq_kv  # every key, where the queries sit or not
    if seq_q != seq_kv and m.align is None and ((m.kind in POSITIONAL and not covers_all) or alibi):
        what = (stated or f"mask {name}") + (" with alibi" if alibi and m.kind not in POSITIONAL else "")
        # the message names causal only where it was stated (CAUSAL_STATED): "causal_top_left" is a mask's name
        raise UsageError(
            ambiguity_message(what, seq_q, seq_kv, name), fields=("mask", "alibi", *(("causal",) if stated else ()))
        )
    if m.kind == "document":
        if seq_q != seq_kv:
            raise UsageError(
                f"mask {name}: a packed sequence needs seq_q == seq_kv, got {seq_q} and {seq_kv}", fields=("mask",)
            )
        if sum(m.lengths) != seq_q:
            raise UsageError(
                f"mask {name}: document lengths sum to {sum(m.lengths)}, the sequence is {seq_q}", fields=("mask",)
            )
    if m.kind == "padding":
        if len(m.lengths) != batch:
            raise UsageError(f"mask {name}: {len(m.lengths)} key length(s) for a batch of {batch}", fields=("mask",))
        if max(m.lengths) > seq_kv:
            raise UsageError(f"mask {name}: a key length exceeds seq_kv={seq_kv}", fields=("mask",))
    # prefix:0 keeps no key before the causal part, so lower-right it leaves rows empty as causal does (a prefix
    # of 1 or more gives every row key 0)
    empty_prefix = m.kind == "prefix" and not m.prefix
    if (m.kind in ("causal", "sliding") or empty_prefix) and m.offset(seq_q, seq_kv) < 0:
        raise UsageError(
            f"mask {name}: with seq_q={seq_q} > seq_kv={seq_kv} lower-right, the first {seq_q - seq_kv} "
            "queries see no key at all (their softmax is undefined)",
            fields=("mask",),
        )
    if m.kind == "sliding" and m.window is not None:
        # row i keeps keys (i + off - W, i + off] ∩ [0, Sk): empty once i + off - W + 1 > Sk - 1
        empty = seq_q + m.offset(seq_q, seq_kv) - seq_kv - m.window + 1
        if empty > 0:
            raise UsageError(
                f"mask {name}: with seq_q={seq_q} and seq_kv={seq_kv} top-left, the last {empty} queries are more "
                f"than the window ({m.window}) past the last key and see no key at all (their softmax is undefined)",
                fields=("mask",),
            )


def _ramp_sum(n: int, c: int, lo: int, hi: int) -> int:
    """Σ_{i=0}^{n-1} clamp(i + c, lo, hi), in closed form (lo <= hi)."""
    if n <= 0:
        return 0
    # i + c < lo for i < a; lo <= i + c <= hi for a <= i < b; above hi for i >= b.
    a = min(n, max(0, lo - c))
    b = min(n, max(a, hi - c + 1))
    mid = (b - a) * (a + b - 1 + 2 * c) // 2  # Σ_{i=a}^{b-1} (i + c)
    return a * lo + mid + (n - b) * hi


def kept_pairs(m: MaskSpec, batch: int, seq_q: int, seq_kv: int) -> int:
    """Score entries the mask keeps, summed over the batch, for ONE head (exact, closed forms)."""
    off = m.offset(seq_q, seq_kv)
    if m.kind == "none":
        return batch * seq_q * seq_kv
    if m.kind == "causal":  # row i keeps keys 0..i+off
        return batch * _ramp_sum(seq_q, off + 1, 0, seq_kv)
    if m.kind == "sliding":  # keys in (i+off-W, i+off]: those <= i+off minus those <= i+off-W
        w = m.window or 0
        return batch * (_ramp_sum(seq_q, off + 1, 0, seq_kv) - _ramp_sum(seq_q, off + 1 - w, 0, seq_kv))
    if m.kind == "prefix":  # max(P, i+off+1), capped at Sk
        p = min(m.prefix or 0, seq_kv)
        return batch * _ramp_sum(seq_q, off + 1, p, seq_kv)
    if m.kind == "document":
        return batch * sum(n * (n + 1) // 2 for n in m.lengths)
    if m.kind == "padding":
        return seq_q * sum(m.lengths)
    raise ValueError(f"no count for mask kind {m.kind!r}")


def kept_formula(m: MaskSpec) -> str:
    """How kept_pairs counts, in words, for the FLOP footnote."""
    return {
        "none": "Sq·Sk per (batch, head)",
        "causal": "Σ over queries of the keys at or before the query's position (offset Sk−Sq when lower-right)",
        "sliding": "Σ over queries of the W most recent keys that exist",
        "document": "Σ over documents of L·(L+1)/2",
        "prefix": "Σ over queries of max(P, keys at or before the query)",
        "padding": "Sq·K_b for each batch element",
    }[m.kind]
