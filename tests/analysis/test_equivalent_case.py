"""A mask that keeps every key is the plain call: recognised, said, and never advised to be pinned."""

from __future__ import annotations

from typing import Any

import pytest

from attnscope.analysis.equivalent import equivalent_case
from attnscope.api import analyze, annotate
from attnscope.document.schema import result_to_dict
from attnscope.variants.sdpa_why import causal_bias_choice
from tests.rawtrace import H200


def _case(mask: str, sq: int, sk: int, batch: int = 2) -> dict[str, Any]:
    return {"batch": batch, "heads": 4, "seq_q": sq, "seq_kv": sk, "head_dim": 8, "mask": mask}


@pytest.mark.parametrize(
    "case",
    [
        _case("causal_lower_right", 1, 8192),  # one query, lower-right: it sees keys 0..8191
        _case("padding:16,16", 16, 16),  # both sequences keep all 16 keys
        _case("sliding:16@lower_right", 1, 16),  # one query, window 16 over 16 keys
    ],
)
def test_masks_keeping_every_key_are_the_plain_call(case: dict[str, Any]) -> None:
    got = equivalent_case(case)
    assert got is not None and got["mask"] == "none"


@pytest.mark.parametrize(
    "case",
    [
        _case("causal_lower_right", 2, 8192),  # the first of two queries misses the last key
        _case("padding:16,15", 16, 16),  # one key hidden for the second sequence
        _case("sliding:15@lower_right", 1, 16),  # the window misses key 0
        _case("none", 4, 4),  # no mask: nothing to be equivalent to
    ],
)
def test_masks_that_hide_something_are_not(case: dict[str, Any]) -> None:
    assert equivalent_case(case) is None


def _why(flash: bool, efficient: bool) -> dict[str, Any]:
    checks = [
        {"backend": "cudnn", "usable": True, "reasons": []},
        {"backend": "flash", "usable": flash, "reasons": []},
        {"backend": "efficient", "usable": efficient, "reasons": []},
    ]
    return {"chosen": "cudnn", "order": ["cudnn", "flash", "efficient", "math"], "checks": checks}


def test_causal_bias_runs_flash_then_efficient_else_a_materialised_mask() -> None:
    # torch's plain choice is cudnn on sm90, but a CausalBias asks flash first (what ran on the H200 decode)
    assert causal_bias_choice(_why(True, True))["chosen"] == "flash"
    assert causal_bias_choice(_why(False, True))["chosen"] == "efficient"
    got = causal_bias_choice(_why(False, False))
    assert got["chosen"] == "cudnn" and got["materialised_mask"] is True


def test_h200_decode_says_the_equivalent_case_and_pins_nothing() -> None:
    row = result_to_dict(analyze(H200 / "decode" / "sdpa_default.json", variant="sdpa_default"))
    doc = annotate({"results": [row]})
    assert doc["equivalent_case"]["mask"] == "none"
    (i,) = [i for i in doc["results"][0]["insights"] if i["id"] == "sdpa_choice"]
    assert "sdpa_kernel" not in i["advice"] and i["advice"].startswith("pass no mask")
