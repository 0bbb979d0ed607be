"""The comparisons between variants of one case (analysis/rules/slower.py, analysis/rules/sdpa_choice.py) on
hand-made rows: the slower-than-best insight at its boundaries, SDPA's default choice explained, and the timing, tie and
case helpers they rest on.  Ratios and times are worked out in the comments."""

from __future__ import annotations

from typing import Any

from attnscope.analysis.annotate import explain_results, peers_of
from attnscope.analysis.rules.peers import case_key, timing_of
from attnscope.analysis.rules.sdpa_choice import sdpa_choice
from attnscope.analysis.rules.slower import slower_than_best
from attnscope.analysis.rules.ties import ONE_SAMPLE_NOTE, overlaps, ran_backend
from attnscope.core.types import Insight, NotChecked

CASE = {"batch": 1, "heads": 2, "seq_q": 64, "head_dim": 16, "dtype": "bf16", "causal": True}
GPU = "GPU time per call (median)"
FLASH_K = "void pytorch_flash::flash_fwd_kernel<Flash_fwd_kernel_traits<64, 128, 128, 4, false, false, bf16>>"
EFF_K = "fmha_cutlassF_bf16_aligned_64x64_rf_sm80(PyTorchMemEffAttention::AttentionKernel<cutlass::bfloat16_t>)"


def row(variant: str, us: float, spread: float = 0.01, kernel: str | None = None, **kw: Any) -> dict[str, Any]:
    r: dict[str, Any] = {
        "variant": variant,
        "status": "ok",
        "case": CASE,
        "device_kind": "gpu",
        "gpu_time_us": us,
        "gpu_time": {"median_us": us, "p25_us": us * (1 - spread), "p75_us": us * (1 + spread), "num_samples": 50},
        "kernels": [{"name": kernel, "category": "attention", "duration_us": us}] if kernel else [],
    }
    r.update(kw)
    return r


# ---- helpers -------------------------------------------------------------------------------------


def test_case_key_ignores_the_order_of_the_fields():
    assert case_key({"case": {"a": 1, "b": 2}}) == case_key({"case": {"b": 2, "a": 1}})
    assert case_key({"case": None}) is None and case_key({}) is None


def test_timing_of_follows_the_device():
    cpu = {"status": "ok", "device_kind": "cpu", "cpu_time_us": 7.0, "gpu_time_us": 5.0, "cpu_time": {"x": 1}}
    assert timing_of(cpu) == (7.0, {"x": 1}, "wall time per call on the CPU (median)")
    gpu_without_gpu_time = {"status": "ok", "device_kind": "gpu", "cpu_time_us": 7.0}
    assert timing_of(gpu_without_gpu_time) is None
    assert timing_of({**cpu, "status": "error"}) is None


def test_quartiles_that_touch_overlap():
    a, b = {"p25_us": 1.0, "p75_us": 2.0}, {"p25_us": 2.0, "p75_us": 3.0}
    assert overlaps(a, b) and overlaps(b, a)
    assert not overlaps(a, {"p25_us": 2.5, "p75_us": 3.0})
    assert not overlaps(a, None)


def test_ran_backend_from_the_kernel_else_the_aten_op():
    assert ran_backend(row("sdpa_default", 1.0, kernel=FLASH_K)) == ("flash", FLASH_K)
    assert ran_backend(row("sdpa_default", 1.0, sdpa_backend="math")) == ("math", "aten op")
    assert ran_backend(row("sdpa_default", 1.0)) == (None, None)


# ---- slower than best ----------------------------------------------------------------------------


def test_slower_than_best_whole():
    """150 / 100 = 1.50× exactly: a warning (1.5 is the threshold, inclusive); 50 µs lost."""
    best, slow = row("sdpa_flash", 100.0), row("naive", 150.0)
    ev = {
        "best": "sdpa_flash",
        "num_compared": 2,
        "best_us": 100.0,
        "this_us": 150.0,
        "ratio": 1.5,
        "lost_us": 50.0,
        "basis": GPU,
    }
    msg = (
        "1.50× slower than sdpa_flash, the recommended one of the 2 variants measured here "
        f"(150.0 µs vs 100.0 µs, {GPU}): 50.0 µs lost per call"
    )
    advice = "use sdpa_flash for this shape and dtype (see the recommendation)"
    assert slower_than_best(slow, peers_of([best, slow])) == [
        Insight("slower_than_best", "naive", "warning", msg, advice, {**ev, "one_sample": False})
    ]
    assert slower_than_best(best, peers_of([best, slow])) == []


def test_slower_than_best_ratio_and_loss_by_hand():
    """1234.5 / 1000 = 1.2345 → 1.23 (info, under 1.5); 234.5 µs lost; 12,345.6 µs shows its separator."""
    [i] = slower_than_best(row("naive", 1234.5), peers_of([row("sdpa_flash", 1000.0), row("naive", 1234.5)]))
    assert (i.evidence["ratio"], i.evidence["lost_us"], i.severity) == (1.23, 234.5, "info")
    [j] = slower_than_best(row("naive", 12345.6), peers_of([row("sdpa_flash", 1000.0), row("naive", 12345.6)]))
    assert "(12,345.6 µs vs 1,000.0 µs" in j.message and "11,345.6 µs lost per call" in j.message


def test_slower_than_best_from_1_10_on_beyond_the_noise_only():
    """110 / 100 = 1.10 exactly counts; 105 / 100 = 1.05 does not, even with quartiles apart."""
    best = row("sdpa_flash", 100.0, spread=0.001)
    assert 110.0 / 100.0 == 1.1
    [at] = slower_than_best(row("naive", 110.0, spread=0.001), peers_of([best]))
    assert at.evidence["ratio"] == 1.1
    assert slower_than_best(row("naive", 105.0, spread=0.001), peers_of([best])) == []


def test_slower_than_best_with_one_sample_is_only_info():
    one = row("naive", 300.0)
    one["gpu_time"]["num_samples"] = 1
    [i] = slower_than_best(one, peers_of([row("sdpa_flash", 100.0), one]))
    assert i.severity == "info" and i.evidence["one_sample"] is True
    assert i.advice == f"use sdpa_flash for this shape and dtype (see the recommendation); {ONE_SAMPLE_NOTE}"


def test_slower_than_best_needs_the_case():
    head = "needs each result's case, to know the variants solve the same problem; "
    assert slower_than_best(row("naive", 1.0, case=None), peers_of([])) == NotChecked(
        "slower_than_best", head + "not known for this result"
    )
    unknown = row("naive", 1.0, case=None, case_unknown={"seq_q": "no shapes recorded", "dtype": "mixed"})
    assert slower_than_best(unknown, peers_of([])) == NotChecked(
        "slower_than_best", head + "this trace's case is not known (seq_q: no shapes recorded; dtype: mixed)"
    )


# ---- sdpa_default's choice -----------------------------------------------------------------------

PIN = (
    "to pin this choice on every torch version, wrap the call in sdpa_kernel(SDPBackend.FLASH_ATTENTION) "
    "(torch.nn.attention): one backend (a list only allows, unless set_priority=True)"
)


def test_sdpa_choice_plain():
    [i] = sdpa_choice(row("sdpa_default", 100.0, kernel=FLASH_K), peers_of([]))
    short_k = FLASH_K.removeprefix("void ")[:59] + "…"  # 60 characters at most
    assert i == Insight(
        "sdpa_choice",
        "sdpa_default",
        "info",
        f"default SDPA ran the flash backend (seen in {short_k})",
        PIN,
        {"ran": "flash", "seen_in": FLASH_K},
        kernels=(FLASH_K,),
    )
    assert sdpa_choice(row("sdpa_flash", 100.0, kernel=FLASH_K), peers_of([])) == []


def test_sdpa_choice_kernel_name_of_61_characters_is_cut_at_60():
    name = "flash_fwd_kernel_" + "x" * 44
    assert len(name) == 61
    [i] = sdpa_choice(row("sdpa_default", 100.0, kernel=name), peers_of([]))
    assert i.message == f"default SDPA ran the flash backend (seen in {name[:59]}…)"


def test_sdpa_choice_seen_in_the_aten_op_or_nowhere():
    [op] = sdpa_choice(row("sdpa_default", 100.0, sdpa_backend="math"), peers_of([]))
    assert op.message == "default SDPA ran the math backend (seen in aten op)" and op.kernels == ()
    [none] = sdpa_choice(row("sdpa_default", 100.0), peers_of([]))
    assert none.message == "default SDPA ran the None backend (seen in ?)" and none.kernels == ()


WHY = {
    "order": ["flash", "efficient", "math"],
    "checks": [
        {"backend": "cudnn", "usable": False, "reasons": ["a", "b"]},
        {"backend": "efficient", "usable": False},
        {"backend": "flash", "usable": True},
        {"backend": "math", "usable": False, "reasons": ["after the one that ran: not listed"]},
    ],
    "chosen": "efficient",
}


def test_sdpa_choice_with_torchs_checks():
    """flash ran (its kernel); torch's checks predicted efficient: a warning.  Rejected before flash:
    cudnn (two reasons) and efficient (none given); math comes after flash and is not listed."""
    [i] = sdpa_choice(row("sdpa_default", 100.0, kernel=FLASH_K, sdpa_why=WHY), peers_of([]))
    assert i.severity == "warning"
    assert i.evidence == {
        "ran": "flash",
        "seen_in": FLASH_K,
        "order": ["flash", "efficient", "math"],
        "rejected": ["cudnn: a; b", "efficient: rejected (torch gave no reason)"],
        "predicted": "efficient",
    }
    assert i.message.endswith(
        "; torch's order here: flash, efficient, math; rejected first: cudnn: a; b | efficient: rejected (torch gave "
        "no reason); torch's checks predicted efficient, yet flash ran"
    )
    agreed = dict(WHY, chosen="flash", order=[])
    [j] = sdpa_choice(row("sdpa_default", 100.0, kernel=FLASH_K, sdpa_why=agreed), peers_of([]))
    short_k = FLASH_K.removeprefix("void ")[:59] + "…"
    assert j.severity == "info"
    assert j.message == (
        f"default SDPA ran the flash backend (seen in {short_k}); torch's order here: ; rejected first: cudnn: a; b "
        "| efficient: rejected (torch gave no reason)"
    )


def test_sdpa_choice_names_the_fastest_forced_backend_beyond_the_noise():
    """default 100 µs; forced sdpa_efficient 40 µs and sdpa_math 80 µs: efficient is the fastest
    forced, 100 / 40 = 2.50× faster.  flex (10 µs, not SDPA), sdpa_default's twin without a declared
    backend (5 µs) and a forced backend of another case (1 µs) are no candidates."""
    default = row("sdpa_default", 100.0, kernel=FLASH_K)
    peers = [
        default,
        row("sdpa_math", 80.0, family="sdpa", backend="math"),
        row("sdpa_efficient", 40.0, kernel=EFF_K, family="sdpa", backend="efficient"),
        row("flex", 10.0, family="flex", backend=None),
        row("sdpa_twin", 5.0, family="sdpa", backend=None),
        row("sdpa_cudnn", 1.0, family="sdpa", backend="cudnn", case=dict(CASE, seq_q=128)),
    ]
    [i] = sdpa_choice(default, peers_of(peers))
    assert i.severity == "warning"
    assert i.message.endswith(f"; but sdpa_efficient was 2.50× faster here (40.0 µs vs 100.0 µs, {GPU})")
    assert i.advice == (
        "force sdpa_efficient with sdpa_kernel(SDPBackend.EFFICIENT_ATTENTION) (torch.nn.attention) for this shape"
    )
    assert {
        k: i.evidence[k] for k in ("fastest_forced", "fastest_forced_us", "default_us", "default_over_fastest")
    } == {
        "fastest_forced": "sdpa_efficient",
        "fastest_forced_us": 40.0,
        "default_us": 100.0,
        "default_over_fastest": 2.5,
    }
    assert i.evidence["one_sample"] is False


def test_sdpa_choice_ratio_rounds_to_2_places():
    """100 / 30 = 3.333… → 3.33."""
    default = row("sdpa_default", 100.0, kernel=FLASH_K)
    [i] = sdpa_choice(
        default, peers_of([default, row("sdpa_efficient", 30.0, kernel=EFF_K, family="sdpa", backend="efficient")])
    )
    assert i.evidence["default_over_fastest"] == 3.33


def test_sdpa_choice_keeps_quiet_within_1_10_or_a_tie():
    """91 µs: 91 · 1.1 = 100.1 ≥ 100, inside the margin; 50 µs but the same kernel as default: a tie."""
    default = row("sdpa_default", 100.0, kernel=FLASH_K)
    near = row("sdpa_efficient", 91.0, kernel=EFF_K, family="sdpa", backend="efficient")
    twin = row("sdpa_flash", 50.0, kernel=FLASH_K, family="sdpa", backend="flash")
    for peer in (near, twin):
        [i] = sdpa_choice(default, peers_of([default, peer]))
        assert "faster here" not in i.message and i.advice == PIN and i.severity == "info"


def test_sdpa_choice_without_a_case_compares_nothing():
    default = row("sdpa_default", 100.0, kernel=FLASH_K, case=None)
    forced = row("sdpa_efficient", 40.0, kernel=EFF_K, family="sdpa", backend="efficient", case=None)
    [i] = sdpa_choice(default, peers_of([default, forced]))
    assert "faster here" not in i.message


def test_sdpa_choice_with_one_sample_is_info():
    default = row("sdpa_default", 100.0, kernel=FLASH_K)
    default["gpu_time"]["num_samples"] = 1
    [i] = sdpa_choice(
        default, peers_of([default, row("sdpa_efficient", 40.0, kernel=EFF_K, family="sdpa", backend="efficient")])
    )
    assert i.severity == "info" and i.evidence["one_sample"] is True
    assert i.advice.endswith(f"; {ONE_SAMPLE_NOTE}")


# ---- explain_results -----------------------------------------------------------------------------


def test_explain_results_sorts_warnings_before_info_and_says_why_sdpa_why_is_missing():
    """naive is 2× slower than flash (a warning) and its split-KV kernels give an info insight first."""
    split = [
        {"name": "flash_fwd_splitkv_kernel<1>", "category": "attention", "duration_us": 150.0},
        {"name": "flash_fwd_splitkv_combine_kernel<1>", "category": "attention", "duration_us": 50.0},
    ]
    rows = [row("sdpa_flash", 100.0), row("naive", 200.0, kernels=split), row("sdpa_default", 100.0, kernel=FLASH_K)]
    out = explain_results(rows)
    ids = [i.id for i in out[1][0] if i.id in ("slower_than_best", "split_kv")]
    assert ids == ["slower_than_best", "split_kv"]
    missing = {m.id: m.why for m in out[2][1]}
    assert missing["sdpa_why"] == (
        "why the other backends were rejected needs torch's checks on the inputs, which a trace does not hold"
    )
    assert "sdpa_why" not in {m.id for m in out[0][1]}
    with_why = explain_results([row("sdpa_default", 100.0, kernel=FLASH_K, sdpa_why=WHY)])
    assert "sdpa_why" not in {m.id for m in with_why[0][1]}


# ---- what the second mutation pass found unpinned -------------------------------------------------


def test_a_cpu_trace_row_is_timed_as_one_traced_call():
    one = {"status": "ok", "device_kind": "cpu", "cpu_time_us": 7.0, "cpu_time": {"num_samples": 1}}
    assert timing_of(one) == (7.0, {"num_samples": 1}, "wall time of one traced call (one sample)")


def test_slower_than_best_says_the_noise_is_unknown_when_only_the_best_is_one_sample():
    """this 300 µs over 50 samples, the best 100 µs from one traced call: 3.00×, but an info with the note."""
    best = row("sdpa_cudnn", 100.0, kernel=EFF_K)
    best["gpu_time"]["num_samples"] = 1
    mine = row("sdpa_flash", 300.0, kernel=FLASH_K)
    [i] = slower_than_best(mine, peers_of([best, mine]))
    assert i.severity == "info" and i.evidence["one_sample"] is True and i.advice.endswith(ONE_SAMPLE_NOTE)


def test_a_usable_backend_before_the_one_that_ran_is_no_rejection():
    why = {"order": ["cudnn", "flash", "efficient"], "chosen": "efficient", "checks": [
        {"backend": "cudnn", "usable": False, "reasons": ["r"]},
        {"backend": "flash", "usable": True},
        {"backend": "efficient", "usable": True},
    ]}  # fmt: skip
    [i] = sdpa_choice(row("sdpa_default", 100.0, kernel=EFF_K, sdpa_why=why), peers_of([]))
    assert i.evidence["rejected"] == ["cudnn: r"]


def _forced_case(default_us: float, fastest_us: float, fastest_samples: int = 50):
    default = row("sdpa_default", default_us, spread=0.001, kernel=FLASH_K)
    fast = row("sdpa_efficient", fastest_us, spread=0.001, kernel=EFF_K, family="sdpa", backend="efficient")
    fast["gpu_time"]["num_samples"] = fastest_samples
    other = row("sdpa_math", 500.0, spread=0.001, family="sdpa", backend="math")  # a slower forced peer
    return default, [default, fast, other]


def test_sdpa_choice_names_the_forced_backend_only_beyond_1_10x():
    """A default exactly 1.10× the fastest forced backend (100 µs × 1.10, as floats multiply) is inside the bar,
    not named; 110.01 µs is beyond it."""
    d, peers = _forced_case(100.0 * 1.10, 100.0)
    [i] = sdpa_choice(d, peers_of(peers))
    assert "fastest_forced" not in i.evidence
    d, peers = _forced_case(110.01, 100.0)
    [i] = sdpa_choice(d, peers_of(peers))
    assert i.evidence["fastest_forced"] == "sdpa_efficient"
    short_k = FLASH_K.removeprefix("void ")[:59] + "…"
    assert i.message == (
        f"default SDPA ran the flash backend (seen in {short_k}); but sdpa_efficient was 1.10× faster here "
        "(100.0 µs vs 110.0 µs, GPU time per call (median))"
    )
    assert i.severity == "warning" and i.evidence["one_sample"] is False


def test_sdpa_choice_with_a_one_sample_forced_backend_is_an_info_with_the_note():
    """The fastest forced backend's own timing is one traced call (the default's is not): noise unknown."""
    d, peers = _forced_case(200.0, 100.0, fastest_samples=1)
    [i] = sdpa_choice(d, peers_of(peers))
    assert i.evidence["one_sample"] is True and i.severity == "info"
    assert i.advice == (
        "force sdpa_efficient with sdpa_kernel(SDPBackend.EFFICIENT_ATTENTION) (torch.nn.attention) for this shape; "
        + ONE_SAMPLE_NOTE
    )


def test_pin_advice_names_one_backend_and_set_priority_only_where_torch_has_it():
    from attnscope.analysis.rules.sdpa_choice import pin_advice

    base = "to pin this choice on every torch version, wrap the call in "
    assert pin_advice("cudnn", True) == (
        base + "sdpa_kernel(SDPBackend.CUDNN_ATTENTION) (torch.nn.attention): one backend; to keep fallbacks in "
        "your order, "
        "sdpa_kernel([SDPBackend.CUDNN_ATTENTION, SDPBackend.MATH], set_priority=True) (without set_priority a list "
        "only allows, torch's own order still picks)"
    )
    assert pin_advice("flash", False) == (
        base + "sdpa_kernel(SDPBackend.FLASH_ATTENTION) (torch.nn.attention): one backend (this torch's sdpa_kernel "
        "has no set_priority, so a list "
        "only allows: torch's own order still picks)"
    )
    assert pin_advice(None, True) == base + "torch.nn.attention.sdpa_kernel(...)"
    assert "set_priority=True)" not in pin_advice("math", False)


def test_sdpa_choice_checks_the_version_rule_against_what_ran():
    """The version rule says cuDNN first (cudnn usable): cudnn should run.  flash ran: a warning naming both;
    where the rule's order is torch's and flash is what it predicts, no such clause."""
    why = {
        "order": ["flash", "efficient", "math", "cudnn"],
        "checks": [{"backend": "flash", "usable": True}, {"backend": "cudnn", "usable": True}],
        "chosen": "flash",
        "prediction": {
            "order": ["cudnn", "flash", "efficient", "math"],
            "why": "rule X",
            "chosen": "cudnn",
        },
    }
    [i] = sdpa_choice(row("sdpa_default", 100.0, kernel=FLASH_K, sdpa_why=why), peers_of([]))
    assert i.severity == "warning"
    assert "; the version rule (rule X) gave the order cudnn, flash, efficient, math" in i.message
    assert i.message.endswith("; by the version rule cudnn runs, yet flash ran")
    assert i.evidence["version_order"] == ["cudnn", "flash", "efficient", "math"]
    assert i.evidence["version_predicted"] == "cudnn"
    agreed = dict(why, prediction={"order": why["order"], "why": "rule Y", "chosen": "flash"})
    [j] = sdpa_choice(row("sdpa_default", 100.0, kernel=FLASH_K, sdpa_why=agreed), peers_of([]))
    assert j.severity == "info" and "version rule" not in j.message
