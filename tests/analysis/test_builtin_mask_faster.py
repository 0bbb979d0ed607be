"""builtin_mask_faster: a user's mask_mod slower than the built-in it equals, beyond the noise, with the kernels'
resources as the reason.  Rows built by hand (the H200's document-mask numbers from issue 19)."""

from __future__ import annotations

from attnscope.analysis.annotate import explain_results

CASE = {"batch": 2, "heads": 16, "seq_q": 4096, "head_dim": 64, "mask": "document:1000,1500,600,996"}


def _row(variant, median, p25, p75, smem, occ, compiled=True, user=False):
    return {
        "variant": variant,
        "family": "flex",
        "status": "ok",
        "device_kind": "gpu",
        "case": dict(CASE, mask_mod="/x/doc.py:doc_mask"),
        "gpu_time_us": median,
        "gpu_time": {"median_us": median, "p25_us": p25, "p75_us": p75, "num_samples": 50},
        "compile_time_s": 3.0 if compiled else None,
        "compute_capability": [9, 0],
        "extra": {"user_mods": {"mask_mod": "/x/doc.py:doc_mask", "score_mod": None}} if user else {},
        "kernels": [
            {
                "name": "triton_tem_fused_0",
                "category": "attention",
                "duration_us": median,
                "shared_memory_bytes": smem,
                "theoretical_occupancy_pct": occ,
                "occupancy_limiter": "shared memory",
                "grid": [32, 32, 1],
                "block": [256, 1, 1],
                "registers_per_thread": 128,
            }
        ],
    }


def _ids(rows):
    return {r["variant"]: [i.id for i in found] for r, (found, _) in zip(rows, explain_results(rows), strict=True)}


def _insight(rows, variant):
    for r, (found, _) in zip(rows, explain_results(rows), strict=True):
        if r["variant"] == variant:
            return next((i for i in found if i.id == "builtin_mask_faster"), None)
    return None


def test_slower_beyond_noise_says_by_how_much_and_why():
    rows = [
        _row("flex_compiled", 186.0, 184.0, 188.0, 81920, 12.5),
        _row("flex_compiled_user", 596.0, 590.0, 601.0, 119808, 6.2, user=True),
    ]
    i = _insight(rows, "flex_compiled_user")
    assert i is not None
    assert i.evidence["ratio"] == round(596.0 / 186.0, 2) == 3.2
    assert "3.20× slower: 596.0 µs against 186.0 µs for flex_compiled" in i.message
    assert "shared memory per block 119,808 B against 81,920 B" in i.message
    assert "occupancy 6.2% against 12.5%" in i.message
    # sm90: 233,472 B of shared memory per SM; (119,808 + 1,024 reserved) fits once, (81,920 + 1,024) twice
    assert "1 resident block(s) per SM against 2" in i.message
    assert i.evidence["user_kernel"]["blocks_per_sm"] == 1 and i.evidence["builtin_kernel"]["blocks_per_sm"] == 2
    assert "document:1000,1500,600,996" in i.message
    # only the user's row carries it
    assert _insight(rows, "flex_compiled") is None


def test_inside_the_noise_says_nothing():
    rows = [
        _row("flex_compiled", 186.0, 180.0, 200.0, 81920, 12.5),
        _row("flex_compiled_user", 195.0, 190.0, 205.0, 81920, 12.5, user=True),
    ]
    assert _insight(rows, "flex_compiled_user") is None


def test_user_faster_says_nothing():
    rows = [
        _row("flex_compiled", 596.0, 590.0, 601.0, 119808, 6.2),
        _row("flex_compiled_user", 186.0, 184.0, 188.0, 81920, 12.5, user=True),
    ]
    assert _insight(rows, "flex_compiled_user") is None


def test_compared_eager_with_eager():
    rows = [
        _row("flex_compiled", 100.0, 99.0, 101.0, 81920, 12.5),
        _row("flex", 900.0, 890.0, 910.0, 0, 50.0, compiled=False),
        _row("flex_user", 1000.0, 990.0, 1010.0, 0, 50.0, compiled=False, user=True),
    ]
    i = _insight(rows, "flex_user")
    assert i is not None and i.evidence["builtin_variant"] == "flex"
    assert "shared memory" not in i.message  # the same resources: no reason claimed from them
