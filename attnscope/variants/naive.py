"""Attention written out by hand: matmul, scale mul, masked_fill, softmax, matmul."""

from __future__ import annotations

from attnscope.core.types import Case
from attnscope.variants.base import Inputs, Prepared, Variant


def _prepare(case: Case, x: Inputs, inplace: bool) -> Prepared:
    import torch

    from attnscope.variants.mask_mods import alibi_bias, dense_keep

    q, k, v, scale = x.q, x.k, x.v, x.scale
    groups = case.heads // case.num_kv_heads
    # The mask (and any ALiBi bias) is built once, outside the call: the study times attention, not mask
    # setup.  True marks positions to hide; (Sq, Sk), or (B, 1, Sq, Sk) when it depends on the batch element.
    keep = dense_keep(case, q.device)
    hide = None if keep is None else ~keep
    cap = case.softcap
    # shifted per row for 16-bit precision where the softmax alone follows; soft-capping is no shift-invariant
    bias = alibi_bias(case, q.device, q.dtype, keep, shift=cap is None) if case.alibi else None

    def call() -> torch.Tensor:
        kk, vv = k, v
        if groups > 1:
            kk = k.repeat_interleave(groups, dim=1)
            vv = v.repeat_interleave(groups, dim=1)
        s = torch.matmul(q, kk.transpose(-2, -1)) * scale
        if bias is not None:
            s = s + bias
        if cap is not None:
            s = torch.tanh(s / cap) * cap
        if hide is not None:
            if inplace:
                s.masked_fill_(hide, float("-inf"))
            else:
                s = s.masked_fill(hide, float("-inf"))
        p = torch.softmax(s, dim=-1)
        return torch.matmul(p, vv)

    return Prepared(fn=call)


def _always(case: Case) -> str | None:
    return None


NAIVE = Variant(
    name="naive",
    family="naive",
    description="matmul, scale mul, out-of-place masked_fill, softmax, matmul",
    check=_always,
    prepare=lambda c, x: _prepare(c, x, inplace=False),
)
NAIVE_INPLACE = Variant(
    name="naive_inplace",
    family="naive",
    description="the same with masked_fill_ (in place)",
    check=_always,
    prepare=lambda c, x: _prepare(c, x, inplace=True),
)
