"""The one reader of Kineto (Chrome trace) JSON.  Plain typed events out, no torch.

Every input goes through :func:`load_trace`: traces that ``attnscope run`` captured
and traces from somebody else's training job alike.

Speed: Kineto writes one event per block, ``{`` and ``}`` on lines indented by two
spaces, and JSON strings cannot hold a raw newline, so ``"\\n  },\\n  {"`` only ever
separates two events.  The fast path streams the (gunzipped) file in chunks, cuts it
at those separators, reads each event's ``cat`` with a regex and hands only the events
the analysis needs (cpu_op, runtime, kernel, memcpy, memset, annotations, [memory]) to
orjson; flow events, python_function and metadata are never parsed.  A file in any
other layout goes through one ``orjson.loads`` of the whole document.
"""

from __future__ import annotations

import functools
import gc
import itertools
import json
import re
import zlib
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

try:
    import orjson

    _loads: Callable[[bytes], Any] = orjson.loads
    _JSONError: type[ValueError] = orjson.JSONDecodeError
except ImportError:  # an image without orjson (the GPU machine's): the stdlib parser, slower, same result
    _loads = json.loads
    _JSONError = json.JSONDecodeError


class TraceError(ValueError):
    """A trace file that cannot be analysed; the message is one line naming the file."""


class CpuOp:
    """One aten op.  ``input_dims``/``input_types`` (record_shapes) are kept as the args text and
    parsed when asked for, through a small cache rather than onto the op: a training step holds
    10^5–10^6 ops, and parsed shapes take twice the memory of their text."""

    __slots__ = ("_shapes", "dur", "ext_id", "name", "pid", "tid", "ts")

    def __init__(
        self,
        name: str,
        tid: int | str,
        ts: float,
        dur: float,
        ext_id: int | None,
        input_dims: list[Any] | None = None,
        input_types: list[str] | None = None,
        pid: int | str = 0,
        raw: bytes | None = None,  # the args members (JSON, from ","), when the shapes are still to be read
        input_strides: list[Any] | None = None,
        concrete_inputs: list[Any] | None = None,
    ) -> None:
        self.name, self.tid, self.ts, self.dur, self.ext_id, self.pid = name, tid, ts, dur, ext_id, pid
        # bytes: the args text, unread; a tuple: (dims, types, strides, concrete inputs); None: no shapes
        self._shapes: bytes | tuple[Any, Any, Any, Any] | None = raw
        if (
            input_dims is not None
            or input_types is not None
            or input_strides is not None
            or concrete_inputs is not None
        ):
            self._shapes = (input_dims, input_types, input_strides, concrete_inputs)

    @property
    def end(self) -> float:
        return self.ts + self.dur

    def shapes(self) -> tuple[Any, Any, Any, Any]:
        """(input dims, input types, input strides, concrete inputs) as recorded, each None if not."""
        s = self._shapes
        if s is None:
            return _NO_SHAPES
        if type(s) is bytes:
            return _parse_shapes(s)
        return s  # type: ignore[return-value]

    @property
    def input_dims(self) -> list[Any] | None:
        return self.shapes()[0]  # type: ignore[no-any-return]

    @property
    def input_types(self) -> list[str] | None:
        return self.shapes()[1]  # type: ignore[no-any-return]

    @property
    def input_strides(self) -> list[Any] | None:
        return self.shapes()[2]  # type: ignore[no-any-return]

    @property
    def concrete_inputs(self) -> list[Any] | None:
        """Kineto's ``Concrete Inputs``: scalar arguments as strings (``'True'``, ``'0.125'``), ``''`` for tensors."""
        return self.shapes()[3]  # type: ignore[no-any-return]

    def _key(self) -> tuple[Any, ...]:
        return (self.name, self.tid, self.ts, self.dur, self.ext_id, self.input_dims, self.input_types, self.pid)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, CpuOp) and self._key() == other._key()

    __hash__ = None  # type: ignore[assignment]  # mutable, compared by value, like the dataclass it was

    def __repr__(self) -> str:
        return f"CpuOp(name={self.name!r}, tid={self.tid!r}, ts={self.ts}, dur={self.dur}, ext_id={self.ext_id})"


_NO_SHAPES: tuple[None, None, None, None] = (None, None, None, None)


@functools.lru_cache(maxsize=512)
def _parse_shapes(raw: bytes) -> tuple[Any, Any, Any, Any]:
    """An op's recorded inputs from its args text; the few ops an analysis step is reading stay cached."""
    try:
        a = _loads(b'{"":0' + raw + b"}") if raw else {}
        return a.get("Input Dims"), a.get("Input type"), a.get("Input Strides"), a.get("Concrete Inputs")
    except (_JSONError, AttributeError):
        return _NO_SHAPES  # shapes unreadable: the op stays, without shapes


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
    # with_stack=True: the python_function ranges of nn.Module forwards ("nn.Module: LlamaAttention_0")
    modules: list[Annotation] = field(default_factory=list)
    meta: dict[str, Any] = field(default_factory=dict)
    num_events: int = 0
    num_skipped: int = 0  # malformed events passed over
    shapes_dropped: bool = False  # ops outside SHAPES_READ were read without their shapes

    @property
    def has_gpu(self) -> bool:
        return bool(self.gpu)

    @property
    def rank(self) -> int | None:
        """The distributed rank Kineto recorded (``distributedInfo.rank``), if any."""
        info = self.meta.get("distributedInfo")
        if isinstance(info, dict) and isinstance(info.get("rank"), int):
            return int(info["rank"])
        return None


_GPU_KIND = {"kernel": "kernel", "gpu_memcpy": "memcpy", "gpu_memset": "memset"}
_RUNTIME_CATS = {"cuda_runtime", "cuda_driver"}
# Categories the analysis reads; everything else (ac2g/fwdbwd flows, python_function,
# overhead, metadata) is counted and passed over without being parsed.
_WANTED = frozenset(
    {
        b"cpu_op",
        b"kernel",
        b"gpu_memcpy",
        b"gpu_memset",
        b"cuda_runtime",
        b"cuda_driver",
        b"user_annotation",
        b"gpu_user_annotation",
        b"cpu_instant_event",
    }
)
_SEP = b"\n  },\n  {"
_CAT = re.compile(rb'"cat":\s*"([^"]*)"')
_KINETO_HEAD = re.compile(rb'"traceEvents":\s*(\[)\n  (\{)\n')
_CHUNK = 1 << 18  # compressed bytes per read: a few MiB once inflated


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


@contextmanager
def no_gc() -> Iterator[None]:
    """Building ~10^5 small objects triggers many full collections that find nothing."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()


def _check_path(path: Path) -> None:
    if not path.exists():
        raise TraceError(f"{path}: no such file")
    if path.is_dir():
        raise TraceError(f"{path}: is a directory, not a trace file")


def _chunks(path: Path) -> Iterator[bytes]:
    """The file's bytes, gunzipped on the fly when it starts with the gzip magic."""
    with open(path, "rb") as f:
        first = f.read(_CHUNK)
        if first[:2] != b"\x1f\x8b":
            yield first
            yield from iter(lambda: f.read(_CHUNK << 3), b"")
            return
        yield from _gunzip(path, f, first)


_BLOCK = 32 * _CHUNK  # compressed bytes per read (8 MiB), inflated a chunk at a time


def _gunzip(path: Path, f: IO[bytes], first: bytes) -> Iterator[bytes]:
    dec = zlib.decompressobj(31)
    block = first + f.read(_BLOCK)
    try:
        while block:
            view = memoryview(block)
            for i in range(0, len(view), _CHUNK):
                out = dec.decompress(view[i : i + _CHUNK])
                while dec.eof and dec.unused_data:  # concatenated gzip members
                    rest = dec.unused_data
                    dec = zlib.decompressobj(31)
                    out += dec.decompress(rest)
                yield out
            block = f.read(_BLOCK)
        if not dec.eof:
            raise TraceError(f"{path}: corrupt gzip (truncated compressed stream)")
    except zlib.error as e:
        raise TraceError(f"{path}: corrupt gzip ({e})") from None


def load_trace(path: str | Path) -> Trace:
    """Read a ``.json`` or ``.json.gz`` Kineto trace into typed events."""
    p = Path(path)
    _check_path(p)
    with no_gc():
        return _load(p)


def _load(p: Path, keep_all_shapes: bool = False) -> Trace:
    tr = _load_once(p, keep_all_shapes)
    if tr.shapes_dropped and not tr.gpu:  # a CPU-only profile on a GPU machine: every op's shapes are read
        return _load_once(p, True)
    return tr


_GPU_HEAD = re.compile(rb'"deviceProperties":\s*\[\s*\{')


def _load_once(p: Path, keep_all_shapes: bool) -> Trace:
    chunks = _chunks(p)
    head = b""
    for c in chunks:
        head += c
        if len(head) >= (1 << 20) or _KINETO_HEAD.search(head):
            break
    if not head.strip():
        raise TraceError(f"{p}: empty file")
    m = _KINETO_HEAD.search(head)
    if m is None:
        return _load_whole(p, head, chunks)
    # A trace from a GPU machine: shapes are read only for the ops that need them (SHAPES_READ)
    keep = keep_all_shapes or _GPU_HEAD.search(head, 0, m.start()) is None
    return _load_streaming(p, head[: m.end(1)], head[m.start(2) :], chunks, keep)


def _load_whole(p: Path, head: bytes, chunks: Iterator[bytes]) -> Trace:
    raw = head + b"".join(chunks)
    if not raw.strip():
        raise TraceError(f"{p}: empty file")
    try:
        doc = _loads(raw)
    except _JSONError as e:
        raise TraceError(f"{p}: not valid JSON ({e})") from None
    del raw
    if not isinstance(doc, dict) or not isinstance(doc.get("traceEvents"), list):
        raise TraceError(f"{p}: not a Kineto trace (no 'traceEvents' list)")
    return trace_from_doc(doc, str(p))


def _load_streaming(p: Path, head: bytes, buf: bytes, chunks: Iterator[bytes], keep_all: bool = True) -> Trace:
    """``head`` ends with ``[`` of traceEvents; ``buf`` starts at the first event's ``{``."""
    tr = Trace(path=str(p), device_properties=[])
    tr.shapes_dropped = not keep_all
    names: dict[Any, Any] = {} if keep_all else {_KEEP: {}}
    for c in itertools.chain((b"",), chunks):  # b"": first cut the events read with the head
        buf += c
        cut = buf.rfind(_SEP)
        if cut < 0:
            continue
        _scan(tr, buf, cut + 4, names)
        buf = buf[cut + len(_SEP) - 1 :]
    end = buf.find(b"\n  }")
    rest = buf[end + 4 :].lstrip() if end >= 0 else b""
    if end < 0 or not rest.startswith(b"]"):
        raise TraceError(f"{p}: not valid JSON (truncated: the traceEvents list never ends)")
    _scan(tr, buf, end + 4, names)
    try:
        top = _loads(head + rest)
    except _JSONError as e:
        raise TraceError(f"{p}: not valid JSON ({e})") from None
    tr.device_properties = list(top.pop("deviceProperties", None) or [])
    top.pop("traceEvents", None)
    tr.meta = top
    if tr.gpu and (keep_all or _SLOW in names):  # the bulk reader kept only the shapes SHAPES_READ names
        drop_unread_shapes(tr)
    return tr


# Ops whose recorded inputs a GPU trace's analysis reads: copies (kind, bytes, dtypes), attention
# ops (the case), matmul ops (the input dtype of a matrix kernel on CUDA cores) and the causal-mask
# builders and converters (analysis/mask_build.py reads a materialised mask's shape and diagonal).
# A CPU-only trace keeps every op's shapes (its leaf ops are counted by their dims).
SHAPES_READ = re.compile(
    r"copy_|attention|Attention|scaled_dot_product|flash_attn|triton_tem_fused_flex|"
    r"^aten::(mm|bmm|addmm|baddbmm|addbmm|matmul|linear|_addmm_activation|_scaled_mm|ones|ones_like|tril|triu|where)$"
)


def drop_unread_shapes(tr: Trace) -> None:
    """Free the args text of ops whose shapes are never read: at 10^6 ops it is ~200 MB."""
    keep: dict[str, bool] = {}
    for op in tr.cpu_ops:
        if op._shapes is not None:
            k = keep.get(op.name)
            if k is None:
                k = keep[op.name] = SHAPES_READ.search(op.name) is not None
            if not k:
                op._shapes = None  # the same for a parsed doc


# Kineto's own layout: every event starts with "{\n    " then "ph" (or, for metadata, "name"), and a
# complete event has its args on one line.  One regex reads every event of a chunk in one pass: a
# wanted complete event ("X") with its fields, a [memory] instant event, or the head of an event
# the analysis passes over.  Every event must be one of the three (checked by counting the events):
# one in any other layout sends the chunk to the event-by-event path.
_X_CATS = (
    b"cpu_op|kernel|gpu_memcpy|gpu_memset|cuda_runtime|cuda_driver|user_annotation|gpu_user_annotation|python_function"
)
_STR = rb'"([^"]*)"'  # a name with an escaped quote fails the event: its chunk goes one event at a time
_NUM = rb"(-?\d+(?:\.\d*)?)"
_EVENT = re.compile(
    rb'\{\n    (?:"ph": "X", "cat": "(' + _X_CATS + rb')", "name": ' + _STR + rb', "pid": (-?\d+), "tid": (-?\d+),\n'
    rb'    "ts": '
    + _NUM
    + rb', "dur": '
    + _NUM
    + rb'(?:,\n    "args": \{\n      (?:"External id": (\d+))?([^\n]*)\n    \})?\n  \}'
    rb'|"ph": "i", "cat": "cpu_instant_event", "s": "[a-z]", "name": ' + _STR + rb',\n    "pid": -?\d+, "tid": -?\d+,\n'
    rb'    "ts": ' + _NUM + rb',\n    "args": \{\n      ([^\n]*)\n    \}\n  \}'
    rb'|"ph": "[^Xi"]"|"ph": "X", "cat": "(?!(?:' + _X_CATS + rb'|cpu_instant_event)")'
    rb'|"name": "(?!\[memory\]")(?:[^"\\]|\\.)*", "ph": "[Mi]")'
)
_CORR = re.compile(rb'"correlation": (\d+)')
_KERNEL_ARGS = re.compile(
    rb',\s*"queued": \d+, "device": (\d+), "context": \d+,\s*"stream": (\d+), "correlation": (\d+),'
    rb'\s*"registers per thread": (\d+),\s*"shared memory": (\d+),\s*"blocks per SM": [^,]*,\s*"warps per SM": [^,]*,'
    rb'\s*"grid": \[(\d+), (\d+), (\d+)\],\s*"block": \[(\d+), (\d+), (\d+)\],'
    rb'\s*"est\. achieved occupancy %": (\d+(?:\.\d*)?)\Z'
)


_KEEP = object()  # key in the per-load dict: names → whether their shapes are kept
_SLOW = object()  # key in the per-load dict: present once a chunk was read one event at a time


def _name(names: dict[Any, str], nm: bytes) -> str:
    name = names.get(nm)
    if name is None:
        name = names[nm] = _loads(b'"' + nm + b'"') if b"\\" in nm else nm.decode()
    return name


def _scan(tr: Trace, buf: bytes, stop: int, names: dict[Any, Any]) -> None:
    """Read the wanted events of ``buf[:stop]`` (whole events) with one regex pass, checked by counting."""
    found = _EVENT.findall(buf, 0, stop)
    n = buf.count(_SEP, 0, stop) + 1
    if len(found) != n:
        _scan_each(tr, buf, stop, names)  # an event in another layout: take them one by one
        return
    tr.num_events += n
    ops, get, loads, new_op = tr.cpu_ops.append, names.get, _loads, object.__new__
    keep: dict[str, bool] | None = names.get(_KEEP)
    for cat, nm, pid, tid, ts, dur, ext, rest, iname, its, iargs in found:
        if cat == b"cpu_op":
            name = get(nm) or _name(names, nm)
            # The args text after the External id: CpuOp wraps it into an object when the shapes are read.
            raw = (b"," + rest if not ext else rest) if rest else None
            if raw is not None and keep is not None:
                k = keep.get(name)
                if k is None:
                    k = keep[name] = SHAPES_READ.search(name) is not None
                if not k:
                    raw = None
            # pids and tids repeat: one int object each (10^6 ops)
            t = get(tid) or names.setdefault(tid, int(tid))
            q = get(pid) or names.setdefault(pid, int(pid))
            # CpuOp(name, t, ts, dur, ext, pid=q, raw=raw), its slots set here: __init__'s
            # keyword handling is half the cost of an op at 10^5–10^6 ops
            o = new_op(CpuOp)
            o.name = name
            o.tid = t
            o.pid = q
            o.ts = float(ts)
            o.dur = float(dur)
            o.ext_id = int(ext) if ext else None
            o._shapes = raw
            ops(o)
        elif not cat:
            if iname == b"[memory]":
                try:
                    _add_memory(tr, {"ts": its, "args": loads(b"{" + iargs + b"}")})
                except (KeyError, TypeError, ValueError, AttributeError):
                    tr.num_skipped += 1
        elif cat in _GPU_CAT:
            line = _KERNEL_ARGS.match(rest) if cat == b"kernel" and ext else None
            if line is not None:  # Kineto's own kernel args line, read without building a dict
                dev, stream, corr, regs, smem, g0, g1, g2, b0, b1, b2, occ = line.groups()
                grid, block = (int(g0), int(g1), int(g2)), (int(b0), int(b1), int(b2))
                tr.gpu.append(
                    GpuEvent(
                        "kernel",
                        get(nm) or _name(names, nm),
                        float(ts),
                        float(dur),
                        int(corr),
                        int(ext),
                        int(dev),
                        int(stream),
                        names.setdefault(grid, grid),
                        names.setdefault(block, block),
                        int(regs),
                        int(smem),
                        float(occ),
                        None,
                    )
                )
                continue
            try:
                a = loads(b'{"":0' + rest + b"}") if ext else loads(b"{" + rest + b"}") if rest else {}
                if ext:
                    a["External id"] = int(ext)
                _gpu(tr, _GPU_CAT[cat], _name(names, nm), float(ts), float(dur), a, names)
            except (KeyError, TypeError, ValueError, AttributeError):
                tr.num_skipped += 1
        elif cat == b"cuda_runtime" or cat == b"cuda_driver":
            c = _CORR.search(rest) if rest else None
            t = get(tid) or names.setdefault(tid, int(tid))
            q = get(pid) or names.setdefault(pid, int(pid))
            tr.runtime.append(
                RuntimeCall(
                    get(nm) or _name(names, nm),
                    t,
                    float(ts),
                    float(dur),
                    int(c.group(1)) if c is not None else None,
                    int(ext) if ext else None,
                    q,
                )
            )
        elif cat == b"python_function":
            if nm.startswith(b"nn.Module: "):
                tr.modules.append(Annotation(_name(names, nm), "python_function", int(tid), float(ts), float(dur)))
        else:  # user_annotation, gpu_user_annotation
            tr.annotations.append(Annotation(_name(names, nm), cat.decode(), int(tid), float(ts), float(dur)))


_GPU_CAT = {b"kernel": "kernel", b"gpu_memcpy": "memcpy", b"gpu_memset": "memset"}


def _scan_each(tr: Trace, buf: bytes, stop: int, names: dict[Any, str]) -> None:
    """One event at a time: cut at the separators, parse the wanted ones with orjson."""
    names[_SLOW] = True  # type: ignore[assignment]  # these ops keep every shape: drop_unread_shapes runs
    start = 0
    find, search, loads, wanted = buf.find, _CAT.search, _loads, _WANTED
    nsep = len(_SEP)
    while start < stop:
        end = find(_SEP, start, stop)
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
                _add_event(tr, loads(buf[start:end]), names)
            except (KeyError, TypeError, ValueError, AttributeError):
                tr.num_skipped += 1
        start = end + nsep - 5  # the next event's "{"


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
    if cat == "cpu_op":
        a = ev.get("args") or {}
        name = ev["name"]
        tr.cpu_ops.append(
            CpuOp(
                names.setdefault(name, name),
                ev["tid"],
                float(ev["ts"]),
                float(ev["dur"]),
                _opt_int(a.get("External id")),
                a.get("Input Dims"),
                a.get("Input type"),
                ev.get("pid", 0),
                None,
                a.get("Input Strides"),
                a.get("Concrete Inputs"),
            )
        )
    elif cat in _GPU_KIND:
        _add_gpu(tr, ev, _GPU_KIND[cat], names)
    elif cat in _RUNTIME_CATS:
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
