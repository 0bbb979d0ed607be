"""Variants from other packages, through the entry-point group ``attnscope.variants``.

A package declares, in its pyproject.toml::

    [project.entry-points."attnscope.variants"]
    my_attention = "my_package.attn:VARIANTS"

and the object named there is a :class:`~attnscope.variants.base.Variant`, a list of them, or a callable
with no argument returning either.  A plugin never stops a run: one that fails to import, returns
something else, or raises in its ``check`` is a row skipped with the reason; one that raises while
preparing or running is an error row (the runner isolates every variant).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from attnscope.core.types import Case
from attnscope.variants.base import Inputs, Prepared, Unsupported, Variant

GROUP = "attnscope.variants"


def _one_line(e: BaseException) -> str:
    return f"{type(e).__name__}: {' '.join(str(e).split())[:300]}"


def _broken(name: str, reason: str) -> Variant:
    def prepare(case: Case, x: Inputs) -> Prepared:
        raise Unsupported(reason)

    return Variant(
        name=name, family="plugin", description=f"plugin that could not be loaded ({GROUP})", check=lambda c: reason,
        prepare=prepare,
    )  # fmt: skip


def _guarded(v: Variant, source: str) -> Variant:
    """The plugin's variant with its check made safe: a raising check is a skip reason, not a crash."""
    inner = v.check

    def check(case: Case) -> str | None:
        try:
            return inner(case)
        except Exception as e:  # noqa: BLE001 - a plugin's bug must not stop the run
            return f"plugin {source}: its check raised {_one_line(e)}"

    from dataclasses import replace

    return replace(v, check=check, description=f"{v.description} (plugin {source})")


def _variants_of(obj: Any) -> list[Variant]:
    if callable(obj) and not isinstance(obj, Variant):
        obj = obj()
    items = [obj] if isinstance(obj, Variant) else list(obj) if isinstance(obj, Iterable) else [obj]
    bad = [type(i).__name__ for i in items if not isinstance(i, Variant)]
    if bad:
        raise TypeError(f"expected attnscope Variant objects, got {', '.join(bad)}")
    return items


def load(entry_points: Iterable[Any] | None = None, taken: Iterable[str] = ()) -> list[Variant]:
    """Every plugin variant, guarded; a plugin that fails to load is a variant whose check says why."""
    if entry_points is None:
        from importlib import metadata  # ~7 ms of imports: only when plugins are looked up

        entry_points = metadata.entry_points(group=GROUP)
    eps = entry_points
    out: list[Variant] = []
    names = set(taken)
    for ep in eps:
        source = f"{ep.name} = {ep.value}"
        try:
            found = _variants_of(ep.load())
        except Exception as e:  # noqa: BLE001 - a plugin that fails to import is a row, never a crash
            out.append(_broken(ep.name, f"plugin {source} failed to load: {_one_line(e)}"))
            continue
        for v in found:
            if v.name in names:
                out.append(_broken(f"{ep.name}:{v.name}", f"plugin {source}: variant name {v.name!r} is taken"))
                continue
            names.add(v.name)
            out.append(_guarded(v, source))
    return out
