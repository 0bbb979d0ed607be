"""F.scaled_dot_product_attention, each backend forced, and PyTorch's own default choice."""

from __future__ import annotations

import contextlib
import warnings
from collections.abc import Callable
from typing import Any

from attnscope.types import Case
from attnscope.variants.base import Inputs, Prepared, Unsupported, Variant

BACKENDS = {
    "sdpa_math": "MATH",
    "sdpa_efficient": "EFFICIENT_ATTENTION",
    "sdpa_flash": "FLASH_ATTENTION",
    "sdpa_cudnn": "CUDNN_ATTENTION",
}


def _call_for(case: Case, x: Inputs) -> Callable[[], Any]:
    import torch.nn.functional as F

    kw: dict[str, Any] = {"is_causal": case.causal, "scale": x.scale}
    if case.is_gqa:
        kw["enable_gqa"] = True
    q, k, v = x.q, x.k, x.v
    return lambda: F.scaled_dot_product_attention(q, k, v, **kw)


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
        return Prepared(fn=fn, context=ctx)

    def check(case: Case) -> str | None:
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
    )


def _why(case: Case, x: Inputs) -> dict[str, Any]:
    from attnscope.variants.sdpa_why import explain

    return explain(x.q, x.k, x.v, is_causal=case.causal, scale=x.scale, enable_gqa=case.is_gqa)


def _refusal(case: Case, x: Inputs, backend_attr: str, err: Unsupported) -> Unsupported:
    """The forced backend's own check, asked outside sdpa_kernel so only its reasons speak."""
    from attnscope.variants.sdpa_why import BACKEND_OF_FORCED, reasons_for

    why = _why(case, x)
    name = BACKEND_OF_FORCED[backend_attr]
    reasons = reasons_for(why, name)
    if not reasons or reasons == ["rejected (torch gave no reason)"]:
        return err  # the trial's own warnings are then the best words we have
    msgs: list[str] = next((c["torch_messages"] for c in why["checks"] if c["backend"] == name), [])
    detail = f" (torch: {'; '.join(msgs)})" if msgs else ""
    return Unsupported(f"{backend_attr} refused: {name}: {'; '.join(reasons)}{detail}"[:600])


def _prepare_default(case: Case, x: Inputs) -> Prepared:
    fn = _call_for(case, x)
    trial(fn, contextlib.nullcontext, "default")
    # After the trial: torch initialises its backend priority order on the first SDPA call.
    return Prepared(fn=fn, extra={"sdpa_why": _why(case, x)})


SDPA_VARIANTS = [_forced(n, b) for n, b in BACKENDS.items()] + [
    Variant(
        name="sdpa_default",
        family="sdpa",
        description="F.scaled_dot_product_attention with no context manager: PyTorch picks",
        check=lambda c: None,
        prepare=_prepare_default,
    )
]
