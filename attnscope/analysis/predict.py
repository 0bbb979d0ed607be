"""Guess first: predictions written before running, checked against what was measured.  Pure.

A predictions file is TOML (read with the standard library's tomllib)::

    [[predict]]
    variant = "sdpa_math"
    kernels = 5                                  # exact, or a range [4, 8]
    upcast = false                               # hidden_copy, upcast, tensor_cores, mask_rebuilt: true/false
    faster_than = { variant = "naive", by = 2.0 }  # at least 2x; or by = [2.0, 4.0]
    note = "why I think so"

Every key besides ``variant`` and ``note`` is one prediction; see ``KINDS``.
"""

from __future__ import annotations

from typing import Any

from attnscope.analysis.rules.insights import MIB, main_kernel, safe_softmax_kernels
from attnscope.analysis.rules.peers import timing_of
from attnscope.analysis.rules.row_kernels import compute_kernels
from attnscope.analysis.rules.ties import ran_backend
from attnscope.core.arguments import UsageError
from attnscope.core.types import Prediction, Verdict

# kind → (what the value is, the shape it takes)
KINDS: dict[str, tuple[str, str]] = {
    "kernels": ("compute kernels per call (GPU) or leaf compute ops (CPU)", "count"),
    "memcpy": ("memcpy events per call", "count"),
    "hidden_copy": ("an out-of-place op copies a full tensor", "bool"),
    "upcast": ("16-bit inputs are upcast to fp32", "bool"),
    "tensor_cores": ("matrix work runs on tensor cores", "bool"),
    "mask_rebuilt": ("the causal mask is rebuilt inside the call", "bool"),
    "gpu_us": ("GPU time per call, µs (median)", "range"),
    "cpu_us": ("host time per call, µs (median)", "range"),
    "peak_memory_mib": ("peak extra memory of one call, MiB", "range"),
    "occupancy_pct": ("theoretical occupancy of the longest kernel, %", "range"),
    "backend": ("the SDPA backend that ran (flash, efficient, cudnn, math)", "str"),
    "faster_than": ("other's time / this time, at least `by` (or within [lo, hi])", "compare"),
    "slower_than": ("this time / other's time, at least `by` (or within [lo, hi])", "compare"),
}
BACKENDS = ("flash", "efficient", "cudnn", "math", "flex")
# Insights that explain a miss of each kind, most telling first.
EXPLAINED_BY: dict[str, tuple[str, ...]] = {
    "memcpy": ("hidden_copy",),
    "hidden_copy": ("hidden_copy",),
    "upcast": ("fp32_upcast",),
    "tensor_cores": ("fp32_upcast", "no_tensor_cores"),
    "mask_rebuilt": ("mask_rebuilt",),
    "peak_memory_mib": ("score_matrix",),
    "occupancy_pct": ("low_occupancy", "low_occupancy_by_design"),
    "backend": ("sdpa_choice",),
}
TIME_INSIGHTS = (
    "numerics_off",
    "fp32_upcast",
    "no_tensor_cores",
    "hidden_copy",
    "safe_softmax",
    "cpu_bound",
    "low_occupancy",
    "slower_than_best",
    "sdpa_choice",
)


class PredictionError(UsageError):
    """A predictions file that cannot be read; the message says where and why (``fields``: the values it names)."""


def _non_negative(vs: list[Any], where: str) -> None:
    """Counts, times, memory, occupancy and ratios are never negative, NaN or infinite."""
    for x in vs:
        if x != x or x in (float("inf"), float("-inf")) or x < 0:
            raise PredictionError(f"{where}: expected a finite value ≥ 0, got {x!r}")


def _range(v: Any, where: str, integer: bool) -> Any:
    num = (int,) if integer else (int, float)
    if isinstance(v, bool):
        raise PredictionError(f"{where}: expected a number or [lo, hi], got {v!r}")
    if isinstance(v, num):
        _non_negative([v], where)
        return v
    if isinstance(v, list) and len(v) == 2 and all(isinstance(x, num) and not isinstance(x, bool) for x in v):
        _non_negative(v, where)
        if v[0] > v[1]:
            raise PredictionError(f"{where}: range [lo, hi] has lo > hi: {v}")
        return [v[0], v[1]]
    raise PredictionError(f"{where}: expected {'an integer' if integer else 'a number'} or [lo, hi], got {v!r}")


def _expected(kind: str, v: Any, where: str, known: set[str] | None) -> Any:
    shape = KINDS[kind][1]
    if shape == "count":
        return _range(v, where, integer=True)
    if shape == "range":
        got = _range(v, where, integer=False)
        if not isinstance(got, list):
            raise PredictionError(f"{where}: a measured quantity needs a range [lo, hi], got {v!r}")
        return got
    if shape == "bool":
        if not isinstance(v, bool):
            raise PredictionError(f"{where}: expected true or false, got {v!r}")
        return v
    if shape == "str":
        if v not in BACKENDS:
            raise PredictionError(f"{where}: expected one of {', '.join(BACKENDS)}, got {v!r}")
        return v
    if not isinstance(v, dict) or set(v) != {"variant", "by"}:
        raise PredictionError(f'{where}: expected {{ variant = "name", by = ratio or [lo, hi] }}, got {v!r}')
    if known is not None and v["variant"] not in known:
        raise PredictionError(f"{where}: unknown variant {v['variant']!r}")
    by = _range(v["by"], where, integer=False)
    if (by if not isinstance(by, list) else by[0]) <= 0:
        raise PredictionError(f"{where}: `by` must be a positive ratio, got {by!r}")
    return {"variant": v["variant"], "by": by}


def parse_predictions(
    text: str, known_variants: set[str] | None = None, source: str = "predictions"
) -> list[Prediction]:
    """TOML text → predictions, validated; raises PredictionError naming the block and key."""
    import tomllib  # here, not at the top: ``analyze`` imports this module and never reads TOML

    try:
        doc = tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        raise PredictionError(f"{source}: not valid TOML ({e})") from None
    except RecursionError:
        raise PredictionError(f"{source}: not valid TOML (nested too deeply to read)") from None
    blocks = doc.get("predict")
    extra = set(doc) - {"predict"}
    if extra:
        raise PredictionError(f"{source}: unknown top-level key(s) {', '.join(sorted(extra))}; use [[predict]] blocks")
    if not isinstance(blocks, list) or not blocks:
        raise PredictionError(f"{source}: no [[predict]] blocks")
    out: list[Prediction] = []
    for i, b in enumerate(blocks, 1):
        where = f"{source}: [[predict]] #{i}"
        variant = b.get("variant")
        if not isinstance(variant, str):
            raise PredictionError(f'{where}: needs variant = "name"')
        if known_variants is not None and variant not in known_variants:
            raise PredictionError(f"{where}: unknown variant {variant!r}; known: {', '.join(sorted(known_variants))}")
        note = b.get("note")
        keys = [k for k in b if k not in ("variant", "note")]
        if not keys:
            raise PredictionError(f"{where} ({variant}): nothing predicted; keys: {', '.join(KINDS)}")
        for k in keys:
            if k not in KINDS:
                raise PredictionError(f"{where} ({variant}): unknown key {k!r}; known: {', '.join(KINDS)}")
            out.append(
                Prediction(
                    variant,
                    k,
                    _expected(k, b[k], f"{where} ({variant}).{k}", known_variants),
                    str(note) if note is not None else None,
                )
            )
    return out


def to_toml(preds: list[Prediction]) -> str:
    """Predictions back to TOML (one block per variant), so `attnscope guess` can save what was asked."""
    lines: list[str] = ["# attnscope predictions: written before the run", ""]
    by_variant: dict[str, list[Prediction]] = {}
    for p in preds:
        by_variant.setdefault(p.variant, []).append(p)
    for variant, ps in by_variant.items():
        lines += ["[[predict]]", f'variant = "{variant}"']
        for p in ps:
            lines.append(f"{p.kind} = {_toml_value(p.expected)}")
        lines.append("")
    return "\n".join(lines)


def _toml_value(v: Any) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, str):
        return f'"{v}"'
    if isinstance(v, list):
        return f"[{', '.join(_toml_value(x) for x in v)}]"
    if isinstance(v, dict):
        return "{ " + ", ".join(f"{k} = {_toml_value(x)}" for k, x in v.items()) + " }"
    return repr(v)


# ---- measuring -----------------------------------------------------------------------------


def measured_value(kind: str, expected: Any, r: dict[str, Any], by_name: dict[str, dict[str, Any]]) -> Any:
    """The measured counterpart of one prediction, or None when nothing was measured."""
    if kind == "kernels":
        return r.get("num_kernels")
    if kind == "memcpy":
        return r.get("num_memcpy")
    if kind == "hidden_copy":
        return bool(r.get("hidden_copies")) if r.get("hidden_copies") is not None else None
    if kind == "upcast":
        return r.get("upcast_fp32")
    if kind in ("tensor_cores", "mask_rebuilt"):
        return r.get(kind)
    if kind in ("gpu_us", "cpu_us"):
        return r.get("gpu_time_us" if kind == "gpu_us" else "cpu_time_us")
    if kind == "peak_memory_mib":
        b = r.get("peak_memory_bytes")
        return round(b / MIB, 1) if b is not None else None
    if kind == "occupancy_pct":
        k = main_kernel(r)
        return k.get("theoretical_occupancy_pct") if k else None
    if kind == "backend":
        return ran_backend(r)[0]
    other = by_name.get(expected["variant"])
    mine, theirs = timing_of(r), (timing_of(other) if other else None)
    if mine is None or theirs is None:
        return None
    ratio = theirs[0] / mine[0] if kind == "faster_than" else mine[0] / theirs[0]
    # two decimals, and below 0.1 two significant digits: 20 µs against 20,000 µs is 0.001, never 0.0
    return round(ratio, 2) if ratio == 0 or abs(ratio) >= 0.1 else float(f"{ratio:.2g}")


def matches(expected: Any, measured: Any, kind: str) -> bool:
    target = expected["by"] if kind in ("faster_than", "slower_than") else expected
    if isinstance(target, list):
        return bool(target[0] <= measured <= target[1])
    if kind in ("faster_than", "slower_than"):
        return bool(measured >= target)
    return bool(measured == target)


# No band is narrower than this share of the median: run-to-run drift that one run's quartiles do
# not show.  CPU: the tool's noisy-timing threshold (a busy host shifts whole runs); GPU: CUDA-event
# medians of the H200 study repeated within 2%.
NOISE_FLOOR = {"cpu": 0.10, "gpu": 0.02}
TIMED = ("gpu_us", "cpu_us", "faster_than", "slower_than")


def _band(t: dict[str, Any] | None, median: float, device: str | None) -> tuple[float, float]:
    """Where a timed median could have landed on another run: its quartiles and fastest sample, at least
    ±NOISE_FLOOR."""
    f = NOISE_FLOOR["gpu" if device == "gpu" else "cpu"]
    lo, hi = median / (1 + f), median * (1 + f)
    if t and t.get("p25_us") is not None and t.get("p75_us") is not None:
        lo, hi = min(lo, t["p25_us"]), max(hi, t["p75_us"])
    if t and t.get("min_us") is not None:
        # On a busy host a whole timing window can run slow while its quartiles stay tight: the
        # fastest sample is what the same call did in a quiet moment, so the band reaches down to it.
        lo = min(lo, t["min_us"])
    return lo, hi


def noise_band(kind: str, expected: Any, r: dict[str, Any], by_name: dict[str, dict[str, Any]]) -> tuple[float, float]:
    """The measured value's band under noise, for the timed kinds (a time, or a ratio of two times)."""
    dev = r.get("device_kind")
    if kind in ("gpu_us", "cpu_us"):
        t = r.get("gpu_time" if kind == "gpu_us" else "cpu_time")
        m = r.get("gpu_time_us" if kind == "gpu_us" else "cpu_time_us")
        # host time on a GPU box is still host time: the CPU floor
        return _band(t, float(m or 0.0), dev if kind == "gpu_us" else "cpu")
    mine = timing_of(r)
    theirs = timing_of(by_name[expected["variant"]])
    assert mine is not None and theirs is not None  # the ratio was measured
    lo, hi = _band(mine[1], mine[0], dev)
    olo, ohi = _band(theirs[1], theirs[0], dev)
    return (olo / hi, ohi / lo) if kind == "faster_than" else (lo / ohi, hi / olo)


def judge(expected: Any, kind: str, band: tuple[float, float]) -> str:
    """hit when the whole band agrees with the prediction, miss when none of it does, else close."""
    target = expected["by"] if kind in ("faster_than", "slower_than") else expected
    lo, hi = band
    if isinstance(target, list):
        if target[0] <= lo and hi <= target[1]:
            return "hit"
        return "miss" if hi < target[0] or lo > target[1] else "close"
    if lo >= target:
        return "hit"
    return "miss" if hi < target else "close"


# ---- verdicts ------------------------------------------------------------------------------


def _fmt(v: Any) -> str:
    if isinstance(v, bool):
        return "yes" if v else "no"
    if isinstance(v, float):  # below 0.1, two significant digits: a ratio of 0.0012 never reads as 0.00
        return f"{v:,.1f}" if abs(v) >= 10 else f"{v:.2f}" if v == 0 or abs(v) >= 0.1 else f"{v:.2g}"
    if isinstance(v, list):
        return f"{_fmt(v[0])}–{_fmt(v[1])}"
    if isinstance(v, dict):
        return f"{'≥ ' if not isinstance(v['by'], list) else ''}{_fmt(v['by'])}× vs {v['variant']}"
    return str(v)


def _op_label(k: dict[str, Any]) -> str:
    """The aten op a kernel stands for: itself on CPU (a leaf op), its launcher on GPU."""
    name = k["name"] if k["name"].startswith("aten::") else (k.get("launched_by") or k["name"])
    return str(name).removeprefix("aten::")


def kernel_accounting(r: dict[str, Any]) -> str:
    """Where the kernels went: the insight-driven groups first, then the rest by category."""
    ks = compute_kernels(r)
    unit = "op" if r.get("device_kind") == "cpu" else "kernel"
    taken: set[int] = set()
    parts: list[str] = []
    if r.get("upcast_fp32"):
        conv = [k for k in ks if k["category"] == "copy"]
        taken |= {id(k) for k in conv}
        if conv:  # one count of upcasts: the insight's (the upcasts list), beside the copy work they sit in
            ups = len(r.get("upcasts") or [])
            among = f"{ups} upcast{'' if ups == 1 else 's'} to fp32 among " if ups else ""
            parts.append(f"fp32 upcast ({among}{len(conv)} copy {unit}{'' if len(conv) == 1 else 's'})")
    elif r.get("hidden_copies"):
        copies = [k for k in ks if k["category"] == "copy"]  # a plain copy is a memcpy on every device: not here
        taken |= {id(k) for k in copies}
        if copies:
            causes = sorted({c["op"].removeprefix("aten::") for c in r["hidden_copies"]})
            parts.append(f"hidden copy ({len(copies)}: by {', '.join(causes)})")
    if r.get("mask_rebuilt"):
        ops = list(r.get("mask_ops") or [])
        mk = [
            k
            for k in ks
            if id(k) not in taken and (k.get("launched_by") in ops or k["name"] in ops or "triu_tril" in k["name"])
        ]
        taken |= {id(k) for k in mk}
        parts.append(f"mask rebuilt ({len(mk)}: {', '.join(o.removeprefix('aten::') for o in ops)})")
    guard = [k for k in safe_softmax_kernels(r) if id(k) not in taken]
    if guard:
        taken |= {id(k) for k in guard}
        names = sorted({_op_label(k) for k in guard})
        parts.append(f"safe softmax ({len(guard)}: {', '.join(names)})")
    rest: dict[str, int] = {}
    for k in ks:
        if id(k) not in taken:
            rest[k["category"]] = rest.get(k["category"], 0) + 1
    tail = ", ".join(f"{n} {c}" for c, n in sorted(rest.items(), key=lambda x: -x[1]))
    return "; ".join(parts + ([f"the rest: {tail}"] if tail else []))


def _insights_of(r: dict[str, Any], ids: tuple[str, ...]) -> list[dict[str, Any]]:
    got = [i for i in r.get("insights") or [] if i["id"] in ids]
    return sorted(got, key=lambda i: ids.index(i["id"]))


def explain_miss(p: Prediction, r: dict[str, Any], by_name: dict[str, dict[str, Any]]) -> str:
    if p.kind == "kernels":
        return kernel_accounting(r)
    if p.kind in ("gpu_us", "cpu_us", "faster_than", "slower_than"):
        found = [i for i in _insights_of(r, TIME_INSIGHTS) if i["severity"] != "info" or i["id"] == "sdpa_choice"]
        if p.kind in ("faster_than", "slower_than") and p.expected["variant"] in by_name:
            other = by_name[p.expected["variant"]]
            found += [
                dict(i, message=f"{other['variant']}: {i['message']}")
                for i in _insights_of(other, TIME_INSIGHTS)
                if i["severity"] != "info"
            ][:1]
        return "; ".join(i["message"] for i in found[:3]) or "no insight points at a cause"
    found = _insights_of(r, EXPLAINED_BY.get(p.kind, ()))
    if found:
        return "; ".join(i["message"] for i in found[:2])
    return f"nothing in the trace shows {KINDS[p.kind][0]}"


def _head(p: Prediction) -> str:
    """What a verdict's text opens with.  A ratio is named as the quotient it is (the slower time over the faster
    one the prediction speaks of), so a guess below 1 never reads as "slower by 0.5×"."""
    if p.kind in ("faster_than", "slower_than") and isinstance(p.expected, dict):
        o, by = p.expected["variant"], p.expected["by"]
        num, den = (o, p.variant) if p.kind == "faster_than" else (p.variant, o)
        return f"{num}'s time ÷ {den}'s: predicted {'' if isinstance(by, list) else '≥ '}{_fmt(by)}×"
    return f"{p.variant} {p.kind}: predicted {_fmt(p.expected)}"


def check_predictions(preds: list[Prediction], results: list[dict[str, Any]]) -> list[Verdict]:
    """One verdict per prediction, against JSON-shaped results that already carry their insights."""
    by_name = {r["variant"]: r for r in results}
    out: list[Verdict] = []
    for p in preds:
        head = _head(p)
        r = by_name.get(p.variant)
        if r is None or r.get("status") != "ok":
            why = "not in this run" if r is None else f"{r['status']}: {r.get('reason')}"
            out.append(Verdict(p, "unknown", None, f"{head}, measured nothing", why))
            continue
        m = measured_value(p.kind, p.expected, r, by_name)
        if m is None:
            out.append(
                Verdict(
                    p,
                    "unknown",
                    None,
                    f"{head}, measured nothing",
                    f"not measurable in this result ({r.get('device_kind') or 'trace'}): {KINDS[p.kind][0]}",
                )
            )
            continue
        ratio = p.kind in ("faster_than", "slower_than")
        shown = f"{_fmt(m)}×" if ratio else _fmt(m)
        if p.kind in TIMED:
            band = noise_band(p.kind, p.expected, r, by_name)
            outcome = judge(p.expected, p.kind, band)
            shown += f" (noise band {_fmt(float(band[0]))}–{_fmt(float(band[1]))}{'×' if ratio else ''})"
        else:
            outcome = "hit" if matches(p.expected, m, p.kind) else "miss"
        if outcome == "hit":
            out.append(Verdict(p, "hit", m, f"{head}, measured {shown}"))
        elif outcome == "close":
            why = "too close to call: the noise band straddles the prediction (a larger --budget or quieter host tells)"
            out.append(Verdict(p, "close", m, f"{head}, measured {shown}", why))
        else:
            out.append(Verdict(p, "miss", m, f"{head}, measured {shown}", explain_miss(p, r, by_name)))
    return out
