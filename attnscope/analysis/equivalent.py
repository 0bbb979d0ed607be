"""A mask that keeps every key is no mask: the case is the plain call.  Pure.

Lower-right causal with one query (it sees every key), a sliding window at least as wide as the keys, a
padding that pads nothing, a prefix covering every key: the kept count is B·Sq·Sk (core.masks' exact
closed forms), so the call computes what ``--mask none`` computes, and a fused backend takes it with
nothing to build.

A mask that keeps exactly the causal entries is the plain causal call (:func:`causal_equivalent`): a sliding
window no row reaches past (``sliding:W`` with W at least the keys) keeps a subset of the causal entries and a
prefix (``prefix:0``, ``prefix:1``) a superset, so an equal kept count is the same set.
"""

from __future__ import annotations

from typing import Any

from attnscope.core.masks import MaskSpec, kept_pairs, parse_mask


def _mask_of(case: dict[str, Any] | None) -> tuple[MaskSpec, Any, Any, Any] | None:
    """A case dict's mask and its batch, query and key lengths (keys default to the queries); None where it has no
    mask or they cannot be read."""
    if not isinstance(case, dict) or not case.get("mask"):
        return None
    try:
        m = parse_mask(case["mask"])
        sq = case["seq_q"]
        return m, case["batch"], sq, case.get("seq_kv") or sq
    except (KeyError, TypeError, ValueError):
        return None


def equivalent_case(case: dict[str, Any] | None) -> dict[str, str] | None:
    """``{mask, why}`` when ``case``'s mask keeps every score entry; None otherwise (or no mask, or no case)."""
    got = _mask_of(case)
    if got is None:
        return None
    m, b, sq, sk = got
    try:
        kept = kept_pairs(m, b, sq, sk)
    except (KeyError, TypeError, ValueError):
        return None
    if m.kind == "none" or kept != b * sq * sk:
        return None
    if m.kind == "causal":
        why = f"lower-right causal with {sq} query row(s) against {sk} keys: the last query sees every key"
    elif m.kind == "sliding":
        why = f"a window of {m.window} keys covers all {sk} keys"
    elif m.kind == "padding":
        why = f"every sequence's key length is {sk}: the padding hides nothing"
    elif m.kind == "prefix":
        why = f"a prefix of {m.prefix} keys covers all {sk} keys"
    else:
        why = f"the mask keeps all {b * sq * sk:,} score entries"
    return {"mask": "none", "why": why + "; the call is the plain one (attn_mask=None, is_causal=False)"}


def causal_equivalent(case: dict[str, Any] | None) -> dict[str, str] | None:
    """``{mask, why}`` when ``case``'s sliding or prefix mask keeps exactly the causal entries (of its alignment);
    None otherwise.  ``mask`` is that causal mask's canonical spelling (``causal``, ``causal@top_left`` or
    ``causal_lower_right``)."""
    got = _mask_of(case)
    if got is None:
        return None
    m, b, sq, sk = got
    try:
        if m.kind not in ("sliding", "prefix") or kept_pairs(m, b, sq, sk) != kept_pairs(
            MaskSpec("causal", align=m.align), b, sq, sk
        ):
            return None
    except (KeyError, TypeError, ValueError):
        return None
    causal = MaskSpec("causal", align=m.align if sq != sk else None).canonical
    if m.kind == "sliding":
        why = f"a window of {m.window} keys reaches back past the first key from every query: it is causal"
    elif m.prefix == 0:
        why = "a prefix of 0 keys adds nothing to the causal part"
    else:
        why = f"a prefix of {m.prefix} key(s) is within what every query sees causally already"
    exact = " (attn_mask=None, is_causal=True)" if causal in ("causal", "causal@top_left") else ""
    return {"mask": causal, "why": why + f"; the call is the plain causal one{exact}"}
