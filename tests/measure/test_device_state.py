"""Clocks, power, energy and throttle flags of a GPU measurement, without a GPU: the statistics, flags and the
peak at the sampled clock from hand numbers, and the sampler against a fake NVML module."""

from __future__ import annotations

import time

import pytest

from attnscope.core.gpus import flops_per_clock_per_sm
from attnscope.measure import device_state as ds
from attnscope.measure.device_state import Sample, clock_peak, spread, summarise, throttle_names
from attnscope.report.text.table import device_state_lines


def _s(sm=1980.0, mem=2619.0, power=500.0, temp=60.0, reasons=0):
    return Sample(sm, mem, power, temp, reasons)


def test_throttle_bits_by_name():
    # 0x4 | 0x40 = sw_power_cap and hw_thermal_slowdown; 0x1 idle alone; 0x400 is no bit NVML names here
    assert throttle_names(0x44) == ["sw_power_cap", "hw_thermal_slowdown"]
    assert throttle_names(0x1) == ["gpu_idle"]
    assert throttle_names(0x401) == ["gpu_idle", "0x400"]
    assert throttle_names(0) == [] and throttle_names(None) == []


def test_spread_is_min_median_max_of_what_is_present():
    assert spread([1980.0, 1755.0, None, 1900.0]) == {"min": 1755.0, "median": 1900.0, "max": 1980.0}
    assert spread([None]) is None


def test_energy_per_call_from_the_counter():
    """3.6 J over 1,200 calls = 3 mJ a call; at decode with batch 4: 0.75 mJ a token (3.6 J over 0.0072 s is
    500 W, the power sampled)."""
    st = summarise([_s(), _s()], energy_j=3.6, calls=1200, window_s=0.0072, tokens_per_call=4)
    assert st["energy_j_per_call"] == pytest.approx(0.003)
    assert st["energy_j_per_token"] == pytest.approx(0.00075)
    assert st["energy_source"].startswith("NVML energy counter")
    assert st["throttled"] is False and st["flags"] == [] and st["num_samples"] == 2


def test_energy_from_the_mean_power_where_the_counter_did_not_move():
    """Power 400 and 600 W (mean 500 W) over 0.012 s and 2,000 calls: 500 × 0.012 / 2000 = 3 mJ a call."""
    st = summarise([_s(power=400.0), _s(power=600.0)], energy_j=0.0, calls=2000, window_s=0.012)
    assert st["energy_j_per_call"] == pytest.approx(0.003)
    assert st["energy_source"] == (
        "mean sampled power × the timed replays' seconds / their calls (the energy counter did not move)"
    )  # fmt: skip
    assert st["energy_j_per_token"] is None
    assert st["power_w"] == {"min": 400.0, "median": 500.0, "max": 600.0}
    none = summarise([_s(power=None)], energy_j=None, calls=10, window_s=0.01)
    assert none["energy_j_per_call"] is None


def test_a_throttled_sample_set_is_flagged_with_its_counts():
    samples = [_s(reasons=0x4), _s(reasons=0x4), _s(reasons=0x1), _s(reasons=0)]
    st = summarise(samples, energy_j=1.0, calls=10, window_s=0.04)
    assert st["throttled"] is True
    assert st["throttle"] == ["gpu_idle", "sw_power_cap"]
    assert st["flags"] == ["throttled: sw_power_cap in 2 of 4 samples"]
    idle = summarise([_s(reasons=0x1)], energy_j=1.0, calls=10, window_s=0.01)
    assert idle["throttled"] is False and idle["throttle"] == ["gpu_idle"]  # idle is not throttling


def test_a_moving_sm_clock_is_flagged_beyond_5_percent():
    # (1980 − 1860) / 1980 = 6.1% > 5%: flagged; (1980 − 1890) / 1980 = 4.5%: not
    moving = summarise([_s(sm=1980.0), _s(sm=1860.0)], energy_j=1.0, calls=1, window_s=0.01)
    assert moving["flags"] == ["SM clock moved 1860–1980 MHz (more than 5%) during the samples"]
    steady = summarise([_s(sm=1980.0), _s(sm=1890.0)], energy_j=1.0, calls=1, window_s=0.01)
    assert steady["flags"] == []


def test_no_samples_is_null_with_the_reason():
    st = summarise([], energy_j=1.0, calls=5, window_s=0.01)
    assert st["energy_j_per_call"] is None and st["sm_clock_mhz"] is None and "no NVML sample" in st["why"]


def test_peak_at_the_sampled_clock_by_hand():
    """H100 SXM at 1,830 MHz: 1830e6 × 4096 × 132 = 989.43 TFLOP/s; a 500 TFLOP/s call is 50.53% of it.
    At a throttled 1,500 MHz: 811.01 TFLOP/s, and 900 TFLOP/s is 110.97%: flagged."""
    per = flops_per_clock_per_sm((9, 0), "bf16")
    assert per == 4096
    got = clock_peak({"sm_clock_mhz": {"median": 1830.0}}, per, 132, 500.0)
    assert got["peak_tflops_at_clock"] == pytest.approx(989.43, abs=0.01)
    assert got["pct_of_peak_at_clock"] == pytest.approx(50.53, abs=0.01)
    assert got["peak_formula"] == "1830 MHz × 4096 FLOP/clock/SM × 132 SMs = 989.4 TFLOP/s" and "over_100" not in got
    hot = clock_peak({"sm_clock_mhz": {"median": 1500.0}}, per, 132, 900.0)
    assert hot["peak_tflops_at_clock"] == pytest.approx(811.01, abs=0.01)
    assert hot["pct_of_peak_at_clock"] == pytest.approx(110.97, abs=0.01) and hot["over_100"] is True
    assert clock_peak({}, per, 132, 1.0) == {"peak_tflops_at_clock": None, "pct_of_peak_at_clock": None}


def test_flops_per_clock_match_nvidias_rates():
    """Rate / (SMs × boost clock): H100 SXM 989.4 / (132 × 1.83) = 4096; H100 PCIe 756 / (114 × 1.62) = 4093.6;
    A100 312 / (108 × 1.41) = 2048.9."""
    assert 989.4e12 / (132 * 1.83e9) == pytest.approx(flops_per_clock_per_sm((9, 0), "fp16"), rel=1e-3)
    assert 756e12 / (114 * 1.62e9) == pytest.approx(flops_per_clock_per_sm((9, 0), "bf16"), rel=1e-3)
    assert 312e12 / (108 * 1.41e9) == pytest.approx(flops_per_clock_per_sm((8, 0), "bf16"), rel=1e-3)
    assert flops_per_clock_per_sm((8, 9), "bf16") is None and flops_per_clock_per_sm((9, 0), "fp32") is None
    assert flops_per_clock_per_sm(None, "bf16") is None


class FakeNVML:
    """The NVML calls the sampler makes: clocks 1980/2619 MHz, 450,000 mW, 61 °C, power cap bit set, and an
    energy counter (mJ) that rises 1,000 mJ between reads."""

    NVML_CLOCK_SM, NVML_CLOCK_MEM, NVML_TEMPERATURE_GPU = 1, 2, 0

    def __init__(self, energy=True, reasons_name="nvmlDeviceGetCurrentClocksEventReasons"):
        self.energy_mj = 10_000
        self.t0 = time.perf_counter()
        self.inited = False
        self.has_energy = energy
        setattr(self, reasons_name, lambda h: 0x4)

    def nvmlInit(self):
        self.inited = True

    def nvmlDeviceGetHandleByUUID(self, u):
        if u not in ("GPU-abc", "MIG-xyz"):
            raise RuntimeError(f"no device {u}")
        return "h"

    def nvmlDeviceGetHandleByIndex(self, i):
        return f"h{i}"

    def nvmlDeviceGetClockInfo(self, h, kind):
        assert h in ("h", "h3")
        return {1: 1980, 2: 2619}[kind]

    def nvmlDeviceGetPowerUsage(self, h):
        assert h in ("h", "h3")
        return 450_000

    def nvmlDeviceGetTemperature(self, h, kind):
        assert h in ("h", "h3") and kind == 0
        return 61

    def nvmlDeviceGetTotalEnergyConsumption(self, h):
        assert h in ("h", "h3")
        if not self.has_energy:
            raise RuntimeError("Not Supported")
        # the counter follows the 450 W the fake reports, in real time (mJ)
        return self.energy_mj + 450.0 * (time.perf_counter() - self.t0) * 1000


def test_the_sampler_against_a_fake_nvml():
    nvml = FakeNVML()
    s, why = ds.open_sampler("abc", 0, nvml=nvml)
    assert why is None and nvml.inited and s.handle == "h"
    with s.window(500):
        time.sleep(0.03)
    st = s.summary(tokens_per_call=2)
    assert st["num_samples"] >= 2 and st["calls"] == 500
    assert st["sm_clock_mhz"] == {"min": 1980.0, "median": 1980.0, "max": 1980.0}
    assert st["mem_clock_mhz"]["median"] == 2619.0 and st["power_w"]["median"] == 450.0 and st["temp_c"]["max"] == 61.0
    # the counter's rise over the window at 450 W, a call's share of it
    assert st["energy_source"].startswith("NVML energy counter")
    assert st["energy_j_per_call"] == pytest.approx(450.0 * s.window_s / 500, rel=0.1)
    assert st["energy_j_per_token"] == pytest.approx(st["energy_j_per_call"] / 2)
    assert st["throttled"] is True and st["throttle"] == ["sw_power_cap"]
    s.reset()
    assert s.calls == 0 and s.samples == []


def test_the_sampler_falls_back_to_power_and_the_older_throttle_call():
    nvml = FakeNVML(energy=False, reasons_name="nvmlDeviceGetCurrentClocksThrottleReasons")
    s, _ = ds.open_sampler(None, 3, nvml=nvml)
    assert s.handle == "h3"
    with s.window(100):
        time.sleep(0.02)
    st = s.summary()
    assert "mean sampled power" in st["energy_source"]
    assert st["energy_j_per_call"] == pytest.approx(450.0 * s.window_s / 100)
    assert st["throttle"] == ["sw_power_cap"]


def test_without_pynvml_or_when_nvml_refuses_the_state_says_why(monkeypatch):
    import sys

    monkeypatch.setitem(sys.modules, "pynvml", None)
    s, why = ds.open_sampler("abc", 0)
    assert s is None and "nvidia-ml-py (pynvml) is not installed" in why

    class Refusing(FakeNVML):
        def nvmlInit(self):
            raise RuntimeError("NVML Shared Library Not Found")

    s, why = ds.open_sampler("abc", 0, nvml=Refusing())
    assert s is None and why == "NVML refused: RuntimeError: NVML Shared Library Not Found"
    un = ds.unavailable(why)
    assert un["energy_j_per_call"] is None and un["sm_clock_mhz"] is None and un["why"] == why


def test_the_footnote_gives_energy_clock_and_flags():
    st = {
        **summarise([_s(reasons=0x4)], energy_j=3.6, calls=1200, window_s=0.0072, tokens_per_call=4),
        **clock_peak({"sm_clock_mhz": {"median": 1980.0}}, 4096, 132, 1200.0),
    }
    rows = [{"variant": "sdpa_flash", "status": "ok", "device_kind": "gpu", "device_state": st}]
    lines = device_state_lines(rows)
    assert lines[0].startswith(
        "sdpa_flash: 3.000 mJ per call (0.750 mJ per token), SM 1,980 MHz (min 1,980, max 1,980)"
    )
    assert "500 W, 60 °C" in lines[0] and "⚠ >100%: inconsistent" in lines[0]  # 1200 / 1070.5 TFLOP/s = 112.1%
    assert lines[1] == "  sdpa_flash ⚠ throttled: sw_power_cap in 1 of 1 samples"
    cpu = [
        {
            "variant": "naive",
            "status": "ok",
            "source": "run",
            "device_kind": "cpu",
            "device_state": ds.unavailable("CPU run"),
        }
    ]
    assert device_state_lines(cpu) == ["energy and clocks: null on this CPU (CPU run)"]


def test_the_table_has_an_energy_column_only_where_nvml_measured():
    from rich.console import Console

    from attnscope.report.text.table import results_table

    def row(variant, kind, state):
        return {
            "variant": variant,
            "status": "ok",
            "device_kind": kind,
            "num_kernels": 1,
            "num_memcpy": 0,
            "num_memset": 0,
            "device_state": state,
        }

    gpu = {"results": [row("sdpa_flash", "gpu", {"energy_j_per_call": 0.0031234})]}
    con = Console(width=250, record=True)
    con.print(results_table(gpu))
    text = con.export_text()
    assert "mJ/call" in text and "3.123" in text  # 0.0031234 J = 3.123 mJ
    cpu = {"results": [row("naive", "cpu", ds.unavailable("CPU run"))]}
    con = Console(width=250, record=True)
    con.print(results_table(cpu))
    assert "mJ/call" not in con.export_text()


# Tests written for the survivors of mutation testing: exact values, boundaries, and the fallbacks.


def test_spread_rounds_to_three_decimals():
    assert spread([1.23456, 3.45678, 2.34567]) == {"min": 1.235, "median": 2.346, "max": 3.457}


def test_the_null_state_in_full():
    assert ds.unavailable("why") == {
        "sm_clock_mhz": None,
        "mem_clock_mhz": None,
        "power_w": None,
        "temp_c": None,
        "energy_j_per_call": None,
        "energy_j_per_token": None,
        "throttle": [],
        "throttled": None,
        "num_samples": 0,
        "why": "why",
    }
    assert summarise([], energy_j=1.0, calls=5, window_s=0.01)["why"] == "no NVML sample fell inside the timed replays"


def test_summary_keys_and_exact_fields():
    st = summarise([_s(reasons=0x4), _s(reasons=0x4)], energy_j=6.0, calls=1, window_s=0.0123456789)
    assert st["energy_j_per_call"] == 6.0  # one call: the counter's rise itself (486 W, within 250–750 W)
    assert st["window_s"] == 0.012346
    assert st["throttle_samples"] == {"sw_power_cap": 2}
    assert st["method"] == "NVML every 10 ms during the CUDA-graph replays (warm and cold)"
    assert st["calls"] == 1
    assert set(st) == {
        "sm_clock_mhz", "mem_clock_mhz", "power_w", "temp_c", "energy_j_per_call", "energy_j_per_token",
        "energy_source", "throttle", "throttle_samples", "throttled", "flags", "num_samples", "calls", "window_s",
        "method",
    }  # fmt: skip


def test_no_calls_or_no_time_give_no_energy():
    for calls, window in ((0, 0.01), (1, 0.0)):
        st = summarise([_s()], energy_j=0.0, calls=calls, window_s=window)
        assert st["energy_j_per_call"] is None and st["energy_source"] is None
    st = summarise([_s()], energy_j=2.0, calls=0, window_s=0.01)
    assert st["energy_j_per_call"] is None and st["energy_source"] is None
    st = summarise([_s(power=300.0)], energy_j=0.0, calls=1, window_s=0.01)
    assert st["energy_j_per_call"] == pytest.approx(3.0)  # 300 W × 0.01 s / 1 call


def test_two_slowing_reasons_are_listed_in_order():
    st = summarise([_s(reasons=0x4 | 0x8), _s(reasons=0x8)], energy_j=1.0, calls=1, window_s=0.01)
    assert st["flags"] == ["throttled: hw_slowdown in 2 of 2 samples, sw_power_cap in 1 of 2 samples"]


def test_the_clock_flag_at_its_bounds():
    exact = summarise([_s(sm=100.0), _s(sm=95.0)], energy_j=1.0, calls=1, window_s=0.01)  # (100 − 95)/100 = 5%
    assert exact["flags"] == []
    small = summarise([_s(sm=1.0), _s(sm=0.5)], energy_j=1.0, calls=1, window_s=0.01)  # 50% of a 1 MHz clock
    assert small["flags"] == ["SM clock moved 0.5–1 MHz (more than 5%) during the samples"]
    zero = summarise([_s(sm=0.0)], energy_j=1.0, calls=1, window_s=0.01)
    assert zero["flags"] == []


def test_clock_peak_exact_values_and_bounds():
    """1830 × 4096 × 132 × 1e6 = 9.8942976e14 FLOP/s = 989.42976 → 989.43; 500 of it: 50.5342…% → 50.53."""
    got = clock_peak({"sm_clock_mhz": {"median": 1830.0}}, 4096, 132, 500.0)
    assert got["peak_tflops_at_clock"] == 989.43 and got["pct_of_peak_at_clock"] == 50.53
    at = clock_peak({"sm_clock_mhz": {"median": 1830.0}}, 4096, 132, 989.42976)
    assert at["pct_of_peak_at_clock"] == 100.0 and "over_100" not in at  # exactly the peak: not over it
    just = clock_peak({"sm_clock_mhz": {"median": 1830.0}}, 4096, 132, 989.42976 * 1.005)
    assert just["over_100"] is True  # 100.5%
    tiny = clock_peak({"sm_clock_mhz": {"median": 0.001}}, 4096, 132, 1.0)  # 1e3 × 4096 × 132 = 5.40672e-4 TFLOP/s
    assert tiny["over_100"] is True and tiny["pct_of_peak_at_clock"] == pytest.approx(100 / 5.40672e-4, abs=0.01)
    assert clock_peak({"sm_clock_mhz": {"median": 1830.0}}, 4096, None, 1.0)["peak_tflops_at_clock"] is None
    none = clock_peak({"sm_clock_mhz": {"median": 1830.0}}, 4096, 132, None)
    assert none["pct_of_peak_at_clock"] is None and none["peak_tflops_at_clock"] == 989.43


class Bare(FakeNVML):
    """No throttle call at all, and power refused."""

    def __init__(self):
        super().__init__()
        del self.nvmlDeviceGetCurrentClocksEventReasons

    def nvmlDeviceGetPowerUsage(self, h):
        raise RuntimeError("Not Supported")


def test_a_field_nvml_refuses_is_null_and_the_window_time_starts_at_zero():
    s, _ = ds.open_sampler("MIG-xyz", 0, nvml=Bare())
    with s.window(10):
        time.sleep(0.02)
    st = s.summary()
    assert st["num_samples"] >= 1 and st["power_w"] is None and st["throttle"] == []
    assert st["sm_clock_mhz"]["median"] == 1980.0 and st["temp_c"]["median"] == 61.0
    assert 0.02 <= s.window_s < 0.5


def test_pynvml_is_what_open_sampler_uses_when_importable(monkeypatch):
    import sys

    monkeypatch.setitem(sys.modules, "pynvml", FakeNVML())
    s, why = ds.open_sampler("GPU-abc", 0)
    assert why is None and s is not None and s.handle == "h"


def test_the_refusal_is_cut_at_160_characters():
    class Long(FakeNVML):
        def nvmlInit(self):
            raise RuntimeError("x" * 200)

    assert ds.open_sampler("abc", 0, nvml=Long())[1] == "NVML refused: RuntimeError: " + "x" * 160


def test_the_not_installed_message(monkeypatch):
    import sys

    monkeypatch.setitem(sys.modules, "pynvml", None)
    assert ds.open_sampler("abc", 0) == (
        None,
        "nvidia-ml-py (pynvml) is not installed: no clocks, power or energy (pip install nvidia-ml-py)",
    )


def test_a_counter_rise_no_sampled_power_could_give_is_set_aside():
    """The H100 decode of 2026-12-05 read 0.181 J a call for calls of ~26 µs sampled at 233 W.  By hand: 2,100 J
    over 0.3 s is 7,000 W against 233 W sampled, past 1.5 × 233 = 349.5 W: the mean power stands in,
    233 W × 0.3 s / 11,538 calls = 6.06 mJ a call."""
    st = summarise([_s(power=233.0), _s(power=233.0)], energy_j=2100.0, calls=11_538, window_s=0.3)
    assert st["energy_j_per_call"] == pytest.approx(233.0 * 0.3 / 11_538)
    assert st["energy_source"].startswith("mean sampled power")
    assert "7,000 W against 233–233 W sampled" in st["energy_source"]


def test_the_counter_band_at_its_edges():
    """Samples of 200 and 400 W: the counter is believed from 0.5 × 200 = 100 W to 1.5 × 400 = 600 W."""
    samples = [_s(power=200.0), _s(power=400.0)]
    for joules, believed in ((1.0, True), (6.0, True), (0.99, False), (6.01, False)):  # over 0.01 s: ×100 W
        st = summarise(samples, energy_j=joules, calls=10, window_s=0.01)
        assert st["energy_source"].startswith("NVML energy counter") is believed, joules
        want = joules / 10 if believed else 300.0 * 0.01 / 10  # the mean of 200 and 400 W
        assert st["energy_j_per_call"] == pytest.approx(want)
    assert ds.counter_implausible(1.0, 0.0, {"min": 1.0, "max": 2.0}) is None  # no window: nothing to hold against
    assert ds.counter_implausible(1.0, 0.01, None) is None
