"""Decode at B8 H32 KV8 Sq1 Sk8192 D128 bf16: which call reads the KV cache nearest the bandwidth ceiling.

For each backend (cuDNN, flash, efficient) and each way of passing the grouped heads (enable_gqa; the query heads
of a group packed into the query length, which needs no GQA support and no mask; a KV cache stored [B, S, H, D] and
viewed transposed), three timing methods side by side: a CUDA-event loop, CUDA-graph replay, and triton's do_bench
where triton is present. Also the read-bandwidth probes (x.sum() in fp32 over the KV cache's bytes and over 2 GiB)
and the kernel names each call launches. Bytes by the stated model: Q, K, V read once, O written once.
Usage: python3 benchmarks/gpu/decode_layouts.py OUT.json
"""

# ruff: noqa: BLE001

import json
import statistics
import sys

import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel
from torch.profiler import ProfilerActivity, profile

B, H, KV, SK, D = 8, 32, 8, 8192, 128
G = H // KV
dt = torch.bfloat16
BYTES = 2 * (B * H * D * 2) + 2 * (2 * B * KV * SK * D)  # Q + O, K + V
SPEC_TBPS = 4.814
out = {
    "torch": torch.__version__,
    "cudnn": torch.backends.cudnn.version(),
    "device": torch.cuda.get_device_name(),
    "bytes": BYTES,
    "spec_tbps": SPEC_TBPS,
    "rows": [],
}

torch.manual_seed(0)
q = torch.randn(B, H, 1, D, device="cuda", dtype=dt)
k = torch.randn(B, KV, SK, D, device="cuda", dtype=dt)
v = torch.randn(B, KV, SK, D, device="cuda", dtype=dt)
k_bshd = k.transpose(1, 2).contiguous().transpose(1, 2)  # stored [B, S, KV, D], viewed [B, KV, S, D]
v_bshd = v.transpose(1, 2).contiguous().transpose(1, 2)
q_packed = q.view(B, KV, G, D)  # head h = kv * G + g: the group's queries become G query rows
scale = D**-0.5

ref = F.scaled_dot_product_attention(
    q.float(), k.float().repeat_interleave(G, 1), v.float().repeat_interleave(G, 1), scale=scale
)

BACKS = {
    "cudnn": SDPBackend.CUDNN_ATTENTION,
    "flash": SDPBackend.FLASH_ATTENTION,
    "efficient": SDPBackend.EFFICIENT_ATTENTION,
}


def calls(back):
    def gqa():
        with sdpa_kernel([back]):
            return F.scaled_dot_product_attention(q, k, v, scale=scale, enable_gqa=True)

    def packed():
        with sdpa_kernel([back]):
            return F.scaled_dot_product_attention(q_packed, k, v, scale=scale).view(B, H, 1, D)

    def gqa_bshd():
        with sdpa_kernel([back]):
            return F.scaled_dot_product_attention(q, k_bshd, v_bshd, scale=scale, enable_gqa=True)

    def packed_bshd():
        with sdpa_kernel([back]):
            return F.scaled_dot_product_attention(q_packed, k_bshd, v_bshd, scale=scale).view(B, H, 1, D)

    return {"gqa": gqa, "packed": packed, "gqa_bshd": gqa_bshd, "packed_bshd": packed_bshd}


def event_loop(fn, n=50, reps=15):
    for _ in range(5):
        fn()
    per = []
    for _ in range(reps):
        st = torch.cuda.Event(enable_timing=True)
        en = torch.cuda.Event(enable_timing=True)
        st.record()
        for _ in range(n):
            fn()
        en.record()
        torch.cuda.synchronize()
        per.append(st.elapsed_time(en) / n * 1000)
    return statistics.median(per), min(per), max(per)


def graph_replay(fn, n=50, reps=15):
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        for _ in range(3):
            fn()
    torch.cuda.current_stream().wait_stream(s)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        for _ in range(n):
            fn()
    g.replay()
    torch.cuda.synchronize()
    per = []
    for _ in range(reps):
        st = torch.cuda.Event(enable_timing=True)
        en = torch.cuda.Event(enable_timing=True)
        st.record()
        g.replay()
        en.record()
        torch.cuda.synchronize()
        per.append(st.elapsed_time(en) / n * 1000)
    return statistics.median(per)


def do_bench(fn):
    try:
        from triton.testing import do_bench as db
    except Exception as e:
        return f"no triton: {e}"
    return db(fn, warmup=25, rep=200, return_mode="median") * 1000


def kernels(fn):
    fn()
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as p:
        fn()
        torch.cuda.synchronize()
    return [e.name for e in p.events() if e.device_type == torch.autograd.DeviceType.CUDA]


for bname, back in BACKS.items():
    for lname, fn in calls(back).items():
        row = {"backend": bname, "layout": lname}
        try:
            o = fn()
            row["max_abs_err"] = (o.float() - ref).abs().max().item()
            row["kernels"] = kernels(fn)
            med, lo, hi = event_loop(fn)
            row["events_us"] = {"median": med, "min": lo, "max": hi}
            row["graph_us"] = graph_replay(fn)
            row["do_bench_us"] = do_bench(fn)
            best = min(x for x in (med, row["graph_us"], row["do_bench_us"]) if isinstance(x, float))
            row["tbps_best"] = BYTES / best / 1e6
            row["pct_spec_best"] = 100 * row["tbps_best"] / SPEC_TBPS
        except Exception as e:
            row["error"] = f"{type(e).__name__}: {str(e)[:300]}"
        out["rows"].append(row)
        print(json.dumps(row), flush=True)

# read-bandwidth probes
for label, nbytes in [("kv_cache_size", 2 * B * KV * SK * D * 2), ("2GiB", 2 << 30)]:
    x = torch.empty(nbytes // 2, device="cuda", dtype=dt).normal_()

    def fn(x=x):
        return x.sum(dtype=torch.float32)

    med, lo, hi = event_loop(fn, n=20, reps=10)
    out["rows"].append(
        {
            "probe": f"sum fp32 over {label}",
            "bytes": nbytes,
            "events_us": med,
            "tbps": nbytes / med / 1e6,
            "graph_us": graph_replay(fn, n=20, reps=10),
        }
    )
    print(json.dumps(out["rows"][-1]), flush=True)
    del x

json.dump(out, open(sys.argv[1], "w"), indent=1)
