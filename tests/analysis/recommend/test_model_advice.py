"""Model-level advice and the recommendation per mode, on hand-made rows."""

from __future__ import annotations

from typing import Any

from attnscope.analysis.recommend.model_points import annotate_rows
from tests.analysis.recommend.model_rows import row as _row
from tests.analysis.recommend.model_rows import timing as _timing


def _kv(layer: str) -> list[dict[str, Any]]:
    c = {
        "op": "aten::reshape",
        "copy_op": "aten::copy_",
        "bytes": 4 * 1024 * 1024,
        "part": "repeat_kv",
        "backward": False,
    }
    return [{**c, "layer": layer}, {**c, "layer": layer}]


def test_switch_saving_and_repeat_kv_advice():
    eager = _row("eager", _timing(10_000, 9_900, 10_100), _kv("l.0") + _kv("l.1"))
    sdpa = _row("sdpa", _timing(8_000, 7_950, 8_050))
    recs = annotate_rows([eager, sdpa])
    ids = {i["id"]: i for i in eager["insights"]}
    # 10 000 − 8 000 = 2 000 µs = 2.00 ms, 20.0% of 10.00 ms
    assert "switching eager → sdpa saves 2.00 ms per step (20.0% of 10.00 ms" in ids["attention_share"]["advice"]
    kv = ids["repeat_kv_copy"]
    assert "2×4.0 MiB per layer per train step" in kv["message"] and "(4 copies in 2 layers, 16.0 MiB" in kv["message"]
    assert kv["advice"].startswith("sdpa with enable_gqa avoids it") and "sdpa made no repeat_kv copy" in kv["advice"]
    assert recs["train"]["best"] == "sdpa" and recs["train"]["margin"] == 1.25 and recs["train"]["tied"] == []


def test_ties_inside_the_noise_and_no_sdpa_advice_when_sdpa_did_not_run():
    eager = _row("eager", _timing(10_000, 9_000, 11_000), _kv("l.0"))
    flex = _row("flex_attention", _timing(9_800, 9_500, 10_500))
    sdpa = _row("sdpa", {}, status="skipped")
    recs = annotate_rows([eager, flex, sdpa])
    assert recs["train"]["best"] == "flex_attention" and recs["train"]["tied"] == ["eager"]
    assert "tied within the noise" in recs["train"]["text"]
    ids = {i["id"]: i for i in eager["insights"]}
    assert "within the noise" in ids["attention_share"]["advice"]
    assert "sdpa did not run for this model here" in ids["repeat_kv_copy"]["advice"]
    assert sdpa["insights"] == []


def test_eager_advice_does_not_promise_what_sdpa_did_not_do_in_this_run():
    eager = _row("eager", _timing(10_000, 9_900, 10_100), _kv("l.0"))
    sdpa = _row("sdpa", _timing(9_000, 8_950, 9_050), _kv("l.0"))  # an sdpa path without enable_gqa
    annotate_rows([eager, sdpa])
    advice = {i["id"]: i for i in eager["insights"]}["repeat_kv_copy"]["advice"]
    assert advice.startswith("sdpa repeated K and V too in this run") and "avoids it" not in advice
    mine = {i["id"]: i for i in sdpa["insights"]}["repeat_kv_copy"]["advice"]
    assert "instead of passing enable_gqa=True" in mine
