"""The versioned JSON document and its rows: one schema for `run`, `analyze` and `sweep`.

Serialising only: no analysis runs here.  ``result_from_dict(result_to_dict(r)) == r``;
keys that are derived (``gpu_time_us``, ``noisy``, ``numerics_ok``, ``flop_formula``, ...) are
written for readers and recomputed, not read, on the way back.  Insights and the recommendation
are added at read time by ``api.annotate``.
"""

from __future__ import annotations

import dataclasses
import json
import operator
import os
import tempfile
from pathlib import Path
from typing import Any

from attnscope.core.flops import flop_formula, mask_flop_note
from attnscope.core.types import Case, Env, Fingerprint, HiddenCopy, KernelRecord, PeakRate, Result, Timing, Upcast

SCHEMA_VERSION = 1


def _timing(t: Timing | None) -> dict[str, Any] | None:
    if t is None:
        return None
    return {
        "median_us": t.median_us,
        "p25_us": t.p25_us,
        "p75_us": t.p75_us,
        "min_us": t.min_us,
        "num_samples": t.num_samples,
        "iqr_rel": t.iqr_rel,
        "noisy": t.noisy,
        "method": t.method,
    }


_FIELDS_OF: dict[type, tuple[tuple[str, ...], Any]] = {}


def _flat_all(objs: Any) -> list[dict[str, Any]]:
    """``dataclasses.asdict`` of records of plain fields, without its deep copies (10^4–10^5 kernels)."""
    out = []
    for obj in objs:
        got = _FIELDS_OF.get(type(obj))
        if got is None:
            names = tuple(f.name for f in dataclasses.fields(obj))
            got = _FIELDS_OF[type(obj)] = (names, operator.attrgetter(*names) if len(names) > 1 else None)
        names, values = got
        out.append(dict(zip(names, values(obj), strict=True)) if values else {names[0]: getattr(obj, names[0])})
    return out


def _fp_fields(fp: Fingerprint | None) -> dict[str, Any]:
    if fp is None:
        return {
            "num_kernels": None,
            "num_memcpy": None,
            "num_memset": None,
            "kernels": [],
            "hidden_copies": [],
            "upcast_fp32": None,
            "upcasts": [],
            "mask_rebuilt": None,
            "mask_ops": [],
            "tensor_cores": None,
            "sdpa_backend": None,
            "device_kind": None,
            "device_name": None,
            "compute_capability": None,
            "trace_gpu_time_us": None,
            "trace_cpu_time_us": None,
            "trace_peak_memory_bytes": None,
            "notes": [],
            "mask_builds": [],
        }
    return {
        "num_kernels": fp.num_kernels,
        "num_memcpy": fp.num_memcpy,
        "num_memset": fp.num_memset,
        "kernels": _flat_all(fp.kernels),
        "hidden_copies": _flat_all(fp.hidden_copies),
        "upcast_fp32": fp.upcast_fp32,
        "upcasts": _flat_all(fp.upcasts),
        "mask_rebuilt": fp.mask_rebuilt,
        "mask_ops": list(fp.mask_ops),
        "tensor_cores": fp.tensor_cores,
        "sdpa_backend": fp.sdpa_backend,
        "device_kind": fp.device_kind,
        "device_name": fp.device_name,
        "compute_capability": list(fp.compute_capability) if fp.compute_capability else None,
        "trace_gpu_time_us": fp.trace_gpu_time_us,
        "trace_cpu_time_us": fp.trace_cpu_time_us,
        "trace_peak_memory_bytes": fp.trace_peak_memory_bytes,
        "notes": list(fp.notes),  # what the trace says; the run's own notes are "run_notes"
        "mask_builds": [dict(m) for m in fp.mask_builds],
    }


def result_to_dict(r: Result) -> dict[str, Any]:
    d: dict[str, Any] = {
        "variant": r.variant,
        "case": r.case.to_dict() if r.case else None,
        "status": r.status,
        "reason": r.reason,
        "source": r.source,
        "mode": r.mode,
        "family": r.family,
        "backend": r.backend,
    }
    d.update(_fp_fields(r.fingerprint))
    d.update(
        {
            "gpu_time_us": r.gpu_time.median_us if r.gpu_time else None,
            "gpu_time": _timing(r.gpu_time),
            "cpu_time_us": r.cpu_time.median_us if r.cpu_time else None,
            "cpu_time": _timing(r.cpu_time),
            "peak_memory_bytes": r.peak_memory_bytes,
            "peak_memory_source": r.peak_memory_source,
            "flops": r.flops,
            "flop_formula": _flop_formula(r),
            "tflops": r.tflops,
            "pct_of_peak": r.pct_of_peak,
            "max_rel_error": r.max_rel_error,
            "error_tolerance": r.error_tolerance,
            "nonfinite": r.nonfinite,
            "numerics_ok": r.numerics_ok,
            "compile_time_s": r.compile_time_s,
            "trace_path": r.trace_path,
            "peak": dataclasses.asdict(r.peak) if r.peak else None,
            "rel_errors": r.rel_errors,
            "run_notes": list(r.notes),
            "context_overhead_us": r.context_overhead_us,
            "sdpa_why": r.sdpa_why,
            "trace_summary": r.trace_summary,
            "attention_calls": r.attention_calls,
            "case_unknown": r.case_unknown,
            "flops_basis": r.flops_basis,
            "flops_unknown": r.flops_unknown,
            "model_split": r.model_split,
            "gpu_time_graph": _timing(r.gpu_time_graph),
            "gpu_time_graph_why": r.gpu_time_graph_why,
            "launch": r.launch,
            "ncu": r.ncu or None,
            "cost_s": r.cost_s,
            "modifier_checks": r.modifier_checks,
            "env": dataclasses.asdict(r.env) if r.env else None,
            "extra": r.extra,  # plugins' data, nested: it can never overwrite a field above
        }
    )
    return d


def _timing_from(d: dict[str, Any] | None) -> Timing | None:
    if not d:
        return None
    return Timing(d["median_us"], d["p25_us"], d["p75_us"], d["min_us"], d["num_samples"], d["method"])


def _tuple3(x: Any) -> tuple[int, int, int] | None:
    return (int(x[0]), int(x[1]), int(x[2])) if x else None


def _kernel_from(d: dict[str, Any]) -> KernelRecord:
    return KernelRecord(**{**d, "grid": _tuple3(d.get("grid")), "block": _tuple3(d.get("block"))})


def _fingerprint_from(d: dict[str, Any]) -> Fingerprint | None:
    if d.get("num_kernels") is None:
        return None
    cc = d.get("compute_capability")
    return Fingerprint(
        kernels=tuple(_kernel_from(k) for k in d.get("kernels") or []),
        num_kernels=d["num_kernels"],
        num_memcpy=d["num_memcpy"],
        num_memset=d["num_memset"],
        hidden_copies=tuple(HiddenCopy(**{**c, "dims": tuple(c["dims"])}) for c in d.get("hidden_copies") or []),
        upcasts=tuple(Upcast(**{**u, "dims": tuple(u["dims"])}) for u in d.get("upcasts") or []),
        mask_rebuilt=d["mask_rebuilt"],
        mask_ops=tuple(d.get("mask_ops") or []),
        sdpa_backend=d.get("sdpa_backend"),
        device_kind=d["device_kind"],
        device_name=d.get("device_name"),
        compute_capability=(int(cc[0]), int(cc[1])) if cc else None,
        trace_gpu_time_us=d.get("trace_gpu_time_us"),
        trace_cpu_time_us=d.get("trace_cpu_time_us"),
        trace_peak_memory_bytes=d.get("trace_peak_memory_bytes"),
        notes=tuple(d.get("notes") or []),
        mask_builds=tuple(d.get("mask_builds") or []),
        tensor_cores=d.get("tensor_cores"),
    )


def result_from_dict(d: dict[str, Any]) -> Result:
    """The Result a row was written from (a row of an older schema gives None where it lacks a field)."""
    case = dict(d["case"]) if d.get("case") else None
    if case is not None and "mode" not in case and d.get("mode"):
        case["mode"] = d["mode"]
    env = d.get("env")
    peak = d.get("peak")
    return Result(
        variant=d["variant"],
        case=Case.from_dict(case) if case is not None else None,
        status=d["status"],
        reason=d.get("reason"),
        fingerprint=_fingerprint_from(d),
        gpu_time=_timing_from(d.get("gpu_time")),
        cpu_time=_timing_from(d.get("cpu_time")),
        peak_memory_bytes=d.get("peak_memory_bytes"),
        peak_memory_source=d.get("peak_memory_source"),
        flops=d.get("flops"),
        tflops=d.get("tflops"),
        pct_of_peak=d.get("pct_of_peak"),
        max_rel_error=d.get("max_rel_error"),
        error_tolerance=d.get("error_tolerance"),
        nonfinite=d.get("nonfinite"),
        compile_time_s=d.get("compile_time_s"),
        trace_path=d.get("trace_path"),
        source=d.get("source", "run"),
        family=d.get("family"),
        backend=d.get("backend"),
        env=Env(**env) if isinstance(env, dict) else None,
        peak=PeakRate(**peak) if isinstance(peak, dict) else None,
        rel_errors=d.get("rel_errors"),
        notes=tuple(d.get("run_notes") or []),
        context_overhead_us=d.get("context_overhead_us"),
        sdpa_why=d.get("sdpa_why"),
        trace_summary=d.get("trace_summary"),
        attention_calls=d.get("attention_calls"),
        case_unknown=d.get("case_unknown"),
        flops_basis=d.get("flops_basis"),
        flops_unknown=d.get("flops_unknown"),
        model_split=d.get("model_split"),
        gpu_time_graph=_timing_from(d.get("gpu_time_graph")),
        gpu_time_graph_why=d.get("gpu_time_graph_why"),
        launch=d.get("launch"),
        ncu=d.get("ncu") or {},
        cost_s=d.get("cost_s"),
        modifier_checks=d.get("modifier_checks"),
        extra=d.get("extra") or {},
    )


def document(env: Env | None, results: list[Result], **top: Any) -> dict[str, Any]:
    """The document as data: no insights (``api.annotate`` adds them when it is read)."""
    doc: dict[str, Any] = {
        "schema_version": SCHEMA_VERSION,
        "tool": "attnscope",
        "env": dataclasses.asdict(env) if env else None,
    }
    doc.update(top)
    doc["results"] = [result_to_dict(r) for r in results]
    return doc


def _default(o: Any) -> Any:
    if isinstance(o, tuple):
        return list(o)
    if isinstance(o, float) and (o != o or o in (float("inf"), float("-inf"))):
        return None
    return str(o)


def _clean(o: Any) -> Any:
    """JSON has no NaN/Inf: write them as null (the flags beside them say what happened)."""
    if isinstance(o, float) and (o != o or o in (float("inf"), float("-inf"))):
        return None
    if isinstance(o, dict):
        return {k: _clean(v) for k, v in o.items()}
    if isinstance(o, list | tuple):
        return [_clean(v) for v in o]
    return o


def _dumps(doc: dict[str, Any]) -> bytes:
    """orjson when present: a model-scale document holds 10^4 kernels (json.dump: 0.3 s)."""
    try:
        import orjson
    except ImportError:  # pragma: no cover - orjson is a dependency
        return (json.dumps(doc, indent=1, default=_default, allow_nan=False) + "\n").encode()
    return orjson.dumps(doc, default=_default, option=orjson.OPT_INDENT_2 | orjson.OPT_NON_STR_KEYS) + b"\n"


def _umask() -> int:
    mask = os.umask(0o022)  # reading the umask means setting it: put it straight back
    os.umask(mask)
    return mask


def row_bytes(row: dict[str, Any]) -> bytes:
    """One result as one JSON line (no newline inside), NaN/Inf written as null."""
    try:
        import orjson
    except ImportError:  # pragma: no cover - the GPU image may lack orjson
        return json.dumps(_clean(row), default=_default, allow_nan=False, separators=(",", ":")).encode()
    return orjson.dumps(_clean(row), default=_default, option=orjson.OPT_NON_STR_KEYS)


def write_atomic(path: str | Path, doc: dict[str, Any]) -> None:
    """Write via a temp file and rename, so a crash never leaves half a document."""
    p = Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{p.name}.", dir=p.parent)
    try:
        os.fchmod(fd, 0o666 & ~_umask())  # mkstemp makes 0600; a plain open() would honour the umask
        with os.fdopen(fd, "wb") as f:
            f.write(_dumps(_clean(doc)))
        os.replace(tmp, p)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


class DocumentError(ValueError):
    pass


def load_document(path: str | Path) -> dict[str, Any]:
    p = Path(path)
    try:
        doc = json.loads(p.read_text())
    except FileNotFoundError:
        raise DocumentError(f"{p}: no such file") from None
    except ValueError as e:
        raise DocumentError(f"{p}: not valid JSON ({e})") from None
    except OSError as e:
        raise DocumentError(f"{p}: cannot read ({e.strerror or e})") from None
    check_document(doc, str(p))
    return doc


NUMBER_FIELDS = ("gpu_time_us", "cpu_time_us", "peak_memory_bytes", "flops", "tflops", "pct_of_peak", "max_rel_error")
LIST_FIELDS = ("kernels", "hidden_copies", "upcasts", "insights")


def _check_fields(r: dict[str, Any], where: str) -> None:
    """The fields diff, insights and the table compute with: numbers are numbers, lists are lists of objects."""
    for k in NUMBER_FIELDS:
        v = r.get(k)
        if v is not None and (isinstance(v, bool) or not isinstance(v, int | float)):
            raise DocumentError(f"{where}: {k} must be a number or null, got {v!r}"[:300])
    for k in LIST_FIELDS:
        v = r.get(k)
        if v is not None and (not isinstance(v, list) or not all(isinstance(x, dict) for x in v)):
            raise DocumentError(f"{where}: {k} must be a list of objects"[:300])
    for k in ("gpu_time", "cpu_time", "case"):
        if r.get(k) is not None and not isinstance(r[k], dict):
            raise DocumentError(f"{where}: {k} must be an object or null")
    for j, k in enumerate(r.get("kernels") or []):
        if not isinstance(k.get("name"), str) or not isinstance(k.get("category"), str):
            raise DocumentError(f"{where}: kernels[{j}] needs name and category strings")


def check_document(doc: Any, where: str) -> None:
    """The shape every reader of a document relies on; a DocumentError names what is off."""
    if not isinstance(doc, dict) or "schema_version" not in doc or "results" not in doc:
        raise DocumentError(f"{where}: not an attnscope result document (no schema_version/results)")
    v = doc["schema_version"]
    if not isinstance(v, int) or isinstance(v, bool) or v < 1:
        raise DocumentError(f"{where}: schema_version must be a positive integer, got {v!r}")
    if v > SCHEMA_VERSION:
        raise DocumentError(f"{where}: schema_version {v} is newer than this attnscope ({SCHEMA_VERSION})")
    results = doc["results"]
    if not isinstance(results, list):
        raise DocumentError(f"{where}: results must be a list, got {type(results).__name__}")
    for i, r in enumerate(results):
        if not isinstance(r, dict) or not isinstance(r.get("variant"), str) or not isinstance(r.get("status"), str):
            raise DocumentError(f"{where}: results[{i}] is not a result (needs variant and status strings)")
        _check_fields(r, f"{where}: results[{i}] ({r['variant']})")
    for key in ("env", "case"):
        if doc.get(key) is not None and not isinstance(doc[key], dict):
            raise DocumentError(f"{where}: {key} must be an object, got {type(doc[key]).__name__}")


def _flop_formula(r: Result) -> str | None:
    """The formula, and for a run how the case's mask's kept scores were counted."""
    if r.flops is None:
        return None
    if r.source == "trace" and r.flops_basis:  # read from the trace: its calls and how their masks were told
        return f"{flop_formula('fwd')}; {r.flops_basis}"
    if r.source != "run" or r.case is None:
        return flop_formula(r.mode)
    return f"{flop_formula(r.mode)}; {mask_flop_note(r.case)}"
