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
