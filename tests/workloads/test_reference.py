"""The fp64 reference under score modifications, against attention written out in the test (torch fp64)."""

from __future__ import annotations

import math

import pytest

from attnscope.core.types import Case

torch = pytest.importorskip("torch")
pytest.importorskip("attn_gym")


def _by_hand(q, k, v, scale: float, offset: int, cap: float | None, alibi: bool, causal: bool, alibi_offset=None):
    """Scores q·kᵀ·scale; ALiBi adds 2^(-8(h+1)/H)·(key − query position), query i at key position i + offset;
    then the cap c·tanh(s/c); causal keeps keys at or before the query's position.  ``alibi_offset`` moves
    ALiBi's query positions alone (the mistake the test must tell apart)."""
    _, h, sq, _ = q.shape
    sk = k.shape[-2]
    reps = h // k.shape[1]
    k, v = k.repeat_interleave(reps, dim=1), v.repeat_interleave(reps, dim=1)
    s = torch.einsum("bhqd,bhkd->bhqk", q, k) * scale
    pos_q = torch.arange(sq, dtype=torch.float64).view(-1, 1) + offset
    pos_k = torch.arange(sk, dtype=torch.float64).view(1, -1)
    if alibi:
        slopes = torch.tensor([2.0 ** (-8.0 * (i + 1) / h) for i in range(h)], dtype=torch.float64)
        at = pos_q if alibi_offset is None else pos_q - offset + alibi_offset
        s = s + slopes.view(1, h, 1, 1) * (pos_k - at)
    if cap is not None:
        s = cap * torch.tanh(s / cap)
    if causal:
        s = s.masked_fill(pos_k > pos_q, float("-inf"))
    return torch.einsum("bhqk,bhkd->bhqd", torch.softmax(s, dim=-1), v)


@pytest.mark.parametrize("softcap", [None, 2.0])
def test_alibi_positions_follow_the_lower_right_offset_with_and_without_soft_capping(softcap):
    """3 queries at the end of 11 keys (decode-like, offset 8), 4 heads over 2 KV heads: query i sits at key
    position i + 8, so its own key carries no bias."""
    from attnscope.workloads.reference import reference_chunked

    case = Case(
        batch=2,
        heads=4,
        kv_heads=2,
        seq_q=3,
        seq_kv=11,
        head_dim=8,
        dtype="fp32",
        mask="causal_lower_right",
        softcap=softcap,
        alibi=True,
    )
    g = torch.Generator().manual_seed(0)
    q = torch.randn(2, 4, 3, 8, generator=g, dtype=torch.float64) * 2
    k = torch.randn(2, 2, 11, 8, generator=g, dtype=torch.float64) * 2
    v = torch.randn(2, 2, 11, 8, generator=g, dtype=torch.float64)
    scale = 1 / math.sqrt(8)
    out = reference_chunked(case, q, k, v, scale)["out"]
    want = _by_hand(q, k, v, scale, 8, softcap, alibi=True, causal=True)
    torch.testing.assert_close(out, want, rtol=1e-12, atol=1e-12)
    # ALiBi at positions 0..2 instead of 8..10 adds 8·slope to every score of a row: the softmax cannot see a
    # shift of a whole row, the cap can (tanh is not shift-invariant), so only under a cap is it wrong
    shifted = _by_hand(q, k, v, scale, 8, softcap, alibi=True, causal=True, alibi_offset=0)
    if softcap is None:
        torch.testing.assert_close(shifted, want, rtol=1e-12, atol=1e-12)
    else:
        assert (out - shifted).abs().max() > 1e-3


@pytest.mark.parametrize("softcap", [None, 2.0])
def test_alibi_bias_under_the_cap_with_the_offset_and_gradients(softcap):
    from attnscope.workloads.reference import reference_chunked

    case = Case(
        batch=1,
        heads=2,
        seq_q=4,
        seq_kv=9,
        head_dim=4,
        dtype="fp32",
        mask="causal_lower_right",
        softcap=softcap,
        alibi=True,
    )
    g = torch.Generator().manual_seed(1)
    q = torch.randn(1, 2, 4, 4, generator=g, dtype=torch.float64, requires_grad=True)
    k = torch.randn(1, 2, 9, 4, generator=g, dtype=torch.float64, requires_grad=True)
    v = torch.randn(1, 2, 9, 4, generator=g, dtype=torch.float64, requires_grad=True)
    go = torch.randn(1, 2, 4, 4, generator=g, dtype=torch.float64)
    got = reference_chunked(case, q, k, v, 0.5, grad_out=go)
    want = _by_hand(q, k, v, 0.5, 5, softcap, alibi=True, causal=True)
    dq, dk, dv = torch.autograd.grad(want, (q, k, v), go)
    for name, w in (("out", want), ("dq", dq), ("dk", dk), ("dv", dv)):
        torch.testing.assert_close(got[name], w.detach(), rtol=1e-12, atol=1e-12, msg=name)
