"""The ranks of one job (analyze of a directory of per-rank traces) are parts of one run, not implementations to
choose between: no rank is recommended as "best for this case" and no rank is called slower than another as
advice; their spread is the document's ``overall``.  Traces numbered by their order on the command line (ranks
not known) may be different programs, and stay compared.  Hand-made rows: rank1 takes 100 µs, rank0 300 µs
(3× by hand), each with its own kernel so that neither is "the same implementation" as the other."""

from __future__ import annotations

from typing import Any

from attnscope.analysis.annotate import annotate


def row(variant: str, med: float, kernel: str) -> dict[str, Any]:
    case = {"batch": 1, "heads": 8, "seq_q": 128, "head_dim": 64, "dtype": "bf16", "causal": True}
    case |= {"kv_heads": None, "seq_kv": None, "device": "cpu", "mask": None, "softcap": None, "alibi": False}
    t = {"median_us": med, "p25_us": med * 0.99, "p75_us": med * 1.01, "noisy": False, "method": "wall clock"}
    return {
        "variant": variant,
        "case": case | {"mode": "fwd"},
        "mode": "fwd",
        "status": "ok",
        "numerics_ok": True,
        "kernels": [{"name": kernel, "category": "attention", "duration_us": med}],
        "gpu_time_us": None,
        "gpu_time": None,
        "cpu_time_us": med,
        "cpu_time": t,
        "device_kind": "cpu",
    }


def doc(ranks_known: bool) -> dict[str, Any]:
    rows = [row("rank0", 300.0, "flash_fwd_a"), row("rank1", 100.0, "flash_fwd_b")]
    return {"results": rows, "overall": {"num_ranks": 2, "ranks_known": ranks_known, "per_rank": []}}


def _ids(d: dict[str, Any]) -> set[str]:
    return {i["id"] for r in d["results"] for i in r["insights"]}


def test_ranks_of_one_job_name_no_best() -> None:
    d = annotate(doc(ranks_known=True))
    assert d["recommendation"] is None
    assert "slower_than_best" not in _ids(d)


def test_traces_numbered_by_position_are_still_compared() -> None:
    d = annotate(doc(ranks_known=False))
    assert d["recommendation"]["best"] == "rank1"  # 100 µs < 300 µs
    assert "slower_than_best" in _ids(d)
