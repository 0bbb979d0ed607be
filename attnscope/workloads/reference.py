"""The fp64 reference of a case, in chunks over (batch, KV head group, query block).  Needs torch.

The same mask and score modification as the variants (one ``mask_mod``/``score_mod`` from
:mod:`attnscope.variants.mask_mods`) on fp64 copies of the inputs.  No chunk holds more than
``chunk_bytes`` of scores, so a 16k-token case is checked on a CPU with a few GB free; each query
block only reads the key range its mask keeps (a causal block stops at its diagonal, a sliding or
document block reads its window).  Gradients come from autograd on each chunk: output rows depend
on their own query rows only, so dq is per chunk and dk, dv are sums over chunks.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from attnscope.core.types import Case

CHUNK_BYTES = 64 * 1024 * 1024  # fp64 scores per chunk; the chunk's softmax and probabilities double it
# Above this much fp64 work the reference is not computed: the error is "not checked" with the reason.
# CPU: a causal S=8192, 8-head, D=64 forward (6.9e10) took 36 s on 2 busy cores, so S=16384 (2.7e11, 4× the work)
# takes about 2.5 min and is checked; 5e11 caps the wait near 5 min.
MAX_FP64_FLOPS = {"cpu": 5e11, "cuda": 2e14}
BACKWARD_FACTOR = 2.5  # dq, dk, dv: four GEMMs plus recomputing the scores, against the forward's two


@dataclass(frozen=True)
class TooLarge:
    """The reference was not computed; ``reason`` says why, in numbers."""

    reason: str


def fp64_flops(case: Case, grads: bool = False) -> float:
    """The reference's fp64 work: 4·D per kept score entry (forward), ×3.5 with gradients."""
    from attnscope.core.flops import attention_flops

    f = float(attention_flops(case))
    return f * (1 + BACKWARD_FACTOR) if grads else f


def too_large(case: Case, grads: bool = False, limit: float | None = None) -> TooLarge | None:
    """TooLarge when the reference would exceed the device kind's fp64 budget, else None."""
    kind = "cuda" if case.device.startswith("cuda") else "cpu"
    cap = MAX_FP64_FLOPS[kind] if limit is None else limit
    work = fp64_flops(case, grads)
    if work <= cap:
        return None
    what = "forward and gradients" if grads else "forward"
    return TooLarge(
        f"error not checked: reference too large ({what}: {work:.2e} fp64 FLOP on {kind}, "
        f"above the {cap:.0e} this tool spends on a reference)"
    )


ROWS_MAX = 1024  # query rows per block at most: smaller blocks skip more of a causal or banded mask's keys


def _rows_per_chunk(heads: int, seq_kv: int, chunk_bytes: int) -> int:
    return max(1, min(ROWS_MAX, chunk_bytes // (8 * heads * seq_kv)))


def _key_range(keep: Any, seq_kv: int) -> tuple[int, int]:
    """First and one-past-last key any row of this block keeps (all keys when nothing is masked)."""
    if keep is None:
        return 0, seq_kv
    cols = keep.reshape(-1, keep.shape[-1]).any(dim=0).nonzero()
    if cols.numel() == 0:
        return 0, 0
    return int(cols[0]), int(cols[-1]) + 1


def _block(
    case: Case, q: Any, k: Any, v: Any, scale: float, b: int, heads: Any, q0: int, keep: Any, k0: int, k1: int
) -> Any:
    """Attention of one (batch, head group, query block) over keys k0..k1, fp64, with the case's mods."""
    import torch

    from attnscope.variants.mask_mods import score_mod_for

    s = torch.matmul(q, k[..., k0:k1, :].transpose(-2, -1)) * scale  # (G, rows, k1-k0)
    mod = score_mod_for(case)
    if mod is not None:
        qi = torch.arange(q0, q0 + q.shape[-2], device=q.device).view(1, -1, 1)
        ki = torch.arange(k0, k1, device=q.device).view(1, 1, -1)
        s = mod(s, torch.tensor(b, device=q.device), heads.view(-1, 1, 1), qi, ki)
    if keep is not None:
        s = s.masked_fill(~keep[..., k0:k1], float("-inf"))
    return torch.matmul(torch.softmax(s, dim=-1), v[..., k0:k1, :])


def reference_chunked(
    case: Case, q: Any, k: Any, v: Any, scale: float, grad_out: Any = None, chunk_bytes: int = CHUNK_BYTES
) -> dict[str, Any]:
    """``{"out": ...}`` in fp64 (and ``dq``, ``dk``, ``dv`` when ``grad_out`` is given) for q (B, H, Sq, D),
    k and v (B, KVH, Sk, D) of any dtype; results live on the inputs' device."""
    import torch

    from attnscope.variants.mask_mods import dense_keep

    f64 = torch.float64
    grads = grad_out is not None
    out = torch.empty(q.shape, dtype=f64, device=q.device)
    dq = torch.zeros(q.shape, dtype=f64, device=q.device) if grads else None
    dk = torch.zeros(k.shape, dtype=f64, device=k.device) if grads else None
    dv = torch.zeros(v.shape, dtype=f64, device=v.device) if grads else None
    groups = case.heads // case.num_kv_heads
    sk = case.num_seq_kv
    rows = _rows_per_chunk(groups, sk, chunk_bytes)
    by_batch = case.mask_spec.kind == "padding"
    for q0 in range(0, case.seq_q, rows):
        q1 = min(case.seq_q, q0 + rows)
        keep_all = None if by_batch else dense_keep(case, q.device, q0, q1)
        for b in range(case.batch):
            keep = dense_keep(case, q.device, q0, q1, batch=b) if by_batch else keep_all
            k0, k1 = _key_range(keep, sk)
            for j in range(case.num_kv_heads):
                hs = slice(j * groups, (j + 1) * groups)
                heads = torch.arange(hs.start, hs.stop, device=q.device)
                qb = q[b, hs, q0:q1].detach().to(f64)
                kb, vb = k[b, j].detach().to(f64), v[b, j].detach().to(f64)
                if not grads:
                    with torch.no_grad():
                        out[b, hs, q0:q1] = _block(case, qb, kb, vb, scale, b, heads, q0, keep, k0, k1)
                    continue
                qb, kb, vb = (t.requires_grad_(True) for t in (qb, kb, vb))
                with torch.enable_grad():
                    o = _block(case, qb, kb, vb, scale, b, heads, q0, keep, k0, k1)
                    g = torch.autograd.grad(o, (qb, kb, vb), grad_out[b, hs, q0:q1].to(f64))
                out[b, hs, q0:q1] = o.detach()
                dq[b, hs, q0:q1] = g[0]  # type: ignore[index]
                dk[b, j] += g[1]  # type: ignore[index]  # autograd already summed over the group's heads
                dv[b, j] += g[2]  # type: ignore[index]
    res: dict[str, Any] = {"out": out}
    if grads:
        res.update(dq=dq, dk=dk, dv=dv)
    return res
