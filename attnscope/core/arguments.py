"""Checks of what a user types, done before any measurement: numbers, names, output paths, devices.

Every check raises :class:`UsageError` with one line that names the value, as the library calls it, and says
what it takes; the command line says each named value as its flag (``attnscope.cli.errors``) in
``attnscope: error: …``, and exits 2.  Output paths are
probed by creating (and removing) a file where the result will go, because permission bits
say nothing to root and nothing about read-only or virtual file systems (``/proc``).
"""

from __future__ import annotations

import argparse
import math
import os
import re
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

# Far above any real attention problem, far below sizes whose arithmetic alone overflows a
# float: anything between is judged by the memory and time estimates (attnscope.workloads.sizing).
MAX_DIM = {"batch": 1 << 20, "heads": 1 << 14, "kv_heads": 1 << 14, "seq": 1 << 24, "seq_kv": 1 << 24}
MAX_HEAD_DIM = 1 << 12
# Seconds: a week is past any budget, timeout or time limit a measurement takes, and far inside what a timer
# holds (threading.TIMEOUT_MAX, ~9.2e9 s on Linux; a float's 1e308 overflowed the count of calls a budget buys).
MAX_SECONDS = 7 * 24 * 3600.0
# The largest finite value of each dtype (torch.finfo(...).max): a soft-cap beyond it cannot be held in the scores.
DTYPE_MAX = {"fp32": 3.4028234663852886e38, "bf16": 3.3895313892515355e38, "fp16": 65504.0}
MAX_LAYERS = 1 << 12  # model --layers: deeper than any published transformer
DEVICE_RE = re.compile(r"^(cpu|cuda)(?::(\d+))?$")


class UsageError(ValueError):
    """Bad input: the message is the one line the user sees, in the library's words.

    ``fields``: the values it names, each written in the message as the library calls it (a case's field such as
    ``seq_kv`` or ``mask``, a parameter such as ``budget_s``), and written only where it means that value.  The
    command line says each of them as the flag that sets it (``attnscope.cli.errors``), so ``mask 'sliding:x'`` from
    ``attnscope.run(case)`` is ``--mask 'sliding:x'`` from ``attnscope run``.
    """

    def __init__(self, message: str, *, fields: Iterable[str] = ()) -> None:
        super().__init__(message)
        self.fields: tuple[str, ...] = tuple(fields)

    def __reduce__(self) -> tuple[Any, ...]:  # across a process or Ray: the fields travel with the message
        return (type(self), (str(self),), {"fields": self.fields})


def fields_of(e: BaseException) -> tuple[str, ...]:
    """The values an error names (:attr:`UsageError.fields`), () for any other error: kept when it is re-raised
    inside a longer message."""
    return tuple(getattr(e, "fields", ()))


def positive_int(name: str, limit: int) -> Callable[[str], int]:
    """An argparse ``type=`` for an integer in [1, limit]."""

    def parse(s: str) -> int:
        try:
            v = int(s)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected a whole number, got {s!r}") from None
        if v < 1:
            raise argparse.ArgumentTypeError(f"must be at least 1, got {v}")
        if v > limit:
            raise argparse.ArgumentTypeError(f"{v:,} is beyond any attention case this tool measures (max {limit:,})")
        return v

    parse.__name__ = name
    return parse


def number_problem(
    v: object, *, minimum: float = 0.0, strict: bool = False, maximum: float | None = None
) -> str | None:
    """Why ``v`` is not a usable number (NaN, an infinity, out of range, not a number at all), or None.

    The one check behind the flags' types (:func:`finite_float`) and the library's own checks
    (:func:`check_number`), so the two say the same thing in their own words."""
    if isinstance(v, bool) or not isinstance(v, int | float):
        return f"expected a number, got {v!r}"
    if isinstance(v, float) and not math.isfinite(v):
        return f"expected a finite number, got {v!r}"
    if v < minimum or (strict and v == minimum):
        return f"must be {'>' if strict else '≥'} {minimum:g}, got {v:g}"
    if maximum is not None and v > maximum:
        return f"must be at most {maximum:,g}, got {v:g}"
    return None


def check_number(
    what: str, v: object, *, minimum: float = 0.0, strict: bool = False, maximum: float | None = None
) -> None:
    """The library's check of a number it is given: a one-line ``UsageError`` naming the parameter."""
    why = number_problem(v, minimum=minimum, strict=strict, maximum=maximum)
    if why:
        raise UsageError(f"{what}: {why}")


def check_seconds(what: str, v: object) -> None:
    """A budget, a timeout or a time limit given to the library: finite seconds in (0, MAX_SECONDS]."""
    check_number(what, v, strict=True, maximum=MAX_SECONDS)


def finite_float(
    name: str, *, minimum: float = 0.0, strict: bool = False, maximum: float | None = None
) -> Callable[[str], float]:
    """An argparse ``type=`` for a finite number ≥ minimum (> minimum when ``strict``), ≤ maximum when given."""

    def parse(s: str) -> float:
        try:
            v = float(s)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected a number, got {s!r}") from None
        if not math.isfinite(v):
            raise argparse.ArgumentTypeError(f"expected a finite number, got {s!r}")
        why = number_problem(v, minimum=minimum, strict=strict, maximum=maximum)
        if why:
            raise argparse.ArgumentTypeError(why)
        return v

    parse.__name__ = name
    return parse


def seconds(name: str) -> Callable[[str], float]:
    """An argparse ``type=`` for seconds: finite, > 0, at most :data:`MAX_SECONDS` (a week)."""
    return finite_float(name, minimum=0.0, strict=True, maximum=MAX_SECONDS)


def timeout_seconds(s: str) -> float:
    """``--timeout``, the same in every command: a finite number of seconds in (0, a week]."""
    return seconds("timeout")(s)


def check_timeout(executor: str, timeout: float | None) -> None:
    """The one timeout check: an executor that runs jobs in this process cannot stop one, so it refuses a timeout
    rather than ignore it (``timeout_s`` and ``executor`` in the message: the command line says its flags)."""
    if timeout is not None and executor == "inline":
        raise UsageError(
            "timeout_s needs a worker it can stop, and executor inline runs the jobs in this process: "
            "use executor process (or ray), or leave timeout_s out",
            fields=("timeout_s", "executor"),
        )


def variant_names(text: str) -> list[str]:
    """A comma list of variant names: none empty, none twice (each row keeps its own trace file)."""
    names = [n.strip() for n in text.split(",")]
    if not any(names):
        raise UsageError(f"variants {text!r} names no variant; give a comma list or 'all'", fields=("variants",))
    if not all(names):
        raise UsageError(f"variants {text!r} has an empty name between commas", fields=("variants",))
    dupes = sorted({n for n in names if names.count(n) > 1})
    if dupes:
        raise UsageError(f"variants names {', '.join(dupes)} more than once", fields=("variants",))
    return names


def _nearest_existing(p: Path) -> Path:
    q = p
    while q != q.parent:
        try:
            if q.exists():
                break
        except OSError:  # a name too long to stat: its parent is asked
            pass
        q = q.parent
    return q


# file systems whose entries are the kernel's, not files a program can create
VIRTUAL_ROOTS = ("/proc", "/sys", "/dev")


def _virtual_root(d: Path) -> str | None:
    r = str(d.resolve())
    return next((v for v in VIRTUAL_ROOTS if r == v or r.startswith(v + "/")), None)


def _probe_dir(d: Path, flag: str, target: Path) -> None:
    """Create and remove a file in ``d``: the only test that root and read-only mounts both answer."""
    virtual = _virtual_root(d)
    if virtual is not None:
        raise UsageError(f"{flag} {target}: {virtual} is the kernel's virtual file system, not a place for files")
    import tempfile  # here: its import (shutil, bz2, lzma, random) is ~2 ms of every command's start-up

    try:
        fd, tmp = tempfile.mkstemp(prefix=".attnscope-probe-", dir=d)
    except OSError as e:
        raise UsageError(f"{flag} {target}: no file can be created in {d} ({e.strerror or e})") from None
    os.close(fd)
    Path(tmp).unlink(missing_ok=True)


# a file is written beside its final name first (".NAME.XXXXXXXX", then renamed): room for that temp name
TEMP_NAME_ROOM = 10


def _check_length(p: Path, base: Path, flag: str, room: int = 0) -> None:
    """Every name within the file system's NAME_MAX (the last one with ``room`` to spare), the whole path within
    PATH_MAX: ENAMETOOLONG said before the measurement, not after it."""
    try:
        name_max = os.pathconf(base, "PC_NAME_MAX")
        path_max = os.pathconf(base, "PC_PATH_MAX")
    except (OSError, ValueError, AttributeError):  # the system does not say: the common Linux limits
        name_max, path_max = 255, 4096
    for i, part in enumerate(p.parts):
        most = name_max - (room if i == len(p.parts) - 1 else 0)
        if len(os.fsencode(part)) > most:
            raise UsageError(
                f"{flag}: the name {part[:40]}… is {len(os.fsencode(part))} bytes; at most {most} fit here"
                + (f" (the file system's {name_max}, less room for the temporary file written first)" if room else "")
            )
    if len(os.fsencode(str(p.absolute()))) >= path_max:
        raise UsageError(f"{flag}: the path is longer than this system's limit of {path_max} bytes")


def check_output_file(path: str | None, flag: str) -> None:
    """A file the run will write at its end: fail now, not after the measurement."""
    if not path:
        return
    p = Path(path)
    # before any stat of p: that would fail with ENAMETOOLONG
    _check_length(p, _nearest_existing(p.parent), flag, TEMP_NAME_ROOM)
    if p.is_dir():
        raise UsageError(f"{flag} {p}: is a directory; name a file")
    if p.name in ("", ".", ".."):
        raise UsageError(f"{flag} {p}: name a file")
    base = _nearest_existing(p.parent if str(p.parent) else Path("."))
    if not base.is_dir():
        raise UsageError(f"{flag} {p}: {base} is not a directory")
    _probe_dir(base, flag, p)


def check_output_dir(path: str | None, flag: str) -> None:
    """A directory the run will fill (trace files): it may not exist yet, but must be creatable."""
    if not path:
        return
    p = Path(path)
    _check_length(p, _nearest_existing(p.parent), flag)
    if p.exists() and not p.is_dir():
        raise UsageError(f"{flag} {p}: exists and is not a directory")
    base = _nearest_existing(p)
    if not base.is_dir():
        raise UsageError(f"{flag} {p}: {base} is not a directory")
    _probe_dir(base, flag, p)


def check_input_file(path: str, flag: str) -> None:
    p = Path(path)
    if not p.exists():
        raise UsageError(f"{flag} {p}: no such file")
    if not p.is_file():
        raise UsageError(f"{flag} {p}: not a file")


def parse_device(text: str, what: str = "device") -> tuple[str, int | None]:
    """The one device parser: ('cpu' | 'cuda', index or None), or UsageError for any other device name.  ``what``:
    how the message names the value (``device``, ``case.device``; the command line says ``--device``)."""
    m = DEVICE_RE.match(str(text).strip().lower())
    if not m:
        raise UsageError(f"{what} {text!r}: attnscope measures on cpu or cuda[:N] (NVIDIA GPUs) only", fields=(what,))
    kind, idx = m.group(1), m.group(2)
    if kind == "cpu" and idx is not None:
        raise UsageError(f"{what} {text!r}: the CPU takes no index; use cpu", fields=(what,))
    return kind, (int(idx) if idx is not None else None)
