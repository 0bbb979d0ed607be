"""annotate, the one entry point that adds explanations to a document: the recommendation, the
predictions with their verdicts, and the family/backend of rows written before variants declared
them.  The rows are a real CPU run's (tests/data/cpu/run_all.json, written before rows carried
family/backend) with timings set by hand, so every expected value below is worked out here."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from attnscope.analysis.annotate import verdict_counts
from attnscope.api import annotate
from attnscope.core.types import Prediction

RUN_ALL = json.loads((Path(__file__).parents[1] / "data" / "cpu" / "run_all.json").read_text())


def _row(variant: str, median: float, p25: float, p75: float) -> dict[str, Any]:
    r = copy.deepcopy(next(r for r in RUN_ALL["results"] if r["variant"] == variant))
    for k in ("insights", "insights_not_checked"):
        r.pop(k, None)
    r["cpu_time"] = dict(r["cpu_time"], median_us=median, p25_us=p25, p75_us=p75, min_us=p25, noisy=False)
    r["cpu_time_us"] = median
    r["numerics_ok"] = True
    return r


def _doc() -> dict[str, Any]:
    # sdpa_flash 100 µs [98, 102], sdpa_math 250 µs [245, 255]: quartiles apart, flash is fused.
    return {
        "schema_version": 1,
        "results": [_row("sdpa_math", 250.0, 245.0, 255.0), _row("sdpa_flash", 100.0, 98.0, 102.0)],
    }


def test_the_fixture_rows_predate_declared_flags():
    assert all("family" not in r and "backend" not in r for r in RUN_ALL["results"])


def test_recommendation_is_the_fastest_row_with_its_margin():
    """sdpa_flash at 100 µs beats sdpa_math at 250 µs: margin 250 / 100 = 2.5, quartiles apart."""
    rec = annotate(_doc())["recommendation"]
    assert rec is not None
    assert (rec["best"], rec["best_us"], rec["runner_up"], rec["runner_up_us"]) == (
        "sdpa_flash",
        100.0,
        "sdpa_math",
        250.0,
    )
    assert rec["margin"] == pytest.approx(2.5)
    assert rec["within_noise"] is False


def test_no_recommendation_without_a_common_case():
    doc = _doc()
    doc["results"][1]["case"] = dict(doc["results"][1]["case"], seq_q=doc["results"][1]["case"]["seq_q"] * 2)
    out = annotate(doc)
    assert "recommendation" in out and out["recommendation"] is None


def test_rows_without_declared_flags_get_them_from_the_variant():
    """sdpa_flash is SDPA forced to its flash backend; sdpa_math to its math backend."""
    rows = {r["variant"]: r for r in annotate(_doc())["results"]}
    assert (rows["sdpa_flash"]["family"], rows["sdpa_flash"]["backend"]) == ("sdpa", "flash")
    assert (rows["sdpa_math"]["family"], rows["sdpa_math"]["backend"]) == ("sdpa", "math")


def test_declared_flags_are_kept_as_written():
    doc = _doc()
    doc["results"][0].update(family="custom", backend=None)
    row = annotate(doc)["results"][0]
    assert (row["family"], row["backend"]) == ("custom", None)


def test_an_unknown_variant_gets_no_flags():
    doc = _doc()
    doc["results"][0]["variant"] = "my_kernel"
    row = annotate(doc)["results"][0]
    assert "family" not in row and "backend" not in row


def test_annotate_leaves_its_input_alone():
    doc = _doc()
    before = copy.deepcopy(doc)
    annotate(doc, [Prediction("sdpa_flash", "cpu_us", [90, 110])])
    assert doc == before


def test_predictions_and_their_verdicts_are_written_as_plain_data():
    """100 µs measured; its band on a CPU is at least ±10 % (100 / 1.1 = 90.9 to 110): [80, 120] holds
    all of it (hit), [10, 20] none of it (miss)."""
    preds = [Prediction("sdpa_flash", "cpu_us", [80, 120]), Prediction("sdpa_flash", "cpu_us", [10, 20], note="n")]
    out = annotate(_doc(), preds)
    written = [
        {"variant": "sdpa_flash", "kind": "cpu_us", "expected": [80, 120], "note": None},
        {"variant": "sdpa_flash", "kind": "cpu_us", "expected": [10, 20], "note": "n"},
    ]
    assert out["predictions"] == written
    assert [v["prediction"] for v in out["verdicts"]] == written
    assert [v["outcome"] for v in out["verdicts"]] == ["hit", "miss"]
    assert verdict_counts(out) == {"hit": 1, "miss": 1, "close": 0, "unknown": 0}


def test_verdicts_are_counted_per_outcome():
    """Three predictions of sdpa_math's 250 µs (band 250 / 1.1 = 227.3 to 275): [200, 300] and
    [220, 280] hold it all (2 hits), [260, 400] only part of it (close)."""
    preds = [Prediction("sdpa_math", "cpu_us", e) for e in ([200, 300], [220, 280], [260, 400])]
    assert verdict_counts(annotate(_doc(), preds)) == {"hit": 2, "miss": 0, "close": 1, "unknown": 0}


def test_without_predictions_no_verdicts_are_written():
    out = annotate(_doc())
    assert "predictions" not in out and "verdicts" not in out
    assert verdict_counts(out) == {"hit": 0, "miss": 0, "close": 0, "unknown": 0}
