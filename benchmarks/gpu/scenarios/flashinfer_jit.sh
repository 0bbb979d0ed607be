#!/usr/bin/env bash
# FlashInfer's paged wrappers built once (JIT with nvcc on first use) and checked against SDPA: the build time and the versions, before the serving scenarios time them.
# estimate: 150 s
set -u; D=$1
timeout 240 python3 - >"$D/flashinfer_jit.txt" 2>&1 <<'PY'
import time
import torch
try:
    import flashinfer
except Exception as e:  # the wheel did not travel or does not import here
    print("flashinfer not importable:", type(e).__name__, e)
    raise SystemExit(0)
print("flashinfer", flashinfer.__version__, "torch", torch.__version__, "cuda", torch.version.cuda)
dev, dt = "cuda", torch.bfloat16
B, H, KVH, D, P = 4, 32, 8, 128, 16
lens = [1000, 17, 4096, 2500]
pages = [-(-n // P) for n in lens]
total = sum(pages)
perm = torch.randperm(total, device=dev).to(torch.int32)  # pages scattered in the pool
k = torch.randn(total, P, KVH, D, device=dev, dtype=dt)
v = torch.randn_like(k)
indptr = torch.tensor([0] + list(torch.tensor(pages).cumsum(0)), dtype=torch.int32, device=dev)
last = torch.tensor([n - (p - 1) * P for n, p in zip(lens, pages)], dtype=torch.int32, device=dev)
ws = torch.empty(128 << 20, dtype=torch.uint8, device=dev)
for kind in ("decode", "prefill"):
    sq = 1 if kind == "decode" else 8
    q = torch.randn(B * sq, H, D, device=dev, dtype=dt)
    t0 = time.perf_counter()
    if kind == "decode":
        w = flashinfer.BatchDecodeWithPagedKVCacheWrapper(ws, kv_layout="NHD")
        w.plan(indptr, perm, last, H, KVH, D, P, q_data_type=dt, kv_data_type=dt)
    else:
        w = flashinfer.BatchPrefillWithPagedKVCacheWrapper(ws, kv_layout="NHD")
        qo = torch.arange(0, (B + 1) * sq, sq, dtype=torch.int32, device=dev)
        w.plan(qo, indptr, perm, last, H, KVH, D, P, causal=True, q_data_type=dt, kv_data_type=dt)
    out = w.run(q, (k, v))
    torch.cuda.synchronize()
    first = time.perf_counter() - t0
    t0 = time.perf_counter(); out = w.run(q, (k, v)); torch.cuda.synchronize(); second = time.perf_counter() - t0
    # reference: each sequence's pages gathered by the table, fp32 SDPA with GQA (causal lower-right at prefill)
    errs, row = [], 0
    for b, n in enumerate(lens):
        idx = perm[indptr[b]:indptr[b + 1]].long()
        kb = k[idx].reshape(-1, KVH, D)[:n].float().transpose(0, 1).repeat_interleave(H // KVH, 0)
        vb = v[idx].reshape(-1, KVH, D)[:n].float().transpose(0, 1).repeat_interleave(H // KVH, 0)
        qb = q[b * sq:(b + 1) * sq].float().transpose(0, 1)
        mask = torch.ones(sq, n, dtype=torch.bool, device=dev).tril(n - sq) if sq > 1 else None
        ref = torch.nn.functional.scaled_dot_product_attention(qb, kb, vb, attn_mask=mask)
        got = out[b * sq:(b + 1) * sq].float().transpose(0, 1)
        errs.append(((got - ref).norm() / ref.norm()).item())
    print(f"{kind}: first call (JIT build + plan + run) {first:.1f} s, second run {second * 1e3:.3f} ms, "
          f"rel err per sequence {[f'{e:.1e}' for e in errs]}")
PY
echo "rc=$?" >>"$D/flashinfer_jit.txt"
cat "$D/flashinfer_jit.txt"
