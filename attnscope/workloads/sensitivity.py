"""Can the error check see each modifier of the case?  Needs torch.

A variant that ignores a modifier (the soft-cap, ALiBi, the mask, the 1/√D scale) must fail.  The error
check makes it fail where the fp64 reference with the modifier and without it differ by well over the
tolerance (:data:`MARGIN` times) on the inputs used; each modifier's difference is recorded.

On random inputs the scaled scores stay within a few units of zero, so a soft-cap of 50 changes the
output by about 1e-3, under every 16-bit tolerance.  For such a modifier a **probe** is drawn: q scaled
by a power of two (exact in every dtype) until the scores pass the cap and the two references differ
by :data:`MARGIN` × the tolerance.  Each variant also runs once on the probe, and applies the modifier
when its output is at least :data:`CLOSER` times nearer the reference with the modifier than the one
without.  The probe is not the measurement's inputs: its large scores cost a 16-bit variant accuracy
that real scores of this size would cost too, but the run's error column stays on the usual inputs.
Where no probe makes a modifier visible, the check is said to be blind to it.

Differences are measured as the variants' errors are (:func:`attnscope.measure.timing.relative_error`):
a variant that ignores the modifier has about this error.  Forward output only.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from attnscope.core.types import Case
from attnscope.variants.base import Inputs

MARGIN = 4.0  # "well over the tolerance": a variant ignoring the modifier misses by at least 4×
Q_SCALES = (2.0, 4.0, 8.0, 16.0, 32.0, 64.0)  # tried in turn for the soft-cap: powers of two, exact in bf16
CLOSER = 2.0  # on the probe, a variant's output must be 2× nearer the reference with the modifier than without


def modifiers(case: Case) -> list[str]:
    """The modifiers this case applies: soft-cap, ALiBi, the mask (when it hides anything), the scale."""
    out = []
    if case.softcap is not None:
        out.append("softcap")
    if case.alibi:
        out.append("alibi")
    if case.mask_spec.kind != "none":
        out.append("mask")
    out.append("scale")
    return out


def too_costly(case: Case) -> str | None:
    """Why the checks are not run: the references they need (one per modifier, and up to two per probe
    scale for a soft-cap) would exceed the reference budget of :mod:`attnscope.workloads.reference`."""
    from attnscope.workloads.reference import MAX_FP64_FLOPS, fp64_flops

    n = 1 + len(modifiers(case)) + (2 * len(Q_SCALES) if case.softcap is not None else 0)
    cap = MAX_FP64_FLOPS["cuda" if case.device.startswith("cuda") else "cpu"]
    work = n * fp64_flops(case)
    if work <= cap:
        return None
    return (
        f"modifier checks not run: {n} fp64 forward references ({work:.2e} FLOP) exceed the {cap:.0e} this tool "
        "spends on a reference; the error column cannot tell whether a variant ignores a modifier"
    )


def without(case: Case, modifier: str) -> Case:
    """The same case with ``modifier`` taken away (the scale is taken away in :func:`reference_without`)."""
    if modifier == "softcap":
        return dataclasses.replace(case, softcap=None)
    if modifier == "alibi":
        return dataclasses.replace(case, alibi=False)
    if modifier == "mask":
        align = case.mask_spec.align
        return dataclasses.replace(case, mask="none" + (f"@{align}" if align else ""))
    return case


def _forward(case: Case, x: Inputs, scale: float) -> Any:
    from attnscope.workloads.reference import reference_chunked

    return reference_chunked(case, x.q, x.k, x.v, scale)["out"]


def reference_without(case: Case, x: Inputs, modifier: str) -> Any:
    """The fp64 forward reference of the case without ``modifier`` (scale: 1 instead of 1/√D)."""
    return _forward(without(case, modifier), x, 1.0 if modifier == "scale" else x.scale)


def difference(a: Any, b: Any) -> float:
    from attnscope.measure.timing import relative_error

    return relative_error(a, b)[0]


def scaled_q(x: Inputs, factor: float) -> Inputs:
    """The inputs with q times ``factor``: forward only (no gradient leaves, no dO)."""
    return Inputs(q=x.q.detach() * factor, k=x.k.detach(), v=x.v.detach(), scale=x.scale)


@dataclasses.dataclass
class Probe:
    """Inputs on which a modifier blind on the usual inputs shows, and the two references there."""

    modifier: str
    inputs: Inputs
    with_it: Any
    without_it: Any
    q_scale: float


def check(case: Case, x: Inputs, tolerance: float) -> tuple[Any, list[dict[str, Any]], list[str], list[Probe]]:
    """(the fp64 forward reference on ``x``, one check per modifier, notes, probes).

    Each check: ``{modifier, difference, tolerance, needed, visible, q_scale}``: ``difference`` is the
    relative error a variant ignoring the modifier would have on ``x``; ``q_scale`` and ``probe_difference``
    where a probe was drawn.  The reference must fit (:func:`attnscope.workloads.reference.too_large`)."""
    need = MARGIN * tolerance
    ref = _forward(case, x, x.scale)
    rows: list[dict[str, Any]] = []
    probes: list[Probe] = []
    for m in modifiers(case):
        row = _row(m, difference(reference_without(case, x, m), ref), tolerance, need)
        if not row["visible"] and m == "softcap":
            probe = _softcap_probe(case, x, need)
            if probe is not None:
                probes.append(probe)
                row.update(q_scale=probe.q_scale, probe_difference=difference(probe.without_it, probe.with_it))
        rows.append(row)
    notes = [blind_line(r) for r in rows if not r["visible"] and "q_scale" not in r]
    return ref, rows, notes, probes


def _softcap_probe(case: Case, x: Inputs, need: float) -> Probe | None:
    for f in Q_SCALES:
        xs = scaled_q(x, f)
        with_it = _forward(case, xs, x.scale)
        without_it = reference_without(case, xs, "softcap")
        if difference(without_it, with_it) >= need:
            return Probe("softcap", xs, with_it, without_it, f)
    return None


def judge(out: Any, probe: Probe) -> dict[str, Any]:
    """Whether a variant's output on the probe applied the modifier: ``CLOSER`` times nearer the reference with it
    (True) or without it (False); None where it is neither, its own rounding at the probe's large scores being as
    large as the modifier's effect (bf16 at q×32: the probe cannot tell, and says so instead of a verdict)."""
    err_with, err_without = difference(out, probe.with_it), difference(out, probe.without_it)
    applied = True if err_with * CLOSER <= err_without else False if err_without * CLOSER <= err_with else None
    return {"error_with": err_with, "error_without": err_without, "applied": applied}


def probe_note(row: dict[str, Any]) -> str:
    j = row.get("variant") or {}
    applied = j.get("applied")
    verdict = (
        "applied it"
        if applied
        else "did NOT apply it"
        if applied is False
        else f"cannot be told apart: neither is {CLOSER:g}× nearer (its own rounding at these scores is as large as "
        "the modifier's effect; no verdict, the usual check stands)"
    )
    nan = float("nan")
    return (
        f"{row['modifier']}: invisible on the usual inputs ({row['difference']:.1e}); on a probe with "
        f"q×{row['q_scale']:g} (scores past the cap: the references differ by {row['probe_difference']:.1e}) "
        f"this variant's output was {j.get('error_with', nan):.1e} from the reference with it and "
        f"{j.get('error_without', nan):.1e} without: it {verdict}"
    )


def _row(modifier: str, diff: float, tolerance: float, need: float) -> dict[str, Any]:
    return {"modifier": modifier, "difference": diff, "tolerance": tolerance, "needed": need, "visible": diff >= need}


def blind_line(row: dict[str, Any]) -> str:
    """One line for a modifier the error check cannot see."""
    return (
        f"the error check is blind to {row['modifier']}: the reference with and without it differs by "
        f"{row['difference']:.1e}, under {MARGIN:g}× the tolerance {row['tolerance']:g}; a variant that ignores it "
        "would pass"
    )
