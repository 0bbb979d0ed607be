"""Several ranks of one job combined (analysis/ranks.py), on hand-made trace summaries: every sum,
share, spread and ordering below is worked out in the comments."""

from __future__ import annotations

from typing import Any

from attnscope.analysis.fingerprint.breakdown import CATEGORIES
from attnscope.analysis.fingerprint.ranks import combine


def summary(rank, events, gpu_us, device, cats, fams, copy_bytes=0, upcasts=0) -> dict[str, Any]:
    return {
        "rank": rank,
        "num_gpu_events": events,
        "gpu_time_us": gpu_us,
        "idle": {"devices": [dict(zip(("busy_us", "span_us", "idle_pct"), device, strict=True))]} if device else None,
        "categories": [{"category": c, "num_kernels": n, "time_us": t, "share_pct": p} for c, n, t, p in cats],
        "attention_families": [{"family": f, "num_kernels": n, "time_us": t} for f, n, t in fams],
        "hidden_copies": {"bytes": copy_bytes},
        "upcasts": {"num": upcasts},
    }


# rank 1 (listed first): 300 µs = attention 150 (50 %) + gemm 100 + communication 50 (16.67 %)
R1 = summary(
    1, 30, 300.0, (300.0, 400.0, 25.0),
    [("attention", 2, 150.0, 50.0), ("gemm", 1, 100.0, 33.33), ("communication", 1, 50.0, 16.67)],
    [("flash", 2, 150.0)], copy_bytes=1024, upcasts=1,
)  # fmt: skip
# rank 0: 100 µs = gemm 60 + softmax 20 + attention 20 (20 %)
R0 = summary(
    0, 10, 100.0, (100.0, 200.0, 50.0),
    [("gemm", 2, 60.0, 60.0), ("softmax", 1, 20.0, 20.0), ("attention", 1, 20.0, 20.0)],
    [("cudnn", 1, 20.0)],
)  # fmt: skip
# a trace without a rank or an idle section: 100 µs of copies
RX = summary(None, 5, 100.0, None, [("copy", 1, 100.0, 100.0)], [])


def test_ranks_are_combined_by_hand():
    out = combine([("sdpa_flash", R1), ("naive", R0), ("x", RX)])
    assert out["num_ranks"] == 3
    assert out["gpu_time_us"] == 500.0  # 300 + 100 + 100
    # by rank, the one without a rank last
    assert out["per_rank"] == [
        {"rank": 0, "variant": "naive", "num_gpu_events": 10, "gpu_time_us": 100.0, "busy_us": 100.0,
         "span_us": 200.0, "idle_pct": 50.0, "attention_share_pct": 20.0, "communication_share_pct": 0.0,
         "hidden_copy_bytes": 0, "num_upcasts": 0, "cpu_collectives": None},
        {"rank": 1, "variant": "sdpa_flash", "num_gpu_events": 30, "gpu_time_us": 300.0, "busy_us": 300.0,
         "span_us": 400.0, "idle_pct": 25.0, "attention_share_pct": 50.0, "communication_share_pct": 16.67,
         "hidden_copy_bytes": 1024, "num_upcasts": 1, "cpu_collectives": None},
        {"rank": None, "variant": "x", "num_gpu_events": 5, "gpu_time_us": 100.0, "busy_us": None,
         "span_us": None, "idle_pct": None, "attention_share_pct": 0.0, "communication_share_pct": 0.0,
         "hidden_copy_bytes": 0, "num_upcasts": 0, "cpu_collectives": None},
    ]  # fmt: skip
    # busy 100 (rank 0) and 300 (rank 1), the rank without one left out: mean 200, spread 200/200
    assert out["busy_us"] == {
        "min": 100.0,
        "max": 300.0,
        "mean": 200.0,
        "min_rank": 0,
        "max_rank": 1,
        "spread_pct": 100.0,
    }
    # idle 50 (rank 0), 25 (rank 1): mean 37.5, spread 25 / 37.5 = 66.67 %
    assert out["idle_pct"] == {
        "min": 25.0,
        "max": 50.0,
        "mean": 37.5,
        "min_rank": 1,
        "max_rank": 0,
        "spread_pct": 66.67,
    }
    # sums over ranks, shares of 500 µs: attention 20+150 = 170 (34 %), gemm 60+100 = 160 (32 %),
    # softmax 20 (4 %), communication 50 (10 %), copy 100 (20 %); every other category 0
    nonzero = {
        "attention": (3, 170.0, 34.0),
        "gemm": (3, 160.0, 32.0),
        "softmax": (1, 20.0, 4.0),
        "communication": (1, 50.0, 10.0),
        "copy": (1, 100.0, 20.0),
    }
    assert set(nonzero) <= set(CATEGORIES)
    assert out["categories"] == [
        dict(zip(("category", "num_kernels", "time_us", "share_pct"), (c, *nonzero.get(c, (0, 0.0, 0.0))), strict=True))
        for c in CATEGORIES
    ]
    # families, longest first: flash 150 (30 %), cudnn 20 (4 %)
    assert out["attention_families"] == [
        {"family": "flash", "num_kernels": 2, "time_us": 150.0, "share_pct": 30.0},
        {"family": "cudnn", "num_kernels": 1, "time_us": 20.0, "share_pct": 4.0},
    ]
    assert out["hidden_copy_bytes"] == 1024 and out["num_upcasts"] == 1


def test_spread_ties_name_the_lower_rank_and_means_round_to_3_places():
    """busy 100, 100, 101 on ranks 2, 0, 1: min 100 on rank 0 (ties go to the lower rank), max 101
    on rank 1; mean 301 / 3 = 100.333…, spread 100 · 1 / 100.333 = 0.9967 → 1.0 %."""
    named = [
        (f"v{r}", summary(r, 1, 1.0, (b, 200.0, 10.0), [("attention", 1, 1.0, 100.0)], []))
        for r, b in ((2, 100.0), (0, 100.0), (1, 101.0))
    ]
    busy = combine(named)["busy_us"]
    assert busy == {"min": 100.0, "max": 101.0, "mean": 100.333, "min_rank": 0, "max_rank": 1, "spread_pct": 1.0}


def test_no_time_at_all_gives_zero_shares_not_a_division_by_zero():
    named = [("v", summary(0, 0, 0.0, (0.0, 0.0, 0.0), [("attention", 0, 0.0, 0.0)], [("flash", 0, 0.0)]))]
    out = combine(named)
    assert out["busy_us"]["spread_pct"] == 0.0
    assert {c["share_pct"] for c in out["categories"]} == {0.0}
    assert out["attention_families"] == [{"family": "flash", "num_kernels": 0, "time_us": 0.0, "share_pct": 0.0}]


def test_a_summary_with_an_empty_device_list_has_no_busy_time():
    s = summary(0, 1, 1.0, None, [("attention", 1, 1.0, 100.0)], [])
    s["idle"] = {"devices": []}
    out = combine([("v", s)])
    assert out["per_rank"][0]["busy_us"] is None and out["busy_us"] is None


def test_sums_round_to_the_ns_and_shares_to_2_places():
    """One rank of 1.23456 µs: shown 1.235 (3 places, the ns); shares of 100 %."""
    out = combine(
        [
            (
                "v",
                summary(
                    0, 1, 1.23456, (1.23456, 2.0, 38.3), [("attention", 1, 1.23456, 100.0)], [("flash", 1, 1.23456)]
                ),
            )
        ]
    )
    assert out["gpu_time_us"] == 1.235
    assert next(c for c in out["categories"] if c["category"] == "attention")["time_us"] == 1.235
    assert out["attention_families"] == [{"family": "flash", "num_kernels": 1, "time_us": 1.235, "share_pct": 100.0}]


def test_families_add_up_over_ranks_and_sub_microsecond_totals_have_shares():
    """rank 0: flash 1 kernel 0.2 µs; rank 1: flash 2 kernels 0.2 µs + gemm 0.2 µs.  Total 0.6 µs (under
    1 µs is still a time): attention 0.4 = 66.67 %, gemm 0.2 = 33.33 %; flash 3 kernels, 0.4 µs.
    Busy 0.2 and 0.4: mean 0.3, spread 0.2 / 0.3 = 66.67 %."""
    b_cats = [("attention", 2, 0.2, 50.0), ("gemm", 1, 0.2, 50.0)]
    named = [
        ("a", summary(0, 1, 0.2, (0.2, 1.0, 80.0), [("attention", 1, 0.2, 100.0)], [("flash", 1, 0.2)])),
        ("b", summary(1, 3, 0.4, (0.4, 1.0, 60.0), b_cats, [("flash", 2, 0.2)])),
    ]
    out = combine(named)
    cats = {c["category"]: (c["num_kernels"], c["time_us"], c["share_pct"]) for c in out["categories"]}
    assert cats["attention"] == (3, 0.4, 66.67) and cats["gemm"] == (1, 0.2, 33.33)
    assert out["attention_families"] == [{"family": "flash", "num_kernels": 3, "time_us": 0.4, "share_pct": 66.67}]
    assert out["busy_us"]["mean"] == 0.3 and out["busy_us"]["spread_pct"] == 66.67
