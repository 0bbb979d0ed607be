"""The case: one attention problem, and the table of its fields, declared once.

:data:`FIELDS` holds one entry per field of :class:`Case`: its type, its flags in ``run`` (one value) and in
``sweep`` (an axis of values), their help, how its text is read, its default per device, whether it is a sweep
axis, its parts of a label and of a trace file name, and its JSON key.  Generated from it:

- the flags of ``run``, ``guess``, ``variants`` and ``sweep`` (:func:`attnscope.cli.flags.add_flags`);
- the device's default case and the case read from the flags (:mod:`attnscope.core.cases`);
- the sweep's axes, their defaults and their product (:class:`attnscope.core.cases.Axes`, ``grid``, ``axes_from``);
- :meth:`Case.label` and :attr:`Case.mask_label`, and the trace file names (:func:`file_stem`);
- the JSON (:meth:`Case.to_dict`, :meth:`Case.from_dict`);
- the recommender's axes (:func:`recommender_axes`).
"""

from __future__ import annotations

import dataclasses
import shlex
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from functools import partial
from typing import Any, Literal

from attnscope.core import case_text as text
from attnscope.core import serving
from attnscope.core.arguments import (
    DTYPE_MAX,
    MAX_BUDGET_TOKENS,
    MAX_DIM,
    MAX_HEAD_DIM,
    UsageError,
    check_whole,
    number_problem,
    read_number,
    read_whole,
)
from attnscope.core.masks import MASK_HELP, MaskSpec, check_mask, parse_mask

Mode = Literal["fwd", "fwd_bwd"]
MODES: tuple[str, ...] = ("fwd", "fwd_bwd")
DType = Literal["fp32", "fp16", "bf16"]
DTYPE_BYTES: dict[str, int] = {"fp32": 4, "fp16": 2, "bf16": 2}

# how a causal case was asked for, in a message: causal given, or no mask at all (the command line says the flags)
CAUSAL_STATED = "the masking from causal (given, or by default when no mask is given)"


@dataclass(frozen=True)
class Case:
    """One attention problem: shapes, dtype, masking, device.  Its fields are described in :data:`FIELDS`."""

    batch: int
    heads: int
    seq_q: int
    head_dim: int
    dtype: DType = "bf16"
    causal: bool = True
    kv_heads: int | None = None  # None: same as heads (no GQA)
    seq_kv: int | None = None  # None: same as seq_q
    device: str = "cpu"
    # The mask (attnscope.core.masks grammar); None: from `causal`.  Given, it sets `causal` to whether it is
    # exactly SDPA's is_causal (top-left causal), so code that reads `causal` stays right.
    mask: str | None = None
    softcap: float | None = None  # tanh soft-capping of the scores: c·tanh(s/c)
    alibi: bool = False  # ALiBi slopes 2^(-8(h+1)/H) times (key - query position)
    mode: Mode = "fwd"  # fwd_bwd: one forward and its backward (dq, dk, dv) per call
    # A user's own flex functions, "file.py:fn" (--mask-mod, --score-mod): the flex_user variants run them; every
    # other variant runs ``mask``, the built-in checked entry by entry to keep the same scores.
    mask_mod: str | None = None
    score_mod: str | None = None
    # A serving cache (attnscope.core.serving): pages of this many tokens behind a block table; None: contiguous.
    page_size: int | None = None
    # Per-sequence KV lengths (a ragged batch): "L1,L2,..." or "uniform:LO..HI@SEED"; None: each holds seq_kv.
    kv_lens: str | None = None

    def __post_init__(self) -> None:
        for name, limit in _WHOLE.items():
            v = getattr(self, name)
            if v is not None or name in ("batch", "heads", "seq_q", "head_dim"):
                check_whole(name, v, maximum=limit)
        if self.kv_heads is not None and (self.kv_heads < 1 or self.heads % self.kv_heads != 0):
            raise UsageError(
                f"kv_heads {self.kv_heads} must divide heads {self.heads} (GQA groups)", fields=("kv_heads", "heads")
            )
        if self.dtype not in DTYPE_BYTES:
            raise UsageError(f"dtype must be one of {', '.join(DTYPE_BYTES)}, got {self.dtype!r}", fields=("dtype",))
        if self.mode not in MODES:
            raise UsageError(f"mode must be one of {', '.join(MODES)}, got {self.mode!r}", fields=("mode",))
        if self.is_serving:
            self._check_serving()
        self._check_mask()

    def _check_serving(self) -> None:
        """A paged or ragged cache: lengths resolved and checked, seq_kv their longest, the mask lower-right causal
        (or none) per sequence; forward only, no score modification (what the serving variants take)."""
        if self.kv_lens is not None:
            spec = serving.parse_kv_lens(self.kv_lens)
            lens = spec.resolve(self.batch)
            if self.seq_kv is not None and self.seq_kv != max(lens):
                raise UsageError(
                    f"seq_kv {self.seq_kv} with kv_lens {spec.canonical}: the KV length is each sequence's "
                    f"(the longest is {max(lens)}); leave seq_kv out",
                    fields=("seq_kv", "kv_lens"),
                )
            object.__setattr__(self, "kv_lens", spec.canonical)
            object.__setattr__(self, "seq_kv", max(lens))
        short = min(self.kv_lengths)
        if short < self.seq_q:
            raise UsageError(
                f"a serving cache holds each sequence's {self.seq_q} new token(s) at its end: a KV length of {short} "
                f"is shorter than seq_q={self.seq_q}"
            )
        refuse = [
            w
            for w, bad in (
                (("mode fwd_bwd", ("mode",)), self.mode != "fwd"),
                (("softcap", ("softcap",)), self.softcap is not None),
                (("alibi", ("alibi",)), self.alibi),
                (("mask_mod or score_mod", ("mask_mod", "score_mod")), bool(self.mask_mod or self.score_mod)),
            )
            if bad
        ]
        if refuse:
            drop, named = refuse[0]
            raise UsageError(
                f"a serving cache (page_size or kv_lens) is measured forward and plain: drop {drop}",
                fields=("page_size", "kv_lens", *named),
            )
        if self.mask is None:  # causal by default: the new tokens are the last of each sequence
            object.__setattr__(self, "mask", "causal_lower_right" if self.causal else "none")
        m = parse_mask(str(self.mask))
        if not (m.kind == "none" or (m.kind == "causal" and (m.align == "lower_right" or self.seq_q == 1))):
            raise UsageError(
                f"a serving cache (page_size or kv_lens) takes mask causal_lower_right (the default) or none, "
                f"not {m.canonical}: each sequence's new tokens are the last of its cache",
                fields=("page_size", "kv_lens", "mask"),
            )
        if m.kind == "causal":
            object.__setattr__(self, "mask", "causal_lower_right")

    @property
    def is_serving(self) -> bool:
        """A paged or ragged KV cache (attnscope.core.serving), measured by the serving variants."""
        return self.page_size is not None or self.kv_lens is not None

    @property
    def kv_lengths(self) -> tuple[int, ...]:
        """Each sequence's KV length: ``kv_lens`` resolved, else ``seq_kv`` for every sequence."""
        if self.kv_lens is not None:
            return serving.parse_kv_lens(self.kv_lens).resolve(self.batch)
        return (self.num_seq_kv,) * self.batch

    @property
    def serving_kind(self) -> str | None:
        """decode, verify or prefill_chunk (attnscope.core.serving.serving_kind); None for a dense case."""
        return serving.serving_kind(self.seq_q) if self.is_serving else None

    def _check_mask(self) -> None:
        if self.softcap is not None:
            # a cap the dtype cannot hold turns c·tanh(s/c) into inf·0: NaN scores
            why = number_problem(self.softcap, strict=True, maximum=DTYPE_MAX[self.dtype])
            if why:
                raise UsageError(
                    f"softcap {why}" + (f" (the largest {self.dtype})" if "at most" in why else ""), fields=("softcap",)
                )
        spec = parse_mask(self.mask) if self.mask is not None else self.mask_spec  # as asked: its canonical text
        stated = None if self.mask is not None else (CAUSAL_STATED if self.causal else None)
        check_mask(spec, self.batch, self.seq_q, self.num_seq_kv, alibi=self.alibi, stated=stated)
        if self.mask is not None:  # frozen: normalise once, here
            object.__setattr__(self, "mask", spec.canonical)
            object.__setattr__(self, "causal", spec.is_top_left_causal(self.seq_q, self.num_seq_kv))

    @property
    def mask_spec(self) -> MaskSpec:
        if self.mask is not None:  # the numbers within the shapes (a window past the keys: the same mask)
            return parse_mask(self.mask).fitted(self.seq_q, self.num_seq_kv)
        return MaskSpec("causal" if self.causal else "none")

    @property
    def mask_label(self) -> str:
        """The mask and score modifications in words, e.g. 'sliding:128 softcap=30 alibi'."""
        return "".join(f.label(self) for f in FIELDS if f.masking).strip()

    @property
    def num_kv_heads(self) -> int:
        return self.kv_heads if self.kv_heads is not None else self.heads

    @property
    def num_seq_kv(self) -> int:
        return self.seq_kv if self.seq_kv is not None else self.seq_q

    @property
    def is_gqa(self) -> bool:
        return self.num_kv_heads != self.heads

    def label(self) -> str:
        """'B=1 H=8 KV=2 S=512x1024 D=64 bf16 sliding:128 fwd+bwd on cpu': each field's part, in table order."""
        return "".join(f.label(self) for f in FIELDS)

    def to_dict(self) -> dict[str, Any]:
        """The JSON: each field under its key, in the dataclass's order (documents written before keep theirs)."""
        out = {}
        for f in dataclasses.fields(self):
            v = getattr(self, f.name)
            if v is None and FIELD[f.name].omit_none:  # absent unless given: the dict (and a job's key) as before
                continue
            out[FIELD[f.name].json_key] = v
        return out

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Case:
        """From the JSON; keys it does not know are passed over (a newer writer's), missing ones take defaults."""
        return cls(**{f.name: d[f.json_key] for f in FIELDS if f.json_key in d})


@dataclass(frozen=True)
class Flag:
    """One spelling of a field on the command line: ``add_argument(name, help=help, **options)``, with ``read`` (the
    library's reader of its text, raising UsageError) as its argparse type when given."""

    name: str
    help: str | None = None
    options: Mapping[str, Any] = field(default_factory=dict)
    exclusive: bool = False  # in the command's one mutually exclusive group (--causal | --no-causal | --mask)
    read: Callable[[str], Any] | None = None


Command = Literal["run", "sweep"]


@dataclass(frozen=True)
class CaseField:
    """One field of :class:`Case` and everything that speaks of it."""

    name: str  # the attribute of Case
    type: str  # its annotation
    run: tuple[Flag, ...]  # run, guess and variants: one value (the first flag names it, e.g. --seq)
    sweep: tuple[Flag, ...]  # sweep: a comma list or a range of values (or, for the device, where jobs run)
    label: Callable[[Case], str]  # its part of Case.label(), with its separator ('' when it says nothing)
    file: Callable[[Case], str]  # its part of a trace file name, with its separator
    policy_rank: int  # the recommender names axes in this order: the most telling first
    default: Mapping[str, Any] = field(default_factory=dict)  # per device kind; empty: Case's own default
    axis: Callable[[str], list[Any]] | None = None  # a sweep's text → its values; None: not a sweep axis
    axis_default: tuple[Any, ...] | None = None  # Axes' values when a sweep leaves it out; None: Case's default
    sweep_default: Mapping[str, str] = field(default_factory=dict)  # the sweep command's text per device kind
    excludes: tuple[str, str] | None = None  # (an axis given with it, the message refusing both, naming the two)
    short: str | None = None  # its name in a grid point: 'S' of 'S=512' (None: the point leaves it out)
    symbol: str | None = None  # the recommender's: 'S', 'H_kv'
    numeric: bool = False  # ordered by value: the recommender's policy may say ≤ and ≥ of it
    follows: str | None = None  # None stands for this field's value (seq_kv → seq_q)
    masking: bool = False  # part of the mask label (the mask and the score modifications)
    coerce: Callable[[Any], Any] | None = None  # a value given to make_case → the Case's (an alias → its name)
    json_key: str = ""  # "" : the name
    omit_none: bool = False  # left out of the JSON when None (fields added after documents were written)
    typed: Callable[[Any], str] | None = None  # a value of its axis as its sweep flag takes it (None: as written)

    def __post_init__(self) -> None:
        if not self.json_key:
            object.__setattr__(self, "json_key", self.name)

    @property
    def flag(self) -> str:
        return self.run[0].name

    @property
    def dest(self) -> str:
        """The attribute the parsed flags hold it in, and the name of its axis: ``seq`` for seq_q."""
        return self.flag.removeprefix("--").replace("-", "_")

    def flags(self, command: Command) -> tuple[Flag, ...]:
        return self.run if command == "run" else self.sweep

    def case_default(self) -> Any:
        f = next(f for f in dataclasses.fields(Case) if f.name == self.name)
        return f.default

    def axis_values(self) -> list[Any]:
        return list(self.axis_default) if self.axis_default is not None else [self.case_default()]


def _int_field(name: str, flag: str, limit: int, run_help: str | None, sweep_help: str, **kw: Any) -> CaseField:
    """A whole-number field: --flag N in run, '512,1024' or '512..16384x2' in sweep."""
    dest = flag.removeprefix("--").replace("-", "_")  # the axis's name (seq, head_dim): what its errors call it
    return CaseField(
        name=name,
        run=(Flag(flag, run_help, read=partial(read_whole, limit=limit)),),
        sweep=(Flag(flag, sweep_help), *kw.pop("sweep_more", ())),
        axis=partial(text.parse_int_axis, dest, limit=limit),
        numeric=True,
        **kw,
    )


def _kv_label(c: Case) -> str:
    return f" KV={c.num_kv_heads}" if c.is_gqa else ""


def _skv(c: Case) -> str:
    return f"x{c.num_seq_kv}" if c.num_seq_kv != c.seq_q else ""


def _page_label(c: Case) -> str:
    """' decode paged:16' for a serving case (its kind: decode, verify, prefill_chunk), '' for a dense one."""
    if not c.is_serving:
        return ""
    return f" {c.serving_kind}" + (f" paged:{c.page_size}" if c.page_size is not None else " packed")


MAX_PAGE = 1 << 16


def _causal(c: Case) -> bool:
    return c.mask is None and c.causal  # a mask says its causal part itself


BUDGET_TOKENS = partial(read_whole, limit=MAX_BUDGET_TOKENS)  # sweep's other spelling of the batch axis: B = N / S
DEVICE_HELP = "cpu or cuda[:N] (default: cuda if available, else cpu)"

# In the order a label and a file name give them, and the order of a sweep's product (the last varies fastest).
# fmt: off
FIELDS: tuple[CaseField, ...] = (
    _int_field(
        "batch", "--batch", MAX_DIM["batch"], None,
        "batch sizes (default 1 on CPU; on GPU --budget-tokens 16384 sets them)",
        sweep_more=(Flag("--budget-tokens", "batch = N / seq (B·S kept)", read=BUDGET_TOKENS),),
        type="int", label=lambda c: f"B={c.batch}", file=lambda c: f"-b{c.batch}", short="B", symbol="B",
        default={"cpu": 1, "cuda": 4}, axis_default=(1,), sweep_default={"cpu": "1"}, policy_rank=9,
    ),
    _int_field(
        "heads", "--heads", MAX_DIM["heads"], None, "query heads (default 8 on CPU, 16 on GPU)",
        type="int", label=lambda c: f" H={c.heads}", file=lambda c: f"-h{c.heads}", short="H", symbol="H",
        default={"cpu": 8, "cuda": 16}, axis_default=(16,), sweep_default={"cpu": "8", "cuda": "16"}, policy_rank=6,
    ),
    _int_field(
        "kv_heads", "--kv-heads", MAX_DIM["kv_heads"], "KV heads for GQA", "KV heads for GQA (default: = heads)",
        type="int | None", label=_kv_label, file=lambda c: f"-kv{c.num_kv_heads}" if c.is_gqa else "",
        short="KV", symbol="H_kv", follows="heads", policy_rank=7,
    ),
    _int_field(
        "seq_q", "--seq", MAX_DIM["seq"], "query sequence length",
        "query lengths (default 128..512x2 on CPU, 256..8192x2 on GPU)",
        type="int", label=lambda c: f" S={c.seq_q}", file=lambda c: f"-s{c.seq_q}", short="S", symbol="S",
        default={"cpu": 512, "cuda": 2048}, axis_default=(1024,),
        sweep_default={"cpu": "128..512x2", "cuda": "256..8192x2"}, policy_rank=1,
    ),
    _int_field(
        "seq_kv", "--seq-kv", MAX_DIM["seq_kv"], "key/value sequence length (default: = seq)",
        "key/value lengths (default: = seq)",
        type="int | None", label=_skv, file=_skv, short="Skv", symbol="S_kv", follows="seq_q", policy_rank=8,
    ),
    _int_field(
        "head_dim", "--head-dim", MAX_HEAD_DIM, None, "head dims (default 64 on CPU, 64,128 on GPU)",
        type="int", label=lambda c: f" D={c.head_dim}", file=lambda c: f"-d{c.head_dim}", short="D", symbol="D",
        default={"cpu": 64, "cuda": 64}, axis_default=(64,), sweep_default={"cpu": "64", "cuda": "64,128"},
        policy_rank=2,
    ),
    CaseField(
        "dtype", "DType",
        run=(Flag("--dtype", "bf16, fp16 or fp32"),),
        sweep=(Flag("--dtype", "comma list of bf16, fp16, fp32 (default bf16)"),),
        label=lambda c: f" {c.dtype}", file=lambda c: f"-{c.dtype}", axis=text.parse_dtype_axis, policy_rank=5,
        coerce=text.parse_dtype,
    ),
    CaseField(
        "causal", "bool",
        run=(
            Flag("--causal", "shorthand for --mask causal", {"action": "store_true", "default": None}, exclusive=True),
            Flag("--no-causal", "shorthand for --mask none", {"dest": "causal", "action": "store_false"}, True),
        ),
        sweep=(Flag("--causal", "yes, no or both (default yes on CPU, both on GPU)"),),
        label=lambda c: " causal" if _causal(c) else "", file=lambda c: "-causal" if _causal(c) else "",
        axis=text.parse_causal, sweep_default={"cpu": "yes", "cuda": "both"}, masking=True, policy_rank=3,
    ),
    CaseField(
        "mask", "str | None",
        run=(Flag("--mask", f"{MASK_HELP}; with seq != seq-kv say the alignment (docs/mask_reference.md)",
                  exclusive=True),),
        sweep=(Flag("--mask", "comma list of masks, e.g. none,sliding:256,document:1000,1500,600,996 (an entry "
                    "starts at a mask name; replaces --causal)"),),
        label=lambda c: f" {c.mask}" if c.mask is not None else "",
        file=lambda c: f"-mask-{c.mask}" if c.mask is not None else "",
        axis=text.parse_mask_axis, short="mask", masking=True, policy_rank=4,
        excludes=("causal", "mask and causal both set the masking: give one of them"),
    ),
    CaseField(
        "softcap", "float | None",
        run=(Flag("--softcap", "tanh soft-capping of the scores: c·tanh(s/c) (Gemma 2: 50)",
                  read=partial(read_number, strict=True)),),
        sweep=(Flag("--softcap", "comma list of soft-caps, 0 for none (e.g. 0,30)"),),
        label=lambda c: f" softcap={c.softcap:g}" if c.softcap is not None else "",
        file=lambda c: f"-cap{c.softcap:g}" if c.softcap is not None else "",
        axis=text.parse_softcap_axis, short="softcap", numeric=True, masking=True, policy_rank=10,
    ),
    CaseField(
        "alibi", "bool",
        run=(Flag("--alibi", "add ALiBi slopes to the scores", {"action": "store_true", "default": None}),),
        sweep=(Flag("--alibi", "no, yes, both, or a comma list of them (default no)"),),
        label=lambda c: " alibi" if c.alibi else "", file=lambda c: "-alibi" if c.alibi else "",
        axis=text.parse_alibi_axis, short="alibi", masking=True, policy_rank=11,
    ),
    CaseField(
        "mode", "Mode",
        run=(Flag("--mode", "fwd, or fwd_bwd: forward and backward (dq, dk, dv) per call", {"choices": MODES}),),
        sweep=(Flag("--mode", "comma list of fwd, fwd_bwd (default fwd)"),),
        label=lambda c: " fwd+bwd" if c.mode == "fwd_bwd" else "", file=lambda c: f"-{c.mode}",
        axis=partial(text.parse_choice_axis, "mode", choices=MODES), policy_rank=0,
    ),
    CaseField(
        "mask_mod", "str | None",
        run=(Flag("--mask-mod", "FILE.py:FN, your flex mask_mod (or a factory of the device): measured with flex. "
                  "FILE.py is imported, so its code runs (after every other check has passed): name only code you "
                  "trust"),),
        sweep=(),  # run only: a user's mask is usually written for one shape
        label=lambda c: f" mask_mod={c.mask_mod.rsplit('/', 1)[-1]}" if c.mask_mod else "",
        file=lambda c: f"-mm-{c.mask_mod.rsplit('/', 1)[-1]}" if c.mask_mod else "", policy_rank=13, omit_none=True,
    ),
    CaseField(
        "score_mod", "str | None",
        run=(Flag("--score-mod", "FILE.py:FN, your flex score_mod (or a factory of the device), as the flags; "
                  "FILE.py is imported and its code runs, as with --mask-mod"),),
        sweep=(),
        label=lambda c: f" score_mod={c.score_mod.rsplit('/', 1)[-1]}" if c.score_mod else "",
        file=lambda c: f"-sm-{c.score_mod.rsplit('/', 1)[-1]}" if c.score_mod else "", policy_rank=14, omit_none=True,
    ),
    CaseField(
        "page_size", "int | None",
        run=(Flag("--page-size", "a paged KV cache: tokens per page, behind a shuffled block table (docs/serving.md)",
                  read=partial(read_whole, limit=MAX_PAGE)),),
        sweep=(Flag("--page-size", "comma list of page sizes, 0 for a contiguous cache (e.g. 0,16,64)"),),
        label=_page_label, file=lambda c: f"-p{c.page_size}" if c.page_size is not None else "",
        axis=text.parse_page_axis, short="page", symbol="P", numeric=True, policy_rank=15, omit_none=True,
    ),
    CaseField(
        "kv_lens", "str | None",
        run=(Flag("--kv-lens", serving.KV_LENS_HELP + "; sets seq-kv to the longest"),),
        sweep=(Flag("--kv-lens", "entries start at uniform: or list:, e.g. uniform:1024..32768@0,list:512,4096"),),
        label=lambda c: f" kv_lens={c.kv_lens}" if c.kv_lens is not None else "",
        file=lambda c: serving.kv_lens_file_part(c.kv_lens) if c.kv_lens is not None else "",
        axis=serving.parse_kv_lens_axis, short="kv_lens", symbol="L_kv", policy_rank=16, omit_none=True,
        typed=serving.kv_lens_typed,
        excludes=("seq_kv", "kv_lens sets each sequence's KV length (seq_kv is the longest): give one of them"),
    ),
    CaseField(
        "device", "str",
        run=(Flag("--device", DEVICE_HELP),),
        sweep=(Flag("--device", DEVICE_HELP),),  # not an axis: one device per sweep, among "where jobs run"
        label=lambda c: f" on {c.device}", file=lambda c: "", policy_rank=12,
    ),
)
# fmt: on
FIELD: dict[str, CaseField] = {f.name: f for f in FIELDS}
# The whole-number fields and their limits (the flags' limits too), checked by Case itself for a library caller.
_WHOLE = {
    "batch": MAX_DIM["batch"],
    "heads": MAX_DIM["heads"],
    "kv_heads": MAX_DIM["kv_heads"],
    "seq_q": MAX_DIM["seq"],
    "seq_kv": MAX_DIM["seq_kv"],
    "head_dim": MAX_HEAD_DIM,
    "page_size": MAX_PAGE,
}
AXIS_FIELDS: tuple[CaseField, ...] = tuple(f for f in FIELDS if f.axis is not None)


def run_flags(d: Mapping[str, Any]) -> str:
    """The ``attnscope run`` flags that measure the case of the JSON ``d`` (a row's ``case``): each field it gives a
    value, as the table spells it (the causal flag only where no mask is given, seq-kv only without kv-lens), for
    advice that says how to measure what it did not."""
    parts = []
    for f in FIELDS:
        v = d.get(f.json_key)
        if v is None or not f.run:
            continue
        if f.name == "causal":
            if d.get("mask") is None:
                parts.append("--causal" if v else "--no-causal")
        elif f.name == "alibi":
            parts += ["--alibi"] if v else []
        elif not (f.name == "seq_kv" and d.get("kv_lens") is not None):
            parts.append(f"{f.flag} {shlex.quote(str(v))}")
    return " ".join(parts)


def device_kind(device: str) -> str:
    return "cuda" if device.startswith("cuda") else "cpu"


def default_fields(device: str) -> dict[str, Any]:
    """The fields whose default depends on the device, for ``device``."""
    kind = device_kind(device)
    return {f.name: f.default[kind] for f in FIELDS if kind in f.default}


def file_stem(case: Case) -> str:
    """Each field's part of a trace file name: '-b1-h8-kv2-s512x1024-d64-bf16-mask-sliding:128-cap30-alibi-fwd'."""
    return "".join(f.file(case) for f in FIELDS)


@dataclass(frozen=True)
class RecommenderAxes:
    """What the recommender needs of the case's fields, from the table."""

    policy: tuple[str, ...]  # the order a policy names axes in: the most telling first
    label: tuple[str, ...]  # the order a case label names them in
    symbol: dict[str, str]  # 'seq_q' → 'S'
    numeric: frozenset[str]  # ordered by value: a policy may say ≤ / ≥ of these
    twin: dict[str, str]  # filled in from these where the case leaves them out: 'seq_kv' → 'seq_q'


def recommender_axes() -> RecommenderAxes:
    """The fields a sweep can vary (a run-only field, such as the user's mask_mod, is no axis of a policy)."""
    fields = [f for f in FIELDS if f.sweep]
    return RecommenderAxes(
        policy=tuple(f.name for f in sorted(fields, key=lambda f: f.policy_rank)),
        label=tuple(f.name for f in fields),
        symbol={f.name: f.symbol for f in FIELDS if f.symbol},
        numeric=frozenset(f.name for f in FIELDS if f.numeric),
        twin={f.name: f.follows for f in FIELDS if f.follows},
    )
