"""Attention written out as ops (matmul, softmax, matmul), and whether a result holds attention at all.  Pure.

An attention that is no attention op (the naive form, transformers' ``attn_implementation="eager"``) shows in a
trace recorded with ``record_shapes`` as a chain on one thread:

1. a batched product of two activations ``A[..., Sq, D] @ B[..., D, Sk]`` (``aten::matmul``, ``bmm``, ``mm``,
   ``baddbmm``): the scores;
2. a softmax over the last dimension of a tensor of the scores' shape (``[..., Sq, Sk]``, the same number of
   elements: a ``bmm`` sees ``[B·H, Sq, Sk]`` where the softmax sees ``[B, H, Sq, Sk]``);
3. a product ``P[..., Sq, Sk] @ V[..., Sk, Dv]`` whose left operand has the softmax's shape: the scores weigh the
   values.

Kineto records no tensor identities, so the link is by shape and order, as for a mask's build (``mask_ops.py``).
A softmax alone is no attention: a classifier's head (``linear`` then ``softmax``) and an MoE router (``linear``,
``softmax``, ``topk``) have no third step, and their products are ``linear``'s (a weight, not an activation: the
ops inside ``aten::linear`` are not read).  A trace without ``record_shapes`` shows no chain.
"""

from __future__ import annotations

import bisect
import math
from typing import Any

from attnscope.analysis.fingerprint.attribution import OpTree
from attnscope.analysis.fingerprint.kernels import attention_op_family

SOFTMAX_OPS = frozenset({"aten::softmax", "aten::_softmax", "aten::_safe_softmax"})
# op -> the positions of its two operands in Input Dims
PRODUCT_OPS: dict[str, tuple[int, int]] = {
    "aten::matmul": (0, 1),
    "aten::bmm": (0, 1),
    "aten::mm": (0, 1),
    "aten::baddbmm": (1, 2),
}
# ops whose inner products multiply by a weight, not by another activation (and an op's own inner products)
_HIDES_PRODUCTS = frozenset({"aten::linear", "aten::addmm", *PRODUCT_OPS})
NEAR = 8  # products looked at on each side of a softmax: the scores' product and the values' are the nearest


def _dims(x: Any) -> list[int] | None:
    return x if isinstance(x, list) and len(x) >= 2 and all(isinstance(d, int) for d in x) else None


def _operands(tree: OpTree, i: int) -> tuple[list[int], list[int]] | None:
    dims = tree.ops[i].input_dims
    a, b = PRODUCT_OPS[tree.ops[i].name]
    if not isinstance(dims, list) or len(dims) <= b:
        return None
    left, right = _dims(dims[a]), _dims(dims[b])
    if left is None or right is None or left[-1] != right[-2]:
        return None
    return left, right


def _out_key(left: list[int], right: list[int]) -> tuple[int, int, int]:
    """(rows, columns, elements) of ``left @ right`` (leading dimensions broadcast: the larger batch)."""
    batch = max(math.prod(left[:-2]), math.prod(right[:-2]))
    return left[-2], right[-1], batch * left[-2] * right[-1]


def _key(x: list[int]) -> tuple[int, int, int]:
    return x[-2], x[-1], math.prod(x)


def _over_last_dim(tree: OpTree, i: int, rank: int) -> bool:
    """Whether a softmax runs over the last dimension (its dim argument, where recorded, is -1 or rank - 1)."""
    concrete = tree.ops[i].concrete_inputs
    if not isinstance(concrete, list) or len(concrete) < 2 or not str(concrete[1]).strip():
        return True  # not recorded: the shapes decide
    try:
        return int(concrete[1]) in (-1, rank - 1)
    except ValueError:
        return True


def _in_attention_op(tree: OpTree, i: int) -> bool:
    return any(attention_op_family(tree.ops[a].name) is not None for a in tree.ancestors(i))


def chains(tree: OpTree) -> tuple[dict[str, Any], ...]:
    """Every matmul → softmax → matmul chain outside attention ops (an SDPA math call holds its own), grouped by
    the scores' dims and the three ops' names: ``{"ops", "scores_dims", "num_chains"}``, in order of first
    appearance.  Each softmax is linked to the nearest products before and after it on its thread (within
    :data:`NEAR` products each way), so only those ops' shapes are read: nothing but a scan of the names for a
    trace with no softmax op, a few ops per softmax for one with."""
    soft = tree.indices_named(SOFTMAX_OPS)
    if not soft:
        return ()
    parent, names = tree.parent, tree.op_names
    prods = tree.indices_named(PRODUCT_OPS.keys())
    found: dict[tuple[Any, ...], dict[str, Any]] = {}
    for i in soft:
        p = parent[i]
        if (p >= 0 and names[p] in SOFTMAX_OPS) or _in_attention_op(tree, i):
            continue  # softmax's own _softmax; a softmax inside an attention op is that call's
        x = _dims((tree.ops[i].input_dims or [None])[0])
        if x is None or not _over_last_dim(tree, i, len(x)):
            continue
        k = bisect.bisect_left(prods, i)
        made = _near(tree, prods[max(0, k - NEAR) : k][::-1], i, _key(x), made=True)
        if made is None:
            continue
        weighed = _near(tree, prods[k : k + NEAR], i, _key(x), made=False)
        if weighed is None:
            continue
        key = (names[made], names[i], names[weighed], tuple(x))
        row = found.setdefault(key, {"ops": list(key[:3]), "scores_dims": list(x), "num_chains": 0})
        row["num_chains"] += 1
    return tuple(found.values())


def _near(tree: OpTree, candidates: list[int], i: int, scores: tuple[int, int, int], *, made: bool) -> int | None:
    """The first product of ``candidates`` (nearest first) on ``i``'s thread, outside another product or a linear,
    that ``made`` the ``scores`` (its output has their key: :func:`_key`) or else weighs by them (its left operand
    has it); None if none does."""
    thread = (tree.ops[i].pid, tree.ops[i].tid)
    parent, names = tree.parent, tree.op_names
    for j in candidates:
        if (tree.ops[j].pid, tree.ops[j].tid) != thread:
            continue
        p = parent[j]
        if p >= 0 and names[p] in _HIDES_PRODUCTS:
            continue  # inside another product (matmul's bmm) or a linear (a weight, not an activation)
        got = _operands(tree, j)
        if got is not None and (_out_key(*got) if made else _key(got[0])) == scores:
            return j
    return None


def holds_attention(r: dict[str, Any]) -> bool:
    """Whether a result holds attention, so that advice naming attention variants fits it: every result that is no
    trace (each row of a run, sweep or model is an attention implementation), or a trace with an attention op
    (``attention_calls``), a kernel or CPU op the category rules class as attention (flash, efficient, cuDNN's
    SDPA, flex, ...), or a matmul → softmax → matmul chain (``eager_attention``, :func:`chains`).  A softmax alone
    is none (a classifier's head, an MoE router), nor is a trace's file name."""
    if r.get("source") != "trace":
        return True
    if r.get("attention_calls") or r.get("eager_attention"):
        return True
    return any(k.get("category") == "attention" for k in r.get("kernels") or [])
