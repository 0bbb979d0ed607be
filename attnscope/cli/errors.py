"""The command line's words for the library's errors: each value an error names, said as the flag that sets it.

Below the command line an error names a value as the library calls it (``mask 'sliding:x': the window must be an
integer``, ``budget_s: must be > 0``) and lists those names in :attr:`attnscope.core.arguments.UsageError.fields`.
Here, in the one place that prints ``attnscope: error: …``, each listed name becomes its flag (``--mask
'sliding:x': …``, ``--budget: …``), so the line names what the user typed.  Quoted text (a value as given, e.g.
``'sliding:mask'``) is left as it is, and so is a name that is part of a path or a file name (``out/x.jsonl``,
``mask.py``).
"""

from __future__ import annotations

import re
from functools import cache

# Values that are no field of the case: the library's parameter → the flag that sets it.
PARAMETERS = {
    "budget_s": "--budget",
    "timing_budget_s": "--budget",
    "threshold_pct": "--threshold",
    "steps": "--steps",
    "bucket": "--bucket",
    "workers": "--workers",
    "jobs": "--jobs",
    "timeout_s": "--timeout",
    "time_limit_s": "--time-limit",
    "executor": "--executor",
    "variants": "--variants",
    "devices": "--devices",
    "budget_tokens": "--budget-tokens",
    "layers": "--layers",
    "trace_dir": "--trace-dir",
    "size": "--size",
    "case.device": "--device",
    "out": "--out",
    "resume": "--resume",
    "json": "--json",
    "html": "--html",
    "config": "--config",
    "modes": "--mode",
}
# a value as repr() gives it: a quote that no letter precedes (the apostrophe of "sequence's" opens nothing)
_QUOTED = re.compile(r"""((?<!\w)'(?:[^'\\]|\\.)*'|(?<!\w)"(?:[^"\\]|\\.)*")""")


@cache
def flags() -> dict[str, str]:
    """Every name an error may give a value → its flag: the case's fields by name and by axis (``seq_q`` and
    ``seq`` → ``--seq``), then :data:`PARAMETERS`."""
    from attnscope.core.case import FIELDS  # here: the table is read only when an error is printed

    out = {f.name: f.flag for f in FIELDS} | {f.dest: f.flag for f in FIELDS}
    return out | PARAMETERS


def as_flags(e: BaseException) -> str:
    """The error's message with each value it lists in ``fields`` said as its flag (outside quoted text)."""
    text = str(e)
    names = [n for n in getattr(e, "fields", ()) if n in flags()]
    if not names:
        return text
    pattern = re.compile(
        r"(?<![\w.\-/])(" + "|".join(re.escape(n) for n in sorted(names, key=len, reverse=True)) + r")(?![\w\-./(])"
    )
    parts = _QUOTED.split(text)
    for i in range(0, len(parts), 2):  # the even parts lie outside quotes
        parts[i] = pattern.sub(lambda m: flags()[m.group(1)], parts[i])
    return "".join(parts)
