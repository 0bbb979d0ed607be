"""A row's compute kernels (memcpy and memset left out), and what the rules work out of them, read once per row
while a document is annotated.  Pure.

A training step holds 10^4 kernels and a dozen rules read them: inside :func:`kernels_read_once` the filtered
list, and each value :func:`read_once` is asked for, is worked out once per row and kept until the scope ends.
Outside it every call works it out afresh, as before.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from operator import itemgetter
from typing import Any, TypeVar

T = TypeVar("T")
Kernels = list[dict[str, Any]]

# id(a row's kernels list) -> (that list, {"compute": its compute kernels, fn: fn(compute kernels), ...}).  The
# list itself is held, so its id names it until the scope ends.
_READ_ONCE: ContextVar[dict[int, tuple[list[Any], dict[Any, Any]]] | None] = ContextVar(
    "attnscope_row_kernels", default=None
)


@contextmanager
def kernels_read_once() -> Iterator[None]:
    """Within: each row's compute kernels, and each :func:`read_once` value, worked out once.  The rows' kernels
    must not change inside (annotating only reads them)."""
    token = _READ_ONCE.set({})
    try:
        yield
    finally:
        _READ_ONCE.reset(token)


def _compute(ks: list[Any]) -> Kernels:
    return [k for k in ks if k["category"] not in ("memcpy", "memset")]


def _memo(r: dict[str, Any]) -> dict[Any, Any] | None:
    """The row's memo inside the scope (its compute kernels filled in), else None."""
    memo = _READ_ONCE.get()
    ks = r.get("kernels")
    if memo is None or not ks:
        return None
    hit = memo.get(id(ks))
    if hit is None or hit[0] is not ks:
        hit = memo[id(ks)] = (ks, {"compute": _compute(ks)})
    return hit[1]


def compute_kernels(r: dict[str, Any]) -> Kernels:
    """The row's kernels less memcpy and memset, in order (a new list; the kernels are the row's own dicts)."""
    m = _memo(r)
    return _compute(r.get("kernels") or []) if m is None else list(m["compute"])


def read_once(r: dict[str, Any], make: Callable[[Kernels], T]) -> T:
    """``make(compute_kernels(r))``, once per row inside :func:`kernels_read_once` (``make``: a module-level
    function of the kernels alone, whose value is not changed by its callers)."""
    m = _memo(r)
    if m is None:
        return make(_compute(r.get("kernels") or []))
    if make not in m:
        m[make] = make(m["compute"])
    return m[make]  # type: ignore[no-any-return]


def longest(ks: Kernels) -> dict[str, Any] | None:
    """The longest kernel (the first of equals), or None."""
    return max(ks, key=itemgetter("duration_us")) if ks else None


def names(ks: Kernels) -> frozenset[str]:
    return frozenset(map(itemgetter("name"), ks))


FUSED_SDPA = ("flash", "efficient", "cudnn")


def is_fused(r: dict[str, Any]) -> bool:
    """Whether the whole attention ran in one fused kernel (or CPU op), scores kept on chip."""
    if r.get("sdpa_backend") in FUSED_SDPA:
        return True
    return any(k["category"] == "attention" for k in compute_kernels(r))


def materialises_scores(r: dict[str, Any]) -> bool:
    """Whether the variant writes the score matrix out: matrix work that is not one fused attention."""
    return not is_fused(r) and any(k["category"] == "gemm" for k in compute_kernels(r))
