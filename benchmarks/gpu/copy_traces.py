"""Traces for the copy-context rules: where copies happen, and which layout avoids them.

    python3 benchmarks/gpu/copy_traces.py OUTDIR

layout_<backend>_<layout>.json: forward+backward of SDPA forced to flash / efficient / cuDNN at
B4 H16 S2048 D64 bf16 causal, with q, k, v and the output gradient either contiguous
(B, H, S, D) tensors ("bhsd") or (B, H, S, D) views of contiguous (B, S, H, D) tensors ("bshd",
what a model's projections give after .view(B, S, H, D).transpose(1, 2)).
user_*.json: copies written in user code (GQA by repeat_interleave and by expand+reshape,
an explicit fp32 upcast) at B1 H8 KV2 S512 D64, for the "null = user code" side.
"""

from __future__ import annotations

import sys
from pathlib import Path

import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel

from attnscope.measure.capture import capture

OUT = Path(sys.argv[1] if len(sys.argv) > 1 else "copy_traces")
OUT.mkdir(parents=True, exist_ok=True)
bf16 = torch.bfloat16


def layout_tensors(layout: str, b: int, h: int, s: int, d: int) -> list[torch.Tensor]:
    def one() -> torch.Tensor:
        if layout == "bhsd":
            return torch.randn(b, h, s, d, device="cuda", dtype=bf16)
        return torch.randn(b, s, h, d, device="cuda", dtype=bf16).transpose(1, 2)

    return [one() for _ in range(4)]


def layouts() -> None:
    for backend, be in (
        ("flash", SDPBackend.FLASH_ATTENTION),
        ("efficient", SDPBackend.EFFICIENT_ATTENTION),
        ("cudnn", SDPBackend.CUDNN_ATTENTION),
    ):
        for layout in ("bhsd", "bshd"):
            q, k, v, g = layout_tensors(layout, 4, 16, 2048, 64)
            for t in (q, k, v):
                t.requires_grad_(True)

            def fb(be: SDPBackend = be, qkvg: list[torch.Tensor] = [q, k, v, g]) -> None:  # noqa: B006
                q, k, v, g = qkvg
                with sdpa_kernel(be):
                    o = F.scaled_dot_product_attention(q, k, v, is_causal=True)
                o.backward(g)
                for t in (q, k, v):
                    t.grad = None

            try:
                for _ in range(3):
                    fb()
                capture(fb, OUT / f"layout_{backend}_{layout}.json", cuda=True)
                print(f"layout_{backend}_{layout}.json", flush=True)
            except Exception as e:  # noqa: BLE001 - a refused backend is noted, the rest goes on
                print(f"layout_{backend}_{layout}: {type(e).__name__}: {str(e)[:200]}", flush=True)


def user_code() -> None:
    b, h, kvh, s, d = 1, 8, 2, 512, 64
    q = torch.randn(b, h, s, d, device="cuda", dtype=bf16)
    k = torch.randn(b, kvh, s, d, device="cuda", dtype=bf16)
    v = torch.randn(b, kvh, s, d, device="cuda", dtype=bf16)
    n = h // kvh

    def repeat_interleave_flash() -> torch.Tensor:
        kk, vv = k.repeat_interleave(n, dim=1), v.repeat_interleave(n, dim=1)
        with sdpa_kernel(SDPBackend.FLASH_ATTENTION):
            return F.scaled_dot_product_attention(q, kk, vv, is_causal=True)

    def expand_reshape_flash() -> torch.Tensor:  # the repeat_kv of many model codebases
        kk = k[:, :, None].expand(b, kvh, n, s, d).reshape(b, h, s, d)
        vv = v[:, :, None].expand(b, kvh, n, s, d).reshape(b, h, s, d)
        with sdpa_kernel(SDPBackend.FLASH_ATTENTION):
            return F.scaled_dot_product_attention(q, kk, vv, is_causal=True)

    def upcast_naive() -> torch.Tensor:
        qf, kf, vf = q.float(), k.float().repeat_interleave(n, dim=1), v.float().repeat_interleave(n, dim=1)
        return torch.softmax(qf @ kf.transpose(-2, -1) * d**-0.5, dim=-1) @ vf

    def math_enable_gqa() -> torch.Tensor:
        with sdpa_kernel(SDPBackend.MATH):
            return F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=True)

    for name, fn in (
        ("user_repeat_interleave_flash", repeat_interleave_flash),
        ("user_expand_reshape_flash", expand_reshape_flash),
        ("user_upcast_naive", upcast_naive),
        ("math_enable_gqa", math_enable_gqa),
    ):
        try:
            fn()
            capture(fn, OUT / f"{name}.json", cuda=True)
            print(f"{name}.json", flush=True)
        except Exception as e:  # noqa: BLE001
            print(f"{name}: {type(e).__name__}: {str(e)[:200]}", flush=True)


if __name__ == "__main__":
    layouts()
    user_code()
