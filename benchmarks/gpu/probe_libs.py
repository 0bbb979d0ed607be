"""GPU probe: which external attention libraries import and run here, with what kernels.

Also captures a few attnscope traces that the analysis tests need (forward+backward,
flex's eager path with GQA, SDPA math called with enable_gqa=True).  Every step is
guarded: one failure prints its last line and the probe goes on.
Usage: python3 benchmarks/gpu/probe_libs.py OUTDIR
"""

from __future__ import annotations

import inspect
import sys
import time
import traceback
from pathlib import Path

import torch

OUT = Path(sys.argv[1] if len(sys.argv) > 1 else "/tmp/probe")
OUT.mkdir(parents=True, exist_ok=True)
DEV = "cuda"


def step(name):
    def deco(fn):
        t0 = time.perf_counter()
        print(f"\n=== {name}", flush=True)
        try:
            fn()
            print(f"--- {name}: ok in {time.perf_counter() - t0:.1f} s", flush=True)
        except BaseException as e:  # noqa: BLE001 - a probe goes on
            tb = traceback.format_exc().strip().splitlines()
            print("\n".join(tb[-6:]))
            print(f"--- {name}: FAILED ({type(e).__name__}) in {time.perf_counter() - t0:.1f} s", flush=True)
        return fn

    return deco


def kernels_of(fn, label):
    from torch.profiler import ProfilerActivity, profile

    fn()
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
        fn()
        torch.cuda.synchronize()
    names = [e for e in prof.events() if e.device_type.name == "CUDA"]
    print(f"  [{label}] {len(names)} device events:")
    for e in names[:12]:
        print(f"    {e.name[:150]}  {e.device_time:.1f} us")


def time_it(fn, n=20):
    for _ in range(3):
        fn()
    torch.cuda.synchronize()
    s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    s.record()
    for _ in range(n):
        fn()
    e.record()
    torch.cuda.synchronize()
    return s.elapsed_time(e) * 1e3 / n


def sig(obj):
    try:
        return str(inspect.signature(obj))
    except (TypeError, ValueError):
        return "?"


print("torch", torch.__version__, "cuda", torch.version.cuda, "cudnn", torch.backends.cudnn.version())
print(torch.cuda.get_device_name())
B, H, S, D = 2, 8, 1024, 128
dt = torch.bfloat16


@step("flashinfer")
def _fi():
    t0 = time.perf_counter()
    import flashinfer

    print("  version", getattr(flashinfer, "__version__", "?"), f"import {time.perf_counter() - t0:.1f}s")
    print("  single_prefill_with_kv_cache", sig(flashinfer.single_prefill_with_kv_cache))
    print("  single_decode_with_kv_cache", sig(flashinfer.single_decode_with_kv_cache))
    q = torch.randn(S, H, D, device=DEV, dtype=dt)
    k = torch.randn(S, 2, D, device=DEV, dtype=dt)
    v = torch.randn(S, 2, D, device=DEV, dtype=dt)
    t0 = time.perf_counter()
    o = flashinfer.single_prefill_with_kv_cache(q, k, v, causal=True)
    torch.cuda.synchronize()
    print(f"  prefill first call (JIT) {time.perf_counter() - t0:.1f}s out {tuple(o.shape)}")
    kernels_of(lambda: flashinfer.single_prefill_with_kv_cache(q, k, v, causal=True), "prefill S=1024 GQA 8/2")
    print(f"  prefill {time_it(lambda: flashinfer.single_prefill_with_kv_cache(q, k, v, causal=True)):.1f} us")
    kc = torch.randn(8192, 2, D, device=DEV, dtype=dt)
    vc = torch.randn(8192, 2, D, device=DEV, dtype=dt)
    qd = torch.randn(H, D, device=DEV, dtype=dt)
    t0 = time.perf_counter()
    flashinfer.single_decode_with_kv_cache(qd, kc, vc)
    torch.cuda.synchronize()
    print(f"  decode first call (JIT) {time.perf_counter() - t0:.1f}s")
    kernels_of(lambda: flashinfer.single_decode_with_kv_cache(qd, kc, vc), "decode kv=8192 GQA 8/2")
    print(f"  decode {time_it(lambda: flashinfer.single_decode_with_kv_cache(qd, kc, vc)):.1f} us")
    try:
        flashinfer.single_prefill_with_kv_cache(q, k, v, causal=True, window_left=127)
        print("  window_left accepted")
        flashinfer.single_prefill_with_kv_cache(q, k, v, causal=True, logits_soft_cap=30.0)
        print("  logits_soft_cap accepted")
    except Exception as e:  # noqa: BLE001
        print("  extra args:", type(e).__name__, str(e)[:200])


@step("xformers")
def _xf():
    import xformers
    import xformers.ops as xops

    print("  version", xformers.__version__)
    print("  memory_efficient_attention", sig(xops.memory_efficient_attention))
    q = torch.randn(B, S, H, D, device=DEV, dtype=dt)
    k = torch.randn(B, S, H, D, device=DEV, dtype=dt)
    v = torch.randn(B, S, H, D, device=DEV, dtype=dt)
    bias = xops.LowerTriangularMask()
    fn = lambda: xops.memory_efficient_attention(q, k, v, attn_bias=bias)  # noqa: E731
    kernels_of(fn, "xformers causal")
    print(f"  causal {time_it(fn):.1f} us")
    try:
        from xformers.ops import fmha

        print("  ops:", [n for n in dir(fmha) if n.endswith("Op") or "flash" in n.lower()][:30])
    except Exception as e:  # noqa: BLE001
        print("  fmha listing:", e)


@step("sageattention")
def _sage():
    import sageattention
    from sageattention import sageattn

    print("  attrs", [n for n in dir(sageattention) if not n.startswith("_")])
    print("  sageattn", sig(sageattn))
    q = torch.randn(B, H, S, D, device=DEV, dtype=torch.float16)
    k = torch.randn(B, H, S, D, device=DEV, dtype=torch.float16)
    v = torch.randn(B, H, S, D, device=DEV, dtype=torch.float16)
    fn = lambda: sageattn(q, k.clone(), v, tensor_layout="HND", is_causal=True)  # noqa: E731
    kernels_of(fn, "sage causal fp16")
    print(f"  causal (incl. k clone) {time_it(fn):.1f} us")


@step("cudnn frontend")
def _cfe():
    import cudnn

    print("  version", getattr(cudnn, "__version__", "?"), "backend", cudnn.backend_version())
    print("  graph.sdpa", sig(cudnn.pygraph.sdpa) if hasattr(cudnn, "pygraph") else "?")
    print("  attrs", [n for n in dir(cudnn) if "sdpa" in n.lower() or "attention" in n.lower()])


@step("attnscope traces: fwd+bwd, flex eager GQA, math with enable_gqa")
def _traces():
    import torch.nn.functional as F
    from torch.nn.attention import SDPBackend, sdpa_kernel

    from attnscope.measure.capture import capture

    b, h, kvh, s, d = 1, 8, 2, 512, 64
    q = torch.randn(b, h, s, d, device=DEV, dtype=dt, requires_grad=True)
    k = torch.randn(b, h, s, d, device=DEV, dtype=dt, requires_grad=True)
    v = torch.randn(b, h, s, d, device=DEV, dtype=dt, requires_grad=True)
    g = torch.randn(b, h, s, d, device=DEV, dtype=dt)
    for name, be in (
        ("flash", SDPBackend.FLASH_ATTENTION),
        ("cudnn", SDPBackend.CUDNN_ATTENTION),
        ("efficient", SDPBackend.EFFICIENT_ATTENTION),
        ("math", SDPBackend.MATH),
    ):

        def fb(be=be):
            with sdpa_kernel(be):
                o = F.scaled_dot_product_attention(q, k, v, is_causal=True)
            o.backward(g)

        for _ in range(3):
            fb()
        capture(fb, OUT / f"fwd_bwd_{name}.json", cuda=True)
        print(f"  fwd_bwd_{name}.json")
    qg = torch.randn(b, h, s, d, device=DEV, dtype=dt)
    kg = torch.randn(b, kvh, s, d, device=DEV, dtype=dt)
    vg = torch.randn(b, kvh, s, d, device=DEV, dtype=dt)

    def math_gqa():
        with sdpa_kernel(SDPBackend.MATH):
            return F.scaled_dot_product_attention(qg, kg, vg, is_causal=True, enable_gqa=True)

    math_gqa()
    capture(math_gqa, OUT / "math_enable_gqa.json", cuda=True)
    from torch.nn.attention.flex_attention import flex_attention

    def flex_eager_gqa():
        return flex_attention(qg, kg, vg, enable_gqa=True)

    flex_eager_gqa()
    capture(flex_eager_gqa, OUT / "flex_eager_gqa.json", cuda=True)
    qn = torch.randn(4, 16, 2048, 64, device=DEV, dtype=dt)

    def flex_eager_mha():
        return flex_attention(qn, qn, qn)

    flex_eager_mha()
    capture(flex_eager_mha, OUT / "flex_eager_b4h16s2048.json", cuda=True)
    print("  traces written")


@step("transformers attention interface")
def _hf():
    import transformers

    print("  transformers", transformers.__version__)
    from transformers import AttentionInterface

    print("  registered:", sorted(AttentionInterface._global_mapping.keys()))
