"""A serving case's inputs (a paged or packed KV cache, its block table and lengths) and its fp64 reference.

The layout is the one serving engines and FlashInfer call NHD:

- paged (``page_size`` set): ``k_pool``, ``v_pool`` of shape ``[pages, page_size, H_kv, D]``; the block table
  (:func:`attnscope.core.serving.block_table`) maps each sequence's logical pages to scattered physical ones;
- packed (no ``page_size``): ``[tokens, H_kv, D]``, sequence ``b`` in rows ``starts[b] .. starts[b] + alloc_b``.

The cache is allocated for ``alloc_lengths`` (each sequence's length at the last step of a decode loop) and holds
every one of those tokens from the start; a call reads the first ``lengths[b]`` of sequence ``b`` (the device
tensor ``seq_lens``).  Queries: ``[B, H, seq_q, D]``, the last ``seq_q`` tokens of each sequence.  Needs torch.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from attnscope.core import serving
from attnscope.core.types import Case
from attnscope.variants.base import Inputs

TORCH_DTYPES = {"bf16": "bfloat16", "fp16": "float16", "fp32": "float32"}  # as workloads.attention (no cycle)


@dataclass
class ServingCache:
    """The KV cache of a serving case and what a kernel needs to find each sequence's tokens in it."""

    lengths: tuple[int, ...]  # each sequence's KV length now (what ``seq_lens`` holds)
    alloc_lengths: tuple[int, ...]  # what the cache was allocated for (≥ lengths)
    page_size: int | None
    table: list[list[int]] | None  # the block table as Python lists (paged), None packed
    k_pool: Any
    v_pool: Any
    block_table: Any  # int32 [B, max pages], padded with 0 (paged), None packed
    seq_lens: Any  # int32 [B] on the device, updated in place by set_lengths
    starts: Any  # int32 [B + 1]: each sequence's first row in the packed buffer (packed), None paged

    def set_lengths(self, lengths: tuple[int, ...] | list[int]) -> None:
        """The lengths of the next call (each ≤ its allocation), written into ``seq_lens`` in place (a graph
        captured on ``seq_lens`` reads the new values)."""
        import torch

        if any(n > a for n, a in zip(lengths, self.alloc_lengths, strict=True)):
            raise ValueError(f"lengths {list(lengths)} exceed the cache's allocation {list(self.alloc_lengths)}")
        self.lengths = tuple(lengths)
        self.seq_lens.copy_(torch.tensor(self.lengths, dtype=torch.int32))

    @property
    def record(self) -> dict[str, Any]:
        """The cache as a result records it (plain data): lengths, layout, the block table or its rule and digest."""
        out: dict[str, Any] = {"kv_lengths": list(self.lengths), "layout": "paged NHD" if self.page_size else "packed"}
        if self.table is not None and self.page_size is not None:
            out["block_table"] = serving.table_record(self.table, self.page_size)
        out["pool_bytes"] = 2 * self.k_pool.numel() * self.k_pool.element_size()
        return out


def make_serving_inputs(case: Case, seed: int, extra_steps: int = 0) -> Inputs:
    """Seeded queries and a cache for ``case`` on its device, allocated for ``extra_steps`` more tokens per
    sequence (a decode loop's growth); the call reads the case's own lengths."""
    import torch

    g = torch.Generator(device="cpu").manual_seed(seed)
    dt = getattr(torch, TORCH_DTYPES[case.dtype])
    dev = case.device
    lengths = case.kv_lengths
    alloc = tuple(n + extra_steps for n in lengths)
    hkv, d = case.num_kv_heads, case.head_dim

    def rnd(*shape: int) -> Any:
        return torch.randn(*shape, generator=g, dtype=torch.float32).to(device=dev, dtype=dt)

    q = rnd(case.batch, case.heads, case.seq_q, case.head_dim)
    table = None
    bt = starts = None
    if case.page_size is not None:
        p = case.page_size
        table = serving.block_table(alloc, p)
        pages = serving.pool_pages(alloc, p)
        k, v = rnd(pages, p, hkv, d), rnd(pages, p, hkv, d)
        width = max(len(r) for r in table)
        bt = torch.tensor([r + [0] * (width - len(r)) for r in table], dtype=torch.int32, device=dev)
    else:
        total = sum(alloc)
        k, v = rnd(total, hkv, d), rnd(total, hkv, d)
        offs = [0]
        for a in alloc:
            offs.append(offs[-1] + a)
        starts = torch.tensor(offs, dtype=torch.int32, device=dev)
    cache = ServingCache(
        lengths=lengths,
        alloc_lengths=alloc,
        page_size=case.page_size,
        table=table,
        k_pool=k,
        v_pool=v,
        block_table=bt,
        seq_lens=torch.tensor(lengths, dtype=torch.int32, device=dev),
        starts=starts,
    )
    return Inputs(q=q, k=k, v=v, scale=case.head_dim**-0.5, cache=cache)


def sequence_kv(cache: ServingCache, b: int) -> tuple[Any, Any]:
    """Sequence ``b``'s first ``lengths[b]`` keys and values, ``[L_b, H_kv, D]``, read page by page through the
    Python block table (or its rows of the packed buffer): the reference's own walk, no kernel's indexing."""
    import torch

    n = cache.lengths[b]
    if cache.page_size is None or cache.table is None:
        s = sum(cache.alloc_lengths[:b])
        return cache.k_pool[s : s + n], cache.v_pool[s : s + n]
    p = cache.page_size
    ks, vs = [], []
    for j in range(serving.pages_of(n, p)):
        page = cache.table[b][j]
        take = min(p, n - j * p)
        ks.append(cache.k_pool[page, :take])
        vs.append(cache.v_pool[page, :take])
    return torch.cat(ks), torch.cat(vs)


def serving_reference(case: Case, x: Inputs) -> Any:
    """fp64 attention per sequence on its own keys (:func:`sequence_kv`), its ``seq_q`` queries the last of its
    ``L_b`` tokens (query i sees keys 0..L_b-seq_q+i when causal, all L_b otherwise): ``[B, H, seq_q, D]``."""
    import torch

    cache = x.cache
    assert cache is not None
    causal = case.mask_spec.kind == "causal"
    group = case.heads // case.num_kv_heads
    out = torch.empty(case.batch, case.heads, case.seq_q, case.head_dim, dtype=torch.float64, device=x.q.device)
    for b in range(case.batch):
        k, v = sequence_kv(cache, b)
        n = k.shape[0]
        kk = k.double().permute(1, 0, 2).repeat_interleave(group, dim=0)  # [H, L_b, D]
        vv = v.double().permute(1, 0, 2).repeat_interleave(group, dim=0)
        s = torch.matmul(x.q[b].double(), kk.transpose(1, 2)) * x.scale  # [H, Sq, L_b]
        if causal:
            qpos = torch.arange(n - case.seq_q, n, device=s.device)[:, None]
            s = s.masked_fill(torch.arange(n, device=s.device)[None, :] > qpos, float("-inf"))
        out[b] = torch.matmul(torch.softmax(s, dim=-1), vv)
    return out
