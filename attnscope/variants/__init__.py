"""The registry of attention variants, filled by explicit imports (no import magic).

More variants join through :func:`register`, or by naming modules in the environment
variable ``ATTNSCOPE_VARIANT_MODULES`` (comma list): each is imported once and calls
``register``.  The variable reaches worker processes too (spawned workers, Ray actors), so a
variant registered that way exists wherever jobs run.
"""

from __future__ import annotations

import importlib
import os
from collections.abc import Iterator
from typing import Any

from attnscope.core.arguments import check_variants_once
from attnscope.variants import builtin, plugins
from attnscope.variants.base import Inputs, Prepared, Unsupported, Variant
from attnscope.variants.external import installed


class _Registry(dict[str, Variant]):
    """Name → variant: the built-ins at import, the installed plugins (entry-point group
    ``attnscope.variants``) joined on first use.  A plugin's code runs only when variants are
    looked up, never because a module of the package was imported (``attnscope analyze`` reads
    built-in declarations alone: :mod:`attnscope.variants.builtin`)."""

    _plugins_loaded = False
    default_names: frozenset[str] = frozenset()  # built in or installed: the default set draws on these

    def load_plugins(self) -> None:
        if self._plugins_loaded:
            return
        self._plugins_loaded = True
        # one that fails to load is a row that says why
        super().update({v.name: v for v in plugins.load(taken=dict.keys(self))})
        self.default_names = frozenset(dict.keys(self))

    def __getitem__(self, name: str) -> Variant:
        self.load_plugins()
        return super().__getitem__(name)

    def get(self, name: str, default: Any = None) -> Any:  # type: ignore[override]
        self.load_plugins()
        return super().get(name, default)

    def __contains__(self, name: object) -> bool:
        self.load_plugins()
        return super().__contains__(name)

    def __iter__(self) -> Iterator[str]:
        self.load_plugins()
        return super().__iter__()

    def __len__(self) -> int:
        self.load_plugins()
        return super().__len__()

    def keys(self) -> Any:
        self.load_plugins()
        return super().keys()

    def values(self) -> Any:
        self.load_plugins()
        return super().values()

    def items(self) -> Any:
        self.load_plugins()
        return super().items()


REGISTRY = _Registry(builtin.BY_NAME)
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
            try:
                importlib.import_module(mod)
            except Exception as e:
                from attnscope.core.arguments import UsageError

                raise UsageError(f"{MODULES_ENV}: module {mod!r} cannot be imported ({type(e).__name__}: {e})") from e
            _loaded.add(mod)


def get(name: str) -> Variant:
    load_modules()
    try:
        return REGISTRY[name]
    except KeyError:
        raise ValueError(f"unknown variant {name!r}; known: {', '.join(REGISTRY)}") from None


def resolve(names: str | list[str] | None, serving: bool | None = None) -> list[Variant]:
    """'all', None (the built-in default set) or a comma list; unknown names are an error.  ``serving``: the default
    set of a serving case (True: the variants that read a paged or ragged cache) or of a dense one (False)."""
    load_modules()
    if names is None:  # external libraries join the default set where they import
        return [
            v
            for v in REGISTRY.values()
            if v.name in REGISTRY.default_names
            and v.in_default_set
            and installed(v)
            and (serving is None or v.serving == serving)
        ]
    if isinstance(names, str):
        names = [n.strip() for n in names.split(",") if n.strip()]
    check_variants_once(list(names))  # a list from Python too: a variant named twice is refused, not run twice
    if names == ["all"]:
        return list(REGISTRY.values())
    unknown = [n for n in names if n not in REGISTRY]
    if unknown:
        raise ValueError(f"unknown variant(s) {', '.join(unknown)}; known: {', '.join(REGISTRY)}")
    return [REGISTRY[n] for n in names]


__all__ = ["REGISTRY", "Inputs", "Prepared", "Unsupported", "Variant", "get", "register", "resolve"]
