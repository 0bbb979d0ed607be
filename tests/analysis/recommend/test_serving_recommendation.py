"""Serving recommendations per point: best variant, fastest page size, when graphs pay (hand-made rows)."""

from __future__ import annotations

from attnscope.analysis.recommend.serving import serving_recommendation
from attnscope.report.text.serving import decode_loop_lines


def _row(variant, page, us, loop=None, kv="uniform:1024..32768@0", status="ok"):
    case = {"batch": 32, "heads": 32, "kv_heads": 8, "seq_q": 1, "head_dim": 128, "dtype": "bf16", "kv_lens": kv,
            "mask": "causal_lower_right", "device": "cuda", "seq_kv": 32000, "page_size": page}  # fmt: skip
    return {"variant": variant, "case": case, "status": status, "numerics_ok": True, "gpu_time_us": us,
            "extra": {"decode_loop": loop} if loop else {}}  # fmt: skip


LOOP = {
    "steps": 4, "bucket": 256, "kv_lengths_first": [10, 20], "kv_lengths_last": [13, 23], "last_step_rel_error": 1e-3,
    "graph_refused": None, "trace_rebuilds": {},
    "summary": {
        "rebuild": "block_mask_from_table", "advice": "build it once",
        "eager": {"step_ms_median": 5.0, "call_ms_median": 4.0, "rebuilds": 4, "rebuild_ms_per_step": 1.0,
                  "rebuild_ms_per_1000_steps": 1000.0},
        "graph": {"replay_ms_median": 2.0, "captures": 1, "capture_ms_per_step": 2.5,
                  "capture_ms_per_1000_steps": 2500.0, "pays": True, "break_even_steps_per_capture": 10 / 3},
    },
}  # fmt: skip


def test_best_variant_fastest_page_and_graphs_per_point():
    rows = [
        _row("paged_flex_compiled", 16, 300.0, LOOP),
        _row("paged_flex_compiled", 64, 250.0),
        _row("paged_gather_sdpa", 16, 900.0),
        _row("paged_gather_sdpa", 64, 950.0),
        _row("paged_varlen", 16, 100.0, status="skipped"),  # not measured: never the best
        _row("paged_flex_compiled", 16, 50.0, kv="uniform:1024..4096@0"),  # another point
        {"variant": "sdpa_flash", "case": {"batch": 1}, "status": "ok", "gpu_time_us": 1.0},  # a dense row
    ]
    rec = serving_recommendation(rows)
    assert len(rec["points"]) == 2
    p = next(p for p in rec["points"] if "1024..32768" in p["point"])
    assert p["best"] == {"variant": "paged_flex_compiled", "page_size": 64, "time_us": 250.0}
    assert p["fastest_page"] == {"paged_flex_compiled": 64, "paged_gather_sdpa": 16}
    g = p["graphs"]["paged_flex_compiled page=16"]
    assert g["pays"] is True and g["rebuild_ms_per_1000_steps"] == 1000.0
    assert "pays back after 3.3 steps" in p["text"] and "pages of 64" in p["text"]
    assert serving_recommendation([rows[-1]]) is None


def test_decode_loop_lines_say_each_number_and_its_method():
    lines = decode_loop_lines({"results": [{"variant": "paged_flex", "extra": {"decode_loop": LOOP}}]})
    text = "\n".join(lines)
    assert "KV lengths 10..20 → 13..23" in text
    assert "1.000 ms per step, 1,000.000 ms per 1,000 steps" in text
    assert "graphs pay (a capture pays back after 3.3 steps)" in text
    assert "CUDA events" in text and "one sample per step" in text


def test_a_loop_planned_before_every_replay_says_the_plan_and_the_replays_error():
    """A server captured once and planned on the host before each replay (FlashInfer's graph wrappers): the line
    names one capture for the loop (not a bucket), the plan's median beside the replay's, and the last replay's
    error; a bucketed loop says neither."""
    g = {**LOOP["summary"]["graph"], "plan_ms_per_replay_median": 0.25}
    loop = {**LOOP, "summary": {**LOOP["summary"], "graph": g}, "graph_last_step_rel_error": 2.5e-3}
    text = "\n".join(decode_loop_lines({"results": [{"variant": "paged_flashinfer", "extra": {"decode_loop": loop}}]}))
    assert "graph replay (one capture for the loop): 2.000 ms median (CUDA events)" in text
    assert "+ plan() 0.250 ms median before each replay (host, synchronised)" in text
    assert "last replay's error 2.5e-03 against fp64" in text
    # as seen on an H100: replay 0.081 ms + plan 0.766 ms against an eager step of 0.835 ms, no saving
    slow = {**g, "pays": False, "break_even_steps_per_capture": None}
    loop2 = {**loop, "summary": {**loop["summary"], "graph": slow}}
    rows2 = [{"variant": "paged_flashinfer", "extra": {"decode_loop": loop2}}]
    text2 = "\n".join(decode_loop_lines({"results": rows2}))
    assert "graphs do not pay (a replay with its plan is not faster than an eager step)" in text2
    plain = "\n".join(decode_loop_lines({"results": [{"variant": "paged_flex", "extra": {"decode_loop": LOOP}}]}))
    assert "graph replay (bucket 256 tokens): 2.000 ms median (CUDA events); 1 capture(s)" in plain
    assert "plan()" not in plain and "last replay's error" not in plain
    rec = serving_recommendation([_row("paged_flashinfer", 16, 900.0, loop)])
    assert rec["points"][0]["graphs"]["paged_flashinfer page=16"]["plan_ms_per_replay"] == 0.25
