"""The safe path: one general JSON parse per event (or of the whole document), dicts read field by field.

It takes what the typed decoder (fast.py) refuses: a value of an unexpected type, a string that is
not valid UTF-8 (read with U+FFFD in place of the bad bytes), old Kineto's unescaped quotes (the
event is skipped and counted, as any malformed event), and documents in a layout that is not
Kineto's.  Both paths build the same events from the same fields.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from attnscope.trace.events import (
    CPU_OP_CATS,
    GPU_KIND,
    RUNTIME_CATS,
    Annotation,
    CpuOp,
    GpuEvent,
    MemEvent,
    RuntimeCall,
    Trace,
    TraceError,
    drop_unread_shapes,
)
from attnscope.trace.jsonlib import JSONError, loads
from attnscope.trace.source import SEP

# Categories the analysis reads; everything else (ac2g/fwdbwd flows, python_function,
# overhead, metadata) is counted and passed over without being parsed.
_WANTED = frozenset(
    c.encode()
    for c in (*CPU_OP_CATS, *GPU_KIND, *RUNTIME_CATS, "user_annotation", "gpu_user_annotation", "cpu_instant_event")
)


_CAT = re.compile(rb'"cat":\s*"([^"]*)"')


def _dim3(v: Any) -> tuple[int, int, int] | None:
    if isinstance(v, list) and len(v) == 3:
        return (int(v[0]), int(v[1]), int(v[2]))
    return None


def _opt_int(v: Any) -> int | None:
    if v is None or v == "":
        return None
    return int(v)


def _opt_float(v: Any) -> float | None:
    if v is None or v == "":
        return None
    return float(v)


def scan_each(tr: Trace, buf: bytes, stop: int, names: dict[Any, str], start: int = 0) -> None:
    """The events of ``buf[start:stop]`` one at a time: cut at the separators, parse the wanted ones
    (:func:`tolerant_loads`)."""
    find, search, wanted = buf.find, _CAT.search, _WANTED
    nsep = len(SEP)
    while start < stop:
        end = find(SEP, start, stop)
        end = stop if end < 0 else end + 4
        tr.num_events += 1
        c = search(buf, start, end)
        cat = c.group(1) if c is not None else None
        if (
            cat in wanted
            or (cat is None and find(b'"[memory]"', start, end) >= 0)
            or (cat == b"python_function" and find(b'"nn.Module: ', start, end) >= 0)  # with_stack's modules
        ):
            try:
                _add_event(tr, tolerant_loads(buf[start:end]), names)
            except (KeyError, TypeError, ValueError, AttributeError):
                tr.num_skipped += 1
        start = end + nsep - 5  # the next event's "{"


def run_each(tr: Trace, run: bytes, names: dict[Any, str]) -> None:
    """The events of a run (a JSON array of events in any layout) parsed together, then added one by one."""
    try:
        evs = tolerant_loads(run)
    except ValueError as e:
        raise TraceError(f"{tr.path}: not valid JSON ({e})") from None
    for ev in evs if isinstance(evs, list) else ():
        tr.num_events += 1
        try:
            _add_event(tr, ev, names)
        except (KeyError, TypeError, ValueError, AttributeError):
            tr.num_skipped += 1


def trace_from_doc(doc: dict[str, Any], path: str = "<memory>") -> Trace:
    props = doc.get("deviceProperties") or []
    meta = {k: v for k, v in doc.items() if k not in ("traceEvents", "deviceProperties")}
    tr = Trace(path=path, device_properties=list(props), meta=meta)
    names: dict[str, str] = {}
    for ev in doc["traceEvents"]:
        tr.num_events += 1
        try:
            _add_event(tr, ev, names)
        except (KeyError, TypeError, ValueError, AttributeError):
            tr.num_skipped += 1
    if tr.gpu:
        drop_unread_shapes(tr)
    return tr


def _add_event(tr: Trace, ev: dict[str, Any], names: dict[str, str]) -> None:
    cat = ev.get("cat")
    if cat in CPU_OP_CATS:
        a = ev.get("args") or {}
        name = ev["name"]
        tr.cpu_ops.append(
            CpuOp.recorded(
                names.setdefault(name, name),
                ev["tid"],
                float(ev["ts"]),
                float(ev["dur"]),
                _opt_int(a.get("External id")),
                a.get("Input Dims"),
                a.get("Input type"),
                ev.get("pid", 0),
                a.get("Input Strides"),
                a.get("Concrete Inputs"),
            )
        )
    elif cat in GPU_KIND:
        _add_gpu(tr, ev, GPU_KIND[cat], names)
    elif cat in RUNTIME_CATS:
        a = ev.get("args") or {}
        name = ev["name"]
        tr.runtime.append(
            RuntimeCall(
                names.setdefault(name, name),
                ev["tid"],
                float(ev["ts"]),
                float(ev.get("dur", 0.0)),
                _opt_int(a.get("correlation")),
                _opt_int(a.get("External id")),
                ev.get("pid", 0),
            )
        )
    elif cat in ("user_annotation", "gpu_user_annotation"):
        tr.annotations.append(
            Annotation(name=ev["name"], cat=cat, tid=ev.get("tid", 0), ts=float(ev["ts"]), dur=float(ev["dur"]))
        )
    elif cat == "python_function" and str(ev.get("name", "")).startswith("nn.Module: "):
        tr.modules.append(
            Annotation(name=ev["name"], cat=cat, tid=ev.get("tid", 0), ts=float(ev["ts"]), dur=float(ev["dur"]))
        )
    elif (cat is None or cat == "cpu_instant_event") and ev.get("name") == "[memory]":
        _add_memory(tr, ev)


def _add_gpu(tr: Trace, ev: dict[str, Any], kind: str, names: dict[str, str]) -> None:
    name = ev["name"]
    _gpu(tr, kind, names.setdefault(name, name), float(ev["ts"]), float(ev["dur"]), ev.get("args") or {}, names)


def _gpu(tr: Trace, kind: str, name: str, ts: float, dur: float, a: dict[str, Any], names: dict[Any, Any]) -> None:
    grid, block = a.get("grid"), a.get("block")
    tr.gpu.append(
        GpuEvent(
            kind,
            name,
            ts,
            dur,
            _opt_int(a.get("correlation")),
            _opt_int(a.get("External id")),
            _opt_int(a.get("device")),
            _opt_int(a.get("stream")),
            _dim3(grid) if grid is None else _interned(names, _dim3(grid)),
            _dim3(block) if block is None else _interned(names, _dim3(block)),
            _opt_int(a.get("registers per thread")),
            _opt_int(a.get("shared memory")),
            _opt_float(a.get("est. achieved occupancy %")),
            _opt_int(a.get("bytes")),
            _opt_int(a.get("graph id")),
            _opt_int(a.get("graph node id")),
        )
    )


def _interned(names: dict[Any, Any], v: Any) -> Any:
    """One object for each distinct grid/block (10^5 kernels launch a few hundred shapes)."""
    return names.setdefault(v, v) if v is not None else None


def _add_memory(tr: Trace, ev: dict[str, Any]) -> None:
    a = ev.get("args") or {}
    tr.memory.append(
        MemEvent(
            ts=float(ev["ts"]),
            device_type=_opt_int(a.get("Device Type")),
            total_allocated=int(a["Total Allocated"]),
            bytes=int(a.get("Bytes", 0)),
        )
    )


def tolerant_loads(data: bytes) -> Any:
    """The general parser (jsonlib); where it refuses, the standard library on the text with U+FFFD for bytes
    that are not UTF-8."""
    try:
        return loads(data)
    except JSONError:
        return json.loads(data.decode("utf-8", "replace"))


def load_whole(p: Path, raw: bytes) -> Trace:
    """A document in any layout, parsed whole."""
    if not raw.strip():
        raise TraceError(f"{p}: empty file")
    try:
        doc = tolerant_loads(raw)
    except ValueError as e:
        raise TraceError(f"{p}: not valid JSON ({e})") from None
    del raw
    if not isinstance(doc, dict) or not isinstance(doc.get("traceEvents"), list):
        raise TraceError(f"{p}: not a Kineto trace (no 'traceEvents' list)")
    return trace_from_doc(doc, str(p))
