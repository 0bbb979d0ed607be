"""FlexAttention, eager and compiled.  The block mask is built outside the timed region."""

from __future__ import annotations

import time
from typing import Any

from attnscope.types import Case
from attnscope.variants.base import Inputs, Prepared, Unsupported, Variant, torch_version


def _check(case: Case) -> str | None:
    if torch_version() < (2, 5):
        return "torch.nn.attention.flex_attention needs torch >= 2.5"
    return None


def _block_mask(case: Case, device: Any) -> Any:
    if not case.causal:
        return None
    from torch.nn.attention.flex_attention import create_block_mask

    def causal(b: Any, h: Any, q_idx: Any, kv_idx: Any) -> Any:
        return q_idx >= kv_idx

    return create_block_mask(causal, None, None, case.seq_q, case.num_seq_kv, device=device)


def _prepare(case: Case, x: Inputs, compiled: bool) -> Prepared:
    import warnings

    import torch
    from torch.nn.attention.flex_attention import flex_attention

    bm = _block_mask(case, x.q.device)
    kw: dict[str, Any] = {"block_mask": bm, "scale": x.scale}
    if case.is_gqa:
        kw["enable_gqa"] = True
    fa = torch.compile(flex_attention, dynamic=False) if compiled else flex_attention
    q, k, v = x.q, x.k, x.v

    def call() -> Any:
        return fa(q, k, v, **kw)

    notes = []
    t0 = time.perf_counter()
    with warnings.catch_warnings():
        # Eager flex warns that it is unfused on every first call; that is the point of it.
        warnings.simplefilter("ignore")
        try:
            call()
            if x.q.is_cuda:
                torch.cuda.synchronize()
        except torch.cuda.OutOfMemoryError:
            raise
        except (RuntimeError, NotImplementedError, ValueError) as e:
            if compiled:
                raise  # a compiler failure is an error row, not a capability skip
            msg = " ".join(str(e).split())[:500] or type(e).__name__
            raise Unsupported(f"flex_attention refused: {msg}") from e
    compile_s = time.perf_counter() - t0 if compiled else None
    if not compiled:
        notes.append("eager flex_attention is unfused: it materialises the full score matrix")
    return Prepared(fn=call, compile_time_s=compile_s, notes=notes)


FLEX = Variant(
    name="flex",
    family="flex",
    description="flex_attention, eager (unfused reference path)",
    check=_check,
    prepare=lambda c, x: _prepare(c, x, compiled=False),
)
FLEX_COMPILED = Variant(
    name="flex_compiled",
    family="flex",
    description="torch.compile(flex_attention): one generated Triton/C++ kernel",
    check=_check,
    prepare=lambda c, x: _prepare(c, x, compiled=True),
    compiles=True,
    opt_in_on=("cpu",),
    opt_in_reason=(
        "not in the CPU default set: torch.compile of flex_attention takes ~20 s on a "
        "2-core CPU; ask for it with --variants flex_compiled (or --variants all)"
    ),
)
