"""F.scaled_dot_product_attention, each backend forced, and PyTorch's own default choice."""

from __future__ import annotations

import contextlib
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from attnscope.core.types import Case
from attnscope.variants.base import Inputs, Prepared, Unsupported, Variant
from attnscope.variants.sdpa_why import BACKEND_OF_FORCED

BACKENDS = {
    "sdpa_math": "MATH",
    "sdpa_efficient": "EFFICIENT_ATTENTION",
    "sdpa_flash": "FLASH_ATTENTION",
    "sdpa_cudnn": "CUDNN_ATTENTION",
}


@dataclass(frozen=True)
class SdpaMask:
    """How SDPA gets the case's mask: ``attn_mask`` (None, a CausalBias or a dense tensor) and is_causal."""

    attn_mask: Any
    is_causal: bool
    form: str  # in words, for the row's notes and the insights
    dense: bool  # a (B|1, 1|H, Sq, Sk) tensor: every score is computed and the mask read


def sdpa_mask(case: Case, x: Inputs) -> SdpaMask:
    """is_causal where it is exactly the mask, causal_lower_right's CausalBias where that is, else a dense mask."""
    from attnscope.variants.mask_mods import dense_bias, dense_keep

    m = case.mask_spec
    if not case.alibi:
        if m.kind == "none":
            return SdpaMask(None, False, "no mask", False)
        if case.causal:
            return SdpaMask(None, True, "is_causal=True", False)
        if m.kind == "causal":  # lower-right with Sq != Sk
            from torch.nn.attention.bias import causal_lower_right

            return SdpaMask(
                causal_lower_right(case.seq_q, case.num_seq_kv),
                False,
                "attn_mask=torch.nn.attention.bias.causal_lower_right(Sq, Sk)",
                False,
            )
        keep = dense_keep(case, x.q.device)
        keep = keep.view(1, 1, *keep.shape) if keep.dim() == 2 else keep
        return SdpaMask(keep, False, f"dense boolean attn_mask {tuple(keep.shape)} for {m.canonical}", True)
    bias = dense_bias(case, x.q.device, x.q.dtype)
    form = f"dense {case.dtype} attn_mask {tuple(bias.shape)}: ALiBi bias, -inf where masked"
    return SdpaMask(bias, False, form, True)


def _call_for(case: Case, x: Inputs) -> Callable[[], Any]:
    import torch.nn.functional as F

    sm = sdpa_mask(case, x)
    kw: dict[str, Any] = {"is_causal": sm.is_causal, "scale": x.scale}
    if sm.attn_mask is not None:
        kw["attn_mask"] = sm.attn_mask
    if case.is_gqa:
        kw["enable_gqa"] = True
    q, k, v = x.q, x.k, x.v
    return lambda: F.scaled_dot_product_attention(q, k, v, **kw)


def _no_softcap(case: Case) -> str | None:
    if case.softcap is not None:
        return (
            "F.scaled_dot_product_attention has no soft-capping: tanh(s/c)·c applies between QKᵀ and the softmax, "
            "inside the kernel (flex's score_mod, FlashAttention's softcap, FlashInfer's logits_soft_cap)"
        )
    return None


def _mask_notes(case: Case, x: Inputs) -> tuple[list[str], dict[str, Any]]:
    sm = sdpa_mask(case, x)
    if sm.form in ("no mask", "is_causal=True"):
        return [], {}
    return [f"mask passed as {sm.form}"], {"mask_form": sm.form, "dense_mask": sm.dense}


def _reason_from(err: BaseException, caught: list[warnings.WarningMessage], backend: str) -> str:
    """torch's own words: the warnings its checks emit, then the error."""
    seen: list[str] = []
    for w in caught:
        msg = " ".join(str(w.message).split())
        if msg and msg not in seen:
            seen.append(msg)
    err_msg = " ".join(str(err).split()) or type(err).__name__
    if not seen:
        seen.append(err_msg)
    reason = f"{backend} refused: " + "; ".join(seen)
    return reason[:600]


def trial(fn: Callable[[], Any], ctx: Callable[[], contextlib.AbstractContextManager[Any]], backend: str) -> None:
    """One call with torch's checks speaking; raise Unsupported with their reason."""
    import torch

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            with ctx():
                fn()
        except torch.cuda.OutOfMemoryError:
            raise
        except (RuntimeError, NotImplementedError, ValueError) as e:
            raise Unsupported(_reason_from(e, caught, backend)) from e


def _forced(name: str, backend_attr: str) -> Variant:
    def prepare(case: Case, x: Inputs) -> Prepared:
        from torch.nn.attention import SDPBackend, sdpa_kernel

        backend = getattr(SDPBackend, backend_attr)

        def ctx() -> contextlib.AbstractContextManager[Any]:
            return sdpa_kernel(backend)

        fn = _call_for(case, x)
        try:
            trial(fn, ctx, backend_attr)
        except Unsupported as e:
            raise _refusal(case, x, backend_attr, e) from e
        notes, extra = _mask_notes(case, x)
        return Prepared(fn=fn, context=ctx, notes=notes, extra=extra)

    def check(case: Case) -> str | None:
        if _no_softcap(case):
            return _no_softcap(case)
        if case.device == "cpu" and backend_attr in ("EFFICIENT_ATTENTION", "CUDNN_ATTENTION"):
            return (
                f"{backend_attr} has no CPU kernel in torch (SDPA on CPU has MATH and "
                "FLASH_ATTENTION only): 'No viable backend for scaled_dot_product_attention'"
            )
        return None

    return Variant(
        name=name,
        family="sdpa",
        description=f"F.scaled_dot_product_attention under sdpa_kernel(SDPBackend.{backend_attr})",
        check=check,
        prepare=prepare,
        backend=BACKEND_OF_FORCED[backend_attr],
        devices=("cuda",) if backend_attr in ("EFFICIENT_ATTENTION", "CUDNN_ATTENTION") else ("cpu", "cuda"),
    )


def _why(case: Case, x: Inputs) -> dict[str, Any]:
    from torch.nn.attention.bias import CausalBias

    from attnscope.variants.sdpa_why import causal_bias_choice, explain

    sm = sdpa_mask(case, x)
    if isinstance(sm.attn_mask, CausalBias):
        # CausalBias picks its own kernel: flash, then efficient (both lower-right), else a materialised mask;
        # torch's checks see it as no mask (what CausalBias itself asks them).
        return causal_bias_choice(explain(x.q, x.k, x.v, is_causal=False, scale=x.scale, enable_gqa=case.is_gqa))
    return explain(x.q, x.k, x.v, is_causal=sm.is_causal, scale=x.scale, enable_gqa=case.is_gqa, attn_mask=sm.attn_mask)


def _refusal(case: Case, x: Inputs, backend_attr: str, err: Unsupported) -> Unsupported:
    """The forced backend's own check, asked outside sdpa_kernel so only its reasons speak."""
    from attnscope.variants.sdpa_why import BACKEND_OF_FORCED, reasons_for, refusal_text

    why = _why(case, x)
    name = BACKEND_OF_FORCED[backend_attr]
    reasons = reasons_for(why, name)
    if not reasons or reasons == ["rejected (torch gave no reason)"]:
        return err  # the trial's own warnings are then the best words we have
    return Unsupported(f"{backend_attr} refused: {name}: {refusal_text(why, name)}"[:600])


def _prepare_default(case: Case, x: Inputs) -> Prepared:
    fn = _call_for(case, x)
    trial(fn, contextlib.nullcontext, "default")
    # After the trial: torch initialises its backend priority order on the first SDPA call.
    notes, extra = _mask_notes(case, x)
    return Prepared(fn=fn, notes=notes, extra={"sdpa_why": _why(case, x), **extra})


SDPA_VARIANTS = [_forced(n, b) for n, b in BACKENDS.items()] + [
    Variant(
        name="sdpa_default",
        family="sdpa",
        description="F.scaled_dot_product_attention with no context manager: PyTorch picks",
        check=_no_softcap,
        prepare=_prepare_default,
    )
]
