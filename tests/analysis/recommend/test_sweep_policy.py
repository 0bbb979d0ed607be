"""The sweep recommendation's axes, crossovers and policy, pinned on small hand-made sweeps: how a row becomes axis
values, how rows without a case are counted, which axes vary on their own, where the best implementation changes,
the conditions a policy may use, how the greedy policy picks and orders its rules, and the texts the terminal and
the page print from them. Every expected value is worked out by hand in the test or its docstring.  A row's time is
its GPU median with quartiles median ± 1 µs unless told: a winner at 10 µs [9, 11] and a loser at 20 µs [19, 21]
never tie, 10 [9, 11] and 10.5 [9.5, 11.5] always do.  Points are numbered in the order the sweep sorts them (mode,
S, D, … as in ``AXES``); a mask's bit i is point i.  A case label reads 'B=1 H=8 S=128 D=64 bf16 causal fwd cuda'."""

from __future__ import annotations

from typing import Any

from attnscope.analysis.recommend import recommend
from attnscope.analysis.recommend.points import points_of
from attnscope.analysis.recommend.policy import Cond, conditions, conditions_text
from attnscope.analysis.recommend.ranges import cond_text, measured_ranges, point_axes
from attnscope.document.recommendation import (
    axes_of,
    crossover_note,
    exception_text,
    noise_changes_text,
    rule_variant_text,
    value_order,
    value_text,
)
from tests.analysis.recommend.sweeps import CUDNN, FLASH

NOT_AN_AXIS = "changes only with the other axes here (never alone): not an axis of its own"


def row_s(
    variant: str | None,
    med: float | None,
    *,
    s: int = 128,
    d: int = 64,
    mode: str = "fwd",
    spread: float = 1.0,
    kernels: list[dict[str, Any]] | None = None,
    status: str = "ok",
    numerics_ok: bool | None = True,
    case: dict[str, Any] | None = None,
    **extra: Any,
) -> dict[str, Any]:
    """A GPU row as report/json.py writes it: median ``med`` µs, quartiles med ± spread (no GPU time: None)."""
    c = {"batch": 1, "heads": 8, "kv_heads": None, "seq_q": s, "seq_kv": None, "head_dim": d, "dtype": "bf16"}
    c |= {"causal": True, "mask": None, "softcap": None, "alibi": False, "device": "cuda", "mode": mode}
    c |= case or {}
    r: dict[str, Any] = {"variant": variant, "case": c, "mode": mode, "status": status, "kernels": kernels or []}
    r["numerics_ok"] = numerics_ok if status == "ok" else None
    r["reason"] = extra.pop("reason", None)
    t = None
    if med is not None:
        t = {"median_us": med, "p25_us": med - spread, "p75_us": med + spread, "noisy": False, "method": "CUDA events"}
    return r | {"gpu_time_us": med, "gpu_time": t} | extra


def lbl(s: int, d: int = 64, mode: str = "fwd", dtype: str = "bf16") -> str:
    return f"B=1 H=8 S={s} D={d} {dtype} causal {mode} cuda"


def winners(table: dict[tuple[Any, ...], str], variants: list[str]) -> list[dict[str, Any]]:
    """Every variant at every point (mode, S, D): the winner at 10 µs [9, 11], the others at 20 µs [19, 21]."""
    return [
        row_s(v, 10.0 if v == w else 20.0, s=s, d=d, mode=m) for (m, s, d), w in table.items() for v in sorted(variants)
    ]


# ------------------------------------------------------------------------------------------- axis values


def test_axes_of_takes_mode_from_the_row_then_its_case_then_fwd():
    # the row's own mode wins over its case's; seq_kv and kv_heads follow seq_q and heads where left out
    got = axes_of({"mode": "bwd", "case": {"mode": "fwd", "seq_q": 512, "heads": 8}})
    assert got == {
        "mode": "bwd",
        "seq_q": 512,
        "head_dim": None,
        "causal": None,
        "mask": None,
        "dtype": None,
        "heads": 8,
        "kv_heads": 8,
        "seq_kv": 512,
        "batch": None,
        "softcap": None,
        "alibi": None,
        "device": None,
        "page_size": None,
        "kv_lens": None,
    }
    assert axes_of({"case": {"mode": "fwd_bwd"}})["mode"] == "fwd_bwd"  # no mode in the row: the case's
    assert axes_of({"mode": None, "case": {}})["mode"] == "fwd"  # in neither: forward


def test_axes_of_keeps_extra_case_fields_sorted_after_the_known_axes():
    got = axes_of({"case": {"window": 256, "seq_q": 128, "kv_heads": 2, "heads": 8, "block": 64}})
    assert (got["window"], got["block"], got["kv_heads"], got["seq_kv"]) == (256, 64, 2, 128)
    assert list(got)[-3:] == ["kv_lens", "block", "window"]  # after the 15 known axes, by name


def test_value_text_of_each_kind_of_axis():
    assert [value_text("causal", v) for v in (True, False)] == ["causal", "non-causal"]
    assert [value_text("alibi", v) for v in (True, False, None)] == ["alibi", "no-alibi", "no-alibi"]
    assert value_text("seq_kv", 1024.0) == "S_kv=1024"  # a whole float as an integer
    assert value_text("softcap", 30.0) == "softcap=30"  # no symbol: the field's name
    assert value_text("mask", "sliding_window") == "mask=sliding_window"
    assert value_text("window", None) == "window=none"
    assert value_text("dtype", "fp16") == "fp16"


def test_value_order_puts_none_then_booleans_numbers_text():
    # False before None in the input, "b" before "a": a key that ties them would keep this order
    assert sorted([False, "b", 2, None, True, "a", 0.5], key=value_order) == [None, False, True, 0.5, 2, "a", "b"]
    assert [value_order(v) for v in (None, False, True, 3, "x")] == [(0, 0), (1, 0), (1, 1), (2, 3), (3, "x")]


# ------------------------------------------------------------------------------------------- reading rows


def test_rows_without_a_case_or_a_variant_name_are_counted_and_listed():
    """The first row has no case (a trace), the second a case but no variant name: both are left out with the same
    reason, and the rows after them still count."""
    trace = {"variant": "trace_a", "status": "ok"}
    nameless = row_s(None, 5.0)
    rec = recommend([trace, nameless, row_s("a", 10.0), row_s("b", 20.0)])
    assert rec["counts"]["no_case"] == 2 and rec["counts"]["rows"] == 4 and rec["counts"]["by_status"] == {"ok": 4}
    why = "no case recorded (e.g. a trace)"
    assert rec["excluded"] == [
        {"variant": "trace_a", "label": None, "why": why},
        {"variant": None, "label": None, "why": why},
    ]
    assert [(b["variant"], b["runner_up"]) for b in rec["best"]] == [("a", "b")]


def test_every_repeat_of_a_job_counts_as_superseded_and_the_last_stands():
    rows = [row_s("a", 30.0), row_s("a", 20.0), row_s("a", 12.0), row_s("b", 15.0)]
    rec = recommend(rows)
    assert rec["counts"]["superseded"] == 2
    assert (rec["best"][0]["variant"], rec["best"][0]["median_us"]) == ("a", 12.0)


def test_points_are_ordered_by_their_axis_values_not_by_the_input():
    rows = [row_s("a", 40.0, s=512), row_s("a", 10.0, s=128), row_s("a", 20.0, s=256)]
    assert [b["label"] for b in recommend(rows)["best"]] == [lbl(128), lbl(256), lbl(512)]


def test_a_zero_median_is_kept_as_zero():
    b = recommend([row_s("a", 0.0, spread=0.0), row_s("b", 5.0)])["best"][0]
    assert (b["variant"], b["median_us"], b["runner_up_us"], b["margin"]) == ("a", 0.0, 5.0, None)


def test_a_point_holds_its_rows_fastest_first_and_the_one_chosen_best():
    """naive (a GEMM: it writes the scores out) took 9 µs [8.5, 10.5], sdpa_flash 10 µs [9.5, 10.5]: tied, so the
    fused sdpa_flash is the point's best, though naive is its fastest row."""
    gemm = [{"name": "sm90_xmma_gemm_bf16bf16_bf16f32", "category": "gemm"}]
    rows = [row_s("sdpa_flash", 10.0, spread=0.5, kernels=FLASH), row_s("naive", 9.0, kernels=gemm)]
    rows[1]["gpu_time"] |= {"p25_us": 8.5, "p75_us": 10.5}
    (p,) = points_of(rows)[0]
    assert [r[0]["variant"] for r in p.rows] == ["naive", "sdpa_flash"]
    assert (p.best[0]["variant"], p.best[1], p.source) == ("sdpa_flash", 10.0, "gpu")
    assert p.agree == {"sdpa_flash", "naive"}


def test_an_unusable_default_says_why_with_the_points_time_source():
    """sdpa_default ran, status ok and numerics right, but recorded no GPU time where the others did: at this GPU
    point it is 'not usable', for want of a GPU time."""
    rec = recommend([row_s("sdpa_flash", 10.0), row_s("sdpa_default", None)])
    b = rec["best"][0]
    assert b["default"] == {"measured": False, "why": "no GPU time recorded"}
    assert b["time_source"] == "gpu"
    assert rec["default_summary"]["not_usable"] == 1


def test_an_excluded_row_is_listed_with_its_status():
    rec = recommend([row_s("a", 10.0), row_s("sdpa_math", None, status="oom", reason="CUDA out of memory")])
    assert rec["excluded"] == [
        {"variant": "sdpa_math", "label": lbl(128), "status": "oom", "why": "status oom: CUDA out of memory"}
    ]


def test_a_wrong_row_as_fast_as_the_best_is_not_faster_than_it():
    """The best is a at 10 µs; w1 (wrong) took 10 µs too: not faster; w2 (wrong) took 9.5 µs: faster."""
    rows = [row_s("a", 10.0), row_s("w1", 10.0, numerics_ok=False), row_s("w2", 9.5, numerics_ok=False)]
    ex = recommend(rows)["excluded"]
    assert [(e["variant"], e["median_us"], e["faster_than_best"]) for e in ex] == [
        ("w1", 10.0, False),
        ("w2", 9.5, True),
    ]
    assert recommend(rows)["counts"]["wrong_but_faster"] == 1


# ------------------------------------------------------------------------------------------- axes


def test_derived_axes_name_the_twin_they_follow_and_fixed_axes_are_neither():
    """A fixed token budget, B·S = 4096, over S 512, 1024, 2048; seq_kv is left out, so it is S at every point.
    batch and seq_kv change only with S: derived.  Every other field holds one value: fixed, never derived.
    x is best at S 512 and 1024, y at 2048: one crossover, where batch changes too (4 → 2) and seq_kv, equal to
    S at both points, is not named."""
    rows = []
    for s, fast in ((512, "x"), (1024, "x"), (2048, "y")):
        rows += [row_s(v, 10.0 if v == fast else 20.0, s=s, case={"batch": 4096 // s}) for v in ("x", "y")]
    rec = recommend(rows)
    assert rec["axes"] == ["seq_q"]
    assert rec["derived_axes"] == {"seq_kv": "seq_kv = seq_q at every point", "batch": f"batch {NOT_AN_AXIS}"}
    assert rec["fixed"] == {
        "mode": "fwd",
        "head_dim": 64,
        "causal": True,
        "mask": None,
        "dtype": "bf16",
        "heads": 8,
        "kv_heads": 8,
        "softcap": None,
        "alibi": False,
        "device": "cuda",
        "page_size": None,
        "kv_lens": None,
    }
    (x,) = rec["crossovers"]
    assert (x["between"], x["from"], x["to"], x["also_changes"]) == ([1024, 2048], "x", "y", {"batch": [4, 2]})
    assert crossover_note(x) == "also B 4→2"


def test_a_twin_that_follows_but_differs_is_derived_and_named_in_the_crossovers():
    """seq_kv 64, 256, 1024 at S 128, 256, 512: it changes only with S, but equals S at S=256 alone, so it does
    not follow as its twin.  Best: a, b, a.  At 128 → 256 seq_kv equals S only at the second point, at 256 → 512
    only at the first: both name it."""
    rows = []
    for s, kv, fast in ((128, 64, "a"), (256, 256, "b"), (512, 1024, "a")):
        rows += [row_s(v, 10.0 if v == fast else 20.0, s=s, case={"seq_kv": kv}) for v in ("a", "b")]
    rec = recommend(rows)
    assert rec["axes"] == ["seq_q"] and rec["derived_axes"] == {"seq_kv": f"seq_kv {NOT_AN_AXIS}"}
    got = [(x["between"], x["from"], x["to"], x["also_changes"]) for x in rec["crossovers"]]
    assert got == [([128, 256], "a", "b", {"seq_kv": [64, 256]}), ([256, 512], "b", "a", {"seq_kv": [256, 1024]})]
    assert [crossover_note(x) for x in rec["crossovers"]] == ["also S_kv 64→256", "also S_kv 256→1024"]


class TorchDtype:
    """A case value that JSON cannot hold, as rows built in a process may carry (e.g. a torch.dtype)."""

    def __init__(self, name: str) -> None:
        self.name = name

    def __str__(self) -> str:
        return self.name


BF16, FP16 = TorchDtype("torch.bfloat16"), TorchDtype("torch.float16")


def test_a_case_value_json_cannot_hold_is_read_by_its_text():
    """D 64, 128 × dtype bf16, fp16 (as objects, ordered by their text): a best at bf16, b at fp16.  Points: 0 (64,
    bf16), 1 (64, fp16), 2 (128, bf16), 3 (128, fp16).  a and b agree at 2 points each and are strictly best at 2
    each: "otherwise" is a by name, wrong at 2.  "dtype = torch.bfloat16 → a" and "dtype = torch.float16 → b" both
    leave none; the first condition comes first."""
    rows = []
    for d in (64, 128):
        for dt, fast in ((BF16, "a"), (FP16, "b")):
            rows += [row_s(v, 10.0 if v == fast else 20.0, d=d, case={"dtype": dt}) for v in ("a", "b")]
    rec = recommend(rows)
    assert rec["axes"] == ["head_dim", "dtype"]
    assert rec["measured"] == {"head_dim": [64, 128], "dtype": [BF16, FP16]}
    assert rec["policy_text"] == "dtype = torch.bfloat16 → a; otherwise b"
    assert [x["text"] for x in rec["crossovers"]] == [
        "dtype = torch.bfloat16 → dtype = torch.float16: a → b (D=64)",
        "dtype = torch.bfloat16 → dtype = torch.float16: a → b (D=128)",
    ]
    points = points_of(rows)[0]
    assert measured_ranges(points, ["dtype"]) == {"dtype": [BF16, FP16]}
    assert point_axes(points)[0] == ["head_dim", "dtype"]


# ------------------------------------------------------------------------------------------- crossovers


def test_crossovers_along_an_extra_case_field_follow_its_values():
    """A field the sweep does not know, window, given 256 first and then 128: the points keep that order (0: 256,
    1: 128), but along the axis the values go 128 → 256, where the best changes from a to b."""
    rows = [row_s(v, us, case={"window": 256}) for v, us in (("a", 20.0), ("b", 10.0))]
    rows += [row_s(v, us, case={"window": 128}) for v, us in (("a", 10.0), ("b", 20.0))]
    rec = recommend(rows)
    assert rec["axes"] == ["window"] and rec["measured"] == {"window": [128, 256]}
    assert rec["crossovers"] == [
        {
            "axis": "window",
            "between": [128, 256],
            "from": "a",
            "to": "b",
            "from_same_as": [],
            "to_same_as": [],
            "from_ran": None,
            "to_ran": None,
            "fixed": {},
            "also_changes": {},
            "within_noise": False,
            "points": [1, 0],
            "text": "window = 128 → window = 256: a → b",
        }
    ]


def test_crossover_note_texts():
    x = {"within_noise": True, "also_changes": {"batch": [4, 2], "window": [128, 256]}}
    assert crossover_note(x) == "within the noise (tied at one of the two points); also B 4→2, window 128→256"
    noise = {"within_noise": True, "also_changes": {}}
    assert crossover_note(noise) == "within the noise (tied at one of the two points)"
    assert crossover_note({"within_noise": False, "also_changes": {}}) == ""


def test_noise_changes_text_counts_and_says_nothing_for_none():
    assert noise_changes_text(0) == ""
    assert noise_changes_text(1) == "1 more change within the noise: see --json"
    assert noise_changes_text(2) == "2 more changes within the noise: see --json"


# ------------------------------------------------------------------------------------------- conditions


def test_condition_texts():
    assert [cond_text("causal", "=", v) for v in (True, False)] == ["causal", "non-causal"]
    assert [cond_text("alibi", "=", v) for v in (True, False)] == ["alibi", "no-alibi"]
    assert cond_text("softcap", "≤", 30.0) == "softcap ≤ 30"
    assert cond_text("seq_q", "≥", 512) == "S ≥ 512"
    assert cond_text("mask", "=", "sliding") == "mask = sliding"
    range_and_flag = [Cond("softcap", "≤", 50.0, 0), Cond("softcap", "≥", 20.0, 0), Cond("causal", "=", False, 0)]
    assert conditions_text(range_and_flag) == "20 ≤ softcap ≤ 50 and non-causal"
    assert conditions_text([Cond("head_dim", "≥", 64, 0), Cond("head_dim", "≤", 128, 0)]) == "64 ≤ D ≤ 128"


def test_conditions_are_cuts_between_measured_values_each_set_of_points_once():
    """Points 0: S=128 D=128, 1: S=256 D=256, 2: S=512 D=64, all forward.  mode = fwd holds everywhere: no condition.
    S: '=' gives {0}, {1}, {2}; '≤' 128 is {0} again, '≤ 256' {0, 1}; '≥ 512' is {2} again, '≥ 256' {1, 2}.
    D: '= 64' {2}, '= 128' {0}, '= 256' {1}, all taken; '≤ 64' {2} taken, '≤ 128' {0, 2} new; '≥ 256' {1} and
    '≥ 128' {0, 1} taken."""
    rows = [row_s("a", 10.0, s=s, d=d) for s, d in ((128, 128), (256, 256), (512, 64))]
    points = points_of(rows)[0]
    got = [(c.axis, c.op, c.value, c.mask) for c in conditions(points, ["mode", "seq_q", "head_dim"])]
    assert got == [
        ("seq_q", "=", 128, 0b001),
        ("seq_q", "=", 256, 0b010),
        ("seq_q", "=", 512, 0b100),
        ("seq_q", "≤", 256, 0b011),
        ("seq_q", "≥", 256, 0b110),
        ("head_dim", "≤", 128, 0b101),
    ]


def test_only_numeric_axes_with_numbers_only_get_cuts():
    """window (not a known numeric axis) 64, 128, 256, and softcap none, 30, 50 at points 0, 1, 2: '=' only."""
    rows = [row_s("a", 10.0, case={"window": w, "softcap": c}) for w, c in ((64, None), (128, 30.0), (256, 50.0))]
    points = points_of(rows)[0]
    got = [(c.axis, c.op, c.value, c.mask) for c in conditions(points, ["window"])]
    assert got == [("window", "=", 64, 0b001), ("window", "=", 128, 0b010), ("window", "=", 256, 0b100)]
    got = [(c.axis, c.op, c.value, c.mask) for c in conditions(points, ["softcap"])]
    assert got == [("softcap", "=", None, 0b001), ("softcap", "=", 30.0, 0b010), ("softcap", "=", 50.0, 0b100)]


# ------------------------------------------------------------------------------------------- policy


def test_otherwise_breaks_a_tie_by_strict_bests_then_by_name():
    """a and b tied at both points (quartiles overlap); b is the fastest at point 0 (S=128), a at point 1: each
    agrees at 2 and is best at 1, neither is PyTorch's default, so "otherwise" is a, by name."""
    rows = [row_s("b", 10.0), row_s("a", 10.5), row_s("a", 20.0, s=256), row_s("b", 20.5, s=256)]
    rec = recommend(rows)
    assert rec["policy"] == [
        {
            "when": [],
            "text": "everywhere measured",
            "variant": "a",
            "points": 2,
            "agree": 2,
            "agree_via_tie": 1,
            "measured": 2,
            "same_as": {},
            "ran": {},
            "exceptions": [],
        }
    ]


def test_a_rule_that_puts_exactly_two_points_right_is_taken():
    """S 128, 256, 512 × D 64, 128: y best at S=128 (points 0, 1), x elsewhere.  Without a rule x is wrong at 2;
    "S = 128 → y" leaves none: a gain of 2, the least a rule must make."""
    table = {("fwd", s, d): ("y" if s == 128 else "x") for s in (128, 256, 512) for d in (64, 128)}
    rec = recommend(winners(table, ["x", "y"]))
    assert rec["policy_text"] == "S = 128 → y; otherwise x"
    assert [(r["points"], r["agree"], r["exceptions"]) for r in rec["policy"]] == [(2, 2, []), (4, 4, [])]


def test_policy_stops_at_six_rules_and_keeps_them_in_the_order_found():
    """S 128…1024 (8 values) × D 64, 128: a different winner at each S, a…h in order (2 points each).  Each step
    the fallback is the first remaining variant by name, and the rule that puts 2 more points right at the lowest
    condition ("S = <next value>", put last) is taken: six rules, then "otherwise g", wrong at S=1024 (h best,
    g 20 / 10 = 2× slower)."""
    seqs = [128 * k for k in range(1, 9)]
    table = {("fwd", s, d): w for s, w in zip(seqs, "abcdefgh", strict=True) for d in (64, 128)}
    rec = recommend(winners(table, list("abcdefgh")))
    assert rec["policy_text"] == (
        "S = 128 → a; S = 256 → b; S = 384 → c; S = 512 → d; S = 640 → e; S = 768 → f; otherwise g"
    )
    assert [(r["points"], r["agree"]) for r in rec["policy"]] == [(2, 2)] * 6 + [(4, 2)]
    assert [(e["index"], e["label"], e["best"], e["ratio"]) for e in rec["policy"][-1]["exceptions"]] == [
        (14, lbl(1024, 64), "h", 2.0),
        (15, lbl(1024, 128), "h", 2.0),
    ]


def test_among_equal_rules_the_variant_best_on_its_points_is_named():
    """S 128…2048 × D 64, 128 (10 points).  S=128: x best, y tied (10 [9, 11] and 10.5 [9.5, 11.5]); S 256, 512:
    y best, z tied; S 1024, 2048: z best.  Agree: x 2, y 6, z 8: "otherwise" z, wrong at the 2 S=128 points.
    "S = 128 → x" and "S = 128 → y" put both right, as narrow as any rule that does; x is best at both its points,
    y at none (though best at 4 elsewhere): x."""
    us = {128: (10.0, 10.5, 20.0), 256: (20.0, 10.0, 10.5), 512: (20.0, 10.0, 10.5)}
    us |= {1024: (20.0, 20.0, 10.0), 2048: (20.0, 20.0, 10.0)}
    rows = [row_s(v, t, s=s, d=d) for s in us for d in (64, 128) for v, t in zip("xyz", us[s], strict=True)]
    rec = recommend(rows)
    assert rec["policy_text"] == "S = 128 → x; otherwise z"
    got = [(r["variant"], r["points"], r["agree"], r["agree_via_tie"]) for r in rec["policy"]]
    assert got == [("x", 2, 2, 0), ("z", 8, 8, 4)]


def test_among_equal_rules_pytorchs_default_is_named():
    """S 128, 256, 512 × D 64, 128.  S=128: sdpa_flash 10 µs and sdpa_default 10.5 µs (quartiles ± 0.1, apart) ran
    the same flash kernel: one implementation, both best there; S 256, 512: z best.  "otherwise" z is wrong at
    the 2 S=128 points; "S = 128 → sdpa_flash" and "S = 128 → sdpa_default" both put them right, and count the
    same best points: PyTorch's own choice is named, with the kernel it ran and its twin."""
    rows = []
    for s in (128, 256, 512):
        for d in (64, 128):
            fl, de, z = (10.0, 10.5, 20.0) if s == 128 else (20.0, 20.5, 10.0)
            rows += [row_s("sdpa_flash", fl, s=s, d=d, spread=0.1, kernels=FLASH)]
            rows += [row_s("sdpa_default", de, s=s, d=d, spread=0.1, kernels=FLASH), row_s("z", z, s=s, d=d)]
    rec = recommend(rows)
    assert rec["policy_text"] == "S = 128 → sdpa_default (flash; = sdpa_flash); otherwise z"
    r = rec["policy"][0]
    assert (r["variant"], r["agree"], r["agree_via_tie"], r["ran"], r["same_as"]) == (
        "sdpa_default",
        2,
        0,
        {"flash": 2},
        {"sdpa_flash": 2},
    )


def test_exceptions_of_every_rule_count_not_only_the_last_rules():
    """8 of the 12 (mode, S, D) points measured, one winner each (a, b, c and sdpa_default at 2 points each):

    point  0 fwd 128/64: default   1 fwd 256/64: c        2 fwd 512/64: default
           3 fwd_bwd 128/128: b    4 fwd_bwd 256/64: c    5 fwd_bwd 256/128: a   6 fwd_bwd 512/64: b
           7 fwd_bwd 512/128: a
    Step 1: every variant agrees at 2 and is best at 2: "otherwise" is sdpa_default (PyTorch's choice), wrong at
    6.  The rules leaving 4 with one condition, "mode = fwd → default" {0,1,2}, "S = 256 → c" {1,4,5} and
    "D = 128 → a" {3,5,7}, are all as narrow: the first condition, mode, is taken (wrong at 1).
    Step 2: left {3..7}, "otherwise" a (a and b agree at 2, by name), wrong at 3, 4, 6: 4 with the rule's.
    "S ≥ 256 and D = 128 → a" {5,7} put last leaves 1 + 1 (point 4: b is "otherwise" of {3,4,6}); "S = 256 and
    D = 64 → c" {1,4} put first leaves 2 too, but first comes after last.
    Step 3: left {3,4,6}, "otherwise" b, wrong at 4; with the first rule's point 1, 2 exceptions.  "S = 256 and
    D = 64 → c" put first takes points 1 and 4 and leaves none: a gain of 2, counted only with the first
    rule's exception, which is not the last rule's."""
    table = {
        ("fwd", 128, 64): "sdpa_default",
        ("fwd", 256, 64): "c",
        ("fwd", 512, 64): "sdpa_default",
        ("fwd_bwd", 128, 128): "b",
        ("fwd_bwd", 256, 64): "c",
        ("fwd_bwd", 256, 128): "a",
        ("fwd_bwd", 512, 64): "b",
        ("fwd_bwd", 512, 128): "a",
    }
    rec = recommend(winners(table, ["a", "b", "c", "sdpa_default"]))
    assert rec["axes"] == ["mode", "seq_q", "head_dim"]
    assert rec["policy_text"] == (
        "S = 256 and D = 64 → c; mode = fwd → sdpa_default; S ≥ 256 and D = 128 → a; otherwise b"
    )
    assert [(r["points"], r["agree"]) for r in rec["policy"]] == [(2, 2)] * 4


def test_rule_exceptions_say_how_the_named_variant_did_there():
    """S 128…1024: x best at 128 and 256; at each other S another variant is best and x, the "otherwise", lost:
    384: 12.5 / 10 µs; 512: x ran out of memory; 640: x recorded no GPU time; 768: x not run; 896: the best took
    0 µs (no ratio); 1024: 3 / 1 µs.  No rule puts 2 points right: one variant is best at each."""
    rows = [row_s("x", 10.0, s=128), row_s("x", 10.0, s=256)]
    rows += [row_s("w3", 10.0, s=384, spread=0.1), row_s("x", 12.5, s=384, spread=0.1)]
    rows += [row_s("w4", 10.0, s=512), row_s("x", None, s=512, status="oom", reason="CUDA out of memory")]
    rows += [row_s("w5", 10.0, s=640), row_s("x", None, s=640)]
    rows += [row_s("w6", 10.0, s=768)]
    rows += [row_s("w7", 0.0, s=896, spread=0.0), row_s("x", 5.0, s=896, spread=0.1)]
    rows += [row_s("w8", 1.0, s=1024, spread=0.1), row_s("x", 3.0, s=1024, spread=0.1)]
    (r,) = recommend(rows)["policy"]
    assert (r["text"], r["variant"], r["points"], r["agree"], r["measured"]) == ("everywhere measured", "x", 8, 2, 5)

    def exc(i: int, s: int, best: str, best_us: float, **rest: Any) -> dict[str, Any]:
        return {"index": i, "label": lbl(s), "best": best, "best_same_as": [], "best_us": best_us} | rest

    assert r["exceptions"] == [
        exc(2, 384, "w3", 10.0, variant_us=12.5, ratio=1.25),
        exc(3, 512, "w4", 10.0, variant_us=None, ratio=None, why="status oom: CUDA out of memory"),
        exc(4, 640, "w5", 10.0, variant_us=None, ratio=None, why="no GPU time recorded"),
        exc(5, 768, "w6", 10.0, variant_us=None, ratio=None, why="not run here"),
        exc(6, 896, "w7", 0.0, variant_us=5.0, ratio=None),
        exc(7, 1024, "w8", 1.0, variant_us=3.0, ratio=3.0),
    ]
    assert exception_text(r) == (
        f"{lbl(384)}: w3 best (x 1.25× slower); "
        f"{lbl(512)}: w4 best (x not measured: status oom: CUDA out of memory); "
        f"{lbl(640)}: w5 best (x not measured: no GPU time recorded); … 3 more"
    )


def test_a_rule_lists_twins_by_how_often_then_by_name():
    """sdpa_default best at S 128, 256, 512.  128: b ran its flash kernel (a cuDNN's); 256: b and a ran it; 512:
    default ran cuDNN's kernel, a and b flash's.  Twins: b at 2, a at 1; kernels: flash at 2, cudnn at 1 — the
    more frequent first, though later by name."""
    rows = [row_s("sdpa_default", 10.0, s=128, kernels=FLASH), row_s("b", 11.5, s=128, kernels=FLASH)]
    rows += [row_s("a", 20.0, s=128, kernels=CUDNN)]
    rows += [row_s("sdpa_default", 10.0, s=256, kernels=FLASH), row_s("b", 11.5, s=256, kernels=FLASH)]
    rows += [row_s("a", 12.5, s=256, kernels=FLASH)]
    rows += [row_s("sdpa_default", 10.0, s=512, kernels=CUDNN), row_s("b", 20.0, s=512, kernels=FLASH)]
    rows += [row_s("a", 20.0, s=512, kernels=FLASH)]
    rec = recommend(rows)
    (r,) = rec["policy"]
    assert (list(r["same_as"].items()), list(r["ran"].items())) == ([("b", 2), ("a", 1)], [("flash", 2), ("cudnn", 1)])
    assert rec["policy_text"] == (
        "sdpa_default (flash at 2, cudnn at 1; = b at 2 of 3 points, = a at 1 of 3 points) everywhere measured"
    )


def test_a_rule_lists_equally_frequent_twins_by_name():
    """sdpa_default best at S 128 (all three ran flash's kernel) and 256 (all cuDNN's); b was timed faster than a
    at both, so b is seen first: twins a and b at 2 each, kernels cudnn and flash at 1 each, by name."""
    rows = []
    for s, k in ((128, FLASH), (256, CUDNN)):
        rows += [row_s(v, us, s=s, kernels=k) for v, us in (("sdpa_default", 10.0), ("b", 11.5), ("a", 13.0))]
    rec = recommend(rows)
    (r,) = rec["policy"]
    assert (list(r["same_as"].items()), list(r["ran"].items())) == ([("a", 2), ("b", 2)], [("cudnn", 1), ("flash", 1)])
    assert rec["policy_text"] == "sdpa_default (cudnn at 1, flash at 1; = a, = b) everywhere measured"


def test_rule_variant_text_says_of_how_many_points_when_some_showed_no_backend():
    rule = {"variant": "sdpa_default", "measured": 3, "ran": {"cudnn": 1, "flash": 1}, "same_as": {}}
    assert rule_variant_text(rule) == "sdpa_default (cudnn at 1, flash at 1 of 3)"
    rule = {"variant": "sdpa_default", "measured": 3, "ran": {"cudnn": 2}, "same_as": {"sdpa_cudnn": 2}}
    assert rule_variant_text(rule) == "sdpa_default (cudnn at 2 of 3; = sdpa_cudnn at 2 of 3 points)"
    rule = {"variant": "sdpa_default", "measured": 3, "ran": {"cudnn": 3}, "same_as": {}}
    assert rule_variant_text(rule) == "sdpa_default (cudnn)"


def test_exception_text_shows_three_then_counts_the_rest():
    e = [
        {"label": "S=128", "best": "sdpa_cudnn", "best_same_as": ["sdpa_default"], "ratio": 1.5},
        {"label": "S=256", "best": "sdpa_cudnn", "best_same_as": [], "ratio": None, "why": "status oom: out of memory"},
        {"label": "S=512", "best": "naive", "best_same_as": [], "ratio": 1.04},
        {"label": "S=1024", "best": "naive", "best_same_as": [], "ratio": 2.0},
    ]
    first3 = (
        "S=128: sdpa_cudnn (= sdpa_default) best (sdpa_flash 1.50× slower); "
        "S=256: sdpa_cudnn best (sdpa_flash not measured: status oom: out of memory); "
        "S=512: naive best (sdpa_flash 1.04× slower)"
    )
    rule = {"variant": "sdpa_flash", "exceptions": e}
    assert exception_text(rule) == first3 + "; … 1 more"
    assert exception_text(rule, 4) == first3 + "; S=1024: naive best (sdpa_flash 2.00× slower)"
    assert exception_text({"variant": "sdpa_flash", "exceptions": e[:3]}) == first3  # exactly three: no "… 0 more"
    assert exception_text({"variant": "sdpa_flash", "exceptions": []}) == "none"


# ------------------------------------------------------------------------------------------- two points


def test_two_points_with_two_winners_say_each_point_plainly():
    """S=128: flash 10 [9, 11] beats cuDNN 20 [19, 21]; S=256 the reverse.  No variant is best at both, and a rule
    needs 2 points it puts right (MIN_GAIN), so no rule can be drawn: each point's winner, named by its S."""
    rec = recommend(
        winners({("fwd", 128, 64): "sdpa_flash", ("fwd", 256, 64): "sdpa_cudnn"}, ["sdpa_flash", "sdpa_cudnn"])
    )
    assert [(r["text"], r["variant"], r["points"], r["agree"], r["exceptions"]) for r in rec["policy"]] == [
        ("S = 128", "sdpa_flash", 1, 1, []),
        ("S = 256", "sdpa_cudnn", 1, 1, []),
    ]
    assert rec["policy_text"] == "S = 128 → sdpa_flash; S = 256 → sdpa_cudnn"
    assert "everywhere" not in rec["policy_text"]
    # the points told apart by the mode alone
    rec = recommend(
        winners({("fwd", 128, 64): "sdpa_flash", ("fwd_bwd", 128, 64): "sdpa_cudnn"}, ["sdpa_flash", "sdpa_cudnn"])
    )
    assert rec["policy_text"] == "mode = fwd → sdpa_flash; mode = fwd_bwd → sdpa_cudnn"


def test_two_points_with_one_winner_stay_everywhere_measured():
    """flash best at both S: one variant is right everywhere, said so."""
    rec = recommend(
        winners({("fwd", 128, 64): "sdpa_flash", ("fwd", 256, 64): "sdpa_flash"}, ["sdpa_flash", "sdpa_cudnn"])
    )
    assert rec["policy_text"] == "sdpa_flash everywhere measured"
    (rule,) = rec["policy"]
    assert (rule["points"], rule["agree"], rule["exceptions"]) == (2, 2, [])
