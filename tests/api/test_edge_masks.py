"""Edge masks are said, not refused: a prefix covering every key is the plain call, ``prefix:0`` (and a prefix
within the causal part) is plain causal, and a sliding window wider than every row's reach is plain causal,
whatever its size (``sliding:99999999999999999999`` once failed every variant with OverflowError)."""

from __future__ import annotations

import json

import pytest

from attnscope.api.running import plain_call
from attnscope.cli.main import main
from attnscope.core.types import Case

HUGE = 99999999999999999999  # past an int64: no tensor can hold it


def _keep(kind: str, n: int, sq: int, sk: int, lower_right: bool) -> list[list[bool]]:
    """The kept (query, key) entries, from the mask's definition in words (core/masks.py's docstring)."""
    off = sk - sq if lower_right else 0
    rows = []
    for i in range(sq):
        p = i + off  # the query's key position
        if kind == "causal":
            rows.append([j <= p for j in range(sk)])
        elif kind == "none":
            rows.append([True] * sk)
        elif kind == "sliding":  # the n most recent keys, itself included
            rows.append([p - n < j <= p for j in range(sk)])
        else:  # prefix: the first n keys, causal after
            rows.append([j < n or j <= p for j in range(sk)])
    return rows


@pytest.mark.parametrize(
    ("mask", "sq", "sk", "measured"),
    [
        ("prefix:8", 8, 8, "none"),
        ("prefix:9", 8, 8, "none"),
        (f"prefix:{HUGE}", 8, 8, "none"),
        ("prefix:40", 4, 16, "none"),  # every key, wherever the queries sit: no alignment to state
        ("prefix:0", 8, 8, "causal"),
        ("prefix:1", 8, 8, "causal"),
        ("prefix:0@lower_right", 4, 16, "causal_lower_right"),
        ("sliding:8", 8, 8, "causal"),
        (f"sliding:{HUGE}", 8, 8, "causal"),
        (f"sliding:{HUGE}@top_left", 4, 16, "causal@top_left"),
        ("sliding:16@lower_right", 4, 16, "causal_lower_right"),
    ],
)
def test_an_edge_mask_is_measured_as_the_plain_call_it_equals(mask, sq, sk, measured):
    case = Case(1, 2, sq, 8, "fp32", seq_kv=sk, mask=mask)  # accepted, not refused
    got, same = plain_call(case)
    assert got.mask == measured
    assert same is not None and same["asked"] == case.mask and same["mask"] == measured
    # the two kept sets are equal entry by entry, from the definitions (the huge numbers cut to the shapes)
    spec = parse_spec(mask)
    lower = spec[2] == "lower_right"
    kind = "none" if measured == "none" else "causal"
    assert _keep(spec[0], min(spec[1], sq + sk), sq, sk, lower) == _keep(kind, 0, sq, sk, lower)


def parse_spec(mask: str) -> tuple[str, int, str | None]:
    """'sliding:8@lower_right' → ('sliding', 8, 'lower_right'), read here without attnscope's parser."""
    body, _, align = mask.partition("@")
    kind, _, n = body.partition(":")
    return kind, int(n), align or None


@pytest.mark.parametrize(
    ("mask", "sq", "sk"), [("prefix:2", 8, 8), ("sliding:7", 8, 8), ("sliding:3@lower_right", 4, 16)]
)
def test_a_mask_that_hides_an_entry_is_measured_as_asked(mask, sq, sk):
    spec = parse_spec(mask)
    lower = spec[2] == "lower_right"
    assert _keep(spec[0], spec[1], sq, sk, lower) != _keep("causal", 0, sq, sk, lower)  # truly another mask
    case = Case(1, 2, sq, 8, "fp32", seq_kv=sk, mask=mask)
    assert plain_call(case) == (case, None)


def test_a_huge_window_fits_the_tensors_it_is_built_into():
    spec = Case(1, 2, 8, 8, "fp32", mask=f"sliding:{HUGE}").mask_spec
    assert spec.window == 16  # Sq + Sk: every row reaches back past key 0
    assert Case(1, 2, 8, 8, "fp32", mask=f"prefix:{HUGE}").mask_spec.prefix == 8


@pytest.mark.slow
def test_run_measures_a_huge_window_as_plain_causal_and_says_so(tmp_path, capsys):
    pytest.importorskip("torch")
    out = tmp_path / "run.json"
    argv = ["run", "--device", "cpu", "--batch", "1", "--heads", "2", "--seq", "16", "--head-dim", "8"]
    argv += ["--dtype", "fp32", "--mask", f"sliding:{HUGE}", "--variants", "naive,sdpa_math"]
    assert main([*argv, "--budget", "0.01", "--no-peak", "--json", str(out)]) == 0
    doc = json.loads(out.read_text())
    assert doc["equivalent_case"]["asked"] == f"sliding:{HUGE}" and doc["case"]["mask"] == "causal"
    assert [r["status"] for r in doc["results"]] == ["ok", "ok"]
    # causal FLOPs: 4·H·D·(kept) with kept = 16·17/2 = 136 for one head
    assert {r["flops"] for r in doc["results"]} == {4 * 2 * 8 * 136}
    printed = " ".join(capsys.readouterr().out.split())
    assert f"mask sliding:{HUGE}: a window of" in printed and "(mask causal)" in printed


@pytest.mark.slow
def test_a_sweep_measures_a_huge_window_without_overflow(tmp_path):
    pytest.importorskip("torch")
    from attnscope.api import sweep

    cases = [Case(1, 2, 16, 8, "fp32", mask=f"sliding:{HUGE}"), Case(1, 2, 16, 8, "fp32", mask="prefix:0")]
    rows = sweep(cases, "naive", out=tmp_path / "s.jsonl", executor="inline", timing_budget_s=0.01, measure_peak=False)
    assert [r.status for r in rows] == ["ok", "ok"], [r.reason for r in rows]
