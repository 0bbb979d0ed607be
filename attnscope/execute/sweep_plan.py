"""A sweep's grid and plan: the default variants for the cases' devices, and the jobs of cases × variants minus what
the store already holds.  The measuring is the one campaign loop (attnscope.api.campaign)."""

from __future__ import annotations

from attnscope.core.types import Case
from attnscope.execute.job import Options, trace_file_name
from attnscope.execute.worker import AttentionJob


def default_variants(devices: list[str]) -> tuple[list[str], dict[str, str]]:
    """The default set for a sweep whose cases are on ``devices``: the built-ins that can run there, and those
    left out with why (a variant without kernels for the device, or one that is opt-in there, such as compiled
    flex on a CPU: minutes of compiling per case).  Every one of them would be a ``skipped`` row in every case;
    ``--variants`` (or ``variants=``) naming one still measures it."""
    from attnscope.variants import resolve
    from attnscope.variants.base import device_kind

    kinds = {device_kind(d) for d in devices}
    keep: list[str] = []
    left: dict[str, str] = {}
    for v in resolve(None):
        if kinds and all(k not in v.devices for k in kinds):
            left[v.name] = f"no {'/'.join(sorted(kinds))} kernels"
        elif kinds and all(k in v.opt_in_on for k in kinds):
            left[v.name] = f"opt-in on {'/'.join(sorted(kinds))}; `attnscope variants` says why"
        else:
            keep.append(v.name)
    return keep, left


def left_out_line(left: dict[str, str], where: str) -> str:
    """The one line that says which default variants a sweep leaves out, and how to measure them anyway."""
    return (
        f"left out of the default set on {where} (each would be a skipped row in every case): "
        + "; ".join(f"{n} ({why})" for n, why in left.items())
        + ". Name them with --variants to measure them anyway"
    )


def plan(
    cases: list[Case], variants: list[str], options: Options, *, explicit: bool, done: set[tuple[str, str, str]]
) -> list[AttentionJob]:
    """The jobs still to measure, grouped by case (a worker builds a case's inputs once).  From the default set
    (not ``explicit``), a serving case gets the serving variants and a dense case the others."""
    from attnscope.variants import REGISTRY

    jobs = []
    for c in cases:
        for v in variants:
            if not explicit and v in REGISTRY and REGISTRY[v].serving != c.is_serving:
                continue
            j = AttentionJob(c, v, options, explicit=explicit, trace_name=trace_file_name(v, c))
            if j.key not in done:
                jobs.append(j)
    return jobs
