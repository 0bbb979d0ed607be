"""Reading a tour answer and judging it against the measurement, with ``run --guess``'s noise rules.

An answer becomes ``run --guess`` predictions wherever it can (counts, ratios, backends, yes/no, and a
ranking or a winner as "faster than" pairs) and is judged by :func:`attnscope.analysis.predict.check_predictions`:
a timed verdict is a hit when the whole noise band agrees, a miss when none of it does, else too close to
call.  The few questions with no ``--guess`` kind (occupancy by design, the decode bound, the share of
bandwidth) are judged here with the same band.
"""

from __future__ import annotations

from typing import Any

from attnscope.api.guesses import check_predictions, judge, noise_band, timing_of
from attnscope.core.answers import Question
from attnscope.core.types import Prediction

BOUND_MARGIN = 2.0  # within 2× of the machine's balance: too close to call
# Where the bytes at the copy bandwidth and the FLOPs at the matmul peak explain less than this share of the measured
# time, neither roof sets it: the call's fixed cost does (overhead-bound).  Within OVERHEAD_MARGIN× of the share:
# too close to call.
OVERHEAD_SHARE = 0.5
OVERHEAD_MARGIN = 1.25


def predictions(q: Question, expected: Any, items: tuple[str, ...]) -> list[Prediction]:
    """The ``run --guess`` predictions one answer stands for."""
    note = f"tour: {q.id}"
    if q.judge == "predict" and q.predict:
        variant, kind, other = q.predict
        value = {"variant": other, "by": expected} if other else expected
        return [Prediction(variant, kind, value, note)]
    if q.judge == "ranking":
        order = list(expected)
        return [
            Prediction(a, "faster_than", {"variant": b, "by": 1.0}, note)
            for i, a in enumerate(order)
            for b in order[i + 1 :]
        ]
    if q.judge == "winner":
        return [Prediction(expected, "faster_than", {"variant": b, "by": 1.0}, note) for b in items if b != expected]
    return []


def combine(outcomes: list[str]) -> str:
    """Several pair verdicts → one: a miss if any pair is, a hit if all are, unknown if none was measured."""
    if not outcomes or all(o == "unknown" for o in outcomes):
        return "unknown"
    if "miss" in outcomes:
        return "miss"
    return "hit" if all(o == "hit" for o in outcomes) else "close"


def verdict(
    q: Question, expected: Any, results: list[dict[str, Any]], items: tuple[str, ...], extra: dict[str, Any]
) -> dict[str, Any]:
    """Judge one answer against the annotated results: outcome, measured value, its band, text, why."""
    if q.judge in ("winner", "ranking"):  # pairs with a variant that did not run here are not judged
        ran = {r["variant"] for r in results if r.get("status") == "ok"}
        items = tuple(i for i in items if i in ran)
        if q.judge == "ranking":
            expected = [i for i in expected if i in ran]
        elif expected not in ran:
            return _unknown(f"{expected} did not run here")
    preds = predictions(q, expected, items)
    if not preds and q.judge in ("winner", "ranking"):
        return _unknown("fewer than two of them ran here")
    if preds:
        vs = check_predictions(preds, results)
        if len(vs) == 1:
            v = vs[0]
            judged = [{"variant": p.variant, "kind": p.kind, "expected": p.expected} for p in preds]
            return {
                "outcome": v.outcome,
                "measured": v.measured,
                "text": v.text,
                "explanation": v.explanation,
                "predictions": judged,
            }
        order = [r["variant"] for r in ranked_results(results, items)]
        return {
            "outcome": combine([v.outcome for v in vs]),
            "measured": order,
            "text": f"measured order (fastest first): {', '.join(order)}",
            "explanation": "; ".join(f"{v.text} → {v.outcome}" for v in vs),
            "pairs": [{"text": v.text, "outcome": v.outcome} for v in vs],
            "predictions": [{"variant": p.variant, "kind": p.kind, "expected": p.expected} for p in preds],
        }
    fn = {
        "occupancy_design": _occupancy_design,
        "bound": _bound,
        "bandwidth_pct": _bandwidth_pct,
        "model_share": _model_share,
        "host_ratio": _host_ratio,
    }[q.judge]
    return fn(expected, results, extra)


def ranked_results(results: list[dict[str, Any]], items: tuple[str, ...]) -> list[dict[str, Any]]:
    timed = [(timing_of(r), r) for r in results if r["variant"] in items and r.get("status") == "ok"]
    return [r for t, r in sorted(((t, r) for t, r in timed if t), key=lambda x: x[0][0])]


def _unknown(why: str) -> dict[str, Any]:
    return {"outcome": "unknown", "measured": None, "text": "measured nothing", "explanation": why}


def _occupancy_design(expected: Any, results: list[dict[str, Any]], extra: dict[str, Any]) -> dict[str, Any]:
    r = next((x for x in results if x["variant"] == "sdpa_flash" and x.get("status") == "ok"), None)
    if r is None:
        return _unknown("sdpa_flash did not run here")
    ids = {i["id"]: i for i in r.get("insights") or []}
    if "low_occupancy_by_design" in ids:
        got, why = "design", ids["low_occupancy_by_design"]["message"]
    elif "low_occupancy" in ids and ids["low_occupancy"].get("severity") == "warning":
        got, why = "hurting", ids["low_occupancy"]["message"]
    else:
        return _unknown(ids["low_occupancy"]["message"] if "low_occupancy" in ids else "no low-occupancy kernel here")
    out = "hit" if got == expected else "miss"
    return {"outcome": out, "measured": got, "text": f"measured: {got}", "explanation": why}


def _decode_bytes(r: dict[str, Any]) -> int | None:
    """Bytes one decode call must move at least: Q and the output, K and V (bf16/fp16 2 bytes)."""
    c = r.get("case") or {}
    width = {"bf16": 2, "fp16": 2, "fp32": 4, "fp64": 8}.get(c.get("dtype", ""), 0)
    if not c or not width:
        return None
    kv = c.get("kv_heads") or c["heads"]
    sk = c.get("seq_kv") or c["seq_q"]
    return int(width * c["head_dim"] * (2 * c["batch"] * c["heads"] * c["seq_q"] + 2 * c["batch"] * kv * sk))


def _time_and_band(r: dict[str, Any]) -> tuple[float, tuple[float, float]] | None:
    kind = "gpu_us" if r.get("gpu_time_us") else "cpu_us"
    t = r.get("gpu_time_us") or r.get("cpu_time_us")
    if not t:
        return None
    return float(t), noise_band(kind, None, r, {})


def _decode(results: list[dict[str, Any]]) -> dict[str, Any] | None:
    return next((x for x in results if x.get("status") == "ok" and x.get("flops")), None)


def _bound(expected: Any, results: list[dict[str, Any]], extra: dict[str, Any]) -> dict[str, Any]:
    r = _decode(results)
    nbytes = _decode_bytes(r) if r else None
    peak, bw = (r or {}).get("peak") or {}, extra.get("copy_bytes_per_s")
    if r is None or not nbytes or not peak.get("tflops") or not bw:
        return _unknown("needs the FLOPs, the bytes, the matmul peak and the copy bandwidth")
    intensity = r["flops"] / nbytes
    balance = peak["tflops"] * 1e12 / bw
    roofs = (
        f"{intensity:.1f} FLOP/byte (FLOPs {r['flops']:,} ÷ {nbytes:,} bytes of Q, K, V, O) against a balance of "
        f"{balance:.1f} FLOP/byte (matmul peak {peak['tflops']:.2f} TFLOP/s ÷ copy {bw / 1e9:.1f} GB/s)"
    )
    tb = _time_and_band(r)
    if tb is not None:  # how much of the measured time the two roofs explain
        t_us = tb[0]
        mem_us, flop_us = nbytes / bw * 1e6, r["flops"] / (peak["tflops"] * 1e12) * 1e6
        share = max(mem_us, flop_us) / t_us
        if share < OVERHEAD_SHARE * OVERHEAD_MARGIN:
            text = (
                f"measured: overhead-bound: the bytes at the copy bandwidth take {mem_us:,.1f} µs and the FLOPs at "
                f"the matmul peak {flop_us:,.1f} µs, {100 * share:.1f}% of the measured {t_us:,.1f} µs; the rest is "
                f"the call's fixed cost ({roofs})"
            )
            near = share > OVERHEAD_SHARE / OVERHEAD_MARGIN
            why = (
                f"the roofs explain {100 * share:.1f}% of the time, within {OVERHEAD_MARGIN:g}× of "
                f"{100 * OVERHEAD_SHARE:.0f}%: too close to call"
                if near
                else None
            )
            out = "close" if near else ("hit" if expected == "overhead" else "miss")
            return {"outcome": out, "measured": "overhead", "text": text, "explanation": why}
    got = "memory" if intensity < balance else "compute"
    text = f"measured: {got}-bound: {roofs}"
    near = balance / BOUND_MARGIN < intensity < balance * BOUND_MARGIN
    out = "close" if near else ("hit" if got == expected else "miss")
    why = f"within {BOUND_MARGIN:g}× of the balance: too close to call" if near else None
    return {"outcome": out, "measured": got, "text": text, "explanation": why}


def _host_ratio(expected: Any, results: list[dict[str, Any]], extra: dict[str, Any]) -> dict[str, Any]:
    """cuDNN's host time per call over flash's, judged on the band their quartiles (and the CPU noise floor) give,
    with each one's GPU time beside it, as the study shows them."""
    by = {r["variant"]: r for r in results if r.get("status") == "ok"}
    c, f = by.get("sdpa_cudnn"), by.get("sdpa_flash")
    if c is None or f is None or not c.get("cpu_time_us") or not f.get("cpu_time_us"):
        return _unknown("needs the host time per call of both sdpa_cudnn and sdpa_flash")
    c_lo, c_hi = noise_band("cpu_us", None, c, {})
    f_lo, f_hi = noise_band("cpu_us", None, f, {})
    ratio = c["cpu_time_us"] / f["cpu_time_us"]
    band = (c_lo / f_hi, c_hi / f_lo)
    out = judge(expected, "ratio", band)

    def gpu(r: dict[str, Any]) -> str:
        return f" against its {r['gpu_time_us']:,.1f} µs on the GPU" if r.get("gpu_time_us") else ""

    text = (
        f"measured {ratio:.2f}× (noise band {band[0]:.2f}–{band[1]:.2f}×): sdpa_cudnn {c['cpu_time_us']:,.1f} µs of "
        f"host time per call{gpu(c)}, sdpa_flash {f['cpu_time_us']:,.1f} µs{gpu(f)}"
    )
    why = "too close to call: the noise band straddles the guess" if out == "close" else None
    return {"outcome": out, "measured": round(ratio, 2), "text": text, "explanation": why}


def _bandwidth_pct(expected: Any, results: list[dict[str, Any]], extra: dict[str, Any]) -> dict[str, Any]:
    r = _decode(results)
    bw = extra.get("copy_bytes_per_s")
    nbytes = _decode_bytes(r) if r else None
    tb = _time_and_band(r) if r else None
    if r is None or not bw or not nbytes or tb is None:
        return _unknown("needs the decode time, its bytes and the copy bandwidth")
    t, (lo, hi) = tb
    pct = 100.0 * nbytes / (t * 1e-6) / bw
    band = (100.0 * nbytes / (hi * 1e-6) / bw, 100.0 * nbytes / (lo * 1e-6) / bw)
    out = judge(expected, "pct", band)
    text = (
        f"measured {pct:.1f}% (noise band {band[0]:.1f}–{band[1]:.1f}%): {nbytes:,} bytes in {t:,.1f} µs = "
        f"{nbytes / (t * 1e-6) / 1e9:.1f} GB/s against a device copy's {bw / 1e9:.1f} GB/s"
    )
    why = "too close to call: the noise band straddles the guess" if out == "close" else None
    return {
        "outcome": out,
        "measured": round(pct, 1),
        "band": [round(band[0], 1), round(band[1], 1)],
        "text": text,
        "explanation": why,
    }


def _model_share(expected: Any, results: list[dict[str, Any]], extra: dict[str, Any]) -> dict[str, Any]:
    """Attention's share of sdpa's prefill step (the best row where sdpa did not run), from one profiled step:
    a share, not a timed median, so it is judged exactly against the guessed range."""
    ok = [r for r in results if r.get("status") == "ok" and r.get("attention_share") is not None]
    fastest = ranked_results(ok, tuple(x["variant"] for x in ok))
    r = next((x for x in ok if x["variant"] == "sdpa"), None) or (fastest[0] if fastest else None)
    if r is None:
        return _unknown("no implementation ran with attention's share measured")
    pct = round(100.0 * r["attention_share"], 1)
    out = "hit" if expected[0] <= pct <= expected[1] else "miss"
    return {
        "outcome": out,
        "measured": pct,
        "text": f"measured {pct}% of {r['variant']}'s prefill step (one profiled step)",
        "explanation": None,
    }
