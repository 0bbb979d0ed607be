"""An attnscope plugin: attention as F.scaled_dot_product_attention over chunks of queries.

Memory-bounded attention the way many codebases write it by hand: each chunk of queries attends to
all keys, with the case's mask sliced to the chunk.  attnscope profiles it like its own variants.
"""

from __future__ import annotations

from typing import Any

from attnscope.plugin import Case, Inputs, Prepared, Variant

CHUNK = 256  # queries per SDPA call


def check(case: Case) -> str | None:
    """None if this variant can run the case, else the reason (shown in the skipped row)."""
    if case.softcap is not None:
        return "SDPA has no soft-capping"
    return None


def prepare(case: Case, x: Inputs) -> Prepared:
    """Build the call once (masks, chunks); the returned ``fn`` is what attnscope times and profiles.
    It must return the output as (batch, heads, seq_q, head_dim)."""
    import torch
    import torch.nn.functional as F

    from attnscope.plugin import dense_bias, dense_keep

    # The case's mask, built by attnscope from the same mask_mod as every variant: None, (Sq, Sk) or (B, 1, Sq, Sk).
    mask = dense_bias(case, x.q.device, x.q.dtype) if case.alibi else dense_keep(case, x.q.device)
    kw: dict[str, Any] = {"scale": x.scale, "enable_gqa": case.is_gqa}
    bounds = [(i, min(i + CHUNK, case.seq_q)) for i in range(0, case.seq_q, CHUNK)]

    def call() -> torch.Tensor:
        outs = [
            F.scaled_dot_product_attention(
                x.q[:, :, a:b], x.k, x.v, attn_mask=None if mask is None else mask[..., a:b, :], **kw
            )
            for a, b in bounds
        ]
        return torch.cat(outs, dim=2)

    return Prepared(fn=call, notes=[f"{len(bounds)} SDPA call(s) of up to {CHUNK} queries each"])


VARIANTS = [
    Variant(
        name="sdpa_query_chunks",
        family="plugin",
        description=f"F.scaled_dot_product_attention over chunks of {CHUNK} queries (example plugin)",
        check=check,
        prepare=prepare,
    )
]
