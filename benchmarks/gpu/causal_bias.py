"""What SDPA runs for is_causal and the CausalBias masks, backend by backend: kernel names (torch profiler) and
CUDA-event µs per call, at a decode, a chunked-prefill and a prefill shape, bf16.
Usage: python3 benchmarks/gpu/causal_bias.py OUT.json  (each closure runs inside its own loop turn)
"""

# ruff: noqa: B023, BLE001

import json
import sys

import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel
from torch.nn.attention.bias import causal_lower_right, causal_upper_left
from torch.profiler import ProfilerActivity, profile

out = {"torch": torch.__version__, "device": torch.cuda.get_device_name(), "cases": []}


def kernels(fn):
    fn()
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA, ProfilerActivity.CPU]) as p:
        fn()
        torch.cuda.synchronize()
    ks = [e.name for e in p.events() if e.device_type == torch.autograd.DeviceType.CUDA]
    ops = sorted({e.name for e in p.events() if e.name.startswith("aten::")})
    st = torch.cuda.Event(enable_timing=True)
    en = torch.cuda.Event(enable_timing=True)
    for _ in range(5):
        fn()
    st.record()
    for _ in range(50):
        fn()
    en.record()
    torch.cuda.synchronize()
    return ks, ops, st.elapsed_time(en) / 50 * 1000


shapes = [
    ("decode B8 H32 KV8 Sq1 Sk8192 D128", 8, 32, 8, 1, 8192, 128),
    ("prefill B2 H16 Sq4096 Sk4096 D64", 2, 16, 16, 4096, 4096, 64),
    ("chunk B2 H16 Sq512 Sk4096 D64", 2, 16, 16, 512, 4096, 64),
]
backs = {
    "default": None,
    "flash": SDPBackend.FLASH_ATTENTION,
    "efficient": SDPBackend.EFFICIENT_ATTENTION,
    "cudnn": SDPBackend.CUDNN_ATTENTION,
    "math": SDPBackend.MATH,
}
for label, B, H, KV, Sq, Sk, D in shapes:
    q = torch.randn(B, H, Sq, D, device="cuda", dtype=torch.bfloat16)
    k = torch.randn(B, KV, Sk, D, device="cuda", dtype=torch.bfloat16)
    v = torch.randn_like(k)
    if KV != H:
        k = k.repeat_interleave(H // KV, 1)
        v = v.repeat_interleave(H // KV, 1)
    for mname, mk in [
        ("none", lambda: None),
        ("causal_lower_right", lambda: causal_lower_right(Sq, Sk)),
        ("causal_upper_left", lambda: causal_upper_left(Sq, Sk)),
        ("is_causal", "is_causal"),
    ]:
        for bname, be in backs.items():
            if bname == "math" and Sq > 1024:
                continue

            def fn():
                if mk == "is_causal":
                    return F.scaled_dot_product_attention(q, k, v, is_causal=True)
                return F.scaled_dot_product_attention(q, k, v, attn_mask=mk())

            rec = {"shape": label, "mask": mname, "backend": bname}
            try:
                if be is None:
                    ks, ops, us = kernels(fn)
                else:
                    with sdpa_kernel([be]):
                        ks, ops, us = kernels(fn)
                rec.update(kernels=ks, ops=ops, us=round(us, 2))
            except Exception as e:
                rec["error"] = f"{type(e).__name__}: {str(e).splitlines()[0][:200]}"
            out["cases"].append(rec)
            print(
                rec.get("shape"),
                mname,
                bname,
                rec.get("us"),
                len(rec.get("kernels", [])),
                (rec.get("kernels") or [rec.get("error")])[:3],
                flush=True,
            )
json.dump(out, open(sys.argv[1], "w"), indent=1)
