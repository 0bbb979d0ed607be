"""Decode over a growing cache: the per-step series, the step and rebuild ranges in the loop's trace, the summary's
arithmetic, and a mask planned for a bucket serving every length in it (what a graph replay relies on)."""

from __future__ import annotations

import gzip
import json

import pytest

from attnscope.cli.main import main
from attnscope.execute.serve import bucket_of, summarise


def test_summary_arithmetic_by_hand():
    """Eager: plan 1 ms on each of 4 steps, steps of 5 ms → 1 ms per step, 1,000 ms per 1,000 steps.
    Graph: one capture of 10 ms, replays of 2 ms → capture 10/4 = 2.5 ms per step, 2,500 per 1,000 steps;
    a step saves 5 - 2 = 3 ms, so a capture pays after 10 / 3 = 3.33 steps; with the capture a step costs
    (10 + 4·2) / 4 = 4.5 ms < 5: graphs pay."""
    eager = [{"plan_ms": 1.0, "call_ms": 4.0, "step_ms": 5.0, "repeat_ms": 1.5}] * 4
    graph = [{"rebuild_ms": 10.0, "replay_ms": 2.0}] + [{"rebuild_ms": 0.0, "replay_ms": 2.0}] * 3
    s = summarise(eager, graph, "create_block_mask")
    assert s["eager"]["rebuild_ms_per_step"] == 1.0 and s["eager"]["rebuild_ms_per_1000_steps"] == 1000.0
    assert s["eager"]["rebuilds"] == 4
    # a second call of each step's shape took 1.5 ms: 4 - 1.5 = 2.5 ms of each first call is work a new shape costs
    assert s["eager"]["in_call_rebuild_ms_median"] == 2.5 and s["eager"]["in_call_rebuild_ms_per_1000_steps"] == 2500
    g = s["graph"]
    assert (g["captures"], g["capture_ms_per_step"], g["capture_ms_per_1000_steps"]) == (1, 2.5, 2500.0)
    assert g["saved_ms_per_step"] == 3.0 and g["break_even_steps_per_capture"] == pytest.approx(10 / 3)
    assert g["step_ms_with_captures"] == 4.5 and g["pays"] is True
    assert "once for the largest length" in s["advice"]
    # a capture that a bucket of 4 steps cannot pay back: 40 ms against 3 ms saved per step
    slow = [{"rebuild_ms": 40.0, "replay_ms": 2.0}] + [{"rebuild_ms": 0.0, "replay_ms": 2.0}] * 3
    assert summarise(eager, slow, "gather_index")["graph"]["pays"] is False


def test_a_plan_before_every_replay_counts_in_the_replayed_step():
    """Planned on the host before each replay (FlashInfer's graph wrappers), captured once at step 0 (its plan inside
    the capture: 0 in plan_ms).  Replays of 2 ms, plans of 1.5 ms on steps 1..3: plan median of [0, 1.5, 1.5, 1.5] =
    1.5, a replayed step 2 + 1.5 = 3.5 ms.  Against eager steps of 5 ms a step saves 1.5 ms, so a 10 ms capture pays
    back after 10 / 1.5 = 6.67 steps; over these 4 steps a step costs (10 + 4·2 + 3·1.5) / 4 = 5.625 ms > 5: graphs
    do not pay.  Against eager steps of 10 ms: saved 6.5 ms, back after 10 / 6.5 steps, 5.625 < 10: they pay."""
    eager = [{"plan_ms": 1.0, "call_ms": 4.0, "step_ms": 5.0, "repeat_ms": 4.0}] * 4
    graph = [{"rebuild_ms": 10.0, "replay_ms": 2.0, "plan_ms": 0.0}] + [
        {"rebuild_ms": 0.0, "replay_ms": 2.0, "plan_ms": 1.5}
    ] * 3
    g = summarise(eager, graph, "flashinfer_plan")["graph"]
    assert g["plan_ms_per_replay_median"] == 1.5 and g["captures"] == 1
    assert g["saved_ms_per_step"] == 1.5 and g["break_even_steps_per_capture"] == pytest.approx(10 / 1.5)
    assert g["step_ms_with_captures"] == 5.625 and g["pays"] is False
    slow_eager = [{**e, "step_ms": 10.0} for e in eager]
    g = summarise(slow_eager, graph, "flashinfer_plan")["graph"]
    assert g["saved_ms_per_step"] == 6.5 and g["break_even_steps_per_capture"] == pytest.approx(10 / 6.5)
    assert g["pays"] is True
    # a bucketed series has no plan per replay: its replayed step is the replay alone, as before
    plain = [{k: v for k, v in s.items() if k != "plan_ms"} for s in graph]
    assert summarise(eager, plain, "create_block_mask")["graph"]["plan_ms_per_replay_median"] is None


def test_bucket_rounds_up():
    assert [bucket_of(n, 256) for n in (1, 256, 257, 1000)] == [256, 256, 512, 1024]


torch = pytest.importorskip("torch")


@pytest.mark.parametrize("variant", ["paged_gather_sdpa", "paged_flex"])
@pytest.mark.parametrize("page", [16, 4, None])
def test_a_mask_planned_for_a_bucket_serves_every_length_in_it(variant, page):
    """Planned once for capacity max(L)+6, the call stays right as every sequence grows by up to 6 tokens: the
    lengths are read from the device tensor at call time (a graph of the call would replay them)."""
    from attnscope.core.cases import make_case
    from attnscope.measure.timing import TOLERANCE, relative_error
    from attnscope.variants.paged import make_server
    from attnscope.workloads.paged_cache import make_serving_inputs, serving_reference

    case = make_case("cpu", batch=3, heads=4, kv_heads=2, head_dim=16, seq_q=1, kv_lens="30,17,45", page_size=page)
    x = make_serving_inputs(case, seed=5, extra_steps=6)
    s = make_server(variant, case, x)
    s.plan(45 + 6)
    for grow in (0, 3, 6):
        x.cache.set_lengths([n + grow for n in case.kv_lengths])
        err, _ = relative_error(s.call(), serving_reference(case, x))
        assert err < TOLERANCE[case.dtype], (grow, err)


def _ranges(path, prefix):
    with gzip.open(path, "rt") as f:
        evs = json.load(f)["traceEvents"]
    return [e["name"] for e in evs if e.get("cat") == "user_annotation" and e["name"].startswith(prefix)]


@pytest.mark.parametrize("variant", ["paged_gather_sdpa", "paged_flex"])
def test_the_eager_loop_on_the_cpu(tmp_path, variant):
    from attnscope.core.cases import make_case
    from attnscope.execute.serve import decode_loop

    case = make_case("cpu", batch=2, heads=2, head_dim=16, seq_q=1, kv_lens="20,33", page_size=16)
    loop = decode_loop(case, variant, 5, trace_dir=tmp_path, trace_stem="x-")
    assert [len(loop["eager"]), loop["graph"]] == [5, None]
    assert "needs a CUDA device" in loop["graph_refused"]
    assert loop["kv_lengths_last"] == [24, 37]
    # a new shape every step: the per-shape work each time
    assert all(s["plan_ms"] > 0 and s["repeat_ms"] > 0 for s in loop["eager"])
    assert loop["summary"]["eager"]["rebuilds"] == 5
    assert loop["last_step_rel_error"] < 2e-2 and not loop["last_step_nonfinite"]
    trace = loop["traces"]["decode_loop_eager"]
    assert _ranges(trace, "attnscope.step[") == [f"attnscope.step[decode] {t}" for t in range(5)]
    assert len(_ranges(trace, "attnscope.rebuild[")) == 5
    found = loop["trace_rebuilds"]["decode_loop_eager"]
    assert (found["steps"], found["steps_with_rebuild"], found["kinds"]) == (5, 5, ["decode"])
    assert list(found["by_kind"]) == [
        {"paged_gather_sdpa": "gather_index", "paged_flex": "block_mask_from_table"}[variant]
    ]


def test_steps_refused_in_one_line_before_any_work(capsys):
    assert main(["run", "--device", "cpu", "--steps", "4"]) == 2
    assert "--steps grows a serving cache" in capsys.readouterr().err
    assert main(["run", "--device", "cpu", "--steps", "4", "--seq", "4", "--seq-kv", "64", "--page-size", "16"]) == 2
    assert "--seq 1" in capsys.readouterr().err
    assert main(["run", "--device", "cpu", "--seq", "1", "--kv-lens", "5,6"]) == 2
    assert "batch of 1" in capsys.readouterr().err


@pytest.mark.slow
def test_the_per_shape_note_points_to_steps_only_where_none_were_asked_for():
    """A paged row says its per-shape work and, without --steps, that run --steps measures the loop that redoes it;
    with --steps the loop is in the row, so the note points to it instead of asking for the flag again."""
    from attnscope.core.cases import make_case
    from attnscope.execute.job import Options
    from tests.inline import run

    case = make_case("cpu", batch=2, heads=2, kv_heads=1, head_dim=16, seq_q=1, kv_lens="24,40", page_size=16)
    notes = {}
    for steps in (0, 2):
        (r,) = run(case, "paged_gather_sdpa", Options(timing_budget_s=0.02, measure_peak=False, steps=steps)).results
        assert r.status == "ok", r.reason
        notes[steps] = [n for n in r.notes if n.startswith("per-shape work (gather_index) done once before timing: ")]
    assert len(notes[0]) == 1 and notes[0][0].endswith("; a decode loop redoes it per new shape (run --steps)")
    assert len(notes[2]) == 1 and notes[2][0].endswith("; the decode loop below redoes it at each new shape")
    assert not any("--steps" in n for n in notes[2])


def test_a_graph_series_that_fails_is_said_and_the_cache_read_as_the_case_again():
    """A capture that raises (a library's graph wrapper refusing, a device error) leaves no series and says why in
    one line; the cache's lengths are the case's again for what follows (the traced pass, the next variant)."""
    from attnscope.core.cases import make_case
    from attnscope.execute.serve import replayed
    from attnscope.variants.paged import make_server
    from attnscope.workloads.paged_cache import make_serving_inputs

    case = make_case("cpu", batch=2, heads=4, kv_heads=2, head_dim=16, seq_q=1, kv_lens="30,17", page_size=16)
    x = make_serving_inputs(case, seed=1, extra_steps=4)
    server = make_server("paged_gather_sdpa", case, x)

    def refuse() -> None:
        x.cache.set_lengths([33, 20])  # as a series would leave them, part way
        raise RuntimeError("capture refused:\n  the wrapper's buffers are too small")

    server.for_graphs = refuse  # type: ignore[method-assign]
    graph, err, bad, why = replayed(server, case, x, steps=4, bucket=256)
    assert (graph, err, bad) == (None, None, False)
    assert why == "the graph series failed: RuntimeError: capture refused: the wrapper's buffers are too small"
    assert x.cache.lengths == (30, 17)
