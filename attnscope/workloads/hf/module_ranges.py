"""Named profiler ranges around each part of a model, so a trace says which module did what.  Needs torch.

``with annotate(model): ...`` adds, for as long as the block runs:

- a ``record_function`` range around each module's forward (forward pre/post hooks), named by
  :func:`attnscope.core.scopes.scope_name` with the module's role and qualified name;
- in training, a range around the backward of each attention, MLP and layer module: opened by a
  hook on the gradient of the module's output, closed by a hook on the gradient of its input (the
  autograd engine runs a module's backward between those two);
- ranges around the functions transformers' attention modules call (the attention implementation,
  ``repeat_kv``, ``apply_rotary_pos_emb``, the mask builders, the KV cache update), by wrapping them
  where the modeling code looks them up; the originals are put back on exit.

Use it in your own profiling run too: ``attnscope analyze`` then splits the step the same way.
"""

from __future__ import annotations

import functools
import sys
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from typing import Any

from attnscope.core.scopes import scope_name

_MISSING = object()
# Module-level functions of transformers' modeling files, by the role their range gets.
_FUNCTIONS = {
    "eager_attention_forward": "core",
    "repeat_kv": "repeat_kv",
    "apply_rotary_pos_emb": "rotary",
    "create_causal_mask": "mask",
    "create_sliding_window_causal_mask": "mask",
    "create_bidirectional_mask": "mask",
    "create_masks_for_generate": "mask",
    "_prepare_4d_causal_attention_mask": "mask",
    "_prepare_4d_attention_mask": "mask",
    "_prepare_4d_causal_attention_mask_for_sdpa": "mask",
    "_prepare_4d_attention_mask_for_sdpa": "mask",
}
# Methods some models build their mask in (transformers < 4.53 and BERT-like models).
_MASK_METHODS = ("_update_causal_mask", "get_extended_attention_mask")
_INTEGRATIONS = ("sdpa_attention", "flex_attention", "flash_attention", "sdpa_paged", "flash_paged")
BACKWARD_ROLES = frozenset({"attention", "mlp", "layer"})
FUNCTION_BACKWARD_ROLES = frozenset({"core", "repeat_kv", "rotary"})


def module_roles(model: Any) -> list[tuple[Any, str, str]]:
    """(module, role, qualified name) for every module that gets a range."""
    import torch.nn as nn

    layers = _layer_modules(model)
    out: list[tuple[Any, str, str]] = []
    attn_prefixes: list[str] = []
    for name, mod in model.named_modules():
        cls = type(mod).__name__
        inside = any(name.startswith(p + ".") for p in attn_prefixes)
        role = None
        if id(mod) in layers:
            role = "layer"
        elif "Attention" in cls and not inside:
            role = "attention"
            attn_prefixes.append(name)
        elif inside and (isinstance(mod, nn.Linear) or cls == "Conv1D"):
            role = "proj"
        elif inside:
            role = None
        elif "Rotary" in cls:
            role = "rotary_emb"
        elif any(k in cls for k in ("MLP", "Intermediate", "FeedForward")) or (
            cls.endswith("Output") and any(isinstance(c, nn.Linear) for c in mod.children())
        ):
            role = "mlp"
        elif "Norm" in cls:
            role = "norm"
        elif isinstance(mod, nn.Embedding) or cls.endswith("Embeddings"):
            role = "embedding"
        elif name.endswith("lm_head") or "LMHead" in cls or "PredictionHead" in cls:
            role = "lm_head"
        if role is not None:
            out.append((mod, role, name))
    return out


def _layer_modules(model: Any) -> set[int]:
    """The blocks: children of the longest ModuleList whose children all share one class."""
    import torch.nn as nn

    best: list[Any] = []
    for mod in model.modules():
        if isinstance(mod, nn.ModuleList) and len(mod) > len(best):
            kids = list(mod)
            if len({type(k) for k in kids}) == 1 and "Attention" not in type(kids[0]).__name__:
                best = kids
    return {id(m) for m in best}


def _first_tensor(args: Any, kwargs: dict[str, Any] | None = None) -> Any:
    import torch

    seq = list(args) if isinstance(args, (tuple, list)) else [args]
    if kwargs:
        seq += [kwargs.get("hidden_states"), *kwargs.values()]
    for x in seq:
        if isinstance(x, torch.Tensor) and x.is_floating_point():
            return x
    return None


class _Range:
    """One open record_function range, entered and exited from different hooks."""

    def __init__(self, name: str) -> None:
        from torch.autograd.profiler import record_function

        self.rf: Any = record_function(name)
        self.open = False
        self.done = False  # a range opens once: a late gradient never reopens it

    def enter(self, *_: Any) -> None:
        if not self.open and not self.done:
            self.rf.__enter__()
            self.open = True

    def exit(self, *_: Any) -> None:
        if self.open:
            self.open = False
            self.done = True
            self.rf.__exit__(None, None, None)


def _hook_module(mod: Any, role: str, path: str) -> list[Any]:
    fwd_stack: list[_Range] = []
    pending: list[Any] = []  # the input tensor of each forward call in flight

    def pre(_m: Any, args: Any, kwargs: dict[str, Any]) -> None:
        r = _Range(scope_name(role, path))
        r.enter()
        fwd_stack.append(r)
        pending.append(_first_tensor(args, kwargs) if role in BACKWARD_ROLES else None)

    def post(_m: Any, _args: Any, _kwargs: Any, output: Any) -> None:
        if fwd_stack:
            fwd_stack.pop().exit()
        inp = pending.pop() if pending else None
        out = _first_tensor(output)
        if inp is None or out is None:
            return
        backward_range(scope_name(role, path, backward=True), inp, out)

    return [
        mod.register_forward_pre_hook(pre, with_kwargs=True),
        mod.register_forward_hook(post, with_kwargs=True, always_call=True),
    ]


def _tensors(x: Any) -> list[Any]:
    import torch

    if isinstance(x, torch.Tensor):
        return [x]
    if isinstance(x, (tuple, list)):
        return [t for v in x for t in _tensors(v)]
    if isinstance(x, dict):
        return [t for v in x.values() for t in _tensors(v)]
    return []


def backward_range(name: str, inputs: Any, outputs: Any) -> None:
    """A range over the backward of what turned ``inputs`` into ``outputs``: opened by the first
    gradient of an output, closed once every input that needs a gradient has received it."""
    import torch

    if not torch.is_grad_enabled():
        return
    ins = [t for t in _tensors(inputs) if t.requires_grad]
    outs = [t for t in _tensors(outputs) if t.requires_grad and t.grad_fn is not None]
    if not ins or not outs:
        return
    r = _Range(name)
    left = [len(ins)]

    def close(_g: Any) -> None:
        left[0] -= 1
        if left[0] == 0:
            r.exit()

    for t in outs:
        t.register_hook(r.enter)
    for t in ins:
        t.register_hook(close)


def wrap(fn: Callable[..., Any], name: str, backward_name: str | None = None) -> Callable[..., Any]:
    @functools.wraps(fn)
    def scoped(*args: Any, **kwargs: Any) -> Any:
        from torch.autograd.profiler import record_function

        with record_function(name):
            out = fn(*args, **kwargs)
        if backward_name is not None:
            backward_range(backward_name, (args, kwargs), out)
        return out

    scoped.__attnscope_wrapped__ = fn  # type: ignore[attr-defined]
    return scoped


def _patch(stack: ExitStack, owner: Any, attr: str, role: str, path: str = "") -> None:
    """Replace owner.attr by its wrapped self until the stack closes (restored exactly, even if absent before)."""
    before = owner.__dict__.get(attr, _MISSING) if hasattr(owner, "__dict__") else _MISSING
    current = getattr(owner, attr, None)
    if current is None or hasattr(current, "__attnscope_wrapped__"):
        return
    bwd = scope_name(role, path or attr, backward=True) if role in FUNCTION_BACKWARD_ROLES else None
    setattr(owner, attr, wrap(current, scope_name(role, path or attr), bwd))

    def restore() -> None:
        if before is _MISSING:
            try:
                delattr(owner, attr)
            except AttributeError:
                pass
        else:
            setattr(owner, attr, before)

    stack.callback(restore)


def _patch_functions(stack: ExitStack, model: Any, impl: str | None) -> None:
    modules = {type(m).__module__ for m in model.modules()}
    for modname in modules:
        mod = sys.modules.get(modname)
        if mod is None or not modname.startswith("transformers."):
            continue
        for fname, role in _FUNCTIONS.items():
            if fname in vars(mod):
                _patch(stack, mod, fname, role)
    for sub in _INTEGRATIONS:
        mod = sys.modules.get(f"transformers.integrations.{sub}")
        if mod is not None and "repeat_kv" in vars(mod):
            _patch(stack, mod, "repeat_kv", "repeat_kv")
    for m in model.modules():
        for meth in _MASK_METHODS:
            if callable(getattr(type(m), meth, None)) and meth in vars(type(m)):
                _patch(stack, m, meth, "mask")
    _patch_interface(stack, impl)
    _patch_caches(stack)


def _patch_interface(stack: ExitStack, impl: str | None) -> None:
    """Wrap the registered attention function of ``impl`` (transformers >= 4.48's AttentionInterface)."""
    mu = sys.modules.get("transformers.modeling_utils")
    fns = getattr(mu, "ALL_ATTENTION_FUNCTIONS", None) if mu else None
    mapping = getattr(fns, "_global_mapping", None)
    if not impl or not isinstance(mapping, dict) or impl not in mapping:
        return
    before = mapping[impl]
    mapping[impl] = wrap(before, scope_name("core", impl), scope_name("core", impl, backward=True))
    stack.callback(mapping.__setitem__, impl, before)


def _patch_caches(stack: ExitStack) -> None:
    cu = sys.modules.get("transformers.cache_utils")
    for cls_name in ("DynamicCache", "StaticCache", "HybridCache", "SlidingWindowCache"):
        cls = getattr(cu, cls_name, None) if cu else None
        if cls is not None and callable(getattr(cls, "update", None)):
            _patch(stack, cls, "update", "kv_cache", cls_name)


@contextmanager
def annotate(model: Any, *, attn_implementation: str | None = None, functions: bool = True) -> Iterator[None]:
    """Ranges around the model's parts while the block runs; everything is put back on exit."""
    impl = attn_implementation or getattr(getattr(model, "config", None), "_attn_implementation", None)
    with ExitStack() as stack:
        for mod, role, path in module_roles(model):
            for h in _hook_module(mod, role, path):
                stack.callback(h.remove)
        if functions:
            _patch_functions(stack, model, impl)
        yield


def step_range(role: str, path: str = "") -> Any:
    """A range of the step itself: step, loss, backward, optimizer."""
    from torch.autograd.profiler import record_function

    return record_function(scope_name(role, path))
