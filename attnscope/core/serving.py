"""The KV cache as a serving engine holds it: per-sequence lengths, pages and the block table.  Pure (no torch).

A *serving case* is a :class:`attnscope.core.case.Case` with ``page_size`` or ``kv_lens`` set:

- ``kv_lens``: the KV length of each sequence of the batch (a ragged batch), as a comma list (one per sequence)
  or a named distribution with a seed, ``uniform:LO..HI[@SEED]``: each length drawn by
  ``random.Random(SEED).randint(LO, HI)`` in batch order (seed 0 when left out).  Without it every sequence
  holds ``seq_kv`` tokens.
- ``page_size``: the cache is paged.  Each sequence keeps ``ceil(L_b / page_size)`` pages; the pool holds
  exactly those pages, scattered as an allocator leaves them: pages ``0..P-1`` shuffled by
  ``random.Random(seed).shuffle`` and handed out in order, sequence 0 first (:func:`block_table`).  Without it
  the sequences lie one after another in one packed buffer (``cu_seqlens``, the varlen layout).

Queries: each sequence brings ``seq_q`` new tokens, the last ``seq_q`` of its ``L_b`` (lower-right causal):
``seq_q == 1`` is decode, 2..8 speculative-decode verification, more a chunk of a chunked prefill.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

from attnscope.core.arguments import UsageError

DISTRIBUTIONS = ("uniform",)
KV_LENS_HELP = "per-sequence KV lengths: L1,L2,... (one per sequence) or uniform:LO..HI[@SEED] (seeded draw)"
_UNIFORM = re.compile(r"^uniform:(\d+)\.\.(\d+)(?:@(\d+))?$", re.ASCII)
PAGE_SEED = 0  # the block table's shuffle (block_table); stated in every result that has a table
MAX_VERIFY_Q = 8  # 2..8 queries: speculative-decode verification

SERVING_KINDS = ("decode", "verify", "prefill_chunk")


def serving_kind(seq_q: int) -> str:
    """What ``seq_q`` new tokens per sequence are in a serving loop: decode (1), speculative-decode
    verification (2..8 draft tokens checked at once), a chunk of a chunked prefill (more)."""
    return "decode" if seq_q == 1 else "verify" if seq_q <= MAX_VERIFY_Q else "prefill_chunk"


@dataclass(frozen=True)
class KvLens:
    """A parsed ``kv_lens``: an explicit list, or a distribution to draw ``batch`` lengths from."""

    lengths: tuple[int, ...] = ()
    dist: str | None = None
    lo: int = 0
    hi: int = 0
    seed: int = 0

    @property
    def canonical(self) -> str:
        if self.dist is None:
            return ",".join(map(str, self.lengths))
        return f"{self.dist}:{self.lo}..{self.hi}@{self.seed}"

    def resolve(self, batch: int) -> tuple[int, ...]:
        """The ``batch`` lengths (a list must have exactly ``batch``)."""
        if self.dist is None:
            if len(self.lengths) != batch:
                raise UsageError(
                    f"kv_lens gives {len(self.lengths)} length(s) for a batch of {batch}", fields=("kv_lens",)
                )
            return self.lengths
        import random  # here, not at the top: hashlib and random are ~2.5 ms of a trace analysis' start-up

        rng = random.Random(self.seed)
        return tuple(rng.randint(self.lo, self.hi) for _ in range(batch))


def parse_kv_lens(text: str, limit: int = 1 << 24) -> KvLens:
    """``1024,2048,512`` or ``uniform:1024..32768@7``; one-line UsageError (naming ``kv_lens``) otherwise."""
    s = text.strip().lower().removeprefix("list:")
    m = _UNIFORM.match(s)
    if m is not None:
        lo, hi, seed = int(m[1]), int(m[2]), int(m[3] or 0)
        if lo < 1 or lo > hi:
            raise UsageError(f"kv_lens {text!r}: uniform:LO..HI needs 1 <= LO <= HI", fields=("kv_lens",))
        if hi > limit:
            raise UsageError(
                f"kv_lens {text!r}: {hi:,} is beyond any case this tool measures (max {limit:,})", fields=("kv_lens",)
            )
        return KvLens(dist="uniform", lo=lo, hi=hi, seed=seed)
    if s.split(":", 1)[0] in DISTRIBUTIONS or ":" in s:
        raise UsageError(f"kv_lens {text!r}: use {KV_LENS_HELP}", fields=("kv_lens",))
    try:
        vals = tuple(int(p) for p in s.split(","))
    except ValueError:
        raise UsageError(f"kv_lens {text!r}: use {KV_LENS_HELP}", fields=("kv_lens",)) from None
    if not vals or min(vals) < 1:
        raise UsageError(f"kv_lens {text!r}: every length must be >= 1", fields=("kv_lens",))
    if max(vals) > limit:
        raise UsageError(
            f"kv_lens {text!r}: {max(vals):,} is beyond any case this tool measures (max {limit:,})",
            fields=("kv_lens",),
        )
    return KvLens(lengths=vals)


def parse_kv_lens_axis(text: str) -> list[str]:
    """A sweep's ``--kv-lens``: entries start at a distribution name (``uniform:1024..4096,uniform:1024..32768``)
    or at ``list:`` (``list:512,1024,list:2048,4096``); bare numbers continue the list before them, and an axis
    that starts with a number is one list.  Each entry in its canonical spelling."""
    entries: list[str] = []
    for part in (p.strip() for p in text.split(",")):
        if not part:
            raise UsageError(f"kv_lens {text!r}: an empty item between commas", fields=("kv_lens",))
        if part.lower().startswith((*(f"{d}:" for d in DISTRIBUTIONS), "list:")) or not entries:
            entries.append(part)
        elif entries[-1].lower().startswith(tuple(f"{d}:" for d in DISTRIBUTIONS)):
            raise UsageError(
                f"kv_lens {text!r}: {part!r} follows a distribution; start a list with list:", fields=("kv_lens",)
            )
        else:
            entries[-1] += "," + part
    return [parse_kv_lens(e).canonical for e in entries]


def kv_lens_typed(canonical: str) -> str:
    """A sweep axis' entry as ``--kv-lens`` takes it: a list after ``list:`` (``list:4,4``), a distribution as it is."""
    return canonical if parse_kv_lens(canonical).dist is not None else f"list:{canonical}"


def kv_lens_file_part(canonical: str) -> str:
    """A trace file name's part: the distribution as written, a list by its length and a short digest."""
    if ":" in canonical:
        return "-kvl-" + canonical.replace(":", "").replace("..", "-").replace("@", "s")
    n = canonical.count(",") + 1
    import hashlib

    return f"-kvl{n}x{hashlib.sha1(canonical.encode()).hexdigest()[:8]}"


def pages_of(length: int, page_size: int) -> int:
    return math.ceil(length / page_size)


def block_table(lengths: tuple[int, ...] | list[int], page_size: int, seed: int = PAGE_SEED) -> list[list[int]]:
    """Each sequence's physical pages, in logical order: pages ``0..P-1`` (P = Σ ceil(L_b / page)) shuffled by
    ``random.Random(seed)`` and dealt out in order, sequence 0 first.  Logical token ``t`` of sequence ``b`` lies
    in physical page ``table[b][t // page_size]`` at slot ``t % page_size``."""
    counts = [pages_of(n, page_size) for n in lengths]
    perm = list(range(sum(counts)))
    import random

    random.Random(seed).shuffle(perm)
    out, at = [], 0
    for c in counts:
        out.append(perm[at : at + c])
        at += c
    return out


def pool_pages(lengths: tuple[int, ...] | list[int], page_size: int) -> int:
    return sum(pages_of(n, page_size) for n in lengths)


def pool_tokens(lengths: tuple[int, ...] | list[int], page_size: int | None) -> int:
    """Token slots the cache holds: whole pages when paged (the last page's empty slots included), else Σ L_b."""
    return sum(lengths) if page_size is None else pool_pages(lengths, page_size) * page_size


def causal_kept(seq_q: int, length: int) -> int:
    """Scores one head of one sequence keeps: its ``seq_q`` queries are the last of its ``length`` tokens
    (lower-right causal), query i sees keys 0..length-seq_q+i: Σ_i (length - seq_q + i + 1)."""
    return seq_q * (length - seq_q) + seq_q * (seq_q + 1) // 2


def table_record(table: list[list[int]], page_size: int, seed: int = PAGE_SEED, keep: int = 4096) -> dict[str, object]:
    """The block table as a result records it: how it was made, its digest, and the table itself when it holds at
    most ``keep`` entries (a 32×2048-page table is rebuilt from the rule and checked by the digest)."""
    import hashlib

    flat = [p for row in table for p in row]
    rec: dict[str, object] = {
        "page_size": page_size,
        "rule": f"pages 0..{len(flat) - 1} shuffled by random.Random({seed}).shuffle, dealt out in batch order",
        "pages_per_sequence": [len(r) for r in table],
        "sha1": hashlib.sha1(",".join(map(str, flat)).encode()).hexdigest(),
    }
    if len(flat) <= keep:
        rec["table"] = table
    return rec
