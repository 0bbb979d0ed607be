"""The sweep recommendation: a hand-built sweep whose answers are worked out below by hand, boundary
cases of the tie rule and the policy, the command line, and a real recorded CPU sweep checked against
values read straight from its JSONL."""

from __future__ import annotations

import json
import math
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

import pytest

from attnscope.analysis.recommend.sweep import (
    _axes,
    _best_entry,
    _candidates,
    _Cond,
    _cond_text,
    _conditions,
    _default_at,
    _key,
    _num,
    _Point,
    _points,
    _twinned,
    _value_text,
    axes_of,
    conditions_text,
    crossover_note,
    default_summary_text,
    exception_text,
    impl_text,
    label,
    measured_ranges,
    noise_changes_text,
    recommend,
    rule_variant_text,
    tie_text,
    value_order,
)
from attnscope.cli.main import main

DATA = Path(__file__).parents[2] / "data" / "cpu"
CUDNN = [{"name": "cudnn_generated_fort_native_sdpa_sm90_flash_fprop_wgmma_f16_knob_3_64x64x64_4x1x1_kernel0_0"}]
CUDNN[0]["category"] = "attention"
FLASH = [{"name": "void pytorch_flash::flash_fwd_kernel<Flash_fwd_kernel_traits<64, 128>>(Flash_fwd_params)"}]
FLASH[0]["category"] = "attention"
GEMM = [{"name": "sm90_xmma_gemm_bf16bf16_bf16f32", "category": "gemm"}]


def row(
    variant: str,
    s: int,
    d: int,
    med: float | None = None,
    p25: float | None = None,
    p75: float | None = None,
    *,
    status: str = "ok",
    numerics_ok: bool | None = True,
    kernels: list[dict[str, Any]] | None = None,
    device: str = "cuda",
    batch: int = 1,
    mode: str = "fwd",
    **extra: Any,
) -> dict[str, Any]:
    """A row as report/json.py writes it.  Its CPU time is 1 µs everywhere: were it compared on a GPU,
    every variant would tie."""
    case = {"batch": batch, "heads": 8, "seq_q": s, "head_dim": d, "dtype": "bf16", "causal": True}
    case |= {"kv_heads": None, "seq_kv": None, "device": device, "mask": None, "softcap": None, "alibi": False}
    r: dict[str, Any] = {"variant": variant, "case": case | {"mode": mode}, "status": status, "mode": mode}
    r["reason"] = extra.pop("reason", None)
    r["numerics_ok"] = numerics_ok if status == "ok" else None
    r["kernels"] = kernels or []
    t = {"median_us": med, "p25_us": p25, "p75_us": p75, "noisy": False, "method": "CUDA events, median of 200"}
    if device == "cpu":
        r |= {"gpu_time_us": None, "gpu_time": None, "cpu_time_us": med, "cpu_time": t if med is not None else None}
    else:
        r |= {"gpu_time_us": med, "gpu_time": t if med is not None else None}
        r |= {"cpu_time_us": 1.0, "cpu_time": {"median_us": 1.0, "p25_us": 1.0, "p75_us": 1.0}}
    return r | extra


def hand_sweep() -> list[dict[str, Any]]:
    """8 points: S 128, 256, 512, 1024 × D 64, 128, forward, on a GPU (µs: median [p25, p75]).

    S,D       flash           cudnn           sdpa_default (ran)       naive / others
    128,64    10 [9.5,10.5]   12 [11.5,12.5]  12.5 [12,13] (cudnn)     40; flex_compiled 4, wrong; sdpa_math oom
    256,64    20 [19,21]      22 [21,23]      22 [21,23] (cudnn)       80
    512,64    50 [48,52]      40 [39,41]      40.5 [40,41] (cudnn)     160
    1024,64   124 [120,128]   100 [98,102]    125 [123,127] (flash)    timeout
    128,128   20 [19,21]      30 [29,31]      30 [29.5,30.5] (cudnn)   80
    256,128   40 [39,41]      60 [58,62]      40.4 [39.8,41] (flash)   160
    512,128   80 [78,82]      90 [88,92]      90 [89,91] (cudnn)       320, numerics not checked
    1024,128  260 [250,270]   200 [195,205]   198 [194,202] (cudnn)    crashed
    """
    rows = []
    table = {
        (128, 64): ((10, 9.5, 10.5), (12, 11.5, 12.5), (12.5, 12, 13, CUDNN)),
        (256, 64): ((20, 19, 21), (22, 21, 23), (22, 21, 23, CUDNN)),
        (512, 64): ((50, 48, 52), (40, 39, 41), (40.5, 40, 41, CUDNN)),
        (1024, 64): ((124, 120, 128), (100, 98, 102), (125, 123, 127, FLASH)),
        (128, 128): ((20, 19, 21), (30, 29, 31), (30, 29.5, 30.5, CUDNN)),
        (256, 128): ((40, 39, 41), (60, 58, 62), (40.4, 39.8, 41, FLASH)),
        (512, 128): ((80, 78, 82), (90, 88, 92), (90, 89, 91, CUDNN)),
        (1024, 128): ((260, 250, 270), (200, 195, 205), (198, 194, 202, CUDNN)),
    }
    for (s, d), (fl, cu, de) in table.items():
        rows.append(row("sdpa_flash", s, d, *fl, kernels=FLASH))
        rows.append(row("sdpa_cudnn", s, d, *cu, kernels=CUDNN))
        rows.append(row("sdpa_default", s, d, *de[:3], kernels=de[3]))
        naive = s * d / 204.8  # 40 at S=128 D=64, doubling with S and with D
        if (s, d) == (1024, 64):
            rows.append(row("naive", s, d, status="timeout", reason="no result within 60 s"))
        elif (s, d) == (1024, 128):
            rows.append(row("naive", s, d, status="crashed", reason="worker died: SIGABRT\nlast line"))
        else:
            ok = None if (s, d) == (512, 128) else True
            rows.append(row("naive", s, d, naive, naive - 1, naive + 1, kernels=GEMM, numerics_ok=ok))
    wrong = row("flex_compiled", 128, 64, 4, 3.9, 4.1, numerics_ok=False, max_rel_error=0.5, error_tolerance=0.02)
    rows += [wrong, row("sdpa_math", 128, 64, status="oom", reason="CUDA out of memory")]
    return rows


def _at(rec: dict[str, Any], s: int, d: int) -> dict[str, Any]:
    (b,) = [b for b in rec["best"] if b["case"]["seq_q"] == s and b["case"]["head_dim"] == d]
    return b


def test_best_runner_up_margin_and_ties():
    rec = recommend(hand_sweep())
    assert rec["time_source"] == "GPU time per call (median)"  # not the 1 µs CPU times: those would tie all
    assert len(rec["best"]) == 8
    got = {
        (b["case"]["seq_q"], b["case"]["head_dim"]): (
            b["variant"],
            b["same_as"],
            b["median_us"],
            b["runner_up"],
            b["runner_up_same_as"],
            b["runner_up_us"],
        )
        for b in rec["best"]
    }
    # sdpa_default ran cuDNN's kernel everywhere but at (1024, 64) and (256, 128), where it ran flash's: there it
    # is one implementation with sdpa_flash, elsewhere with sdpa_cudnn.  The runner-up is the next implementation.
    assert got == {
        (128, 64): ("sdpa_flash", [], 10, "sdpa_cudnn", ["sdpa_default"], 12),  # the wrong flex_compiled (4) never wins
        (256, 64): ("sdpa_flash", [], 20, "sdpa_cudnn", ["sdpa_default"], 22),  # cudnn and default both 22: by name
        (512, 64): ("sdpa_cudnn", ["sdpa_default"], 40, "sdpa_flash", [], 50),  # not default's 40.5: the same kernel
        (1024, 64): ("sdpa_cudnn", [], 100, "sdpa_flash", ["sdpa_default"], 124),
        (128, 128): ("sdpa_flash", [], 20, "sdpa_cudnn", ["sdpa_default"], 30),  # cudnn and default both 30: by name
        (256, 128): ("sdpa_flash", ["sdpa_default"], 40, "sdpa_cudnn", [], 60),  # not default's 40.4: flash's kernel
        (512, 128): ("sdpa_flash", [], 80, "sdpa_cudnn", ["sdpa_default"], 90),
        (1024, 128): ("sdpa_default", ["sdpa_cudnn"], 198, "sdpa_flash", [], 260),  # not cudnn's 200
    }
    b = _at(rec, 128, 64)
    assert b["margin"] == 1.2 and b["tied"] is False and b["tie_reason"] is None  # 12 / 10; 11.5 > 10.5
    assert (b["ran"], b["runner_up_ran"]) == ("flash", "cudnn")
    b = _at(rec, 256, 64)
    assert b["margin"] == 22 / 20 and b["tied"] is True and b["tie_reason"] == "quartiles overlap"  # 21 = 21
    assert b["tied_with"] == ["sdpa_cudnn", "sdpa_default"]
    b = _at(rec, 512, 64)
    assert b["margin"] == 1.25 and not b["tied"] and b["tie_reason"] is None  # 50 / 40; 48 > 41
    assert b["tied_with"] == ["sdpa_default"] and b["ran"] == "cudnn"  # the same kernel: tied, one implementation
    b = _at(rec, 1024, 64)
    assert b["margin"] == 1.24 and not b["tied"]  # 124 / 100; 120 > 102
    assert _at(rec, 256, 128)["margin"] == 1.5 and not _at(rec, 256, 128)["tied"]  # 60 / 40; 58 > 41
    assert _at(rec, 512, 128)["margin"] == 1.125 and not _at(rec, 512, 128)["tied"]  # 90 / 80; 88 > 82
    b = _at(rec, 1024, 128)
    assert b["margin"] == 260 / 198 and not b["tied"] and b["default"]["is_best"]  # 250 > 202
    assert b["default"]["same_kernels_as_best"] is False  # it is the best itself
    assert _at(rec, 512, 64)["default"]["is_best"] and _at(rec, 512, 64)["default"]["same_kernels_as_best"]


def test_excluded_rows_and_counts():
    rec = recommend(hand_sweep())
    c = rec["counts"]
    # 8 points × (flash, cudnn, default, naive) + flex_compiled + sdpa_math = 34 rows
    assert c["rows"] == 34 and c["by_status"] == {"crashed": 1, "ok": 31, "oom": 1, "timeout": 1}
    assert c["points"] == 8 and c["excluded"] == 5 and c["compared"] == 29 and c["wrong_but_faster"] == 1
    why = {(e["variant"], e["label"]): e for e in rec["excluded"]}
    wrong = why[("flex_compiled", "B=1 H=8 S=128 D=64 bf16 causal fwd cuda")]
    assert wrong["faster_than_best"] is True and wrong["median_us"] == 4
    assert wrong["why"] == "numerics off: error 5.0e-01 against the fp64 reference, over the tolerance 2e-02"
    assert why[("naive", "B=1 H=8 S=512 D=128 bf16 causal fwd cuda")]["why"].startswith("numerics not checked")
    assert why[("naive", "B=1 H=8 S=1024 D=128 bf16 causal fwd cuda")]["why"] == (
        "status crashed: worker died: SIGABRT last line"
    )
    assert why[("sdpa_math", "B=1 H=8 S=128 D=64 bf16 causal fwd cuda")]["why"] == "status oom: CUDA out of memory"


def test_crossovers():
    rec = recommend(hand_sweep())
    got = {
        (x["axis"], *x["between"], x["from"], x["to"], json.dumps(x["fixed"]), x["within_noise"])
        for x in rec["crossovers"]
    }
    # Best implementation per point (a = b: the same kernels):
    #   D=64:  flash, flash, cudnn=default, cudnn (default ran flash)
    #   D=128: flash, flash=default, flash, default=cudnn
    # Along D at S=1024, sdpa_cudnn → sdpa_default is no crossover: sdpa_cudnn ran the best kernel (cuDNN's) at
    # both points.  Along S at D=128, 128 → 256 keeps flash (default ran flash's kernel at S=256, flash was best).
    assert got == {
        ("seq_q", 256, 512, "sdpa_flash", "sdpa_cudnn", '{"head_dim": 64}', True),  # cudnn was tied at S=256
        ("seq_q", 512, 1024, "sdpa_flash", "sdpa_default", '{"head_dim": 128}', False),
        ("head_dim", 64, 128, "sdpa_cudnn", "sdpa_flash", '{"seq_q": 512}', False),
    }
    x = next(x for x in rec["crossovers"] if x["axis"] == "seq_q" and x["to"] == "sdpa_default")
    assert (x["from_same_as"], x["to_same_as"], x["from_ran"], x["to_ran"]) == ([], ["sdpa_cudnn"], "flash", "cudnn")
    assert x["text"] == "S = 512 → S = 1024: sdpa_flash → sdpa_default (cudnn; = sdpa_cudnn) (D=128)"
    assert rec["axes"] == ["seq_q", "head_dim"] and rec["fixed"]["mode"] == "fwd"


def test_policy_rule_with_a_tie_and_an_exception():
    """Best (≈ tied; = the same kernels) per point:
                 S=128   256                   512               1024
    D=64:        flash   flash ≈cudnn ≈dflt    cudnn =dflt       cudnn (dflt ran flash)
    D=128:       flash   flash =dflt           flash             dflt =cudnn
    Flash is best at 5 points, so it is left to "otherwise" (3 exceptions without a rule).  "S = 1024 →
    cudnn" leaves 1 (S=512 D=64): 2 put right, the least a rule must; no rule of ≤ 2 conditions leaves 0,
    and fixing that lone point is worth 1 < 2, so it stays an exception.  sdpa_default ran the named
    variant's kernels at 1 of the 2 points of "S = 1024" and at 1 of the 6 of "otherwise"."""
    rec = recommend(hand_sweep())
    pol = rec["policy"]
    assert rec["policy_text"] == (
        "S = 1024 → sdpa_cudnn (= sdpa_default at 1 of 2 points); "
        "otherwise sdpa_flash (= sdpa_default at 1 of 6 points)"
    )
    assert [(r["text"], r["variant"], r["points"], r["agree"], r["agree_via_tie"], r["same_as"]) for r in pol] == [
        ("S = 1024", "sdpa_cudnn", 2, 2, 0, {"sdpa_default": 1}),  # at D=128 default is best, on cuDNN's kernel
        ("otherwise", "sdpa_flash", 6, 5, 0, {"sdpa_default": 1}),  # at S=256 D=128 default ran flash's kernel
    ]
    assert pol[0]["when"] == [{"axis": "seq_q", "op": "=", "value": 1024}] and pol[0]["exceptions"] == []
    (e,) = pol[1]["exceptions"]
    assert (e["label"], e["best"], e["best_same_as"], e["best_us"], e["variant_us"], e["ratio"]) == (
        "B=1 H=8 S=512 D=64 bf16 causal fwd cuda",
        "sdpa_cudnn",
        ["sdpa_default"],
        40,
        50,
        1.25,
    )
    assert rec["measured"] == {"seq_q": [128, 256, 512, 1024], "head_dim": [64, 128]}


def _winners(table: dict[tuple[Any, ...], str]) -> list[dict[str, Any]]:
    """One row per variant per point (S, D[, mode]): the winner at 10 µs [9, 11], the others at 20 µs [19, 21]."""
    rows = []
    for (s, d, *mode), w in table.items():
        for v in sorted(set(table.values())):
            us = 10.0 if v == w else 20.0
            rows.append(row(v, s, d, us, us - 1, us + 1, mode=mode[0] if mode else "fwd"))
    return rows


def test_policy_takes_three_conditions_and_no_half_right_rule():
    """z at S=128 and 1024; x at S 256–512 with D=64, y there with D=128.  "256 ≤ S ≤ 512 → x" would
    leave 2 exceptions like the rule below, with a condition less, but is right on only half its
    points (2 of 4): refused.  Then "256 ≤ S ≤ 512 → y" takes the two y points left, and z the rest."""
    table = {(s, d): "z" for s in (128, 1024) for d in (64, 128)}
    table |= {(s, 64): "x" for s in (256, 512)} | {(s, 128): "y" for s in (256, 512)}
    rec = recommend(_winners(table))
    assert rec["policy_text"] == "256 ≤ S ≤ 512 and D = 64 → x; 256 ≤ S ≤ 512 → y; otherwise z"
    assert [(r["points"], r["agree"]) for r in rec["policy"]] == [(2, 2), (2, 2), (4, 4)]
    assert rec["policy"][0]["when"] == [
        {"axis": "seq_q", "op": "≤", "value": 512},
        {"axis": "seq_q", "op": "≥", "value": 256},
        {"axis": "head_dim", "op": "=", "value": 64},
    ]


def test_policy_puts_a_narrow_rule_first():
    """S 128…2048 × D 64, 128 × fwd, fwd_bwd: cudnn at S ≥ 512 (12 points), sdpa_default at S ≤ 256 (8)
    but flash at S=128 D=128 (2).  "S ≤ 256 → default" and "S ≥ 512 → cudnn" both leave the 2 flash
    points (the narrower goes first); the rule that puts them right must come before it: it takes its
    2 points from it, and leaves no exception."""
    table = {(s, d, m): "sdpa_cudnn" for s in (512, 1024, 2048) for d in (64, 128) for m in ("fwd", "fwd_bwd")}
    table |= {(s, d, m): "sdpa_default" for s in (128, 256) for d in (64, 128) for m in ("fwd", "fwd_bwd")}
    table |= {(128, 128, m): "sdpa_flash" for m in ("fwd", "fwd_bwd")}
    rec = recommend(_winners(table))
    assert rec["policy_text"] == "S = 128 and D = 128 → sdpa_flash; S ≤ 256 → sdpa_default; otherwise sdpa_cudnn"
    assert [(r["points"], r["agree"], r["exceptions"]) for r in rec["policy"]] == [(2, 2, []), (6, 6, []), (12, 12, [])]


def test_default_gaps():
    rec = recommend(hand_sweep())
    # best: itself at (1024, 128), the same kernel as the best at (512, 64) and (256, 128); tied by the quartiles at
    # (256, 64); slower at the 4 below
    assert rec["default_summary"] == {
        "best": 3,
        "tied": 1,
        "slower": 4,
        "not_usable": 0,
        "not_run": 0,
        "same_kernels_as_best": 2,
    }
    assert rec["default_ran"] == {"cudnn": 6, "flash": 2}
    got = {
        (g["case"]["seq_q"], g["case"]["head_dim"]): (g["best"], g["ratio"], g["lost_us"], g["ran"])
        for g in rec["default_gaps"]
    }
    assert got == {
        (128, 64): ("sdpa_flash", 1.25, 2.5, "cudnn"),  # 12.5 / 10
        (1024, 64): ("sdpa_cudnn", 1.25, 25, "flash"),  # 125 / 100
        (128, 128): ("sdpa_flash", 1.5, 10, "cudnn"),  # 30 / 20
        (512, 128): ("sdpa_flash", 1.125, 10, "cudnn"),  # 90 / 80
    }
    assert all(g["kernel"] in (CUDNN[0]["name"], FLASH[0]["name"]) for g in rec["default_gaps"])


def _two(b_p25: float, **kw: Any) -> dict[str, Any]:
    a = row("sdpa_flash", 128, 64, 10, 9, 11, **kw)
    b = row("sdpa_cudnn", 128, 64, 12, b_p25, 13, **kw)
    return recommend([a, b])["best"][0]


def test_tie_boundary_is_inclusive():
    assert _two(11.0)["tied"] is True  # the runner-up's p25 equals the best's p75: the ranges touch
    assert _two(math.nextafter(11.0, 12.0))["tied"] is False
    assert _two(11.0)["margin"] == 1.2


def test_noisy_margin_is_flagged_unless_tied():
    a = row("sdpa_flash", 128, 64, 10, 9, 11)
    b = row("sdpa_cudnn", 128, 64, 15, 12, 16)
    b["gpu_time"]["noisy"] = True  # IQR/median > 10%, as measure.py sets it
    assert recommend([a, b])["best"][0]["noisy"] is True
    b["gpu_time"]["p25_us"] = 11.0  # now inside the noise: a tie, not a noisy margin
    assert recommend([a, b])["best"][0]["noisy"] is False


def test_a_variant_that_writes_scores_out_wins_only_beyond_the_noise():
    naive = row("naive", 128, 64, 9, 8.5, 10.5, kernels=GEMM)
    flash = row("sdpa_flash", 128, 64, 10, 9.5, 10.5, kernels=FLASH)
    b = recommend([naive, flash])["best"][0]
    assert (b["variant"], b["preferred_over"], b["runner_up"], b["runner_up_us"]) == ("sdpa_flash", "naive", "naive", 9)
    assert b["margin"] == 0.9 and b["tied"]
    naive = row("naive", 128, 64, 9, 8.5, 9.4, kernels=GEMM)  # 9.4 < 9.5: faster beyond the noise
    assert recommend([naive, flash])["best"][0]["variant"] == "naive"


def test_time_source_per_case():
    cpu = recommend([row("a", 64, 32, 5, 4, 6, device="cpu"), row("b", 64, 32, 7, 6.5, 8, device="cpu")])
    assert cpu["time_source"] == "wall time per call on the CPU (median)" and cpu["best"][0]["variant"] == "a"
    host = [row("a", 64, 32), row("b", 64, 32)]
    for r, us in zip(host, (3.0, 2.0), strict=True):
        r |= {"gpu_time_us": None, "gpu_time": None, "cpu_time_us": us, "cpu_time": {"median_us": us}}
    rec = recommend(host)
    assert rec["best"][0]["variant"] == "b" and rec["time_source"].startswith("host time per call")
    # on a GPU a row without GPU time is left out, never compared by its host time
    rows = [row("a", 64, 32, 5, 4, 6), row("b", 64, 32) | {"gpu_time_us": None, "gpu_time": None}]
    rec = recommend(rows)
    assert rec["best"][0]["runner_up"] is None and rec["excluded"][0]["why"] == "no GPU time recorded"


def test_later_row_of_a_job_stands_and_nothing_usable():
    rows = [row("a", 64, 32, 5, 4, 6), row("b", 64, 32, 7, 6, 8), row("a", 64, 32, 9, 8.5, 9.5)]
    rec = recommend(rows)
    assert rec["best"][0]["variant"] == "b" and rec["counts"]["superseded"] == 1
    empty = recommend([row("a", 64, 32, status="oom"), row("b", 64, 32, 1, 1, 1, numerics_ok=False)])
    assert empty["best"] == [] and empty["policy"] == [] and empty["counts"]["by_status"] == {"oom": 1, "ok": 1}


def test_batch_that_follows_seq_is_not_an_axis():
    """A fixed token budget: B·S = 4096.  Along S the batch changes too; crossovers are still found."""
    rows = []
    for s, fast in ((512, "x"), (1024, "x"), (2048, "y")):
        for v in ("x", "y"):
            us = 10.0 if v == fast else 20.0
            rows.append(row(v, s, 64, us, us - 1, us + 1, batch=4096 // s))
    rec = recommend(rows)
    assert rec["axes"] == ["seq_q"] and "batch" in rec["derived_axes"]
    (x,) = rec["crossovers"]
    assert (x["between"], x["from"], x["to"], x["also_changes"]) == ([1024, 2048], "x", "y", {"batch": [4, 2]})
    # "S = 2048 → y" would put 1 point right, under the 2 a rule must: that point is an exception
    assert rec["policy_text"] == "x everywhere measured" and rec["policy"][0]["text"] == "everywhere measured"
    assert rec["policy"][0]["exceptions"][0]["best"] == "y"


# ------------------------------------------------------------------------------------------- implementations


def _cudnn_at(s: int) -> list[dict[str, Any]]:
    """cuDNN's kernel has another name at each shape (its tile), as on the H200."""
    return [{"name": f"cudnn_generated_fort_native_sdpa_sm90_flash_fprop_wgmma_f16_knob_{s}", "category": "attention"}]


def impl_sweep() -> list[dict[str, Any]]:
    """S 128…4096, D=64, forward (µs: median [p25, p75]); sdpa_default ran flash's kernel at S ≤ 256, cuDNN's after.

    S      sdpa_flash            sdpa_cudnn            sdpa_default (ran)
    128    10 [9.8, 10.2]        12 [11.8, 12.2]       10.1 [9.9, 10.3] (flash)
    256    20 [19.8, 20.2]       21 [20.9, 21.1]       19.9 [19.7, 20.1] (flash)
    512    41 [40.1, 41.9]       40.2 [40, 40.4]       40 [39.8, 40.2] (cudnn)
    1024   100 [99, 101]         80 [79.5, 80.5]       80.5 [80, 81] (cudnn)
    2048   150 [149, 151]        160 [159, 161]        161 [160, 162] (cudnn)
    4096   302 [299, 305]        300 [297, 303]        301 [298, 304] (cudnn)
    """
    table = {
        128: ((10, 9.8, 10.2), (12, 11.8, 12.2), (10.1, 9.9, 10.3), "flash"),
        256: ((20, 19.8, 20.2), (21, 20.9, 21.1), (19.9, 19.7, 20.1), "flash"),
        512: ((41, 40.1, 41.9), (40.2, 40, 40.4), (40, 39.8, 40.2), "cudnn"),
        1024: ((100, 99, 101), (80, 79.5, 80.5), (80.5, 80, 81), "cudnn"),
        2048: ((150, 149, 151), (160, 159, 161), (161, 160, 162), "cudnn"),
        4096: ((302, 299, 305), (300, 297, 303), (301, 298, 304), "cudnn"),
    }
    rows = []
    for s, (fl, cu, de, ran) in table.items():
        rows.append(row("sdpa_flash", s, 64, *fl, kernels=FLASH))
        rows.append(row("sdpa_cudnn", s, 64, *cu, kernels=_cudnn_at(s)))
        rows.append(row("sdpa_default", s, 64, *de, kernels=FLASH if ran == "flash" else _cudnn_at(s)))
    return rows


def test_implementations_best_same_as_and_next():
    """Per S, worked out from the table above: the best is the fastest variant; same_as the variants that ran its
    kernel; the runner-up the fastest variant that ran another kernel, and the margin its time over the best's."""
    rec = recommend(impl_sweep())
    got = [
        (b["case"]["seq_q"], b["variant"], b["same_as"], b["ran"], b["runner_up"], b["runner_up_us"], b["tied"])
        for b in rec["best"]
    ]
    assert got == [
        (128, "sdpa_flash", ["sdpa_default"], "flash", "sdpa_cudnn", 12, False),  # 11.8 > 10.2
        (256, "sdpa_default", ["sdpa_flash"], "flash", "sdpa_cudnn", 21, False),  # 20.9 > 20.1
        (512, "sdpa_default", ["sdpa_cudnn"], "cudnn", "sdpa_flash", 41, True),  # flash's 40.1 ≤ default's 40.2
        (1024, "sdpa_cudnn", ["sdpa_default"], "cudnn", "sdpa_flash", 100, False),
        (2048, "sdpa_flash", [], "flash", "sdpa_cudnn", 160, False),  # 159 > 151
        (4096, "sdpa_cudnn", ["sdpa_default"], "cudnn", "sdpa_flash", 302, True),  # 299 ≤ 303
    ]
    assert [b["margin"] for b in rec["best"]] == [1.2, 21 / 19.9, 41 / 40, 1.25, 160 / 150, 302 / 300]
    assert rec["best"][4]["runner_up_same_as"] == ["sdpa_default"]  # at S=2048 cudnn and default are one, next
    assert rec["best"][2]["tie_reason"] == "quartiles overlap"
    # sdpa_default: itself best at 256 and 512, one implementation with the best at 128, 1024 and 4096, slower at 2048
    assert rec["default_summary"] == {
        "best": 5,
        "tied": 0,
        "slower": 1,
        "not_usable": 0,
        "not_run": 0,
        "same_kernels_as_best": 3,
    }
    (g,) = rec["default_gaps"]
    assert (g["case"]["seq_q"], g["best"], g["ratio"], g["ran"]) == (2048, "sdpa_flash", 161 / 150, "cudnn")


def test_implementations_crossovers():
    """128 → 256: flash → default, both on flash's kernel at both points: no crossover.  256 → 512: default is
    best at both, but on flash's kernel, then cuDNN's: a crossover of implementation.  512 → 1024: default →
    cudnn, one cuDNN kernel: none.  1024 → 2048: cudnn → flash, beyond the noise.  2048 → 4096: flash → cudnn,
    tied at 4096 (299 ≤ 303): within the noise."""
    rec = recommend(impl_sweep())
    got = [(x["between"], x["from"], x["to"], x["from_ran"], x["to_ran"], x["within_noise"]) for x in rec["crossovers"]]
    assert got == [
        ([256, 512], "sdpa_default", "sdpa_default", "flash", "cudnn", False),
        ([1024, 2048], "sdpa_cudnn", "sdpa_flash", "cudnn", "flash", False),
        ([2048, 4096], "sdpa_flash", "sdpa_cudnn", "flash", "cudnn", True),
    ]
    assert [x["text"] for x in rec["crossovers"]] == [
        "S = 256 → S = 512: sdpa_default (flash; = sdpa_flash) → sdpa_default (cudnn; = sdpa_cudnn)",
        "S = 1024 → S = 2048: sdpa_cudnn (= sdpa_default) → sdpa_flash",
        "S = 2048 → S = 4096: sdpa_flash → sdpa_cudnn (= sdpa_default)",
    ]


def test_implementations_policy_names_what_default_ran():
    """Agree (best or tied) per S: flash at 128, 256, 512, 2048, 4096 (5); default at 128, 256, 512, 1024, 4096 (5);
    cudnn at 512, 1024, 4096 (3).  Best or one implementation with it: flash 3 (128, 256, 2048), default 5.  So
    "otherwise" is sdpa_default, with its one exception at S=2048 (161 / 150); no rule puts 2 points right.  It
    ran flash's kernel at 2 points (= sdpa_flash there) and cuDNN's at 4 (= sdpa_cudnn)."""
    rec = recommend(impl_sweep())
    (r,) = rec["policy"]
    assert (r["variant"], r["points"], r["agree"], r["agree_via_tie"]) == ("sdpa_default", 6, 5, 0)
    assert (r["ran"], r["same_as"]) == ({"cudnn": 4, "flash": 2}, {"sdpa_cudnn": 4, "sdpa_flash": 2})
    assert rec["policy_text"] == (
        "sdpa_default (cudnn at 4, flash at 2; = sdpa_cudnn at 4 of 6 points, = sdpa_flash at 2 of 6 points) "
        "everywhere measured"
    )
    (e,) = r["exceptions"]
    assert (e["best"], e["variant_us"], e["ratio"]) == ("sdpa_flash", 161, 161 / 150)


def test_implementations_in_the_terminal(tmp_path, capsys):
    """The grid names each implementation in one order whichever variant was timed faster, with the next one and
    its margin; the crossovers table lists the two beyond the noise and counts the third."""
    src = _write(tmp_path / "s.jsonl", impl_sweep())
    assert main(["recommend", str(src)]) == 0
    out = capsys.readouterr().out
    assert out.count("flash=default") == 2 and out.count("cudnn=default") == 4  # S 128, 256; S 512, 1024, 2048, 4096
    assert "default=" not in out and "cudnn=default 1.07×" in out  # at S=2048 (160 / 150): the next implementation
    assert "cudnn 1.20×" in out and "flash 1.02× ≈" in out  # S=128 (12 / 10); S=512 (41 / 40), tied
    flat = " ".join(out.split())
    assert "Crossovers: where the best implementation changes (2)" in flat
    assert "1 more change within the noise: see --json" in flat
    assert "sdpa_default (flash; = sdpa_flash) → sdpa_default (cudnn; = sdpa_cudnn)" in flat
    assert "sdpa_flash → sdpa_cudnn (= sdpa_default)" not in flat  # the one within the noise


# ------------------------------------------------------------------------------------------- command line


def _write(path: Path, rows: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def test_cli_prints_and_writes_json(tmp_path, capsys):
    src = _write(tmp_path / "s.jsonl", hand_sweep())
    out = tmp_path / "rec.json"
    assert main(["recommend", str(src), "--json", str(out)]) == 0
    text = capsys.readouterr().out
    assert f"Policy: {recommend(hand_sweep())['policy_text']}" in " ".join(text.split())
    assert "best at 3 (at 2 of them a variant running the same kernels was timed faster), tied at 1, slower at 4" in (
        " ".join(text.split())
    )
    doc = json.loads(out.read_text())
    assert doc["kind"] == "recommend" and doc["files"] == [str(src)]
    assert {"best", "crossovers", "policy", "default_gaps", "excluded", "counts", "time_source"} <= set(doc)
    b = next(b for b in doc["best"] if b["case"]["seq_q"] == 128 and b["case"]["head_dim"] == 64)
    assert {"case", "mode", "variant", "median_us", "runner_up", "margin", "tied", "same_as"} <= set(b)


def test_page_and_terminal_say_the_same(tmp_path, capsys):
    pytest.importorskip("plotly")
    from attnscope.api.report import render_html

    page = render_html([hand_sweep()])
    src = _write(tmp_path / "s.jsonl", hand_sweep())
    assert main(["recommend", str(src)]) == 0
    text = capsys.readouterr().out
    rec = recommend(hand_sweep())
    text = " ".join(text.split())  # rich wraps long lines
    for said in (rec["policy_text"], "tied at 1, slower at 4 of 8 points"):
        assert said in text and said in page
    assert "1.25× slower" in page and "1.10× (tied: quartiles overlap)" in page  # S=128 D=64 default; S=256 D=64


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (None, "no such file"),
        ("", "no attnscope result rows"),
        ("not json\n", "no attnscope result rows"),
        ('{"variant": "a", "status": "ok", "kernels": 5}\n', "kernels must be a list of objects"),
        ('{"variant": 3, "status": "ok"}\n', "needs variant and status strings"),
        ('{"variant": "a", "status": "ok", "case": "big"}\n', "case must be an object or null"),
        ('{"variant": "a", "status": "ok", "gpu_time_us": "fast"}\n', "gpu_time_us must be a number"),
    ],
)
def test_cli_bad_input_is_one_line_exit_2(tmp_path, capsys, content, message):
    path = tmp_path / "in.jsonl"
    if content is not None:
        path.write_text(content)
    assert main(["recommend", str(path)]) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1 and "Traceback" not in err


def test_cli_rows_that_all_failed_exit_1_with_the_reason(tmp_path, capsys):
    """Well-formed rows none of which was measured: nothing to compare (exit 1, as documented), not bad input."""
    path = tmp_path / "in.jsonl"
    path.write_text('{"variant": "a", "status": "oom", "case": {"seq_q": 1}}\n')
    assert main(["recommend", str(path)]) == 1
    out = capsys.readouterr()
    assert "no row to compare (one needs status ok" in out.err + out.out and "Traceback" not in out.err


def test_cli_bad_paths(tmp_path, capsys):
    src = _write(tmp_path / "s.jsonl", hand_sweep())
    assert main(["recommend", str(tmp_path)]) == 2
    assert main(["recommend", str(src), "--json", str(tmp_path)]) == 2
    err = capsys.readouterr().err.splitlines()
    assert err == [
        f"attnscope: error: {tmp_path}: not a file",
        f"attnscope: error: --json {tmp_path}: is a directory; name a file",
    ]


# ------------------------------------------------------------------------------------------- a real sweep


def _raw(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def test_real_cpu_sweep_against_its_jsonl():
    """tests/data/cpu/tiny_sweep.jsonl: 4 variants × S 64, 256, 1024 × D 32, 64 × fwd, fwd_bwd on a CPU
    (make_tiny_sweep.py).  Every number the recommendation gives is read back from the file's own rows."""
    raw = _raw(DATA / "tiny_sweep.jsonl")
    rec = recommend(raw)
    assert rec["counts"]["rows"] == len(raw) and rec["counts"]["by_status"] == dict(Counter(r["status"] for r in raw))
    by_point: dict[tuple[Any, ...], dict[str, dict[str, Any]]] = defaultdict(dict)
    for r in raw:
        c = r["case"]
        by_point[(c["seq_q"], c["head_dim"], r["mode"])][r["variant"]] = r
    # a loaded CPU: at S=256 D=32 fwd_bwd naive_inplace's quartiles overlap sdpa_math's 37.7× away: no best there
    assert {(u["case"]["seq_q"], u["case"]["head_dim"], u["mode"]) for u in rec["unresolved"]} == {(256, 32, "fwd_bwd")}
    assert len(by_point) == 12 and len(rec["best"]) == 11
    assert all(r["gpu_time_us"] is None for r in raw) and rec["time_source"] == "wall time per call on the CPU (median)"

    def kernels(r: dict[str, Any]) -> set[str]:
        return {k["name"] for k in r["kernels"] if k["category"] not in ("memcpy", "memset")}

    def tied(a: dict[str, Any], b: dict[str, Any]) -> bool:
        ta, tb = a["cpu_time"], b["cpu_time"]
        overlap = ta["p75_us"] >= tb["p25_us"] and tb["p75_us"] >= ta["p25_us"]
        return overlap or (bool(kernels(a)) and kernels(a) == kernels(b))

    for b in rec["best"]:
        rows = by_point[(b["case"]["seq_q"], b["case"]["head_dim"], b["mode"])]
        ok = {v: r for v, r in rows.items() if r["status"] == "ok" and r["numerics_ok"] is True}
        assert b["variants_compared"] == len(ok)
        best = ok[b["variant"]]
        assert b["median_us"] == best["cpu_time_us"]
        fastest = min(ok.values(), key=lambda r: r["cpu_time_us"])
        if b["preferred_over"] is None:
            assert best is fastest
        else:
            assert fastest["variant"] == b["preferred_over"] and tied(best, fastest)
        # one implementation: the variants that ran the best's kernels; the runner-up: the fastest of the others
        same = sorted(v for v, r in ok.items() if r is not best and kernels(r) and kernels(r) == kernels(best))
        assert sorted(b["same_as"]) == same
        others = [r for v, r in ok.items() if v != b["variant"] and v not in same]
        nxt = min(others, key=lambda r: (r["cpu_time_us"], r["variant"]))
        assert b["runner_up"] == nxt["variant"]
        assert b["runner_up_us"] == nxt["cpu_time_us"] and b["margin"] == nxt["cpu_time_us"] / best["cpu_time_us"]
        assert b["tied"] == tied(best, nxt)
        assert sorted(b["tied_with"]) == sorted(v for v, r in ok.items() if r is not best and tied(best, r))
        d = ok.get("sdpa_default")
        if d is not None and d is not best and not tied(best, d):
            (g,) = [g for g in rec["default_gaps"] if g["index"] == b["index"]]
            assert g["ratio"] == d["cpu_time_us"] / best["cpu_time_us"] and g["ran"] == "flash"
    gaps = sum(1 for b in rec["best"] if b["default"] and not b["default"]["is_best"] and not b["default"]["tied"])
    assert len(rec["default_gaps"]) == gaps
    # the policy covers every measured point once, and its counts add up
    assert sum(r["points"] for r in rec["policy"]) == 11
    for r in rec["policy"]:
        assert r["agree"] + len(r["exceptions"]) == r["points"]
        for e in r["exceptions"]:
            assert e["best"] != r["variant"]


@pytest.mark.parametrize("doc", [DATA / "run_all.json", DATA.parent / "h200" / "run.json"], ids=["cpu", "h200"])
def test_one_case_says_what_the_run_recommendation_says(doc, capsys):
    """A run document is one case: the sweep recommendation and the run's sentence are one answer (the one
    recommender): the same best, runner-up (the next implementation: on the H200 sdpa_cudnn ran the kernel
    sdpa_default ran, so flex_compiled is next), margin and tie verdict."""
    from attnscope.analysis.recommend.run import recommend as run_recommend

    results = json.loads(doc.read_text())["results"]
    run = run_recommend(results)
    assert run is not None
    if doc.parent.name == "cpu":
        # a loaded CPU: naive_inplace 319.4 µs [301.4, 49,585.5] overlaps sdpa_flash 15,973.5 µs [487.6, 28,003.0]
        # (50×) and, widest, flex_compiled 46,040.3 µs [39,657.2, 54,999.0] (144×): both recommenders name no best
        # (a tie is never resolved across more than 1.5×)
        rec = recommend(results)
        assert run.unresolved and rec["best"] == [] and len(rec["unresolved"]) == 1
        u = rec["unresolved"][0]
        assert (u["fastest"], u["tied_slow"]) == ("naive_inplace", "flex_compiled")
        assert "measure again on a quiet machine" in run.text and "measure again on a quiet machine" in str(rec)
        return
    (b,) = recommend(results)["best"]
    assert (b["variant"], b["median_us"], b["basis"]) == (run.best, run.best_us, run.basis)
    by = {r["variant"]: r for r in results}
    twins = sorted(v for v, r in by.items() if v != run.best and r["kernels"] and _kernels(r) == _kernels(by[run.best]))
    assert sorted(b["same_as"]) == twins
    assert doc.parent.name == "h200" and twins == ["sdpa_cudnn"]
    # one runner-up, the next implementation, with one margin and one tie verdict
    assert (b["runner_up"], b["runner_up_us"], b["margin"], b["tied"]) == (
        run.runner_up,
        run.runner_up_us,
        run.margin,
        run.within_noise,
    )
    assert run.runner_up == "flex_compiled" and "sdpa_cudnn ran the same kernels" in run.text
    assert main(["recommend", str(doc)]) == 0  # the command reads a run document too
    out = " ".join(capsys.readouterr().out.split())
    # one implementation of two variants, equally right: the policy names PyTorch's own choice (nothing to change),
    # with what it ran and its twin
    ran = "flash" if doc.parent.name == "cpu" else "cudnn"
    other = b["variant"] if b["variant"] != "sdpa_default" else twins[0]
    assert f"Policy: sdpa_default ({ran}; = {other}) everywhere measured" in out


def _kernels(r: dict[str, Any]) -> set[str]:
    """The compute kernels' names of a row, read straight from it."""
    return {k["name"] for k in r["kernels"] if k["category"] not in ("memcpy", "memset")}


H200_SWEEP = Path(__file__).parents[3] / "docs" / "results" / "raw" / "h200_sweep.jsonl"


def _h200_walk() -> tuple[list[dict[str, Any]], dict[tuple[Any, ...], dict[str, Any]]]:
    """The H200 sweep's rows, and per point (mode, S, D, causal), read straight from them: the ok rows by GPU median,
    the fastest, the variants that ran its compute kernels, and the fastest variant that ran other kernels."""
    raw = _raw(H200_SWEEP)
    pts: dict[tuple[Any, ...], list[dict[str, Any]]] = defaultdict(list)
    for r in raw:
        c = r["case"]
        pts[(r["mode"], c["seq_q"], c["head_dim"], c["causal"])].append(r)
    walk = {}
    for k, rows in pts.items():
        ok = [r for r in rows if r["status"] == "ok" and r["numerics_ok"] is True and not _eager_flex(r)]
        ok.sort(key=lambda r: (r["gpu_time"]["median_us"], r["variant"]))
        fastest = ok[0]
        group = {r["variant"] for r in ok if _kernels(r) == _kernels(fastest)}
        nxt = next(r for r in ok if r["variant"] not in group)
        walk[k] = {"by": {r["variant"]: r for r in ok}, "best": fastest, "group": group, "next": nxt}
    return raw, walk


def _eager_flex(r: dict[str, Any]) -> bool:
    """A flex_compiled row whose kernels hold none generated by torch.compile (triton_*): it ran eager flex."""
    return r["variant"] == "flex_compiled" and not any(n.startswith("triton_") for n in _kernels(r))


def _iqr_overlap(a: dict[str, Any], b: dict[str, Any]) -> bool:
    ta, tb = a["gpu_time"], b["gpu_time"]
    return ta["p75_us"] >= tb["p25_us"] and tb["p75_us"] >= ta["p25_us"]


def test_real_h200_sweep_implementations_against_its_rows(capsys):
    """docs/results/raw/h200_sweep.jsonl (437 rows, 64 points).  On Hopper sdpa_default runs cuDNN, so it and
    sdpa_cudnn ran the same kernels at every point: one implementation.  Every best, twin, runner-up and margin
    is checked against the test's own walk over the rows' GPU medians and kernel names."""
    raw, walk = _h200_walk()
    rec = recommend(raw)
    assert len(raw) == 437 and len(walk) == 64 and len(rec["best"]) == 64
    eager = sum(_eager_flex(r) for r in raw)  # compiled flex past dynamo's recompile limit: eager flex, left out
    assert eager == 37 and rec["counts"]["excluded"] == eager and rec["counts"]["compared"] == 437 - eager
    assert {e["variant"] for e in rec["excluded"]} == {"flex_compiled"}
    for w in walk.values():
        assert w["best"]["variant"] not in ("naive", "sdpa_math")  # a fused variant is fastest: no score preference
        d, cu = w["by"]["sdpa_default"], w["by"]["sdpa_cudnn"]
        assert _kernels(d) == _kernels(cu) and all("cudnn" in n for n in _kernels(d))  # default ran cuDNN's kernels
    for b in rec["best"]:
        c = b["case"]
        w = walk[(b["mode"], c["seq_q"], c["head_dim"], c["causal"])]
        best, nxt = w["best"], w["next"]
        assert b["variant"] == best["variant"] and sorted(b["same_as"]) == sorted(w["group"] - {best["variant"]})
        assert b["runner_up"] == nxt["variant"] and b["runner_up_us"] == nxt["gpu_time"]["median_us"]
        assert b["margin"] == nxt["gpu_time"]["median_us"] / best["gpu_time"]["median_us"]
        assert b["tied"] == _iqr_overlap(best, nxt)
    # S=4096 D=128 causal forward: cuDNN (sdpa_cudnn = sdpa_default) is best; the fastest other implementation is
    # flash, 1.75× slower (the rows' medians: sdpa_flash over the faster of sdpa_cudnn and sdpa_default)
    w = walk[("fwd", 4096, 128, True)]
    assert w["group"] == {"sdpa_cudnn", "sdpa_default"} and w["next"]["variant"] == "sdpa_flash"
    ratio = w["by"]["sdpa_flash"]["gpu_time"]["median_us"] / min(
        w["by"][v]["gpu_time"]["median_us"] for v in ("sdpa_cudnn", "sdpa_default")
    )
    (b,) = [b for b in rec["best"] if b["label"] == "B=4 H=16 S=4096 D=128 bf16 causal fwd cuda"]
    assert b["runner_up"] == "sdpa_flash" and b["margin"] == ratio and f"{ratio:.2f}" == "1.75"

    # crossovers: adjacent values of one axis, the others held, where no variant is in both points' best group
    axes = {"mode": 0, "seq_q": 1, "head_dim": 2, "causal": 3}
    want = set()
    for a, i in axes.items():
        values = sorted({k[i] for k in walk}, key=str if a == "mode" else None)
        for k in walk:
            if k[i] == values[-1]:
                continue
            k2 = (*k[:i], values[values.index(k[i]) + 1], *k[i + 1 :])
            if not walk[k]["group"] & walk[k2]["group"]:
                want.add((a, k, k2))
    got = set()
    for x in rec["crossovers"]:
        ki, kj = (rec["best"][n] for n in x["points"])
        key = [(b["mode"], b["case"]["seq_q"], b["case"]["head_dim"], b["case"]["causal"]) for b in (ki, kj)]
        got.add((x["axis"], *key))
        assert x["within_noise"] is False  # flex_compiled against cuDNN, beyond the noise on both sides
    flex = ("fwd_bwd", 128, 128, False)  # the one point where flex_compiled (compiled FlexAttention) beats cuDNN
    assert walk[flex]["best"]["variant"] == "flex_compiled" and len(want) == 4 and all(flex in x for x in want)
    assert got == want

    # sdpa_default: the best implementation at the 63 points where it is in the best group, slower at the flex one
    assert rec["default_summary"]["best"] == sum("sdpa_default" in w["group"] for w in walk.values()) == 63
    assert rec["default_summary"]["slower"] == 1 and rec["default_ran"] == {"cudnn": 64}
    (g,) = rec["default_gaps"]
    fw = walk[flex]["by"]
    assert g["ratio"] == fw["sdpa_default"]["gpu_time"]["median_us"] / fw["flex_compiled"]["gpu_time"]["median_us"]
    assert rec["policy_text"] == "sdpa_default (cudnn; = sdpa_cudnn) everywhere measured"
    (r,) = rec["policy"]
    assert (r["agree"], r["agree_via_tie"], [e["best"] for e in r["exceptions"]]) == (63, 0, ["flex_compiled"])

    assert main(["recommend", str(H200_SWEEP)]) == 0
    out = capsys.readouterr().out
    assert "Crossovers: where the best implementation changes (4)" in out and "within the noise: see" not in out
    assert "Policy: sdpa_default (cudnn; = sdpa_cudnn) everywhere measured" in out
    # 63 points with cuDNN best, and at the flex one cuDNN next (1.03×, on a line of its own in a narrow column)
    assert out.count("cudnn=default") == 64 and "flash 1.75×" in out


# The sweep recommendation's axes, crossovers and policy, pinned on small hand-made sweeps: how a row becomes
# axis values, how rows without a case are counted, which axes vary on their own, where the best implementation
# changes, the conditions a policy may use, how the greedy policy picks and orders its rules, and the texts the
# terminal and the page print from them.
#
# Every expected value is worked out by hand in the test or its docstring.  A row's time is its GPU median with
# quartiles median ± 1 µs unless told: a winner at 10 µs [9, 11] and a loser at 20 µs [19, 21] never tie, 10 [9, 11]
# and 10.5 [9.5, 11.5] always do.  Points are numbered in the order the sweep sorts them (mode, S, D, … as in
# ``AXES``); a mask's bit i is point i.  A case label reads 'B=1 H=8 S=128 D=64 bf16 causal fwd cuda'.


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
    assert [_value_text("causal", v) for v in (True, False)] == ["causal", "non-causal"]
    assert [_value_text("alibi", v) for v in (True, False, None)] == ["alibi", "no-alibi", "no-alibi"]
    assert _value_text("seq_kv", 1024.0) == "S_kv=1024"  # a whole float as an integer
    assert _value_text("softcap", 30.0) == "softcap=30"  # no symbol: the field's name
    assert _value_text("mask", "sliding_window") == "mask=sliding_window"
    assert _value_text("window", None) == "window=none"
    assert _value_text("dtype", "fp16") == "fp16"


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
    (p,) = _points(rows)[0]
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
    points = _points(rows)[0]
    assert measured_ranges(points, ["dtype"]) == {"dtype": [BF16, FP16]}
    assert _axes(points)[0] == ["head_dim", "dtype"]


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
    assert [_cond_text("causal", "=", v) for v in (True, False)] == ["causal", "non-causal"]
    assert [_cond_text("alibi", "=", v) for v in (True, False)] == ["alibi", "no-alibi"]
    assert _cond_text("softcap", "≤", 30.0) == "softcap ≤ 30"
    assert _cond_text("seq_q", "≥", 512) == "S ≥ 512"
    assert _cond_text("mask", "=", "sliding") == "mask = sliding"
    range_and_flag = [_Cond("softcap", "≤", 50.0, 0), _Cond("softcap", "≥", 20.0, 0), _Cond("causal", "=", False, 0)]
    assert conditions_text(range_and_flag) == "20 ≤ softcap ≤ 50 and non-causal"
    assert conditions_text([_Cond("head_dim", "≥", 64, 0), _Cond("head_dim", "≤", 128, 0)]) == "64 ≤ D ≤ 128"


def test_conditions_are_cuts_between_measured_values_each_set_of_points_once():
    """Points 0: S=128 D=128, 1: S=256 D=256, 2: S=512 D=64, all forward.  mode = fwd holds everywhere: no condition.
    S: '=' gives {0}, {1}, {2}; '≤' 128 is {0} again, '≤ 256' {0, 1}; '≥ 512' is {2} again, '≥ 256' {1, 2}.
    D: '= 64' {2}, '= 128' {0}, '= 256' {1}, all taken; '≤ 64' {2} taken, '≤ 128' {0, 2} new; '≥ 256' {1} and
    '≥ 128' {0, 1} taken."""
    rows = [row_s("a", 10.0, s=s, d=d) for s, d in ((128, 128), (256, 256), (512, 64))]
    points = _points(rows)[0]
    got = [(c.axis, c.op, c.value, c.mask) for c in _conditions(points, ["mode", "seq_q", "head_dim"])]
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
    points = _points(rows)[0]
    got = [(c.axis, c.op, c.value, c.mask) for c in _conditions(points, ["window"])]
    assert got == [("window", "=", 64, 0b001), ("window", "=", 128, 0b010), ("window", "=", 256, 0b100)]
    got = [(c.axis, c.op, c.value, c.mask) for c in _conditions(points, ["softcap"])]
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


# The sweep recommendation's best-per-point, default-gap and summary code, pinned where mutation testing found it
# unchecked: reading the times (``*_time_us`` or the timing's median, the quartiles of the host time), why a row is
# left out (each message whole), the case label, a best entry and sdpa_default's entry as whole dicts, the counts
# and the summary line at each of its boundaries, and the conjunctions a policy may use.
#
# Every expected value is read off the hand-made rows or dicts of its test, with the arithmetic in the comments;
# the conjunction tests use hand-written masks (bit i: point i) whose ANDs are worked out in their docstrings.


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
    assert _num(3) == 3.0 and isinstance(_num(3), float)
    assert _num(2.5) == 2.5
    assert _num(float("inf")) is None and _num(float("-inf")) is None and _num(float("nan")) is None
    assert _num(True) is None and _num("3") is None and _num(None) is None


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
    assert _key({"seq_q": 128, "head_dim": 64}) == '{"head_dim": 64, "seq_q": 128}'
    assert _key({"head_dim": 64, "seq_q": 128}) == '{"head_dim": 64, "seq_q": 128}'


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


def _bare_point(*variants_us: tuple[str, float]) -> _Point:
    """A point built straight from its rows (fastest first), its twins and backends left at their empty defaults."""
    rows = [({"variant": v, "kernels": []}, us, None, GPU_BASIS) for v, us in variants_us]
    return _Point(axes={"mode": "fwd", "seq_q": 128}, case={"seq_q": 128}, source="gpu", rows=rows, best=rows[0])


def test_a_point_that_records_no_twins_is_one_variant_per_implementation():
    p = _bare_point(("a", 10.0), ("sdpa_default", 20.0))
    assert p.group("a") == {"a"} and p.group("unknown") == {"unknown"}
    p.twins = {"a": ["b"]}
    assert p.group("a") == {"a", "b"}
    p.twins = {}
    e = _best_entry(p, 3)
    assert (e["index"], e["label"], e["variant"], e["same_as"], e["runner_up"], e["runner_up_same_as"]) == (
        3,
        "S=128 fwd",
        "a",
        [],
        "sdpa_default",
        [],
    )
    assert (e["margin"], e["tied"], e["noisy"], e["tied_with"]) == (2.0, False, False, [])
    assert _default_at(p, p.rows[0]) == {
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
    assert _twinned("batch", p) is False and _twinned("batch") is False
    assert _twinned("seq_kv", p) is True
    q = _bare_point(("a", 1.0))
    q.axes = {"batch": None, "seq_q": 128, "seq_kv": 256}
    assert _twinned("seq_kv", p, q) is False  # at q seq_kv does not follow seq_q


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
        "tied at 0, slower at 0 of 1 points"
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


def _shape(out: list[tuple[tuple[_Cond, ...], int]], conds: list[_Cond]) -> list[tuple[tuple[int, ...], int]]:
    return [(tuple(conds.index(c) for c in cs), m) for cs, m in out]


def test_conjunctions_stop_at_three_conditions():
    """Four conditions on four axes over 16 points, condition k true where bit k of the point's index is set (8
    points each); every AND of them is a new set of points: 4 singles, 6 pairs, 4 triples, and no quadruple."""
    conds = [_Cond(a, "=", 1, sum(1 << i for i in range(16) if i >> k & 1)) for k, a in enumerate("wxyz")]
    m0, m1, m2, m3 = 0xAAAA, 0xCCCC, 0xF0F0, 0xFF00  # bit k of i set, for i = 0 … 15
    assert [c.mask for c in conds] == [m0, m1, m2, m3]
    assert _shape(_candidates(conds), conds) == [
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
        _Cond("seq_q", "≥", 256, 0b11111100),
        _Cond("seq_q", "≤", 1024, 0b00111111),
        _Cond("head_dim", "=", 64, 0b01010110),
        _Cond("head_dim", "=", 128, 0b00111100),
    ]
    assert _shape(_candidates(conds), conds) == [
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
        _Cond("seq_q", "≥", 256, 0b11111100),
        _Cond("seq_q", "≤", 1024, 0b00111111),
        _Cond("seq_q", "≤", 512, 0b11001111),
    ]
    assert _shape(_candidates(conds), conds) == [
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
        _Cond("seq_q", "=", 128, 0b00001111),
        _Cond("head_dim", "=", 64, 0b00110011),
        _Cond("causal", "=", True, 0b01010011),
    ]
    assert _shape(_candidates(conds), conds) == [
        ((0,), 0b00001111),
        ((1,), 0b00110011),
        ((2,), 0b01010011),
        ((0, 1), 0b00000011),
        ((1, 2), 0b00010011),
    ]
