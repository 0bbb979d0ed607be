"""A tie is never resolved in favour of a variant whose median is more than 1.5× slower than another measured
one at the point: such a point is unresolved ("measure again on a quiet machine"), never a best.  Hand-made
rows; every ratio below is worked out by hand."""

from __future__ import annotations

from typing import Any

import pytest

from attnscope.analysis.recommend import recommend
from attnscope.analysis.rules.ties import choose_best, unresolved_tie
from attnscope.report.text.sweep import render

GEMM = [{"name": "at::native::cpublas::gemm_bf16", "category": "gemm"}]  # naive writes the scores out
FUSED = [{"name": "at::native::cpu_flash_attention_bf16", "category": "attention"}]


def row(variant: str, s: int, med: float, p25: float, p75: float) -> dict[str, Any]:
    case = {"batch": 1, "heads": 8, "seq_q": s, "head_dim": 64, "dtype": "bf16", "causal": True}
    case |= {"kv_heads": None, "seq_kv": None, "device": "cpu", "mask": None, "softcap": None, "alibi": False}
    t = {"median_us": med, "p25_us": p25, "p75_us": p75, "noisy": False, "method": "wall clock, median"}
    return {
        "variant": variant,
        "case": case | {"mode": "fwd"},
        "mode": "fwd",
        "status": "ok",
        "numerics_ok": True,
        "kernels": GEMM if variant == "naive" else FUSED,
        "gpu_time_us": None,
        "gpu_time": None,
        "cpu_time_us": med,
        "cpu_time": t,
        "device_kind": "cpu",
    }


def _row_tuple(r: dict[str, Any]) -> tuple[dict[str, Any], float, dict[str, Any], str]:
    t = r["cpu_time"]
    return r, t["median_us"], t, "cpu"


def rows() -> list[dict[str, Any]]:
    """S=128: the loaded-machine case: naive 513 [400, 5000] and flash 4758 [4000, 5500] overlap, 9.3× apart.
    S=256: clear: naive 100 [99, 101], flash 200 [199, 201], no overlap: naive best.
    S=512: a fair tie: naive 100 [90, 130], flash 140 [120, 150]: 1.4× ≤ 1.5×, flash (fused) preferred.
    S=1024: exactly 1.5×: naive 100 [90, 160], flash 150 [140, 160]: not over 1.5, flash preferred.
    S=2048: 1.51×: naive 100 [90, 160], flash 151 [140, 160]: unresolved."""
    return [
        row("naive", 128, 513, 400, 5000),
        row("sdpa_flash", 128, 4758, 4000, 5500),
        row("naive", 256, 100, 99, 101),
        row("sdpa_flash", 256, 200, 199, 201),
        row("naive", 512, 100, 90, 130),
        row("sdpa_flash", 512, 140, 120, 150),
        row("naive", 1024, 100, 90, 160),
        row("sdpa_flash", 1024, 150, 140, 160),
        row("naive", 2048, 100, 90, 160),
        row("sdpa_flash", 2048, 151, 140, 160),
    ]


def test_a_wide_tie_is_unresolved_never_a_best():
    rec = recommend(rows())
    best = {b["case"]["seq_q"]: (b["variant"], b["preferred_over"]) for b in rec["best"]}
    assert best == {256: ("naive", None), 512: ("sdpa_flash", "naive"), 1024: ("sdpa_flash", "naive")}
    un = {u["case"]["seq_q"]: u for u in rec["unresolved"]}
    assert set(un) == {128, 2048}
    assert all(u["unresolved"] is True and "measure again on a quiet machine" in u["why"] for u in un.values())
    assert (un[128]["fastest"], un[128]["tied_slow"]) == ("naive", "sdpa_flash")
    assert un[128]["ratio"] == pytest.approx(4758 / 513)
    assert un[2048]["ratio"] == pytest.approx(1.51)
    assert "9.3× slower" in un[128]["why"]
    assert rec["counts"]["unresolved"] == 2 and rec["counts"]["points"] == 5
    # an unresolved point is in no crossover and no policy rule
    assert sum(r["points"] for r in rec["policy"]) == 3
    assert all(128 not in x["between"] and 2048 not in x["between"] for x in rec["crossovers"])
    from rich.console import Console

    console = Console(width=200, record=True)
    console.print(render(rec))
    text = console.export_text()
    assert "unresolved B=1 H=8 S=128 D=64 bf16 causal fwd cpu" in text
    assert text.count("measure again on a quiet machine") == 2


def test_every_point_unresolved_names_no_best():
    rec = recommend(rows()[:2])
    assert rec["best"] == [] and len(rec["unresolved"]) == 1
    from rich.console import Console

    console = Console(width=200, record=True)
    console.print(render(rec))
    assert "every point is unresolved" in console.export_text()


def test_unresolved_tie_spans_more_than_1_5x():
    naive, flash = _row_tuple(rows()[0]), _row_tuple(rows()[1])
    assert unresolved_tie([naive, flash]) == (naive, flash)  # quartiles overlap, but 9.3× slower
    fair = [_row_tuple(rows()[4]), _row_tuple(rows()[5])]
    assert choose_best(fair) == (fair[1], fair[0])  # 1.4×: the fused one, as before
    assert unresolved_tie(fair) is None
    clear = [_row_tuple(rows()[2]), _row_tuple(rows()[3])]
    assert unresolved_tie(clear) is None  # 2× apart but not tied: a clear answer
    edge = [_row_tuple(rows()[6]), _row_tuple(rows()[7])]
    assert unresolved_tie(edge) is None  # exactly 1.5×: not over it


def test_the_run_recommendation_names_no_best_either():
    from attnscope.analysis.recommend.run import recommend as run_recommend

    rec = run_recommend(rows()[:2])
    assert rec is not None and rec.unresolved is True and rec.within_noise is True
    assert rec.text.startswith("unresolved: sdpa_flash (4,758.0 µs) counts as tied with naive (513.0 µs)")
    assert "9.3× slower" in rec.text and "measure again on a quiet machine" in rec.text
    fair = run_recommend(rows()[4:6])
    assert fair is not None and fair.unresolved is False and fair.best == "sdpa_flash"  # 1.4×: fused preferred


def test_the_sweep_page_lists_the_unresolved_points():
    from attnscope.report.html.sweep import recommendation_block

    page = str(recommendation_block(recommend(rows())))
    assert "Unresolved points (2)" in page and page.count("measure again on a quiet machine") == 2
    alone = str(recommendation_block(recommend(rows()[:2])))
    assert "Every point is unresolved" in alone and "Unresolved points (1)" in alone


def test_no_use_x_advice_at_an_unresolved_case():
    from attnscope.analysis.annotate import peers_of
    from attnscope.analysis.rules.slower import slower_than_best
    from attnscope.core.types import NotChecked

    loaded = rows()[:2]  # naive 513 µs and sdpa_flash 4,758 µs, quartiles overlapping
    got = slower_than_best(loaded[1], peers_of(loaded))
    assert isinstance(got, NotChecked) and "measure again on a quiet machine" in got.why and "9.3×" in got.why
    clear = rows()[2:4]  # naive 100 µs, sdpa_flash 200 µs, apart: flash is 2× slower than the best
    (i,) = slower_than_best(clear[1], peers_of(clear))
    assert i.advice.startswith("use naive ") and i.evidence["ratio"] == 2.0


@pytest.mark.parametrize(("s", "unresolved"), [(1024, False), (2048, True)])
def test_run_and_recommend_agree_at_the_1_5x_bar(s, unresolved, tmp_path, capsys):
    """The same saved document read by `attnscope run`'s path (annotate) and by `attnscope recommend`: at S=2048
    naive 100 [90, 160] and sdpa_flash 151 [140, 160] overlap across 151 / 100 = 1.51× (over 1.5×): both name no
    best; at S=1024, 150 / 100 = 1.50× is not over it: both prefer the fused sdpa_flash (tied, margin 100 / 150)."""
    import json

    from attnscope.api import annotate
    from attnscope.cli.main import main

    here = [r for r in rows() if r["case"]["seq_q"] == s]
    for r in here:  # a run's rows carry each kernel's time (the insights read it)
        r["kernels"] = [{**k, "duration_us": r["cpu_time_us"]} for k in r["kernels"]]
    path, out = tmp_path / "run.json", tmp_path / "rec.json"
    path.write_text(json.dumps({"schema_version": 1, "results": here}))
    run = annotate({"schema_version": 1, "results": here})["recommendation"]
    assert main(["recommend", str(path), "--json", str(out)]) == 0
    rec = json.loads(out.read_text())
    assert run["unresolved"] is unresolved and len(rec["unresolved"]) == int(unresolved)
    if unresolved:
        (u,) = rec["unresolved"]
        assert rec["best"] == [] and (u["fastest"], u["tied_slow"]) == ("naive", "sdpa_flash")
        assert u["ratio"] == pytest.approx(1.51) and run["margin"] == pytest.approx(1.51)
        assert "no variant is named best" in run["text"] and "measure again on a quiet machine" in u["why"]
    else:
        (b,) = rec["best"]
        assert (b["variant"], b["runner_up"], b["tied"]) == ("sdpa_flash", "naive", True)
        assert (run["best"], run["runner_up"], run["within_noise"]) == ("sdpa_flash", "naive", True)
        assert b["margin"] == run["margin"] == pytest.approx(100 / 150)


def test_same_kernels_compares_the_compute_kernels_names() -> None:
    from attnscope.analysis.rules.ties import kernel_names, same_kernels

    k = lambda name, cat="attention": {"name": name, "category": cat}  # noqa: E731
    a = {"variant": "sdpa_default", "kernels": [k("fmha_cudnn"), k("Memset (Device)", "memset")]}
    b = {"variant": "sdpa_cudnn", "kernels": [k("fmha_cudnn")]}
    assert kernel_names(a) == {"fmha_cudnn"}  # memcpy/memset are not compute kernels
    assert same_kernels(a, b) and same_kernels(b, a)
    a["kernels"] = [k("flash_fwd_kernel")]  # the same row, other kernels: another implementation
    assert kernel_names(a) == {"flash_fwd_kernel"} and not same_kernels(a, b)
    # rows with no compute kernels are never "the same kernels"
    assert not same_kernels({"kernels": []}, {"kernels": []})
