"""A case with the user's own flex functions (``--mask-mod``, ``--score-mod``): checked, then measured beside
the built-in they equal.  Needs torch.

The user's mask is compared entry by entry with the built-in masks on the case's shape
(:mod:`attnscope.analysis.mask_match`); the case's ``mask`` becomes the built-in it equals, so the FLOP count,
the fp64 reference and every other variant use the built-in, and the ``flex_user`` variants run the user's
function in its place.  A mask no built-in equals is refused (exit 2): its FLOPs and reference would have no
closed form to stand on.  A score_mod must compute what the case's flags say (``--softcap``, ``--alibi`` or
nothing): the reference applies the flags.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

from attnscope.core.arguments import UsageError
from attnscope.core.types import Case

USER_VARIANTS = ("flex_user", "flex_compiled_user")


def _absolute(source: str | None) -> str | None:
    """``file.py:fn`` with the file's absolute path: a worker process in another directory finds it."""
    if source is None:
        return None
    path, sep, fn = source.rpartition(":")
    return f"{Path(path).resolve()}{sep}{fn}" if sep and path else source


def check_user_mods(case: Case, mask_given: bool | None = None) -> tuple[Case, dict[str, Any] | None]:
    """(the case to measure, the document's entries: ``mask_mod`` and/or ``score_mod``) for a case with the
    user's functions; ``(case, None)`` for a case without.  One-line ValueError for a missing file or function, a wrong
    signature, a function that raises on the case's shape, or a mask no built-in equals.
    ``mask_given``: the case's mask was stated (``--mask``), so the user's must equal it (default: whether
    ``case.mask`` is set)."""
    from attnscope.variants import user_code

    if case.mask_mod is None and case.score_mod is None:
        return case, None
    case = dataclasses.replace(case, mask_mod=_absolute(case.mask_mod), score_mod=_absolute(case.score_mod))
    info: dict[str, Any] | None = None
    if case.mask_mod is not None:
        found, why = user_code.check_mask_mod(case)
        name = Path(case.mask_mod).name
        if found.equivalent_builtin is None:
            tried = ", ".join(f"{m} at (q={d[0]}, k={d[1]})" for m, d in found.tried.items() if d is not None)
            raise UsageError(
                f"mask_mod {name}: no built-in mask equals it on Sq={case.seq_q} Sk={case.num_seq_kv} "
                + (f"({why})" if why else f"(first entries that differ: {tried})")
                + "; attnscope measures a user mask beside the built-in that keeps the same scores",
                fields=("mask_mod",),
            )
        stated = case.mask is not None if mask_given is None else mask_given
        asked = case.mask_spec.canonical  # --causal / --no-causal set no mask string: causal or none
        if stated and asked != found.equivalent_builtin:
            raise UsageError(
                f"mask_mod {name} equals {found.equivalent_builtin}, not {asked}, given as mask: "
                "leave mask out, or give it as what the function computes",
                fields=("mask_mod", "mask"),
            )
        case = dataclasses.replace(case, mask=found.equivalent_builtin)
        info = {}
        info["mask_mod"] = {  # the dict is built in two steps: a score_mod's entry joins it below
            "source": case.mask_mod,
            "equivalent_builtin": found.equivalent_builtin,
            "checked_entries": found.checked_entries,
            "checked_at": "batch element 0, head 0 and the last batch element, last head, every (query, key)",
            "tried": {m: list(d) if d else None for m, d in found.tried.items()},
        }
    if case.score_mod is not None:
        differs = user_code.check_score_mod(case)
        if differs is not None:
            raise UsageError(
                f"score_mod {Path(case.score_mod).name} does not compute the case's score modification: {differs}; "
                "give what it computes as softcap C and alibi, which the reference and the other variants apply",
                fields=("score_mod", "softcap", "alibi"),
            )
        flags = " ".join(
            ([f"--softcap {case.softcap:g}"] if case.softcap is not None else []) + ["--alibi"] * case.alibi
        )
        info = (info or {}) | {"score_mod": {"source": case.score_mod, "equivalent_flags": flags or "none"}}
    return case, info


def with_user_variants(case: Case, variants: str | list[str] | None) -> str | list[str] | None:
    """The run's variants with the user's flex variants added where none is named: to the device's default set
    (its opt-in variants left out) or to the variants given, flex_user always, flex_compiled_user where
    flex_compiled is among them (compiling is the slow part of a CPU run)."""
    from attnscope.variants import resolve

    if case.mask_mod is None and case.score_mod is None:
        return variants
    if variants is None:
        dev = case.device.split(":", 1)[0]
        names = [v.name for v in resolve(None) if dev not in v.opt_in_on]
    else:
        names = [v.name for v in resolve(variants)]
    if any(n in USER_VARIANTS for n in names):
        return names
    return names + [n for n in USER_VARIANTS if n == "flex_user" or "flex_compiled" in names]
