"""The rows of ``attnscope model --out`` (a JSONL store) as a model document, so ``report`` reads them as it
reads the document ``model --json`` writes; the fields every attnscope row has, on a model row; a model document
written before its rows carried them, read as one written now.  Pure: no analysis runs here, so recommendations
stay empty."""

from __future__ import annotations

from typing import Any


def generic_row(row: dict[str, Any], point: dict[str, Any]) -> dict[str, Any]:
    """The row with the fields every attnscope row has, so a store, ``--resume``, ``diff`` and the one recommender
    read model rows: ``variant`` (the implementation), ``case`` (``point``: config, layers, batch, seq, dtype,
    device; and the row's mode), the point's batch and seq, the median and its quartiles (the timed steps)."""
    t = row.get("step_time") or {}
    replay = row.get("replay")
    return {
        **row,
        "variant": row["impl"] + ("+graph" if replay == "graph" else ""),  # a graph-replayed row is its own entry
        "case": {**point, "mode": row["mode"]},
        "batch": point["batch"],
        "seq": point["seq"],
        "median_us": t.get("median_us"),
        "p25_us": t.get("p25_us"),
        "p75_us": t.get("p75_us"),
    }


def with_generic_rows(doc: dict[str, Any]) -> dict[str, Any]:
    """A model document whose rows lack the generic fields (:func:`generic_row`), as ``attnscope model`` wrote it
    before its --batch/--seq grids (one point, in the document's ``case``; the same schema_version 1): each such row
    given them from the document's config and case, and the case its one point, as the command writes them now.
    A document whose rows have them, or whose case names no point, is returned as it is (the checks then say
    what is off).  Call it on a document :func:`model_document_problem` passed."""
    rows = doc.get("results") or []
    old = {i for i, r in enumerate(rows) if "variant" not in r and isinstance(r.get("impl"), str)}
    case, config = doc.get("case") or {}, doc.get("config") or {}
    batch, seq = case.get("batch"), case.get("seq")
    whole = all(isinstance(v, int) and not isinstance(v, bool) for v in (batch, seq))
    if not old or not whole or any(not isinstance(rows[i].get("mode"), str) for i in old):
        return doc
    point = {
        "config": config.get("name"),
        "layers": config.get("num_hidden_layers"),
        "batch": batch,
        "seq": seq,
        "dtype": case.get("dtype"),
        "device": case.get("device"),
    }
    results = [generic_row(r, point) if i in old else r for i, r in enumerate(rows)]
    return {**doc, "case": {**case, "points": case.get("points") or [{"batch": batch, "seq": seq}]}, "results": results}


def is_model_row(row: dict[str, Any]) -> bool:
    case = row.get("case")
    return "impl" in row and isinstance(case, dict) and "config" in case


def model_document(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """One document from the rows: the configs, points, implementations and modes they hold, in order."""
    cases = [r["case"] for r in rows]
    first = cases[0]
    points = list(dict.fromkeys((c.get("batch"), c.get("seq")) for c in cases))
    return {
        "schema_version": 1,
        "tool": "attnscope",
        "kind": "model",
        "partial": False,
        "env": None,
        "config": {
            "name": ", ".join(dict.fromkeys(str(c.get("config")) for c in cases)),
            "num_hidden_layers": first.get("layers"),
        },
        "case": {
            "device": first.get("device"),
            "dtype": first.get("dtype"),
            "batch": points[0][0],
            "seq": points[0][1],
            "impls": list(dict.fromkeys(r["impl"] for r in rows)),
            "modes": list(dict.fromkeys(r["mode"] for r in rows)),
            "points": [{"batch": b, "seq": s} for b, s in points],
        },
        "results": rows,
        "recommendations": {},
    }


# What readers of a model row or document compute with, and the JSON types they need (null is always allowed):
# a type, a tuple of types, {key: spec} for an object, or [spec] for a list of spec.
_NUM = (int, float)
_TIMING = {k: _NUM for k in ("median_us", "p25_us", "p75_us", "min_us", "num_samples", "iqr_rel")} | {
    "noisy": bool,
    "method": str,
}
_PART = {"time_us": _NUM, "share": _NUM, "kernel_us": _NUM, "around_us": _NUM, "projections_us": _NUM, "parts": dict}
ROW_SPEC: dict[str, Any] = {
    "impl": str,
    "mode": str,
    "status": str,
    "reason": str,
    "step_time_us": _NUM,
    "step_time": _TIMING,
    "wall_time": _TIMING,
    "peak_memory_bytes": _NUM,
    "attention": _PART,
    "rest": _PART,
    "layers": [{"layer": str, "attention_us": _NUM, "kernel_us": _NUM, "mlp_us": _NUM, "around_us": _NUM}],
    "insights": [{"id": str, "severity": str, "message": str}],
    "warmup_s": _NUM,
    "trace_path": str,
    "breakdown": {"total_us": _NUM, "unattributed_us": _NUM, "method": str, "device": str},
    "batch": _NUM,
    "seq": _NUM,
    "median_us": _NUM,
    "p25_us": _NUM,
    "p75_us": _NUM,
    "notes": [str],
    "case": {"config": str, "layers": _NUM, "batch": _NUM, "seq": _NUM, "dtype": str, "device": str, "mode": str},
}
DOCUMENT_SPEC: dict[str, Any] = {
    "partial": bool,
    "env": dict,
    "config": {"name": str},
    "case": {"device": str, "dtype": str, "batch": _NUM, "seq": _NUM, "impls": [str], "modes": [str], "points": [dict]},
    "recommendations": dict,
}
_WORDS = {dict: "an object", list: "a list", str: "a string", bool: "true or false", int: "a number"}


def _problem(v: Any, spec: Any, where: str) -> str | None:
    if isinstance(spec, dict):
        if not isinstance(v, dict):
            return f"{where} must be an object or null, got {type(v).__name__}"
        for k, inner in spec.items():
            x = v.get(k)
            if x is not None and (p := _problem(x, inner, f"{where}.{k}" if where else k)) is not None:
                return p
        return None
    if isinstance(spec, list):
        if not isinstance(v, list):
            return f"{where} must be a list or null, got {type(v).__name__}"
        for j, x in enumerate(v):
            if x is None or (p := _problem(x, spec[0], f"{where}[{j}]")) is not None:
                return p or f"{where}[{j}] is null"
        return None
    kinds = spec if isinstance(spec, tuple) else (spec,)
    if isinstance(v, kinds) and not (isinstance(v, bool) and bool not in kinds):
        return None
    return f"{where} must be {_WORDS[kinds[0]]} or null, got {type(v).__name__}"


def model_row_problem(row: dict[str, Any]) -> str | None:
    """The first value of a model row no reader can take ("step_time.median_us must be a number …"), else None."""
    problem = _problem(row, ROW_SPEC, "")
    if problem is None and row.get("attention") is not None:  # the split: written whole, read whole
        return _split_problem(row)
    return problem


# The split's numbers every reader takes as there when a row has its attention (analysis.fingerprint.model_split).
SPLIT_NEEDS = {
    "attention": ("time_us", "kernel_us", "projections_us", "around_us"),
    "rest": ("time_us",),
    "breakdown": ("total_us",),
}


def _split_problem(row: dict[str, Any]) -> str | None:
    for part, keys in SPLIT_NEEDS.items():
        d = row.get(part)
        if not isinstance(d, dict):
            return f"attention comes without its {part}"
        for k in keys:
            if not isinstance(d.get(k), int | float) or isinstance(d.get(k), bool):
                return f"{part}.{k} must be a number"
        parts = d.get("parts", {})
        if part != "breakdown" and (
            not isinstance(parts, dict) or not all(isinstance(v, int | float) for v in parts.values())
        ):
            return f"{part}.parts must be an object of numbers"
    return None


def model_document_problem(doc: dict[str, Any]) -> str | None:
    """The same for a model document: its head, then each of its rows."""
    if not isinstance(doc.get("results"), list):
        return "results must be a list"
    if (p := _problem(doc, DOCUMENT_SPEC, "")) is not None:
        return p
    for k, r in (doc.get("recommendations") or {}).items():
        if not isinstance(r, dict) or not isinstance(r.get("text", ""), str):
            return f"recommendations.{k} must be an object with a text"
    for i, r in enumerate(doc["results"]):
        if not isinstance(r, dict):
            return f"results[{i}] must be an object"
        if (p := model_row_problem(r)) is not None:
            return f"results[{i}].{p}"
    return None
