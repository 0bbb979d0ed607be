"""The same mask written several ways, each timed with compiled flex_attention on one GPU.

Usage (repository root, a CUDA GPU)::

    PYTHONPATH=. python3 benchmarks/gpu/mask_formulations.py OUT.json [--batch 2 --heads 16 --seq 4096 --head-dim 64]

For each mask (document, sliding, prefix) every candidate mask_mod gets its own BlockMask and one
``torch.compile(flex_attention)`` call; outputs are checked equal to the first candidate's (bitwise),
then timed by triton's ``do_bench`` (median, L2 cleared between calls) and by CUDA events (median of
100 back-to-back calls).  ``builtin`` is what attnscope runs for that mask
(``attnscope.variants.mask_mods.mask_mod_for``).  attention-gym's formulations are measured where it
is installed, and said missing otherwise.  docs/results/masks_formulations.md is written from this JSON.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from collections.abc import Callable
from typing import Any


def candidates(kind: str, arg: Any, seq: int, device: str) -> dict[str, Callable[..., Any] | str]:
    """name -> mask_mod, or name -> why it is missing."""
    import torch

    from attnscope.core.masks import parse_mask
    from attnscope.variants.mask_mods import doc_starts, mask_mod_for

    spec = f"document:{','.join(map(str, arg))}" if kind == "document" else f"{kind}:{arg}"
    out: dict[str, Any] = {"builtin": mask_mod_for(parse_mask(spec), seq, seq, device)}
    try:
        import attn_gym.masks as gym
        from attn_gym.masks.document_mask import length_to_offsets
    except ImportError as e:
        gym = None
        out["attn_gym"] = f"attention-gym not installed: {e}"
    if kind == "document":
        lengths = tuple(arg)
        doc = torch.repeat_interleave(torch.arange(len(lengths), device=device), torch.tensor(lengths, device=device))
        start = doc_starts(lengths, device)
        if gym is not None:
            out["attn_gym"] = gym.generate_doc_mask_mod(gym.causal_mask, length_to_offsets(list(lengths), device))
        out["doc_id_lookup"] = lambda b, h, q, k: (doc[q] == doc[k]) & (q >= k)
        out["start_lookup"] = lambda b, h, q, k: (start[q] <= k) & (k <= q)
    elif kind == "sliding":
        w = arg - 1  # sliding:W keeps q - k <= W - 1
        if gym is not None:
            out["attn_gym"] = gym.generate_sliding_window(w)
        out["window_then_causal"] = lambda b, h, q, k: (q - k <= w) & (q >= k)
        out["causal_then_window"] = lambda b, h, q, k: (q >= k) & (q - k <= w)
    elif kind == "prefix":
        if gym is not None:
            out["attn_gym"] = gym.generate_prefix_lm_mask(arg)
        out["plain"] = lambda b, h, q, k: (k < arg) | (q >= k)
    return out


def time_one(fn: Callable[[], Any]) -> dict[str, Any]:
    import torch

    res: dict[str, Any] = {}
    try:
        from triton.testing import do_bench

        res["do_bench_us"] = 1e3 * float(do_bench(fn, warmup=50, rep=300, return_mode="median"))
    except ImportError as e:
        res["do_bench_us"] = None
        res["do_bench_why"] = str(e)
    for _ in range(10):
        fn()
    torch.cuda.synchronize()
    starts = [torch.cuda.Event(enable_timing=True) for _ in range(100)]
    ends = [torch.cuda.Event(enable_timing=True) for _ in range(100)]
    for s, e in zip(starts, ends, strict=True):
        s.record()
        fn()
        e.record()
    torch.cuda.synchronize()
    res["cuda_events_median_us"] = statistics.median(1e3 * s.elapsed_time(e) for s, e in zip(starts, ends, strict=True))
    return res


def measure(args: argparse.Namespace) -> dict[str, Any]:
    import torch
    from torch.nn.attention.flex_attention import create_block_mask, flex_attention

    dev = "cuda"
    b, h, s, d = args.batch, args.heads, args.seq, args.head_dim
    g = torch.Generator(device="cpu").manual_seed(0)
    q, k, v = (torch.randn(b, h, s, d, generator=g).to(dev, torch.bfloat16) for _ in range(3))
    third = s // 4
    doc = [third - 24, third + 476, third - 424, s - (3 * third + 28)]  # 1000,1500,600,996 at S=4096
    if min(doc) < 1:
        doc = [third, third, third, s - 3 * third]
    masks = {"document": doc, "sliding": 256, "prefix": s // 4}
    # one compiled kernel per candidate: each starts from a fresh dynamo cache, so that no candidate runs on a
    # recompile-limited or dynamic-shape fallback of an earlier one (seen on 2026-12-04: the 9th candidate ran eager)
    out: dict[str, Any] = {
        "shape": {"batch": b, "heads": h, "seq": s, "head_dim": d, "dtype": "bf16"},
        "torch": torch.__version__,
        "device": torch.cuda.get_device_name(),
        "method": "compiled flex_attention; triton do_bench median (L2 cleared) and CUDA events median of 100",
        "masks": {},
    }
    for kind, arg in masks.items():
        rows: dict[str, Any] = {}
        first = None
        for name, mod in candidates(kind, arg, s, dev).items():
            if isinstance(mod, str):
                rows[name] = {"missing": mod}
                continue
            torch._dynamo.reset()
            flex = torch.compile(flex_attention, dynamic=False)
            bm = create_block_mask(mod, None, None, s, s, device=dev)
            o = flex(q, k, v, block_mask=bm)
            same = None if first is None else bool(torch.equal(o, first))
            first = o if first is None else first
            row = {"identical_to_first": same, **time_one(lambda bm=bm, flex=flex: flex(q, k, v, block_mask=bm))}
            rows[name] = row
            print(f"{kind:9s} {name:20s} {row.get('do_bench_us')!s:>22s} do_bench µs, "
                  f"{row['cuda_events_median_us']:.1f} events µs, same={same}", flush=True)  # fmt: skip
        label = f"document:{','.join(map(str, doc))}" if kind == "document" else f"{kind}:{arg}"
        out["masks"][label] = rows
    return out


def main(argv: list[str]) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("out", help="JSON file to write")
    p.add_argument("--batch", type=int, default=2)
    p.add_argument("--heads", type=int, default=16)
    p.add_argument("--seq", type=int, default=4096)
    p.add_argument("--head-dim", type=int, default=64)
    args = p.parse_args(argv)
    res = measure(args)
    with open(args.out, "w") as f:
        json.dump(res, f, indent=1)
    print(f"written {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
