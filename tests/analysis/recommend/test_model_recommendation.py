"""The model path's recommendation and insights on hand-made rows: which copies count, which timings warn."""

from __future__ import annotations

from typing import Any

from attnscope.analysis.recommend.model_points import annotate_rows, recommend
from tests.analysis.recommend.model_rows import row as _row
from tests.analysis.recommend.model_rows import timing as _timing

MIB = 1024 * 1024


def _copy(layer: str, backward: bool, nbytes: int) -> dict[str, Any]:
    return {
        "op": "aten::reshape",
        "copy_op": "aten::copy_",
        "bytes": nbytes,
        "part": "repeat_kv",
        "layer": layer,
        "backward": backward,
    }


def test_a_training_step_counts_the_forward_repeat_kv_copies_only():
    """Per layer: K and V repeated in the forward (2 × 4 MiB), and 3 copies of 8 MiB in the backward (gradient
    layouts, not repeat_kv's): the insight counts 2 per layer, 4 in all, 16 MiB."""
    copies = []
    for layer in ("l.0", "l.1"):
        copies += [_copy(layer, False, 4 * MIB), _copy(layer, False, 4 * MIB)]
        copies += [_copy(layer, True, 8 * MIB)] * 3
    eager = _row("eager", _timing(10_000, 9_900, 10_100), copies)
    annotate_rows([eager])
    [kv] = [i for i in eager["insights"] if i["id"] == "repeat_kv_copy"]
    ev = kv["evidence"]
    assert ev["copies_per_layer"] == 2 and ev["num_copies"] == 4 and ev["num_layers"] == 2
    assert ev["bytes_per_copy"] == 4 * MIB and ev["bytes_total"] == 16 * MIB
    assert "2×4.0 MiB per layer per train step (4 copies in 2 layers, 16.0 MiB in all" in kv["message"]


def test_backward_copies_alone_give_no_repeat_kv_insight():
    eager = _row("eager", _timing(10_000, 9_900, 10_100), [_copy("l.0", True, 8 * MIB)])
    annotate_rows([eager])
    assert not [i for i in eager["insights"] if i["id"] == "repeat_kv_copy"]


def test_a_noisy_runner_up_is_named_in_the_recommendation():
    """Best 8 000 µs (IQR 100: 1.25 %, steady), runner-up 10 000 µs with IQR 2 000 (20 %: noisy); the quartiles
    do not overlap (8 050 < 9 000), so it is no tie, and the noisy one is named."""
    best = _row("sdpa", _timing(8_000, 7_950, 8_050))
    nxt = _row("eager", _timing(10_000, 9_000, 11_000))
    rec = recommend([best, nxt])
    assert rec["best"] == "sdpa" and rec["runner_up"] == "eager" and rec["tied"] == []
    assert rec["margin"] == 1.25  # 10 000 / 8 000
    assert "but eager timed noisy (IQR/median > 10%)" in rec["text"]


def test_a_noisy_best_and_runner_up_are_both_named():
    best = _row("sdpa", _timing(8_000, 7_000, 8_900))
    nxt = _row("eager", _timing(12_000, 11_000, 13_500))
    rec = recommend([best, nxt])
    assert rec["tied"] == []
    assert "but sdpa and eager timed noisy" in rec["text"]


def test_steady_timings_give_no_noise_warning():
    rec = recommend([_row("sdpa", _timing(8_000, 7_950, 8_050)), _row("eager", _timing(10_000, 9_950, 10_050))])
    assert "noisy" not in rec["text"]


def _insight(row: dict, id_: str) -> dict | None:
    return next((i for i in row["insights"] if i["id"] == id_), None)


def test_host_bound_from_1_5_times_the_gpu_time():
    """Wall 1 500 µs against 1 000 µs of GPU time: host-bound at exactly 1.5×, not at 1 499."""
    gpu = {**_timing(1_000, 990, 1_010), "method": "CUDA events, per step"}
    row = _row("sdpa", gpu)
    row["wall_time"] = {**_timing(1_500, 1_490, 1_510), "method": "wall time per step, host clock"}
    annotate_rows([row])
    hb = _insight(row, "host_bound")
    assert hb["evidence"] == {"wall_us": 1_500, "gpu_us": 1_000}
    assert hb["message"] == (
        "the train step is host-bound: 1,500.0 µs on the host (wall time per step) against 1,000.0 µs of GPU time"
    )
    row["wall_time"]["median_us"] = 1_499
    annotate_rows([row])
    assert _insight(row, "host_bound") is None
    # one clock for both (a CPU run): nothing to compare
    row["wall_time"] = {**_timing(5_000, 4_990, 5_010), "method": gpu["method"]}
    annotate_rows([row])
    assert _insight(row, "host_bound") is None


def test_the_mask_insight_quotes_the_mask_part_and_the_others():
    a = _row("eager", _timing(10_000, 9_900, 10_100))
    b = _row("sdpa", _timing(9_000, 8_900, 9_100))
    a["attention"]["parts"]["mask"] = 25.0
    b["attention"]["parts"]["mask"] = 12.5
    annotate_rows([a, b])
    m = _insight(a, "mask_built")
    assert m["severity"] == "info" and m["evidence"] == {"mask_us": 25.0, "step_total_us": 1000.0}
    assert m["message"] == "the attention mask is built on every forward: 25.0 µs, 2.5% of the profiled step"
    assert m["advice"].endswith("; the other implementations in this run spent: sdpa 12.5 µs")
    b["attention"]["parts"]["mask"] = 0.0
    annotate_rows([a, b])
    assert _insight(b, "mask_built") is None


def test_layout_copies_leave_out_repeat_kv_the_mask_and_the_backward():
    def c(part: str, backward: bool, nbytes: int, op: str) -> dict:
        return {"op": op, "copy_op": "aten::copy_", "bytes": nbytes, "part": part, "layer": "l.0", "backward": backward}

    copies = [
        c("kernel", False, 3 * MIB, "aten::contiguous"),
        c("copies", False, MIB, "aten::transpose"),
        c("repeat_kv", False, 8 * MIB, "aten::reshape"),
        c("mask", False, 8 * MIB, "aten::expand"),
        c("kernel", True, 8 * MIB, "aten::contiguous"),
    ]
    row = _row("eager", _timing(10_000, 9_900, 10_100), copies)
    annotate_rows([row])
    lc = _insight(row, "attention_copies")
    assert lc["evidence"] == {"num_copies": 2, "bytes_total": 4 * MIB, "ops": ["aten::contiguous", "aten::transpose"]}
    assert lc["message"].startswith("2 other full-tensor copies inside attention's forward (aten::contiguous, ")
    assert "4.0 MiB in all" in lc["message"]


def test_upcasts_quote_the_breakdown_part_or_else_the_casts_own_durations():
    row = _row("sdpa", _timing(10_000, 9_900, 10_100))
    ups = [
        {"op": "aten::softmax", "bytes": 2 * MIB, "duration_us": 4.0},
        {"op": "aten::_to_copy", "bytes": MIB, "duration_us": 1.5},
    ]
    row["attention"]["upcasts"] = ups
    row["attention"]["parts"]["upcasts"] = 9.0
    annotate_rows([row])
    u = _insight(row, "attention_upcast")
    assert u["evidence"]["upcast_us"] == 9.0 and u["evidence"]["num_upcasts"] == 2
    assert u["evidence"]["bytes_fp32"] == 3 * MIB and u["evidence"]["ops"] == ["aten::_to_copy", "aten::softmax"]
    assert u["advice"].startswith("these casts run inside sdpa's own code path")
    del row["attention"]["parts"]["upcasts"]
    annotate_rows([row])
    assert _insight(row, "attention_upcast")["evidence"]["upcast_us"] == 5.5  # 4.0 + 1.5


def test_a_trace_alone_gets_the_insights_it_supports():
    from attnscope.analysis.rules.model_step import split_insights

    row = _row("x", _timing(1, 1, 1), [_copy("l.0", False, 2 * MIB)])
    split = {**row["breakdown"], "attention": row["attention"], "scopes": {"impl": "eager", "mode": "train"}}
    [kv] = split_insights(split)
    assert kv["id"] == "repeat_kv_copy" and kv["message"].startswith("eager repeat_kv copies K and V")
    split["scopes"] = {}
    [kv] = split_insights(split)
    assert (
        kv["message"].startswith("this attention repeat_kv copies K and V") and " per profiled step " in kv["message"]
    )


def test_rows_of_several_points_are_recommended_per_mode_batch_and_sequence():
    rows = []
    for seq, (a, b) in ((128, (1_000, 2_000)), (256, (4_000, 3_000))):
        for impl, t in (("eager", a), ("sdpa", b)):
            r = _row(impl, _timing(t, t - 10, t + 10))
            r["batch"], r["seq"] = 1, seq
            r["case"] = {"config": "tiny", "layers": 1, "dtype": "fp32", "device": "cpu", "mode": "train"}
            rows.append(r)
    recs = annotate_rows(rows)
    assert {k: v["best"] for k, v in recs.items()} == {"train B1 S128": "eager", "train B1 S256": "sdpa"}


def _parted(kernel, proj, around, idle, cpu_only, unattr, rest_parts):
    return {
        "attention": {"kernel_us": kernel, "projections_us": proj, "around_us": around},
        "rest": {"parts": rest_parts},
        "breakdown": {"unattributed_us": unattr, "step": {"gpu_idle_us": idle, "cpu_only_us": cpu_only}},
    }


def test_part_differences_name_the_parts_that_shrink_most_with_their_size():
    from attnscope.analysis.rules.model_step import part_differences

    slow = _parted(9_000, 5_000, 7_000, 3_000, 2_500, 1_500, {"mlp": 4_000, "other": 800, "norm": 600})
    fast = _parted(1_000, 4_900, 1_000, 1_000, 2_000, 1_000, {"mlp": 4_000, "other": 100})
    # shrinks: kernel 8.00, around 6.00, idle 2.00, other 0.70, norm 0.60, CPU-only 0.50, unattr 0.50, proj 0.10 ms
    assert part_differences(slow, fast) == "attention kernel 8.00 ms, work around attention 6.00 ms, GPU idle 2.00 ms"
    assert part_differences(slow, fast, top=8).split(", ")[3:] == [
        "other 0.70 ms",
        "norm 0.60 ms",
        "unattributed 0.50 ms",
        "CPU-only time 0.50 ms",
        "projections 0.10 ms",
    ]
    # nothing shrinks the other way round; a row with no parts at all is all zeros
    assert part_differences(fast, slow) == ""
    assert part_differences({}, fast) == ""
    assert part_differences(_parted(0, 0, 0, 0, 0, 0, {"mlp": 2_000}), {}) == "mlp 2.00 ms"


def test_as_generic_is_the_one_recommender_s_row():
    from attnscope.analysis.recommend.model_points import as_generic

    row = _row("sdpa", {**_timing(8_000, 7_950, 8_050), "method": "CUDA events, 20 steps"})
    row.update(batch=2, seq=128, case={"config": "tiny", "layers": 1, "dtype": "bf16", "device": "cuda"})
    timing = {"median_us": 8_000, "p25_us": 7_950, "p75_us": 8_050, "noisy": False, "method": "CUDA events, 20 steps"}
    assert as_generic(row) == {
        "variant": "sdpa",
        "status": "ok",
        "reason": None,
        **timing,
        "point": {"config": "tiny", "seq": 128, "batch": 2, "mode": "train"},
        "mode": "train",
        # the point as the one recommender's case: the config's fields, then batch, seq and mode
        "case": {
            "config": "tiny",
            "layers": 1,
            "dtype": "bf16",
            "device": "cuda",
            "batch": 2,
            "seq": 128,
            "mode": "train",
        },
        "step_time": timing,
    }
    failed = {"impl": "eager", "status": "oom", "step_time": None, "case": None, "mode": "decode"}
    nothing = {"median_us": None, "p25_us": None, "p75_us": None, "noisy": None, "method": None}
    assert as_generic(failed) == {
        "variant": "eager",
        "status": "oom",
        "reason": None,
        **nothing,
        "point": {"config": None, "seq": None, "batch": None, "mode": "decode"},
        "mode": "decode",
        "case": {
            "config": None,
            "layers": None,
            "dtype": None,
            "device": None,
            "batch": None,
            "seq": None,
            "mode": "decode",
        },
        "step_time": None,
    }


def test_recommendation_texts_by_hand():
    one = recommend([_row("sdpa", {**_timing(8_000, 7_950, 8_050), "method": "wall time per step, 9 steps"})])
    assert one == {
        "best": "sdpa",
        "best_us": 8_000,
        "runner_up": None,
        "margin": None,
        "tied": [],
        "basis": "wall time per step",
        "text": "sdpa: the only implementation measured (8,000.0 µs per step)",
        "unresolved": False,
    }
    rows = [
        _row("sdpa", _timing(8_000, 7_900, 8_100)),
        _row("flex", _timing(8_050, 7_950, 8_150)),  # overlaps sdpa's quartiles: tied
        _row("eager", _timing(12_000, 11_900, 12_100)),
    ]
    rec = recommend(rows)
    assert rec["runner_up"] == "flex" and rec["runner_up_us"] == 8_050 and rec["margin"] == round(8_050 / 8_000, 4)
    assert rec["tied"] == ["flex"] and rec["basis"] == "wall"
    assert rec["text"] == (
        "sdpa at 8,000.0 µs per step, tied within the noise (interquartile ranges overlap) with flex (flex 8,050.0 "
        "µs: a median 1.01× lower is no clear lead); the next clear step is eager, 1.50× slower"
    )
    clear = recommend([rows[0], rows[2]])
    assert clear["text"] == "sdpa at 8,000.0 µs per step, 1.50× ahead of eager (12,000.0 µs)"


def test_the_share_insight_by_hand():
    from attnscope.analysis.rules.model_step import Step, share

    best = _row("sdpa", _timing(8_000, 7_950, 8_050))
    best["breakdown"] = {"total_us": 1_000.0, "step": {"step_us": 2_000.0}}
    s = share(best, Step(best=best))
    # attention 450 of the 2 000 µs profiled step: 22.5 %; kernel 15 %, projections 5 %, around 2.5 %
    assert s["message"] == (
        "attention is 22.5% of the train step (450.0 of 2,000.0 µs profiled): kernel 15.0%, projections 5.0%, "
        "work around it 2.5%"
    )
    assert s["advice"] == "the fastest implementation measured for train"
    assert s["evidence"] == {
        "attention_us": 450.0,
        "kernel_us": 300.0,
        "projections_us": 100.0,
        "around_us": 50.0,
        "step_total_us": 2_000.0,
    }
    assert share(best)["advice"] == s["advice"] and s["severity"] == "info"
    small = _row("sdpa", _timing(8_000, 7_950, 8_050))
    small["breakdown"] = {"total_us": 3_000.0}  # no step: the GPU total; 450 / 3 000 = 15 %
    assert share(small)["advice"] == (
        "the fastest implementation measured for train; attention is 15.0% of the step, so the rest (see the split) "
        "is where time goes"
    )
    tied = _row("flex", _timing(8_040, 7_990, 8_090))
    t = share(tied, Step(best=best))
    assert t["advice"] == "sdpa is within the noise of it for train (interquartile ranges overlap)"
    assert t["severity"] == "info" and t["evidence"]["saved_us"] == 40 and t["evidence"]["best_step_us"] == 8_000
    slow = _row("eager", _timing(10_000, 9_800, 10_200))
    w = share(slow, Step(best=best))
    # saved 2 000 µs = 2.00 ms, 20.0 % of 10.00 ms; noise (400 + 100) / 2 = 250 µs = 0.25 ms
    assert w["severity"] == "warning"
    assert w["advice"] == (
        "switching eager → sdpa saves 2.00 ms per step (20.0% of 10.00 ms, measured step medians, ± 0.25 ms: half the "
        "sum of their interquartile ranges)"
    )
    assert (
        w["evidence"]["noise_us"] == 250 and w["evidence"]["saved_us"] == 2_000 and w["evidence"]["step_us"] == 10_000
    )


CLEAN2 = "; flex_attention, flash_attention_2 made no repeat_kv copy in this run"


def _kv_case(impl: str, sdpa: str | None, mode: str = "train") -> dict:
    """``impl`` copies (1 layer, 2 × 1 MiB); sdpa copies too ("copies"), failed ("error"), or is absent."""
    row = _row(impl, _timing(10_000, 9_900, 10_100), [_copy("l.0", False, MIB)] * 2, mode=mode)
    rows = [
        row,
        _row("flex_attention", _timing(9_000, 8_900, 9_100), mode=mode),
        _row("flash_attention_2", _timing(9_500, 9_400, 9_600), mode=mode),
    ]
    if sdpa == "copies":
        rows.append(_row("sdpa", _timing(9_700, 9_600, 9_800), [_copy("l.0", False, MIB)], mode=mode))
    elif sdpa == "error":
        rows.append(
            {**_row("sdpa", _timing(1, 1, 1), mode=mode), "status": "error", "step_time": None, "attention": None}
        )
    annotate_rows(rows)
    return _insight(row, "repeat_kv_copy")


def test_repeat_kv_advice_for_each_case_by_hand():
    kv = _kv_case("eager", "copies")
    assert kv["message"] == (
        "eager repeat_kv copies K and V to every query head: 2×1.0 MiB per layer per train step (2 copies in 1 "
        "layer, 2.0 MiB in all, 50.0 µs in repeat_kv, 5.0% of the profiled step)"
    )
    assert kv["advice"] == (
        "sdpa repeated K and V too in this run (this transformers did not pass enable_gqa to torch's SDPA here); "
        "an sdpa path that passes enable_gqa=True keeps K and V at their KV heads" + CLEAN2
    )
    assert _kv_case("eager", "error")["advice"] == (
        "sdpa with enable_gqa would avoid it, but sdpa did not run for this model here (error: see its row)" + CLEAN2
    )
    assert _kv_case("eager", None)["advice"] == (
        "sdpa with enable_gqa avoids it: transformers' sdpa path passes enable_gqa=True to torch's SDPA when no "
        "attention mask is needed, so K and V stay at their KV heads (seen in this run: flex_attention, "
        "flash_attention_2 made no repeat_kv copy)"
    )
    assert _kv_case("sdpa", None, mode="decode")["advice"] == (
        "transformers' sdpa path repeated K and V here instead of passing enable_gqa=True to torch's attention "
        "(recent transformers pass it to SDPA only when no attention mask is needed: padding or a custom mask "
        "brings the copy back)" + CLEAN2 + "; in decode the copy covers the whole KV cache on every generated token"
    )
    assert _kv_case("eager", None, mode="decode")["message"].startswith(
        "eager repeat_kv copies K and V to every query head: 2×1.0 MiB per layer per decode step"
    )


def test_repeat_kv_over_layers_with_uneven_copies_and_sizes():
    copies = [_copy("l.0", False, 512 * 1024), _copy("l.0", False, 3 * MIB), _copy("l.1", False, 3 * MIB)]
    row = _row("eager", _timing(10_000, 9_900, 10_100), copies)
    annotate_rows([row])
    kv = _insight(row, "repeat_kv_copy")
    # most copies in one layer: 2; the largest copy 3 MiB; 3.5 + 3 = 6.5 MiB in all
    assert kv["evidence"]["copies_per_layer"] == 2 and kv["evidence"]["bytes_per_copy"] == 3 * MIB
    assert "2×3.0 MiB per layer per train step (3 copies in 2 layers, 6.5 MiB in all" in kv["message"]
    assert kv["advice"].endswith("so K and V stay at their KV heads")  # nobody else ran: no "seen in this run"


def test_upcast_and_layout_and_mask_advice_texts():
    row = _row("eager", _timing(10_000, 9_900, 10_100))
    row["attention"]["upcasts"] = [{"op": "aten::softmax", "bytes": 2 * MIB, "duration_us": 4.0}]
    row["attention"]["parts"]["upcasts"] = 4.0
    annotate_rows([row])
    u = _insight(row, "attention_upcast")
    assert u["severity"] == "warning"
    assert u["message"] == (
        "1 bf16/fp16→fp32 upcast(s) inside attention (aten::softmax), 2.0 MiB written in fp32, 4.0 µs in the copies"
    )
    assert u["advice"] == (
        "eager attention runs its softmax in fp32 by design (transformers' eager_attention_forward); "
        "sdpa and flex_attention keep the scores inside one fused kernel instead of an fp32 tensor"
    )
    row = _row("sdpa", _timing(10_000, 9_900, 10_100), [{**_copy("l.0", False, MIB), "part": "kernel"}])
    annotate_rows([row])
    lc = _insight(row, "attention_copies")
    assert lc["severity"] == "info" and lc["advice"] == (
        "they are in transformers' attention code (transposes made contiguous, layouts a matmul wants), "
        "not in yours: weigh them with the 'copies' part of the split"
    )
    assert lc["message"] == "1 other full-tensor copies inside attention's forward (aten::reshape), 1.0 MiB in all"
    row["attention"]["parts"]["mask"] = 10.0
    annotate_rows([row])
    assert (
        _insight(row, "mask_built")["advice"] == "transformers builds it once per forward and shares it across layers"
    )


def test_host_bound_advice_and_rows_without_a_wall_time():
    gpu = {**_timing(1_000, 990, 1_010), "method": "CUDA events"}
    row = _row("sdpa", gpu)
    annotate_rows([row])
    assert _insight(row, "host_bound") is None  # no wall time
    row["wall_time"] = gpu
    annotate_rows([row])
    assert _insight(row, "host_bound") is None  # the same timing
    row["wall_time"] = {**_timing(3_000, 2_990, 3_010), "method": "wall time per step"}
    annotate_rows([row])
    hb = _insight(row, "host_bound")
    assert hb["severity"] == "warning" and hb["advice"] == (
        "Python and kernel launches, not the GPU, set the pace: CUDA graphs (a static cache with torch.compile) "
        "remove most of it; the attention implementation matters less here than its GPU time suggests"
    )
    row["attention"] = None  # a row without a split still gets the host-bound insight, and nothing else
    annotate_rows([row])
    assert [i["id"] for i in row["insights"]] == ["host_bound"]


def test_points_of_two_configs_are_named_and_failed_rows_join_their_point():
    rows = []
    for config, t in (("tiny", 1_000), ("small", 2_000)):
        for impl, k in (("eager", 1), ("sdpa", 2)):
            r = _row(impl, _timing(t * k, t * k - 5, t * k + 5))
            r["batch"], r["seq"] = 4, 64
            r["case"] = {"config": config, "layers": 2, "dtype": "bf16", "device": "cuda:0", "mode": "train"}
            rows.append(r)
    # a third implementation that was skipped at the first point: it joins that point, measured by nothing
    skipped = {**rows[0], "impl": "flex_attention", "status": "skipped", "step_time": None, "attention": None}
    recs = annotate_rows([*rows, skipped])
    assert set(recs) == {"train tiny B4 S64", "train small B4 S64"}
    assert recs["train tiny B4 S64"]["best"] == "eager" and recs["train tiny B4 S64"]["runner_up"] == "sdpa"
    # one point per mode: keyed by the mode alone
    assert set(annotate_rows(rows[:2])) == {"train"}


def test_a_scaled_split_is_flagged_and_the_share_says_what_its_us_are():
    """The runner scaled the split: profiled 12,500 µs against a timed 1,000 µs."""
    row = _row("eager", _timing(1000, 990, 1010), mode="prefill")
    row["breakdown"]["profile"] = {
        "profiled_step_us": 12500.0,
        "timed_step_us": 1000.0,
        "profiled_over_timed": 12.5,
        "scaled": True,
    }
    annotate_rows([row])
    pm = _insight(row, "profile_mismatch")
    assert pm is not None and pm["severity"] == "warning"
    assert "12,500.0 µs under the profiler, 12.50× the timed median (1,000.0 µs)" in pm["message"]
    assert pm["evidence"]["profiled_over_timed"] == 12.5
    share = _insight(row, "attention_share")
    assert "(450.0 of 1,000.0 µs, the profiled step's shares of the timed median)" in share["message"]
    row["breakdown"]["profile"]["scaled"] = False
    annotate_rows([row])
    assert _insight(row, "profile_mismatch") is None
    assert "(450.0 of 1,000.0 µs profiled)" in _insight(row, "attention_share")["message"]


def test_the_profile_mismatch_insight_in_full():
    row = _row("eager", _timing(1000, 990, 1010), mode="prefill")
    row["breakdown"]["profile"] = {
        "profiled_step_us": 12500.0,
        "timed_step_us": 1000.0,
        "profiled_over_timed": 12.5,
        "scaled": True,
    }
    annotate_rows([row])
    pm = _insight(row, "profile_mismatch")
    assert pm["advice"] == (
        "read the split as shares: the profiler's cost is per op, so parts made of many small ops (rotary, norms, "
        "masks) keep too large a share; the step medians, not the split, compare implementations"
    )
    assert pm["evidence"] == {"profiled_step_us": 12500.0, "timed_step_us": 1000.0, "profiled_over_timed": 12.5}
