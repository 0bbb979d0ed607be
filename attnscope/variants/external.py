"""Attention from libraries outside torch, used when installed: FlashAttention 2 and 3, xformers, SageAttention.

(FlashInfer and the cuDNN frontend are in ``external_nv.py``.)  Each is a variant that declares what
it needs; when the library does not import, or the case is outside what it supports, the row is
skipped with the import error or the library's own check.  Each gets the mask in its native form
(causal flag, window size, varlen offsets, its own bias classes) and says so in the row's notes.

Inputs arrive as (B, H, S, D).  FlashAttention and xformers take (B, S, H, D): a transposed view
has a contiguous last dimension, which is all they ask, so no copy is made; their (B, S, H, D)
output is handed back as a transposed view.  Packing for varlen (documents, padding) is done once
in prepare, outside the timed call.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any

from attnscope.core.types import Case
from attnscope.variants.base import Inputs, Prepared, Unsupported, Variant

_IMPORTS: dict[str, tuple[Any, str | None]] = {}


def import_reason(module: str, requirement: str) -> str | None:
    """None if ``module`` imports, else the import error in one line (cached: one try per process)."""
    if module not in _IMPORTS:
        try:
            _IMPORTS[module] = (importlib.import_module(module), None)
        except Exception as e:  # noqa: BLE001 - any failure to import (missing, ABI, CUDA) is a skip reason
            msg = " ".join(str(e).split())[:300] or type(e).__name__
            _IMPORTS[module] = (None, f"{requirement} is not usable here: import {module}: {type(e).__name__}: {msg}")
    return _IMPORTS[module][1]


def lib(module: str) -> Any:
    return _IMPORTS[module][0]


def cuda_16bit(case: Case, name: str) -> str | None:
    if not case.device.startswith("cuda"):
        return f"{name} runs on CUDA GPUs only"
    if case.dtype not in ("fp16", "bf16"):
        return f"{name} takes fp16 or bf16 inputs, not {case.dtype}"
    return None


def first_reason(*reasons: str | None) -> str | None:
    return next((r for r in reasons if r), None)


def trial(fn: Callable[[], Any], what: str) -> None:
    """One call before timing; the library's own refusal becomes the skip reason."""
    import torch

    try:
        fn()
    except torch.cuda.OutOfMemoryError:
        raise
    except Exception as e:
        msg = " ".join(str(e).split())[:500] or type(e).__name__
        raise Unsupported(f"{what} refused: {type(e).__name__}: {msg}") from e


def external(
    name: str, module: str, requirement: str, description: str, check: Callable[[Case], str | None], prepare: Any
) -> Variant:
    def full_check(case: Case) -> str | None:
        return first_reason(import_reason(module, requirement), check(case))

    _MODULE_OF[name] = module
    return Variant(
        name=name,
        family="external",
        description=description,
        check=full_check,
        prepare=prepare,
        devices=("cuda",),
        requires=(requirement,),
    )


_MODULE_OF: dict[str, str] = {}  # variant name → the module it imports


def installed(v: Variant) -> bool:
    """Whether a variant's library imports (always, for torch's own): only those join the default set."""
    return v.name not in _MODULE_OF or import_reason(_MODULE_OF[v.name], _MODULE_OF[v.name]) is None


def bshd(t: Any) -> Any:
    """(B, H, S, D) → a (B, S, H, D) view: no copy, last dimension still contiguous."""
    return t.transpose(1, 2)


def _packed(t: Any, lengths: list[int] | None = None) -> Any:
    """(B, H, S, D) → (total, H, D) for varlen: the first lengths[b] rows of each batch element."""
    x = t.transpose(1, 2)
    if lengths is None:
        return x.reshape(-1, x.shape[2], x.shape[3]).contiguous()
    import torch

    return torch.cat([x[b, :n] for b, n in enumerate(lengths)]).contiguous()


def _cu(lengths: list[int], device: Any) -> Any:
    import torch

    cu = [0]
    for n in lengths:
        cu.append(cu[-1] + n)
    return torch.tensor(cu, dtype=torch.int32, device=device)


# --------------------------------------------------------------------------------------------- FlashAttention


def _fa_window(case: Case) -> tuple[bool, tuple[int, int], str]:
    """FlashAttention's causal flag and window_size=(left, right) for the mask, and how, in words.
    Its causal mask is aligned to the bottom right when seq_q != seq_kv (flash-attn >= 2.1)."""
    m = case.mask_spec
    square = case.seq_q == case.num_seq_kv
    if m.kind == "none" or m.kind == "padding":
        return False, (-1, -1), "causal=False"
    if m.kind in ("causal", "sliding") and (square or m.align == "lower_right"):
        if m.kind == "causal":
            return True, (-1, -1), "causal=True (bottom-right aligned)"
        return True, ((m.window or 1) - 1, 0), f"causal=True, window_size=({(m.window or 1) - 1}, 0)"
    if m.kind == "document":
        return True, (-1, -1), "flash_attn_varlen_func, causal=True, cu_seqlens of the documents"
    raise Unsupported(
        f"FlashAttention has no native form of {m.canonical}: its causal mask is bottom-right aligned and it takes "
        "a window, varlen offsets or nothing (no arbitrary mask)"
    )


def _fa_check(case: Case, fa3: bool) -> str | None:
    name = "FlashAttention 3" if fa3 else "FlashAttention 2"
    if getattr(case, "mode", "fwd") != "fwd":
        return f"{name} is wired here for the forward only"
    if case.alibi:
        if fa3:
            return "FlashAttention 3 has no ALiBi"
        if case.mask_spec.kind in ("none", "padding"):
            return (
                "FlashAttention 2's alibi_slopes bias is -slope·|i - j|: ALiBi's slope·(j - i) only under a causal mask"
            )
    try:
        _fa_window(case)
    except Unsupported as e:
        return str(e)
    return cuda_16bit(case, name)


def _fa_prepare(case: Case, x: Inputs, module: str) -> Prepared:
    import torch

    fa = lib(module)
    causal, window, how = _fa_window(case)
    m = case.mask_spec
    kw: dict[str, Any] = {"softmax_scale": x.scale, "causal": causal, "window_size": window}
    if case.softcap is not None:
        kw["softcap"] = case.softcap
    if case.alibi:
        from attn_gym.mods import generate_alibi_bias

        h = torch.arange(case.heads, device=x.q.device, dtype=torch.float32)
        # slope = ALiBi's bias for (q=0, k=1): attention-gym's formula, as a (H,) fp32 tensor
        kw["alibi_slopes"] = generate_alibi_bias(case.heads)(0.0, 0, h, 0, 1).float()

    def first(o: Any) -> Any:
        return o[0] if isinstance(o, tuple) else o  # FA3 returns (out, lse) in some versions

    if m.kind in ("document", "padding"):
        q_len = list(m.lengths) * case.batch if m.kind == "document" else [case.seq_q] * case.batch
        k_len = q_len if m.kind == "document" else list(m.lengths)
        keep_len = None if m.kind == "document" else k_len
        q, k, v = _packed(x.q), _packed(x.k, keep_len), _packed(x.v, keep_len)
        cq, ck = _cu(q_len, x.q.device), _cu(k_len, x.q.device)
        mq, mk = max(q_len), max(k_len)
        b, s = case.batch, case.seq_q

        def call() -> Any:
            o = first(fa.flash_attn_varlen_func(q, k, v, cq, ck, mq, mk, **kw))
            return o.view(b, s, o.shape[-2], o.shape[-1]).transpose(1, 2)

        how = f"flash_attn_varlen_func, cu_seqlens of {'the documents' if m.kind == 'document' else 'the valid keys'}"
    else:
        q, k, v = bshd(x.q), bshd(x.k), bshd(x.v)

        def call() -> Any:
            return first(fa.flash_attn_func(q, k, v, **kw)).transpose(1, 2)

    trial(call, module)
    return Prepared(fn=call, notes=[f"mask passed as {how}"], extra={"mask_form": how})


FA2 = external(
    "flash_attn2",
    "flash_attn",
    "flash-attn 2 (pip install flash-attn: a build that matches this torch and CUDA)",
    "FlashAttention 2: flash_attn_func / flash_attn_varlen_func",
    lambda c: _fa_check(c, fa3=False),
    lambda c, x: _fa_prepare(c, x, "flash_attn"),
)
FA3 = external(
    "flash_attn3",
    "flash_attn_interface",
    "FlashAttention 3 (flash_attn_interface, built from flash-attention/hopper; Hopper only)",
    "FlashAttention 3 (Hopper): flash_attn_interface.flash_attn_func",
    lambda c: _fa_check(c, fa3=True),
    lambda c, x: _fa_prepare(c, x, "flash_attn_interface"),
)


# --------------------------------------------------------------------------------------------- xformers


def _xformers_bias(case: Case, device: Any) -> tuple[Any, str, bool]:
    """xformers' own bias class for the mask, how in words, and whether the batch is packed into one row."""
    ab = importlib.import_module("xformers.ops.fmha.attn_bias")
    m = case.mask_spec
    square = case.seq_q == case.num_seq_kv
    if m.kind == "none":
        return None, "attn_bias=None", False
    if m.kind == "causal":
        if case.causal:
            return ab.LowerTriangularMask(), "LowerTriangularMask()", False
        return ab.LowerTriangularFromBottomRightMask(), "LowerTriangularFromBottomRightMask()", False
    if m.kind == "sliding" and (square or m.align == "lower_right"):
        w = m.window or 1
        # keeps keys in (i + Sk - Sq - w, i + Sk - Sq]: w keys, as sliding:W (read in its _materialize_causal_mask)
        bias = ab.LowerTriangularFromBottomRightLocalAttentionMask(w)
        return bias, f"LowerTriangularFromBottomRightLocalAttentionMask({w})", False
    if m.kind == "document":
        seqlens = list(m.lengths) * case.batch
        return ab.BlockDiagonalCausalMask.from_seqlens(seqlens, device=device), "BlockDiagonalCausalMask", True
    if m.kind == "padding":
        bias = ab.BlockDiagonalPaddedKeysMask.from_seqlens(
            [case.seq_q] * case.batch, case.num_seq_kv, list(m.lengths), device=device
        )
        return bias, "BlockDiagonalPaddedKeysMask", True
    raise Unsupported(f"xformers has no bias class for {m.canonical} (a dense tensor bias is not its native form)")


def _xformers_check(case: Case) -> str | None:
    if getattr(case, "mode", "fwd") != "fwd":
        return "xformers is wired here for the forward only"
    if case.softcap is not None or case.alibi:
        return "xformers' memory_efficient_attention has no soft-capping or ALiBi bias class"
    m = case.mask_spec
    if m.kind == "prefix" or (m.kind == "sliding" and case.seq_q != case.num_seq_kv and m.align != "lower_right"):
        return f"xformers has no bias class for {m.canonical}"
    return cuda_16bit(case, "xformers")


def _xformers_prepare(case: Case, x: Inputs) -> Prepared:
    xops = lib("xformers.ops")
    bias, how, packed = _xformers_bias(case, x.q.device)
    b, s, g, hg = case.batch, case.seq_q, case.num_kv_heads, case.heads // case.num_kv_heads

    def five(t: Any, expand: bool) -> Any:
        # GQA in xformers is the 5-D BMGHK layout: K/V heads expanded (a view) over each group.
        t = bshd(t)
        if not case.is_gqa:
            return t
        if expand:
            return t.unsqueeze(3).expand(t.shape[0], t.shape[1], g, hg, t.shape[-1])
        return t.unflatten(2, (g, hg))

    q, k, v = five(x.q, False), five(x.k, True), five(x.v, True)
    if packed:  # varlen bias classes want the batch packed into one row: a copy, made here once
        q, k, v = (t.reshape(1, -1, *t.shape[2:]).contiguous() for t in (q, k, v))

    def call() -> Any:
        o = xops.memory_efficient_attention(q, k, v, attn_bias=bias, scale=x.scale)
        o = o.reshape(b, s, case.heads, o.shape[-1])
        return o.transpose(1, 2)

    trial(call, "xformers.ops.memory_efficient_attention")
    return Prepared(fn=call, notes=[f"mask passed as attn_bias={how}"], extra={"mask_form": how})


XFORMERS = external(
    "xformers",
    "xformers.ops",
    "xformers (its CUDA extension built for this torch)",
    "xformers.ops.memory_efficient_attention with its attn_bias classes",
    _xformers_check,
    _xformers_prepare,
)


# --------------------------------------------------------------------------------------------- SageAttention


def _sage_check(case: Case) -> str | None:
    if getattr(case, "mode", "fwd") != "fwd":
        return "SageAttention is forward only (no backward)"
    if case.head_dim not in (64, 96, 128):
        return f"sageattn asserts headdim in [64, 96, 128], got {case.head_dim}"
    m = case.mask_spec
    if case.softcap is not None or case.alibi or m.kind not in ("none", "causal"):
        return f"sageattn takes is_causal only: no {m.canonical if m.kind not in ('none', 'causal') else 'score mod'}"
    if m.kind == "causal" and case.seq_q != case.num_seq_kv:
        return "sageattn's is_causal alignment for seq_q != seq_kv is not documented: not run"
    return cuda_16bit(case, "SageAttention")


def _sage_prepare(case: Case, x: Inputs) -> Prepared:
    sage = lib("sageattention")
    # smooth_k (the default) subtracts k's mean from k IN PLACE: sage gets its own copy, made once here.
    # Once smoothed, k's mean is ~0 and later calls change it no further; the output is unchanged by the
    # shift (softmax is invariant to a per-query constant).
    k = x.k.clone()
    causal = case.mask_spec.kind == "causal"

    def call() -> Any:
        return sage.sageattn(x.q, k, x.v, tensor_layout="HND", is_causal=causal, sm_scale=x.scale)

    trial(call, "sageattention.sageattn")
    notes = [
        "INT8 QKᵀ (per-block quantised q, k) and fp16 PV: expect a larger error than 16-bit kernels",
        "smooth_k subtracts k's mean in place: sageattn gets its own copy of k, made once outside the timing",
    ]
    return Prepared(fn=call, notes=notes, extra={"mask_form": f"is_causal={causal}"})


SAGE = external(
    "sageattention",
    "sageattention",
    "sageattention 1.x (Triton)",
    "SageAttention: INT8 QKᵀ, fp16 PV (sageattn, HND layout)",
    _sage_check,
    _sage_prepare,
)
