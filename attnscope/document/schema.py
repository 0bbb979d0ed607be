"""The versioned JSON document and its rows: one schema for `run`, `analyze` and `sweep`.

Serialising only: no analysis runs here.  ``result_from_dict(result_to_dict(r)) == r``, generated from the
dataclasses' fields in :mod:`attnscope.document.codec`; keys that are derived (``gpu_time_us``, ``noisy``,
``numerics_ok``, ``flop_formula``, ...) are written for readers and recomputed, not read, on the way back.
Insights and the recommendation are added by ``api.annotate``.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import IO, Any

from attnscope.core.types import Env, Result
from attnscope.document.codec import result_from_dict, result_to_dict
from attnscope.document.codec import timing as _timing

__all__ = [
    "SCHEMA_VERSION",
    "DocumentError",
    "_timing",
    "document",
    "result_from_dict",
    "result_to_dict",
    "row_bytes",
    "write_atomic",
]

# 2: graph replay measured warm and cold L2 (``timing``: graph_warm, graph_cold, graph_used); ``gpu_time_graph`` is
# the figure used (cold for inputs that fit in 2× the L2).  A version-1 row's ``gpu_time_graph`` is warm: read back,
# its ``timing`` says so (attnscope.document.codec).
SCHEMA_VERSION = 2
MODEL_SCHEMA_VERSION = 1  # of the model document (``kind: "model"``, attnscope.api.modeling)


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
    """orjson when present: a model-scale document holds 10^4 kernels (json.dump: 0.3 s).  orjson writes NaN and
    Inf as null itself, and ``_default`` takes what it does not know (a float subclass's NaN included): the same
    bytes as of ``_clean(doc)``, without copying 10^5 values first (75 ms of a model step's document)."""
    try:
        import orjson
    except ImportError:  # pragma: no cover - orjson is a dependency
        return (json.dumps(_clean(doc), indent=1, default=_default, allow_nan=False) + "\n").encode()
    return orjson.dumps(doc, default=_default, option=orjson.OPT_INDENT_2 | orjson.OPT_NON_STR_KEYS) + b"\n"


def write_json(f: IO[bytes], doc: dict[str, Any]) -> None:
    """``_dumps(doc)`` written piece by piece, the same bytes: the text of a model-scale document (17 MB for the
    Llama training trace) is never held whole, nor orjson's buffer grown to it (that doubled ``analyze --json``'s
    peak memory, 48 → 83 MiB).  Objects are walked here; long lists go to orjson ``_ITEMS`` elements at a time."""
    try:
        import orjson
    except ImportError:  # pragma: no cover - orjson is a dependency
        f.write(_dumps(doc))
        return
    _stream(f.write, doc, 0, orjson)
    f.write(b"\n")


_ITEMS = 256  # list elements serialised in one orjson call (a kernel row is ~1.5 kB: ~0.4 MB a call)
_FEW = 16  # a list this short is walked element by element (the results: one large object each)


def _stream(write: Any, o: Any, depth: int, orjson: Any) -> None:
    """``o`` as orjson's ``OPT_INDENT_2`` writes it at nesting ``depth`` (its first line not indented)."""
    opt = orjson.OPT_INDENT_2 | orjson.OPT_NON_STR_KEYS
    pad = b"\n" + b"  " * depth
    if type(o) is dict and o:
        write(b"{")
        sep = pad + b"  "
        for k, v in o.items():
            write(sep)
            sep = b"," + pad + b"  "
            write(orjson.dumps({k: None}, option=orjson.OPT_NON_STR_KEYS)[1:-6])  # the key as orjson writes it
            write(b": ")
            _stream(write, v, depth + 1, orjson)
        write(pad + b"}")
    elif type(o) is list and len(o) > _FEW:
        write(b"[")
        for i in range(0, len(o), _ITEMS):
            text = orjson.dumps(o[i : i + _ITEMS], default=_default, option=opt)  # "[\n  a,\n  b\n]"
            write(b"," if i else b"")
            write(text[1:-2].replace(b"\n", pad) if depth else text[1:-2])
        write(pad + b"]")
    elif type(o) is list and o:
        write(b"[")
        sep = pad + b"  "
        for v in o:
            write(sep)
            sep = b"," + pad + b"  "
            _stream(write, v, depth + 1, orjson)
        write(pad + b"]")
    else:
        text = orjson.dumps(o, default=_default, option=opt)
        write(text.replace(b"\n", pad) if depth and type(o) in (dict, list, tuple) else text)


def row_bytes(row: dict[str, Any]) -> bytes:
    """One result as one JSON line (no newline inside), NaN/Inf written as null."""
    try:
        import orjson
    except ImportError:  # pragma: no cover - the GPU image may lack orjson
        return json.dumps(_clean(row), default=_default, allow_nan=False, separators=(",", ":")).encode()
    return orjson.dumps(row, default=_default, option=orjson.OPT_NON_STR_KEYS)  # NaN/Inf as null: as _dumps


def write_atomic(path: str | Path, doc: dict[str, Any]) -> None:
    """The document as JSON through the one atomic writer (:func:`attnscope.core.files.write_atomic`): a crash
    never leaves half a document, and no planted link is followed."""
    from attnscope.core.files import write_atomic as write_file

    write_file(path, lambda f: write_json(f, doc))


class DocumentError(ValueError):
    pass


NUMBER_FIELDS = ("gpu_time_us", "cpu_time_us", "peak_memory_bytes", "flops", "tflops", "pct_of_peak", "max_rel_error")
LIST_FIELDS = ("kernels", "hidden_copies", "upcasts", "insights")


def check_row(r: dict[str, Any], where: str) -> None:
    """One result row's fields that readers compute with (DocumentError names the first that is off)."""
    _check_fields(r, where)


def _check_fields(r: dict[str, Any], where: str, strict: bool = False) -> None:
    """The fields diff, insights and the table compute with: numbers are numbers, lists are lists of objects, and
    every field of a result has the JSON type it is written as (:func:`attnscope.document.codec.row_type_problem`)."""
    from attnscope.document.codec import row_type_problem

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
    problem = row_type_problem(r, strict)
    if problem:
        raise DocumentError(f"{where}: {problem}"[:300])


def check_version(doc: dict[str, Any], where: str, model: bool = False) -> None:
    """The one check of a document's ``schema_version``: a positive integer, of a version this attnscope reads
    (:data:`SCHEMA_VERSION` and before for a run or analyze document, :data:`MODEL_SCHEMA_VERSION` and before for a
    model document); else a DocumentError naming its version and, for a newer one, the versions read."""
    v = doc.get("schema_version")
    if not isinstance(v, int) or isinstance(v, bool) or v < 1:
        raise DocumentError(f"{where}: schema_version must be a positive integer, got {v!r}"[:300])
    newest, what = (MODEL_SCHEMA_VERSION, "model document") if model else (SCHEMA_VERSION, "result document")
    if v > newest:
        read = ", ".join(str(n) for n in range(1, newest + 1))
        raise DocumentError(
            f"{where}: a {what} of schema_version {v}, newer than this attnscope reads ({what}s of schema_version "
            f"{read}): a newer attnscope reads it"
        )


def check_document(doc: Any, where: str, strict: bool = False) -> None:
    """The shape every reader of a document relies on; a DocumentError names what is off.  ``strict``: a document
    file as loaded for the page and diff, whose records must also hold the fields those index
    (:data:`attnscope.document.codec.INDEXED`)."""
    if not isinstance(doc, dict) or "schema_version" not in doc or "results" not in doc:
        raise DocumentError(f"{where}: not an attnscope result document (no schema_version/results)")
    check_version(doc, where)
    results = doc["results"]
    if not isinstance(results, list):
        raise DocumentError(f"{where}: results must be a list, got {type(results).__name__}")
    for i, r in enumerate(results):
        if not isinstance(r, dict) or not isinstance(r.get("variant"), str) or not isinstance(r.get("status"), str):
            raise DocumentError(f"{where}: results[{i}] is not a result (needs variant and status strings)")
        _check_fields(r, f"{where}: results[{i}] ({r['variant']})", strict)
    for key in ("env", "case"):
        if doc.get(key) is not None and not isinstance(doc[key], dict):
            raise DocumentError(f"{where}: {key} must be an object, got {type(doc[key]).__name__}")
