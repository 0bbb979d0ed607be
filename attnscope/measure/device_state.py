"""The clocks, power, temperature, throttle reasons and energy behind a GPU measurement (NVML).

A background thread samples NVML every :data:`PERIOD_S` while the graph replays run (``Sampler.window`` marks
them and counts their calls), and NVML's energy counter is read at each window's ends.  ``nvidia-ml-py``
(``import pynvml``) is imported lazily: without it, on a CPU, or where NVML refuses, the state is null with the
reason.  The statistics, the throttle flags and the peak at the sampled clock are pure functions of the samples.
"""

from __future__ import annotations

import contextlib
import statistics
import threading
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

PERIOD_S = 0.01  # one NVML sample every ~10 ms

# nvmlClocksEventReasons (formerly ClocksThrottleReasons) bits, as NVML's header names them
THROTTLE_BITS = {
    0x1: "gpu_idle",
    0x2: "applications_clocks_setting",
    0x4: "sw_power_cap",
    0x8: "hw_slowdown",
    0x10: "sync_boost",
    0x20: "sw_thermal_slowdown",
    0x40: "hw_thermal_slowdown",
    0x80: "hw_power_brake_slowdown",
    0x100: "display_clock_setting",
}
# the reasons that lower the clock below what the load asks for: a sample set with any of them is throttled
SLOWING = frozenset(
    {"sw_power_cap", "hw_slowdown", "sw_thermal_slowdown", "hw_thermal_slowdown", "hw_power_brake_slowdown"}
)
FIELDS = ("sm_clock_mhz", "mem_clock_mhz", "power_w", "temp_c")


@dataclass(frozen=True)
class Sample:
    sm_clock_mhz: float | None
    mem_clock_mhz: float | None
    power_w: float | None
    temp_c: float | None
    reasons: int | None  # the throttle bitmask


def throttle_names(mask: int | None) -> list[str]:
    """The reasons a bitmask holds, in bit order; an unknown bit is named by its value."""
    if not mask:
        return []
    out = [name for bit, name in THROTTLE_BITS.items() if mask & bit]
    rest = mask & ~sum(THROTTLE_BITS)
    return out + ([f"0x{rest:x}"] if rest else [])


def spread(values: Sequence[float | None]) -> dict[str, float] | None:
    """{min, median, max} of the values present; None where none is."""
    v = [x for x in values if x is not None]
    if not v:
        return None
    return {"min": round(min(v), 3), "median": round(statistics.median(v), 3), "max": round(max(v), 3)}


def unavailable(why: str) -> dict[str, Any]:
    """The state's shape with every figure null, and why."""
    return {
        **dict.fromkeys(FIELDS),
        "energy_j_per_call": None,
        "energy_j_per_token": None,
        "throttle": [],
        "throttled": None,
        "num_samples": 0,
        "why": why,
    }


# The energy counter's rise over the timed windows, as a mean power, must lie within these factors of the power
# sampled during them.  NVML's counter advances in steps (on the H100 of 2026-12-05, decode replays of ~0.3 s
# read 181 mJ a call for a 26 µs call sampled at 233 W: 7 kW): outside the band the rise is an update step, not the
# windows' energy, and the mean sampled power × the windows' seconds stands in.
COUNTER_BAND = (0.5, 1.5)


def counter_implausible(energy_j: float, window_s: float, power: dict[str, float] | None) -> str | None:
    """Why the energy counter's rise cannot be the windows' energy (its mean power outside
    :data:`COUNTER_BAND` × the sampled power's min and max), or None when it can (or nothing to hold it against)."""
    if power is None or window_s <= 0:
        return None
    watts = energy_j / window_s
    low, high = COUNTER_BAND[0] * power["min"], COUNTER_BAND[1] * power["max"]
    if low <= watts <= high:
        return None
    return (
        f"the energy counter's rise, {energy_j:.3f} J over {window_s:.3f} s, is {watts:,.0f} W against "
        f"{power['min']:,.0f}–{power['max']:,.0f} W sampled: it moves in steps too coarse for windows this short"
    )


def summarise(
    samples: Sequence[Sample],
    *,
    energy_j: float | None,
    calls: int,
    window_s: float,
    tokens_per_call: int | None = None,
) -> dict[str, Any]:
    """The state of one measurement from its samples and its windows' energy and calls.

    Energy per call: the energy counter's rise over the windows divided by their calls; where the counter did
    not move (or NVML has none), the mean sampled power × the windows' seconds / calls, and ``energy_source``
    says which.  Per token: energy per call / ``tokens_per_call`` (given at decode: batch × one query)."""
    if not samples:
        return unavailable("no NVML sample fell inside the timed replays")
    reasons: dict[str, int] = {}
    for s in samples:
        for name in throttle_names(s.reasons):
            reasons[name] = reasons.get(name, 0) + 1
    slowing = sorted(r for r in reasons if r in SLOWING)
    power = spread([s.power_w for s in samples])
    per_call = None
    source = None
    why_not_counter = "the energy counter did not move"
    if calls > 0 and energy_j is not None and energy_j > 0:
        implied = counter_implausible(energy_j, window_s, power)
        if implied is None:
            per_call, source = energy_j / calls, "NVML energy counter over the timed replays / their calls"
        else:
            why_not_counter = implied
    if source is None and calls > 0 and power is not None and window_s > 0:
        mean_w = statistics.fmean(s.power_w for s in samples if s.power_w is not None)
        per_call = mean_w * window_s / calls
        source = f"mean sampled power × the timed replays' seconds / their calls ({why_not_counter})"
    flags = []
    if slowing:
        flags.append("throttled: " + ", ".join(f"{r} in {reasons[r]} of {len(samples)} samples" for r in slowing))
    sm = spread([s.sm_clock_mhz for s in samples])
    if sm and sm["max"] > 0 and (sm["max"] - sm["min"]) / sm["max"] > 0.05:
        flags.append(f"SM clock moved {sm['min']:g}–{sm['max']:g} MHz (more than 5%) during the samples")
    return {
        "sm_clock_mhz": sm,
        "mem_clock_mhz": spread([s.mem_clock_mhz for s in samples]),
        "power_w": power,
        "temp_c": spread([s.temp_c for s in samples]),
        "energy_j_per_call": per_call,
        "energy_j_per_token": per_call / tokens_per_call if per_call is not None and tokens_per_call else None,
        "energy_source": source,
        "throttle": sorted(reasons),
        "throttle_samples": reasons,
        "throttled": bool(slowing),
        "flags": flags,
        "num_samples": len(samples),
        "calls": calls,
        "window_s": round(window_s, 6),
        "method": f"NVML every {PERIOD_S * 1e3:g} ms during the CUDA-graph replays (warm and cold)",
    }


def clock_peak(
    state: dict[str, Any], flops_per_clock_per_sm: int | None, sms: int | None, tflops: float | None
) -> dict[str, Any]:
    """% of the compute peak at the sampled SM clock: median SM MHz × FLOPs per clock per SM × SMs; over 100%
    is flagged (a time or a FLOP count is wrong, never a result)."""
    sm = state.get("sm_clock_mhz") or {}
    mhz = sm.get("median")
    if not mhz or not flops_per_clock_per_sm or not sms:
        return {"peak_tflops_at_clock": None, "pct_of_peak_at_clock": None}
    peak = mhz * 1e6 * flops_per_clock_per_sm * sms / 1e12
    pct = 100.0 * tflops / peak if tflops is not None and peak > 0 else None
    out: dict[str, Any] = {
        "peak_tflops_at_clock": round(peak, 3),
        "pct_of_peak_at_clock": round(pct, 2) if pct is not None else None,
        "peak_formula": f"{mhz:g} MHz × {flops_per_clock_per_sm} FLOP/clock/SM × {sms} SMs = {peak:,.1f} TFLOP/s",
    }
    if pct is not None and pct > 100.0:
        out["over_100"] = True
    return out


class Sampler:
    """NVML samples in a background thread; ``window(calls)`` marks the timed replays and counts their calls."""

    def __init__(self, nvml: Any, handle: Any, period_s: float = PERIOD_S) -> None:
        self.nvml, self.handle, self.period_s = nvml, handle, period_s
        self.reset()

    def reset(self) -> None:
        self.samples: list[Sample] = []
        self.calls = 0
        self.window_s = 0.0
        self.energy_j: float | None = 0.0

    def _read(self) -> Sample:
        n, h = self.nvml, self.handle

        def get(fn: Any, *a: Any) -> Any:
            try:
                return fn(h, *a)
            except Exception:  # noqa: BLE001 - a field NVML refuses is null, the others stay
                return None

        power = get(n.nvmlDeviceGetPowerUsage)
        reasons_fn = getattr(n, "nvmlDeviceGetCurrentClocksEventReasons", None) or getattr(
            n, "nvmlDeviceGetCurrentClocksThrottleReasons", None
        )
        return Sample(
            sm_clock_mhz=get(n.nvmlDeviceGetClockInfo, n.NVML_CLOCK_SM),
            mem_clock_mhz=get(n.nvmlDeviceGetClockInfo, n.NVML_CLOCK_MEM),
            power_w=power / 1000.0 if power is not None else None,
            temp_c=get(n.nvmlDeviceGetTemperature, n.NVML_TEMPERATURE_GPU),
            reasons=get(reasons_fn) if reasons_fn else None,
        )

    def _energy_mj(self) -> float | None:
        try:
            return float(self.nvml.nvmlDeviceGetTotalEnergyConsumption(self.handle))
        except Exception:  # noqa: BLE001 - before Volta, or not supported: the power integral stands in
            return None

    @contextlib.contextmanager
    def window(self, calls: int) -> Iterator[None]:
        """Sample while the block runs (its ``calls`` calls), and add its energy."""
        stop = threading.Event()
        got: list[Sample] = []

        def loop() -> None:
            while not stop.is_set():
                got.append(self._read())
                stop.wait(self.period_s)

        e0 = self._energy_mj()
        t0 = time.perf_counter()
        th = threading.Thread(target=loop, name="attnscope-nvml", daemon=True)
        th.start()
        try:
            yield
        finally:
            stop.set()
            th.join()
            self.window_s += time.perf_counter() - t0
            e1 = self._energy_mj()
            if e0 is None or e1 is None or self.energy_j is None:
                self.energy_j = None
            else:
                self.energy_j += (e1 - e0) / 1000.0
            self.samples.extend(got)
            self.calls += calls

    def summary(self, tokens_per_call: int | None = None) -> dict[str, Any]:
        return summarise(
            self.samples,
            energy_j=self.energy_j,
            calls=self.calls,
            window_s=self.window_s,
            tokens_per_call=tokens_per_call,
        )


def open_sampler(uuid: str | None, index: int, nvml: Any = None) -> tuple[Sampler | None, str | None]:
    """A sampler for the CUDA device (found by its UUID, else its index), or (None, why not)."""
    if nvml is None:
        try:
            import pynvml  # nvidia-ml-py
        except ImportError:
            return None, "nvidia-ml-py (pynvml) is not installed: no clocks, power or energy (pip install nvidia-ml-py)"
        nvml = pynvml
    try:
        nvml.nvmlInit()
        if uuid:
            u = uuid if uuid.startswith(("GPU-", "MIG-")) else f"GPU-{uuid}"
            handle = nvml.nvmlDeviceGetHandleByUUID(u)
        else:
            handle = nvml.nvmlDeviceGetHandleByIndex(index)
    except Exception as e:  # noqa: BLE001 - NVML missing from the driver, no permission, a MIG slice
        return None, f"NVML refused: {type(e).__name__}: {' '.join(str(e).split())[:160]}"
    return Sampler(nvml, handle), None
