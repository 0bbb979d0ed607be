"""Is the host busy enough to distort timings?  Three signs, each cheap and each stated in ``why``:

- **load**: the 1-minute load average, read before the measuring starts, above
  :data:`LOAD_PER_CORE` × the host's cores (more runnable threads than cores: the timed call waits
  its turn);
- **quantised**: timings that land on multiples of the scheduler tick (1, 4 or 10 ms: HZ 1000, 250,
  100) with tight quartiles.  A call that is descheduled resumes on a tick boundary, so under
  contention its time becomes a whole number of ticks and looks stable while it is mostly waiting;
- **spread**: a wide spread between repeats, interquartile range over median above :data:`WIDE_IQR`
  in half or more of the timings.

The judgement is pure (numbers in, a dict out): :func:`assess` takes the load and lists of timing
values; :func:`read_load` is the only part that asks the operating system.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from typing import Any

from attnscope.core.host_line import host_line

TICKS_US = (10000.0, 4000.0, 1000.0)  # scheduler ticks at HZ 100, 250, 1000, the longest tried first
TICK_TOLERANCE = 0.02  # a value within 2% of a tick of a whole number of ticks is "on the tick"
LOAD_PER_CORE = 1.25  # load average above 1.25 runnable threads per core: the host is oversubscribed
WIDE_IQR = 0.5  # IQR / median above 50%: repeats disagree by more than half
MIN_ON_TICK = 2  # timings on the tick needed before it is called quantisation (one may be a coincidence)


def read_load() -> tuple[float | None, int | None]:
    """(1-minute load average, logical cores of the host); None where the system does not say."""
    try:
        load: float | None = os.getloadavg()[0]
    except (OSError, AttributeError):
        load = None
    return load, os.cpu_count()


def on_tick(value_us: float, tick_us: float) -> bool:
    """Whether a time of at least one tick lies within the tolerance of a whole number of ticks."""
    if value_us < tick_us * (1 - TICK_TOLERANCE):
        return False
    n = round(value_us / tick_us)
    return abs(value_us - n * tick_us) <= TICK_TOLERANCE * tick_us


def quantised(timings: Sequence[Sequence[float]]) -> tuple[float, int, int] | None:
    """(tick µs, timings on it, timings of at least one tick) when the timings land on a scheduler tick.

    A timing is a list of values of one measurement (its samples, or its p25, median and p75): it is on
    the tick when every value is.  Quantised: at least :data:`MIN_ON_TICK` timings on the tick, and at
    least half of those long enough to be."""
    for tick in TICKS_US:
        long = [t for t in timings if t and min(t) >= tick * (1 - TICK_TOLERANCE)]
        hits = [t for t in long if all(on_tick(v, tick) for v in t)]
        if len(hits) >= MIN_ON_TICK and 2 * len(hits) >= len(long):
            return tick, len(hits), len(long)
    return None


def spread(p25_us: float, median_us: float, p75_us: float) -> float:
    return (p75_us - p25_us) / median_us if median_us > 0 else 0.0


def assess(
    load_average: float | None,
    cores: int | None,
    timings: Iterable[tuple[str, Sequence[float]]] = (),
) -> dict[str, Any]:
    """``{loaded, load_average, cores, why, signs}`` from the load and ``(label, [p25, median, p75])`` per
    timing.  ``why`` names each sign found, with its numbers; no sign: not loaded."""
    rows = [(label, list(vals)) for label, vals in timings if len(vals) >= 3 and vals[1] > 0]
    why: list[str] = []
    signs: list[str] = []
    if load_average is not None and cores:
        if load_average > LOAD_PER_CORE * cores:
            signs.append("load")
            why.append(
                f"load average {load_average:.2f} on {cores} cores ({load_average / cores:.2f} per core, "
                f"above {LOAD_PER_CORE})"
            )
    q = quantised([v for _, v in rows])
    if q is not None:
        tick, hits, long = q
        signs.append("quantised")
        why.append(
            f"{hits} of {long} timings of at least {tick / 1000:g} ms sit on multiples of {tick / 1000:g} ms "
            f"(within {TICK_TOLERANCE:.0%}): the scheduler tick, so the calls waited for whole time slices"
        )
    wide = [(label, spread(v[0], v[1], v[2])) for label, v in rows if spread(v[0], v[1], v[2]) > WIDE_IQR]
    if rows and 2 * len(wide) >= len(rows):
        signs.append("spread")
        worst = max(wide, key=lambda w: w[1])
        why.append(
            f"{len(wide)} of {len(rows)} timings spread wide between repeats (IQR/median above {WIDE_IQR:.0%}; "
            f"{worst[0]}: {worst[1]:.0%})"
        )
    return {
        "loaded": bool(signs),
        "load_average": None if load_average is None else round(load_average, 2),
        "cores": cores,
        "why": "; ".join(why) if why else "no sign of a busy host (load, tick-quantised timings, wide spread)",
        "signs": signs,
    }


def line(host: dict[str, Any]) -> str | None:
    """The one line a report prints for a loaded host; None when it is not loaded."""
    return host_line(host)


def timings_of(results: Iterable[Any]) -> list[tuple[str, list[float]]]:
    """``(variant, [p25, median, p75])`` of each result's host time (the CPU µs column): what the host's
    scheduler shapes, on a CPU run and on a GPU run's dispatch alike."""
    out = []
    for r in results:
        t = getattr(r, "cpu_time", None)
        if t is not None and t.median_us > 0:
            out.append((str(r.variant), [t.p25_us, t.median_us, t.p75_us]))
    return out
