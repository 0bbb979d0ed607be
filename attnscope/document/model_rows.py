"""The rows of ``attnscope model --out`` (a JSONL store) as a model document, so ``report`` reads them as it
reads the document ``model --json`` writes.  Pure: no analysis runs here, so recommendations stay empty."""

from __future__ import annotations

from typing import Any


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
