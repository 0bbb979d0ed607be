"""The library's checks of the values it is given, done before any measurement: numbers, seconds, names, devices.

Every check raises :class:`UsageError` with one line that names the value, as the library calls it, and says
what it takes; the command line says each named value as its flag (``attnscope.cli.errors``) in
``attnscope: error: …``, and exits 2.  The flags' own checks (argparse types, output paths named by their flag)
are the command line's (``attnscope.cli.flags``).
"""

from __future__ import annotations

import math
import numbers
import re
from collections.abc import Iterable
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
MAX_STEPS = 1 << 16  # decode steps over a growing serving cache (run's steps)
MAX_BUCKET = 1 << 20  # tokens per shape bucket of those steps
MAX_SEED = (1 << 63) - 1  # torch.manual_seed's largest
MAX_PROCESSES = 1024  # analyze's processes for several traces (--jobs)
MAX_BUDGET_TOKENS = 1 << 30  # a sweep's B·S (batch = N / seq)
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
        # a subclass built from other arguments travels as the plain UsageError it also is
        kind = type(self) if type(self).__init__ is UsageError.__init__ else UsageError
        return (kind, (str(self),), {"fields": self.fields})


def fields_of(e: BaseException) -> tuple[str, ...]:
    """The values an error names (:attr:`UsageError.fields`), () for any other error: kept when it is re-raised
    inside a longer message."""
    return tuple(getattr(e, "fields", ()))


def number_problem(
    v: object, *, minimum: float = 0.0, strict: bool = False, maximum: float | None = None
) -> str | None:
    """Why ``v`` is not a usable number (NaN, an infinity, out of range, not a number at all), or None.

    The one check behind the text readers (:func:`read_number`, the flags' types) and the library's own checks
    (:func:`check_number`), so the two say the same thing."""
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
    """The library's check of a number it is given: a one-line ``UsageError`` naming the parameter (``what``, which
    the command line says as its flag)."""
    why = number_problem(v, minimum=minimum, strict=strict, maximum=maximum)
    if why:
        raise UsageError(f"{what}: {why}", fields=(what,))


def check_whole(what: str, v: object, *, minimum: int = 1, maximum: int) -> None:
    """The library's check of a whole number it is given (a shape, a count of steps): an int, not a bool, a float or
    NaN, in [minimum, maximum]; a one-line ``UsageError`` naming the parameter otherwise."""
    if isinstance(v, bool) or not isinstance(v, numbers.Integral):
        raise UsageError(f"{what}: expected a whole number, got {v!r}", fields=(what,))
    n = int(v)
    if n < minimum:
        raise UsageError(f"{what} must be >= {minimum}, got {n}", fields=(what,))
    if n > maximum:
        raise UsageError(f"{what} {n:,} is past the most this tool takes ({maximum:,})", fields=(what,))


def check_seconds(what: str, v: object) -> None:
    """A budget, a timeout or a time limit given to the library: finite seconds in (0, MAX_SECONDS]."""
    check_number(what, v, strict=True, maximum=MAX_SECONDS)


def read_whole(text: str, limit: int) -> int:
    """A whole number in [1, limit] read from its text (a flag's, an axis entry's), or UsageError in the value's
    words (the command line puts the flag before them)."""
    try:
        v = int(text)
    except ValueError:
        raise UsageError(f"expected a whole number, got {text!r}") from None
    if v < 1:
        raise UsageError(f"must be at least 1, got {v}")
    if v > limit:
        raise UsageError(f"{v:,} is beyond any attention case this tool measures (max {limit:,})")
    return v


def read_number(text: str, *, minimum: float = 0.0, strict: bool = False, maximum: float | None = None) -> float:
    """A finite number ≥ minimum (> minimum when ``strict``), ≤ maximum when given, read from its text; UsageError
    (:func:`number_problem`'s words) otherwise."""
    try:
        v = float(text)
    except ValueError:
        raise UsageError(f"expected a number, got {text!r}") from None
    if not math.isfinite(v):
        raise UsageError(f"expected a finite number, got {text!r}")
    why = number_problem(v, minimum=minimum, strict=strict, maximum=maximum)
    if why:
        raise UsageError(why)
    return v


def read_seconds(text: str) -> float:
    """Seconds (a budget, a timeout, a time limit) read from their text: finite, > 0, at most a week."""
    return read_number(text, strict=True, maximum=MAX_SECONDS)


def check_timeout(executor: str, timeout: float | None) -> None:
    """The one timeout check: an executor that runs jobs in this process cannot stop one, so it refuses a timeout
    rather than ignore it (``timeout_s`` and ``executor`` in the message: the command line says its flags)."""
    if timeout is not None and executor == "inline":
        raise UsageError(
            "timeout_s needs a worker it can stop, and executor inline (given, or the default) runs the jobs in "
            "this process: "
            "use executor process (or ray), or leave timeout_s out",
            fields=("timeout_s", "executor"),
        )


def repeats(values: Iterable[Any]) -> list[tuple[Any, int]]:
    """The values listed more than once, each with its count, in the order they first come: ``[64, 128, 64]`` →
    ``[(64, 2)]``.  A list of an axis, of implementations or modes measures each value once, so a repeat is a typo
    the caller refuses (the command line by the flag that lists it)."""
    seen: dict[Any, int] = {}
    for v in values:
        seen[v] = seen.get(v, 0) + 1
    return [(v, n) for v, n in seen.items() if n > 1]


def times(n: int) -> str:
    """How often a value is listed, in words: ``twice``, ``3 times``."""
    return "twice" if n == 2 else f"{n} times"


def check_once(what: str, values: Iterable[Any]) -> None:
    """A list given to the library (an axis of a grid, the implementations of a model's grid) lists each value once:
    a one-line ``UsageError`` naming the list (``what``, which the command line says as its flag) otherwise."""
    twice = repeats(values)
    if twice:
        v, n = twice[0]
        raise UsageError(f"{what} lists {v!r} {times(n)}: give each value once", fields=(what,))


def variant_names(text: str) -> list[str]:
    """A comma list of variant names: none empty, none twice (each row keeps its own trace file)."""
    names = [n.strip() for n in text.split(",")]
    if not any(names):
        raise UsageError(f"variants {text!r} names no variant; give a comma list or 'all'", fields=("variants",))
    if not all(names):
        raise UsageError(f"variants {text!r} has an empty name between commas", fields=("variants",))
    check_variants_once(names)
    return names


def check_variants_once(names: list[str]) -> None:
    """A list of variants names each once (each row keeps its own trace file): given as text or as a Python list."""
    dupes = sorted(n for n, _ in repeats(names))
    if dupes:
        raise UsageError(f"variants names {', '.join(dupes)} more than once", fields=("variants",))


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
