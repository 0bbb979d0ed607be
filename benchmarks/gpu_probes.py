"""Facts attnscope's tables rest on, read on the GPU itself (run by benchmarks/gpu_study.sh).

- which GEMM kernels an fp32 matmul launches (tensor cores or CUDA-core ffma?);
- whether the Triton kernel of compiled flex_attention issues MMA instructions;
- torch's own reasons for rejecting each SDPA backend on a few cases.
"""

from __future__ import annotations

import glob
import os
import warnings

import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel
from torch.profiler import ProfilerActivity, profile


def kernels_of(fn):
    fn()
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as p:
        fn()
        torch.cuda.synchronize()
    return sorted({e.name for e in p.events() if e.device_type.name == "CUDA"})


def main() -> None:
    print("== fp32 matmul kernels (allow_tf32 =", torch.backends.cuda.matmul.allow_tf32, ")")
    a = torch.randn(2048, 2048, device="cuda")
    for k in kernels_of(lambda: a @ a):
        print("  ", k)
    print("== bf16 bmm kernels")
    b = torch.randn(8, 1024, 128, device="cuda", dtype=torch.bfloat16)
    for k in kernels_of(lambda: b @ b.transpose(1, 2)):
        print("  ", k)

    print("== triton flex kernel: MMA instructions in its PTX?")
    from torch.nn.attention.flex_attention import create_block_mask, flex_attention

    q = torch.randn(1, 8, 1024, 64, device="cuda", dtype=torch.bfloat16)
    bm = create_block_mask(lambda b, h, i, j: i >= j, None, None, 1024, 1024, device="cuda")
    torch.compile(flex_attention)(q, q, q, block_mask=bm)
    torch.cuda.synchronize()
    roots = [os.environ.get("TRITON_CACHE_DIR", os.path.expanduser("~/.triton/cache")), "/tmp"]
    seen = 0
    for root in roots:
        for ptx in glob.glob(os.path.join(root, "**", "*flex_attention*.ptx"), recursive=True):
            txt = open(ptx).read()
            seen += 1
            print(f"  {os.path.basename(ptx)}: wgmma={txt.count('wgmma.mma_async')} mma.sync={txt.count('mma.sync')}")
    if not seen:
        print("  no flex PTX found under", roots)

    print("== SDPA backend rejections (torch's own messages)")
    cases = {
        "D=512 bf16": dict(B=1, H=4, S=256, D=512, dt=torch.bfloat16),
        "D=64 fp32": dict(B=1, H=4, S=256, D=64, dt=torch.float32),
        "D=64 bf16 GQA 16/4": dict(B=1, H=16, S=256, D=64, dt=torch.bfloat16, KV=4),
        "D=96 bf16": dict(B=1, H=4, S=256, D=96, dt=torch.bfloat16),
    }
    for label, c in cases.items():
        qq = torch.randn(c["B"], c["H"], c["S"], c["D"], device="cuda", dtype=c["dt"])
        kv = torch.randn(c["B"], c.get("KV", c["H"]), c["S"], c["D"], device="cuda", dtype=c["dt"])
        kw = {"is_causal": True}
        if "KV" in c:
            kw["enable_gqa"] = True
        for be in (SDPBackend.CUDNN_ATTENTION, SDPBackend.FLASH_ATTENTION, SDPBackend.EFFICIENT_ATTENTION):
            with warnings.catch_warnings(record=True) as w:
                warnings.simplefilter("always")
                try:
                    with sdpa_kernel(be):
                        F.scaled_dot_product_attention(qq, kv, kv, **kw)
                    res = "ok"
                except RuntimeError as e:
                    res = "ERR " + " ".join(str(e).split())[:200]
            msgs = [" ".join(str(x.message).split())[:300] for x in w]
            print(f"  [{label}] {be.name}: {res}")
            for m in msgs:
                print("      W:", m)
        with profile(activities=[ProfilerActivity.CPU]) as p:
            F.scaled_dot_product_attention(qq, kv, kv, **kw)
        ops = [e.name for e in p.events() if "attention" in e.name or "flash" in e.name]
        print(f"  [{label}] default picks: {ops}")
    print("== sdpa priority order:", getattr(torch._C, "_get_sdp_priority_order", lambda: "n/a")())


if __name__ == "__main__":
    main()
