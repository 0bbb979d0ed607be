"""A columnar cache of read traces, for analysing the same file again (``analyze``, then ``report``, then ``diff``).

Off unless ``ATTNSCOPE_TRACE_CACHE`` names a directory.  Then :func:`load_trace` keeps each trace it read there as
msgpack frames (parallel.py's: the ops as columns, the GPU events and runtime calls as their Structs, plus the
document's other members), and a later read of the same file (the same real path, size and modification time, read
by the same reader code) decodes them instead of the JSON.  A cache file that is missing, unreadable, written by
other reader code or cut short is passed over and the trace read as usual; a cache that cannot be written costs the
run nothing but the try.  Traces that needed the safe JSON path (their note names the path the user gave) are not
cached.  Nothing is evicted: a file that changed gets a new entry, and removing the directory reclaims the space.
"""

from __future__ import annotations

import os
from itertools import chain
from pathlib import Path
from typing import Any

ENV = "ATTNSCOPE_TRACE_CACHE"
FORMAT = 1
MAX_CACHE = 1 << 34  # a cache file past this is not ours


def _reader_stamp() -> str:
    """The reader's own code (its modules' sizes and modification times): a cache written by other code is not read."""
    here = Path(__file__).parent
    parts = []
    for name in ("__init__.py", "cache.py", "events.py", "fast.py", "parallel.py", "safe.py", "source.py"):
        try:
            st = (here / name).stat()
            parts.append(f"{name}:{st.st_size}:{st.st_mtime_ns}")
        except OSError:
            parts.append(f"{name}:-")
    return ";".join(parts)


def path_for(p: Path) -> Path | None:
    """Where the cache of ``p`` is (or would be), or None when the cache is off."""
    d = os.environ.get(ENV)
    if not d:
        return None
    try:
        st = os.stat(p)
    except OSError:
        return None
    import hashlib  # here: the cache is off for most runs, and each import is start-up time

    key = f"{FORMAT}\0{os.path.realpath(p)}\0{st.st_size}\0{st.st_mtime_ns}\0{_reader_stamp()}"
    return Path(d) / f"{hashlib.sha256(key.encode()).hexdigest()[:32]}.trace"


def load(p: Path) -> Any:
    """The trace read from its cache, or None (no cache, or one that cannot stand in for the file)."""
    where = path_for(p)
    if where is None:
        return None
    import msgspec

    from attnscope.trace import parallel
    from attnscope.trace.events import Trace

    try:
        with open(where, "rb") as f:
            size = os.fstat(f.fileno()).st_size
            if size > MAX_CACHE:
                return None
            frames = parallel.read_frames(f, limit=size)  # a length past the file's: cut short, not allocated
            head = next(frames, None)
            if head is None:
                return None
            props, meta, shapes_dropped = msgspec.msgpack.decode(head)
            got = parallel.decode(frames, {})
    except (OSError, ValueError, TypeError, msgspec.DecodeError, parallel.ChildFailed):
        return None
    tr = Trace(path=str(p), device_properties=props, meta=meta)
    tr.num_events, tr.num_skipped, tr.shapes_dropped = got.num_events, got.num_skipped, shapes_dropped
    tr.cpu_ops, tr.gpu, tr.runtime = got.ops, got.gpu, got.runtime
    tr.annotations, tr.modules, tr.memory = got.annotations, got.modules, got.memory
    return tr


def store(p: Path, tr: Any) -> None:
    """Keep ``tr`` (read from ``p``) in the cache, written whole or not at all (a temporary file renamed)."""
    if tr.notes:
        return
    where = path_for(p)
    if where is None:
        return
    import tempfile

    import msgspec

    from attnscope.trace import parallel

    tmp = None
    try:
        where.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=where.parent, prefix=".part-")
        try:
            head = msgspec.msgpack.encode((tr.device_properties, tr.meta, tr.shapes_dropped))
            parallel.write_frames(fd, chain((head,), parallel.encode(tr)))  # a frame at a time
        finally:
            os.close(fd)
        os.replace(tmp, where)
        tmp = None
    except (OSError, TypeError, ValueError, OverflowError, msgspec.EncodeError):
        pass  # a cache that cannot be written: the run goes on without it
    finally:
        if tmp is not None:
            try:
                os.unlink(tmp)
            except OSError:
                pass
