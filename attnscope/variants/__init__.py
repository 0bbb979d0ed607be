"""The registry of attention variants, filled by explicit imports (no import magic)."""

from __future__ import annotations

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


def resolve(names: str | list[str] | None) -> list[Variant]:
    """'all', None (the default set) or a comma list; unknown names are an error."""
    if names is None:  # external libraries join the default set where they import
        return [v for v in REGISTRY.values() if installed(v)]
    if isinstance(names, str):
        names = [n.strip() for n in names.split(",") if n.strip()]
    if names == ["all"]:
        return list(REGISTRY.values())
    unknown = [n for n in names if n not in REGISTRY]
    if unknown:
        raise ValueError(f"unknown variant(s) {', '.join(unknown)}; known: {', '.join(REGISTRY)}")
    return [REGISTRY[n] for n in names]


__all__ = ["REGISTRY", "Inputs", "Prepared", "Unsupported", "Variant", "resolve"]
