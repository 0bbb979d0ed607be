"""The user's files, written one way: the output guard, the one atomic writer, private trace folders, the store's lock.

- :func:`check_outputs`: no output of a command is one of its inputs, and no two of its outputs are the same file
  (the same resolved path, or the same inode: a hard or symbolic link to it), refused in one line before any work.
- :func:`write_atomic`: every file attnscope writes (documents, pages, the plotly asset, kept traces) goes to a
  temporary file made with ``mkstemp`` (``O_CREAT | O_EXCL``: it never follows a link) in the target's own folder,
  is fsynced, then renamed over the target with ``os.replace`` (a rename replaces a link at the target; it never
  writes through it).  A failure (a full disk) removes the temporary file and leaves the target as it was.
- :func:`private_dir` and :func:`keep_file`: a trace is exported into a private ``mkdtemp`` folder (mode 0700;
  Kineto's own ``<path>.tmp`` lands there too), read there, then moved to the folder the user named, if any; the
  private folder is removed on every exit path, and one left by ``kill -9`` by the next one made (its ``.owner``
  lock is free: :func:`owned_dir`, :func:`reap_orphans`).
- :func:`lock_store`: an append-only store (the JSONL of ``sweep --out`` and ``model --out``) is held under an
  advisory ``flock`` while the command writes it, so a second writer is refused at once; a store that is a
  symbolic link is refused (never appended through).
"""

from __future__ import annotations

import contextlib
import errno
import os
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import IO

from attnscope.core.arguments import UsageError


def os_error_text(e: OSError) -> str:
    """An OSError as a reader names it: ``no space left on device (ENOSPC)`` (a WriteError already says it all)."""
    if isinstance(e, WriteError):
        return str(e)
    name = errno.errorcode.get(e.errno or 0)
    text = (e.strerror or str(e) or type(e).__name__).rstrip(".")
    text = text[:1].lower() + text[1:]
    return f"{text} ({name})" if name else text


# ---------------------------------------------------------------------------------------------------- the guard


def _identity(path: str | Path) -> tuple[str, tuple[int, int] | None]:
    """(the resolved path, (device, inode) when the file exists): two names of one file share one of them."""
    p = Path(path)
    try:
        resolved = str(p.resolve())
    except (OSError, RuntimeError):  # a link loop: compared by its name as given
        resolved = os.path.abspath(p)
    try:
        st = os.stat(p)
    except (OSError, ValueError):
        return resolved, None
    return resolved, (st.st_dev, st.st_ino)


def _same(a: tuple[str, tuple[int, int] | None], b: tuple[str, tuple[int, int] | None]) -> bool:
    return a[0] == b[0] or (a[1] is not None and a[1] == b[1])


Named = Iterable[tuple[str, str | Path | None]]


def check_outputs(inputs: Named, outputs: Named) -> None:
    """Refuse (UsageError, one line) an output that is one of the inputs, or two outputs that are one file.

    ``inputs`` and ``outputs`` are (what names it, path) pairs, e.g. ``("--json", "a.json")`` or ``("input",
    "study.json")`` for a positional file; a path of None or "" is not given.  An input that is a folder
    (``analyze DIR``) is not compared: a file written inside it is not it.
    """
    ins = [(flag, str(p), _identity(p)) for flag, p in inputs if p and not Path(p).is_dir()]
    outs = [(flag, str(p), _identity(p)) for flag, p in outputs if p]
    for flag, path, ident in outs:
        for in_flag, in_path, in_ident in ins:
            if _same(ident, in_ident):
                what = "an input" if in_flag == "input" else f"the {in_flag} file"
                which = f"is {what}" if path == in_path else f"is the same file as {what} {in_path}"
                raise UsageError(f"{flag} {path} {which}: writing it would replace what is read; name another file")
    for i, (flag, path, ident) in enumerate(outs):
        for flag2, path2, ident2 in outs[i + 1 :]:
            if _same(ident, ident2):
                both = path if path == path2 else f"{path} and {path2}"
                raise UsageError(f"{flag} and {flag2} name the same file ({both}): give each output its own file")


def check_trace_names(trace_dir: str | Path | None, names: Iterable[str], outputs: Named) -> None:
    """Refuse (UsageError) an output that one of the traces kept in ``trace_dir`` (file ``names``) would replace."""
    if not trace_dir:
        return
    folder = _identity(trace_dir)[0]
    taken = set(names)
    for flag, path in outputs:
        if not path:
            continue
        p = Path(_identity(path)[0])
        if str(p.parent) == folder and p.name in taken:
            raise UsageError(
                f"{flag} {path} is where trace_dir keeps the trace {p.name}: one would replace the other; name "
                "another file",
                fields=("trace_dir", flag),
            )


# ------------------------------------------------------------------------------------------------ the one writer


def _umask() -> int:
    mask = os.umask(0o022)  # reading the umask means setting it: put it straight back
    os.umask(mask)
    return mask


def _fsync_dir(d: Path) -> None:
    """The rename made durable (best effort: some file systems refuse a directory's fsync)."""
    with contextlib.suppress(OSError):
        fd = os.open(d, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


class WriteError(OSError):
    """A file that could not be written (a full disk, a folder gone): its message names the file and the cause
    (``r.json: not written: no space left on device (ENOSPC)``); ``errno`` is the cause's."""

    def __init__(self, path: str | Path, cause: OSError) -> None:
        super().__init__(f"{path}: not written: {os_error_text(cause)}")
        self.errno = cause.errno
        self.path = Path(path)


def write_atomic(path: str | Path, data: bytes | str | Callable[[IO[bytes]], None]) -> Path:
    """Write ``data`` (bytes, text as UTF-8, or a function that writes into the open binary file) to ``path``:
    a ``mkstemp`` file beside it, fsynced, then ``os.replace``.  On any failure the temporary file is removed and
    the target is left as it was; an OSError (ENOSPC) is raised as a :class:`WriteError` that names the file."""
    try:
        return _write_atomic(Path(path), data)
    except WriteError:
        raise
    except OSError as e:
        raise WriteError(path, e) from e


def _write_atomic(p: Path, data: bytes | str | Callable[[IO[bytes]], None]) -> Path:
    import tempfile  # here: a command that writes no file need not import it

    p.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{p.name}.", dir=p.parent)
    try:
        os.fchmod(fd, 0o666 & ~_umask())  # mkstemp makes 0600; a plain open() would honour the umask
        with os.fdopen(fd, "wb", buffering=1 << 20) as f:  # a streamed document writes many small pieces
            if callable(data):
                data(f)
            else:
                f.write(data.encode("utf-8") if isinstance(data, str) else data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, p)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    _fsync_dir(p.parent)
    return p


OWNER = ".owner"  # in a private folder: locked (flock) by the process that made it, for as long as it lives


def owned_dir(prefix: str = "attnscope-") -> tuple[Path, int | None]:
    """A folder only this user can enter (``mkdtemp``, mode 0700), and the descriptor of its ``.owner`` file, which
    this process keeps locked (``flock``) until it removes the folder.  The kernel drops the lock when the process
    dies, whatever kills it (``kill -9`` included), so the folders left by dead processes are found by the lock
    alone, never by a process id that may be reused or belong to another PID namespace, and removed here first
    (:func:`reap_orphans`).  Without ``fcntl`` (Windows) no lock: ``None``."""
    import tempfile

    reap_orphans(prefix)
    d = Path(tempfile.mkdtemp(prefix=prefix))
    try:
        import fcntl
    except ImportError:  # pragma: no cover -- not POSIX
        return d, None
    fd = os.open(d / OWNER, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0), 0o600)
    fcntl.flock(fd, fcntl.LOCK_EX)
    os.write(fd, f"{os.getpid()}\n".encode())  # written under the lock: an empty file is one being made
    return d, fd


def remove_owned(d: Path, fd: int | None) -> None:
    """Remove a folder of :func:`owned_dir` with all it holds, then let its lock go."""
    import shutil

    shutil.rmtree(d, ignore_errors=True)
    if fd is not None:
        with contextlib.suppress(OSError):
            os.close(fd)


def reap_orphans(prefix: str = "attnscope-") -> int:
    """Remove the folders of :func:`owned_dir` in the temporary directory whose owner has died (its ``.owner``
    file can be locked and holds its pid): the ones a killed process could not remove.  Only this user's real
    folders (never a link) are touched; a folder still being made (an empty ``.owner``) is left.  Returns how
    many were removed."""
    import shutil
    import stat
    import tempfile

    try:
        import fcntl
    except ImportError:  # pragma: no cover -- not POSIX
        return 0
    removed = 0
    try:
        entries = list(os.scandir(tempfile.gettempdir()))
    except OSError:
        return 0
    for e in entries:
        if not e.name.startswith(prefix):
            continue
        try:
            st = e.stat(follow_symlinks=False)
            if not stat.S_ISDIR(st.st_mode) or st.st_uid != os.geteuid():
                continue
            fd = os.open(os.path.join(e.path, OWNER), os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
        except OSError:
            continue  # no owner file: not a folder of owned_dir, or one made before it had one
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)  # taken: its owner is gone
            if os.fstat(fd).st_size == 0:
                continue
            shutil.rmtree(e.path, ignore_errors=True)
            removed += 1
        except OSError:
            continue  # locked: its owner lives
        finally:
            os.close(fd)
    return removed


@contextlib.contextmanager
def private_dir(prefix: str = "attnscope-") -> Iterator[Path]:
    """A folder only this user can enter (``mkdtemp``, mode 0700), removed with all it holds on every exit path;
    one left by a killed process is removed by the next one made (:func:`owned_dir`)."""
    d, fd = owned_dir(prefix)
    try:
        yield d
    finally:
        remove_owned(d, fd)


def keep_file(src: Path, dest_dir: str | Path, name: str | None = None) -> Path:
    """Move ``src`` (a file this process made in a private folder) to ``dest_dir/name``: renamed when both are on
    one file system, else copied through :func:`write_atomic`.  OSError (ENOSPC) when it cannot be kept."""
    dest = Path(dest_dir) / (name or src.name)
    dest.parent.mkdir(parents=True, exist_ok=True)
    try:
        os.replace(src, dest)  # a rename: replaces a link at dest, never writes through it
    except OSError as e:
        if e.errno != errno.EXDEV:
            raise
        import shutil

        with open(src, "rb") as f:
            write_atomic(dest, lambda out: shutil.copyfileobj(f, out, 1 << 20))
    return dest


# --------------------------------------------------------------------------------------------------- the lock


class StoreLock:
    """An advisory ``flock`` on a store, held from :func:`lock_store` until :meth:`release` (or the process's end)."""

    def __init__(self, path: Path, fd: int, created: bool) -> None:
        self.path, self.fd, self.created = path, fd, created

    def release(self) -> None:
        if self.fd < 0:
            return
        if self.created:  # a store this command made and never wrote: not left behind
            with contextlib.suppress(OSError):
                if os.fstat(self.fd).st_size == 0 and os.path.samestat(os.fstat(self.fd), os.lstat(self.path)):
                    os.unlink(self.path)
        os.close(self.fd)  # closing the only descriptor releases the lock
        self.fd = -1

    def __enter__(self) -> StoreLock:
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()


def lock_store(path: str | Path, flag: str) -> StoreLock:
    """Take the store's lock before anything is written to it: UsageError (one line) when another process holds it
    or when the store is a symbolic link (appending through a link would write wherever it points)."""
    import fcntl

    p = Path(path)
    if p.is_symlink():
        raise UsageError(
            f"{flag} {p}: is a symbolic link (to {os.readlink(p)}); attnscope never appends through a link: "
            "name the file itself"
        )
    p.parent.mkdir(parents=True, exist_ok=True)
    created = not p.exists()
    flags = os.O_RDWR | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(p, flags, 0o666)
    except OSError as e:
        if e.errno == errno.ELOOP:  # made a link between the check above and the open
            raise UsageError(f"{flag} {p}: is a symbolic link; attnscope never appends through a link") from None
        raise UsageError(f"{flag} {p}: cannot be opened ({os_error_text(e)})") from None
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError as e:
        if e.errno in (errno.ENOLCK, errno.EOPNOTSUPP, errno.ENOSYS):  # a file system without locks: unlocked
            return StoreLock(p, fd, created)
        os.close(fd)
        if e.errno in (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES):
            raise UsageError(
                f"{flag} {p}: another attnscope is writing to it now (the file is locked); wait for it to end, "
                "or choose another file"
            ) from None
        raise UsageError(f"{flag} {p}: cannot be locked ({os_error_text(e)})") from None
    return StoreLock(p, fd, created)
