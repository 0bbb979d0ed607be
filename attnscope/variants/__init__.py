"""The registry of attention variants, filled by explicit imports (no import magic).

More variants join through :func:`register`, or by naming modules in the environment
variable ``ATTNSCOPE_VARIANT_MODULES`` (comma list): each is imported once and calls
``register``.  The variable reaches worker processes too (spawned workers, Ray actors), so a
variant registered that way exists wherever jobs run.
"""

from __future__ import annotations

import importlib
import os

from attnscope.variants import plugins
from attnscope.variants.base import Inputs, Prepared, Unsupported, Variant
from attnscope.variants.external import FA2, FA3, SAGE, XFORMERS, installed
from attnscope.variants.external_nv import CUDNN_FRONTEND, FLASHINFER_DECODE, FLASHINFER_PREFILL
from attnscope.variants.flex import FLEX, FLEX_COMPILED
from attnscope.variants.naive import NAIVE, NAIVE_INPLACE
from attnscope.variants.sdpa import SDPA_VARIANTS

_EXTERNAL = [FA2, FA3, XFORMERS, FLASHINFER_PREFILL, FLASHINFER_DECODE, CUDNN_FRONTEND, SAGE]
REGISTRY: dict[str, Variant] = {
    v.name: v for v in [NAIVE, NAIVE_INPLACE, *SDPA_VARIANTS, FLEX, FLEX_COMPILED, *_EXTERNAL]
}
# Installed plugins (entry-point group attnscope.variants); one that fails to load is a row that says why.
REGISTRY.update({v.name: v for v in plugins.load(taken=REGISTRY)})
BUILTIN: frozenset[str] = frozenset(REGISTRY)  # built in or installed: the default set draws on these
MODULES_ENV = "ATTNSCOPE_VARIANT_MODULES"
_loaded: set[str] = set()


def register(v: Variant) -> Variant:
    """Add ``v`` to the registry; a name already taken by another variant is an error."""
    old = REGISTRY.get(v.name)
    if old is not None and old is not v:
        raise ValueError(f"variant name {v.name!r} is already registered")
    REGISTRY[v.name] = v
    return v


def load_modules() -> None:
    """Import the modules named in ``ATTNSCOPE_VARIANT_MODULES`` (once each)."""
    for mod in (m.strip() for m in os.environ.get(MODULES_ENV, "").split(",")):
        if mod and mod not in _loaded:
            importlib.import_module(mod)
            _loaded.add(mod)


def get(name: str) -> Variant:
    load_modules()
    try:
        return REGISTRY[name]
    except KeyError:
        raise ValueError(f"unknown variant {name!r}; known: {', '.join(REGISTRY)}") from None


def resolve(names: str | list[str] | None) -> list[Variant]:
    """'all', None (the built-in default set) or a comma list; unknown names are an error."""
    load_modules()
    if names is None:  # external libraries join the default set where they import
        return [v for v in REGISTRY.values() if v.name in BUILTIN and installed(v)]
    if isinstance(names, str):
        names = [n.strip() for n in names.split(",") if n.strip()]
    if names == ["all"]:
        return list(REGISTRY.values())
    unknown = [n for n in names if n not in REGISTRY]
    if unknown:
        raise ValueError(f"unknown variant(s) {', '.join(unknown)}; known: {', '.join(REGISTRY)}")
    return [REGISTRY[n] for n in names]


__all__ = ["REGISTRY", "Inputs", "Prepared", "Unsupported", "Variant", "get", "register", "resolve"]
