"""The registry of attention variants, filled by explicit imports (no import magic)."""

from __future__ import annotations

from attnscope.variants.base import Inputs, Prepared, Unsupported, Variant
from attnscope.variants.flex import FLEX, FLEX_COMPILED
from attnscope.variants.naive import NAIVE, NAIVE_INPLACE
from attnscope.variants.sdpa import SDPA_VARIANTS

REGISTRY: dict[str, Variant] = {v.name: v for v in [NAIVE, NAIVE_INPLACE, *SDPA_VARIANTS, FLEX, FLEX_COMPILED]}


def resolve(names: str | list[str] | None) -> list[Variant]:
    """'all', None (the default set) or a comma list; unknown names are an error."""
    if names is None:
        return list(REGISTRY.values())
    if isinstance(names, str):
        names = [n.strip() for n in names.split(",") if n.strip()]
    if names == ["all"]:
        return list(REGISTRY.values())
    unknown = [n for n in names if n not in REGISTRY]
    if unknown:
        raise ValueError(f"unknown variant(s) {', '.join(unknown)}; known: {', '.join(REGISTRY)}")
    return [REGISTRY[n] for n in names]


__all__ = ["REGISTRY", "Inputs", "Prepared", "Unsupported", "Variant", "resolve"]
