"""The names of the ranges that attribute a model's time to its parts.  Pure, no torch.

``attnscope model`` (and :func:`attnscope.workloads.hf.module_ranges.annotate` in anyone's own profiling
run) wraps each part of the model in a ``record_function`` range named
``attnscope.model:<role>:<path>``, with `` [backward]`` appended for the range that covers the
part's backward pass.  Kineto writes those ranges as ``user_annotation`` events; the analysis
reads them back from any trace.

Roles:

- modules, from forward pre/post hooks (and, in training, hooks on the gradients of their
  output and input): ``layer`` (one decoder/encoder block), ``attention`` (the attention module),
  ``proj`` (a linear layer inside it), ``mlp``, ``norm``, ``embedding``, ``lm_head``,
  ``rotary_emb`` (the model-level module that computes cos/sin);
- functions the attention module calls, wrapped while measuring: ``core`` (the attention
  implementation itself: eager_attention_forward, sdpa_attention_forward, ...), ``repeat_kv``,
  ``rotary`` (apply_rotary_pos_emb), ``mask`` (the mask builders), ``kv_cache`` (the cache update);
- the step: ``step``, ``loss``, ``backward``, ``optimizer``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

PREFIX = "attnscope.model:"
BACKWARD_SUFFIX = " [backward]"
ROLES = (
    "step",
    "layer",
    "attention",
    "proj",
    "mlp",
    "norm",
    "embedding",
    "lm_head",
    "rotary_emb",
    "core",
    "repeat_kv",
    "rotary",
    "mask",
    "kv_cache",
    "loss",
    "backward",
    "optimizer",
)

# The parts attention's time splits into, and the parts of the rest, in display order.
ATTENTION_PARTS = ("kernel", "projections", "mask", "repeat_kv", "upcasts", "copies", "rotary", "kv_cache", "other")
REST_PARTS = ("mlp", "norm", "embedding", "lm_head", "loss", "optimizer", "backward_other", "other")
# Attention parts that are work around the attention computation (not the kernel, not the projections).
AROUND_PARTS = ("mask", "repeat_kv", "upcasts", "copies", "rotary", "kv_cache", "other")

# Autograd nodes of a backward pass inside the attention module's backward range, by what they are the
# backward of.  The attention computation: fused SDPA/flex/flash backward nodes, and eager's softmax and
# batched matmuls.  The projections: the matmuls of nn.Linear on 2-D/3-D inputs.
_BWD_KERNEL = re.compile(r"Attention|ScaledDotProduct|Sdpa|Flex|Flash|Softmax|Bmm")
_BWD_PROJ = re.compile(r"^(Mm|Addmm|Linear)Backward")
_BWD_CAST = re.compile(r"^ToCopyBackward")
_BWD_ROTARY = re.compile(r"^(Slice|Neg|Cat)Backward")  # rotate_half: two slices, a negation, a cat
_BWD_WEIGHTS = re.compile(r"AccumulateGrad")  # the projections' weight gradients land here
AUTOGRAD_NODE = "autograd::engine::evaluate_function: "


def scope_name(role: str, path: str = "", backward: bool = False) -> str:
    return f"{PREFIX}{role}:{path}" + (BACKWARD_SUFFIX if backward else "")


@dataclass(frozen=True, slots=True)
class Scope:
    role: str
    path: str
    backward: bool


def parse_scope(name: str) -> Scope | None:
    """The scope a range name stands for, or None for any other range."""
    if not name.startswith(PREFIX):
        return None
    rest = name[len(PREFIX) :]
    backward = rest.endswith(BACKWARD_SUFFIX)
    if backward:
        rest = rest[: -len(BACKWARD_SUFFIX)]
    role, _, path = rest.partition(":")
    if role not in ROLES:
        return None
    return Scope(role, path, backward)


MODULE_PREFIX = "nn.Module: "
_LAYER_CLASS = re.compile(r"(DecoderLayer|EncoderLayer|Layer|Block)$")


def module_scope(name: str) -> Scope | None:
    """The scope of a with_stack module range ("nn.Module: LlamaAttention_0"), from its class name alone.

    These ranges cover forward passes only; linear layers count as projections inside attention.
    """
    if not name.startswith(MODULE_PREFIX):
        return None
    path = name[len(MODULE_PREFIX) :]
    cls = path.rpartition("_")[0] or path
    role = None
    if "Attention" in cls:
        role = "attention"
    elif cls in ("Linear", "Conv1D"):
        role = "proj"
    elif "Rotary" in cls:
        role = "rotary_emb"
    elif any(k in cls for k in ("MLP", "Intermediate", "FeedForward")):
        role = "mlp"
    elif "Norm" in cls:
        role = "norm"
    elif "Embedding" in cls:
        role = "embedding"
    elif ("LMHead" in cls or "PredictionHead" in cls) and not cls.endswith("Model"):  # GPT2LMHeadModel: the model
        role = "lm_head"
    elif _LAYER_CLASS.search(cls):
        role = "layer"
    return Scope(role, path, False) if role else None


def backward_node_part(node: str) -> str:
    """The attention part of a backward autograd node (the name after 'evaluate_function: ')."""
    if _BWD_KERNEL.search(node):
        return "kernel"
    if _BWD_PROJ.search(node):
        return "projections"
    if _BWD_CAST.search(node):
        return "upcasts"
    if _BWD_ROTARY.search(node):
        return "rotary"
    if _BWD_WEIGHTS.search(node):
        return "projections"
    return "other"


def attention_part(roles: dict[str, Scope], node: str | None, copy_kind: str | None, have_core: bool) -> str:
    """Which part of attention an op inside the attention scopes belongs to.

    ``roles``: the innermost scope of each role around the op; ``node``: the autograd node the op
    runs under in a backward pass; ``copy_kind``: "upcast" or "copy" when the op itself is one;
    ``have_core``: whether the trace carries ``core`` scopes at all (without them the attention
    computation is everything in the module that no other part claims).
    """
    for role in ("mask", "repeat_kv", "rotary", "kv_cache"):
        if role in roles:
            return role
    if "rotary_emb" in roles:
        return "rotary"
    if "proj" in roles:
        return "projections"
    if copy_kind == "upcast":
        return "upcasts"
    if copy_kind == "copy":
        return "copies"
    if node is not None and _BWD_CAST.search(node):
        return "upcasts"
    if "core" in roles:
        return "kernel"
    if node is not None:
        return backward_node_part(node)
    return "other" if have_core else "kernel"


def rest_part(roles: dict[str, Scope], backward: bool) -> str:
    """Which part of the rest of the step an op outside attention belongs to."""
    if "optimizer" in roles:
        return "optimizer"
    if "loss" in roles:
        return "loss"
    for role in ("mlp", "norm", "embedding", "lm_head"):
        if role in roles:
            return role
    return "backward_other" if backward else "other"
