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

from attnscope.analysis.recommend.sweep import recommend
from attnscope.cli.main import main

DATA = Path(__file__).parent / "data" / "cpu"
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
        ('{"variant": "a", "status": "oom", "case": {"seq_q": 1}}\n', "no row to compare (one needs status ok"),
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
    """A run document is one case: the sweep recommendation names the same best as the run recommendation.  Its
    runner-up is the next implementation: the run's runner-up where that ran other kernels than the best (on the
    CPU: naive_inplace, faster but writing the scores out), else the run's "next clear step" (on the H200:
    sdpa_cudnn ran the kernel sdpa_default ran; flex_compiled is next)."""
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
    if run.runner_up in twins:
        assert doc.parent.name == "h200" and twins == ["sdpa_cudnn"]
        assert f"the next clear step is {b['runner_up']}, {b['margin']:.2f}× slower" in run.text
        assert b["tied"] is False  # the next clear step is beyond the noise
    else:
        assert doc.parent.name == "cpu"
        assert (b["runner_up"], b["runner_up_us"], b["margin"], b["tied"]) == (
            run.runner_up,
            run.runner_up_us,
            run.margin,
            run.within_noise,
        )
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


H200_SWEEP = Path(__file__).parent.parent / "docs" / "results" / "raw" / "h200_sweep.jsonl"


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
