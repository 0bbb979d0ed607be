"""Where a copy happened and what kind it is: the context its advice depends on.  Pure, no torch.

``kind`` comes from the recorded strides of ``aten::copy_`` (Kineto's ``Input Strides``: the
destination first, the source second) and the ops above it:

- ``broadcast``: the source has a 0 stride on a dimension longer than 1 (an ``expand``ed view being
  materialised), or a ``repeat_interleave``/``repeat`` asked for the copy (GQA's K/V repeat);
- ``layout``: the source is a strided view (its strides are not the contiguous ones of its shape);
- ``value``: a contiguous source copied whole (e.g. out-of-place ``masked_fill``'s clone);
- ``dtype``: the copy changes the dtype (upcasts), set by the caller.

``inside`` is the nearest op above the copy that belongs to a library rather than to the code
that was profiled: an attention op (SDPA's public op or a backend, forward or backward, flex's
eager ``FlexAttentionAutogradOp``), an autograd node (``XBackward0``, ``AccumulateGrad``), or a
``torch.compile``d region.  None means the copy was asked for by the profiled code itself.
"""

from __future__ import annotations

import functools
import re
from typing import Any

from attnscope.analysis.fingerprint.attribution import OpTree
from attnscope.analysis.fingerprint.eager_attention import holds_attention
from attnscope.analysis.fingerprint.kernels import attention_op_family
from attnscope.core.case import run_flags

BROADCAST_OPS = frozenset({"aten::repeat_interleave", "aten::repeat"})
_AUTOGRAD = re.compile(r"Backward\d*$|^torch::autograd::AccumulateGrad$")
_LIBRARY = re.compile(r"^aten::scaled_dot_product_attention$|^Torch-Compiled Region")


def contiguous_strides(dims: list[int]) -> list[int]:
    out, acc = [0] * len(dims), 1
    for i in range(len(dims) - 1, -1, -1):
        out[i] = acc
        acc *= max(dims[i], 1)
    return out


def _strides_kind(dims: Any, strides: Any) -> str | None:
    if not (isinstance(dims, list) and isinstance(strides, list) and len(dims) == len(strides) and dims):
        return None
    try:  # a training step's thousands of copies have a few dozen shapes: each is judged once
        return _kind_of(tuple(dims), tuple(strides))
    except TypeError:  # an entry that is not a number (unhashable): judged as it is
        return _kind_of.__wrapped__(dims, strides)


@functools.lru_cache(maxsize=1024)
def _kind_of(dims: Any, strides: Any) -> str:
    if any(s == 0 and d > 1 for d, s in zip(dims, strides, strict=True)):
        return "broadcast"
    want = contiguous_strides(dims)
    # a dimension of size 1 may carry any stride: it is never stepped over
    same = all(d == 1 or s == w for d, s, w in zip(dims, strides, want, strict=True))
    return "value" if same else "layout"


def copy_kind(tree: OpTree, i: int) -> str | None:
    """value | layout | broadcast for the same-dtype ``aten::copy_`` at ``tree.ops[i]``; None without strides."""
    op = tree.ops[i]
    dims, strides = op.input_dims or [], op.input_strides or []
    kind = _strides_kind(dims[1] if len(dims) > 1 else None, strides[1] if len(strides) > 1 else None)
    if kind == "broadcast":
        return kind
    for a in tree.ancestors(i):
        name = tree.ops[a].name
        if name in BROADCAST_OPS:
            return "broadcast"
        if library_op(name):
            break
    return kind


@functools.cache
def library_op(name: str) -> bool:
    # attention_op_family covers SDPA's backends and flex (FlexAttentionAutogradOp, flex_attention)
    return bool(attention_op_family(name) or _AUTOGRAD.search(name) or _LIBRARY.search(name))


def inside_of(tree: OpTree, i: int) -> str | None:
    """The nearest library op above ``tree.ops[i]`` (see the module doc), or None for user code."""
    for a in tree.ancestors(i):
        name = tree.ops[a].name
        if name.startswith("autograd::engine::evaluate_function: "):
            return name.removeprefix("autograd::engine::evaluate_function: ")
        if library_op(name):
            return name
    return None


# ---- advice from (kind, inside) ------------------------------------------------------------
# Every alternative named here was seen without the copy; docs/fingerprint.md ("Copies seen avoided") lists each
# with its evidence.  The advice says where it was seen against where the result ran (:func:`seen_on_h200`), and
# cites the run's own row of the alternative where the case measured it (:func:`measured_without`).
SEEN_PAGE = "docs/fingerprint.md, 'Copies seen avoided'"
GQA_PAGE = "docs/results/h200.md, GQA"
GQA_SEEN_CPU = f"seen on a CPU with torch 2.13 and 2.11: {SEEN_PAGE}"


def seen_on_h200(r: dict[str, Any], page: str) -> str:
    """A fact seen on an H200, with its ``page``, said against where ``r`` ran: on a CPU or another GPU the
    advice says the fact is the H200's, not this device's."""
    kind, name = r.get("device_kind"), str(r.get("device_name") or "")
    if kind == "cpu":
        return f"seen on an H200 GPU, not on this CPU: {page}"
    if kind == "gpu" and name and "H200" not in name:
        return f"seen on an H200, not on this {name}: {page}"
    return f"seen on an H200: {page}"


def measured_without(peers: list[dict[str, Any]] | None, r: dict[str, Any], variant: str, what: str) -> str | None:
    """ "VARIANT ran this case here without it" where ``peers`` (the results of ``r``'s case) hold an ok row of
    ``variant`` with no hidden copy (``what``: "copy") or no upcast (``what``: "upcast"); None otherwise."""
    for p in peers or []:
        if p is r or p.get("variant") != variant or p.get("status") != "ok":
            continue
        if (what == "copy" and not p.get("hidden_copies")) or (what == "upcast" and not p.get("upcasts")):
            return f"{variant} ran this case here without it (no hidden {what} in its row)"
    return None


def _gqa_without_copy(r: dict[str, Any], one: str, two: str) -> str:
    """Which backends take enable_gqa=True without repeating K/V, on this result's device (``one``/``two``: the
    verb for one backend and for two)."""
    if r.get("device_kind") == "cpu":
        return f"SDPA's CPU flash kernel {one} ({GQA_SEEN_CPU})"
    return f"flash and cuDNN {two} ({seen_on_h200(r, GQA_PAGE)})"


_SLICING = re.compile(r"^(Slice|Select|Index|Narrow|Split|Unbind)\w*Backward\d*$")


def describe(inside: str) -> str:
    fam = attention_op_family(inside)
    if fam == "math":
        return f"SDPA's math backend ({inside})"
    if fam == "flex":
        return f"flex_attention's eager (unfused) path ({inside})"
    if fam is not None:
        return inside
    if _AUTOGRAD.search(inside):
        return f"autograd's {inside}"
    return inside


def _passes_gqa(r: dict[str, Any]) -> bool:
    """Whether an SDPA call of this result already passes enable_gqa=True (its recorded arguments)."""
    return any(c.get("enable_gqa") is True for c in r.get("attention_calls") or [])


def copy_advice(
    kind: str | None, inside: str | None, r: dict[str, Any], peers: list[dict[str, Any]] | None = None
) -> str | None:
    """Advice chosen from where the copy happened and what kind it is; None: the op-based advice applies.
    ``peers``: the results of ``r``'s case, whose rows of an alternative are cited where they measured it."""
    if inside is None:
        if kind == "gather":
            return (
                "the KV pages are gathered into a dense copy before attention, every call: a kernel that reads the "
                "pages in place through the block table (flex with a page-table BlockMask, varlen_attn with "
                "block_table, FlashInfer's paged wrappers) skips the copy (docs/serving.md)"
            )
        if kind != "broadcast":
            return None
        if not holds_attention(r):  # no attention here: no K/V to keep at their heads
            return (
                "the copy materialises a broadcast (a repeat, or an expanded view made contiguous): where the op "
                "that reads it broadcasts by itself, pass it the smaller tensor and the copy goes"
            )
        if _passes_gqa(r):
            return (
                "K/V are repeated in this code before an SDPA call that already passes enable_gqa=True: "
                "drop the repeat, SDPA broadcasts the KV heads itself"
            )
        if r.get("source") == "trace" and not r.get("attention_calls"):
            # a recorded program whose attention is no SDPA call (matmul, softmax): the repeat may be a library's
            # (transformers' repeat_kv under attn_implementation="eager"), so its switch is named beside the edit
            return (
                "GQA: K and V are materialised once per query head for an attention that is no SDPA call in this "
                "trace (matmul, softmax); SDPA with enable_gqa=True keeps them at their KV heads, and "
                + _gqa_without_copy(r, "then runs without any copy", "then run without any copy")
                + "; in a transformers model the repeat is its repeat_kv, and the switch is "
                'attn_implementation="sdpa", which passes enable_gqa=True where no attention mask is needed'
            )
        return (
            "GQA: pass enable_gqa=True to SDPA instead of materialising K and V once per query head "
            "(repeat_interleave, expand+reshape); "
            + _gqa_without_copy(r, "then runs without any copy", "then run without any copy")
        )
    fam = attention_op_family(inside)
    where = f"this is internal to {describe(inside)}, not a call in this code"
    if fam == "math":
        if kind == "broadcast":
            alt = _gqa_without_copy(r, "takes enable_gqa=True without a copy", "take enable_gqa=True without a copy")
            return f"{where}: it repeats K/V itself for GQA; {alt}"
        if r.get("device_kind") == "cpu":
            here = measured_without(peers, r, "sdpa_flash", "copy")
            return f"{where}; SDPA's CPU flash backend runs without it ({here or 'seen on a CPU: ' + SEEN_PAGE})"
        return (
            f"{where}; a fused backend (flash, cuDNN, efficient) runs without it (one kernel, no copy, "
            f"{seen_on_h200(r, SEEN_PAGE)})"
        )
    if fam == "flex":
        return f"{where}; torch.compile(flex_attention) runs without it ({_compiled_flex_seen(r, peers, 'copy')})"
    if fam in ("flash", "efficient") and "backward" in inside and kind == "layout":
        return (
            f"{where}: contiguous() of (B, S, H, D) views of (B, H, S, D) tensors. A layout that avoids it: q, k, v "
            "and the incoming gradient as (B, H, S, D) views of (B, S, H, D) tensors (x.view(B, S, H, D)"
            ".transpose(1, 2), what a projection before attention gives); cuDNN copied in neither layout "
            f"({seen_on_h200(r, SEEN_PAGE)})"
        )
    if inside == "torch::autograd::AccumulateGrad" and kind == "layout":
        return (
            f"{where}: the gradient arrives in another layout than the tensor it accumulates into; with the "
            "efficient backend, inputs as (B, H, S, D) views of (B, S, H, D) tensors avoided it "
            f"({seen_on_h200(r, SEEN_PAGE)})"
        )
    if _SLICING.search(inside):
        return (
            f"{where}: it materialises a full-size gradient; slicing fewer, larger tensors in the forward pass "
            "avoids it"
        )
    return f"{where}; no backend or layout that avoids it has been verified on the GPU"


def _compiled_flex_seen(r: dict[str, Any], peers: list[dict[str, Any]] | None, what: str) -> str:
    """Where compiled flex was seen without the copy or upcast: this case's own flex_compiled row where it ran
    here, else the H200's (one kernel, also with GQA), said against where ``r`` ran."""
    here = measured_without(peers, r, "flex_compiled", what)
    if here:
        return here
    also = ", also with GQA" if what == "copy" else ""
    seen = seen_on_h200(r, SEEN_PAGE)
    case = r.get("case")
    if "not on this" in seen and isinstance(case, dict) and r.get("source") == "run":
        seen += f"; attnscope run --variants flex_compiled {run_flags(case)} measures it here"
    return f"one kernel, no {what}{also}; {seen}"


def upcast_advice(
    insides: list[str | None], r: dict[str, Any], peers: list[dict[str, Any]] | None = None
) -> str | None:
    """Advice for fp32 upcasts that all happened inside one kind of library op; None: the generic advice.
    ``peers``: the results of ``r``'s case (a measured alternative is cited from them)."""
    kinds = {attention_op_family(i) if i else None for i in insides}
    if kinds == {"flex"}:
        return (
            "this is internal to flex_attention's eager (unfused) path, which computes in fp32; "
            f"torch.compile(flex_attention) stays in 16-bit ({_compiled_flex_seen(r, peers, 'upcast')})"
        )
    nodes = {i for i in insides if i and _AUTOGRAD.search(i)}
    if nodes and len(nodes) == len(set(insides)):
        return (
            f"this is internal to {', '.join(sorted(nodes))}: autograd casts the gradient back through the "
            "forward pass's casts; removing the cast from the forward pass removes it"
        )
    return None
