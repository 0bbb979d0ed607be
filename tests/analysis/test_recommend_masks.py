"""The sweep recommendation over mask, soft-cap and ALiBi axes: the best per point and the crossovers across
masks, on hand-made rows whose answers are worked out by hand below."""

from __future__ import annotations

from typing import Any

from attnscope.analysis.recommend import recommend

DOC = "document:1000,1500,600,996"


def row(variant: str, mask: str, softcap: float | None, alibi: bool, med: float) -> dict[str, Any]:
    """A GPU row of B=1 H=16 S=4096 D=64 with a tight interquartile range (±1%: no two variants below overlap)."""
    case = {"batch": 1, "heads": 16, "seq_q": 4096, "head_dim": 64, "dtype": "bf16", "causal": False}
    case |= {"kv_heads": None, "seq_kv": None, "device": "cuda", "mask": mask, "softcap": softcap, "alibi": alibi}
    t = {"median_us": med, "p25_us": med * 0.99, "p75_us": med * 1.01, "noisy": False, "method": "CUDA events"}
    return {
        "variant": variant,
        "case": case | {"mode": "fwd"},
        "mode": "fwd",
        "status": "ok",
        "numerics_ok": True,
        "kernels": [],
        "gpu_time_us": med,
        "gpu_time": t,
    }


# µs per call.  flex_compiled wins under the sparse masks, cudnn under none; soft-capping adds 10 µs to both,
# ALiBi 5 µs: the winner at each point is the same variant as without them.
#   mask           flex   cudnn   best
#   none           150    100     cudnn
#   sliding:256     20     90     flex_compiled
#   document        30     95     flex_compiled
BASE = {"none": (150.0, 100.0), "sliding:256": (20.0, 90.0), DOC: (30.0, 95.0)}


def rows() -> list[dict[str, Any]]:
    out = []
    for mask, (flex, cudnn) in BASE.items():
        for cap in (None, 30.0):
            for alibi in (False, True):
                extra = (10.0 if cap else 0.0) + (5.0 if alibi else 0.0)
                out.append(row("flex_compiled", mask, cap, alibi, flex + extra))
                out.append(row("sdpa_cudnn", mask, cap, alibi, cudnn + extra))
    return out


def test_best_per_mask_softcap_and_alibi_point():
    rec = recommend(rows())
    assert len(rec["best"]) == 3 * 2 * 2
    assert set(rec["axes"]) == {"mask", "softcap", "alibi"}
    got = {(b["case"]["mask"], b["case"]["softcap"], b["case"]["alibi"]): b["variant"] for b in rec["best"]}
    want = {"none": "sdpa_cudnn", "sliding:256": "flex_compiled", DOC: "flex_compiled"}
    assert got == {(m, c, a): want[m] for m in BASE for c in (None, 30.0) for a in (False, True)}
    for b in rec["best"]:
        flex, cudnn = BASE[b["case"]["mask"]]
        extra = (10.0 if b["case"]["softcap"] else 0.0) + (5.0 if b["case"]["alibi"] else 0.0)
        assert b["median_us"] == min(flex, cudnn) + extra
        assert b["runner_up_us"] == max(flex, cudnn) + extra
        assert abs(b["margin"] - (max(flex, cudnn) + extra) / (min(flex, cudnn) + extra)) < 1e-12
        assert not b["tied"]
        # the label names the point's mask and modifiers
        assert f"mask={b['case']['mask']}" in b["label"]
        assert ("softcap=30" in b["label"]) == (b["case"]["softcap"] == 30.0)
        assert (" alibi" in b["label"]) == b["case"]["alibi"]


def test_crossovers_across_masks():
    rec = recommend(rows())
    along_mask = [c for c in rec["crossovers"] if c["axis"] == "mask"]
    # masks in measured order (as text): document, none, sliding:256; with cap × alibi held at 4 settings,
    # each line crosses twice: document → none (flex → cudnn) and none → sliding (cudnn → flex).
    assert len(along_mask) == 4 * 2
    pairs = {(tuple(c["between"]), c["from"], c["to"]) for c in along_mask}
    assert pairs == {
        ((DOC, "none"), "flex_compiled", "sdpa_cudnn"),
        (("none", "sliding:256"), "sdpa_cudnn", "flex_compiled"),
    }
    assert {(c["fixed"]["softcap"], c["fixed"]["alibi"]) for c in along_mask} == {
        (cap, a) for cap in (None, 30.0) for a in (False, True)
    }
    assert not any(c["within_noise"] for c in along_mask)
    # nothing changes along softcap or alibi
    assert [c for c in rec["crossovers"] if c["axis"] != "mask"] == []
    # the policy splits on the mask alone: cudnn with no mask, flex under the sliding window and the documents
    assert [(r["text"], r["variant"], r["points"], r["exceptions"]) for r in rec["policy"]] == [
        ("mask = none", "sdpa_cudnn", 4, []),
        ("otherwise", "flex_compiled", 8, []),
    ]
