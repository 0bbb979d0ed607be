"""The attention case read back from a trace: shapes, causality, scale.  Pure, no torch.

With ``record_shapes`` every aten op carries ``Input Dims``, ``Input type`` and ``Concrete
Inputs`` (scalar arguments as strings).  The attention ops' signatures place q, k, v and the
flags at fixed positions; the table below holds those positions for the ops of torch 2.11
(each row pinned by a test on a real H200 trace).  A flag is only read when the recorded
value has the expected form ('True'/'False', a number): an op whose signature moved leaves
the field unknown, with the reason, rather than read a wrong argument.

A causal flag means different masks when Sq != Sk, by op (checked in torch's source):

- ``aten::scaled_dot_product_attention``, the math, efficient and cuDNN ops: top-left (query i
  sees keys 0..i).  The efficient op passes ``custom_mask_type`` 1 (``CausalFromTopLeft``); the
  cuDNN op passes is_causal to cuDNN's ``set_causal_mask``, which is top-left.
- the flash ops: bottom-right (the queries are the last Sq positions).  FlashAttention-2 aligns its
  causal mask to the bottom right; SDPA refuses flash for is_causal with Sq != Sk
  (``check_flash_causal_non_square_seqlens``), and ``torch.nn.attention.bias.causal_lower_right``
  calls ``aten::_scaled_dot_product_flash_attention`` with is_causal=True for exactly this mask.
- ``aten::_efficient_attention_*``: ``custom_mask_type`` 1 top-left, 2 bottom-right
  (``sdp::CustomMaskType``).

A mask given as a tensor is not recorded, but a trace can show how it was built: a boolean
``aten::ones(Sq, Sk)`` then ``aten::tril(diagonal=d)`` on the same thread just before the call
with an ``attn_mask`` of that shape is a causal mask with query 0 at key d (``causal_lower_right``
materialises exactly that with d = Sk - Sq).  The link is by shape and order (Kineto records no
tensor identities), so the call says the mask was inferred and from which ops.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass, field
from itertools import compress
from typing import Any, Literal

from attnscope.analysis.fingerprint.attribution import OpTree
from attnscope.analysis.fingerprint.kernels import attention_call_op, attention_op_family
from attnscope.analysis.fingerprint.op_signatures import (  # noqa: F401  (OP_SIGS: read by callers here too)
    ALIGN_WHY,
    LOWER_RIGHT_FLASH,
    MASK_TYPES,
    OP_SIGS,
    TOP_LEFT_CUDNN,
    TOP_LEFT_EFF,
    TOP_LEFT_SDPA,
    OpSig,
)
from attnscope.core.flops import attention_flops
from attnscope.core.types import Case

BACKWARD_FLOPS_FACTOR = 2.5  # dQ, dK, dV and the recomputed scores: 5 GEMMs against the forward's 2
DTYPES = {"c10::BFloat16": "bf16", "c10::Half": "fp16", "float": "fp32"}
Direction = Literal["forward", "backward"]


# Inductor's FlexAttention template call records q, k, v (B, H, S, D) first; its mask is compiled in.
COMPILED_FLEX = re.compile(r"^triton_tem_fused_flex_attention(?!.*backward)")
MASK_BUILD_OPS = frozenset({"aten::tril", "aten::triu"})
FIELDS = ("batch", "heads", "kv_heads", "seq_q", "seq_kv", "head_dim", "dtype", "causal", "scale", "enable_gqa")


@dataclass
class AttentionCall:
    """One attention call of the trace (the outermost attention op and the ones inside it)."""

    op: str
    family: str
    direction: Direction
    values: dict[str, Any] = field(default_factory=dict)  # FIELDS that were read
    unknown: dict[str, str] = field(default_factory=dict)  # FIELDS that were not, and why
    source: dict[str, str] = field(default_factory=dict)  # field → the op it was read from
    align: str | None = None  # a causal call's alignment: "top_left" or "lower_right" (None: not causal / unknown)
    align_why: str | None = None  # how the alignment was told, in words
    mask_inferred_from: tuple[str, ...] = ()  # the ops that built a tensor mask read as causal (else empty)

    def shape_key(self) -> tuple[Any, ...]:
        return tuple(self.values.get(f) for f in FIELDS if f not in ("scale", "enable_gqa"))

    def mask(self) -> str | None:
        """The mask in attnscope's grammar: ``none``, ``causal`` (Sq = Sk: either alignment keeps the same
        scores), ``causal@top_left`` or ``causal_lower_right``; None when the trace cannot tell."""
        c = self.values.get("causal")
        if c is None:
            return None
        if not c:
            return "none"
        if self.values.get("seq_q") is not None and self.values.get("seq_q") == self.values.get("seq_kv"):
            return "causal"
        return {"top_left": "causal@top_left", "lower_right": "causal_lower_right"}.get(self.align or "")

    def mask_basis(self) -> str | None:
        """Why the mask is what :meth:`mask` says, in one line (for the FLOP footnote and the JSON)."""
        m, v = self.mask(), self.values
        if m is None:
            return None
        src = self.source.get("causal", self.op)
        if m == "none":
            return f"none: {src} with is_causal=False and no attn_mask"
        if self.mask_inferred_from:
            return f"{m}, inferred: {self.align_why}"
        if m == "causal":
            return f"causal: {src}, Sq = Sk = {v.get('seq_q')} (both alignments keep the same scores)"
        return f"{m}: {src} with Sq={v.get('seq_q')} != Sk={v.get('seq_kv')}: {self.align_why}"

    def flops(self) -> int | None:
        """Forward FLOPs on the scores the mask keeps (attnscope.core.flops); ×2.5 for a backward call."""
        v = self.values
        need = ("batch", "heads", "seq_q", "seq_kv", "head_dim", "causal")
        if any(v.get(f) is None for f in need) or self.mask() is None:
            return None
        shape = (v["batch"], v["heads"], v["seq_q"], v["head_dim"], v["seq_kv"], self.mask(), self.direction)
        try:  # a training step's hundreds of calls have a few shapes: each is worked out once
            return _flops(*shape)
        except TypeError:  # a recorded value that is not hashable (not a number): as the Case would have it
            return _flops.__wrapped__(*shape)


@functools.lru_cache(maxsize=256)
def _flops(batch: Any, heads: Any, seq_q: Any, head_dim: Any, seq_kv: Any, mask: str, direction: str) -> int | None:
    """:meth:`AttentionCall.flops` of one shape."""
    try:
        case = Case(batch, heads, seq_q, head_dim, seq_kv=seq_kv, mask=mask)
    except ValueError:
        return None
    f = attention_flops(case)
    return int(f * BACKWARD_FLOPS_FACTOR) if direction == "backward" else f


def _bool(s: Any) -> bool | None:
    return {"True": True, "False": False, "1": True, "0": False}.get(s) if isinstance(s, str) else None


def _float(s: Any) -> float | None:
    try:
        return float(s) if isinstance(s, str) and s.strip() else None
    except ValueError:
        return None


def _arg(conc: list[Any], i: int | None) -> Any:
    return conc[i] if i is not None and i < len(conc) else None


def _dims(op: Any, sig: OpSig, call: AttentionCall) -> None:
    dims = op.input_dims or []
    types = op.input_types or []
    q, k = (dims[sig.q] if len(dims) > sig.q else None), (dims[sig.q + 1] if len(dims) > sig.q + 1 else None)
    if not (isinstance(q, list) and len(q) == 4 and isinstance(k, list) and len(k) == 4):
        return
    if sig.layout == "bhsd":
        got = {"batch": q[0], "heads": q[1], "seq_q": q[2], "head_dim": q[3], "kv_heads": k[1], "seq_kv": k[2]}
    else:
        got = {"batch": q[0], "seq_q": q[1], "heads": q[2], "head_dim": q[3], "seq_kv": k[1], "kv_heads": k[2]}
    if len(types) > sig.q and types[sig.q] in DTYPES:
        got["dtype"] = DTYPES[types[sig.q]]
    elif len(types) > sig.q and types[sig.q]:
        call.unknown.setdefault("dtype", f"q's recorded type in {op.name} is {types[sig.q]}, not bf16, fp16 or fp32")
    else:
        call.unknown.setdefault("dtype", f"{op.name} records q's shape but not its type")
    for f, val in got.items():
        _put(call, f, val, op.name)


def _put(call: AttentionCall, f: str, val: Any, op: str) -> None:
    if val is not None and f not in call.values:
        call.values[f] = val
        call.source[f] = op
        call.unknown.pop(f, None)


def _flags(op: Any, sig: OpSig, call: AttentionCall) -> None:
    conc = op.concrete_inputs or []
    dims = op.input_dims or []
    if sig.attn_mask is not None and sig.attn_mask < len(dims) and dims[sig.attn_mask]:
        call.unknown.setdefault("causal", f"{op.name} got an explicit attn_mask tensor: its pattern is not recorded")
        call.values.setdefault("attn_mask", True)
    elif sig.causal is not None:
        raw = _arg(conc, sig.causal)
        b = _bool(raw)
        if b is None:
            call.unknown.setdefault("causal", f"argument {sig.causal} of {op.name} reads {raw!r}, not a bool")
        elif "attn_mask" not in call.values and "causal" not in call.values:
            _put(call, "causal", b, op.name)
            if b:
                call.align = sig.align
                call.align_why = "is_causal=True, and " + (ALIGN_WHY.get(op.name) or LOWER_RIGHT_FLASH)
    elif sig.mask_type is not None:
        raw = _arg(conc, sig.mask_type)
        mt = MASK_TYPES.get(raw) if isinstance(raw, str) else None
        if mt is None:
            call.unknown.setdefault("causal", f"custom_mask_type of {op.name} reads {raw!r}")
        elif "causal" not in call.values:
            _put(call, "causal", mt[0], op.name)
            if mt[0]:
                call.align = mt[1]
                call.align_why = f"custom_mask_type {raw}, torch's sdp::CustomMaskType " + (
                    "CausalFromTopLeft" if raw == "1" else "CausalFromBottomRight"
                )
    if sig.scale is not None:
        raw = _arg(conc, sig.scale)
        scale = _float(raw)
        if scale is not None:
            _put(call, "scale", scale, op.name)
        elif isinstance(raw, str) and not raw.strip():
            call.unknown.setdefault("scale", f"not passed to {op.name} (None): torch's default, 1/√head_dim")
        else:
            call.unknown.setdefault("scale", _unread(op.name, sig.scale, "scale", raw, "a number"))
    if sig.enable_gqa is not None:
        raw = _arg(conc, sig.enable_gqa)
        g = _bool(raw)
        if g is not None:
            _put(call, "enable_gqa", g, op.name)
        else:
            call.unknown.setdefault("enable_gqa", _unread(op.name, sig.enable_gqa, "enable_gqa", raw, "a bool"))


def _unread(op: str, i: int, f: str, raw: Any, want: str) -> str:
    """Why argument ``i`` (field ``f``) of ``op`` gave no value: absent from the Concrete Inputs, or unreadable."""
    if raw is None:
        return f"{op} records no argument {i} ({f}): no Concrete Inputs"
    return f"argument {i} of {op} reads {raw!r}, not {want}"


def _call_at(tree: OpTree, i: int, family: str) -> AttentionCall:
    name = tree.ops[i].name
    direction: Direction = "backward" if "backward" in name.lower() else "forward"
    call = AttentionCall(op=name, family=family, direction=direction)
    for j in _attention_ops_within(tree, i):  # the outer op first: the first that records a field wins
        op = tree.ops[j]
        sig = _sig(op.name)
        if sig is not None:
            _dims(op, sig, call)
            _flags(op, sig, call)
        fam = attention_op_family(op.name)
        if call.family == "sdpa" and fam is not None:
            call.family = fam  # the backend that ran, from the op inside the public one
    _explain_missing(call, tree.ops[i].name)
    return call


def _attention_ops_within(tree: OpTree, i: int) -> list[int]:
    """``i`` and the attention ops nested in it (by the op tree's nesting), the outer first."""
    return [k for k in tree.subtree(i) if k == i or _is_attention(tree.ops[k].name)]


def _explain_missing(call: AttentionCall, name: str) -> None:
    v = call.values
    if v.get("causal") and call.align is None and v.get("seq_q") != v.get("seq_kv"):
        call.unknown["causal_align"] = (
            f"{call.source.get('causal', name)} says causal with Sq={v.get('seq_q')} != Sk={v.get('seq_kv')}, and "
            "which alignment it means (top-left or lower-right) is not known for this op"
        )
    for f in FIELDS:
        if f in call.values or f in call.unknown:
            continue
        if f == "causal" and call.family == "flex":
            call.unknown[f] = "flex_attention's mask is a Python function (block_mask / score_mod): not recorded"
        elif f == "enable_gqa":
            call.unknown[f] = f"{name} takes no enable_gqa argument (only aten::scaled_dot_product_attention does)"
        else:
            call.unknown[f] = f"{name} and the ops inside it record no {f} (a trace without record_shapes?)"


def _sig(name: str) -> OpSig | None:
    sig = OP_SIGS.get(name)
    if sig is None and COMPILED_FLEX.match(name):
        return OpSig("bhsd", 0)
    return sig


def _starts_call(name: str) -> bool:
    """An attention op that is a call of its own (compiled flex's generated reductions are parts of one)."""
    return name in OP_SIGS or attention_call_op(name)


@functools.cache
def _is_attention(name: str) -> bool:
    return name in OP_SIGS or attention_op_family(name) is not None


def attention_calls(tree: OpTree) -> list[AttentionCall]:
    """Every outermost attention op of the trace, read into an :class:`AttentionCall`."""
    return [c for _, c in attention_calls_at(tree)]


def attention_calls_at(tree: OpTree) -> list[tuple[int, AttentionCall]]:
    """:func:`attention_calls`, each with the index of its op in ``tree.ops``."""
    out = []
    at: dict[int, AttentionCall] = {}
    calls = {n for n in tree.names if _is_attention(n) and _starts_call(n)}
    found = tree.indices_named(calls)
    for i in sorted(found, key=lambda j: tree.ops[j].ts):  # in time, across threads
        op = tree.ops[i]
        if any(_is_attention(tree.ops[a].name) for a in tree.ancestors(i)):
            continue  # inside another attention op: part of that call
        at[i] = _call_at(tree, i, attention_op_family(op.name) or "sdpa")
        out.append((i, at[i]))
    if at and not MASK_BUILD_OPS.isdisjoint(tree.names):
        _read_built_masks(tree, at)
    return out


def _read_built_masks(tree: OpTree, at: dict[int, AttentionCall]) -> None:
    """A call given a tensor mask that the trace shows being built as a causal one (mask_ops.py)."""
    from attnscope.analysis.fingerprint.mask_ops import find

    for mb in find(tree):
        call = at.get(mb.consumer) if mb.consumer is not None and mb.inside is None else None
        kind = mb.kind()
        if call is None or kind is None or not call.values.get("attn_mask") or "causal" in call.values:
            continue
        sq, sk = call.values.get("seq_q"), call.values.get("seq_kv")
        if mb.dims[-2:] != [sq, sk]:
            continue
        call.values["causal"] = True
        call.source["causal"] = f"{tree.ops[mb.ones].name if mb.ones is not None else ''} + {tree.ops[mb.tril].name}"
        call.unknown.pop("causal", None)
        call.align = {"causal@top_left": "top_left", "causal_lower_right": "lower_right"}.get(kind)
        call.mask_inferred_from = tuple(tree.ops[i].name for i in (mb.ones, mb.tril) if i is not None)
        d = mb.diagonal
        off = "= Sk - Sq: lower-right" if kind == "causal_lower_right" else "= 0: top-left" if d == 0 else ""
        call.align_why = (
            f"the attn_mask {mb.dims} {call.op} took was built just before it by aten::ones({mb.dims}) then "
            f"{tree.ops[mb.tril].name}(diagonal={d} {off}), the form torch.nn.attention.bias materialises; linked by "
            "shape and order (a trace records no tensor identities)"
        )


def attention_time_us(tree: OpTree, launcher: list[int], dur_us: list[float]) -> float:
    """GPU time of the events launched inside attention ops (the op or one of its ancestors)."""
    attention = {n for n in tree.names if _is_attention(n)}
    if not attention:
        return 0.0
    if len(launcher) != len(dur_us):
        raise ValueError(f"{len(launcher)} launchers and {len(dur_us)} durations: the lists do not line up")
    # an op's subtree follows it without a gap in tree.ops: mark each outermost attention op's once.  The
    # entry past the last op stays 0: an event no op launched (-1) reads it.
    inside = bytearray(len(tree.ops) + 1)
    covered = -1
    for i in tree.indices_named(attention):
        if i > covered:
            sub = tree.subtree(i)
            for j in sub:
                inside[j] = 1
            covered = sub[-1]
    return sum(compress(dur_us, map(inside.__getitem__, launcher)))  # in event order, picked out in C


def case_of(calls: list[AttentionCall]) -> tuple[dict[str, Any] | None, dict[str, str]]:
    """The one shape all forward calls share (else all calls), as Case fields, or None and why per field; the mode
    is ``fwd_bwd`` where the trace also holds a backward call of that shape, as a training step does (a trace of
    backward calls alone keeps the default: no mode names a backward alone)."""
    if not calls:
        return None, {"case": "no attention op (SDPA, its backends, flex) in the trace"}
    fwd = [c for c in calls if c.direction == "forward"] or calls
    keys = {c.shape_key() for c in fwd}
    if len(keys) > 1:
        return None, {"case": f"{len(keys)} different attention shapes in the trace; see attention_calls"}
    c = fwd[0]
    missing = {f: c.unknown.get(f, "not recorded") for f in FIELDS[:8] if c.values.get(f) is None}
    if missing:
        return None, missing
    v = c.values
    case = {
        "batch": v["batch"],
        "heads": v["heads"],
        "seq_q": v["seq_q"],
        "head_dim": v["head_dim"],
        "dtype": v["dtype"],
        "causal": v["causal"],
        "kv_heads": v["kv_heads"] if v["kv_heads"] != v["heads"] else None,
        "seq_kv": v["seq_kv"] if v["seq_kv"] != v["seq_q"] else None,
    }
    if v["seq_kv"] != v["seq_q"]:
        case["mask"] = c.mask()  # Sq != Sk: the alignment must be stated
    key = c.shape_key()
    if c.direction == "forward" and any(x.direction == "backward" and x.shape_key() == key for x in calls):
        case["mode"] = "fwd_bwd"  # the backward of this shape ran too (a training step): the FLOPs count both
    return case, {}


def to_dict(c: AttentionCall) -> dict[str, Any]:
    return {
        "op": c.op,
        "family": c.family,
        "direction": c.direction,
        **{f: c.values.get(f) for f in FIELDS},
        "mask": c.mask(),
        "causal_align": c.align,
        "mask_basis": c.mask_basis(),
        "mask_inferred_from": list(c.mask_inferred_from),
        "flops": c.flops(),
        "read_from": dict(c.source),
        "unknown": dict(c.unknown),
    }
