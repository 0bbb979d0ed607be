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
    appearance.  Empty, after one scan of the names, for a trace with no softmax op."""
    soft = set(tree.indices_named(SOFTMAX_OPS))
    if not soft:
        return ()
    parent, names = tree.parent, tree.op_names
    found: dict[tuple[Any, ...], dict[str, Any]] = {}
    thread: tuple[Any, Any] | None = None
    made: dict[tuple[int, int, int], int] = {}  # the scores' (Sq, Sk, elements) -> the product that made them
    weighed: dict[tuple[int, int, int], tuple[int, int, list[int]]] = {}  # -> (product, softmax, its dims)
    for i in tree.indices_named(SOFTMAX_OPS | PRODUCT_OPS.keys()):
        op = tree.ops[i]
        if (op.pid, op.tid) != thread:  # a thread's ops are together in tree.ops, in time
            thread, made, weighed = (op.pid, op.tid), {}, {}
        p = parent[i]
        if p >= 0 and (names[p] in _HIDES_PRODUCTS or names[p] in SOFTMAX_OPS):
            continue  # inside another product (matmul's bmm), a linear, or a softmax (softmax's _softmax)
        if i in soft:
            x = _dims((op.input_dims or [None])[0])
            if x is not None and _key(x) in made and _over_last_dim(tree, i, len(x)):
                weighed[_key(x)] = (made[_key(x)], i, x)
            continue
        got = _operands(tree, i)
        if got is None:
            continue
        left, right = got
        hit = weighed.pop(_key(left), None)
        if hit is not None and not _in_attention_op(tree, i):
            first, sm, x = hit
            key = (names[first], names[sm], names[i], tuple(x))
            row = found.setdefault(key, {"ops": list(key[:3]), "scores_dims": list(x), "num_chains": 0})
            row["num_chains"] += 1
        made[_out_key(left, right)] = i
    return tuple(found.values())


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
