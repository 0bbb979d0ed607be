"""Compiled flex rows that ran eager flex, read from the real H200 sweep (docs/results/raw/h200_sweep.jsonl)."""

from __future__ import annotations

import json
from pathlib import Path

from attnscope.analysis.compare import ranked
from attnscope.analysis.compiled import fell_back_to_eager
from attnscope.analysis.insights_masks import compiled_fallback

SWEEP = Path(__file__).resolve().parents[1] / "docs/results/raw/h200_sweep.jsonl"


def _rows() -> list[dict]:
    return [json.loads(line) for line in SWEEP.read_text().splitlines() if line.strip()]


def test_fallen_back_rows_are_exactly_those_without_a_triton_kernel():
    rows = [r for r in _rows() if r["variant"] == "flex_compiled"]

    # the test's own reading of the raw rows: compute kernels, and whether any is Inductor's (triton_*)
    def has_triton(r):
        return any(k["name"].startswith("triton_") for k in r["kernels"] if k["category"] not in ("memcpy", "memset"))

    eager = [r for r in rows if not has_triton(r)]
    assert 0 < len(eager) < len(rows)  # both kinds exist in this sweep
    assert [r for r in rows if fell_back_to_eager(r)] == eager
    # the fallen-back rows are eager flex's many aten kernels; the compiled ones 1 to 8 generated kernels
    assert min(len(r["kernels"]) for r in eager) > 8
    assert max(len(r["kernels"]) for r in rows if has_triton(r)) <= 8
    other = [r for r in _rows() if r["variant"] != "flex_compiled"]
    assert not any(fell_back_to_eager(r) for r in other)  # sdpa, naive: never


def test_the_insight_and_the_ranking_leave_the_eager_row_out():
    rows = _rows()
    r = next(r for r in rows if r["variant"] == "flex_compiled" and fell_back_to_eager(r))
    [i] = compiled_fallback(r)
    n = len([k for k in r["kernels"] if k["category"] not in ("memcpy", "memset")])
    assert i.severity == "warning" and f"ran {n} kernel(s)" in i.message and i.evidence["num_kernels"] == n
    same_case = [x for x in rows if x["case"] == r["case"]]
    assert r["variant"] not in {x[0]["variant"] for x in ranked(same_case)}
    assert {"sdpa_cudnn", "sdpa_flash"} <= {x[0]["variant"] for x in ranked(same_case)}
    # on a CPU there is nothing to read (Inductor's C++ is not in the trace): never flagged
    assert fell_back_to_eager({**r, "device_kind": "cpu", "case": {**r["case"], "device": "cpu"}}) is None
