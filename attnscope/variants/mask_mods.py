"""A case's mask and score modification as runnable functions.  Needs torch.

One ``mask_mod(b, h, q_idx, kv_idx) -> keep`` and one ``score_mod(score, b, h, q_idx, kv_idx)`` per
case, in FlexAttention's signature, serve every consumer: flex takes them as they are (with a
``BlockMask``), and the dense boolean mask of naive, SDPA and the fp64 reference is the same
``mask_mod`` evaluated on index grids.  Positions are shifted by the alignment offset (lower-right:
query i sits at key position i + Sk - Sq) before the mask functions see them.  The masks are written
here (no attention-gym needed); soft-capping and ALiBi come from attention-gym.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from attnscope.core.arguments import UsageError
from attnscope.core.masks import MaskSpec
from attnscope.core.types import Case

MaskMod = Callable[[Any, Any, Any, Any], Any]
ScoreMod = Callable[[Any, Any, Any, Any, Any], Any]


def _shift_q(inner: MaskMod, off: int) -> MaskMod:
    if off == 0:
        return inner

    def shifted(b: Any, h: Any, q_idx: Any, kv_idx: Any) -> Any:
        return inner(b, h, q_idx + off, kv_idx)

    return shifted


def _padding(lengths: tuple[int, ...], device: Any) -> MaskMod:
    import torch

    # Batch element b keeps its first K_b keys.
    valid = torch.tensor(lengths, dtype=torch.int64, device=device)

    def padding(b: Any, h: Any, q_idx: Any, kv_idx: Any) -> Any:
        return kv_idx < valid[b]

    return padding


def _causal() -> MaskMod:
    def causal(b: Any, h: Any, q_idx: Any, kv_idx: Any) -> Any:
        return q_idx >= kv_idx

    return causal


def _sliding(window: int) -> MaskMod:
    # sliding:W keeps the W most recent keys, the query's own included (as Hugging Face's Mistral): q - k < W.
    last = window - 1

    def sliding(b: Any, h: Any, q_idx: Any, kv_idx: Any) -> Any:
        return (q_idx - kv_idx <= last) & (q_idx >= kv_idx)

    return sliding


def _prefix(prefix: int) -> MaskMod:
    def prefix_lm(b: Any, h: Any, q_idx: Any, kv_idx: Any) -> Any:
        return (kv_idx < prefix) | (q_idx >= kv_idx)

    return prefix_lm


def doc_starts(lengths: tuple[int, ...], device: Any) -> Any:
    """Position of the first token of each position's document: (S,) int32."""
    import torch

    n = torch.tensor(lengths, dtype=torch.int64, device=device)
    starts = torch.cumsum(n, 0) - n
    return torch.repeat_interleave(starts, n).to(torch.int32)


def _document(lengths: tuple[int, ...], device: Any) -> MaskMod:
    # One lookup, two comparisons: key k is kept when it lies between the start of the query's document and
    # the query.  On the H200 this ran 4.8x faster than attention-gym's offsets-based mask_mod and 1.2x faster
    # than comparing document ids (docs/results/masks_formulations.md).
    start = doc_starts(lengths, device)

    def document(b: Any, h: Any, q_idx: Any, kv_idx: Any) -> Any:
        return (start[q_idx] <= kv_idx) & (kv_idx <= q_idx)

    return document


def mask_mod_for(m: MaskSpec, seq_q: int, seq_kv: int, device: Any) -> MaskMod | None:
    """The keep-function of a built-in mask; None for ``none`` (nothing masked).  Each is written in the
    formulation measured fastest with compiled flex on the H200 (docs/results/masks_formulations.md)."""
    off = m.offset(seq_q, seq_kv)
    if m.kind == "none":
        return None
    if m.kind == "causal":
        return _shift_q(_causal(), off)
    if m.kind == "padding":
        return _padding(m.lengths, device)
    if m.kind == "sliding":
        return _shift_q(_sliding(m.window or 1), off)
    if m.kind == "prefix":
        return _shift_q(_prefix(m.prefix or 0), off)
    if m.kind == "document":
        return _document(m.lengths, device)
    raise ValueError(f"no mask_mod for mask kind {m.kind!r}")


def score_mod_for(case: Case) -> ScoreMod | None:
    """Soft-capping and/or ALiBi, applied to the scaled score (Gemma 2 caps the scaled logits)."""
    if not case.alibi and case.softcap is None:
        return None
    try:
        from attn_gym.mods import generate_alibi_bias, generate_tanh_softcap
    except ImportError as e:
        raise UsageError(
            f"softcap and alibi are built on attention-gym (pip install attn-gym): {e}", fields=("softcap", "alibi")
        ) from e

    mods: list[ScoreMod] = []
    if case.alibi:
        off = case.mask_spec.offset(case.seq_q, case.num_seq_kv)
        alibi = generate_alibi_bias(case.heads)

        def alibi_at(score: Any, b: Any, h: Any, q_idx: Any, kv_idx: Any) -> Any:
            return alibi(score, b, h, q_idx + off, kv_idx)

        mods.append(alibi_at if off else alibi)
    if case.softcap is not None:
        # attention-gym's type says int; the body is c·tanh(s/c) and takes any float.
        mods.append(generate_tanh_softcap(case.softcap, approx=False))  # type: ignore[arg-type]
    if len(mods) == 1:
        return mods[0]

    def both(score: Any, b: Any, h: Any, q_idx: Any, kv_idx: Any) -> Any:
        for f in mods:  # bias first, then the cap: the cap bounds what the softmax sees
            score = f(score, b, h, q_idx, kv_idx)
        return score

    return both


def dense_keep(case: Case, device: Any, q0: int = 0, q1: int | None = None, batch: int | None = None) -> Any:
    """Boolean keep-mask of query rows q0..q1 over all keys: (Sq', Sk), or (B, 1, Sq', Sk) when the mask
    depends on the batch element (padding) and ``batch`` is None; None when nothing is masked."""
    import torch

    m = case.mask_spec
    fn = mask_mod_for(m, case.seq_q, case.num_seq_kv, device)
    if fn is None:
        return None
    q1 = case.seq_q if q1 is None else q1
    qi = torch.arange(q0, q1, device=device).view(-1, 1)
    ki = torch.arange(case.num_seq_kv, device=device).view(1, -1)
    h = torch.zeros((), dtype=torch.int64, device=device)
    if m.kind != "padding":
        return fn(torch.zeros((), dtype=torch.int64, device=device), h, qi, ki).expand(q1 - q0, -1)
    if batch is not None:
        return fn(torch.tensor(batch, device=device), h, qi, ki).expand(q1 - q0, -1)
    b = torch.arange(case.batch, device=device).view(-1, 1, 1, 1)
    return fn(b, h, qi.view(1, 1, -1, 1), ki.view(1, 1, 1, -1)).expand(case.batch, 1, q1 - q0, -1)


def alibi_slopes(heads: int) -> Any:
    """ALiBi's slope of each head, 2^(-8(h+1)/H), from attention-gym's score_mod (fp64, shape (H,))."""
    import torch
    from attn_gym.mods import generate_alibi_bias

    h = torch.arange(heads)
    zero = torch.zeros((), dtype=torch.float64)
    return generate_alibi_bias(heads)(zero, 0, h, 0, 1).to(torch.float64)


def alibi_bias(case: Case, device: Any, dtype: Any, keep: Any = None, *, shift: bool = True) -> Any:
    """ALiBi's additive bias slope·(key − query position), positions aligned as the mask, each row shifted by
    the constant that makes its largest kept entry 0: (B|1, H, Sq, Sk).

    The softmax ignores a constant per row, so the attention is ALiBi's exactly; the shift is for 16-bit
    dtypes.  Unshifted, a row's dominant keys can sit at a bias of hundreds (no mask: slope 0.5 × distance
    511 = 255.5, where bf16 steps by 2), which rounds the bias and drowns the score added to it; shifted,
    the dominant keys sit at 0, −slope, −2·slope, … (exact), and only keys the softmax all but ignores carry
    large values.  ``keep``: the case's keep-mask (:func:`dense_keep`; computed when not given).

    ``shift=False``: ALiBi's own slope·(key − query), unshifted, for a score that goes on through something the
    softmax's shift does not pass: soft-capping's c·tanh(s/c) of a shifted score is another score."""
    import torch

    if keep is None:
        keep = dense_keep(case, device)
    off = case.mask_spec.offset(case.seq_q, case.num_seq_kv)
    sk = case.num_seq_kv
    ki = torch.arange(sk, device=device)
    slopes = alibi_slopes(case.heads).to(device).view(1, -1, 1, 1)
    if not shift:
        qi = torch.arange(case.seq_q, device=device).view(1, 1, -1, 1) + off
        return (slopes * (ki.view(1, 1, 1, -1) - qi).to(torch.float64)).to(dtype)
    if keep is None:  # every key kept: the last one is each row's largest
        last = torch.full((1, 1, case.seq_q, 1), sk - 1, dtype=torch.int64, device=device)
    else:
        k4 = keep.view(1, 1, *keep.shape) if keep.dim() == 2 else keep
        last = torch.where(k4, ki, -1).amax(-1, keepdim=True)  # the bias grows with the key: the last kept
        qi = torch.arange(case.seq_q, device=device).view(1, 1, -1, 1) + off
        last = torch.where(last >= 0, last, qi)  # a row that keeps nothing: unshifted
    return (slopes * (ki.view(1, 1, 1, -1) - last).to(torch.float64)).to(dtype)


def dense_bias(case: Case, device: Any, dtype: Any) -> Any:
    """Additive float attn_mask: ALiBi (if asked) plus -inf where masked, (B|1, H|1, Sq, Sk); None when
    the case has neither.  Soft-capping is not additive and cannot be expressed this way."""
    import torch

    keep = dense_keep(case, device)
    if keep is None and not case.alibi:
        return None
    if keep is not None and keep.dim() == 2:
        keep = keep.view(1, 1, *keep.shape)
    bias = alibi_bias(case, device, dtype, keep) if case.alibi else torch.zeros(keep.shape, dtype=dtype, device=device)
    return bias if keep is None else bias.masked_fill(~keep, float("-inf"))


def block_mask_for(case: Case, device: Any) -> Any:
    """FlexAttention's BlockMask for the case (None: no mask), and nothing dense of size Sq×Sk is kept."""
    from torch.nn.attention.flex_attention import create_block_mask

    m = case.mask_spec
    fn = mask_mod_for(m, case.seq_q, case.num_seq_kv, device)
    if fn is None:
        return None
    b = case.batch if m.kind == "padding" else None
    return create_block_mask(fn, b, None, case.seq_q, case.num_seq_kv, device=device)


def block_sparsity_pct(block_mask: Any, seq_q: int, seq_kv: int) -> float | None:
    """Share of (query block, key block) tiles the BlockMask skips, in %: 100 − computed / all tiles, where
    computed counts partial and full blocks (kv_num_blocks + full_kv_num_blocks) over the real sequence."""
    if block_mask is None:
        return 0.0
    try:
        q_blk, kv_blk = block_mask.BLOCK_SIZE
        n_q, n_kv = -(-seq_q // q_blk), -(-seq_kv // kv_blk)
        counts = block_mask.kv_num_blocks[..., :n_q]
        computed = int(counts.sum())
        if block_mask.full_kv_num_blocks is not None:
            computed += int(block_mask.full_kv_num_blocks[..., :n_q].sum())
        total = counts.shape[0] * counts.shape[1] * n_q * n_kv
    except (AttributeError, RuntimeError, TypeError, ValueError):
        return None
    return 100.0 * (1 - computed / total)


def count_kept_dense(case: Case, device: Any = "cpu", rows: int = 1024) -> int:
    """Kept score entries over batch and heads, counted on the dense mask in row chunks: the
    independent check of :func:`attnscope.core.flops.kept_scores` for any mask_mod."""
    total = 0
    for q0 in range(0, case.seq_q, rows):
        q1 = min(case.seq_q, q0 + rows)
        keep = dense_keep(case, device, q0, q1)
        if keep is None:
            total += case.batch * (q1 - q0) * case.num_seq_kv
        elif keep.dim() == 4:
            total += int(keep.sum())
        else:
            total += case.batch * int(keep.sum())
    return total * case.heads
