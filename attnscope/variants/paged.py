"""The serving variants: attention over a paged or packed KV cache (attnscope.workloads.paged_cache).

Each is a :class:`Server` bound to one cache.  ``plan(capacity)`` is the work a new shape costs (a gather index,
a BlockMask, FlashInfer's ``plan()``), sized for KV lengths up to ``capacity``; ``call()`` is the attention for
the lengths the cache's ``seq_lens`` tensor holds now.  A run plans once for the case's lengths (outside the
timed call); the decode loop (attnscope.execute.serve) plans per step or per shape bucket, and times it.

- ``paged_gather_sdpa``: the baseline that copies: each sequence's pages gathered (``index_select``) into a
  dense ``[B, H_kv, capacity, D]`` K and V, then SDPA with a boolean mask of each sequence's keys;
- ``paged_gather_flash``, ``_fa3``, ``_fa4``: the same gather, then SDPA's flash backend (with
  ``torch.nn.attention.activate_flash_attention_impl`` for FA3/FA4 where torch registers them); flash takes no
  mask, so only a batch of equal lengths whose queries see the whole cache runs;
- ``paged_flex``, ``paged_flex_compiled``: flex_attention straight on the pool (no copy): the queries
  ``[B, H, Sq, D]`` against the pool seen as one ``[1, H_kv, pool tokens, D]`` sequence, with a page-table
  mask_mod (the pool token's owner and logical position) and a BlockMask made from the block table
  (:class:`FlexPaged` says how, and which formulation);
- ``paged_flex_triton``, ``_triton_decode``, ``_flash``: compiled flex with ``kernel_options={"BACKEND": …}``;
- ``paged_varlen``: ``torch.nn.attention.varlen.varlen_attn`` with ``block_table`` and ``seqused_k``;
- ``paged_flashinfer``: FlashInfer's ``BatchDecodeWithPagedKVCacheWrapper`` (one query) or
  ``BatchPrefillWithPagedKVCacheWrapper``, ``plan()`` timed apart from the kernel.
"""

from __future__ import annotations

import contextlib
import inspect
import time
from collections.abc import Callable, Iterator
from typing import Any

from attnscope.core.types import Case
from attnscope.variants.base import Inputs, Prepared, Unsupported, Variant, torch_version
from attnscope.variants.external import first_reason, import_reason, lib

# record_function names a loop's trace carries (docs/serving.md): the analysis side finds steps and rebuilds by them
STEP_RANGE = "attnscope.step[{kind}] {index}"
REBUILD_RANGE = "attnscope.rebuild[{what}]"
FLEX_BACKENDS = {"triton": "TRITON", "triton_decode": "TRITON_DECODE", "flash": "FLASH"}
FLASH_IMPLS = ("FA3", "FA4")


def rebuild_range(what: str) -> Any:
    import torch

    return torch.profiler.record_function(REBUILD_RANGE.format(what=what))


class Server:
    """One serving variant on one cache: ``plan`` (per shape), then ``call`` (per step)."""

    rebuild = "nothing"  # what plan() redoes for a new shape, in the words of the advice (docs/serving.md)
    # None: call() reads lengths from device tensors only, so a CUDA graph of it replays for any lengths up to its
    # capacity; else why a graph per bucket would not serve (the decode loop's graph series says it and skips)
    graph_refusal: str | None = None
    # True: a graph series captures call() once and runs plan() on the host before every replay (FlashInfer's
    # use_cuda_graph wrappers: plan() writes the step's page table into fixed device buffers the graph reads)
    plans_each_replay = False

    def __init__(self, case: Case, x: Inputs) -> None:
        self.case, self.x, self.cache = case, x, x.cache
        self.capacity = 0
        self.plan_s: list[float] = []  # host seconds of each plan() (FlashInfer's plan, a BlockMask, an index)

    def plan(self, capacity: int) -> None:
        """The per-shape work for KV lengths up to ``capacity``, with its host time kept."""
        t0 = time.perf_counter()
        self.capacity = capacity
        with rebuild_range(self.rebuild):
            self._plan(capacity)
        if self.x.q.is_cuda:
            import torch

            torch.cuda.synchronize()
        self.plan_s.append(time.perf_counter() - t0)

    def _plan(self, capacity: int) -> None:
        pass

    def call(self) -> Any:
        raise NotImplementedError

    def context(self) -> contextlib.AbstractContextManager[Any]:
        return contextlib.nullcontext()

    def for_graphs(self) -> Server:
        """The server a graph series captures: this one, or one built for capture on the same cache."""
        return self


def _slots(server: Server, capacity: int) -> Any:
    """Each sequence's physical row of logical tokens 0..capacity-1 (``[B, capacity]``, int64), from the device's
    block table or the packed starts; tokens past a sequence's allocation point at row 0 (masked)."""
    import torch

    c, dev = server.cache, server.x.q.device
    pos = torch.arange(capacity, device=dev)
    if c.page_size is None:
        alloc = torch.tensor(c.alloc_lengths, device=dev)[:, None]
        rows = c.starts[:-1, None].long() + pos[None, :]
        return torch.where(pos[None, :] < alloc, rows, 0)
    p = c.page_size
    page = (pos // p).clamp(max=c.block_table.shape[1] - 1)
    return c.block_table.long()[:, page] * p + (pos % p)[None, :]


def _key_mask(server: Server, capacity: int) -> Any:
    """``[B, 1, Sq, capacity]`` bool: query i of sequence b sees key j when j ≤ L_b - Sq + i (causal) or j < L_b,
    read from ``seq_lens`` on the device (so a graph of it serves any lengths)."""
    import torch

    case, dev = server.case, server.x.q.device
    lens = server.cache.seq_lens.long()[:, None, None]
    j = torch.arange(capacity, device=dev)[None, None, :]
    if case.mask_spec.kind == "causal":
        last = lens - case.seq_q + torch.arange(case.seq_q, device=dev)[None, :, None]
        return (j <= last)[:, None]
    return (j < lens).expand(-1, case.seq_q, -1)[:, None]


class GatherSdpa(Server):
    """Gather every sequence's pages into dense K and V (a hidden copy of all of them per call), then SDPA."""

    rebuild = "gather_index"

    def __init__(self, case: Case, x: Inputs, flash_impl: str | None = None, flash: bool = False) -> None:
        super().__init__(case, x)
        self.flash, self.flash_impl = flash or flash_impl is not None, flash_impl
        if self.flash:
            self.graph_refusal = (
                "SDPA flash takes no mask, so a call sized for a bucket would read past each sequence's length"
            )
        hkv, d = case.num_kv_heads, case.head_dim
        self.k_rows = self.cache.k_pool.reshape(-1, hkv, d)  # a view: pages × slots are rows
        self.v_rows = self.cache.v_pool.reshape(-1, hkv, d)

    def _plan(self, capacity: int) -> None:
        self.index = _slots(self, capacity).reshape(-1)

    def call(self) -> Any:
        import torch.nn.functional as F

        b, hkv, d = self.case.batch, self.case.num_kv_heads, self.case.head_dim
        k = self.k_rows.index_select(0, self.index).view(b, self.capacity, hkv, d).transpose(1, 2)
        v = self.v_rows.index_select(0, self.index).view(b, self.capacity, hkv, d).transpose(1, 2)
        mask = None if self.flash else _key_mask(self, self.capacity)  # from seq_lens: any length up to capacity
        kw: dict[str, Any] = {"attn_mask": mask, "scale": self.x.scale}
        if self.case.is_gqa:
            kw["enable_gqa"] = True
        return F.scaled_dot_product_attention(self.x.q, k, v, **kw)

    def context(self) -> contextlib.AbstractContextManager[Any]:
        if not self.flash:
            return contextlib.nullcontext()
        return _flash_context(self.flash_impl)


@contextlib.contextmanager
def _flash_context(impl: str | None) -> Iterator[None]:
    """SDPA forced to flash, under ``impl`` (FA3, FA4) where given; the impl active before is restored."""
    import torch.nn.attention as A
    from torch.nn.attention import SDPBackend, sdpa_kernel

    with sdpa_kernel(SDPBackend.FLASH_ATTENTION):
        if impl is None:
            yield
            return
        A.activate_flash_attention_impl(impl)
        try:
            yield
        finally:
            A.restore_flash_attention_impl()


class FlexPaged(Server):
    """flex_attention on the pool as one long key sequence, no copy: a page-table mask_mod keeps key n for query
    i of sequence b when the pool token n belongs to b at logical position ≤ L_b - Sq + i (causal; < L_b
    otherwise), reading the lengths from ``seq_lens`` when the kernel runs.

    The BlockMask (which key blocks each sequence visits) is the per-shape work, in one of two formulations:

    - ``table``: the key blocks are the pages, and the BlockMask is the block table itself
      (``BlockMask.from_kv_blocks``: each sequence visits the pages that hold its first ``capacity`` tokens), built
      in O(B·pages); for a paged cache whose page size is a multiple of 16;
    - ``pool``: ``create_block_mask`` evaluates the mask_mod over every (query, pool token) pair with the lengths
      raised to ``capacity``, key blocks of 128 tokens (a packed cache, or pages of other sizes).

    Either way every visited block is kept *partial* (the mask_mod runs in each), so a mask planned for a capacity
    serves every shorter length: a decode loop builds it once per bucket instead of once per step."""

    rebuild = "create_block_mask"

    def __init__(
        self, case: Case, x: Inputs, compiled: bool, backend: str | None = None, formulation: str | None = None
    ) -> None:
        import torch

        super().__init__(case, x)
        c, dev = self.cache, x.q.device
        hkv, d = case.num_kv_heads, case.head_dim
        n = c.k_pool.shape[0] * (c.page_size or 1)
        self.k = c.k_pool.reshape(n, hkv, d).permute(1, 0, 2).unsqueeze(0)  # [1, H_kv, pool tokens, D], a view
        self.v = c.v_pool.reshape(n, hkv, d).permute(1, 0, 2).unsqueeze(0)
        owner = torch.full((n,), -1, dtype=torch.int32)
        logical = torch.zeros(n, dtype=torch.int32)
        for b, alloc in enumerate(c.alloc_lengths):  # the table read once: every pool token's sequence and position
            if c.table is None:
                s = int(c.starts[b])
                owner[s : s + alloc] = b
                logical[s : s + alloc] = torch.arange(alloc, dtype=torch.int32)
            else:
                p = c.page_size
                for j, page in enumerate(c.table[b]):
                    owner[page * p : (page + 1) * p] = b
                    logical[page * p : (page + 1) * p] = torch.arange(j * p, (j + 1) * p, dtype=torch.int32)
        self.owner, self.logical = owner.to(dev), logical.to(dev)
        can_table = c.page_size is not None and c.page_size % 16 == 0
        self.formulation = formulation or ("table" if can_table else "pool")
        if self.formulation == "table" and c.page_size is None:
            raise ValueError("the table formulation needs a paged cache")
        self.kv_block = c.page_size if self.formulation == "table" else 128
        self.rebuild = "block_mask_from_table" if self.formulation == "table" else "create_block_mask"
        self.compiled, self.backend = compiled, backend
        from torch.nn.attention.flex_attention import flex_attention

        self.fa = torch.compile(flex_attention, dynamic=False) if compiled else flex_attention
        self.kw: dict[str, Any] = {"scale": x.scale}
        if case.is_gqa:
            self.kw["enable_gqa"] = True
        opts: dict[str, Any] = {}
        if backend is not None:
            opts["BACKEND"] = backend
        if compiled and x.q.is_cuda and self.kv_block < 128:
            # Triton's flex kernel needs its key tile (BLOCK_N) to divide the BlockMask's key block (a page)
            opts["BLOCK_N"] = self.kv_block
        if opts:
            self.kw["kernel_options"] = opts

    def mask_mod(self, lens: Any = None) -> Callable[..., Any]:
        owner, logical, sq = self.owner, self.logical, self.case.seq_q
        lens = self.cache.seq_lens if lens is None else lens
        causal = self.case.mask_spec.kind == "causal"

        def paged(b: Any, h: Any, q_idx: Any, kv_idx: Any) -> Any:
            pos = logical[kv_idx]
            mine = owner[kv_idx] == b
            if causal:
                return mine & (pos <= lens[b] - sq + q_idx)
            return mine & (pos < lens[b])

        return paged

    def _plan(self, capacity: int) -> None:
        import torch
        from torch.nn.attention.flex_attention import BlockMask, create_block_mask

        c, case, dev = self.cache, self.case, self.x.q.device
        n = self.k.shape[2]
        # the lengths any step of this shape may reach: each sequence grows with the longest, up to its allocation
        grow = capacity - max(c.lengths)
        cap = torch.tensor([min(a, m + grow) for a, m in zip(c.alloc_lengths, c.lengths, strict=True)], device=dev)
        q_blocks = -(-case.seq_q // 128)
        if self.formulation == "table":
            p = self.kv_block
            width = c.block_table.shape[1]
            used = (cap + p - 1) // p  # pages holding each sequence's first cap_b tokens
            num = used.to(torch.int32)[:, None, None].expand(case.batch, 1, q_blocks).contiguous()
            # kv_indices spans every key block of the pool (BlockMask's layout): the table first, the rest unread
            pad = torch.zeros(case.batch, n // p, dtype=torch.int32, device=dev)
            pad[:, :width] = c.block_table
            idx = pad[:, None, None, :].expand(case.batch, 1, q_blocks, n // p).contiguous()
        else:
            bm = create_block_mask(
                self.mask_mod(cap), case.batch, None, case.seq_q, n, device=dev, BLOCK_SIZE=(128, 128)
            )
            num, idx = _all_partial(bm)
        # no full block (the mask_mod runs everywhere), given as empty full-block lists: torch 2.13's CPU
        # compiled flex fails to build its C++ kernel when they are None ("'full_kv_num_blocks' was not declared")
        self.block_mask = BlockMask.from_kv_blocks(
            num,
            idx,
            torch.zeros_like(num),
            torch.zeros_like(idx),
            BLOCK_SIZE=(128, self.kv_block),
            mask_mod=self.mask_mod(),
            seq_lengths=(case.seq_q, n),
        )

    def call(self) -> Any:
        return self.fa(self.x.q, self.k, self.v, block_mask=self.block_mask, **self.kw)


def _all_partial(bm: Any) -> tuple[Any, Any]:
    """(kv_num_blocks, kv_indices) of ``bm`` with its full blocks counted as partial ones (the mask_mod then runs in
    every visited block, so lengths read at run time hold): the union of both lists, in block order."""
    import torch

    nkv = bm.kv_indices.shape[-1]
    dense = torch.zeros(*bm.kv_num_blocks.shape, nkv + 1, dtype=torch.bool, device=bm.kv_indices.device)
    for num, idx in ((bm.kv_num_blocks, bm.kv_indices), (bm.full_kv_num_blocks, bm.full_kv_indices)):
        if num is None:
            continue
        valid = torch.arange(idx.shape[-1], device=idx.device) < num[..., None]
        dense.scatter_(-1, torch.where(valid, idx.long(), nkv), True)
    dense = dense[..., :nkv]
    order = torch.argsort((~dense).to(torch.int8), dim=-1, stable=True)  # visited blocks first, in block order
    return dense.sum(-1).to(torch.int32), order.to(torch.int32)


class Varlen(Server):
    """torch.nn.attention.varlen.varlen_attn on the cache itself: ``block_table`` + ``seqused_k`` when paged,
    ``cu_seq_k`` (each sequence's start) + ``seqused_k`` when packed; causal as ``window_size=(-1, 0)``."""

    def __init__(self, case: Case, x: Inputs) -> None:
        import torch

        super().__init__(case, x)
        b, sq, dev = case.batch, case.seq_q, x.q.device
        self.q = x.q.transpose(1, 2).reshape(b * sq, case.heads, case.head_dim).contiguous()  # once, untimed
        self.cu_q = torch.arange(0, (b + 1) * sq, sq, dtype=torch.int32, device=dev)

    def call(self) -> Any:
        from torch.nn.attention.varlen import varlen_attn

        c, case = self.cache, self.case
        kw: dict[str, Any] = {"scale": self.x.scale}
        if "seqused_k" in inspect.signature(varlen_attn).parameters:
            kw["seqused_k"] = c.seq_lens
        elif c.lengths != c.alloc_lengths:  # torch 2.11: each sequence is its whole slot of cu_seq_k
            raise ValueError("this torch's varlen_attn has no seqused_k: it cannot read fewer tokens than each slot")
        if case.mask_spec.kind == "causal":
            kw["window_size"] = (-1, 0)
        if case.is_gqa:
            kw["enable_gqa"] = True
        if c.page_size is not None:
            kw["block_table"] = c.block_table
            cu_k = None
        else:
            cu_k = c.starts
        out: Any = varlen_attn(self.q, c.k_pool, c.v_pool, self.cu_q, cu_k, case.seq_q, self.capacity, **kw)
        return out.view(case.batch, case.seq_q, case.heads, case.head_dim).transpose(1, 2)


class FlashInferPaged(Server):
    """FlashInfer's paged wrappers on the pool (NHD): ``plan()`` takes the page indices, their offsets per sequence
    and the last page's fill, on the host: redone whenever the lengths change (every decode step).  For a graph
    series (decode only) a second wrapper is built with ``use_cuda_graph=True`` on fixed device buffers sized for
    the cache's allocation: captured once, its ``plan()`` rewrites those buffers on the host before every replay,
    as serving engines run it."""

    rebuild = "flashinfer_plan"

    def __init__(self, case: Case, x: Inputs, graphs: bool = False) -> None:
        import torch

        super().__init__(case, x)
        fi = lib("flashinfer")
        self.ws = torch.empty(128 * 1024 * 1024, dtype=torch.uint8, device=x.q.device)
        self.decode = case.seq_q == 1
        self.graph_refusal = (
            None
            if self.decode
            else "its use_cuda_graph wrappers are measured at decode (one query per sequence) only; this case has "
            f"{case.seq_q} queries per sequence"
        )
        if self.decode:
            kw: dict[str, Any] = {}
            if graphs:
                c = x.cache
                assert c is not None and c.page_size is not None
                i32: dict[str, Any] = {"dtype": torch.int32, "device": x.q.device}
                pages = sum(-(-n // c.page_size) for n in c.alloc_lengths)  # every page the loop's last step reads
                kw = {
                    "use_cuda_graph": True,
                    "paged_kv_indptr_buffer": torch.zeros(case.batch + 1, **i32),
                    "paged_kv_indices_buffer": torch.zeros(pages, **i32),
                    "paged_kv_last_page_len_buffer": torch.zeros(case.batch, **i32),
                }
                self.plans_each_replay = True
            self.w = fi.BatchDecodeWithPagedKVCacheWrapper(self.ws, kv_layout="NHD", **kw)
            self.q = x.q[:, :, 0].contiguous()  # [B, H, D], once
        else:
            self.w = fi.BatchPrefillWithPagedKVCacheWrapper(self.ws, kv_layout="NHD")
            self.q = x.q.transpose(1, 2).reshape(-1, case.heads, case.head_dim).contiguous()

    def for_graphs(self) -> Server:
        # a decode server built for graphs plans before every replay: it is its own
        return FlashInferPaged(self.case, self.x, graphs=True) if self.decode and not self.plans_each_replay else self

    def _plan(self, capacity: int) -> None:
        import torch

        c, case, dev = self.cache, self.case, self.x.q.device
        p = c.page_size
        assert p is not None and c.table is not None
        used = [-(-n // p) for n in c.lengths]
        indptr = [0]
        for u in used:
            indptr.append(indptr[-1] + u)
        indices = [page for b, u in enumerate(used) for page in c.table[b][:u]]
        last = [n - (u - 1) * p for n, u in zip(c.lengths, used, strict=True)]
        i32: dict[str, Any] = {"dtype": torch.int32, "device": dev}
        args = (torch.tensor(indptr, **i32), torch.tensor(indices, **i32), torch.tensor(last, **i32))
        dt = self.x.q.dtype
        if self.decode:
            self.w.plan(
                *args, case.heads, case.num_kv_heads, case.head_dim, p, sm_scale=self.x.scale, q_data_type=dt,
                kv_data_type=dt,
            )  # fmt: skip
        else:
            qo = torch.arange(0, (case.batch + 1) * case.seq_q, case.seq_q, **i32)
            self.w.plan(
                qo, *args, case.heads, case.num_kv_heads, case.head_dim, p, causal=case.mask_spec.kind == "causal",
                sm_scale=self.x.scale, q_data_type=dt, kv_data_type=dt,
            )  # fmt: skip

    def call(self) -> Any:
        c, case = self.cache, self.case
        out = self.w.run(self.q, (c.k_pool, c.v_pool))
        if self.decode:
            return out.unsqueeze(2)
        return out.view(case.batch, case.seq_q, case.heads, case.head_dim).transpose(1, 2)


# --------------------------------------------------------------------------------------------- checks


def _flex_check(case: Case) -> str | None:
    return "torch.nn.attention.flex_attention needs torch >= 2.5" if torch_version() < (2, 5) else None


def _flex_backend_check(backend: str) -> Callable[[Case], str | None]:
    def check(case: Case) -> str | None:
        import typing

        from torch.nn.attention import flex_attention as fx

        opts = getattr(fx, "FlexKernelOptions", None)
        if opts is None or "BACKEND" not in typing.get_type_hints(opts):
            import torch

            return f"torch {torch.__version__}'s flex_attention takes no kernel_options BACKEND"
        return _flex_check(case)

    return check


def _varlen_check(case: Case) -> str | None:
    try:
        from torch.nn.attention.varlen import varlen_attn
    except ImportError as e:
        return f"torch.nn.attention.varlen.varlen_attn is not in this torch: {e}"
    params = inspect.signature(varlen_attn).parameters
    # a packed cache read whole needs neither (torch 2.11 has neither; 2.13 has both)
    need = ["seqused_k", "block_table"] if case.page_size is not None else []
    missing = [p for p in need if p not in params]
    import torch

    if missing:
        return (
            f"torch {torch.__version__}'s varlen_attn has no {', '.join(missing)} parameter (paged or used-length KV)"
        )
    if case.is_gqa and "enable_gqa" not in params:  # torch 2.11: K and V must carry every query head
        return (
            f"torch {torch.__version__}'s varlen_attn has no enable_gqa parameter, and this case has "
            f"{case.heads} query heads on {case.num_kv_heads} KV heads"
        )
    return None


def _flash_impl_check(impl: str | None) -> Callable[[Case], str | None]:
    def check(case: Case) -> str | None:
        if impl is None or _flash_mask_check(case):
            return _flash_mask_check(case)
        import torch.nn.attention as A

        if not hasattr(A, "activate_flash_attention_impl"):
            import torch

            return f"torch {torch.__version__} has no torch.nn.attention.activate_flash_attention_impl"
        listed = A.list_flash_attention_impls()
        if impl not in listed:
            return f"torch lists flash attention impls {listed}, not {impl}"
        return None

    return check


def _flash_mask_check(case: Case) -> str | None:
    """SDPA's flash backend takes no attn_mask: only equal lengths whose queries see the whole cache need none."""
    lens = case.kv_lengths
    if len(set(lens)) > 1:
        return "SDPA's flash backend takes no attn_mask, and a ragged batch needs one (each sequence's length)"
    if case.mask_spec.kind == "causal" and case.seq_q > 1:
        return "SDPA's flash backend is causal top-left only (is_causal); the new tokens here are lower-right"
    return None


def _flashinfer_check(case: Case) -> str | None:
    from attnscope.variants.external_nv import FLASHINFER_REQ

    return first_reason(
        import_reason("flashinfer", FLASHINFER_REQ),
        None if case.page_size is not None else "FlashInfer's paged wrappers read pages: give --page-size",
        None if case.dtype in ("fp16", "bf16") else f"FlashInfer takes fp16 or bf16, not {case.dtype}",
    )


# --------------------------------------------------------------------------------------------- prepare


def make_server(name: str, case: Case, x: Inputs) -> Server:
    """The server of variant ``name`` on this cache (the decode loop builds it once and plans per shape)."""
    if name == "paged_gather_sdpa":
        return GatherSdpa(case, x)
    if name == "paged_gather_flash":
        return GatherSdpa(case, x, flash=True)
    if name.startswith("paged_gather_flash_"):
        return GatherSdpa(case, x, flash_impl=name.removeprefix("paged_gather_flash_").upper())
    if name in ("paged_flex", "paged_flex_compiled"):
        return FlexPaged(case, x, compiled=name == "paged_flex_compiled")
    if name.startswith("paged_flex_"):
        return FlexPaged(case, x, compiled=True, backend=FLEX_BACKENDS[name.removeprefix("paged_flex_")])
    if name == "paged_varlen":
        return Varlen(case, x)
    if name == "paged_flashinfer":
        return FlashInferPaged(case, x)
    raise KeyError(name)


def ready_server(name: str, case: Case, x: Inputs) -> tuple[Server, list[str]]:
    """The server of ``name``, planned for the cache's lengths and called once (a compiled variant compiles here).
    Paged flex falls back from the ``table`` formulation to ``pool`` where the first fails, and says so."""
    import warnings

    import torch

    notes: list[str] = []
    s = make_server(name, case, x)
    for attempt in range(2):
        try:
            s.plan(max(x.cache.lengths))
            with s.context(), warnings.catch_warnings():
                warnings.simplefilter("ignore")  # eager flex warns that it is unfused: that is the point of it
                s.call()
            if x.q.is_cuda:
                torch.cuda.synchronize()
            return s, notes
        except torch.cuda.OutOfMemoryError:
            raise
        except Exception as e:
            if attempt or not isinstance(s, FlexPaged) or s.formulation != "table":
                raise
            msg = " ".join(str(e).split())[:300]
            notes.append(f"the table formulation failed ({type(e).__name__}: {msg}); measured with the pool one")
            s = FlexPaged(case, x, compiled=s.compiled, backend=s.backend, formulation="pool")
    raise AssertionError("unreachable")


def _prepare(name: str, what: str) -> Callable[[Case, Inputs], Prepared]:
    def prepare(case: Case, x: Inputs) -> Prepared:
        import torch

        t0 = time.perf_counter()
        try:
            s, notes = ready_server(name, case, x)
        except torch.cuda.OutOfMemoryError:
            raise
        except (RuntimeError, NotImplementedError, ValueError, TypeError, AssertionError, ImportError) as e:
            msg = " ".join(str(e).split())[:500] or type(e).__name__
            raise Unsupported(f"{what} refused: {type(e).__name__}: {msg}") from e
        first = time.perf_counter() - t0
        # the per-shape work's note (plan_ms, rebuild in extra) is the worker's: it knows whether a decode loop ran
        if isinstance(s, GatherSdpa):
            nbytes = 2 * s.index.numel() * s.k_rows[0].numel() * s.k_rows.element_size()
            notes.append(f"the gather copies K and V of every sequence's pages each call: {nbytes:,} B")
        extra: dict[str, Any] = {"cache": x.cache.record, "plan_ms": 1e3 * s.plan_s[-1], "rebuild": s.rebuild}
        if isinstance(s, FlexPaged):
            extra.update(block_size=[128, s.kv_block], formulation=s.formulation)
        return Prepared(
            fn=s.call,
            context=s.context,
            compile_time_s=first if isinstance(s, FlexPaged) and s.compiled else None,
            notes=notes,
            extra=extra,
        )

    return prepare


def _variant(name: str, family: str, description: str, check: Callable[[Case], str | None], **kw: Any) -> Variant:
    return Variant(
        name=name,
        family=family,
        description=description,
        check=check,
        prepare=_prepare(name, kw.pop("what", name)),
        modes=("fwd",),
        serving=True,
        **kw,
    )


_FLEX_REQ = ("torch>=2.5",)
PAGED_VARIANTS: list[Variant] = [
    _variant(
        "paged_gather_sdpa", "sdpa", "gather the pages into dense K, V (a copy per call), then SDPA with a mask",
        lambda c: None, what="SDPA",
    ),
    _variant(
        "paged_gather_flash", "sdpa", "gather the pages, then SDPA forced to flash (equal lengths only: no mask)",
        _flash_impl_check(None), what="SDPA flash", backend="flash",
    ),
    *[
        _variant(
            f"paged_gather_flash_{impl.lower()}", "sdpa",
            f"gather the pages, then SDPA flash under activate_flash_attention_impl({impl!r})",
            _flash_impl_check(impl), what=f"SDPA flash ({impl})", backend="flash", devices=("cuda",),
        )
        for impl in FLASH_IMPLS
    ],
    _variant(
        "paged_flex", "flex", "flex_attention (eager) on the pool with a page-table mask_mod: no copy",
        _flex_check, what="flex_attention", requires=_FLEX_REQ,
    ),
    _variant(
        "paged_flex_compiled", "flex", "torch.compile(flex_attention) on the pool with a page-table BlockMask",
        _flex_check, what="compiled flex_attention", requires=_FLEX_REQ, compiles=True, opt_in_on=("cpu",),
        opt_in_reason="not in the CPU default set: compiling flex takes ~20 s on 2 cores; ask with --variants",
    ),
    *[
        _variant(
            f"paged_flex_{short}", "flex", f"compiled flex on the pool, kernel_options BACKEND={backend}",
            _flex_backend_check(backend), what=f"flex_attention BACKEND={backend}", compiles=True,
            devices=("cuda",), requires=("torch with flex kernel_options BACKEND",),
        )
        for short, backend in FLEX_BACKENDS.items()
    ],
    _variant(
        "paged_varlen", "sdpa", "torch.nn.attention.varlen.varlen_attn with block_table / seqused_k",
        _varlen_check, what="varlen_attn", devices=("cuda",), requires=("torch with varlen_attn(block_table=)",),
    ),
    _variant(
        "paged_flashinfer", "external", "FlashInfer BatchDecode/BatchPrefill WithPagedKVCacheWrapper, plan() apart",
        _flashinfer_check, what="FlashInfer", devices=("cuda",), requires=("flashinfer-python",),
    ),
]  # fmt: skip
