"""Real training traces for the reader's benchmarks: a Llama step recorded with ``with_stack`` (python_function
events), and the same model trained by DDP on every GPU of the host, one trace per rank of one job.

    python benchmarks/gpu/train_traces.py OUT_DIR            # the with_stack trace, then torchrun for the ranks
    torchrun --nproc_per_node=N benchmarks/gpu/train_traces.py OUT_DIR --ddp     # what the first one starts
    python benchmarks/gpu/train_traces.py OUT_DIR --no-stack --share-gpu --rank-steps 5   # one GPU: two ranks on it

The model is the shared Llama trace's shape (hidden 1024, 8 layers, 16 heads, 4 KV heads, batch 4 x 2048, bf16,
SDPA attention); ``--device cpu --small`` runs a tiny model on the CPU (a check of the script, not a measurement).
Writes OUT_DIR/llama_train_stack.json.gz, OUT_DIR/ranks/rank<i>.json.gz (each with Kineto's own
``distributedInfo``), and OUT_DIR/facts.json: event counts per category of each trace, as read from the JSON here.
"""

from __future__ import annotations

import argparse
import collections
import gzip
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import torch
from torch.profiler import ProfilerActivity, profile


def model(dev: str, small: bool) -> torch.nn.Module:
    from transformers import LlamaConfig, LlamaForCausalLM

    if small:
        cfg = LlamaConfig(hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=4,
                          num_key_value_heads=2, vocab_size=512, max_position_embeddings=256)  # fmt: skip
    else:
        cfg = LlamaConfig(hidden_size=1024, intermediate_size=2816, num_hidden_layers=8, num_attention_heads=16,
                          num_key_value_heads=4, vocab_size=32000, max_position_embeddings=4096)  # fmt: skip
    cfg._attn_implementation = "sdpa"
    dtype = torch.bfloat16 if dev.startswith("cuda") else torch.float32
    return LlamaForCausalLM(cfg).to(dev, dtype)


def train(m: torch.nn.Module, ids: torch.Tensor, steps: int, prof=None) -> None:
    opt = torch.optim.AdamW(m.parameters(), lr=1e-5)
    for _ in range(steps):
        m(input_ids=ids, labels=ids).loss.backward()
        opt.step()
        opt.zero_grad()
        if prof is not None:
            prof.step()
    if ids.is_cuda:
        torch.cuda.synchronize()


def save(prof, path: Path) -> None:
    raw = path.with_suffix("")  # .json
    prof.export_chrome_trace(str(raw))
    with open(raw, "rb") as f, gzip.open(path, "wb", compresslevel=6) as g:
        shutil.copyfileobj(f, g)
    raw.unlink()


def counts(path: Path) -> dict:
    raw = gzip.open(path).read()
    doc = json.loads(raw)
    c = collections.Counter(e.get("cat") for e in doc.get("traceEvents", []))
    return {"json_bytes": len(raw), "events": sum(c.values()), "by_category": dict(c.most_common()),
            "distributedInfo": doc.get("distributedInfo")}  # fmt: skip


def acts(dev: str) -> list:
    return [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if dev.startswith("cuda") else [])


def with_stack(out: Path, dev: str, small: bool) -> None:
    m = model(dev, small)
    ids = torch.randint(0, m.config.vocab_size, (4, 64 if small else 2048), device=dev)
    train(m, ids, 2)
    with profile(activities=acts(dev), record_shapes=True, with_stack=True) as prof:
        train(m, ids, 3 if small else 10, prof)
    save(prof, out / "llama_train_stack.json.gz")


def ddp(out: Path, dev_kind: str, small: bool, share_gpu: bool = False, steps: int = 10) -> None:
    import torch.distributed as dist
    from torch.nn.parallel import DistributedDataParallel

    rank = int(os.environ["RANK"])
    # NCCL refuses two ranks on one GPU: ranks that share it reduce their gradients through gloo
    dist.init_process_group("nccl" if dev_kind == "cuda" and not share_gpu else "gloo")
    local = 0 if share_gpu else int(os.environ.get("LOCAL_RANK", rank))
    dev = f"cuda:{local}" if dev_kind == "cuda" else "cpu"
    if dev_kind == "cuda":
        torch.cuda.set_device(dev)
    m = DistributedDataParallel(model(dev, small), device_ids=[dev] if dev_kind == "cuda" else None)
    g = torch.Generator(device="cpu").manual_seed(rank)  # each rank its own batch, as a data-parallel job has
    ids = torch.randint(0, m.module.config.vocab_size, (4, 64 if small else 2048), generator=g).to(dev)
    train(m, ids, 2)
    with profile(activities=acts(dev), record_shapes=True) as prof:
        train(m, ids, 3 if small else steps, prof)
    (out / "ranks").mkdir(parents=True, exist_ok=True)
    save(prof, out / "ranks" / f"rank{rank}.json.gz")
    dist.barrier()
    dist.destroy_process_group()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("out")
    ap.add_argument("--ddp", action="store_true", help="(torchrun's children) train by DDP, one trace per rank")
    ap.add_argument("--device", default="cuda", choices=["cuda", "cpu"])
    ap.add_argument("--small", action="store_true", help="a tiny model: checks the script, measures nothing")
    ap.add_argument("--share-gpu", action="store_true", help="on a one-GPU host, two ranks on that GPU (gloo)")
    ap.add_argument("--rank-steps", type=int, default=10, help="profiled steps per rank")
    ap.add_argument("--no-stack", action="store_true", help="the ranks only, not the with_stack trace")
    a = ap.parse_args()
    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    if a.ddp:
        ddp(out, a.device, a.small, a.share_gpu, a.rank_steps)
        return 0
    facts: dict = {"torch": torch.__version__}
    t0 = time.time()
    if not a.no_stack:
        with_stack(out, a.device, a.small)
        facts["with_stack"] = {"seconds": round(time.time() - t0, 1), **counts(out / "llama_train_stack.json.gz")}
    n = torch.cuda.device_count() if a.device == "cuda" else 2
    share = a.device == "cuda" and n < 2 and a.share_gpu
    if n < 2 and not share:
        facts["ranks"] = f"not recorded: {n} GPU on this host (a two-GPU host records one trace per rank)"
    else:
        n = 2 if share else n
        t0 = time.time()
        cmd = [sys.executable, "-m", "torch.distributed.run", f"--nproc_per_node={n}", __file__, str(out), "--ddp",
               "--device", a.device, "--rank-steps", str(a.rank_steps)] + (["--small"] if a.small else []) + (
               ["--share-gpu"] if share else [])  # fmt: skip
        rc = subprocess.run(cmd).returncode
        backend = "gloo, both ranks on cuda:0" if share else ("nccl" if a.device == "cuda" else "gloo")
        facts["ranks"] = {"rc": rc, "nproc": n, "seconds": round(time.time() - t0, 1), "backend": backend}
        for p in sorted((out / "ranks").glob("rank*.json.gz")):
            facts["ranks"][p.name] = counts(p)
    (out / "facts.json").write_text(json.dumps(facts, indent=1, default=str))
    print(json.dumps(facts, indent=1, default=str)[:4000])
    return 0


if __name__ == "__main__":
    sys.exit(main())
