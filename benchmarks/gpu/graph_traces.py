"""Traces of CUDA graph replays in the forms `attnscope analyze` must see through, each analysed right after.

    python benchmarks/gpu/graph_traces.py OUT_DIR

A small decode block (QKV projection, SDPA over a static cache with enable_gqa, output projection, 2 layers) at
B=8, 32 heads, 8 KV heads, D=128, bf16, cache 4096:

- one_trace.json.gz: capture and 8 replays under ONE profiler session (the capture's launches and the replays'
  kernels in the same trace), each replay under record_function("attnscope.step[decode] <i> kv=<L>");
- streams.json.gz: a graph captured on two streams (the two layers' projections forked onto a side stream), 8
  replays: does the replay's start order follow the capture's, and does Kineto write a graph node id;
- compiled.json.gz: torch.compile(mode="reduce-overhead") of the same block, warm-up and 8 calls (cudagraph trees:
  an eager warm-up run, a recording, then replays) under one session.

Writes facts.json (per trace: cudaGraphLaunch count, kernels carrying a graph launch's correlation, whether any
kernel has a "graph node id" arg, streams seen) and runs `attnscope analyze` on each trace (analyze_<name>.json/.txt).
"""

from __future__ import annotations

import gzip
import json
import shutil
import subprocess
import sys
from pathlib import Path

import torch
import torch.nn.functional as F
from torch.autograd.profiler import record_function
from torch.profiler import ProfilerActivity, profile

B, H, HKV, D, SMAX, L = 8, 32, 8, 128, 4096, 2
DEV = "cuda"
DT = torch.bfloat16


class Block:
    def __init__(self) -> None:
        g = torch.Generator(device="cpu").manual_seed(0)
        self.wqkv = [torch.randn(H * D, (H + 2 * HKV) * D, generator=g).to(DEV, DT) * 0.02 for _ in range(L)]
        self.wo = [torch.randn(H * D, H * D, generator=g).to(DEV, DT) * 0.02 for _ in range(L)]
        self.k = [torch.zeros(B, HKV, SMAX, D, device=DEV, dtype=DT) for _ in range(L)]
        self.v = [torch.zeros(B, HKV, SMAX, D, device=DEV, dtype=DT) for _ in range(L)]
        self.x = torch.randn(B, 1, H * D, device=DEV, dtype=DT)
        self.pos = torch.zeros(1, dtype=torch.long, device=DEV)
        self.ar = torch.arange(SMAX, device=DEV)

    def layer(self, i: int, x: torch.Tensor) -> torch.Tensor:
        qkv = x @ self.wqkv[i]
        q, k, v = qkv.split([H * D, HKV * D, HKV * D], dim=-1)
        q = q.view(B, 1, H, D).transpose(1, 2)
        self.k[i].index_copy_(2, self.pos, k.view(B, 1, HKV, D).transpose(1, 2))
        self.v[i].index_copy_(2, self.pos, v.view(B, 1, HKV, D).transpose(1, 2))
        mask = (self.ar <= self.pos).view(1, 1, 1, SMAX)
        o = F.scaled_dot_product_attention(q, self.k[i], self.v[i], attn_mask=mask, enable_gqa=True)
        return o.transpose(1, 2).reshape(B, 1, H * D) @ self.wo[i]

    def step(self) -> torch.Tensor:
        x = self.x
        for i in range(L):
            x = x + self.layer(i, x)
        return x


def capture(fn) -> torch.cuda.CUDAGraph:  # type: ignore[no-untyped-def]
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        for _ in range(3):
            fn()
    torch.cuda.current_stream().wait_stream(s)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        fn()
    torch.cuda.synchronize()
    return g


def replays(g: torch.cuda.CUDAGraph, blk: Block, n: int, start: int) -> None:
    for i in range(n):
        blk.pos.fill_(start + i)
        with record_function(f"attnscope.step[decode] {i} kv={start + i + 1}"):
            g.replay()
    torch.cuda.synchronize()


def two_stream_step(blk: Block, side: torch.cuda.Stream) -> torch.Tensor:
    """Layer 0 on the current stream, layer 1's QKV projection forked onto ``side``, then joined."""
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        y = blk.x @ blk.wqkv[1]
    out = blk.layer(0, blk.x)
    torch.cuda.current_stream().wait_stream(side)
    return out + y[..., : H * D]


def save(prof: profile, out: Path, name: str) -> Path:
    raw = out / f"{name}.json"
    prof.export_chrome_trace(str(raw))
    gz = out / f"{name}.json.gz"
    with raw.open("rb") as f, gzip.open(gz, "wb", compresslevel=9) as g:
        shutil.copyfileobj(f, g)
    raw.unlink()
    return gz


def facts_of(path: Path) -> dict:
    ev = json.loads(gzip.open(path).read())["traceEvents"]
    launches = {
        e["args"]["correlation"] for e in ev if e.get("cat") == "cuda_runtime" and e["name"] == "cudaGraphLaunch"
    }
    kernels = [e for e in ev if e.get("cat") == "kernel"]
    replayed = [e for e in kernels if e["args"].get("correlation") in launches]
    return {
        "cudaGraphLaunch": len(launches),
        "kernels": len(kernels),
        "replayed kernels": len(replayed),
        "replayed with External id": sum("External id" in e["args"] for e in replayed),
        "kernels with graph node id": sum("graph node id" in e["args"] for e in kernels),
        "nonzero graph node ids": sum(bool(e["args"].get("graph node id")) for e in kernels),
        "streams of replayed kernels": sorted({e["args"].get("stream") for e in replayed}),
        "runtime names": sorted({e["name"] for e in ev if e.get("cat") in ("cuda_runtime", "cuda_driver")}),
    }


def main() -> int:
    out = Path(sys.argv[1])
    out.mkdir(parents=True, exist_ok=True)
    acts = [ProfilerActivity.CPU, ProfilerActivity.CUDA]
    facts: dict = {"torch": torch.__version__, "cuda": torch.version.cuda, "device": torch.cuda.get_device_name()}
    traces = []
    blk = Block()
    blk.step()
    torch.cuda.synchronize()
    try:
        with profile(activities=acts, record_shapes=True) as prof:
            with record_function("capture"):
                g = capture(blk.step)
            replays(g, blk, 8, 100)
        traces.append(save(prof, out, "one_trace"))
    except Exception as e:  # noqa: BLE001 -- a form that fails is a fact
        facts["one_trace error"] = f"{type(e).__name__}: {e}"[:400]
    try:
        side = torch.cuda.Stream()
        g2 = capture(lambda: two_stream_step(blk, side))
        with profile(activities=acts, record_shapes=True) as prof:
            replays(g2, blk, 8, 200)
        traces.append(save(prof, out, "streams"))
    except Exception as e:  # noqa: BLE001
        facts["streams error"] = f"{type(e).__name__}: {e}"[:400]
    try:
        fn = torch.compile(blk.step, mode="reduce-overhead")
        with profile(activities=acts, record_shapes=True) as prof:
            for i in range(11):
                blk.pos.fill_(300 + i)
                with record_function(f"attnscope.step[decode] {i} kv={300 + i + 1}"):
                    fn()
            torch.cuda.synchronize()
        traces.append(save(prof, out, "compiled"))
    except Exception as e:  # noqa: BLE001
        facts["compiled error"] = f"{type(e).__name__}: {e}"[:400]
    for t in traces:
        name = t.name.removesuffix(".json.gz")
        facts[name] = facts_of(t)
        cmd = [sys.executable, "-m", "attnscope", "analyze", str(t), "--json", str(out / f"analyze_{name}.json")]
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=120, check=False)
        (out / f"analyze_{name}.txt").write_text(r.stdout + r.stderr + f"\nrc={r.returncode}\n")
    (out / "facts.json").write_text(json.dumps(facts, indent=1))
    print(json.dumps(facts, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
