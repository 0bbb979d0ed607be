"""Why F.scaled_dot_product_attention picks the backend it picks, in torch's own words.  Needs torch.

On CUDA, torch tries its backends in a priority order (``torch._C._get_sdp_priority_order``,
cuDNN first on Hopper with recent cuDNN) and takes the first whose ``can_use_*`` check
passes.  We ask the same checks with ``debug=True`` and keep the warnings they emit.
On CPU the order is flash (``_scaled_dot_product_flash_attention_for_cpu``) then math;
the flash check speaks only when flash is forced, so we force it around
``torch._fused_sdp_choice`` (which selects without running attention).

The output is plain data (JSON-ready), stored on the Result as ``extra["sdpa_why"]``.
"""

from __future__ import annotations

import contextlib
import os
import re
import sys
import tempfile
import warnings
from collections.abc import Iterator
from typing import Any

BACKEND_BY_INDEX = {0: "math", 1: "flash", 2: "efficient", 3: "cudnn", 4: "overrideable"}
CUDA_CHECKS = {
    "flash": "can_use_flash_attention",
    "efficient": "can_use_efficient_attention",
    "cudnn": "can_use_cudnn_attention",
}
# Before torch exposed the order (and before the first SDPA call initialises it).
DEFAULT_CUDA_ORDER = ["flash", "efficient", "math", "cudnn"]
CPU_ORDER = ["flash", "math"]
CUDNN_FIRST_ORDER = ["cudnn", "flash", "efficient", "math"]
# torch's check_prefer_cudnn_attention (aten/src/ATen/native/transformers/cuda/sdp_utils.cpp, torch 2.10 on):
# cuDNN first when the runtime cuDNN is newer than 9.15.0 (version number > 91500), on sm9x or sm10x (a build for
# CUDA < 13 also needs minor 0 or 3: sm90, sm100, sm103), unless TORCH_CUDNN_SDPA_DEPRIORITIZED is set true.
CUDNN_FIRST_TORCH = (2, 10)
CUDNN_FIRST_MIN_CUDNN = 91500  # exclusive: 9.15.1 and newer

_HEADERS = re.compile(r"kernel not used because:?\s*$", re.IGNORECASE)
_TRIGGERED = re.compile(r"\s*\(Triggered internally at [^)]*\)\.?\s*$")

# torch's debug message → a short reason.  First match wins; unknown messages are kept as torch wrote them.
_SHORT: tuple[tuple[re.Pattern[str], Any], ...] = (
    (
        re.compile(
            r"less than or equal to (\d+)\. Got Query\.size\(-1\): (\d+), Key\.size\(-1\): (\d+), "
            r"Value\.size\(-1\): (\d+)"
        ),
        lambda m: (
            f"head_dim {m[2]} > {m[1]}"
            if m[2] == m[3] == m[4]
            else f"head dims differ or exceed {m[1]} (q {m[2]}, k {m[3]}, v {m[4]})"
        ),
    ),
    (
        re.compile(
            r"same last dimension\. Got Query\.size\(-1\): (\d+), Key\.size\(-1\): (\d+), "
            r"Value\.size\(-1\): (\d+)"
        ),
        lambda m: f"head dims differ (q {m[1]}, k {m[2]}, v {m[3]})",
    ),
    (
        re.compile(r"divisible by (\d+)\. Got Query\.size\(-1\): (\d+)"),
        lambda m: f"head_dim {m[2]} not a multiple of {m[1]}",
    ),
    (re.compile(r"head_dim should be no more than (\d+)"), lambda m: f"head_dim > {m[1]}"),
    (re.compile(r"head_dim should be a multiple of (\d+)"), lambda m: f"head_dim not a multiple of {m[1]}"),
    (
        re.compile(r"Expected query, key and value to all be of dtype: \{([^}]*)\}\. Got Query dtype: ([\w:.]+)"),
        lambda m: f"dtype {m[2]} not in {{{m[1].strip()}}}",
    ),
    (
        re.compile(r"seqlen_q != seqlen_k\. Got seqlen_q: (\d+) seqlen_k: (\d+)"),
        lambda m: f"is_causal with seq_q {m[1]} != seq_kv {m[2]}",
    ),
    (
        re.compile(r"runtime disabled", re.IGNORECASE),
        lambda m: "disabled at runtime (enable_*_sdp(False) / sdpa_kernel)",
    ),
    (re.compile(r"non-zero dropout", re.IGNORECASE), lambda m: "dropout > 0"),
    (re.compile(r"not compiled with", re.IGNORECASE), lambda m: "not built into this torch"),
    (
        re.compile(r"same num_heads", re.IGNORECASE),
        lambda m: "q and k/v head counts differ (GQA): not taken here",
    ),
    (re.compile(r"requires a CUDA device", re.IGNORECASE), lambda m: "no CUDA device"),
    (
        re.compile(
            r"only supports gpu architectures in the range \[(\w+), (\w+)\]\. Attempting to run on a sm "
            r"([\d.]+)"
        ),
        lambda m: f"sm {m[3]} outside [{m[1]}, {m[2]}]",
    ),
)


def _version(text: str | None) -> tuple[int, ...]:
    """'2.11.0+cu130' → (2, 11, 0); '' or None → ()."""
    out: list[int] = []
    for part in re.split(r"[.+]", text or ""):
        if not part.isdigit():
            break
        out.append(int(part))
    return tuple(out)


_TRUE = ("1", "true", "yes", "on", "y")


def predict_order(
    torch_version: str | None,
    sm: tuple[int, int] | None,
    cudnn: int | None,
    cuda: str | None,
    env: dict[str, str] | None = None,
) -> dict[str, Any]:
    """The default order torch will try its SDPA backends in, predicted from the versions alone (pure):
    ``{order, cudnn_first, why}``.  ``sm``: (major, minor), None on a CPU; ``cudnn``: torch's runtime cuDNN
    version number (91501 for 9.15.1); ``cuda``: the CUDA torch was built with ('13.0')."""
    if sm is None:
        return {"order": list(CPU_ORDER), "cudnn_first": False, "why": "on a CPU torch tries flash, then math"}
    env = env or {}
    tv = _version(torch_version)
    major, minor = sm
    old_cuda = bool(_version(cuda)) and _version(cuda) < (13,)
    if tv and tv[:2] < CUDNN_FIRST_TORCH:
        why = f"torch {torch_version} (before 2.10) keeps flash first"
    elif str(env.get("TORCH_CUDNN_SDPA_DEPRIORITIZED", "")).strip().lower() in _TRUE:
        why = "TORCH_CUDNN_SDPA_DEPRIORITIZED is set: cuDNN is not put first"
    elif cudnn is None or cudnn <= CUDNN_FIRST_MIN_CUDNN:
        why = f"cuDNN {_cudnn_text(cudnn)} is not newer than 9.15.0: cuDNN is not put first"
    elif major not in (9, 10):
        why = f"sm{major}{minor} is neither sm9x nor sm10x: cuDNN is not put first"
    elif old_cuda and minor not in (0, 3):
        why = f"a build for CUDA {cuda} (< 13) puts cuDNN first on sm90, sm100 and sm103 only, not sm{major}{minor}"
    else:
        return {
            "order": list(CUDNN_FIRST_ORDER),
            "cudnn_first": True,
            "why": f"torch {torch_version or '?'} on sm{major}{minor} with cuDNN {_cudnn_text(cudnn)} (newer than "
            "9.15.0): cuDNN first (torch's check_prefer_cudnn_attention)",
        }
    return {"order": list(DEFAULT_CUDA_ORDER), "cudnn_first": False, "why": why}


def _cudnn_text(v: int | None) -> str:
    """91501 → '9.15.1' (major·10000 + minor·100 + patch, cuDNN 9's numbering)."""
    if v is None:
        return "none"
    return f"{v // 10000}.{v // 100 % 100}.{v % 100}"


def first_usable(order: list[str], usable: dict[str, bool]) -> str | None:
    """What torch runs given its order and each backend's check: the first usable one."""
    return next((b for b in order if usable.get(b)), None)


def shorten(message: str) -> str:
    for pat, fn in _SHORT:
        m = pat.search(message)
        if m:
            return str(fn(m))
    return message if len(message) <= 160 else message[:159] + "…"


def torch_messages(caught: list[warnings.WarningMessage]) -> list[str]:
    """The reasons in the warnings torch's checks emitted, cleaned, in order, once each."""
    out: list[str] = []
    for w in caught:
        msg = _TRIGGERED.sub("", " ".join(str(w.message).split()))
        if not msg or _HEADERS.search(msg) or msg in out:
            continue
        out.append(msg)
    return out


def sdpa_params(q: Any, k: Any, v: Any, is_causal: bool, enable_gqa: bool, attn_mask: Any = None) -> Any:
    """``SDPAParams`` across torch versions: enable_gqa joined the signature in 2.5."""
    import torch

    cls: Any = torch.backends.cuda.SDPAParams
    try:
        return cls(q, k, v, attn_mask, 0.0, is_causal, enable_gqa)
    except TypeError:
        return cls(q, k, v, attn_mask, 0.0, is_causal)


@contextlib.contextmanager
def _stderr_lines() -> Iterator[list[str]]:
    """Lines written to fd 2 inside the block.  torch.backends.cuda.can_use_*(debug=True) emit their
    TORCH_WARNs through c10's logger on stderr, not as Python warnings (seen on torch 2.11, H200)."""
    sys.stderr.flush()
    saved = os.dup(2)
    lines: list[str] = []
    with tempfile.TemporaryFile() as tmp:
        os.dup2(tmp.fileno(), 2)
        try:
            yield lines
        finally:
            sys.stderr.flush()
            os.dup2(saved, 2)
            os.close(saved)
            tmp.seek(0)
            lines.extend(tmp.read().decode(errors="replace").splitlines())


_LOGGED = re.compile(r"Warning: (.*?)(?: \(function [^)]*\))?\s*$")


def _check(name: str, fn: Any) -> dict[str, Any]:
    with warnings.catch_warnings(record=True) as caught, _stderr_lines() as logged:
        warnings.simplefilter("always")
        try:
            usable = bool(fn())
        except RuntimeError as e:  # a forced backend that cannot run raises "No available kernel"
            usable = False
            caught.append(warnings.WarningMessage(str(e), RuntimeWarning, "", 0))
    for line in logged:
        m = _LOGGED.search(line)
        if m:
            caught.append(warnings.WarningMessage(m[1], RuntimeWarning, "", 0))
    msgs = [] if usable else [m for m in torch_messages(caught) if "No available kernel" not in m]
    # one refusal reaches us twice (a Python warning and c10's stderr line, worded alike): said once
    msgs = [m for m in msgs if not any(m != o and m in o for o in msgs)]
    reasons = list(dict.fromkeys(shorten(m) for m in msgs))
    return {"backend": name, "usable": usable, "reasons": reasons, "torch_messages": msgs}


def _choice(
    q: Any, k: Any, v: Any, is_causal: bool, scale: float | None, enable_gqa: bool, attn_mask: Any = None
) -> str | None:
    try:
        return _choice_or_raise(q, k, v, is_causal, scale, enable_gqa, attn_mask)
    except (RuntimeError, TypeError):
        return None


def _cuda_order() -> tuple[list[str], str]:
    import torch

    get = getattr(torch._C, "_get_sdp_priority_order", None)
    if get is None:
        return list(DEFAULT_CUDA_ORDER), "torch's default order (this torch does not expose its priority order)"
    order = [BACKEND_BY_INDEX.get(int(i), str(i)) for i in get()]
    return [b for b in order if b != "overrideable"], "torch._C._get_sdp_priority_order()"


def explain_cuda(
    q: Any, k: Any, v: Any, is_causal: bool, scale: float | None, enable_gqa: bool, attn_mask: Any = None
) -> dict[str, Any]:
    import torch

    chosen = _choice(q, k, v, is_causal, scale, enable_gqa, attn_mask)  # also initialises torch's priority order
    order, source = _cuda_order()
    params = sdpa_params(q, k, v, is_causal, enable_gqa, attn_mask)
    checks = []
    for b in order:
        if b == "math":
            on = torch.backends.cuda.math_sdp_enabled()
            checks.append(
                {
                    "backend": "math",
                    "usable": on,
                    "reasons": [] if on else ["disabled at runtime"],
                    "torch_messages": [],
                }
            )
        elif b in CUDA_CHECKS:
            fn = getattr(torch.backends.cuda, CUDA_CHECKS[b])
            checks.append(_check(b, lambda fn=fn: fn(params, True)))
    pred = predict_order(
        torch.__version__,
        tuple(torch.cuda.get_device_capability(q.device)),  # type: ignore[arg-type]
        torch.backends.cudnn.version() if torch.backends.cudnn.is_available() else None,
        torch.version.cuda,
        dict(os.environ),
    )
    usable = {c["backend"]: bool(c["usable"]) for c in checks}
    pred["chosen"] = first_usable(pred["order"], usable)
    pred["matches_torch_order"] = order == pred["order"] if source.startswith("torch._C") else None
    return {
        "chosen": chosen,
        "order": order,
        "order_source": source,
        "checks": checks,
        "prediction": pred,
        "set_priority": has_set_priority(),
        "method": "torch.backends.cuda.can_use_<backend>(SDPAParams(q, k, v, ...), debug=True) in priority "
        "order; chosen = torch._fused_sdp_choice",
        "torch": torch.__version__,
    }


def has_set_priority() -> bool | None:
    """Whether this torch's ``sdpa_kernel`` takes ``set_priority`` (its list then is an order, not only an
    allow-set); None where sdpa_kernel is missing."""
    import inspect

    try:
        from torch.nn.attention import sdpa_kernel

        return "set_priority" in inspect.signature(sdpa_kernel).parameters
    except (ImportError, TypeError, ValueError):
        return None


def explain_cpu(
    q: Any, k: Any, v: Any, is_causal: bool, scale: float | None, enable_gqa: bool, attn_mask: Any = None
) -> dict[str, Any]:
    import torch
    from torch.nn.attention import SDPBackend, sdpa_kernel

    chosen = _choice(q, k, v, is_causal, scale, enable_gqa, attn_mask)

    def forced_flash() -> bool:
        with sdpa_kernel(SDPBackend.FLASH_ATTENTION):
            return _choice_or_raise(q, k, v, is_causal, scale, enable_gqa, attn_mask) == "flash"

    on = torch.backends.cuda.math_sdp_enabled()
    checks = [
        _check("flash", forced_flash),
        {"backend": "math", "usable": on, "reasons": [] if on else ["disabled at runtime"], "torch_messages": []},
    ]
    method = (
        "torch._fused_sdp_choice under sdpa_kernel(FLASH_ATTENTION), its debug warnings kept; "
        "chosen = torch._fused_sdp_choice"
    )
    pred = predict_order(torch.__version__, None, None, None)
    pred["chosen"] = first_usable(pred["order"], {c["backend"]: bool(c["usable"]) for c in checks})
    return {
        "chosen": chosen,
        "order": list(CPU_ORDER),
        "checks": checks,
        "prediction": pred,
        "set_priority": has_set_priority(),
        "method": method,
        "order_source": "torch's CPU order (sdp_utils_cpp: flash, math)",
        "torch": torch.__version__,
    }


def _choice_or_raise(
    q: Any, k: Any, v: Any, is_causal: bool, scale: float | None, enable_gqa: bool, attn_mask: Any = None
) -> str | None:
    import torch

    kw: dict[str, Any] = {"is_causal": is_causal, "scale": scale}
    if attn_mask is not None:
        kw["attn_mask"] = attn_mask
    if enable_gqa:
        kw["enable_gqa"] = True
    return BACKEND_BY_INDEX.get(int(torch._fused_sdp_choice(q, k, v, **kw)))


def explain(
    q: Any,
    k: Any,
    v: Any,
    *,
    is_causal: bool,
    scale: float | None = None,
    enable_gqa: bool = False,
    attn_mask: Any = None,
) -> dict[str, Any]:
    """Torch's choice for these inputs and, for every backend in priority order, why it was or was not usable."""
    fn = explain_cuda if q.is_cuda else explain_cpu
    try:
        return fn(q, k, v, is_causal, scale, enable_gqa, attn_mask)
    except Exception as e:  # noqa: BLE001 - an explanation must never cost the measurement
        return {"chosen": None, "order": [], "checks": [], "error": f"{type(e).__name__}: {e}"[:300]}


def reasons_for(why: dict[str, Any], backend: str) -> list[str]:
    """The short reasons one backend was rejected, from :func:`explain`'s output."""
    for c in why.get("checks") or []:
        if c["backend"] == backend and not c["usable"]:
            return list(c["reasons"]) or ["rejected (torch gave no reason)"]
    return []


def causal_bias_choice(why: dict[str, Any]) -> dict[str, Any]:
    """``why`` (torch's checks asked with no mask, as CausalBias asks them) with ``chosen`` set to what a
    lower-right CausalBias runs: flash if usable, then efficient, else a materialised mask through SDPA's
    own choice (torch.nn.attention.bias._dispatch_causal_attention's order)."""
    usable = {c["backend"]: c["usable"] for c in why.get("checks") or []}
    dense = why.get("chosen")
    out = dict(why)
    if usable.get("flash"):
        out["chosen"] = "flash"
    elif usable.get("efficient"):
        out["chosen"] = "efficient"
    else:
        out["chosen"] = dense
        out["materialised_mask"] = True
    out["note"] = "causal_lower_right CausalBias: flash if usable, then efficient, else a materialised mask"
    return out


def refusal_text(why: dict[str, Any], backend: str) -> str:
    """One backend's refusal in one line: the short reasons, then torch's own words where they say more
    (a message no pattern shortens is its own reason: said once, not twice)."""
    reasons = reasons_for(why, backend)
    msgs: list[str] = next((c["torch_messages"] for c in why.get("checks") or [] if c["backend"] == backend), [])
    extra = [m for m in msgs if m not in reasons]
    return "; ".join(reasons) + (f" (torch: {'; '.join(extra)})" if extra else "")


BACKEND_OF_FORCED = {
    "FLASH_ATTENTION": "flash",
    "EFFICIENT_ATTENTION": "efficient",
    "CUDNN_ATTENTION": "cudnn",
    "MATH": "math",
}
