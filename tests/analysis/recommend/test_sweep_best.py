"""The sweep recommendation on a hand-built sweep whose answers are worked out by hand: best, runner-up,
margin and ties, rows left out, crossovers, the policy and its exceptions, sdpa_default's gaps, the tie rule's
boundaries, and implementations (variants that ran the same kernels)."""

from __future__ import annotations

import json
import math
from typing import Any

from attnscope.analysis.recommend import recommend
from attnscope.cli.main import main
from tests.analysis.recommend.sweeps import CUDNN, FLASH, GEMM, hand_sweep, impl_sweep, row, write_rows


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
    src = write_rows(tmp_path / "s.jsonl", impl_sweep())
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
