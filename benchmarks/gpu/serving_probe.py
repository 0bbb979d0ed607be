"""What a serving loop looks like on this GPU: the facts and the traces behind the serving work.

    python benchmarks/gpu/serving_probe.py OUT_DIR

Writes OUT_DIR/facts.json (which switches this torch has, what SDPA picks, L2 size, NVML), and Kineto traces
(gzipped) of: an eager decode loop over a growing cache, the same loop replayed from one captured CUDA graph, the
capture itself, a loop over new KV lengths with SDPA's default (does cuDNN rebuild per length?), a paged decode
done by gathering the pages first, and an eager-attention Llama training run (10 steps).
"""

from __future__ import annotations

import gzip
import inspect
import json
import shutil
import sys
import time
import traceback
from pathlib import Path

import torch
import torch.nn.functional as F
from torch.profiler import ProfilerActivity, profile, record_function

OUT = Path(sys.argv[1])
OUT.mkdir(parents=True, exist_ok=True)
DEV = "cuda"
facts: dict = {}


def save_facts() -> None:
    (OUT / "facts.json").write_text(json.dumps(facts, indent=1, default=str))


def gz_trace(prof, name: str) -> None:
    raw = OUT / f"{name}.json"
    prof.export_chrome_trace(str(raw))
    with open(raw, "rb") as f, gzip.open(OUT / f"{name}.json.gz", "wb", compresslevel=9) as g:
        shutil.copyfileobj(f, g)
    raw.unlink()


def step(name: str):
    def deco(fn):
        try:
            t0 = time.time()
            fn()
            facts.setdefault("sections", {})[name] = f"ok in {time.time() - t0:.1f} s"
        except Exception as e:  # noqa: BLE001 — a probe records what failed and goes on
            facts.setdefault("sections", {})[name] = f"FAILED: {type(e).__name__}: {e}"
            traceback.print_exc()
        save_facts()
        return fn

    return deco


@step("switches")
def _switches() -> None:
    import torch.nn.attention as A

    p = torch.cuda.get_device_properties(0)
    facts["torch"] = torch.__version__
    facts["cuda"] = torch.version.cuda
    facts["cudnn"] = torch.backends.cudnn.version()
    facts["device"] = {
        "name": p.name,
        "sm": f"{p.major}.{p.minor}",
        "sms": p.multi_processor_count,
        "L2_cache_size": getattr(p, "L2_cache_size", None),
        "total_memory": p.total_memory,
    }
    facts["nn.attention names"] = sorted(n for n in dir(A) if not n.startswith("__"))
    facts["sdpa_kernel signature"] = str(inspect.signature(A.sdpa_kernel))
    for n in (
        "activate_flash_attention_impl",
        "list_flash_attention_impls",
        "current_flash_attention_impl",
        "restore_flash_attention_impl",
    ):
        fn = getattr(A, n, None)
        facts[n] = None if fn is None else str(inspect.signature(fn))
    if getattr(A, "list_flash_attention_impls", None):
        try:
            facts["flash impls registered"] = A.list_flash_attention_impls()
        except Exception as e:  # noqa: BLE001
            facts["flash impls registered"] = repr(e)
    try:
        import torch.nn.attention.varlen as V

        facts["varlen names"] = sorted(n for n in dir(V) if not n.startswith("_"))
        facts["varlen_attn signature"] = str(inspect.signature(V.varlen_attn))
    except Exception as e:  # noqa: BLE001
        facts["varlen"] = repr(e)
    try:
        facts["sdp priority order"] = [str(b) for b in torch._C._get_sdp_priority_order()]
    except Exception as e:  # noqa: BLE001
        facts["sdp priority order"] = repr(e)
    for m in ("pynvml",):
        try:
            __import__(m)
            facts[m] = "importable"
        except Exception as e:  # noqa: BLE001
            facts[m] = repr(e)
    for n in ("clock_rate", "power_draw", "temperature", "utilization"):
        try:
            facts[f"torch.cuda.{n}"] = getattr(torch.cuda, n)()
        except Exception as e:  # noqa: BLE001
            facts[f"torch.cuda.{n}"] = repr(e)


@step("flex_backends")
def _flex_backends() -> None:
    from torch.nn.attention.flex_attention import create_block_mask, flex_attention

    facts["flex_attention signature"] = str(inspect.signature(flex_attention))
    q = torch.randn(1, 8, 256, 64, device=DEV, dtype=torch.bfloat16)
    k = torch.randn(1, 8, 256, 64, device=DEV, dtype=torch.bfloat16)
    bm = create_block_mask(lambda b, h, qi, ki: qi >= ki, 1, 1, 256, 256, device=DEV)
    res = {}
    for backend in ("FLASH", "TRITON", "TRITON_DECODE", "AUTO", "BOGUS"):
        try:
            f = torch.compile(flex_attention)
            out = f(q, k, k, block_mask=bm, kernel_options={"BACKEND": backend})
            torch.cuda.synchronize()
            res[backend] = f"ok {tuple(out.shape)}"
        except Exception as e:  # noqa: BLE001
            res[backend] = f"{type(e).__name__}: {str(e)[:300]}"
    facts["flex BACKEND"] = res


def decode_model(layers=4, B=8, H=32, KVH=8, D=128, SMAX=4096):
    torch.manual_seed(0)
    hid = H * D
    ws = [
        (
            torch.randn(hid, (H + 2 * KVH) * D, device=DEV, dtype=torch.bfloat16) * 0.02,
            torch.randn(hid, hid, device=DEV, dtype=torch.bfloat16) * 0.02,
        )
        for _ in range(layers)
    ]
    kc = [torch.zeros(B, KVH, SMAX, D, device=DEV, dtype=torch.bfloat16) for _ in range(layers)]
    vc = [torch.zeros(B, KVH, SMAX, D, device=DEV, dtype=torch.bfloat16) for _ in range(layers)]
    x = torch.randn(B, 1, hid, device=DEV, dtype=torch.bfloat16)
    pos = torch.zeros((), device=DEV, dtype=torch.long)
    # the mask over the static cache: keys at or before the position (a serving engine's static-cache decode)
    ar = torch.arange(SMAX, device=DEV)

    def step_fn():
        h = x
        mask = (ar <= pos).view(1, 1, 1, SMAX)
        for i, (wqkv, wo) in enumerate(ws):
            qkv = h @ wqkv
            q, k, v = qkv.split([H * D, KVH * D, KVH * D], dim=-1)
            q = q.view(B, 1, H, D).transpose(1, 2)
            k = k.view(B, 1, KVH, D).transpose(1, 2)
            v = v.view(B, 1, KVH, D).transpose(1, 2)
            kc[i].index_copy_(2, pos.view(1), k)
            vc[i].index_copy_(2, pos.view(1), v)
            with record_function("attention"):
                o = F.scaled_dot_product_attention(q, kc[i], vc[i], attn_mask=mask, enable_gqa=True)
            h = o.transpose(1, 2).reshape(B, 1, hid) @ wo
        return h

    return step_fn, pos


@step("decode_eager_and_graph")
def _decode() -> None:
    step_fn, pos = decode_model()
    for _ in range(3):
        step_fn()
    torch.cuda.synchronize()
    # eager loop
    acts = [ProfilerActivity.CPU, ProfilerActivity.CUDA]
    with profile(activities=acts, record_shapes=True) as prof:
        for s in range(16):
            pos.fill_(1000 + s)
            with record_function(f"decode_step_{s}"):
                step_fn()
            prof.step()
        torch.cuda.synchronize()
    gz_trace(prof, "decode_eager")
    # capture, profiled
    g = torch.cuda.CUDAGraph()
    st = torch.cuda.Stream()
    st.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(st):
        for _ in range(3):
            step_fn()
    torch.cuda.current_stream().wait_stream(st)
    torch.cuda.synchronize()
    with profile(activities=acts, record_shapes=True) as prof:
        with record_function("capture"):
            with torch.cuda.graph(g):
                step_fn()
        torch.cuda.synchronize()
    gz_trace(prof, "decode_capture")
    # replay loop
    with profile(activities=acts, record_shapes=True) as prof:
        for s in range(16):
            pos.fill_(1000 + s)
            with record_function(f"decode_step_{s}"):
                g.replay()
            prof.step()
        torch.cuda.synchronize()
    gz_trace(prof, "decode_graph_replay")

    # times: eager step vs graph replay (CUDA events, median of 50)
    def med(fn, n=50):
        ts = []
        for _ in range(n):
            a = torch.cuda.Event(enable_timing=True)
            b = torch.cuda.Event(enable_timing=True)
            a.record()
            fn()
            b.record()
            b.synchronize()
            ts.append(a.elapsed_time(b) * 1000)
        ts.sort()
        return ts[len(ts) // 2]

    facts["decode step us (eager, graph)"] = [med(step_fn), med(g.replay)]


@step("cudnn_per_length")
def _cudnn_len() -> None:
    from torch.nn.attention import SDPBackend, sdpa_kernel

    B, H, D = 8, 32, 128
    res = {}
    for backend in (SDPBackend.CUDNN_ATTENTION, SDPBackend.FLASH_ATTENTION):
        times = []
        for sk in [*list(range(2000, 2006)), 2000, 2001, 2002]:
            q = torch.randn(B, H, 1, D, device=DEV, dtype=torch.bfloat16)
            kv = torch.randn(B, H, sk, D, device=DEV, dtype=torch.bfloat16)
            torch.cuda.synchronize()
            with sdpa_kernel(backend):
                t0 = time.perf_counter()
                F.scaled_dot_product_attention(q, kv, kv)
                torch.cuda.synchronize()
                t1 = time.perf_counter()
                F.scaled_dot_product_attention(q, kv, kv)
                torch.cuda.synchronize()
                t2 = time.perf_counter()
            times.append({"sk": sk, "first_ms": round((t1 - t0) * 1e3, 3), "second_ms": round((t2 - t1) * 1e3, 3)})
        res[str(backend)] = times
    facts["per-length first call"] = res
    # a trace of the default over growing lengths
    acts = [ProfilerActivity.CPU, ProfilerActivity.CUDA]
    q = torch.randn(B, H, 1, D, device=DEV, dtype=torch.bfloat16)
    with profile(activities=acts, record_shapes=True) as prof:
        for sk in range(3000, 3012):
            kv = torch.randn(B, H, sk, D, device=DEV, dtype=torch.bfloat16)
            with record_function(f"decode_step_{sk}"):
                F.scaled_dot_product_attention(q, kv, kv)
            prof.step()
        torch.cuda.synchronize()
    gz_trace(prof, "default_growing_kv")


@step("paged_gather")
def _paged() -> None:
    B, H, KVH, D, P = 32, 32, 8, 128, 16
    g = torch.Generator().manual_seed(0)
    lens = torch.randint(1024, 32768, (B,), generator=g)
    pages_per = (lens + P - 1) // P
    total = int(pages_per.sum())
    pool_k = torch.randn(total, KVH, P, D, device=DEV, dtype=torch.bfloat16)
    pool_v = torch.randn(total, KVH, P, D, device=DEV, dtype=torch.bfloat16)
    perm = torch.randperm(total, generator=g)
    q = torch.randn(1, H, 1, D, device=DEV, dtype=torch.bfloat16)
    acts = [ProfilerActivity.CPU, ProfilerActivity.CUDA]
    starts = torch.cumsum(pages_per, 0) - pages_per
    with profile(activities=acts, record_shapes=True) as prof:
        with record_function("paged_decode_gather"):
            for b in range(4):
                idx = perm[int(starts[b]) : int(starts[b] + pages_per[b])].to(DEV)
                k = pool_k.index_select(0, idx).permute(1, 0, 2, 3).reshape(1, KVH, -1, D)[:, :, : int(lens[b])]
                v = pool_v.index_select(0, idx).permute(1, 0, 2, 3).reshape(1, KVH, -1, D)[:, :, : int(lens[b])]
                F.scaled_dot_product_attention(q, k, v, enable_gqa=True)
        torch.cuda.synchronize()
    gz_trace(prof, "paged_gather")
    facts["paged lens (first 4)"] = lens[:4].tolist()


@step("llama_eager_train")
def _llama() -> None:
    from transformers import LlamaConfig, LlamaForCausalLM

    cfg = LlamaConfig(
        hidden_size=1024,
        intermediate_size=2816,
        num_hidden_layers=8,
        num_attention_heads=16,
        num_key_value_heads=4,
        vocab_size=32000,
        max_position_embeddings=4096,
    )
    cfg._attn_implementation = "eager"
    m = LlamaForCausalLM(cfg).to(DEV, torch.bfloat16)
    opt = torch.optim.AdamW(m.parameters(), lr=1e-5)
    ids = torch.randint(0, 32000, (4, 2048), device=DEV)
    for _ in range(2):
        m(input_ids=ids, labels=ids).loss.backward()
        opt.step()
        opt.zero_grad()
    torch.cuda.synchronize()
    acts = [ProfilerActivity.CPU, ProfilerActivity.CUDA]
    with profile(activities=acts, record_shapes=True) as prof:
        for _ in range(10):
            m(input_ids=ids, labels=ids).loss.backward()
            opt.step()
            opt.zero_grad()
            prof.step()
        torch.cuda.synchronize()
    gz_trace(prof, "llama_train_eager")
    facts["transformers"] = __import__("transformers").__version__


save_facts()
print(json.dumps(facts, indent=1, default=str)[:6000])
