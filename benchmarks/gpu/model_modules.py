"""Profile one training step of a 2-layer Llama shape three ways, for docs/model.md (which options carry what).

1. annotated by attnscope.workloads.hf.module_ranges (record_function ranges), record_shapes=True
2. with_modules=True, record_shapes=True (torch's own module hierarchy, python_function events)
3. with_stack=True, record_shapes=True

Writes the three traces (gzipped) into the directory given, and prints what each carries.
"""

from __future__ import annotations

import collections
import gzip
import json
import shutil
import sys
from pathlib import Path

import torch
import torch.nn.functional as F
from torch.profiler import ProfilerActivity, profile

from attnscope.workloads.hf.config import build_config, resolve
from attnscope.workloads.hf.module_ranges import annotate, step_range


def main(out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    from transformers import AutoModelForCausalLM

    cfg = build_config(resolve("tiny"), layers=2)
    with torch.device("cuda"):
        model = AutoModelForCausalLM.from_config(cfg, attn_implementation="sdpa").to(torch.bfloat16)
    ids = torch.randint(0, cfg.vocab_size, (2, 256), device="cuda")
    opt = torch.optim.AdamW(model.parameters(), lr=1e-5)

    def step() -> None:
        opt.zero_grad(set_to_none=True)
        logits = model(ids, use_cache=False).logits
        with step_range("loss"):
            loss = F.cross_entropy(logits[:, :-1].float().flatten(0, 1), ids[:, 1:].flatten())
        with step_range("backward"):
            loss.backward()
        with step_range("optimizer"):
            opt.step()

    for _ in range(3):
        step()
    torch.cuda.synchronize()
    acts = [ProfilerActivity.CPU, ProfilerActivity.CUDA]
    for name, kw, annotated in (
        ("annotated", {}, True),
        ("with_modules", {"with_modules": True}, False),
        ("with_stack", {"with_stack": True}, False),
    ):
        if annotated:
            with annotate(model), profile(activities=acts, record_shapes=True, **kw) as prof:
                with step_range("step", "train"):
                    step()
                torch.cuda.synchronize()
        else:
            with profile(activities=acts, record_shapes=True, **kw) as prof:
                step()
                torch.cuda.synchronize()
        raw = out / f"tiny_train_sdpa_{name}.json"
        prof.export_chrome_trace(str(raw))
        with open(raw, "rb") as f, gzip.open(f"{raw}.gz", "wb") as g:
            shutil.copyfileobj(f, g)
        raw.unlink()
        ev = json.load(gzip.open(f"{raw}.gz"))["traceEvents"]
        cats = collections.Counter(e.get("cat") for e in ev)
        mods = collections.Counter(
            e["name"].rsplit("_", 1)[0]
            for e in ev
            if e.get("cat") == "python_function" and e["name"].startswith("nn.Module")
        )
        ranges = sum(1 for e in ev if str(e.get("name", "")).startswith("attnscope.model:"))
        print(f"{name}: {len(ev)} events; categories {dict(cats)}")
        print(f"  nn.Module python_function events by class: {dict(mods.most_common(12))}")
        print(f"  attnscope.model ranges: {ranges}")


if __name__ == "__main__":
    main(Path(sys.argv[1]))
