"""Variants that misbehave on purpose, registered only for tests (ATTNSCOPE_VARIANT_MODULES or import).

They check nothing about attention; each fails in one way a real implementation can.
"""

from __future__ import annotations

import os
import time
from typing import Any

from attnscope.core.types import Case
from attnscope.variants import Prepared, Variant, register
from attnscope.variants.base import Inputs


def _always(case: Case) -> str | None:
    return None


def _raise(case: Case, x: Inputs) -> Prepared:
    def call() -> Any:
        raise RuntimeError("kernel exploded on purpose")

    return Prepared(fn=call)


def _abort(case: Case, x: Inputs) -> Prepared:
    os.write(2, b"t_abort: about to abort\n")
    os.abort()


def _hang(case: Case, x: Inputs) -> Prepared:
    time.sleep(3600)
    raise AssertionError("unreachable")


def _oom(case: Case, x: Inputs) -> Prepared:
    import torch

    raise torch.cuda.OutOfMemoryError("CUDA out of memory. Tried to allocate 64.00 GiB (simulated)")


def _sticky(case: Case, x: Inputs) -> Prepared:
    raise RuntimeError("CUDA error: an illegal memory access was encountered (simulated)")


def _bad_grad(case: Case, x: Inputs) -> Prepared:
    """A correct forward whose backward scales dq by 1.1: only the gradient check can see it."""
    import torch

    class Scaled(torch.autograd.Function):
        @staticmethod
        def forward(ctx: Any, q: Any) -> Any:
            return q.view_as(q)

        @staticmethod
        def backward(ctx: Any, g: Any) -> Any:
            return g * 1.1

    import torch.nn.functional as F

    def call() -> Any:
        return F.scaled_dot_product_attention(Scaled.apply(x.q), x.k, x.v, is_causal=case.causal, scale=x.scale)

    return Prepared(fn=call)


VARIANTS = [
    Variant(name, "test", f"test-only: {name}", _always, prepare)
    for name, prepare in [
        ("t_raise", _raise),
        ("t_abort", _abort),
        ("t_hang", _hang),
        ("t_oom", _oom),
        ("t_sticky", _sticky),
        ("t_bad_grad", _bad_grad),
    ]
]


def register_all() -> None:
    for v in VARIANTS:
        register(v)


register_all()  # on import: how a worker process (spawned, or a Ray actor) gets them
