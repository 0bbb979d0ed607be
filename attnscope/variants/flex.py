"""FlexAttention, eager and compiled.  The block mask is built outside the timed region."""

from __future__ import annotations

import time
from typing import Any

from attnscope.core.types import Case
from attnscope.variants.base import Inputs, Prepared, Unsupported, Variant, torch_version


def _check(case: Case) -> str | None:
    if torch_version() < (2, 5):
        return "torch.nn.attention.flex_attention needs torch >= 2.5"
    return None


def _compile_fresh_if_needed(fa: Any, call: Any, notes: list[str]) -> Any:
    """The first compiled call, with dynamo told to fail rather than fall back to eager at its recompile
    limit (8 per function by default): one process that compiles flex_attention for many shapes (a sweep's
    worker) reaches it, and from then on torch.compile silently runs eager flex, whose time is not compiled
    flex's.  At the limit, dynamo's caches are reset and this shape is compiled afresh (said in a note)."""
    import torch

    cfg = torch._dynamo.config
    if not hasattr(cfg, "fail_on_recompile_limit_hit"):  # an older torch: never reuse a crowded cache
        torch._dynamo.reset()
        return fa
    try:
        with cfg.patch(fail_on_recompile_limit_hit=True):
            call()
    except Exception as e:  # only dynamo's limit is handled here; anything else re-raises
        if "recompile" not in type(e).__name__.lower() and "recompile_limit" not in str(e):
            raise
        torch._dynamo.reset()
        notes.append(
            "torch.compile reached dynamo's recompile limit in this process (one compile per shape): its caches "
            "were reset and this shape compiled afresh, so the timing is the compiled kernel's, not eager flex's"
        )
    return fa


def _user_check(case: Case) -> str | None:
    if case.mask_mod is None and case.score_mod is None:
        return "runs the user's own flex functions: give --mask-mod FILE.py:FN and/or --score-mod FILE.py:FN"
    return _check(case)


def _mods(case: Case, device: Any, user: bool) -> tuple[Any, Any]:
    """(BlockMask or None, score_mod or None): the case's built-ins, or where ``user``, the user's functions
    in place of the built-in they were checked against (attnscope.variants.user_code)."""
    from torch.nn.attention.flex_attention import create_block_mask

    from attnscope.variants import user_code
    from attnscope.variants.mask_mods import block_mask_for, score_mod_for

    if user and case.mask_mod is not None:
        fn = user_code.load(case.mask_mod, "mask_mod", device)
        bm = create_block_mask(fn, None, None, case.seq_q, case.num_seq_kv, device=device)
    else:
        bm = block_mask_for(case, device)
    if user and case.score_mod is not None:
        return bm, user_code.load(case.score_mod, "score_mod", device)
    return bm, score_mod_for(case)


def _prepare(case: Case, x: Inputs, compiled: bool, user: bool = False) -> Prepared:
    import warnings

    import torch
    from torch.nn.attention.flex_attention import flex_attention

    from attnscope.variants.mask_mods import block_sparsity_pct

    # The BlockMask is built once, outside the call, from the mask's mask_mod.
    bm, mod = _mods(case, x.q.device, user)
    kw: dict[str, Any] = {"block_mask": bm, "scale": x.scale}
    if mod is not None:
        kw["score_mod"] = mod
    if case.is_gqa:
        kw["enable_gqa"] = True
    fa = torch.compile(flex_attention, dynamic=False) if compiled else flex_attention
    q, k, v = x.q, x.k, x.v

    def call() -> Any:
        return fa(q, k, v, **kw)

    notes: list[str] = []
    t0 = time.perf_counter()
    if compiled:
        fa = _compile_fresh_if_needed(fa, call, notes)
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
    sparsity = block_sparsity_pct(bm, case.seq_q, case.num_seq_kv)
    extra: dict[str, Any] = {"block_sparsity_pct": sparsity}
    if user:  # which of the user's functions ran in place of the built-ins
        extra["user_mods"] = {"mask_mod": case.mask_mod, "score_mod": case.score_mod}
    if bm is not None:
        q_blk, kv_blk = bm.BLOCK_SIZE
        extra["block_size"] = [int(q_blk), int(kv_blk)]
        if sparsity is not None:
            notes.append(
                f"BlockMask {q_blk}×{kv_blk}: {sparsity:.1f}% of the (query block, key block) tiles are skipped"
                + ("" if compiled else " by the compiled kernel (eager flex still computes every score)")
            )
    return Prepared(fn=call, compile_time_s=compile_s, notes=notes, extra=extra)


FLEX = Variant(
    name="flex",
    family="flex",
    description="flex_attention, eager (unfused reference path)",
    check=_check,
    prepare=lambda c, x: _prepare(c, x, compiled=False),
    requires=("torch>=2.5",),
)
FLEX_COMPILED = Variant(
    name="flex_compiled",
    family="flex",
    description="torch.compile(flex_attention): one generated Triton/C++ kernel",
    check=_check,
    prepare=lambda c, x: _prepare(c, x, compiled=True),
    compiles=True,
    requires=("torch>=2.5", "a working torch.compile (Inductor: Triton on CUDA, a C++ compiler on CPU)"),
    opt_in_on=("cpu",),
    opt_in_reason=(
        "not in the CPU default set: torch.compile of flex_attention takes ~20 s on a "
        "2-core CPU; ask for it with --variants flex_compiled (or --variants all)"
    ),
)

# The user's own mask_mod / score_mod (--mask-mod, --score-mod), eager and compiled: never in a default set,
# added to the run's variants when the flags are given.
FLEX_USER = Variant(
    name="flex_user",
    family="flex",
    description="flex_attention, eager, with the user's --mask-mod / --score-mod",
    check=_user_check,
    prepare=lambda c, x: _prepare(c, x, compiled=False, user=True),
    requires=("torch>=2.5",),
    in_default_set=False,
)
FLEX_COMPILED_USER = Variant(
    name="flex_compiled_user",
    family="flex",
    description="torch.compile(flex_attention) with the user's --mask-mod / --score-mod",
    check=_user_check,
    prepare=lambda c, x: _prepare(c, x, compiled=True, user=True),
    compiles=True,
    requires=FLEX_COMPILED.requires,
    opt_in_on=FLEX_COMPILED.opt_in_on,
    opt_in_reason=FLEX_COMPILED.opt_in_reason,
    in_default_set=False,
)
