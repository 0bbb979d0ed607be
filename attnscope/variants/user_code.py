"""A user's own flex functions (``--mask-mod file.py:fn``, ``--score-mod file.py:fn``): loaded, called on the
case's shape, and checked against the built-ins.  Needs torch.

The named function is either the flex function itself, ``mask_mod(b, h, q_idx, kv_idx)`` or
``score_mod(score, b, h, q_idx, kv_idx)``, or a factory of one argument, the device, that returns it (so a
mask that looks up tensors, such as document offsets, builds them where the kernel runs).  Every failure is a
one-line ``UsageError`` naming the value (``mask_mod``, ``score_mod``): the command line says it as its flag and
exits 2.
"""

from __future__ import annotations

import hashlib
import importlib.util
import inspect
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from attnscope.analysis.mask_match import MaskMatch, Runs, match_builtin
from attnscope.core.arguments import UsageError
from attnscope.core.types import Case

ARITY = {"mask_mod": 4, "score_mod": 5}
SIGNATURE = {"mask_mod": "(b, h, q_idx, kv_idx)", "score_mod": "(score, b, h, q_idx, kv_idx)"}


def split_source(source: str, what: str) -> tuple[Path, str]:
    """``file.py:fn`` → (path, fn); the file must exist."""
    path, sep, fn = source.rpartition(":")
    if not sep or not path or not fn.isidentifier():
        raise UsageError(f"{what} {source!r}: give FILE.py:FUNCTION", fields=(what,))
    p = Path(path)
    if not p.is_file():
        raise UsageError(f"{what}: no file {path}", fields=(what,))
    return p, fn


def _module(p: Path, what: str) -> Any:
    name = "attnscope_user_" + hashlib.sha256(str(p.resolve()).encode()).hexdigest()[:12]
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, p)
    if spec is None or spec.loader is None:
        raise UsageError(f"{what}: {p} is not a Python module", fields=(what,))
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod  # torch.compile reads the function's globals through its module
    try:
        spec.loader.exec_module(mod)
    except Exception as e:
        del sys.modules[name]
        raise UsageError(f"{what}: importing {p} failed: {type(e).__name__}: {_one_line(e)}", fields=(what,)) from e
    return mod


def _one_line(e: BaseException) -> str:
    return " ".join(str(e).split())[:300]


def _positional(fn: Callable[..., Any]) -> int | None:
    """How many positional arguments ``fn`` takes (None: any number)."""
    try:
        params = inspect.signature(fn).parameters.values()
    except (TypeError, ValueError):
        return None
    if any(p.kind is p.VAR_POSITIONAL for p in params):
        return None
    return sum(1 for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD) and p.default is p.empty)


def load(source: str, what: str, device: Any) -> Callable[..., Any]:
    """The user's ``what`` ("mask_mod" or "score_mod") from ``source``, built for ``device``."""
    p, name = split_source(source, what)
    fn = getattr(_module(p, what), name, None)
    if fn is None:
        raise UsageError(f"{what}: {p} has no function {name!r}", fields=(what,))
    if not callable(fn):
        raise UsageError(f"{what}: {name!r} in {p} is not a function", fields=(what,))
    n = _positional(fn)
    if n == 1:  # a factory of the device
        try:
            fn = fn(device)
        except Exception as e:
            raise UsageError(f"{what}: {name}(device) raised {type(e).__name__}: {_one_line(e)}", fields=(what,)) from e
        if not callable(fn):
            raise UsageError(f"{what}: {name}(device) returned {type(fn).__name__}, not a function", fields=(what,))
        n = _positional(fn)
    if n is not None and n != ARITY[what]:
        raise UsageError(
            f"{what}: {name} takes {n} argument(s); flex calls it with {SIGNATURE[what]} (or write a factory of the "
            "device that returns one)",
            fields=(what,),
        )
    return fn


def _keep(fn: Callable[..., Any], b: int, h: int, q0: int, q1: int, seq_kv: int, device: Any) -> Any:
    import torch

    qi = torch.arange(q0, q1, device=device).view(-1, 1)
    ki = torch.arange(seq_kv, device=device).view(1, -1)
    bt, ht = (torch.tensor(x, device=device) for x in (b, h))
    out = fn(bt, ht, qi, ki)
    if not isinstance(out, torch.Tensor) or out.dtype != torch.bool:
        got = type(out).__name__ if not isinstance(out, torch.Tensor) else f"a {out.dtype} tensor"
        raise TypeError(f"returned {got}, not a boolean tensor")
    return out.expand(q1 - q0, seq_kv)


def _runs(keep: Any) -> list[Runs] | None:
    """Each row's kept intervals; None when some row keeps two or more separate runs (no built-in does)."""
    import torch

    x = torch.nn.functional.pad(keep.to(torch.int8), (1, 1))
    d = x[:, 1:] - x[:, :-1]
    if int((d == 1).sum(1).max()) > 1:
        return None
    rows: list[Runs] = [()] * keep.shape[0]
    starts, ends = (d == 1).nonzero().tolist(), (d == -1).nonzero().tolist()
    for (q, lo), (_, hi) in zip(starts, ends, strict=True):
        rows[q] = ((lo, hi),)
    return rows


def check_mask_mod(case: Case, rows_per_chunk: int = 1024) -> tuple[MaskMatch, str | None]:
    """The user's mask on the case's shape (on the CPU), compared with the built-ins entry by entry: the match,
    and why no built-in can equal it where that is known before comparing (None otherwise).  The mask is read
    at the first and last (batch, head); a mask that differs between them is compared with none."""
    import torch

    assert case.mask_mod is not None
    fn = load(case.mask_mod, "mask_mod", torch.device("cpu"))
    sq, sk = case.seq_q, case.num_seq_kv
    rows: list[Runs] = []
    why = None
    try:
        for q0 in range(0, sq, rows_per_chunk):
            q1 = min(sq, q0 + rows_per_chunk)
            first = _keep(fn, 0, 0, q0, q1, sk, "cpu")
            last = _keep(fn, case.batch - 1, case.heads - 1, q0, q1, sk, "cpu")
            if why is None and not torch.equal(first, last):
                why = (
                    "it differs between batch element 0, head 0 and the last ones: every built-in but padding does not"
                )
            if not bool(first.any(dim=1).all()):
                q = q0 + int((~first.any(dim=1)).nonzero()[0])
                raise ValueError(f"query {q} keeps no key: its softmax is undefined")
            got = _runs(first) if why is None else None
            if got is None and why is None:
                why = "a row keeps two or more separate runs of keys: no built-in does"
            rows.extend(got or [])
    except Exception as e:
        raise UsageError(
            f"mask_mod {Path(case.mask_mod).name} on B={case.batch} H={case.heads} Sq={sq} Sk={sk}: "
            f"{type(e).__name__}: {_one_line(e)}",
            fields=("mask_mod",),
        ) from e
    if why is not None:
        return MaskMatch(None, 2 * sq * sk), why
    found = match_builtin(rows, sq, sk, case.batch)
    return MaskMatch(found.equivalent_builtin, 2 * sq * sk, found.tried), None


def score_words(case: Case) -> str:
    """The case's score modification by its fields ("softcap 20, alibi"); "no softcap, no alibi" for none."""
    said = ([f"softcap {case.softcap:g}"] if case.softcap is not None else []) + ["alibi"] * case.alibi
    return ", ".join(said) or "no softcap, no alibi"


def check_score_mod(case: Case) -> str | None:
    """Whether the user's score_mod computes the case's own modification (soft-cap, ALiBi, or nothing) on the
    case's positions and scores from -4·cap to 4·cap: None when it does, else where it first differs."""
    import torch

    from attnscope.variants.mask_mods import score_mod_for

    assert case.score_mod is not None
    fn = load(case.score_mod, "score_mod", torch.device("cpu"))
    ours = score_mod_for(case) or (lambda s, b, h, q, k: s)
    sq, sk = min(case.seq_q, 256), min(case.num_seq_kv, 256)
    off = case.num_seq_kv - sk  # the last keys, where ALiBi's bias is largest
    reach = 4 * (case.softcap or 30.0)
    s = torch.linspace(-reach, reach, sq * sk, dtype=torch.float64).view(sq, sk)
    h = torch.tensor(case.heads - 1)
    qi = torch.arange(case.seq_q - sq, case.seq_q).view(-1, 1)
    ki = torch.arange(off, off + sk).view(1, -1)
    try:
        got = fn(s, torch.tensor(0), h, qi, ki)
    except Exception as e:
        raise UsageError(
            f"score_mod {Path(case.score_mod).name} raised {type(e).__name__}: {_one_line(e)}", fields=("score_mod",)
        ) from e
    want = ours(s, torch.tensor(0), h, qi, ki)
    said = score_words(case)
    if isinstance(got, torch.Tensor) and got.shape == want.shape and torch.allclose(got, want, rtol=1e-6, atol=1e-6):
        return None
    if not isinstance(got, torch.Tensor) or got.shape != want.shape:
        return f"it returned {type(got).__name__} {tuple(getattr(got, 'shape', ()))}, not scores of the input's shape"
    i, j = divmod(int((got - want).abs().argmax()), sk)
    return (
        f"at query {int(qi[i, 0])}, key {int(ki[0, j])}, score {float(s[i, j]):.4g} it gives {float(got[i, j]):.6g} "
        f"where the case's ({said}) gives {float(want[i, j]):.6g}"
    )
