"""Compare two attnscope result documents (or two traces), variant by variant.  No torch.

Per variant: kernels added, removed and renamed; GPU time, CPU time, peak memory; flags
that changed (hidden copies, upcasts, mask, tensor cores, SDPA backend, status...); for
traces, GPU time per category.  A threshold on time regressions makes it a CI gate.
"""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path
from typing import Any

from attnscope.core.arguments import check_number

FLAGS = (
    "status",
    "sdpa_backend",
    "num_kernels",
    "num_memcpy",
    "num_memset",
    "upcast_fp32",
    "mask_rebuilt",
    "tensor_cores",
    "numerics_ok",
    "device_name",
)
TIME_METRICS = {"gpu": "gpu_time_us", "cpu": "cpu_time_us"}


def load_side(path: str | Path) -> dict[str, Any]:
    """A result document as it is stored, or a trace analysed into one (the file read by document.load)."""
    from attnscope.document.load import document_of, load
    from attnscope.document.schema import document

    src = load(path)
    if src.kind == "trace":
        from attnscope.api import analyze

        return document(None, [analyze(path, require_gpu=False)])
    return document_of(src)


def diff_files(
    a: str | Path,
    b: str | Path,
    *,
    threshold_pct: float | None = None,
    metrics: tuple[str, ...] = ("gpu", "cpu"),
) -> dict[str, Any]:
    """The diff document `attnscope diff --json` writes: two documents or traces compared, variant by variant."""
    if threshold_pct is not None:  # a finite percentage ≥ 0, as the command line's --threshold, before any reading
        check_number("threshold_pct", threshold_pct)
    bad = [m for m in metrics if m not in TIME_METRICS]
    if not metrics or bad:
        raise ValueError(f"metrics are gpu and/or cpu; got {', '.join(metrics) or 'none'}")
    from attnscope.document.schema import SCHEMA_VERSION

    d = diff(load_side(a), load_side(b), threshold_pct=threshold_pct, metrics=metrics)
    return {"schema_version": SCHEMA_VERSION, "tool": "attnscope", "kind": "diff", "a": str(a), "b": str(b), **d}


def _norm(name: str) -> str:
    """A kernel name with template arguments, parameters and numbers blanked, for renames."""
    s = re.sub(r"\(.*\)$", "", name)
    while "<" in s:
        t = re.sub(r"<[^<>]*>", "", s)
        if t == s:
            break
        s = t
    return re.sub(r"\d+", "#", s)


def _kernel_info(r: dict[str, Any]) -> tuple[Counter[str], dict[str, tuple[str, str | None]], dict[str, float]]:
    counts: Counter[str] = Counter()
    info: dict[str, tuple[str, str | None]] = {}
    time: dict[str, float] = {}
    for k in r.get("kernels") or []:
        counts[k["name"]] += 1
        info.setdefault(k["name"], (k["category"], k.get("launched_by")))
        time[k["name"]] = time.get(k["name"], 0.0) + (k.get("duration_us") or 0.0)
    return counts, info, time


def kernel_changes(a: dict[str, Any], b: dict[str, Any]) -> dict[str, Any]:
    ca, ia, ta = _kernel_info(a)
    cb, ib, tb = _kernel_info(b)
    removed = sorted((k for k in ca if k not in cb), key=lambda k: -ta[k])
    added = sorted((k for k in cb if k not in ca), key=lambda k: -tb[k])
    renamed = []
    for old in list(removed):
        match = next((n for n in added if _norm(n) == _norm(old)), None)
        if match is None:
            match = next((n for n in added if ib[n] == ia[old]), None)
        if match is not None:
            renamed.append(
                {"from": old, "to": match, "category": ib[match][0], "count_a": ca[old], "count_b": cb[match]}
            )
            removed.remove(old)
            added.remove(match)
    recount = [
        {"name": k, "count_a": ca[k], "count_b": cb[k]}
        for k in sorted(ca, key=lambda k: -ta[k])
        if k in cb and ca[k] != cb[k]
    ]
    return {
        "added": [{"name": k, "category": ib[k][0], "count": cb[k], "time_us": round(tb[k], 3)} for k in added],
        "removed": [{"name": k, "category": ia[k][0], "count": ca[k], "time_us": round(ta[k], 3)} for k in removed],
        "renamed": renamed,
        "count_changed": recount,
    }


def _delta(va: float | None, vb: float | None) -> dict[str, Any]:
    d: dict[str, Any] = {"a": va, "b": vb, "delta": None, "delta_pct": None}
    if va is not None and vb is not None:
        d["delta"] = round(vb - va, 3)
        d["delta_pct"] = round(100.0 * (vb - va) / va, 2) if va else None
    return d


def _copies(r: dict[str, Any]) -> tuple[int, int]:
    cs = r.get("hidden_copies") or []
    return len(cs), sum(c.get("bytes") or 0 for c in cs)


def _categories(a: dict[str, Any], b: dict[str, Any]) -> list[dict[str, Any]]:
    sa, sb = a.get("trace_summary"), b.get("trace_summary")
    if not sa or not sb:
        return []
    ta = {c["category"]: c["time_us"] for c in sa["categories"]}
    tb = {c["category"]: c["time_us"] for c in sb["categories"]}
    cats = list(ta) + [c for c in tb if c not in ta]  # A's order, then what only B has (a new copy, a cast)
    return [{"category": c, **_delta(ta.get(c, 0.0), tb.get(c, 0.0))} for c in cats if ta.get(c) or tb.get(c)]


def _one_is_a_trace(a: dict[str, Any], b: dict[str, Any]) -> bool:
    """One side read from a trace, the other measured: their CPU µs are not one measurement (the traced region's
    host span, one sample with the profiler's overhead, against the median host time per call)."""
    return (a.get("source") == "trace") != (b.get("source") == "trace")


TRACE_AGAINST_RUN = (
    "timings: one side is a trace, the other a run: CPU µs is the traced region's host span (one sample, profiler "
    "overhead included) against the median host time per call, so it is shown, not compared (no change, no "
    "regression); GPU µs is one traced call against the run's median"
)


def compare_results(a: dict[str, Any], b: dict[str, Any]) -> dict[str, Any]:
    flags = {f: {"a": a.get(f), "b": b.get(f)} for f in FLAGS if a.get(f) != b.get(f)}
    if _one_is_a_trace(a, b):
        flags.pop("numerics_ok", None)  # a trace holds no output to check: unknown there, not changed
    if _copies(a) != _copies(b):
        flags["hidden_copies"] = {"a": _copies(a), "b": _copies(b)}
    if len(a.get("upcasts") or []) != len(b.get("upcasts") or []):
        flags["num_upcasts"] = {"a": len(a.get("upcasts") or []), "b": len(b.get("upcasts") or [])}
    return {
        "variant": a["variant"] if a["variant"] == b["variant"] else f"{a['variant']} → {b['variant']}",
        "gpu_time_us": _delta(a.get("gpu_time_us"), b.get("gpu_time_us")),
        "cpu_time_us": _delta(a.get("cpu_time_us"), b.get("cpu_time_us"))
        if not _one_is_a_trace(a, b)
        else {"a": a.get("cpu_time_us"), "b": b.get("cpu_time_us"), "delta": None, "delta_pct": None},
        # a model's row: wall time per step (median), its one time
        "step_time_us": _delta(a.get("step_time_us"), b.get("step_time_us")),
        "peak_memory_bytes": _delta(a.get("peak_memory_bytes"), b.get("peak_memory_bytes")),
        "noisy": any((r.get(k) or {}).get("noisy") for r in (a, b) for k in ("gpu_time", "cpu_time", "step_time")),
        "kernels": kernel_changes(a, b),
        "flags": flags,
        "categories": _categories(a, b),
    }


def repeated(ra: list[dict[str, Any]], rb: list[dict[str, Any]]) -> bool:
    """Whether a variant has several rows on a side (a model document: one per mode and point), so that its
    name alone does not say which row is which."""
    return any(n > 1 for rows in (ra, rb) for n in Counter(r["variant"] for r in rows).values())


def label(r: dict[str, Any], long: bool) -> str:
    """A row's name in the diff: its variant, and where names repeat its mode and point (``eager prefill batch=1
    seq=128``)."""
    if not long:
        return str(r["variant"])
    got = r.get("case")
    case: dict[str, Any] = got if isinstance(got, dict) else {}
    parts = [str(r["variant"]), str(r.get("mode") or case.get("mode") or "")]
    parts += [f"{k}={case[k]}" for k in ("batch", "seq", "seq_q", "seq_kv") if case.get(k) is not None]
    return " ".join(p for p in parts if p)


def pair(ra: list[dict[str, Any]], rb: list[dict[str, Any]]) -> tuple[list[tuple[dict, dict]], list[str], list[str]]:
    """Results matched by variant name (and, where a name repeats on a side, by mode and point too: a model's eager
    prefill row is never compared with its eager decode row); one result on each side is matched whatever its
    name."""
    if len(ra) == 1 and len(rb) == 1:
        return [(ra[0], rb[0])], [], []
    long = repeated(ra, rb)
    ib = {label(r, long): r for r in rb}
    pairs = [(r, ib[label(r, long)]) for r in ra if label(r, long) in ib]
    names_a = {label(r, long) for r in ra}
    only_a = [label(r, long) for r in ra if label(r, long) not in ib]
    only_b = [label(r, long) for r in rb if label(r, long) not in names_a]
    return pairs, only_a, only_b


ENV_KEYS = ("torch", "cuda", "cudnn", "device_name", "driver", "host_cores")


def _said(v: Any) -> str:
    """A value of a case or an environment as the tables say it: '—' where there is none (not Python's None)."""
    return "—" if v is None else str(v)


def _as_read(d: dict[str, Any]) -> dict[str, Any]:
    """A document's case as the case it stands for: a field an older document left out takes its default
    (``alibi`` False, ``mode`` fwd), ``kv_heads`` and ``seq_kv`` left to follow ``heads`` and ``seq_q`` are
    those numbers, and a mask left to ``causal`` is named (``causal`` or ``none``); so two documents differ
    only where their cases do.  A case that cannot be read is compared as written."""
    from attnscope.core.case import FIELDS, Case

    try:
        c = Case.from_dict(d)
    except (TypeError, ValueError):
        return d
    out = {f.json_key: getattr(c, f.name) for f in FIELDS if f.json_key in d or getattr(c, f.name) is not None}
    out.update(kv_heads=c.num_kv_heads, seq_kv=c.num_seq_kv, mask=c.mask or ("causal" if c.causal else "none"))
    return {**{k: v for k, v in d.items() if k not in out}, **out}


def context_changes(doc_a: dict[str, Any], doc_b: dict[str, Any]) -> list[str]:
    """What differs besides the code under test: the case and the environment.  A time change
    across these is not a regression of the same workload, so the reader is told first."""
    out = []
    ca, cb = doc_a.get("case") or {}, doc_b.get("case") or {}
    if ca and cb:
        ca, cb = _as_read(ca), _as_read(cb)
        for k in sorted(set(ca) | set(cb)):
            if ca.get(k) != cb.get(k):
                out.append(f"case {k}: {_said(ca.get(k))} → {_said(cb.get(k))}")
    elif ca or cb:  # one line, not every field "→ None": a trace's document names no case
        has, lacks = ("A", "B") if ca else ("B", "A")
        out.append(f"case: only {has} names one ({lacks} is a trace or names none): the cases could not be compared")
    ea, eb = doc_a.get("env") or {}, doc_b.get("env") or {}
    for k in ENV_KEYS:
        if ea and eb and ea.get(k) != eb.get(k):
            out.append(f"env {k}: {_said(ea.get(k))} → {_said(eb.get(k))}")
    la, lb = ea.get("libraries"), eb.get("libraries")
    if isinstance(la, dict) and isinstance(lb, dict):  # both recorded (a document before the field has none)
        for m in sorted(set(la) | set(lb)):
            if la.get(m) != lb.get(m):
                out.append(f"env library {m}: {la.get(m) or 'does not import'} → {lb.get(m) or 'does not import'}")
    return out


def device_changes(pairs: list[tuple[dict, dict]], doc_a: dict[str, Any], doc_b: dict[str, Any]) -> list[str]:
    """The GPUs and cases of paired results where they differ and the documents do not say so at their top (two
    traces: an analyze document records no environment and no case; each trace names its device and, from its
    attention ops' shapes, its case): a time change across them is not a regression of the same workload."""
    ea, eb = doc_a.get("env") or {}, doc_b.get("env") or {}
    cases_said = bool(doc_a.get("case") or doc_b.get("case"))
    out: list[str] = []
    for a, b in pairs:
        who = f"{label(a, True)}: " if len(pairs) > 1 else ""
        da, db = a.get("device_name"), b.get("device_name")
        lines = []
        if da and db and da != db and not (ea.get("device_name") and eb.get("device_name")):
            lines.append(f"device: {da} → {db}")  # else the env line says it, or the runs share a device
        if not cases_said:
            lines += context_changes({"case": a.get("case")}, {"case": b.get("case")})
        out += [who + line for line in lines if who + line not in out]
    return out


def diff(
    doc_a: dict[str, Any],
    doc_b: dict[str, Any],
    *,
    threshold_pct: float | None = None,
    metrics: tuple[str, ...] = ("gpu", "cpu"),
) -> dict[str, Any]:
    pairs, only_a, only_b = pair(doc_a["results"], doc_b["results"])
    long = len(pairs) > 1 and repeated(doc_a["results"], doc_b["results"])
    variants = [compare_results(a, b) | ({"variant": label(a, True)} if long else {}) for a, b in pairs]
    regressions = []
    if threshold_pct is not None:
        for v in variants:
            for key in [TIME_METRICS[m] for m in metrics] + ["step_time_us"]:  # a model's step time: its one time
                d = v[key]
                if d["delta_pct"] is not None and d["delta_pct"] > threshold_pct:
                    regressions.append({"variant": v["variant"], "metric": key, **d})
    return {
        "env_a": doc_a.get("env"),
        "env_b": doc_b.get("env"),
        "context_changes": context_changes(doc_a, doc_b)
        + device_changes(pairs, doc_a, doc_b)
        + ([TRACE_AGAINST_RUN] if any(_one_is_a_trace(a, b) for a, b in pairs) else []),
        "threshold_pct": threshold_pct,
        "variants": variants,
        "only_in_a": only_a,
        "only_in_b": only_b,
        "regressions": regressions,
    }
