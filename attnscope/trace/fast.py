"""The fast path: msgspec decodes a run of events straight into small typed Structs.

Only the fields an analysis reads are declared; msgspec skips every other key and value without
building a Python object for it (flow events' ids, ``Sequence number``, launch queue times, ...),
and a cpu_op's recorded inputs stay raw JSON text (``msgspec.Raw``), copied out only for the ops
whose shapes are read.  Whatever the typed decoder refuses (a value of another type, a string that
is not valid UTF-8, broken JSON such as old Kineto's unescaped quotes), and any event lacking a
field the safe path would insist on, sends its whole run to the safe path (safe.py), which gives
the same events for the same fields; the reader says so in a note.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterator
from typing import Any, Union

import msgspec
from msgspec import UNSET, Raw, Struct, UnsetType, field

from attnscope.trace.events import (
    CPU_OP_CATS,
    GPU_KIND,
    RUNTIME_CATS,
    SHAPES_READ,
    Annotation,
    CpuOp,
    GpuEvent,
    MemEvent,
    RuntimeCall,
    Trace,
)


class Args(Struct, gc=False):
    ext: int | None = field(default=None, name="External id")
    correlation: int | None = None
    device: int | None = None
    stream: int | None = None
    regs: int | None = field(default=None, name="registers per thread")
    smem: int | None = field(default=None, name="shared memory")
    # [x, y, z], decoded straight into a tuple; anything else is refused (the safe path reads it as None)
    grid: tuple[int, int, int] | None = None
    block: tuple[int, int, int] | None = None
    occupancy: float | None = field(default=None, name="est. achieved occupancy %")
    nbytes: int | None = field(default=None, name="bytes")
    graph: int | None = field(default=None, name="graph id")
    graph_node: int | None = field(default=None, name="graph node id")
    # cpu_op's recorded inputs, kept as their JSON text
    dims: Raw = field(default=Raw(), name="Input Dims")
    types: Raw = field(default=Raw(), name="Input type")
    strides: Raw = field(default=Raw(), name="Input Strides")
    concrete: Raw = field(default=Raw(), name="Concrete Inputs")
    # [memory] instant events
    device_type: int | None = field(default=None, name="Device Type")
    total_allocated: int | UnsetType = field(default=UNSET, name="Total Allocated")
    mem_bytes: int | UnsetType = field(default=UNSET, name="Bytes")


class Event(Struct, gc=False):
    cat: str | None = None
    name: str | UnsetType = UNSET
    pid: int | str | UnsetType = UNSET
    tid: int | str | UnsetType = UNSET
    ts: float | UnsetType = UNSET
    dur: float | UnsetType = UNSET
    args: Args | None = None


_EVENTS = msgspec.json.Decoder(list[Event], strict=False)  # "7" for 7, as int() reads it


def _part(name: str, of: type[Struct], keep: tuple[str, ...], extra: tuple[Any, ...] = (), **config: Any) -> Any:
    """A Struct of the fields of ``of`` named in ``keep`` (the same JSON names, types and defaults), plus ``extra``."""
    fields = [(f.name, f.type, field(default=f.default, name=f.encode_name)) for f in _fields(of) if f.name in keep]
    return msgspec.defstruct(name, [*fields, *extra], gc=False, module=__name__, **config)


@functools.cache
def _fields(of: type[Struct]) -> tuple[Any, ...]:
    return msgspec.structs.fields(of)  # reads the type hints: 60 µs a call


# Each category's events decoded into a Struct of the fields that category reads, told apart by ``cat`` (a tagged
# union): a flow event becomes an empty object, a cpu_op's args 5 fields instead of ``Args``' 17.  The decoded
# objects answer ``cat`` (a class attribute) and the same field names as ``Event``, so one conversion serves both
# decoders.  A run holding a category not listed here, or an event without ``cat`` (Kineto's metadata at the end
# of a trace), is decoded again with ``Event`` (the same events, a few milliseconds more).
_CPU_ARGS = _part("CpuOpArgs", Args, ("ext", "dims", "types", "strides", "concrete"))
_GPU_ARGS = _part("GpuArgs", Args, ("ext", "correlation", "device", "stream", "regs", "smem", "grid", "block",
                                    "occupancy", "nbytes", "graph", "graph_node"))  # fmt: skip
_RUNTIME_ARGS = _part("RuntimeArgs", Args, ("ext", "correlation"))
_MEMORY_ARGS = _part("MemoryArgs", Args, ("device_type", "total_allocated", "mem_bytes"))
_CATEGORIES: tuple[tuple[tuple[str, ...], tuple[str, ...], Any], ...] = (
    # (categories, the Event fields read, the args Struct)
    (tuple(sorted(CPU_OP_CATS)), ("name", "pid", "tid", "ts", "dur"), _CPU_ARGS),
    (tuple(GPU_KIND), ("name", "ts", "dur"), _GPU_ARGS),
    (tuple(sorted(RUNTIME_CATS)), ("name", "pid", "tid", "ts", "dur"), _RUNTIME_ARGS),
    (("user_annotation", "gpu_user_annotation", "python_function"), ("name", "tid", "ts", "dur"), None),
    (("cpu_instant_event",), ("name", "ts"), _MEMORY_ARGS),
    # read by no analysis: flows, then categories seen in Kineto traces (older ones too)
    (("ac2g", "fwdbwd", "Trace", "overhead", "cuda_profiler_range", "cuda_sync", "async_gpu"), (), None),
)  # fmt: skip
_TAGGED_EVENTS = tuple(
    _part(f"Event_{cat}", Event, read, (("args", args | None, None),) if args is not None else (),
          tag_field="cat", tag=cat, namespace={"cat": cat})
    for cats, read, args in _CATEGORIES
    for cat in cats
)  # fmt: skip
_TAGGED = msgspec.json.Decoder(list[Union[_TAGGED_EVENTS]], strict=False)  # type: ignore[valid-type]  # noqa: UP007
_TOP = msgspec.json.Decoder(dict[str, Raw])
_NO_ARGS = Args()
_FLOWS = frozenset(("ac2g", "fwdbwd"))  # flow events (launch → kernel, forward → backward): no analysis reads them
_SHAPE_KEYS = (b',"Input Dims":', b',"Input type":', b',"Input Strides":', b',"Concrete Inputs":')
DecodeErrors = (msgspec.DecodeError, msgspec.ValidationError)


class Refused(ValueError):
    """An event the safe path reads differently (a missing field it would insist on): the run goes there."""


class Reader:
    """Events decoded run by run into one Trace; a run the decoder refuses is left to the caller."""

    def __init__(self, tr: Trace, keep_all_shapes: bool) -> None:
        self.tr = tr
        self.keep_all = keep_all_shapes
        self.names: dict[str, tuple[str, bool]] = {}  # op name → (its one object, whether its shapes are read)
        self.intern: dict[Any, Any] = {}  # names, tids, pids, grids: one object each

    def read(self, data: bytes) -> str | None:
        """Decode ``data`` (a JSON array of events) into the trace; None, or why it was refused (nothing added)."""
        try:
            try:
                evs = _TAGGED.decode(data)
            except DecodeErrors:  # a category not listed, an event without one: every field of every event
                evs = _EVENTS.decode(data)
            out = self._convert(evs)
        except (*DecodeErrors, ValueError, TypeError) as e:  # Refused, or a grid of strings
            return str(e) or type(e).__name__
        tr = self.tr
        tr.num_events += len(evs)
        tr.cpu_ops += out[0]
        tr.gpu += out[1]
        tr.runtime += out[2]
        tr.annotations += out[3]
        tr.modules += out[4]
        tr.memory += out[5]
        return None

    def _convert(self, evs: list[Event]) -> tuple[list[Any], ...]:
        ops: list[CpuOp] = []
        gpu: list[GpuEvent] = []
        rt: list[RuntimeCall] = []
        ann: list[Annotation] = []
        mods: list[Annotation] = []
        mem: list[MemEvent] = []
        add_op, add_gpu, add_rt = ops.append, gpu.append, rt.append
        keep_all, intern, names = self.keep_all, self.intern, self.names
        setdefault = intern.setdefault
        # the last op's thread ids, as read and as interned
        tid_raw: Any = UNSET
        pid_raw: Any = UNSET
        op_tid: Any = UNSET
        op_pid: Any = UNSET
        for e in evs:
            c = e.cat
            if c in CPU_OP_CATS:
                name, ts, dur = e.name, e.ts, e.dur
                if e.tid != tid_raw:  # a thread's ops come in runs: intern its ids once per run
                    tid_raw = e.tid
                    op_tid = setdefault(tid_raw, tid_raw)
                if e.pid != pid_raw:
                    pid_raw = e.pid
                    op_pid = 0 if pid_raw is UNSET else setdefault(pid_raw, pid_raw)
                if name is UNSET or op_tid is UNSET or ts is UNSET or dur is UNSET:
                    raise Refused("a cpu_op without name, tid, ts or dur")
                got = names.get(name)  # (the one object of this name, whether its shapes are read)
                if got is None:
                    got = names[name] = (setdefault(name, name), keep_all or SHAPES_READ.search(name) is not None)
                a = e.args
                if a is None:
                    add_op(CpuOp(got[0], op_tid, ts, dur, None, op_pid, None))
                else:
                    add_op(CpuOp(got[0], op_tid, ts, dur, a.ext, op_pid, _shape_text(a) if got[1] else None))
            elif c in _FLOWS:  # a third of a training step's events: passed over at once
                pass
            elif c in GPU_KIND:
                name, ts, dur = e.name, e.ts, e.dur
                if name is UNSET or ts is UNSET or dur is UNSET:
                    raise Refused(f"a {c} event without name, ts or dur")
                a = e.args or _NO_ARGS
                grid, block = a.grid, a.block
                add_gpu(
                    GpuEvent(
                        GPU_KIND[c],
                        setdefault(name, name),
                        ts,
                        dur,
                        a.correlation,
                        a.ext,
                        a.device,
                        a.stream,
                        None if grid is None else setdefault(grid, grid),
                        None if block is None else setdefault(block, block),
                        a.regs,
                        a.smem,
                        a.occupancy,
                        a.nbytes,
                        a.graph,
                        a.graph_node,
                    )
                )
            elif c in RUNTIME_CATS:
                name, tid, ts, dur, pid = e.name, e.tid, e.ts, e.dur, e.pid
                if name is UNSET or tid is UNSET or ts is UNSET:
                    raise Refused(f"a {c} call without name, tid or ts")
                a = e.args or _NO_ARGS
                add_rt(
                    RuntimeCall(
                        setdefault(name, name),
                        setdefault(tid, tid),
                        ts,
                        0.0 if dur is UNSET else dur,
                        a.correlation,
                        a.ext,
                        0 if pid is UNSET else setdefault(pid, pid),
                    )
                )
            elif c == "user_annotation" or c == "gpu_user_annotation":
                ann.append(_annotation(e, c))
            elif c == "python_function":
                if e.name is not UNSET and e.name.startswith("nn.Module: "):
                    mods.append(_annotation(e, c))
            elif (c is None or c == "cpu_instant_event") and e.name == "[memory]":
                a = e.args or _NO_ARGS
                if e.ts is UNSET or a.total_allocated is UNSET:
                    raise Refused("a [memory] event without ts or Total Allocated")
                nbytes = a.mem_bytes
                mem.append(MemEvent(e.ts, a.device_type, a.total_allocated, 0 if nbytes is UNSET else nbytes))
        return ops, gpu, rt, ann, mods, mem


def _annotation(e: Event, cat: str) -> Annotation:
    if e.name is UNSET or e.ts is UNSET or e.dur is UNSET:
        raise Refused(f"a {cat} event without name, ts or dur")
    return Annotation(e.name, cat, 0 if e.tid is UNSET else e.tid, e.ts, e.dur)


def _shape_text(a: Args) -> bytes | None:
    """The recorded inputs as args members (``,"Input Dims":[...],...``), what CpuOp parses when asked; a copy,
    so that the decoded run's buffer is not kept alive."""
    dims, types, strides, concrete = a.dims, a.types, a.strides, a.concrete
    if dims and types and strides and concrete:  # record_shapes writes all four: one join
        k0, k1, k2, k3 = _SHAPE_KEYS
        return b"".join((k0, dims, k1, types, k2, strides, k3, concrete))
    parts = [(k, v) for k, v in zip(_SHAPE_KEYS, (dims, types, strides, concrete), strict=True) if v]
    if not parts:
        return None
    return b"".join(b for kv in parts for b in kv)


_SKIP = msgspec.json.Decoder(list[Raw])  # JSON syntax checked, elements kept as spans: is a cut between two events?
_CUT = re.compile(rb"\}\s*,\s*\{")  # where two events may meet in a document of any layout
EVENTS_KEY = re.compile(rb'"traceEvents"\s*:\s*\[')
NO_EVENTS = "no traceEvents list"
RUN = 1 << 19  # ~0.5 MiB of events decoded at a time
_NEXT_TRIES = 8


def split_whole(raw: bytes) -> tuple[dict[str, Raw], memoryview] | str:
    """A document's top-level members, and the text inside its ``traceEvents`` list; or why it cannot be read so."""
    try:
        top = _TOP.decode(raw)
    except DecodeErrors as e:
        return str(e)
    events = top.pop("traceEvents", None)
    text = memoryview(events) if events is not None else None
    if text is None or text[:1] != b"[":
        return NO_EVENTS
    return top, text[1:-1]


def next_cut(text: Any, pos: int, too_long: int) -> tuple[bytes, int] | None:
    """The first run of whole events from ``text[pos]`` (an event's ``{``) longer than ``RUN`` bytes, as a JSON array,
    and where the next event starts; None when ``text`` holds no such run yet (more text may bring one).

    A cut is put at a ``}, {`` and kept when the run before it is valid JSON: a cut inside a string or a nested
    object leaves a bracket or a quote open, so only a cut between two events is kept.  Where it is not, the next
    try is the next candidate, after a few failures twice as far, and a run past ``too_long`` bytes is refused
    (ValueError): no event is that long, and broken JSON is not decoded whole."""
    step, tries = RUN, 0
    while True:
        m = _CUT.search(text, pos + step)
        if m is None:
            return None
        run = b"".join((b"[", text[pos : m.start() + 1], b"]"))
        try:
            _SKIP.decode(run)
        except DecodeErrors:
            if m.start() - pos > too_long:
                raise ValueError(f"no event boundary in {too_long >> 20} MiB") from None
            tries += 1  # the next few candidates, then twice as far each time: O(n log n) on any input
            step = m.end() - pos if tries < _NEXT_TRIES else max(2 * step, m.end() - pos)
            continue
        return run, m.end() - 1


def element_runs(text: memoryview, too_long: int) -> Iterator[bytes]:
    """Runs of whole events of a list's inside (any layout), ~``RUN`` bytes each, as JSON arrays (:func:`next_cut`)."""
    pos, n = 0, len(text)
    while n - pos > RUN:
        got = next_cut(text, pos, too_long)
        if got is None:
            break
        run, pos = got
        yield run
    if n - pos > too_long:
        raise ValueError(f"no event boundary in the last {too_long >> 20} MiB")
    yield b"".join((b"[", text[pos:], b"]"))
