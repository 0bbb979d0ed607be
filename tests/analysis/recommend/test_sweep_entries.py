"""The sweep recommendation's best-per-point, default-gap and summary code, pinned where mutation testing found it
unchecked: reading the times (``*_time_us`` or the timing's median, the quartiles of the host time), why a row is
left out (each message whole), the case label, a best entry and sdpa_default's entry as whole dicts, the counts and
the summary line at each of its boundaries, and the conjunctions a policy may use. Every expected value is read off
the hand-made rows or dicts of its test, with the arithmetic in the comments; the conjunction tests use hand-written
masks (bit i: point i) whose ANDs are worked out in their docstrings."""

from __future__ import annotations

from typing import Any

from attnscope.analysis.recommend import recommend
from attnscope.analysis.recommend.points import Point, best_entry, default_at
from attnscope.analysis.recommend.policy import Cond, candidates
from attnscope.analysis.recommend.ranges import twinned
from attnscope.analysis.recommend.rows import num, point_key
from attnscope.document.recommendation import (
    default_summary_text,
    impl_text,
    label,
    tie_text,
)
from tests.analysis.recommend.sweeps import FLASH, GEMM

METHOD = "CUDA events, median of 200"
GPU_BASIS = "GPU time per call (median)"
CPU_BASIS = "wall time per call on the CPU (median)"
HOST_BASIS = "host time per call (median): these rows hold no GPU time"


def row_b(
    variant: str,
    s: int,
    med: float | None = None,
    p25: float | None = None,
    p75: float | None = None,
    *,
    device: str = "cuda",
    status: str = "ok",
    numerics_ok: bool | None = True,
    kernels: list[dict[str, Any]] | None = None,
    **extra: Any,
) -> dict[str, Any]:
    """A sweep row as report/json.py writes it, forward, B=1 H=8 D=64 bf16 causal; its time ``med`` [p25, p75] is the
    GPU time on a GPU (the CPU time there is 1 µs), the CPU time on a CPU."""
    case = {"batch": 1, "heads": 8, "seq_q": s, "head_dim": 64, "dtype": "bf16", "causal": True, "device": device}
    r: dict[str, Any] = {"variant": variant, "case": case, "mode": "fwd", "status": status, "kernels": kernels or []}
    r["numerics_ok"] = numerics_ok if status == "ok" else None
    t = {"median_us": med, "p25_us": p25, "p75_us": p75, "noisy": False, "method": METHOD} if med is not None else None
    if device == "cpu":
        r |= {"gpu_time_us": None, "gpu_time": None, "cpu_time_us": med, "cpu_time": t}
    else:
        r |= {"gpu_time_us": med, "gpu_time": t, "cpu_time_us": 1.0, "cpu_time": {"median_us": 1.0, "p25_us": 1.0}}
    return r | extra


def host_row(variant: str, s: int, med: float, p25: float | None, p75: float | None) -> dict[str, Any]:
    """A row on a GPU that holds no GPU time: only its host (CPU) time, ``med`` [p25, p75]."""
    t = {"median_us": med, "p25_us": p25, "p75_us": p75, "noisy": False, "method": "wall clock"}
    return row_b(variant, s) | {"cpu_time_us": med, "cpu_time": t}


def why_by_variant(rec: dict[str, Any]) -> dict[str, str]:
    return {e["variant"]: e["why"] for e in rec["excluded"]}


# --------------------------------------------------------------------------------------------- reading times


def test_num_takes_finite_numbers_only():
    assert num(3) == 3.0 and isinstance(num(3), float)
    assert num(2.5) == 2.5
    assert num(float("inf")) is None and num(float("-inf")) is None and num(float("nan")) is None
    assert num(True) is None and num("3") is None and num(None) is None


def test_time_is_the_time_field_else_the_timing_median_and_never_an_infinite_one():
    """a: no gpu_time_us, its timing says 10; b: gpu_time_us 30 and no timing; c: gpu_time_us inf (not a time),
    its timing says 20.  Fastest first: a 10, c 20, b 30; the runner-up is c, margin 20 / 10 = 2."""
    a = row_b("a", 128, 10, 9, 11) | {"gpu_time_us": None}
    b = row_b("b", 128) | {"gpu_time_us": 30.0}
    c = row_b("c", 128, 20, 19.5, 20.5) | {"gpu_time_us": float("inf")}
    rec = recommend([a, b, c])
    (best,) = rec["best"]
    assert (best["variant"], best["median_us"], best["runner_up"], best["runner_up_us"]) == ("a", 10, "c", 20)
    assert best["margin"] == 2.0 and best["variants_compared"] == 3 and rec["excluded"] == []


def test_a_case_with_no_device_is_timed_on_the_cpu():
    """No GPU time and no device in the case: the CPU wall time, not 'host time' (that is for GPU cases)."""
    rows = [row_b("a", 128, 5, 4, 6, device="cpu"), row_b("b", 128, 7, 6.5, 8, device="cpu")]
    for r in rows:
        del r["case"]["device"]
    rec = recommend(rows)
    assert rec["time_source"] == CPU_BASIS
    assert (rec["best"][0]["time_source"], rec["best"][0]["basis"]) == ("cpu", CPU_BASIS)


def test_host_time_quartiles_come_from_the_cpu_timing():
    """A GPU case without GPU times: a 10 [9, 11], b 12 [11, 13] on the host; the ranges touch at 11: tied."""
    rec = recommend([host_row("a", 128, 10, 9, 11), host_row("b", 128, 12, 11, 13)])
    (b,) = rec["best"]
    assert (b["time_source"], b["basis"], b["variant"], b["p25_us"], b["p75_us"]) == ("host", HOST_BASIS, "a", 9, 11)
    assert (b["tied"], b["tie_reason"], b["tied_with"]) == (True, "quartiles overlap", ["b"])
    assert b["time_method"] == "wall clock"
    assert rec["time_methods"] == ["wall clock"]


def test_quartiles_need_both_p25_and_p75():
    """a's timing has a p25 and no p75: no quartiles at all (not half of them), so no tie with b 10.5 [9, 12]."""
    a = row_b("a", 128, 10, 9, None)
    b = row_b("b", 128, 10.5, 9, 12)
    (e,) = recommend([a, b])["best"]
    assert (e["variant"], e["p25_us"], e["p75_us"], e["time_method"], e["tied"]) == ("a", None, None, None, False)


# --------------------------------------------------------------------------------------------- rows left out


def test_why_each_row_is_left_out():
    """Next to sdpa_flash at 10 µs on a GPU, each row below is left out with its own whole reason."""
    flex = row_b("flex_compiled", 128, 4, 3.9, 4.1, family="flex", compile_time_s=1.5)
    flex["kernels"] = [{"name": "flex_attention_fwd_kernel", "category": "attention"}]  # no triton_* kernel
    rows = [
        row_b("sdpa_flash", 128, 10, 9, 11),
        row_b("no_reason", 128, status="oom"),
        row_b("long_reason", 128, status="crashed", reason="x" * 201),
        row_b("just_200", 128, status="crashed", reason="y" * 200),
        flex,
        row_b("nan", 128, 5, 4, 6, numerics_ok=False, nonfinite=True, max_rel_error=0.5, error_tolerance=0.02),
        row_b("err_only", 128, 5, 4, 6, numerics_ok=False, max_rel_error=0.5, error_tolerance=None),
        row_b("tol_only", 128, 5, 4, 6, numerics_ok=False, max_rel_error=None, error_tolerance=0.02),
        row_b("no_time", 128),
    ]
    assert why_by_variant(recommend(rows)) == {
        "no_reason": "status oom: no reason recorded",
        "long_reason": "status crashed: " + "x" * 200,  # cut at 200 characters
        "just_200": "status crashed: " + "y" * 200,
        "flex_compiled": (
            "compiled flex that ran eager flex: no kernel generated by torch.compile (no triton_* kernel), as when "
            "dynamo reaches its recompile limit in a process; its time is eager flex's"
        ),
        "nan": "numerics off: NaN/Inf in the output",
        "err_only": "numerics off",
        "tol_only": "numerics off",
        "no_time": "no GPU time recorded",
    }


def test_a_row_without_cpu_time_on_the_cpu_or_the_host_says_cpu():
    cpu = recommend([row_b("a", 128, 5, 4, 6, device="cpu"), row_b("b", 128, device="cpu")])
    assert why_by_variant(cpu) == {"b": "no CPU time recorded"}
    host = recommend([host_row("a", 128, 5, 4, 6), row_b("b", 128) | {"cpu_time_us": None, "cpu_time": None}])
    assert why_by_variant(host) == {"b": "no CPU time recorded"}


# --------------------------------------------------------------------------------------------- text pieces


def test_label_names_none_non_causal_and_integral_floats():
    axes = {"batch": None, "heads": 8, "seq_q": 128.0, "head_dim": 64, "dtype": "bf16", "causal": False}
    axes |= {"mask": None, "softcap": None, "alibi": False, "mode": "fwd"}
    assert label(axes) == "B=none H=8 S=128 D=64 bf16 non-causal fwd"
    assert label({"seq_q": 128.5, "head_dim": 64}) == "S=128.5 D=64"


def test_label_with_a_mask_leaves_causal_out_and_names_the_rest():
    axes = {"seq_q": 128, "causal": True, "mask": "sliding_window", "softcap": 30.0, "alibi": True}
    axes |= {"mode": "fwd", "device": "cuda"}
    assert label(axes) == "S=128 mask=sliding_window softcap=30 alibi fwd cuda"
    assert label(axes | {"mask": None}) == "S=128 causal softcap=30 alibi fwd cuda"


def test_key_does_not_depend_on_the_order_of_the_axes():
    assert point_key({"seq_q": 128, "head_dim": 64}) == '{"head_dim": 64, "seq_q": 128}'
    assert point_key({"head_dim": 64, "seq_q": 128}) == '{"head_dim": 64, "seq_q": 128}'


def test_a_case_value_json_cannot_write_is_grouped_by_its_text():
    """A case built in Python may hold a value JSON has no type for: it is compared by its text."""

    class Layout:
        def __str__(self) -> str:
            return "paged"

    rows = [row_b("a", 128, 10, 9, 11), row_b("b", 128, 20, 19, 21)]
    for r in rows:
        r["case"]["layout"] = Layout()
    rec = recommend(rows)
    assert [(b["variant"], b["runner_up"], b["margin"]) for b in rec["best"]] == [("a", "b", 2.0)]
    assert str(rec["fixed"]["layout"]) == "paged"


def test_impl_text():
    assert impl_text(None, [], None) == "—"
    assert impl_text("sdpa_cudnn", ["sdpa_default", "sdpa_x"], "cudnn") == "sdpa_cudnn (= sdpa_default = sdpa_x)"
    assert impl_text("sdpa_default", ["sdpa_cudnn"], "cudnn") == "sdpa_default (cudnn; = sdpa_cudnn)"


def test_tie_text():
    assert tie_text({"tied": False, "preferred_over": None, "tie_reason": None}) == ""
    scores = {"tied": True, "preferred_over": "naive", "tie_reason": "quartiles overlap, and naive writes …"}
    assert tie_text(scores) == "quartiles overlap; naive writes the S×S scores out"
    assert tie_text({"tied": True, "preferred_over": None, "tie_reason": "quartiles overlap"}) == "quartiles overlap"


# --------------------------------------------------------------------------------------------- best entries


def test_best_entry_of_a_point_with_one_variant_whole():
    """One variant, 10 [9, 11] and noisy: no runner-up, so no margin, no tie and no noisy margin."""
    r = row_b("sdpa_flash", 128, 10, 9, 11)
    r["gpu_time"]["noisy"] = True
    rec = recommend([r])
    assert rec["best"] == [
        {
            "index": 0,
            "case": r["case"],
            "mode": "fwd",
            "label": "B=1 H=8 S=128 D=64 bf16 causal fwd cuda",
            "variant": "sdpa_flash",
            "same_as": [],
            "ran": None,
            "median_us": 10,
            "p25_us": 9,
            "p75_us": 11,
            "runner_up": None,
            "runner_up_same_as": [],
            "runner_up_ran": None,
            "runner_up_us": None,
            "margin": None,
            "tied": False,
            "tie_reason": None,
            "tied_with": [],
            "preferred_over": None,
            "time_source": "gpu",
            "basis": GPU_BASIS,
            "time_method": METHOD,
            "noisy": False,
            "variants_compared": 1,
            "default": None,
            # the words a run's sentence says: no twin, no next step, one variant timed 50 times, no GEMM, no
            # attention kernel recorded (so not known to be fused), numerics checked
            "same_as_us": [],
            "next_clear": None,
            "next_clear_us": None,
            "noisy_variants": [],
            "one_sample": False,
            "writes_scores": False,
            "fastest_fused": None,
            "fastest_fused_us": None,
            "numerics_checked": True,
        }
    ]
    assert rec["time_methods"] == [METHOD]


def test_best_entry_says_why_a_fused_variant_is_preferred_to_a_faster_one_that_writes_scores():
    """naive (GEMMs) 9 [8.5, 10.5] is tied with sdpa_flash 10 [9.5, 10.5]: sdpa_flash is the advice."""
    naive = row_b("naive", 128, 9, 8.5, 10.5, kernels=GEMM)
    flash = row_b("sdpa_flash", 128, 10, 9.5, 10.5, kernels=FLASH)
    (b,) = recommend([naive, flash])["best"]
    assert (b["variant"], b["preferred_over"], b["tied"]) == ("sdpa_flash", "naive", True)
    assert b["tie_reason"] == (
        "quartiles overlap, and naive writes the S×S score matrix out: sdpa_flash does the same work in O(S·D) memory"
    )


def test_margin_and_ratio_at_a_best_time_of_zero_and_below_one():
    """Best 0 µs: no margin and no ratio (not a division by zero); best 0.5 µs: 1 / 0.5 = 2 both."""
    zero = recommend([row_b("sdpa_flash", 128, 0.0, 0.0, 0.0), row_b("sdpa_default", 128, 5, 4.5, 5.5)])
    (b,) = zero["best"]
    assert (b["variant"], b["runner_up"], b["margin"]) == ("sdpa_flash", "sdpa_default", None)
    assert (b["default"]["ratio"], b["default"]["lost_us"]) == (None, 5)
    assert [(g["ratio"], g["lost_us"]) for g in zero["default_gaps"]] == [(None, 5)]
    half = recommend([row_b("sdpa_flash", 128, 0.5, 0.45, 0.55), row_b("sdpa_default", 128, 1, 0.9, 1.1)])
    (b,) = half["best"]
    assert (b["margin"], b["default"]["ratio"], b["default"]["lost_us"]) == (2.0, 2.0, 0.5)
    one = recommend([row_b("sdpa_flash", 128, 1.0, 0.95, 1.05), row_b("sdpa_default", 128, 1.5, 1.4, 1.6)])
    assert (one["best"][0]["margin"], one["best"][0]["default"]["ratio"]) == (1.5, 1.5)


def test_default_that_ran_an_aten_op_names_no_kernel_and_one_that_ran_a_kernel_names_it():
    """sdpa_default 15 [14, 16] after sdpa_cudnn 10 [9, 11]: 1.5× slower, 5 µs lost; the backend read from the
    aten op (no kernels recorded) has no kernel name; one read from a kernel gives the kernel's name."""
    best = row_b("sdpa_cudnn", 128, 10, 9, 11)
    aten = row_b("sdpa_default", 128, 15, 14, 16, sdpa_backend="cudnn")
    (b,) = recommend([best, aten])["best"]
    assert b["default"] == {
        "measured": True,
        "median_us": 15,
        "ratio": 1.5,
        "lost_us": 5,
        "is_best": False,
        "same_kernels_as_best": False,
        "tied": False,
        "ran": "cudnn",
        "kernel": None,
    }
    (b,) = recommend([best, row_b("sdpa_default", 128, 15, 14, 16, kernels=FLASH)])["best"]
    assert (b["default"]["ran"], b["default"]["kernel"]) == ("flash", FLASH[0]["name"])


def _bare_point(*variants_us: tuple[str, float]) -> Point:
    """A point built straight from its rows (fastest first), its twins and backends left at their empty defaults."""
    rows = [({"variant": v, "kernels": []}, us, None, GPU_BASIS) for v, us in variants_us]
    return Point(axes={"mode": "fwd", "seq_q": 128}, case={"seq_q": 128}, source="gpu", rows=rows, best=rows[0])


def test_a_point_that_records_no_twins_is_one_variant_per_implementation():
    p = _bare_point(("a", 10.0), ("sdpa_default", 20.0))
    assert p.group("a") == {"a"} and p.group("unknown") == {"unknown"}
    p.twins = {"a": ["b"]}
    assert p.group("a") == {"a", "b"}
    p.twins = {}
    e = best_entry(p, 3)
    assert (e["index"], e["label"], e["variant"], e["same_as"], e["runner_up"], e["runner_up_same_as"]) == (
        3,
        "S=128 fwd",
        "a",
        [],
        "sdpa_default",
        [],
    )
    assert (e["margin"], e["tied"], e["noisy"], e["tied_with"]) == (2.0, False, False, [])
    assert default_at(p, p.rows[0]) == {
        "measured": True,
        "median_us": 20.0,
        "ratio": 2.0,
        "lost_us": 10.0,
        "is_best": False,
        "same_kernels_as_best": False,
        "tied": False,
        "ran": None,
        "kernel": None,
    }


def test_twinned_only_for_an_axis_that_has_a_twin():
    """batch has no twin axis (seq_kv follows seq_q, kv_heads heads): never 'twinned', even where it is None."""
    p = _bare_point(("a", 1.0))
    p.axes = {"batch": None, "seq_q": 128, "seq_kv": 128}
    assert twinned("batch", p) is False and twinned("batch") is False
    assert twinned("seq_kv", p) is True
    q = _bare_point(("a", 1.0))
    q.axes = {"batch": None, "seq_q": 128, "seq_kv": 256}
    assert twinned("seq_kv", p, q) is False  # at q seq_kv does not follow seq_q


# --------------------------------------------------------------------------------------------- default gaps, summary


def gaps_sweep() -> list[dict[str, Any]]:
    """sdpa_flash is best at S 128 … 2048 (10, 20, 40, 80, 100 µs); sdpa_default: out of memory at 128, no GPU
    time at 256, not run at 512 and 1024, 150 [149, 151] at 2048 (on cuDNN's aten op: 1.5× slower, 50 µs lost);
    and one row with no case (a trace)."""
    return [
        row_b("sdpa_flash", 128, 10, 9, 11),
        row_b("sdpa_default", 128, status="oom", reason="CUDA out of memory"),
        row_b("sdpa_flash", 256, 20, 19, 21),
        row_b("sdpa_default", 256),
        row_b("sdpa_flash", 512, 40, 39, 41),
        row_b("sdpa_flash", 1024, 80, 79, 81),
        row_b("sdpa_flash", 2048, 100, 99, 101),
        row_b("sdpa_default", 2048, 150, 149, 151, sdpa_backend="cudnn"),
        {"variant": "trace", "status": "ok"},
    ]


def test_default_not_usable_not_run_and_slower_are_counted_per_point():
    rec = recommend(gaps_sweep())
    assert [b["index"] for b in rec["best"]] == [0, 1, 2, 3, 4]
    assert [b["default"] for b in rec["best"][:4]] == [
        {"measured": False, "why": "status oom: CUDA out of memory"},
        {"measured": False, "why": "no GPU time recorded"},
        None,
        None,
    ]
    assert rec["default_summary"] == {
        "best": 0,
        "tied": 0,
        "slower": 1,
        "not_usable": 2,
        "not_run": 2,
        "same_kernels_as_best": 0,
    }
    assert rec["default_ran"] == {"cudnn": 1}
    case = row_b("x", 2048)["case"]
    assert rec["default_gaps"] == [
        {
            "index": 4,
            "case": case,
            "mode": "fwd",
            "label": "B=1 H=8 S=2048 D=64 bf16 causal fwd cuda",
            "best": "sdpa_flash",
            "best_same_as": [],
            "best_us": 100,
            "default_us": 150,
            "ratio": 1.5,
            "lost_us": 50,
            "ran": "cudnn",
            "kernel": None,
            "basis": GPU_BASIS,
        }
    ]
    # 9 rows: 8 with a case (5 sdpa_flash, 3 sdpa_default, one of them oom) and the trace; compared: 5 sdpa_flash
    # and sdpa_default at 2048; left out: the oom row, the row with no GPU time, the trace
    assert rec["counts"] == {
        "rows": 9,
        "by_status": {"ok": 8, "oom": 1},
        "points": 5,
        "unresolved": 0,
        "compared": 6,
        "excluded": 3,
        "superseded": 0,
        "no_case": 1,
        "wrong_but_faster": 0,
    }
    # of 5 points, 2 not run and 2 not usable: it ran at 5 - 2 - 2 = 1, cuDNN there
    assert default_summary_text(rec) == (
        "sdpa_default (PyTorch's own choice; it ran cudnn at 1 point) against the best implementation: best at 0, "
        "tied at 0, slower at 1 of 5 points; not usable at 2; not run at 2"
    )
    assert rec["time_source"] == GPU_BASIS and rec["time_methods"] == [METHOD]
    assert rec["margin_formula"] == (
        "runner_up_us / median_us (median time per call of the next implementation, the fastest variant that ran other "
        "kernels than the best, over the best's)"
    )


def test_default_ran_most_points_first_then_by_name():
    """sdpa_default alone at S 128 … 1024, running efficient, flash, cudnn, flash: flash at 2, then cudnn and
    efficient at 1 each, by name (not in the order first met)."""
    backends = {128: "efficient", 256: "flash", 512: "cudnn", 1024: "flash"}
    rows = [row_b("sdpa_default", s, 10, 9, 11, sdpa_backend=b) for s, b in backends.items()]
    rec = recommend(rows)
    assert list(rec["default_ran"].items()) == [("flash", 2), ("cudnn", 1), ("efficient", 1)]
    assert rec["default_summary"]["best"] == 4
    assert default_summary_text(rec) == (
        "sdpa_default (PyTorch's own choice; it ran flash at 2, cudnn at 1, efficient at 1) against the best "
        "implementation: best at 4, tied at 0, slower at 0 of 4 points"
    )


def test_time_source_names_each_basis_and_none_without_a_point():
    rows = [row_b("a", 128, 10, 9, 11), row_b("a", 256, 10, 9, 11, device="cpu"), host_row("a", 512, 10, 9, 11)]
    rec = recommend(rows)
    assert rec["time_source"] == f"{GPU_BASIS}; {HOST_BASIS}; {CPU_BASIS}"  # sorted: 'G' < 'h' < 'w'
    empty = recommend([row_b("a", 128, status="oom")])
    assert (empty["best"], empty["time_source"], empty["time_methods"]) == ([], None, [])


def summary(ran: dict[str, int] | None = None, **counts: int) -> dict[str, Any]:
    s = {"best": 0, "tied": 0, "slower": 0, "not_usable": 0, "not_run": 0} | counts
    return {"default_summary": s, "default_ran": ran if ran is not None else {}}


def test_summary_text_when_default_never_ran():
    text = "sdpa_default was not run: PyTorch's own choice cannot be compared"
    assert default_summary_text(summary(not_run=2)) == text
    assert default_summary_text(summary()) == text


def test_summary_text_one_backend_at_every_point():
    assert default_summary_text(summary({"cudnn": 2}, best=1, slower=1)) == (
        "sdpa_default (PyTorch's own choice; it ran cudnn at all 2 points) against the best implementation: best at "
        "1, tied at 0, slower at 1 of 2 points"
    )
    assert default_summary_text(summary({"cudnn": 3}, best=1, tied=2)) == (
        "sdpa_default (PyTorch's own choice; it ran cudnn at all 3 points) against the best implementation: best at "
        "1, tied at 2, slower at 0 of 3 points"
    )
    # one point: 'at 1 point', not 'at all 1 point'
    assert default_summary_text(summary({"cudnn": 1}, best=1)) == (
        "sdpa_default (PyTorch's own choice; it ran cudnn at 1 point) against the best implementation: best at 1, "
        "tied at 0, slower at 0 of 1 point"
    )


def test_summary_text_one_backend_where_it_ran_but_not_everywhere():
    # 3 points, not usable at 1: it ran at 3 - 0 - 1 = 2, all of them cuDNN
    assert default_summary_text(summary({"cudnn": 2}, best=1, slower=1, not_usable=1)) == (
        "sdpa_default (PyTorch's own choice; it ran cudnn at 2 points) against the best implementation: best at 1, "
        "tied at 0, slower at 1 of 3 points; not usable at 1"
    )
    # 3 points, not run at 1: it ran at 3 - 1 - 0 = 2
    assert default_summary_text(summary({"cudnn": 2}, best=2, not_run=1)) == (
        "sdpa_default (PyTorch's own choice; it ran cudnn at 2 points) against the best implementation: best at 2, "
        "tied at 0, slower at 0 of 3 points; not run at 1"
    )
    # the kernels told the backend at 1 of the 2 points it ran at
    assert default_summary_text(summary({"cudnn": 1}, best=2)) == (
        "sdpa_default (PyTorch's own choice; it ran cudnn at 1) against the best implementation: best at 2, tied at 0, "
        "slower at 0 of 2 points"
    )


def test_summary_text_several_backends_and_none_known():
    # cuDNN at 2 and flash at 1 are the 3 points it ran at: still listed per backend
    assert default_summary_text(summary({"cudnn": 2, "flash": 1}, best=3)) == (
        "sdpa_default (PyTorch's own choice; it ran cudnn at 2, flash at 1) against the best implementation: best at "
        "3, tied at 0, slower at 0 of 3 points"
    )
    no_backend = (
        "sdpa_default (PyTorch's own choice) against the best implementation: best at 1, tied at 0, slower at 1 of 2 "
        "points"
    )
    assert default_summary_text(summary({}, best=1, slower=1)) == no_backend
    rec = summary(best=1, slower=1)
    del rec["default_ran"]  # a recommendation written before default_ran
    assert default_summary_text(rec) == no_backend


def test_summary_text_counts_points_where_a_twin_was_faster():
    rec = summary({"cudnn": 3}, best=3)
    rec["default_summary"]["same_kernels_as_best"] = 2
    assert default_summary_text(rec) == (
        "sdpa_default (PyTorch's own choice; it ran cudnn at all 3 points) against the best implementation: best at "
        "3 (at 2 of them a variant running the same kernels was timed faster), tied at 0, slower at 0 of 3 points"
    )
    rec["default_summary"]["same_kernels_as_best"] = 0
    plain = (
        "sdpa_default (PyTorch's own choice; it ran cudnn at all 3 points) against the best implementation: best at "
        "3, tied at 0, slower at 0 of 3 points"
    )
    assert default_summary_text(rec) == plain
    del rec["default_summary"]["same_kernels_as_best"]  # a summary written before that count: none
    assert default_summary_text(rec) == plain


# --------------------------------------------------------------------------------------------- conjunctions


def _shape(out: list[tuple[tuple[Cond, ...], int]], conds: list[Cond]) -> list[tuple[tuple[int, ...], int]]:
    return [(tuple(conds.index(c) for c in cs), m) for cs, m in out]


def test_conjunctions_stop_at_three_conditions():
    """Four conditions on four axes over 16 points, condition k true where bit k of the point's index is set (8
    points each); every AND of them is a new set of points: 4 singles, 6 pairs, 4 triples, and no quadruple."""
    conds = [Cond(a, "=", 1, sum(1 << i for i in range(16) if i >> k & 1)) for k, a in enumerate("wxyz")]
    m0, m1, m2, m3 = 0xAAAA, 0xCCCC, 0xF0F0, 0xFF00  # bit k of i set, for i = 0 … 15
    assert [c.mask for c in conds] == [m0, m1, m2, m3]
    assert _shape(candidates(conds), conds) == [
        ((0,), m0),
        ((1,), m1),
        ((2,), m2),
        ((3,), m3),
        ((0, 1), 0x8888),
        ((0, 2), 0xA0A0),
        ((0, 3), 0xAA00),
        ((1, 2), 0xC0C0),
        ((1, 3), 0xCC00),
        ((2, 3), 0xF000),
        ((0, 1, 2), 0x8080),
        ((0, 1, 3), 0x8800),
        ((0, 2, 3), 0xA000),
        ((1, 2, 3), 0xC000),
    ]


def test_conjunctions_in_index_order_one_condition_per_axis_but_a_range():
    """Hand-made masks over 8 points (bit i: point i):
        0: S ≥ 256  0b11111100      1: S ≤ 1024  0b00111111
        2: D = 64   0b01010110      3: D = 128   0b00111100
    0∧1 = 0b00111100 is 3's points: kept once; 0∧2 = 0b01010100 and 1∧2 = 0b00010110 are new; 0∧3 and 1∧3 are
    3's points; 2∧3 are two conditions on D, never combined.  0∧2∧3 and 1∧2∧3 name D twice.  0∧1∧2 = 0b00010100
    is never built: it would come from 0∧1, which was dropped (its points were 3's), and is not tried out of index
    order from 0∧2."""
    conds = [
        Cond("seq_q", "≥", 256, 0b11111100),
        Cond("seq_q", "≤", 1024, 0b00111111),
        Cond("head_dim", "=", 64, 0b01010110),
        Cond("head_dim", "=", 128, 0b00111100),
    ]
    assert _shape(candidates(conds), conds) == [
        ((0,), 0b11111100),
        ((1,), 0b00111111),
        ((2,), 0b01010110),
        ((3,), 0b00111100),
        ((0, 2), 0b01010100),
        ((1, 2), 0b00010110),
    ]


def test_conjunctions_take_one_range_of_an_axis_not_three_conditions_on_it():
    """Over 8 points: 0: S ≥ 256 0b11111100, 1: S ≤ 1024 0b00111111, 2: S ≤ 512 0b11001111 (hand-made masks).
    0∧1 = 0b00111100 and 0∧2 = 0b11001100 are ranges; 1∧2 are two '≤' on S; 0∧1∧2 = 0b00001100 names S three
    times: never built."""
    conds = [
        Cond("seq_q", "≥", 256, 0b11111100),
        Cond("seq_q", "≤", 1024, 0b00111111),
        Cond("seq_q", "≤", 512, 0b11001111),
    ]
    assert _shape(candidates(conds), conds) == [
        ((0,), 0b11111100),
        ((1,), 0b00111111),
        ((2,), 0b11001111),
        ((0, 1), 0b00111100),
        ((0, 2), 0b11001100),
    ]


def test_conjunctions_keep_the_first_of_two_with_the_same_points():
    """Over 8 points: 0: S = 128 0b00001111, 1: D = 64 0b00110011, 2: causal 0b01010011 (hand-made masks).
    0∧1 = 0b00000011, 0∧2 = 0b00000011 again: dropped; 1∧2 = 0b00010011 is new; 0∧1∧2 = 0b00000011 again."""
    conds = [
        Cond("seq_q", "=", 128, 0b00001111),
        Cond("head_dim", "=", 64, 0b00110011),
        Cond("causal", "=", True, 0b01010011),
    ]
    assert _shape(candidates(conds), conds) == [
        ((0,), 0b00001111),
        ((1,), 0b00110011),
        ((2,), 0b01010011),
        ((0, 1), 0b00000011),
        ((1, 2), 0b00010011),
    ]


def test_a_serving_case_says_why_sdpa_default_has_no_row():
    """The H100 paged decode document (page size 16, ragged lengths): sdpa_default takes one dense K and V, so it
    has no row there; 'was not run' read as if the user should have run it.  A dense case still says 'not run'."""
    import json

    from tests.rawtrace import DATA

    doc = json.loads((DATA / "h100" / "paged_decode_run.json").read_text())
    assert {r["variant"] for r in doc["results"]} == {"paged_gather_sdpa", "paged_flex_compiled", "paged_flashinfer"}
    rec = recommend(doc["results"])
    assert default_summary_text(rec) == (
        "sdpa_default has no row at these points: it takes one dense K and V for the whole batch, not a paged or "
        "ragged KV cache (the serving variants are compared instead)"
    )
    dense = recommend([row_b("sdpa_flash", s, 10, 9, 11) for s in (128, 256)])
    assert default_summary_text(dense) == "sdpa_default was not run: PyTorch's own choice cannot be compared"


def test_the_tie_rule_says_what_it_means_for_a_traced_row():
    """The H200 traces (one traced call each: p25 = p75 = the one time) have no interquartile range to overlap; the
    rule's words said 'interquartile ranges (p25–p75 of the timed calls)' alone.  A run's rows keep those words."""
    import json

    from tests.rawtrace import DATA

    run = json.loads((DATA / "h200" / "run.json").read_text())
    assert recommend(run["results"])["tie_rule"] == (
        "tied when the interquartile ranges (p25–p75 of the timed calls) overlap, or both ran the same compute "
        "kernels (the run recommendation's rule)"
    )
    traced = [dict(r, source="trace", gpu_time={**r["gpu_time"], "num_samples": 1}) for r in run["results"]
              if r.get("gpu_time")]  # fmt: skip
    assert recommend(traced)["tie_rule"].endswith(
        "; a row from a trace is one sample, its quartiles its one time, its noise not known: two traced rows tie "
        "only at equal times or by the same kernels"
    )
