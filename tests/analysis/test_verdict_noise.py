"""Verdicts inside the noise are "too close to call", never a hit or a miss; --strict fails on clear misses only.
Bands are worked by hand from quartiles and the noise floor."""

from __future__ import annotations

import pytest

from attnscope.analysis.predict import check_predictions, judge, noise_band
from attnscope.api.guesses import strict_failure
from attnscope.core.types import Prediction


@pytest.mark.parametrize(
    ("expected", "kind", "band", "outcome"),
    [
        ([100, 200], "gpu_us", (140.0, 160.0), "hit"),
        ([100, 200], "gpu_us", (90.0, 110.0), "close"),
        ([100, 200], "gpu_us", (190.0, 210.0), "close"),
        ([100, 200], "gpu_us", (210.0, 220.0), "miss"),
        ([100, 200], "gpu_us", (50.0, 99.0), "miss"),
        ({"variant": "x", "by": 2.0}, "faster_than", (2.1, 2.5), "hit"),
        ({"variant": "x", "by": 2.0}, "faster_than", (1.9, 2.2), "close"),
        ({"variant": "x", "by": 2.0}, "faster_than", (1.5, 1.9), "miss"),
        ({"variant": "x", "by": [2.0, 3.0]}, "slower_than", (2.5, 3.5), "close"),
        ({"variant": "x", "by": [2.0, 3.0]}, "slower_than", (3.1, 3.5), "miss"),
    ],
)
def test_judge(expected, kind, band, outcome) -> None:
    assert judge(expected, kind, band) == outcome


def _r(name: str, median: float, p25: float, p75: float) -> dict:
    t = {"median_us": median, "p25_us": p25, "p75_us": p75}
    return {"variant": name, "status": "ok", "device_kind": "cpu", "cpu_time_us": median, "cpu_time": t}


def test_ratio_band_from_both_quartiles_and_the_cpu_floor() -> None:
    mine, theirs = _r("a", 100.0, 95.0, 105.0), _r("b", 300.0, 200.0, 330.0)
    # mine: quartiles inside ±10% → 100/1.1 = 90.909 … 110; theirs: 200 … 330 (wider than ±10%)
    lo, hi = noise_band("faster_than", {"variant": "b", "by": 2.0}, mine, {"a": mine, "b": theirs})
    assert lo == pytest.approx(200 / 110) and hi == pytest.approx(330 / (100 / 1.1))


def test_strict_fails_on_a_clear_miss_only() -> None:
    mine, theirs = _r("a", 100.0, 95.0, 105.0), _r("b", 300.0, 200.0, 330.0)
    res = [dict(mine, insights=[]), dict(theirs, insights=[])]
    close = check_predictions([Prediction("a", "faster_than", {"variant": "b", "by": 2.0})], res)
    clear = check_predictions([Prediction("a", "faster_than", {"variant": "b", "by": 4.0})], res)
    assert close[0].outcome == "close" and "too close to call" in (close[0].explanation or "")
    assert clear[0].outcome == "miss"  # 330 / 90.9 = 3.63 < 4: the whole band misses
    doc_close = {"verdicts": [{"outcome": close[0].outcome}]}
    doc_miss = {"verdicts": [{"outcome": "miss"}, {"outcome": "close"}]}
    assert strict_failure(doc_close) is None
    assert "1 clear miss" in (strict_failure(doc_miss) or "")
