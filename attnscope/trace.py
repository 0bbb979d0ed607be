"""The one reader of Kineto (Chrome trace) JSON.  Plain typed events out, no torch.

Every input goes through :func:`load_trace`: traces that ``attnscope run`` captured
and traces from somebody else's training job alike.
"""

from __future__ import annotations

import gzip
import json
import zlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any


class TraceError(ValueError):
    """A trace file that cannot be analysed; the message is one line naming the file."""


@dataclass(slots=True)
class CpuOp:
    name: str
    tid: int | str
    ts: float
    dur: float
    ext_id: int | None
    input_dims: list[Any] | None
    input_types: list[str] | None
    pid: int | str = 0

    @property
    def end(self) -> float:
        return self.ts + self.dur


@dataclass(slots=True)
class RuntimeCall:
    name: str
    tid: int | str
    ts: float
    dur: float
    correlation: int | None
    ext_id: int | None
    pid: int | str = 0


@dataclass(slots=True)
class GpuEvent:
    kind: str  # "kernel" | "memcpy" | "memset"
    name: str
    ts: float
    dur: float
    correlation: int | None
    ext_id: int | None
    device: int | None
    stream: int | None
    grid: tuple[int, int, int] | None = None
    block: tuple[int, int, int] | None = None
    registers_per_thread: int | None = None
    shared_memory_bytes: int | None = None
    kineto_occupancy_pct: float | None = None
    bytes: int | None = None


@dataclass(slots=True)
class Annotation:
    name: str
    cat: str  # user_annotation | gpu_user_annotation
    tid: int | str
    ts: float
    dur: float


@dataclass(slots=True)
class MemEvent:
    ts: float
    device_type: int | None  # 0 CPU, 1 CUDA
    total_allocated: int
    bytes: int


@dataclass
class Trace:
    path: str
    device_properties: list[dict[str, Any]]
    cpu_ops: list[CpuOp] = field(default_factory=list)
    runtime: list[RuntimeCall] = field(default_factory=list)
    gpu: list[GpuEvent] = field(default_factory=list)
    annotations: list[Annotation] = field(default_factory=list)
    memory: list[MemEvent] = field(default_factory=list)
    meta: dict[str, Any] = field(default_factory=dict)
    num_events: int = 0
    num_skipped: int = 0  # malformed events passed over

    @property
    def has_gpu(self) -> bool:
        return bool(self.gpu)


_GPU_KIND = {"kernel": "kernel", "gpu_memcpy": "memcpy", "gpu_memset": "memset"}
_RUNTIME_CATS = {"cuda_runtime", "cuda_driver"}


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


def _read_bytes(path: Path) -> bytes:
    if not path.exists():
        raise TraceError(f"{path}: no such file")
    if path.is_dir():
        raise TraceError(f"{path}: is a directory, not a trace file")
    raw = path.read_bytes()
    if raw[:2] == b"\x1f\x8b":
        try:
            raw = gzip.decompress(raw)
        except (OSError, EOFError, zlib.error) as e:
            raise TraceError(f"{path}: corrupt gzip ({e})") from None
    if not raw.strip():
        raise TraceError(f"{path}: empty file")
    return raw


def _parse_json(path: Path, raw: bytes) -> Any:
    try:
        import orjson

        return orjson.loads(raw)
    except ImportError:  # pragma: no cover - orjson is a dependency, json is the fallback
        pass
    except ValueError as e:
        raise TraceError(f"{path}: not valid JSON ({e})") from None
    try:
        return json.loads(raw)
    except ValueError as e:  # pragma: no cover
        raise TraceError(f"{path}: not valid JSON ({e})") from None


def load_trace(path: str | Path) -> Trace:
    """Read a ``.json`` or ``.json.gz`` Kineto trace into typed events."""
    p = Path(path)
    doc = _parse_json(p, _read_bytes(p))
    if not isinstance(doc, dict) or not isinstance(doc.get("traceEvents"), list):
        raise TraceError(f"{p}: not a Kineto trace (no 'traceEvents' list)")
    return trace_from_doc(doc, str(p))


def trace_from_doc(doc: dict[str, Any], path: str = "<memory>") -> Trace:
    props = doc.get("deviceProperties") or []
    meta = {k: v for k, v in doc.items() if k not in ("traceEvents", "deviceProperties")}
    tr = Trace(path=path, device_properties=list(props), meta=meta)
    for ev in doc["traceEvents"]:
        tr.num_events += 1
        try:
            _add_event(tr, ev)
        except (KeyError, TypeError, ValueError, AttributeError):
            tr.num_skipped += 1
    return tr


def _add_event(tr: Trace, ev: dict[str, Any]) -> None:
    cat = ev.get("cat")
    if cat is None:
        if ev.get("name") == "[memory]":
            _add_memory(tr, ev)
        return
    if cat == "cpu_op":
        a = ev.get("args") or {}
        tr.cpu_ops.append(
            CpuOp(
                name=ev["name"],
                tid=ev["tid"],
                pid=ev.get("pid", 0),
                ts=float(ev["ts"]),
                dur=float(ev["dur"]),
                ext_id=_opt_int(a.get("External id")),
                input_dims=a.get("Input Dims"),
                input_types=a.get("Input type"),
            )
        )
    elif cat in _GPU_KIND:
        a = ev.get("args") or {}
        tr.gpu.append(
            GpuEvent(
                kind=_GPU_KIND[cat],
                name=ev["name"],
                ts=float(ev["ts"]),
                dur=float(ev["dur"]),
                correlation=_opt_int(a.get("correlation")),
                ext_id=_opt_int(a.get("External id")),
                device=_opt_int(a.get("device")),
                stream=_opt_int(a.get("stream")),
                grid=_dim3(a.get("grid")),
                block=_dim3(a.get("block")),
                registers_per_thread=_opt_int(a.get("registers per thread")),
                shared_memory_bytes=_opt_int(a.get("shared memory")),
                kineto_occupancy_pct=_opt_float(a.get("est. achieved occupancy %")),
                bytes=_opt_int(a.get("bytes")),
            )
        )
    elif cat in _RUNTIME_CATS:
        a = ev.get("args") or {}
        tr.runtime.append(
            RuntimeCall(
                name=ev["name"],
                tid=ev["tid"],
                pid=ev.get("pid", 0),
                ts=float(ev["ts"]),
                dur=float(ev.get("dur", 0.0)),
                correlation=_opt_int(a.get("correlation")),
                ext_id=_opt_int(a.get("External id")),
            )
        )
    elif cat in ("user_annotation", "gpu_user_annotation"):
        tr.annotations.append(
            Annotation(
                name=ev["name"],
                cat=cat,
                tid=ev.get("tid", 0),
                ts=float(ev["ts"]),
                dur=float(ev["dur"]),
            )
        )
    elif cat == "cpu_instant_event" and ev.get("name") == "[memory]":
        _add_memory(tr, ev)


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
