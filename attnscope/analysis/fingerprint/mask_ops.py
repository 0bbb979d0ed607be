"""A causal mask materialised in the trace: which ops built it, where, and which attention call took it.  Pure.

A dense causal mask shows in a trace as a boolean ``aten::ones([Sq, Sk])`` and an ``aten::tril(diagonal=d)``
of that shape (keys k <= q + d are kept: d = 0 is top-left, d = Sk - Sq lower-right).  Two places build one:

- inside an attention op: SDPA's math backend expands ``is_causal=True`` into ``ones(L, S).tril()`` itself;
- before an attention op, in the caller: user code, or ``torch.nn.attention.bias.causal_lower_right``, which
  materialises ``ones(Sq, Sk).tril(diagonal=Sk - Sq)`` when neither flash nor efficient can take the call,
  and passes it as ``attn_mask``.  The call that takes it is the next attention op on the same thread
  whose ``attn_mask`` has the mask's shape: Kineto records no tensor identities, so the link is by shape
  and order, and is said to be so.

Inside the taking call, SDPA turns a boolean mask into an additive one (``aten::where``): that is work of
the mask too.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from attnscope.analysis.fingerprint.attribution import Attribution, OpTree
from attnscope.analysis.fingerprint.kernels import SDPA_BACKEND_OPS, attention_op_family

BUILD_OPS = frozenset({"aten::tril", "aten::triu", "aten::tril_", "aten::triu_"})
# How far (in ops on the thread) the ones before a tril, and the call after it, are looked for: the builds
# seen (CausalBias, SDPA's math backend) are a handful of ops apart; a bound keeps a 10^5-op trace linear.
NEAR = 256


@dataclass
class MaskBuild:
    tril: int  # index in tree.ops of the tril/triu op
    dims: list[int]  # its input's dims, [Sq, Sk] for a causal mask
    diagonal: int | None  # its diagonal argument (None: not recorded)
    ones: int | None = None  # the aten::ones (or ones_like) of the same shape just before it, same parent
    inside: int | None = None  # the outermost attention op around the build (None: built by the caller)
    innermost: int | None = None  # the innermost attention op around it (the backend op that built it)
    consumer: int | None = None  # the outermost attention op that takes the mask
    convert: list[int] = field(default_factory=list)  # ops inside the consumer that turn it into an additive mask
    tril_kind: bool = True  # tril (keeps the lower triangle); False for triu

    @property
    def ops(self) -> list[int]:
        """Every op whose work is the mask's: the build and the conversion (each with the ops below it)."""
        return [i for i in (self.ones, self.tril, *self.convert) if i is not None]

    def kind(self) -> str | None:
        """The mask in attnscope's grammar when the build is a causal one (tril of ones), else None."""
        if self.ones is None or self.diagonal is None or len(self.dims) != 2 or not self.tril_kind:
            return None
        sq, sk = self.dims
        if self.diagonal == 0 and sq == sk:
            return "causal"
        if self.diagonal == 0:
            return "causal@top_left"
        if self.diagonal == sk - sq:
            return "causal_lower_right"
        return None


def _first(xs: list[Any] | None) -> Any:
    return xs[0] if xs else None


def _int(s: Any) -> int | None:
    try:
        return int(s) if isinstance(s, str) and s.strip() else None
    except ValueError:
        return None


def _is_attention(name: str) -> bool:
    from attnscope.analysis.fingerprint.op_signatures import OP_SIGS

    return name in OP_SIGS or attention_op_family(name) is not None


def _attention_around(tree: OpTree, i: int) -> tuple[int | None, int | None]:
    """The (outermost, innermost) attention ops around the op at ``i``."""
    outer = inner = None
    for a in tree.ancestors(i):
        if _is_attention(tree.ops[a].name):
            outer = a
            inner = a if inner is None else inner
    return outer, inner


def _outermost_attention(tree: OpTree, i: int) -> int | None:
    return _attention_around(tree, i)[0]


def _ones_before(tree: OpTree, i: int, dims: list[int]) -> int | None:
    """The aten::ones of ``dims`` that the tril at ``i`` most likely took: the latest one before it under the same
    parent on the same thread, within :data:`NEAR` ops (its size is a Concrete Input, e.g. '[1, 8192]')."""
    op, want = tree.ops[i], str(dims)
    best = None
    for j in range(i - 1, max(-1, i - 1 - NEAR), -1):
        o = tree.ops[j]
        if (o.pid, o.tid) != (op.pid, op.tid):
            break
        if tree.parent[j] != tree.parent[i]:
            continue
        if o.name in ("aten::ones", "aten::ones_like"):
            conc = o.concrete_inputs or []
            if (conc and conc[0] == want) or (o.input_dims and o.input_dims[0] == dims):
                best = j
                break
    return best


def _taker(tree: OpTree, i: int, dims: list[int]) -> int | None:
    """The next outermost attention op on the thread after the op at ``i`` (within :data:`NEAR` ops), if its
    attn_mask has ``dims``' last two sizes; None when another attention op comes first or the shapes differ."""
    from attnscope.analysis.fingerprint.op_signatures import OP_SIGS

    op = tree.ops[i]
    for j in range(i + 1, min(len(tree.ops), i + 1 + NEAR)):
        o = tree.ops[j]
        if (o.pid, o.tid) != (op.pid, op.tid):
            break
        if o.ts < op.ts + op.dur or not _is_attention(o.name):
            continue
        if _outermost_attention(tree, j) is not None:
            continue
        sig = OP_SIGS.get(o.name)
        md = (o.input_dims or [])[sig.attn_mask] if sig and sig.attn_mask is not None else None
        if isinstance(md, list) and len(md) >= 2 and md[-2:] == dims[-2:]:
            return j
        return None
    return None


def _conversions(tree: OpTree, consumer: int, dims: list[int]) -> list[int]:
    """``aten::where`` ops inside the consumer whose first input is the boolean mask (by shape)."""
    op = tree.ops[consumer]
    out = []
    for j in range(consumer + 1, len(tree.ops)):
        o = tree.ops[j]
        if (o.pid, o.tid) != (op.pid, op.tid) or o.ts > op.ts + op.dur:
            break
        if o.name == "aten::where" and _first(o.input_types) == "bool":
            d = (o.input_dims or [None])[0]
            if isinstance(d, list) and d[-2:] == dims[-2:]:
                out.append(j)
    return out


def find(tree: OpTree) -> list[MaskBuild]:
    """Every tril/triu of a 2-D (or more) tensor in the trace, with its context."""
    out = []
    for i, op in enumerate(tree.ops):
        if op.name not in BUILD_OPS:
            continue
        d = (op.input_dims or [None])[0]
        if not (isinstance(d, list) and len(d) >= 2 and all(isinstance(x, int) for x in d)):
            continue
        conc = op.concrete_inputs or []
        mb = MaskBuild(
            tril=i, dims=list(d), diagonal=_int(conc[1]) if len(conc) > 1 else None, tril_kind="tril" in op.name
        )
        if _first(op.input_types) == "bool":
            mb.ones = _ones_before(tree, i, mb.dims)
        mb.inside, mb.innermost = _attention_around(tree, i)
        mb.consumer = mb.inside if mb.inside is not None else _taker(tree, i, mb.dims)
        if mb.consumer is not None:
            mb.convert = [j for j in _conversions(tree, mb.consumer, mb.dims) if j > i]
        out.append(mb)
    return out


def describe(tree: OpTree, att: Attribution | None, mb: MaskBuild) -> dict[str, Any]:
    """The build as plain data for the fingerprint: what built it, where, what took it, and its GPU work."""
    from attnscope.analysis.fingerprint.op_signatures import OP_SIGS

    names = tree.ops
    d: dict[str, Any] = {
        "op": names[mb.tril].name,
        "dims": mb.dims,
        "diagonal": mb.diagonal,
        "mask": mb.kind(),
        "built_by": [names[i].name for i in (mb.ones, mb.tril) if i is not None],
        "built_inside": names[mb.innermost].name if mb.innermost is not None else None,
        "taken_by": names[mb.consumer].name if mb.consumer is not None else None,
        # inside the op: nesting says it; from the caller: the next attention op with an attn_mask of this shape
        "linked_by": None if mb.consumer is None else "nesting" if mb.inside is not None else "shape and order",
        "converted_by": sorted({names[i].name for i in mb.convert}),
        "backend": None,
        "is_causal": None,
    }
    if mb.consumer is not None:
        inner = tree.subtree(mb.consumer)
        d["backend"] = next((SDPA_BACKEND_OPS[names[j].name] for j in inner if names[j].name in SDPA_BACKEND_OPS), None)
        c = names[mb.consumer]
        sig = OP_SIGS.get(c.name)
        conc = c.concrete_inputs or []
        if sig is not None and sig.causal is not None and sig.causal < len(conc):
            d["is_causal"] = {"True": True, "False": False}.get(conc[sig.causal])
    if att is not None and att.gpu:
        mine = {j for i in mb.ops for j in tree.subtree(i)}
        evs = [g for g, li in zip(att.gpu, att.launcher, strict=True) if li in mine]
        d.update(num_kernels=len(evs), kernel_us=round(sum(g.dur for g in evs), 3), kernels=[g.name for g in evs])
    return d
