"""The one reader of Kineto (Chrome trace) JSON.  Plain typed events out, no torch.

Every input goes through :func:`load_trace`: traces that ``attnscope run`` captured and traces
from somebody else's training job alike.

- source.py: the file's bytes (gunzipped on the fly) cut into runs of whole events;
- fast.py: msgspec decodes each run into typed Structs holding only the fields an analysis reads;
- safe.py: a general JSON parse per event, for what the typed decoder refuses, and for documents
  not in Kineto's own layout when msgspec is missing or refuses them;
- events.py: the records both paths build.

The cyclic GC is off while the events are built (``no_gc``): 10^5–10^6 small objects would
trigger many full collections that free nothing.
"""

from __future__ import annotations

import itertools
import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from attnscope.trace.events import (
    SHAPES_READ,
    Annotation,
    CpuOp,
    GpuEvent,
    MemEvent,
    RuntimeCall,
    Trace,
    TraceError,
    drop_unread_shapes,
    no_gc,
)
from attnscope.trace.jsonlib import JSONError, loads
from attnscope.trace.safe import load_whole as _safe_whole
from attnscope.trace.safe import run_each as _safe_run
from attnscope.trace.safe import scan_each as _scan_each
from attnscope.trace.safe import trace_from_doc
from attnscope.trace.source import GPU_HEAD, MAX_EVENT, MAX_WHOLE, check_path, chunks, event_runs, read_head, whole

MAX_SAFE = 4 << 20  # a document msgspec cannot split is parsed whole up to this size (~10x in objects)

try:
    from attnscope.trace import fast as _fast
except ImportError:  # msgspec missing: every event goes through the safe path (same result, slower)
    _fast = None  # type: ignore[assignment]

__all__ = [
    "SHAPES_READ",
    "Annotation",
    "CpuOp",
    "GpuEvent",
    "MemEvent",
    "RuntimeCall",
    "Trace",
    "TraceError",
    "drop_unread_shapes",
    "load_trace",
    "no_gc",
    "trace_from_doc",
]


def load_trace(path: str | Path) -> Trace:
    """Read a ``.json`` or ``.json.gz`` Kineto trace into typed events."""
    p = Path(path)
    check_path(p)
    with no_gc():
        cache = _cache_module()
        tr = cache.load(p) if cache is not None else None  # a trace read before
        if tr is not None:
            par = _parallel_module()
            if par is not None:
                par.drop(p)  # a child started for it is not needed
            return tr
        try:
            tr = _load(p, keep_all_shapes=False)
            if tr.shapes_dropped and not tr.gpu:  # a CPU-only profile on a GPU machine: every op's shapes are read
                tr = _load(p, keep_all_shapes=True)
        except RecursionError:  # msgspec, orjson and json each stop at a depth; no trace nests past ~10 levels
            raise TraceError(f"{p}: JSON nested deeper than Python's recursion limit: not a trace") from None
        if cache is not None:
            cache.store(p, tr)
    for note in tr.notes:
        print(f"attnscope: note: {note}", file=sys.stderr)
    launched = launches_without_gpu_events(tr)
    if launched:
        print(f"attnscope: note: {p}: {launched}", file=sys.stderr)
    return tr


def launches_without_gpu_events(tr: Trace) -> str | None:
    """What to say of a trace that launched kernels but holds no GPU event (no kernel, memcpy or memset): its GPU
    side was not recorded (``ProfilerActivity.CPU`` alone) or was recorded as CUPTI profiler ranges, which carry
    counters, not kernel times.  None for any other trace."""
    if tr.gpu:
        return None
    named: dict[str, int] = {}
    for r in tr.runtime:
        if "LaunchKernel" in r.name or "GraphLaunch" in r.name:
            named[r.name] = named.get(r.name, 0) + 1
    if not named:
        return None
    calls = ", ".join(f"{k} ×{v:,}" for k, v in sorted(named.items(), key=lambda kv: -kv[1]))
    return (
        f"{sum(named.values()):,} kernel launch(es) ({calls}) but no GPU kernel, memcpy or memset event: the GPU's "
        "activity was not recorded (or only as CUPTI profiler ranges, which hold counters, not kernel times), so "
        "there is no GPU time; the CPU ops are fingerprinted as a CPU trace's"
    )


def _cache_module() -> Any:
    """trace/cache.py where ``ATTNSCOPE_TRACE_CACHE`` turns it on (imported only then: start-up time)."""
    if _fast is None or not os.environ.get("ATTNSCOPE_TRACE_CACHE"):
        return None
    from attnscope.trace import cache

    return cache


def _parallel_module() -> Any:
    """trace/parallel.py if a caller imported it to start a child (only then can one be pending)."""
    return sys.modules.get("attnscope.trace.parallel")


def _load(p: Path, keep_all_shapes: bool) -> Trace:
    par = _parallel_module()
    helper = par.take(p) if par is not None else None  # a child reading the file's first part, if one was started
    source = chunks(p)
    try:
        head, m = read_head(p, source)
        if m is None:
            if helper is not None:
                helper.cancel()
                helper = None
            raw, complete = whole(head, source)
            return _load_whole(p, bytes(raw)) if complete else _load_any_streaming(p, raw, source)
        # A trace from a GPU machine: shapes are read only for the ops that need them (SHAPES_READ)
        keep = keep_all_shapes or GPU_HEAD.search(head, 0, m.start()) is None
        if helper is None or _fast is None:
            alone = _load_streaming(p, head[: m.end(1)], head[m.start(2) :], source, keep)
            assert alone is not None  # None only where a helper's part could not be taken, and there is none here
            return alone
        tr = _load_streaming(p, head[: m.end(1)], head[m.start(2) :], source, keep, helper)
    finally:
        source.close()  # closes the file if the read ended early
        if helper is not None:  # reaped when taken up; killed on an error before that
            helper.cancel()
    return tr if tr is not None else _load(p, keep_all_shapes)  # the child failed: the file read alone


def _first_part(p: Path, split: int) -> Trace | None:
    """In parallel.py's child: the events of the runs before ``split`` bytes of a Kineto-layout trace, read as
    :func:`_load` would (GC off), or None where it cannot stand in for them (another layout, a refused run)."""
    source = chunks(p)
    try:
        head, m = read_head(p, source)
        if m is None or _fast is None:
            return None
        keep = GPU_HEAD.search(head, 0, m.start()) is None
        tr = Trace(path=str(p), device_properties=[])
        reader = _fast.Reader(tr, keep)
        done = 0
        for run in event_runs(p, head[m.start(2) :], source, []):
            if done >= split:
                break
            done += len(run)
            if reader.read(run) is not None:
                return None  # the safe path's events: this process reads the file alone
        return tr
    finally:
        source.close()


def _load_whole(p: Path, raw: bytes) -> Trace:
    """A document not in Kineto's layout (at most ``MAX_WHOLE`` bytes): its events in runs of ~0.5 MiB, each through
    the typed decoder, and what it refuses through the safe path, run by run; a document msgspec cannot split (or
    without msgspec) is parsed whole by the safe path when it is small enough that doing so stays bounded."""
    if not raw.strip():
        raise TraceError(f"{p}: empty file")
    if _fast is None:  # the safe path alone: the document parsed whole (at most MAX_WHOLE bytes of it)
        return _safe_whole(p, raw)
    split = _fast.split_whole(raw)
    if isinstance(split, str):
        if split == _fast.NO_EVENTS:
            raise TraceError(f"{p}: not a Kineto trace (no 'traceEvents' list)")
        if len(raw) > MAX_SAFE:
            raise TraceError(f"{p}: not valid JSON ({split.splitlines()[0][:160]})")
        tr = _safe_whole(p, raw)
        tr.notes.append(_note(p, tr.num_events, tr.num_events, split))
        return tr
    top, text = split
    runs = _Runs(Trace(path=str(p), device_properties=[]))
    try:
        for run in _fast.element_runs(text, MAX_EVENT):
            runs.read(run)
    except ValueError as e:
        raise TraceError(f"{p}: not valid JSON ({e})") from None
    return runs.finish(p, top)


class _Runs:
    """Runs of a document's events, each through the typed decoder, a run it refuses through the safe path; how
    many events the safe path read, and why the first refusal, for the trace's note."""

    def __init__(self, tr: Trace) -> None:
        self.tr = tr
        self.reader = _fast.Reader(tr, keep_all_shapes=True)
        self.names: dict[Any, str] = {}
        self.refused, self.first_why = 0, ""

    def read(self, run: bytes) -> None:
        why = self.reader.read(run)
        if why is not None:
            before = self.tr.num_events
            _safe_run(self.tr, run, self.names)
            self.refused += self.tr.num_events - before
            self.first_why = self.first_why or why

    def finish(self, p: Path, top: dict[str, Any]) -> Trace:
        """The trace with the document's other members (:func:`_finish`) and the note of what the safe path read."""
        _finish(p, self.tr, top)
        if self.refused:
            self.tr.notes.append(_note(p, self.refused, self.tr.num_events, self.first_why))
        return self.tr


def _load_any_streaming(p: Path, buf: bytearray, source: Iterator[bytes]) -> Trace:
    """A document not in Kineto's layout, past ``MAX_WHOLE`` bytes: its events cut into runs as the text comes
    (:func:`fast.next_cut`), ~1 MiB of text held at a time.  At the end, the document up to its ``traceEvents``
    list, the last events and what follows the list make a small document of their own, decoded whole: its other
    members, and the check that the whole was valid JSON with the list at its top level."""
    mt = _fast.EVENTS_KEY.search(buf, 0, 1 << 20) if _fast is not None else None
    if mt is None:
        raise TraceError(
            f"{p}: over {MAX_WHOLE >> 20} MiB of JSON not in Kineto's layout without a traceEvents list in its first"
            " MiB" + ("" if _fast is not None else " (such a document is read whole without msgspec)") + ": not a trace"
        )
    prefix = bytes(buf[: mt.end() - 1])  # the document up to the list's "["
    del buf[: mt.end()]
    text, pos = buf, 0  # the list's inside from ``pos``: whole events from there on
    runs = _Runs(Trace(path=str(p), device_properties=[]))
    try:
        for c in itertools.chain((b"",), source):
            text += c
            while len(text) - pos > 2 * _fast.RUN and (got := _fast.next_cut(text, pos, MAX_EVENT)) is not None:
                run, pos = got
                runs.read(run)
            if len(text) - pos > MAX_EVENT + 2 * _fast.RUN:  # no cut at all (a whitespace run, one long value)
                raise TraceError(
                    f"{p}: an event, or the text after the last one, runs past {MAX_EVENT >> 20} MiB"
                    " (a trace's are under 1 MiB): not a trace"
                )
            if pos > _fast.RUN:
                del text[:pos]
                pos = 0
        split = _fast.split_whole(prefix + b"[" + bytes(text[pos:]))
        if isinstance(split, str):
            raise TraceError(f"{p}: not valid JSON ({split.splitlines()[0][:160]})")
        top, rest = split
        for run in _fast.element_runs(rest, MAX_EVENT):
            runs.read(run)
    except ValueError as e:
        if isinstance(e, TraceError):
            raise
        raise TraceError(f"{p}: not valid JSON ({e})") from None
    return runs.finish(p, top)


def _finish(p: Path, tr: Trace, top: dict[str, Any]) -> None:
    """The document's members other than traceEvents, and the shapes no analysis reads dropped."""
    props = top.pop("deviceProperties", None)
    try:
        tr.device_properties = list(loads(bytes(props)) or []) if props is not None else []
        tr.meta = {k: loads(bytes(v)) for k, v in top.items()}
    except JSONError as e:
        raise TraceError(f"{p}: not valid JSON ({e})") from None
    if tr.gpu:
        drop_unread_shapes(tr)


def _load_streaming(
    p: Path, head: bytes, buf: bytes, source: object, keep_all: bool, helper: Any = None
) -> Trace | None:
    """``head`` ends with ``[`` of traceEvents; ``buf`` starts at the first event's ``{``.  With a ``helper``, the
    runs before its ``split`` bytes are cut but not decoded here: the child's records for them come first."""
    tr = Trace(path=str(p), device_properties=[])
    tr.shapes_dropped = not keep_all
    reader = _fast.Reader(tr, keep_all) if _fast is not None else None
    names: dict[object, str] = {}
    tail: list[bytes] = []
    refused, first_why = 0, ""
    skip = helper.split if helper is not None else 0
    for run in event_runs(p, buf, source, tail):  # type: ignore[arg-type]
        if skip > 0:  # the child's run
            skip -= len(run)
            continue
        why = reader.read(run) if reader is not None else ""
        if why is not None:
            before = tr.num_events
            _scan_each(tr, run, len(run) - 1, names, start=1)  # inside the brackets
            if reader is not None:
                refused += tr.num_events - before
                first_why = first_why or why
    if helper is not None and not _take_part(tr, helper, reader):
        return None
    try:
        top = loads(head + tail[0])
    except JSONError as e:
        raise TraceError(f"{p}: not valid JSON ({e})") from None
    tr.device_properties = list(top.pop("deviceProperties", None) or [])
    top.pop("traceEvents", None)
    tr.meta = top
    # only the shapes SHAPES_READ names are kept: the typed decoder kept no others unless told to keep all,
    # the safe path keeps them all
    if tr.gpu and (keep_all or refused or reader is None):
        drop_unread_shapes(tr)
    if refused:
        tr.notes.append(_note(p, refused, tr.num_events, first_why))
    return tr


def _take_part(tr: Trace, helper: Any, reader: Any) -> bool:
    """The child's records (a parallel.Helper's) put before this process's own; False where the child failed."""
    from attnscope.trace import parallel

    if reader is None:
        return False
    try:
        got = parallel.decode(helper.frames(), reader.intern)
    except parallel.ChildFailed:
        return False
    tr.num_events += got.num_events
    tr.num_skipped += got.num_skipped
    tr.cpu_ops[:0] = got.ops
    tr.gpu[:0] = got.gpu
    tr.runtime[:0] = got.runtime
    tr.annotations[:0] = got.annotations
    tr.modules[:0] = got.modules
    tr.memory[:0] = got.memory
    return True


def _note(p: Path, n: int, total: int, why: str) -> str:
    return (
        f"{p}: {n:,} of {total:,} events read by the safe JSON path, which the typed decoder refused "
        f"({why.splitlines()[0][:160]}); the results are the same, the reading slower"
    )
