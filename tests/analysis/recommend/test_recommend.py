"""The recommendation, branch by branch, on hand-made rows of one case: which variant, its margin and
the exact sentence.  Every number in an expected sentence is worked from the rows' medians here."""

from __future__ import annotations

from typing import Any

from attnscope.analysis.recommend.run import recommend

CASE = {"batch": 1, "heads": 2, "seq_q": 64, "head_dim": 16, "dtype": "bf16", "causal": False}
BASIS = "GPU time per call (median)"
FLASH_K = (
    "void pytorch_flash::flash_fwd_kernel<Flash_fwd_kernel_traits<64, 128, 128, 4, false, false, cutlass::bfloat16_t>>"
)
EFF_K = "fmha_cutlassF_bf16_aligned_64x64_rf_sm80(PyTorchMemEffAttention::AttentionKernel<cutlass::bfloat16_t>)"
KERNELS = {  # what each variant launches: a fused attention kernel, or GEMMs around a softmax
    "sdpa_flash": [(FLASH_K, "attention")],
    "sdpa_default": [(FLASH_K, "attention")],
    "sdpa_efficient": [(EFF_K, "attention")],
    "naive": [("gemm_qk", "gemm"), ("softmax_kernel", "softmax"), ("gemm_pv", "gemm")],
    "flex": [("triton_tem_fused_flex_attention", "attention")],
}


def row(variant: str, us: float, p25: float, p75: float, noisy: bool = False, **kw: Any) -> dict[str, Any]:
    r: dict[str, Any] = {
        "variant": variant,
        "status": "ok",
        "case": CASE,
        "device_kind": "gpu",
        "gpu_time_us": us,
        "gpu_time": {"median_us": us, "p25_us": p25, "p75_us": p75, "noisy": noisy},
        "numerics_ok": True,
        "kernels": [{"name": n, "category": c} for n, c in KERNELS.get(variant, [])],
    }
    r.update(kw)
    return r


def fields(rec) -> tuple:
    return (rec.best, rec.best_us, rec.runner_up, rec.runner_up_us, rec.within_noise, rec.basis, rec.excluded)


def test_one_variant_alone():
    rec = recommend([row("sdpa_flash", 100.0, 99.0, 101.0)])
    assert fields(rec) == ("sdpa_flash", 100.0, None, None, None, BASIS, ())
    assert rec.margin is None
    assert rec.text == f"sdpa_flash: the only variant measured (100.0 µs, {BASIS})"


def test_one_variant_alone_that_writes_the_scores_out():
    rec = recommend([row("naive", 100.0, 99.0, 101.0)])
    assert rec.text == (
        f"naive: the only variant measured (100.0 µs, {BASIS}) — naive writes the S×S score matrix out "
        "(memory grows with S²), and no fused variant ran here to compare with"
    )


def test_a_clear_margin():
    """300 / 100 = 3.00×; quartiles [99, 101] and [297, 303] apart."""
    rec = recommend([row("sdpa_efficient", 300.0, 297.0, 303.0), row("sdpa_flash", 100.0, 99.0, 101.0)])
    assert fields(rec) == ("sdpa_flash", 100.0, "sdpa_efficient", 300.0, False, BASIS, ())
    assert rec.margin == 3.0
    assert rec.text == f"best for this case: sdpa_flash at 100.0 µs ({BASIS}), 3.00× ahead of sdpa_efficient (300.0 µs)"


def test_scores_written_out_and_every_fused_variant_slower_beyond_the_noise():
    """naive 100 µs; flash 300 (3.00×) and efficient 400 µs: the fastest fused one is flash."""
    rows = [
        row("sdpa_efficient", 400.0, 396.0, 404.0),
        row("naive", 100.0, 99.0, 101.0),
        row("sdpa_flash", 300.0, 297.0, 303.0),
    ]
    rec = recommend(rows)
    assert (rec.best, rec.runner_up, rec.within_noise) == ("naive", "sdpa_flash", False)
    assert rec.text == (
        f"best for this case: naive at 100.0 µs ({BASIS}), 3.00× ahead of sdpa_flash (300.0 µs) — naive writes "
        "the S×S score matrix out (memory grows with S²); every fused variant was slower beyond the noise here "
        "(the fastest, sdpa_flash, 3.00× slower): keep it only while S² memory is affordable"
    )


def test_a_fused_variant_tied_with_the_faster_one_that_writes_scores_out_is_preferred():
    """naive 100 µs [90, 110], flash 105 µs [95, 115]: quartiles overlap, so flash (O(S·D) memory)
    is the advice; margin 100 / 105."""
    rec = recommend([row("naive", 100.0, 90.0, 110.0), row("sdpa_flash", 105.0, 95.0, 115.0)])
    assert fields(rec) == ("sdpa_flash", 105.0, "naive", 100.0, True, BASIS, ())
    assert rec.margin == 100.0 / 105.0
    assert rec.text == (
        f"best for this case: sdpa_flash at 105.0 µs ({BASIS}), tied within the noise with naive: its median "
        "was lower (100.0 µs) but their interquartile ranges overlap, and naive writes the S×S score matrix out: "
        "the fused one does the same work in O(S·D) memory"
    )


def test_tied_inside_the_noise():
    """flash 100 µs [90, 110], efficient 105 µs [95, 115]: different kernels, quartiles overlap."""
    rec = recommend([row("sdpa_flash", 100.0, 90.0, 110.0), row("sdpa_efficient", 105.0, 95.0, 115.0)])
    assert (rec.best, rec.runner_up, rec.within_noise) == ("sdpa_flash", "sdpa_efficient", True)
    assert rec.text == (
        f"best for this case: sdpa_flash at 100.0 µs ({BASIS}), 1.05× ahead of sdpa_efficient (105.0 µs) — "
        "inside the noise (their interquartile ranges overlap): treat them as tied"
    )


def test_tied_by_the_same_kernels_is_one_implementation_and_the_runner_up_is_the_next():
    """sdpa_default ran flash's kernel: one implementation with sdpa_flash though their quartiles are apart
    (110 / 100 = 1.10×); the runner-up is the next implementation, flex at 300 µs: 300 / 100 = 3.00×."""
    rows = [
        row("flex", 300.0, 297.0, 303.0),
        row("sdpa_flash", 110.0, 109.0, 111.0),
        row("sdpa_default", 100.0, 99.0, 101.0),
    ]
    rec = recommend(rows)
    assert (rec.best, rec.runner_up, rec.runner_up_us, rec.within_noise) == ("sdpa_default", "flex", 300.0, False)
    assert rec.margin == 3.0
    assert rec.text == (
        f"best for this case: sdpa_default (runs flash) at 100.0 µs ({BASIS}), 3.00× ahead of flex (300.0 µs); "
        "sdpa_flash ran the same kernels (110.0 µs): one implementation, the gap is run-to-run variation"
    )


def test_tied_inside_the_noise_with_the_next_clear_step():
    """flash 100 µs [90, 110], efficient 105 µs [95, 115] (overlap: tied), flex 300 µs [297, 303]: the next
    clear step, 300 / 100 = 3.00×."""
    rows = [row("sdpa_flash", 100.0, 90.0, 110.0), row("sdpa_efficient", 105.0, 95.0, 115.0)]
    rec = recommend([*rows, row("flex", 300.0, 297.0, 303.0)])
    assert (rec.best, rec.runner_up, rec.within_noise) == ("sdpa_flash", "sdpa_efficient", True)
    assert rec.text == (
        f"best for this case: sdpa_flash at 100.0 µs ({BASIS}), 1.05× ahead of sdpa_efficient (105.0 µs) — "
        "inside the noise (their interquartile ranges overlap): treat them as tied; the next clear step is flex, "
        "3.00× slower"
    )


def test_the_same_kernels_far_apart_say_the_timings_were_disturbed():
    """sdpa_default ran flash's kernel at 150 µs against flash's 100 µs: 150 / 100 = 1.50×, the bar (≥ 1.5×)
    where a gap between the same kernels cannot be theirs; at 149 µs (1.49×) it is run-to-run variation.  One
    implementation alone: no runner-up, no margin."""
    rows = [row("sdpa_flash", 100.0, 99.0, 101.0), row("sdpa_default", 150.0, 149.0, 151.0)]
    rec = recommend(rows)
    assert (rec.best, rec.runner_up, rec.margin, rec.within_noise) == ("sdpa_flash", None, None, None)
    assert rec.text == (
        f"best for this case: sdpa_flash at 100.0 µs ({BASIS}); sdpa_default (runs flash) ran the same kernels "
        "(150.0 µs): one implementation, so a 1.50× gap between them is not theirs: the timings were disturbed "
        "(another load on this machine?); time again on a quiet machine before trusting this ranking"
    )
    rows = [row("sdpa_flash", 100.0, 99.0, 101.0), row("sdpa_default", 149.0, 148.0, 150.0)]
    assert recommend(rows).text.endswith("one implementation, the gap is run-to-run variation")


def test_sdpa_default_without_a_known_backend_is_named_plainly():
    rows = [row("sdpa_default", 100.0, 99.0, 101.0, kernels=[]), row("naive", 300.0, 297.0, 303.0)]
    assert recommend(rows).text == (
        f"best for this case: sdpa_default at 100.0 µs ({BASIS}), 3.00× ahead of naive (300.0 µs)"
    )


def test_sdpa_default_named_by_its_aten_op_when_no_kernel_says():
    rows = [row("sdpa_default", 100.0, 99.0, 101.0, kernels=[], sdpa_backend="math"), row("naive", 300.0, 297.0, 303.0)]
    assert recommend(rows).text.startswith("best for this case: sdpa_default (runs math) at 100.0 µs")


def test_noisy_timings_are_named():
    one = [row("sdpa_flash", 100.0, 99.0, 101.0, noisy=True), row("sdpa_efficient", 300.0, 297.0, 303.0)]
    both = [row("sdpa_flash", 100.0, 99.0, 101.0, noisy=True), row("sdpa_efficient", 300.0, 297.0, 303.0, noisy=True)]
    head = f"best for this case: sdpa_flash at 100.0 µs ({BASIS}), 3.00× ahead of sdpa_efficient (300.0 µs)"
    tail = " timed noisy (IQR/median > 10%): confirm with a larger --budget before acting on this margin"
    assert recommend(one).text == head + " — but sdpa_flash" + tail
    assert recommend(both).text == head + " — but sdpa_flash and sdpa_efficient" + tail


def test_a_median_without_quartiles_is_ranked():
    """An older document: a median and no quartiles (gpu_time absent): ranked, never noisy."""
    rows = [row("sdpa_flash", 100.0, 99.0, 101.0, gpu_time=None), row("sdpa_efficient", 300.0, 297.0, 303.0)]
    rec = recommend(rows)
    assert (rec.best, rec.runner_up, rec.within_noise) == ("sdpa_flash", "sdpa_efficient", False)
    assert rec.text == f"best for this case: sdpa_flash at 100.0 µs ({BASIS}), 3.00× ahead of sdpa_efficient (300.0 µs)"


def test_results_with_wrong_numerics_are_left_out_and_named():
    rows = [
        row("sdpa_flash", 100.0, 99.0, 101.0),
        row("sdpa_efficient", 300.0, 297.0, 303.0),
        row("naive", 50.0, 49.0, 51.0, numerics_ok=False),
        row("flex", 60.0, 59.0, 61.0, numerics_ok=False),
    ]
    rec = recommend(rows)
    assert rec.excluded == ("naive (numerics off)", "flex (numerics off)")
    assert rec.best == "sdpa_flash"
    assert rec.text == (
        f"best for this case: sdpa_flash at 100.0 µs ({BASIS}), 3.00× ahead of sdpa_efficient (300.0 µs); "
        "left out: naive (numerics off), flex (numerics off)"
    )


def test_one_sample_timings_say_their_noise_is_unknown():
    """A trace holds one call: with one sample on either side (best or runner-up) the margin's noise is
    not known, and the sentence says so instead of the noisy-timing note."""
    from attnscope.analysis.rules.ties import ONE_SAMPLE_NOTE

    for which, basis in (("sdpa_flash", "GPU time of one traced call (one sample)"), ("sdpa_efficient", BASIS)):
        rows = [row("sdpa_flash", 100.0, 99.0, 101.0, noisy=True), row("sdpa_efficient", 300.0, 297.0, 303.0)]
        next(r for r in rows if r["variant"] == which)["gpu_time"]["num_samples"] = 1
        head = f"best for this case: sdpa_flash at 100.0 µs ({basis}), 3.00× ahead of sdpa_efficient (300.0 µs)"
        assert recommend(rows).text == f"{head} — {ONE_SAMPLE_NOTE}", which
