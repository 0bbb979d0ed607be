"""Sweeps: a grid of cases × variants, minus what the store already holds, through an executor.

Each result is appended to the JSONL store the moment it exists, so a crash, a kill -9 or
Ctrl-C loses at most the jobs that were running; a resumed sweep measures exactly what is missing.
"""

from __future__ import annotations

import contextlib
import itertools
import math
import re
import signal
import threading
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field, replace
from typing import Any

from attnscope.core.masks import KINDS, parse_mask
from attnscope.core.types import MODES, Case, Env, Result
from attnscope.document.schema import result_to_dict
from attnscope.execute.executors import Executor
from attnscope.execute.job import Job, Options, trace_file_name
from attnscope.execute.store import Store

_RANGE = re.compile(r"^(\d+)\.\.(\d+)(?:([x+])(\d+))?$", re.ASCII)
_NUMBER = re.compile(r"^\d+$", re.ASCII)
MAX_AXIS_VALUES = 4096
MAX_JOBS = 100_000  # far beyond a day on one GPU: a larger grid is a typo


def parse_int_axis(name: str, text: str, limit: int | None = None) -> list[int]:
    """'512,1024', '512..16384x2' (×2 each step) or '64..256+64' (+64 each step); each value in
    [1, limit], duplicates dropped, in the order given."""
    out: list[int] = []
    for part in (p.strip() for p in text.split(",")):
        if not part:
            raise ValueError(f"--{name} {text!r}: an empty item between commas")
        m = _RANGE.match(part)
        if m is None:
            if not _NUMBER.match(part):
                raise ValueError(f"--{name} {text!r}: {part!r} is neither a whole number nor a range like 512..16384x2")
            out.append(int(part))
            continue
        lo, hi, op, step = int(m[1]), int(m[2]), m[3] or "+", int(m[4] or 1)
        if lo > hi:
            raise ValueError(f"--{name} {part!r}: the range runs backwards ({lo} > {hi})")
        if (op == "x" and step < 2) or step < 1 or lo < 1:
            raise ValueError(f"--{name} {part!r}: a range starts at 1 or more and grows (x2 or more, +1 or more)")
        v = lo
        while v <= hi and len(out) <= MAX_AXIS_VALUES:
            out.append(v)
            v = v * step if op == "x" else v + step
    if len(out) > MAX_AXIS_VALUES:
        raise ValueError(f"--{name} {text!r}: more than {MAX_AXIS_VALUES} values")
    for v in out:
        if v < 1:
            raise ValueError(f"--{name} {text!r}: values must be at least 1, got {v}")
        if limit is not None and v > limit:
            raise ValueError(f"--{name} {text!r}: {v:,} is beyond any case this tool measures (max {limit:,})")
    return list(dict.fromkeys(out))


def parse_choice_axis(name: str, text: str, choices: Iterable[str]) -> list[str]:
    allowed = list(choices)
    out = [p.strip() for p in text.split(",")]
    bad = [p for p in out if p not in allowed]
    if bad:
        raise ValueError(f"--{name} {text!r}: use a comma list of {', '.join(allowed)}")
    return list(dict.fromkeys(out))


CAUSAL = {"yes": [True], "no": [False], "both": [True, False]}
MASK_NAMES = ("causal_lower_right", "causal_top_left", *KINDS)  # what starts an entry of --mask
LIST_KINDS = ("document", "padding")  # whose argument is itself a comma list


def parse_mask_axis(text: str) -> list[str]:
    """``none,sliding:256,document:1000,1500,600,996``: a new entry starts at a mask name (before any ':' or
    '@'); a bare number continues the list of the entry before it (document or padding lengths).  Each entry
    is parsed by :func:`attnscope.core.masks.parse_mask` and kept in its canonical spelling, duplicates once."""
    entries: list[str] = []
    for part in (p.strip() for p in text.split(",")):
        if not part:
            raise ValueError(f"--mask {text!r}: an empty item between commas")
        name = re.split(r"[:@]", part, maxsplit=1)[0].lower()
        if name in MASK_NAMES:
            entries.append(part)
            continue
        if not entries:
            raise ValueError(f"--mask {text!r}: it must start with a mask name ({', '.join(MASK_NAMES)})")
        kind = re.split(r"[:@]", entries[-1], maxsplit=1)[0].lower()
        if kind not in LIST_KINDS or "@" in entries[-1]:
            raise ValueError(
                f"--mask {text!r}: {part!r} is no mask name, and only document and padding take a comma list "
                f"({entries[-1]!r} does not); give each mask its name, e.g. sliding:256,sliding:512"
            )
        entries[-1] += "," + part
    out = []
    for e in entries:
        try:
            out.append(parse_mask(e).canonical)
        except ValueError as err:
            raise ValueError(f"--mask {text!r}: {err}") from None
    return list(dict.fromkeys(out))


def parse_softcap_axis(text: str) -> list[float | None]:
    """``0,30``: 0 means no soft-capping; any other value a positive finite cap."""
    out: list[float | None] = []
    for part in (p.strip() for p in text.split(",")):
        try:
            v = float(part)
        except ValueError:
            raise ValueError(f"--softcap {text!r}: {part!r} is not a number (0: no soft-capping)") from None
        if not math.isfinite(v) or v < 0:
            raise ValueError(f"--softcap {text!r}: each cap is 0 (none) or a positive finite number, got {part!r}")
        out.append(None if v == 0 else v)
    return list(dict.fromkeys(out))


ALIBI = {"no": [False], "yes": [True], "both": [False, True]}


def parse_alibi_axis(text: str) -> list[bool]:
    """``no``, ``yes``, ``both`` or a comma list of yes and no."""
    out: list[bool] = []
    for part in (p.strip() for p in text.split(",")):
        if part not in ALIBI:
            raise ValueError(f"--alibi {text!r}: use yes, no, both, or a comma list of yes and no")
        out += ALIBI[part]
    return list(dict.fromkeys(out))


def parse_causal(text: str) -> list[bool]:
    try:
        return CAUSAL[text.strip()]
    except KeyError:
        raise ValueError(f"--causal {text!r}: use yes, no or both") from None


@dataclass
class Axes:
    """Each axis a list; ``None`` in ``kv_heads``/``seq_kv`` means = heads / = seq;
    ``budget_tokens`` sets batch = N / seq (B·S kept constant)."""

    batch: list[int] = field(default_factory=lambda: [1])
    heads: list[int] = field(default_factory=lambda: [16])
    kv_heads: list[int | None] = field(default_factory=lambda: [None])
    seq: list[int] = field(default_factory=lambda: [1024])
    seq_kv: list[int | None] = field(default_factory=lambda: [None])
    head_dim: list[int] = field(default_factory=lambda: [64])
    dtype: list[str] = field(default_factory=lambda: ["bf16"])
    causal: list[bool] = field(default_factory=lambda: [True])
    mode: list[str] = field(default_factory=lambda: ["fwd"])
    mask: list[str | None] = field(default_factory=lambda: [None])  # None: from ``causal``; given, it sets causal
    softcap: list[float | None] = field(default_factory=lambda: [None])
    alibi: list[bool] = field(default_factory=lambda: [False])
    budget_tokens: int | None = None


def grid(axes: Axes, device: str) -> list[Case]:
    """Every combination, in axis order; a combination that is not a valid case is an error naming it."""
    cases: list[Case] = []
    batches: list[int | None] = [None] if axes.budget_tokens else list(axes.batch)
    causals = axes.causal if axes.mask == [None] else [False]  # a mask sets causal itself
    axis_lists = (batches, axes.heads, axes.kv_heads, axes.seq, axes.seq_kv, axes.head_dim, axes.dtype, causals)
    mods = list(itertools.product(axes.mask, axes.softcap, axes.alibi))
    n = len(axes.mode) * len(mods) * math.prod(len(a) for a in axis_lists)
    if n > MAX_JOBS:
        raise ValueError(f"the grid holds {n:,} cases, over {MAX_JOBS:,}: narrow it")
    for b, h, kvh, s, skv, d, dt, causal, (mask, cap, alibi), mode in itertools.product(*axis_lists, mods, axes.mode):
        if b is None:
            assert axes.budget_tokens is not None
            if axes.budget_tokens % s:
                raise ValueError(
                    f"--budget-tokens {axes.budget_tokens} is not a multiple of seq {s} (B·S must stay constant)"
                )
            b = axes.budget_tokens // s
        try:
            fields: dict[str, Any] = {"batch": b, "heads": h, "kv_heads": kvh, "seq_q": s, "seq_kv": skv}
            fields |= {"mask": mask, "softcap": cap, "alibi": alibi}
            c = Case(**fields, head_dim=d, dtype=dt, causal=causal, device=device, mode=mode)  # type: ignore[arg-type]
        except ValueError as e:
            kv = f" KV={kvh}" if kvh is not None else ""
            sk = f" Skv={skv}" if skv is not None else ""
            mods_text = "".join(
                [f" mask={mask}" if mask else "", f" softcap={cap:g}" if cap else "", " alibi" if alibi else ""]
            )
            raise ValueError(f"the grid point B={b} H={h}{kv} S={s}{sk} D={d}{mods_text}: {e}") from None
        cases.append(c)
    return list(dict.fromkeys(cases))


def plan(
    cases: list[Case], variants: list[str], options: Options, *, explicit: bool, done: set[tuple[str, str, str]]
) -> list[Job]:
    """The jobs still to measure, grouped by case (a worker builds a case's inputs once)."""
    jobs = []
    for c in cases:
        for v in variants:
            j = Job(c, v, options, explicit=explicit, trace_name=trace_file_name(v, c))
            if j.key not in done:
                jobs.append(j)
    return jobs


@contextlib.contextmanager
def _sigint_after() -> Iterator[None]:
    """Hold Ctrl-C while a row is written: it lands after the fsync, never halfway through a line."""
    old = signal.getsignal(signal.SIGINT)
    if threading.current_thread() is not threading.main_thread() or not callable(old):
        yield  # Ctrl-C ignored (a background job) or not ours to hold
        return
    caught: list[int] = []
    signal.signal(signal.SIGINT, lambda signum, frame: caught.append(signum))
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, old)
    if caught:
        old(signal.SIGINT, None)


def run_sweep(
    jobs: list[Job],
    store: Store,
    executor: Executor,
    *,
    env: Callable[[], Env | None] = lambda: None,
    on_start: Callable[[Job], None] | None = None,
    on_result: Callable[[Result], None] | None = None,
) -> list[Result]:
    """Measure ``jobs``; each row is durable in ``store`` before the next callback runs.

    A row without an environment (its worker died before it could say) gets ``env()``'s.
    KeyboardInterrupt propagates after the executor is closed: every finished row is saved.
    """
    out: list[Result] = []
    fallback: list[Env | None] = []
    try:
        for r in executor.run(jobs, on_start=on_start):
            if r.env is None:
                if not fallback:
                    fallback.append(env())
                r = replace(r, env=fallback[0])
            with _sigint_after():
                store.append(result_to_dict(r))
            out.append(r)
            if on_result:
                on_result(r)
    finally:
        executor.close()
    return out


def axes_from(args: Any) -> Axes:
    """Axes from parsed command-line strings (None: the axis default)."""
    from attnscope.core.arguments import MAX_DIM, MAX_HEAD_DIM
    from attnscope.core.cases import parse_dtype

    a = Axes()
    limits = {**MAX_DIM, "head_dim": MAX_HEAD_DIM}
    for name in ("batch", "heads", "seq", "head_dim"):
        text = getattr(args, name, None)
        if text is not None:
            setattr(a, name, parse_int_axis(name.replace("_", "-"), text, limits[name]))
    if getattr(args, "kv_heads", None) is not None:
        a.kv_heads = list(parse_int_axis("kv-heads", args.kv_heads, limits["kv_heads"]))
    if getattr(args, "seq_kv", None) is not None:
        a.seq_kv = list(parse_int_axis("seq-kv", args.seq_kv, limits["seq_kv"]))
    if getattr(args, "dtype", None) is not None:
        try:
            a.dtype = list(dict.fromkeys(parse_dtype(t.strip()) for t in args.dtype.split(",")))
        except ValueError as e:
            raise ValueError(f"--dtype {args.dtype!r}: {e}") from None
    if getattr(args, "causal", None) is not None:
        a.causal = parse_causal(args.causal)
    if getattr(args, "mask", None) is not None:
        if getattr(args, "causal", None) is not None:
            raise ValueError("--mask sets the causal part itself (causal, none, sliding, …): give --mask or --causal")
        a.mask = list(parse_mask_axis(args.mask))
    if getattr(args, "softcap", None) is not None:
        a.softcap = parse_softcap_axis(args.softcap)
    if getattr(args, "alibi", None) is not None:
        a.alibi = parse_alibi_axis(args.alibi)
    if getattr(args, "mode", None) is not None:
        a.mode = parse_choice_axis("mode", args.mode, MODES)
    if getattr(args, "budget_tokens", None) is not None:
        if getattr(args, "batch", None) is not None:
            raise ValueError("--budget-tokens sets the batch (N / seq): give it or --batch, not both")
        a.budget_tokens = args.budget_tokens
    return a


def recommendation(rows: list[dict[str, Any]]) -> tuple[dict[str, Any], Any]:
    """The recommendation over a sweep's rows (attnscope.analysis.recommend.sweep, as `attnscope recommend`
    gives it) and its rendering."""
    from attnscope.analysis.recommend.sweep import recommend
    from attnscope.report.text.sweep import render

    rec = recommend(rows)
    if not rec["best"] and not rec.get("unresolved"):
        return rec, "recommendation: no row to compare yet (one needs status ok, numerics within tolerance, a time)"
    return rec, render(rec)
