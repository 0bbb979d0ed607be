"""`attnscope variants` as a function: every registered variant and whether it can run a case here."""

from __future__ import annotations

from typing import Any

from attnscope.core.types import Case


def variant_support(case: Case) -> list[dict[str, Any]]:
    """One row per registered variant, in registry order: ``variant``, ``runs_here`` ("yes", "no" or "opt-in"),
    ``description`` and ``reason`` (why not, or why opt-in; "" when it runs).  A variant that is not compiled is
    prepared on the case's inputs, so a refusal it only finds then is reported too."""
    from attnscope.variants import REGISTRY, Unsupported, load_modules
    from attnscope.workloads.attention import make_inputs

    load_modules()  # the variants of ATTNSCOPE_VARIANT_MODULES are listed too, as run and sweep find them
    x = make_inputs(case, 0)
    dev = "cuda" if case.device.startswith("cuda") else "cpu"
    out = []
    for v in REGISTRY.values():
        reason = v.refusal(case)  # its own check, and what it declares (modes, devices, a serving cache or not)
        state = "no" if reason else "yes"
        if not reason and dev in v.opt_in_on:
            state, reason = "opt-in", v.opt_in_reason
        elif not reason and not v.compiles:
            try:
                v.prepare(case, x)
            except Unsupported as e:
                state, reason = "no", str(e)
        out.append({"variant": v.name, "runs_here": state, "description": v.description, "reason": reason or ""})
    return out
