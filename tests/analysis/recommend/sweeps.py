"""Hand-made sweep rows shared by the sweep recommendation's tests: one row per (variant, S, D) with its
quartiles, the hand-built sweep whose answers the tests work out, and a sweep of implementations (sdpa_default
running cuDNN beside sdpa_cudnn)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

DATA = Path(__file__).parents[2] / "data" / "cpu"
CUDNN = [{"name": "cudnn_generated_fort_native_sdpa_sm90_flash_fprop_wgmma_f16_knob_3_64x64x64_4x1x1_kernel0_0"}]
CUDNN[0]["category"] = "attention"
FLASH = [{"name": "void pytorch_flash::flash_fwd_kernel<Flash_fwd_kernel_traits<64, 128>>(Flash_fwd_params)"}]
FLASH[0]["category"] = "attention"
GEMM = [{"name": "sm90_xmma_gemm_bf16bf16_bf16f32", "category": "gemm"}]


def row(
    variant: str,
    s: int,
    d: int,
    med: float | None = None,
    p25: float | None = None,
    p75: float | None = None,
    *,
    status: str = "ok",
    numerics_ok: bool | None = True,
    kernels: list[dict[str, Any]] | None = None,
    device: str = "cuda",
    batch: int = 1,
    mode: str = "fwd",
    **extra: Any,
) -> dict[str, Any]:
    """A row as report/json.py writes it.  Its CPU time is 1 µs everywhere: were it compared on a GPU,
    every variant would tie."""
    case = {"batch": batch, "heads": 8, "seq_q": s, "head_dim": d, "dtype": "bf16", "causal": True}
    case |= {"kv_heads": None, "seq_kv": None, "device": device, "mask": None, "softcap": None, "alibi": False}
    r: dict[str, Any] = {"variant": variant, "case": case | {"mode": mode}, "status": status, "mode": mode}
    r["reason"] = extra.pop("reason", None)
    r["numerics_ok"] = numerics_ok if status == "ok" else None
    r["kernels"] = kernels or []
    t = {"median_us": med, "p25_us": p25, "p75_us": p75, "noisy": False, "method": "CUDA events, median of 200"}
    if device == "cpu":
        r |= {"gpu_time_us": None, "gpu_time": None, "cpu_time_us": med, "cpu_time": t if med is not None else None}
    else:
        r |= {"gpu_time_us": med, "gpu_time": t if med is not None else None}
        r |= {"cpu_time_us": 1.0, "cpu_time": {"median_us": 1.0, "p25_us": 1.0, "p75_us": 1.0}}
    return r | extra


def hand_sweep() -> list[dict[str, Any]]:
    """8 points: S 128, 256, 512, 1024 × D 64, 128, forward, on a GPU (µs: median [p25, p75]).

    S,D       flash           cudnn           sdpa_default (ran)       naive / others
    128,64    10 [9.5,10.5]   12 [11.5,12.5]  12.5 [12,13] (cudnn)     40; flex_compiled 4, wrong; sdpa_math oom
    256,64    20 [19,21]      22 [21,23]      22 [21,23] (cudnn)       80
    512,64    50 [48,52]      40 [39,41]      40.5 [40,41] (cudnn)     160
    1024,64   124 [120,128]   100 [98,102]    125 [123,127] (flash)    timeout
    128,128   20 [19,21]      30 [29,31]      30 [29.5,30.5] (cudnn)   80
    256,128   40 [39,41]      60 [58,62]      40.4 [39.8,41] (flash)   160
    512,128   80 [78,82]      90 [88,92]      90 [89,91] (cudnn)       320, numerics not checked
    1024,128  260 [250,270]   200 [195,205]   198 [194,202] (cudnn)    crashed
    """
    rows = []
    table = {
        (128, 64): ((10, 9.5, 10.5), (12, 11.5, 12.5), (12.5, 12, 13, CUDNN)),
        (256, 64): ((20, 19, 21), (22, 21, 23), (22, 21, 23, CUDNN)),
        (512, 64): ((50, 48, 52), (40, 39, 41), (40.5, 40, 41, CUDNN)),
        (1024, 64): ((124, 120, 128), (100, 98, 102), (125, 123, 127, FLASH)),
        (128, 128): ((20, 19, 21), (30, 29, 31), (30, 29.5, 30.5, CUDNN)),
        (256, 128): ((40, 39, 41), (60, 58, 62), (40.4, 39.8, 41, FLASH)),
        (512, 128): ((80, 78, 82), (90, 88, 92), (90, 89, 91, CUDNN)),
        (1024, 128): ((260, 250, 270), (200, 195, 205), (198, 194, 202, CUDNN)),
    }
    for (s, d), (fl, cu, de) in table.items():
        rows.append(row("sdpa_flash", s, d, *fl, kernels=FLASH))
        rows.append(row("sdpa_cudnn", s, d, *cu, kernels=CUDNN))
        rows.append(row("sdpa_default", s, d, *de[:3], kernels=de[3]))
        naive = s * d / 204.8  # 40 at S=128 D=64, doubling with S and with D
        if (s, d) == (1024, 64):
            rows.append(row("naive", s, d, status="timeout", reason="no result within 60 s"))
        elif (s, d) == (1024, 128):
            rows.append(row("naive", s, d, status="crashed", reason="worker died: SIGABRT\nlast line"))
        else:
            ok = None if (s, d) == (512, 128) else True
            rows.append(row("naive", s, d, naive, naive - 1, naive + 1, kernels=GEMM, numerics_ok=ok))
    wrong = row("flex_compiled", 128, 64, 4, 3.9, 4.1, numerics_ok=False, max_rel_error=0.5, error_tolerance=0.02)
    rows += [wrong, row("sdpa_math", 128, 64, status="oom", reason="CUDA out of memory")]
    return rows


def _cudnn_at(s: int) -> list[dict[str, Any]]:
    """cuDNN's kernel has another name at each shape (its tile), as on the H200."""
    return [{"name": f"cudnn_generated_fort_native_sdpa_sm90_flash_fprop_wgmma_f16_knob_{s}", "category": "attention"}]


def impl_sweep() -> list[dict[str, Any]]:
    """S 128…4096, D=64, forward (µs: median [p25, p75]); sdpa_default ran flash's kernel at S ≤ 256, cuDNN's after.

    S      sdpa_flash            sdpa_cudnn            sdpa_default (ran)
    128    10 [9.8, 10.2]        12 [11.8, 12.2]       10.1 [9.9, 10.3] (flash)
    256    20 [19.8, 20.2]       21 [20.9, 21.1]       19.9 [19.7, 20.1] (flash)
    512    41 [40.1, 41.9]       40.2 [40, 40.4]       40 [39.8, 40.2] (cudnn)
    1024   100 [99, 101]         80 [79.5, 80.5]       80.5 [80, 81] (cudnn)
    2048   150 [149, 151]        160 [159, 161]        161 [160, 162] (cudnn)
    4096   302 [299, 305]        300 [297, 303]        301 [298, 304] (cudnn)
    """
    table = {
        128: ((10, 9.8, 10.2), (12, 11.8, 12.2), (10.1, 9.9, 10.3), "flash"),
        256: ((20, 19.8, 20.2), (21, 20.9, 21.1), (19.9, 19.7, 20.1), "flash"),
        512: ((41, 40.1, 41.9), (40.2, 40, 40.4), (40, 39.8, 40.2), "cudnn"),
        1024: ((100, 99, 101), (80, 79.5, 80.5), (80.5, 80, 81), "cudnn"),
        2048: ((150, 149, 151), (160, 159, 161), (161, 160, 162), "cudnn"),
        4096: ((302, 299, 305), (300, 297, 303), (301, 298, 304), "cudnn"),
    }
    rows = []
    for s, (fl, cu, de, ran) in table.items():
        rows.append(row("sdpa_flash", s, 64, *fl, kernels=FLASH))
        rows.append(row("sdpa_cudnn", s, 64, *cu, kernels=_cudnn_at(s)))
        rows.append(row("sdpa_default", s, 64, *de, kernels=FLASH if ran == "flash" else _cudnn_at(s)))
    return rows


def write_rows(path: Path, rows: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path
