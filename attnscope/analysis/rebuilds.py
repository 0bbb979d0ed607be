"""Work redone per new shape in a serving loop's trace, found from its ops.  Pure (a Trace in, plain data out).

A loop written by ``attnscope run --steps`` marks each step ``attnscope.step[KIND] T`` and each per-shape rebuild
``attnscope.rebuild[WHAT]`` (docs/serving.md).  Per step this reads the host time of the rebuild ranges inside it,
and which ops ran on some steps but not on most: a cuDNN graph build, a recompile or a plan shows up there even
where nothing marked it.
"""

from __future__ import annotations

import re
import statistics
from collections import Counter
from typing import Any

from attnscope.trace import Trace

STEP = re.compile(r"^attnscope\.step\[(\w+)\] (\d+)$")
REBUILD = re.compile(r"^attnscope\.rebuild\[(\w+)\]$")


def rebuilds_in_trace(trace: Trace) -> dict[str, Any] | None:
    """Per step of the trace: rebuild ranges (count and host µs by kind) and ops seen on fewer than half of the
    steps (named with the number of steps they ran on); None without step ranges."""
    notes = [a for a in trace.annotations if a.cat == "user_annotation"]
    steps = sorted((a for a in notes if STEP.match(a.name)), key=lambda a: a.ts)
    if not steps:
        return None
    rebuilds = [a for a in notes if REBUILD.match(a.name)]
    by_kind: dict[str, dict[str, float]] = {}
    per_step_us = []
    names_per_step: list[set[str]] = []
    ops = sorted(trace.cpu_ops, key=lambda o: o.ts)
    for s in steps:
        end = s.ts + s.dur
        inside = [r for r in rebuilds if r.tid == s.tid and r.ts >= s.ts and r.ts + r.dur <= end]
        us = 0.0
        for r in inside:
            m = REBUILD.match(r.name)
            assert m is not None
            k = by_kind.setdefault(m[1], {"count": 0, "host_us": 0.0})
            k["count"] += 1
            k["host_us"] += r.dur
            us += r.dur
        per_step_us.append(us)
        names_per_step.append({o.name for o in ops if o.tid == s.tid and o.ts >= s.ts and o.end <= end})
    seen = Counter(n for names in names_per_step for n in names)
    rare = {n: c for n, c in sorted(seen.items()) if c < len(steps) / 2}
    return {
        "steps": len(steps),
        "kinds": sorted({m[1] for a in steps if (m := STEP.match(a.name))}),
        "steps_with_rebuild": sum(1 for u in per_step_us if u > 0),
        "rebuild_host_us_per_step": per_step_us,
        "rebuild_host_us_median": statistics.median(per_step_us),
        "by_kind": by_kind,
        "ops_on_few_steps": rare,
        "method": (
            "record_function ranges: attnscope.rebuild[WHAT] inside attnscope.step[KIND] T, host µs (ts/dur); ops that "
            "ran on fewer than half of the steps, by name"
        ),
    }
