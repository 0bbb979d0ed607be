"""q, k, v attention: the inputs every variant gets and the fp64 reference they are checked against.

This pair is the one place that builds inputs and references; masks and other workloads extend
it here rather than in the worker.  Needs torch.
"""

from __future__ import annotations

from typing import Any

from attnscope.core.types import Case
from attnscope.variants.base import Inputs

TORCH_DTYPES = {"bf16": "bfloat16", "fp16": "float16", "fp32": "float32"}
GRAD_NAMES = ("dq", "dk", "dv")


def make_inputs(case: Case, seed: int, requires_grad: bool = False) -> Inputs:
    """Seeded q, k, v on the case's device; with ``requires_grad`` also leaves for autograd and dO.  A serving case
    gets its paged or packed cache (attnscope.workloads.paged_cache)."""
    import torch

    if case.is_serving:
        from attnscope.workloads.paged_cache import make_serving_inputs

        return make_serving_inputs(case, seed)

    g = torch.Generator(device="cpu").manual_seed(seed)
    dt = getattr(torch, TORCH_DTYPES[case.dtype])

    def rnd(h: int, s: int) -> torch.Tensor:
        t = torch.randn(case.batch, h, s, case.head_dim, generator=g, dtype=torch.float32)
        return t.to(device=case.device, dtype=dt).requires_grad_(requires_grad)

    q = rnd(case.heads, case.seq_q)
    k = rnd(case.num_kv_heads, case.num_seq_kv)
    v = rnd(case.num_kv_heads, case.num_seq_kv)
    grad_out = None
    if requires_grad:
        grad_out = rnd(case.heads, case.seq_q).detach()
    return Inputs(q=q, k=k, v=v, scale=case.head_dim**-0.5, grad_out=grad_out)


def reference(case: Case, x: Inputs) -> Any:
    """fp64 attention with the case's mask and score modification, in chunks; None when too large
    (``attnscope.workloads.reference.too_large`` says why)."""
    from attnscope.workloads.reference import reference_chunked, too_large

    if too_large(case) is not None:
        return None
    if case.is_serving:
        from attnscope.workloads.paged_cache import serving_reference

        return serving_reference(case, x)
    return reference_chunked(case, x.q, x.k, x.v, x.scale)["out"]


def reference_grads(case: Case, x: Inputs) -> dict[str, Any] | None:
    """The output and dq, dk, dv of the same fp64 attention for the inputs' dO; None when too large."""
    from attnscope.workloads.reference import reference_chunked, too_large

    if x.grad_out is None:
        raise ValueError("reference_grads needs inputs made with requires_grad=True (no dO)")
    if too_large(case, grads=True) is not None:
        return None
    return reference_chunked(case, x.q, x.k, x.v, x.scale, grad_out=x.grad_out)


def reference_skipped(case: Case) -> str:
    """Why the reference was not computed, in numbers."""
    from attnscope.workloads.reference import too_large

    big = too_large(case, grads=case.mode == "fwd_bwd")
    return big.reason if big else "error not checked"
