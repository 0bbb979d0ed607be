"""DDP over gloo (tests/data/ranks_ddp_h100: two ranks on one H100): the collectives run on the CPU, so the trace
holds no communication kernel; analyze says so, with the collectives' host time and the memcpys that stage them.

Every expected number is read from the raw trace here with gzip and json, not through attnscope's reader: the
``gloo:<op>`` user annotations (count, summed duration, the union of their spans), and the memcpys whose launching
runtime call lies inside a gloo range on the same thread or inside a ``c10d::`` op on its thread.
"""

from __future__ import annotations

import gzip
import json
from collections import Counter, defaultdict
from functools import cache
from pathlib import Path
from typing import Any

import pytest

from attnscope.api import analyze
from attnscope.document.schema import result_to_dict

DDP = Path(__file__).resolve().parents[2] / "data" / "ranks_ddp_h100"


@cache
def _raw(rank: int) -> dict[str, Any]:
    with gzip.open(DDP / f"rank{rank}.json.gz", "rt") as f:
        return json.load(f)  # type: ignore[no-any-return]


def _union(spans: list[tuple[float, float]]) -> float:
    total, end, start = 0.0, -1.0, 0.0
    for s, e in sorted(spans):
        if s > end:
            total += max(0.0, end - start) if end >= 0 else 0.0
            start, end = s, e
        else:
            end = max(end, e)
    return total + (end - start)


def _expected(rank: int) -> dict[str, Any]:
    d = _raw(rank)
    ev = d["traceEvents"]
    gloo = [e for e in ev if e.get("cat") == "user_annotation" and e["name"].startswith("gloo:")]
    ops: dict[str, list[float]] = defaultdict(lambda: [0, 0.0])
    for e in gloo:
        ops[e["name"][5:]][0] += 1
        ops[e["name"][5:]][1] += e["dur"]
    cpu = [e for e in ev if e.get("cat") == "cpu_op"]
    c10d = [e for e in cpu if e["name"].startswith("c10d::")]
    runtime = {e["args"]["correlation"]: e for e in ev if e.get("cat") == "cuda_runtime" and "correlation" in e["args"]}

    def within(spans: list[dict[str, Any]], r: dict[str, Any]) -> bool:
        return any(s["tid"] == r["tid"] and s["ts"] <= r["ts"] <= s["ts"] + s["dur"] for s in spans)

    staged: Counter[str] = Counter()
    staged_us = 0.0
    for m in (e for e in ev if e.get("cat") == "gpu_memcpy"):
        r = runtime[m["args"]["correlation"]]
        if within(gloo, r) or within(c10d, r):
            staged[m["name"]] += 1
            staged_us += m["dur"]
    span = max(e["ts"] + e["dur"] for e in cpu) - min(e["ts"] for e in cpu)
    memcpy_us = sum(e["dur"] for e in ev if e.get("cat") == "gpu_memcpy")
    return {
        "backend": d["distributedInfo"]["backend"],
        "ops": {k: (int(n), us) for k, (n, us) in ops.items()},
        "in_flight": _union([(e["ts"], e["ts"] + e["dur"]) for e in gloo]),
        "span": span,
        "staged": staged,
        "staged_us": staged_us,
        "memcpy_us": memcpy_us,
        "kernels_named_comm": sum(
            1 for e in ev if e.get("cat") == "kernel" and any(w in e["name"].lower() for w in ("nccl", "allreduce"))
        ),
    }


@cache
def _row(rank: int) -> dict[str, Any]:
    return result_to_dict(analyze(DDP / f"rank{rank}.json.gz"))


@pytest.mark.parametrize("rank", [0, 1])
def test_gloo_collectives_are_read_from_the_host(rank: int) -> None:
    want = _expected(rank)
    got = _row(rank)["trace_summary"]["cpu_collectives"]
    assert want["backend"] == "gloo" and want["kernels_named_comm"] == 0  # nothing on the device says "comm."
    assert got["backend"] == "gloo" and got["runs_on"] == "cpu" and got["backend_source"] == "distributedInfo"
    assert {o["op"]: (o["count"], pytest.approx(o["host_us"], abs=0.01)) for o in got["ops"]} == want["ops"]
    assert got["in_flight_us"] == pytest.approx(want["in_flight"], abs=0.01)
    assert got["in_flight_us"] < got["host_us_summed"]  # the worker threads' collectives overlap
    assert got["in_flight_pct"] == pytest.approx(100 * want["in_flight"] / want["span"], abs=0.01)
    copies = got["device_copies"]
    assert {x["name"]: x["count"] for x in copies["by_name"]} == dict(want["staged"])
    assert copies["time_us"] == pytest.approx(want["staged_us"], abs=0.01)
    assert copies["memcpy_share_pct"] == pytest.approx(100 * want["staged_us"] / want["memcpy_us"], abs=0.01)


def test_the_staging_copies_are_one_out_and_one_back_per_collective() -> None:
    """Rank 0 roots the 5 broadcasts: it copies out for all 45 collectives; rank 1 receives them (no copy out)."""
    for rank, out in ((0, 45), (1, 40)):
        want = _expected(rank)
        n = sum(c for c, _ in want["ops"].values())
        assert n == 45
        assert want["staged"] == {"Memcpy HtoD (Pinned -> Device)": 45, "Memcpy DtoH (Device -> Pinned)": out}


def test_the_communication_category_stays_the_devices() -> None:
    """The copies stay memcpy and communication stays 0% of GPU time: the CPU figure is given beside it."""
    s = _row(0)["trace_summary"]
    cats = {c["category"]: c for c in s["categories"]}
    assert cats["communication"]["time_us"] == 0
    raw_memcpy = [e for e in _raw(0)["traceEvents"] if e.get("cat") == "gpu_memcpy"]
    assert cats["memcpy"]["num_kernels"] == len(raw_memcpy)


def test_analyze_of_both_ranks_says_gloo_on_the_cpu(tmp_path: Path) -> None:
    import contextlib
    import io

    from attnscope.cli.main import main

    out = io.StringIO()
    doc = tmp_path / "d.json"
    paths = [str(DDP / f"rank{r}.json.gz") for r in (0, 1)]
    with contextlib.redirect_stdout(out):
        assert main(["analyze", *paths, "--json", str(doc), "--jobs", "1"]) == 0
    text = " ".join(out.getvalue().split())
    pct0 = round(100 * _expected(0)["in_flight"] / _expected(0)["span"], 1)
    assert "0.0% GPU; gloo on CPU" in text and f"{pct0:.1f}%" in text
    assert "collectives: gloo runs them on the CPU (45 on 2 worker thread(s)" in text
    assert "counted as memcpy: 45× Memcpy HtoD (Pinned -> Device), 45× Memcpy DtoH (Device -> Pinned)" in text
    rows = json.loads(doc.read_text())["overall"]["per_rank"]
    assert [r["cpu_collectives"]["backend"] for r in rows] == ["gloo", "gloo"]
    assert [r["communication_share_pct"] for r in rows] == [0.0, 0.0]


def test_a_trace_without_gloo_has_no_cpu_collectives() -> None:
    h200 = Path(__file__).resolve().parents[2] / "data" / "h200" / "sdpa_flash.json"
    assert "cpu_collectives" not in (result_to_dict(analyze(h200))["trace_summary"] or {})


def test_the_analyze_page_says_gloo_runs_on_the_cpu(tmp_path: Path) -> None:
    from attnscope.cli.main import main

    out = tmp_path / "a.html"
    assert main(["analyze", str(DDP / "rank0.json.gz"), "--html", str(out), "--jobs", "1"]) == 0
    part = out.read_text().split("<h4>Collectives on the CPU</h4>", 1)[1].split("<h4>", 1)[0]
    n = sum(c for c, _ in _expected(0)["ops"].values())
    assert f"collectives: gloo runs them on the CPU ({n} on 2 worker thread(s)" in part
    assert "45× Memcpy HtoD (Pinned -&gt; Device)" in part or "45× Memcpy HtoD (Pinned -> Device)" in part


def _synthetic(tmp_path: Path, backend_config: str) -> dict[str, Any]:
    """One c10d all-reduce that launches a DtoH copy (op at 0..50 µs, its copy 10 µs), then a gloo:all_reduce range
    of 100 µs on another thread launching an HtoD copy (8 µs): by hand, 2 staged copies under gloo, the HtoD alone
    where CUDA tensors go through NCCL (the c10d op's copy is then not gloo's)."""
    from tests import synth

    gloo = {"ph": "X", "cat": "user_annotation", "name": "gloo:all_reduce", "pid": synth.PID, "tid": 7, "ts": 60.0,
            "dur": 100.0, "args": {}}  # fmt: skip
    events = [
        synth.op("c10d::allreduce_", 0.0, 50.0, 1),
        synth.op("aten::copy_", 5.0, 20.0, 2),
        synth.launch(10.0, 11, 2, name="cudaMemcpyAsync"),
        synth.kernel("Memcpy DtoH (Device -> Pinned)", 30.0, 10.0, 11, cat="gpu_memcpy"),
        gloo,
        synth.op("aten::copy_", 100.0, 20.0, 3, tid=7),
        synth.launch(105.0, 12, 3, tid=7, name="cudaMemcpyAsync"),
        synth.kernel("Memcpy HtoD (Pinned -> Device)", 200.0, 8.0, 12, cat="gpu_memcpy"),
    ]
    info = {"backend": "nccl", "rank": 0, "pg_config": [{"backend_config": backend_config}]}
    path = synth.write_kineto(tmp_path / "t.json", synth.doc(events, distributedInfo=info))
    return result_to_dict(analyze(path))["trace_summary"]["cpu_collectives"]


def test_c10d_copies_count_as_staging_only_where_cuda_goes_through_gloo(tmp_path: Path) -> None:
    both = _synthetic(tmp_path, "cpu:gloo,cuda:gloo")
    assert {x["name"]: x["count"] for x in both["device_copies"]["by_name"]} == {
        "Memcpy DtoH (Device -> Pinned)": 1,
        "Memcpy HtoD (Pinned -> Device)": 1,
    }
    assert both["device_copies"]["time_us"] == pytest.approx(18.0)
    assert both["in_flight_us"] == pytest.approx(100.0) and both["backend_source"] == "gloo:"
    nccl = _synthetic(tmp_path, "cpu:gloo,cuda:nccl")
    assert {x["name"]: x["count"] for x in nccl["device_copies"]["by_name"]} == {"Memcpy HtoD (Pinned -> Device)": 1}


def _ann(name: str, tid: int, ts: float, dur: float) -> dict[str, Any]:
    from tests import synth

    return {"ph": "X", "cat": "user_annotation", "name": name, "pid": synth.PID, "tid": tid, "ts": ts, "dur": dur}


def _collectives(events: list[dict[str, Any]], window: Any, host_span: float | None) -> dict[str, Any] | None:
    """cpu_collectives on a hand-made trace, its ops attributed as analyze does."""
    from attnscope.analysis.fingerprint.attribution import attribute, build_op_tree
    from attnscope.analysis.fingerprint.collectives import cpu_collectives
    from attnscope.trace import trace_from_doc
    from tests import synth

    tr = trace_from_doc(synth.doc(events))
    tree = build_op_tree(tr.cpu_ops)
    assert tree.ops[0].name.startswith("c10d::")  # the op of index 0 launches a staging copy
    return cpu_collectives(tr, attribute(tree, tr.runtime, tr.gpu), window, host_span)


def _hand_made() -> list[dict[str, Any]]:
    """gloo ranges: all_reduce on thread 7 at 60-160.0004, broadcast on 8 at 120-180, barriers on 9 at 95-100,
    170-175 and 500-505.0004.  Copies: a DtoH of 10.1234 µs (no byte count) launched by the c10d op itself (0-50, the
    first op), two HtoD of 8.1234 (1,000 B) and 8 µs (24 B) launched on thread 7 inside the all_reduce range, and a
    DtoH of 4 µs (7 B) launched by a plain copy_ outside any of them (not staging)."""
    from tests import synth

    return [
        synth.op("c10d::allreduce_", 0.0, 50.0, 1),
        synth.launch(5.0, 11, 1, name="cudaMemcpyAsync"),
        synth.kernel("Memcpy DtoH (Device -> Pinned)", 30.0, 10.1234, 11, cat="gpu_memcpy"),
        _ann("gloo:all_reduce", 7, 60.0, 100.0004),
        _ann("gloo:broadcast", 8, 120.0, 60.0),
        _ann("gloo:barrier", 9, 95.0, 5.0),
        _ann("gloo:barrier", 9, 170.0, 5.0),
        _ann("gloo:barrier", 9, 500.0, 5.0004),
        synth.op("aten::copy_", 100.0, 20.0, 3, tid=7),
        synth.launch(105.0, 12, 3, tid=7, name="cudaMemcpyAsync"),
        synth.kernel("Memcpy HtoD (Pinned -> Device)", 200.0, 8.1234, 12, cat="gpu_memcpy", bytes=1000),
        synth.op("aten::copy_", 130.0, 10.0, 4, tid=7),
        synth.launch(132.0, 13, 4, tid=7, name="cudaMemcpyAsync"),
        synth.kernel("Memcpy HtoD (Pinned -> Device)", 220.0, 8.0, 13, cat="gpu_memcpy", bytes=24),
        synth.op("aten::copy_", 300.0, 10.0, 5),
        synth.launch(302.0, 15, 5, name="cudaMemcpyAsync"),
        synth.kernel("Memcpy DtoH (Device -> Pinned)", 400.0, 4.0, 15, cat="gpu_memcpy", bytes=7),
    ]


# staged: DtoH 10.1234 µs, HtoD 8.1234 + 8 = 16.1234 µs (1,000 + 24 B); all memcpys 26.2468 + 4 = 30.2468 µs
COPIES = {
    "num": 3,
    "time_us": 26.247,
    "bytes": 1024,
    "memcpy_share_pct": round(100 * 26.2468 / 30.2468, 2),  # 86.78
    "by_name": [
        {"name": "Memcpy HtoD (Pinned -> Device)", "count": 2, "time_us": 16.123},
        {"name": "Memcpy DtoH (Device -> Pinned)", "count": 1, "time_us": 10.123},
    ],
}


def test_cpu_collectives_of_a_hand_made_trace_over_the_whole_trace():
    """Every range: 5 on 3 threads; per op, most host time first (all_reduce 100.0004, broadcast 60, barrier 15.0004,
    shown to 3 decimals); summed 175.0008; in flight, the union [60, 180] (the barriers at 95 and 170 inside it) and
    [500, 505.0004]: 125.0004; its share of a host span of 1,000.1234 µs."""
    got = _collectives(_hand_made(), None, 1000.1234)
    assert got is not None
    assert {k: v for k, v in got.items() if k != "timing"} == {
        "backend": "gloo",
        "backend_source": "gloo:",
        "runs_on": "cpu",
        "num": 5,
        "threads": 3,
        "ops": [
            {"op": "all_reduce", "count": 1, "host_us": 100.0},
            {"op": "broadcast", "count": 1, "host_us": 60.0},
            {"op": "barrier", "count": 3, "host_us": 15.0},
        ],
        "host_us_summed": 175.001,
        "in_flight_us": 125.0,
        "host_span_us": 1000.123,
        "in_flight_pct": round(100 * 125.0004 / 1000.1234, 2),  # 12.5
        "device_copies": COPIES,
    }
    none = _collectives(_hand_made(), None, None)
    assert none is not None and none["host_span_us"] is None and none["in_flight_pct"] is None


def test_cpu_collectives_within_a_window_take_the_ranges_that_overlap_it_clipped_to_it():
    """Window 100-170: all_reduce (60-160.0004) and broadcast (120-180) overlap it; the barrier ending at 100 and the
    one starting at 170 only touch it, the one at 500 lies after it: 2 ranges.  In flight inside the window: [100,
    160.0004] ∪ [120, 170] = 70.  The copies inside the all_reduce range and the c10d op are staging as before."""
    got = _collectives(_hand_made(), (100.0, 170.0), 1000.1234)
    assert got is not None
    assert (got["num"], got["threads"], got["host_us_summed"], got["in_flight_us"]) == (2, 2, 160.0, 70.0)
    assert [o["op"] for o in got["ops"]] == ["all_reduce", "broadcast"]
    assert got["device_copies"] == COPIES


@pytest.mark.parametrize(("memcpy_us", "share"), [(None, None), (0.5, 100.0)])
def test_the_staging_share_of_memcpy_time_needs_memcpy_time(memcpy_us, share):
    """One gloo range and a c10d op; with no memcpy there is no share (not a division by zero), with one staging copy
    of 0.5 µs it is all of the memcpy time."""
    from tests import synth

    events = [synth.op("c10d::allreduce_", 0.0, 50.0, 1), _ann("gloo:all_reduce", 7, 60.0, 10.0)]
    if memcpy_us is not None:
        events += [
            synth.launch(5.0, 11, 1, name="cudaMemcpyAsync"),
            synth.kernel("Memcpy DtoH (Device -> Pinned)", 30.0, memcpy_us, 11, cat="gpu_memcpy"),
        ]
    got = _collectives(events, None, None)
    assert got is not None and got["device_copies"]["memcpy_share_pct"] == share
