"""A mask that keeps every key is measured, advised on and reported as the plain call (issue 19)."""

from __future__ import annotations

import json

import pytest

from attnscope.api.running import plain_call
from attnscope.cli.main import main
from attnscope.core.types import Case


def test_lower_right_causal_at_one_query_is_the_plain_call():
    case, same = plain_call(Case(2, 4, 1, 8, "fp32", seq_kv=64, mask="causal_lower_right"))
    assert case.mask == "none" and case.seq_q == 1 and case.num_seq_kv == 64
    assert same is not None and same["asked"] == "causal_lower_right" and same["mask"] == "none"


def test_alibi_keeps_the_alignment():
    # ALiBi's bias is a function of (key - query position): the queries stay where the mask put them
    case, same = plain_call(Case(2, 4, 1, 8, "fp32", seq_kv=64, mask="causal_lower_right", alibi=True))
    assert case.mask == "none@lower_right" and case.mask_spec.offset(1, 64) == 63
    assert same is not None and same["mask"] == "none@lower_right"


@pytest.mark.parametrize("mask", ["causal_lower_right@lower_right", "sliding:3@lower_right", "none"])
def test_masks_that_hide_a_key_are_measured_as_asked(mask):
    case = Case(2, 4, 2, 8, "fp32", seq_kv=4, mask=mask)
    assert plain_call(case) == (case, None)


def test_run_measures_the_plain_call_and_says_so(tmp_path, capsys):
    pytest.importorskip("torch")
    out = tmp_path / "run.json"
    argv = ["run", "--device", "cpu", "--batch", "1", "--heads", "2", "--seq", "1", "--seq-kv", "64"]
    argv += ["--head-dim", "8", "--dtype", "fp32", "--mask", "causal_lower_right", "--variants", "naive,sdpa_default"]
    assert main([*argv, "--budget", "0.01", "--no-peak", "--json", str(out)]) == 0
    doc = json.loads(out.read_text())
    assert doc["equivalent_case"]["asked"] == "causal_lower_right"
    assert doc["case"]["mask"] == "none"
    assert all(r["case"]["mask"] == "none" for r in doc["results"])
    # the FLOPs are the plain call's: 4·H·D·Sk for one query
    assert {r["flops"] for r in doc["results"]} == {4 * 2 * 8 * 64}
    printed = " ".join(capsys.readouterr().out.split())
    assert "mask causal_lower_right keeps every key" in printed
    assert "measured and advised as the plain call (mask none)" in printed
