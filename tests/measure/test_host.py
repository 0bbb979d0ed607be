"""The busy-host verdict on hand-made timings: samples placed on (or off) the scheduler tick by hand."""

from __future__ import annotations

import statistics

from attnscope.measure import host


def _quartiles(samples: list[float]) -> list[float]:
    """[p25, median, p75] computed here with the standard library, not by attnscope."""
    q = statistics.quantiles(sorted(samples), n=4, method="inclusive")
    return [q[0], q[1], q[2]]


def test_samples_on_the_4ms_tick_are_quantised():
    # The busy-CPU run: naive at 47,978 µs and flash at 7,998 µs, each a few µs off 12 and 2 ticks.
    naive = [47978.0, 47990.0, 48004.0, 47985.0, 48011.0]
    flash = [7998.0, 8003.0, 7996.0, 8001.0, 7999.0]
    h = host.assess(None, None, [("naive", _quartiles(naive)), ("flash", _quartiles(flash))])
    assert h["loaded"] is True and h["signs"] == ["quantised"]
    assert "2 of 2 timings" in h["why"] and "multiples of 4 ms" in h["why"]


def test_the_same_times_off_the_tick_are_not_quantised():
    naive = [45978.0, 45990.0, 46104.0, 45985.0, 46011.0]  # 46,000 is 11.5 ticks of 4 ms: off by 2,000 µs
    flash = [7398.0, 7403.0, 7396.0, 7401.0, 7399.0]
    h = host.assess(None, None, [("naive", _quartiles(naive)), ("flash", _quartiles(flash))])
    assert h["loaded"] is False and h["signs"] == []


def test_one_timing_on_a_tick_is_a_coincidence_not_a_verdict():
    assert host.quantised([[7999.0, 8000.0, 8002.0], [513.0, 520.0, 530.0]]) is None
    # times under one tick cannot show it: they are left out of the count
    assert host.quantised([[7999.0, 8000.0, 8002.0], [2999.5, 3000.0, 3001.0], [400.0, 401.0, 402.0]]) == (
        1000.0,
        2,
        2,
    )


def test_a_1ms_tick_is_found_and_10ms_preferred_when_every_value_fits():
    on_10 = [[19990.0, 20000.0, 20010.0], [29995.0, 30000.0, 30005.0]]
    assert host.quantised(on_10) == (10000.0, 2, 2)
    on_1 = [[2995.0, 3001.0, 3004.0], [5001.0, 5003.0, 4998.0], [1300.0, 1500.0, 1700.0]]
    # 1300..1700 are off the 1 ms tick: 2 of the 3 long timings on it, still at least half
    assert host.quantised(on_1) == (1000.0, 2, 3)


def test_load_above_the_cores_is_loaded_and_says_its_numbers():
    h = host.assess(9.6, 2, [])
    assert h["loaded"] is True and h["signs"] == ["load"]
    assert h["load_average"] == 9.6 and h["cores"] == 2
    assert "load average 9.60 on 2 cores (4.80 per core" in h["why"]
    quiet = host.assess(1.2, 16, [])
    assert quiet["loaded"] is False and host.line(quiet) is None


def test_wide_spread_in_half_the_timings_is_a_sign():
    a = _quartiles([100.0, 150.0, 300.0, 320.0, 900.0])  # p25 150, median 300, p75 320: IQR/median 57%
    b = _quartiles([200.0, 201.0, 202.0, 203.0, 204.0])
    h = host.assess(None, None, [("a", a), ("b", b)])
    assert h["signs"] == ["spread"] and "1 of 2 timings" in h["why"] and "a: 57%" in h["why"]
    assert host.assess(None, None, [("a", a), ("b", b), ("c", b)])["loaded"] is False


def test_timings_of_results_reads_the_host_time():
    from attnscope.core.types import Case, Result, Timing

    t = Timing(median_us=8000.0, p25_us=7999.0, p75_us=8001.0, min_us=7990.0, num_samples=5, method="m")
    rows = [Result("naive", Case(1, 1, 4, 4), "ok", cpu_time=t), Result("x", None, "skipped")]
    assert host.timings_of(rows) == [("naive", [7999.0, 8000.0, 8001.0])]


# --- boundaries, each worked by hand from the constants: tolerance 2%, 1.25 runnable threads per core, IQR 50% ---


def test_on_tick_takes_both_edges_of_the_tolerance():
    # 1 ms tick, 2% tolerance: 980 and 1020 µs are 20 µs off one tick, exactly the tolerance: on it
    assert host.on_tick(980.0, 1000.0) is True
    assert host.on_tick(1020.0, 1000.0) is True
    assert host.on_tick(1010.0, 1000.0) is True
    assert host.on_tick(979.0, 1000.0) is False  # under one tick (less than 980): cannot show a tick
    assert host.on_tick(1021.0, 1000.0) is False  # 21 µs off
    # below one tick, even a value that is a whole number (0) of ticks is not "on the tick"
    assert host.on_tick(10.0, 1000.0) is False
    assert host.on_tick(0.0, 1000.0) is False
    assert host.on_tick(3000.0, 1000.0) is True and host.on_tick(3500.0, 1000.0) is False


def test_a_timing_of_exactly_98_percent_of_a_tick_counts_as_long():
    # min 9,800 µs = 10 ms × (1 − 2%): long enough for the 10 ms tick, and on it; 10,100 is off the 1 ms tick (by 100)
    assert host.quantised([[9800.0, 10000.0, 10100.0], [20000.0, 20000.0, 20000.0]]) == (10000.0, 2, 2)


def test_quantised_needs_half_of_the_long_timings_on_the_tick():
    on = [[20000.0] * 3, [30000.0] * 3]  # on the 10 ms tick (and 20 ms on the 4 ms one; 30 ms is 7.5 ticks of 4)
    # 15.5, 17.3 and 25.7 ms are off every tick (1 ms: 500, 300, 700 µs off; 4 ms: 3.875, 4.325, 6.425 ticks)
    off = [[15500.0] * 3, [17300.0] * 3, [25700.0] * 3]
    assert host.quantised(on + off) is None  # 2 of 5 long timings on the 10 ms tick: under half
    assert host.quantised(on + off[:2]) == (10000.0, 2, 4)  # 2 of 4: exactly half is enough


def test_spread_of_a_zero_or_negative_median_is_zero():
    assert host.spread(0.25, 0.5, 1.0) == 1.5  # (1.0 − 0.25) / 0.5
    assert host.spread(1.0, 0.0, 2.0) == 0.0
    assert host.spread(1.0, -1.0, 3.0) == 0.0


def test_load_per_core_boundary():
    # 1.25 × 2 cores = 2.5: a load of exactly 2.5 is not above it; 2.6 is (1.30 per core)
    assert host.assess(2.5, 2)["loaded"] is False
    h = host.assess(2.6, 2)
    assert h["signs"] == ["load"]
    assert h["why"] == "load average 2.60 on 2 cores (1.30 per core, above 1.25)"
    # per core, not per host: 12 on 16 cores is 0.75 per core (quiet), 12 on 8 is 1.5 (loaded)
    assert host.assess(12.0, 16)["loaded"] is False and host.assess(12.0, 8)["loaded"] is True
    assert host.assess(9.876, 2)["load_average"] == 9.88  # rounded to 2 decimals


def test_a_missing_load_or_core_count_is_no_load_sign():
    for load, cores in ((None, 2), (9.0, None), (9.0, 0)):
        h = host.assess(load, cores)
        assert h["loaded"] is False and h["signs"] == []
        assert h["why"] == "no sign of a busy host (load, tick-quantised timings, wide spread)"


def test_quantised_why_names_the_tick_and_the_counts():
    h = host.assess(None, None, [("a", [7998.0, 8000.0, 8003.0]), ("b", [11999.0, 12000.0, 12002.0])])
    assert h["why"] == (
        "2 of 2 timings of at least 4 ms sit on multiples of 4 ms (within 2%): the scheduler tick, so the calls "
        "waited for whole time slices"
    )


def test_timings_with_fewer_than_three_values_or_no_median_are_left_out():
    wide = ("w", [100.0, 200.0, 400.0])  # IQR/median 300/200 = 150%
    small = ("m", [0.4, 0.5, 0.6])  # median 0.5 µs: a timing (0.2/0.5 = 40%, not wide)
    zero = ("z", [0.0, 0.0, 5.0])  # median 0: left out
    h = host.assess(None, None, [wide, small, zero, ("short", [100.0, 900.0])])
    assert h["signs"] == ["spread"]
    assert "1 of 2 timings spread wide" in h["why"] and "w: 150%" in h["why"]
    assert host.assess(None, None, [("short", [100.0, 900.0])])["loaded"] is False


def test_spread_is_iqr_over_the_median_and_strictly_above_half():
    # p25 100, median 150, p75 200: 100/150 = 67% > 50% (over p75 it would be exactly 50%, not wide)
    h = host.assess(None, None, [("x", [100.0, 150.0, 200.0])])
    assert h["signs"] == ["spread"] and "x: 67%" in h["why"]
    # exactly 50%: 100/200, not above
    assert host.assess(None, None, [("y", [100.0, 200.0, 200.0])])["loaded"] is False


def test_the_worst_spread_is_named_not_the_first_or_the_last_label():
    b = ("b", [100.0, 200.0, 220.0])  # 120/200 = 60%
    a = ("a", [100.0, 200.0, 400.0])  # 300/200 = 150%
    c = ("c", [100.0, 200.0, 230.0])  # 130/200 = 65%
    h = host.assess(None, None, [b, a, c])
    assert h["why"] == "3 of 3 timings spread wide between repeats (IQR/median above 50%; a: 150%)"


def test_two_signs_are_joined_by_a_semicolon():
    h = host.assess(3.0, 2, [("a", [100.0, 200.0, 400.0])])
    assert h["signs"] == ["load", "spread"]
    assert h["why"] == (
        "load average 3.00 on 2 cores (1.50 per core, above 1.25); "
        "1 of 1 timings spread wide between repeats (IQR/median above 50%; a: 150%)"
    )


def test_line_of_a_loaded_host_carries_its_why():
    h = host.assess(3.0, 2)
    assert host.line(h) == (
        "host loaded: load average 3.00 on 2 cores (1.50 per core, above 1.25). "
        "Timings and rankings may be wrong: measure again on a quiet machine"
    )


def test_read_load_takes_the_one_minute_average(monkeypatch):
    monkeypatch.setattr(host.os, "getloadavg", lambda: (3.5, 2.0, 1.0))
    monkeypatch.setattr(host.os, "cpu_count", lambda: 6)
    assert host.read_load() == (3.5, 6)

    def no_load() -> tuple[float, float, float]:
        raise OSError("unavailable")

    monkeypatch.setattr(host.os, "getloadavg", no_load)
    load, cores = host.read_load()
    assert load is None and cores == 6


def test_timings_of_skips_results_without_a_host_time_or_with_a_zero_median():
    from types import SimpleNamespace

    from attnscope.core.types import Timing

    def t(median: float) -> Timing:
        return Timing(median_us=median, p25_us=median, p75_us=median, min_us=median, num_samples=5, method="m")

    rows = [SimpleNamespace(variant="bare"), SimpleNamespace(variant="z", cpu_time=t(0.0))]
    rows.append(SimpleNamespace(variant="half", cpu_time=t(0.5)))
    assert host.timings_of(rows) == [("half", [0.5, 0.5, 0.5])]
