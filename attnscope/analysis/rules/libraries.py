"""Whether a library outside torch imports where a result was measured, from what its document holds.  Pure.

Two sources, in this order:

- the environment the row was measured in (``env.libraries``, recorded by the run: the version where the module
  imports, None where it does not);
- a row of the same case that needed the library: ok (it ran there), or skipped because its import failed.

A trace read by ``analyze`` carries neither: whether the library imports on the machine that wrote it is not known,
and advice says so rather than naming it as if it were there.
"""

from __future__ import annotations

from typing import Any

from attnscope.core.libraries import Library


def importable(lib: Library, r: dict[str, Any], peers: list[dict[str, Any]] | None = None) -> tuple[bool | None, str]:
    """(True where ``lib`` is known to import where ``r`` was measured, False where it is known not to, None where
    the document does not say; how that is known, in words)."""
    env = r.get("env")
    libs = env.get("libraries") if isinstance(env, dict) else None
    if isinstance(libs, dict) and lib.module in libs:
        version = libs[lib.module]
        if version:
            return True, f"{lib.name} {version} imports where this ran (the run's environment)"
        return False, f"{lib.name} does not import where this ran (the run's environment)"
    for p in peers or []:
        if p.get("variant") not in lib.variants:
            continue
        if p.get("status") == "ok":
            return True, f"{p['variant']} ran on this case"
        if f"import {lib.module}" in str(p.get("reason") or ""):
            return False, f"{p['variant']} was skipped on this case: {lib.module} does not import where this ran"
    return None, f"the document does not say whether {lib.name} imports where this ran"


__all__ = ["importable"]
