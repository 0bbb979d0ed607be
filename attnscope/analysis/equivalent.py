"""A mask that keeps every key is no mask: the case is the plain call.  Pure.

Lower-right causal with one query (it sees every key), a sliding window at least as wide as the keys, a
padding that pads nothing, a prefix covering every key: the kept count is B·Sq·Sk (core.masks' exact
closed forms), so the call computes what ``--mask none`` computes, and a fused backend takes it with
nothing to build.
"""

from __future__ import annotations

from typing import Any

from attnscope.core.masks import kept_pairs, parse_mask


def equivalent_case(case: dict[str, Any] | None) -> dict[str, str] | None:
    """``{mask, why}`` when ``case``'s mask keeps every score entry; None otherwise (or no mask, or no case)."""
    if not isinstance(case, dict) or not case.get("mask"):
        return None
    try:
        m = parse_mask(case["mask"])
        b, sq = case["batch"], case["seq_q"]
        sk = case.get("seq_kv") or sq
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
