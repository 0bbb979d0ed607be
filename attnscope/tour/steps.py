"""The tour's step table: what each step sets up, asks, measures and explains.  Plain data.

A question is answered by a number, a choice or a ranking.  Where the answer is one of ``run --guess``'s
predictions, ``predict`` names it (variant, kind, other variant) so an answers file can hold the same
``[[predict]]`` blocks; the other questions are judged in :mod:`attnscope.tour.judge`.

``study`` is the guess ``--auto`` takes: for the first five steps the article's reader's guesses
(``examples/guess_study.toml``); past the article, the H200 figures below, so ``--auto`` asks "does
what the H200 measured hold here?".
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

from attnscope.core.answers import Question
from attnscope.core.types import Case

Size = Literal["gpu", "cpu", "tiny"]  # gpu: the study's shapes; cpu: ≤ 3 minutes on 2 cores; tiny: tests

SEED = "the article the study reproduces (its claims are set against our H200 run in docs/results/h200.md)"
H200_RUN = "attnscope on one H200, torch 2.11 (docs/results/h200.md)"
H200_MASKS = "attnscope on one H200 (docs/results/masks_h200.md)"
H200_DECODE = "attnscope on one H200 (docs/results/h200_2026-12-04.md, decode)"
H200_FORMULATIONS = "compiled flex and attnscope on one H200 (docs/results/masks_formulations.md, h200_2026-12-04.md)"
H200_SWEEP = "attnscope sweep on one H200, forward and backward (docs/results/sweep_h200.md)"


@dataclass(frozen=True)
class Step:
    id: str
    title: str
    setup: str
    questions: tuple[Question, ...]
    variants: tuple[str, ...]
    case: str  # prefill | prefill_bwd | sliding | document | decode
    why: str
    h200: tuple[str, ...]
    h200_source: str
    on_cpu: str = ""  # what differs when there is no GPU
    evidence: tuple[str, ...] = field(default=())  # variants whose fingerprint and strip the reveal shows
    why_cpu: str = ""  # the explanation on a CPU, where the GPU's (``why``) does not hold
    gpu_only: bool = False  # a step about the GPU alone: left out of a tour on a CPU


def case_for(kind: str, size: Size, device: str) -> Case:
    """The step's case at this size.  gpu: the study's shapes; cpu and tiny: small enough for 2 cores."""
    b, h, s, d = {"gpu": (4, 16, 2048, 64), "cpu": (1, 8, 1024, 64), "tiny": (1, 2, 64, 32)}[size]
    if kind in ("prefill", "prefill_bwd"):
        return Case(b, h, s, d, "bf16", True, device=device, mode="fwd_bwd" if kind == "prefill_bwd" else "fwd")
    if kind in ("sliding", "document"):
        mb, ms = {"gpu": (2, 4096), "cpu": (1, 1024), "tiny": (1, 64)}[size]
        lens = {"gpu": "1000,1500,600,996", "cpu": "250,375,150,249", "tiny": "16,24,12,12"}[size]
        win = {"gpu": 256, "cpu": 128, "tiny": 16}[size]
        mask = f"sliding:{win}" if kind == "sliding" else f"document:{lens}"
        return Case(mb, h, ms, d, "bf16", device=device, mask=mask)
    if kind == "decode":
        db, dh, kv, sk, dd = {"gpu": (8, 32, 8, 8192, 128), "cpu": (1, 16, 4, 16384, 64), "tiny": (1, 4, 2, 256, 32)}[
            size
        ]
        return Case(db, dh, 1, dd, "bf16", False, kv_heads=kv, seq_kv=sk, device=device)
    raise ValueError(f"unknown case kind {kind!r}")


def variants_for(step: Step, gpu: bool) -> tuple[str, ...]:
    """GPU steps name CUDA backends; on a CPU they are swapped for what runs there."""
    if gpu:
        return step.variants
    cpu = {
        "fused": ("sdpa_flash",),
        "fwd_bwd": ("naive_inplace", "sdpa_math", "sdpa_flash"),
        "sliding": ("naive_inplace", "sdpa_default", "flex"),
        "document": ("naive_inplace", "sdpa_default", "flex"),
    }
    return cpu.get(step.id, step.variants)


def study_answer(q: Question, gpu: bool) -> Any:
    """The --auto answer: a GPU-only ranking or winner names CPU variants on a CPU (the H200 order kept)."""
    if isinstance(q.study, dict):
        return q.study["gpu" if gpu else "cpu"]
    return q.study


STEPS: tuple[Step, ...] = (
    Step(
        "naive",
        "Naive attention",
        "Five lines of PyTorch: matmul, scale, masked_fill with the causal mask, softmax, matmul. "
        "The mask is applied out of place (`masked_fill`, not `masked_fill_`).",
        (
            Question(
                "naive_kernels",
                "How many kernels (ops on a CPU) will naive launch per call?",
                "number",
                "count",
                5,
                "hidden_copy",
                ("naive", "kernels", None),
            ),
            Question(
                "naive_copy",
                "Is there a copy of a full tensor you did not ask for? (y/n)",
                "choice",
                "yesno",
                "y",
                "hidden_copy",
                ("naive", "hidden_copy", None),
                ("y", "n"),
            ),
        ),
        ("naive",),
        "prefill",
        "Each primitive is its own kernel, and the out-of-place masked_fill first copies the whole score tensor "
        "(aten::clone → copy_) before writing the mask into the copy. That copy is a Memcpy on a GPU: memory "
        "traffic the code never asked for, once per layer and call.",
        (
            "5 kernels per call, the 5 primitives; masked_fill's clone adds a Memcpy DtoD and cuBLAS a Memset, "
            "counted apart from the kernels as every attnscope count does; 2259 µs GPU",
        ),
        H200_RUN,
        evidence=("naive",),
    ),
    Step(
        "inplace",
        "The in-place fix",
        "One character: `masked_fill_` instead of `masked_fill`, so the mask is written into the scores in place.",
        (
            Question(
                "inplace_speedup",
                "How many times faster than naive is naive_inplace? (x, x+ for at least, or lo-hi)",
                "number",
                "ratio",
                "1.05+",
                "hidden_copy",
                ("naive_inplace", "faster_than", "naive"),
            ),
        ),
        ("naive", "naive_inplace"),
        "prefill",
        "The copy is gone and nothing else changed, so the gain is the copy's share of the call: small against "
        "two GEMMs and a softmax over the S×S scores, but paid on every layer of every step.",
        (
            "naive 2259 µs → naive_inplace 2004 µs GPU: 1.13× faster; the Memcpy DtoD is gone (the same 5 "
            "kernels and the Memset)",
        ),
        H200_RUN,
        evidence=("naive", "naive_inplace"),
    ),
    Step(
        "math",
        "SDPA's math backend",
        "`F.scaled_dot_product_attention` forced onto its MATH backend: PyTorch's reference implementation of the "
        "same attention, in one call.",
        (
            Question(
                "math_ratio",
                "sdpa_math time ÷ naive time? (below 1: faster; x, x+ or lo-hi)",
                "number",
                "ratio",
                "0.01-1.0",
                "fp32_upcast",
                ("sdpa_math", "slower_than", "naive"),
            ),
            Question(
                "math_kernels",
                "How many kernels (ops on a CPU) will sdpa_math launch per call?",
                "number",
                "count",
                5,
                "mask_rebuilt",
                ("sdpa_math", "kernels", None),
            ),
            Question(
                "math_upcast",
                "Will it upcast bf16 to fp32? (y/n)",
                "choice",
                "yesno",
                "n",
                "fp32_upcast",
                ("sdpa_math", "upcast", None),
                ("y", "n"),
            ),
        ),
        ("naive", "sdpa_math"),
        "prefill",
        "The math backend upcasts bf16 to fp32 (off the tensor cores onto CUDA cores), rebuilds the causal mask "
        "inside every call and guards fully masked rows with a 'safe' softmax: many more kernels and more bytes "
        "for the same result. It is a reference for debugging, not a fast path.",
        (
            "20 kernels per call (fp32 ffma GEMMs, a triu_tril mask kernel): 5080 µs, 2.3–2.9× slower than naive "
            "(the article: 3.7×)",
        ),
        f"{H200_RUN}; the article's 3.7× from {SEED}",
        evidence=("naive", "sdpa_math"),
    ),
    Step(
        "fused",
        "Efficient, flash and cuDNN: one fused kernel each",
        "Each fused backend runs the whole attention in one kernel and never writes the S×S scores to memory.",
        (
            Question(
                "fused_kernels",
                "How many kernels does sdpa_flash launch per call?",
                "number",
                "count",
                1,
                "low_occupancy_by_design",
                ("sdpa_flash", "kernels", None),
            ),
            Question(
                "flash_occupancy",
                "Theoretical occupancy of sdpa_flash's kernel, in %? (x or lo-hi)",
                "number",
                "pct",
                "50-100",
                "low_occupancy_by_design",
                ("sdpa_flash", "occupancy_pct", None),
                gpu_only=True,
            ),
            Question(
                "occupancy_design",
                "Low occupancy here: by design, or hurting? (design/hurting)",
                "choice",
                "choice",
                "hurting",
                "low_occupancy_by_design",
                None,
                ("design", "hurting"),
                judge="occupancy_design",
                gpu_only=True,
            ),
        ),
        ("sdpa_efficient", "sdpa_flash", "sdpa_cudnn"),
        "prefill",
        "Flash keeps its Q, K and V tiles in registers and shared memory, so only one or two blocks fit on an SM. "
        "Occupancy is low by design: the rate (TFLOP/s against the measured matmul peak) says whether it pays "
        "off. Low occupancy with a low rate would be hurting.",
        (
            "flash: 1 kernel, 12.5% theoretical occupancy (11.9% achieved, Nsight Compute), 215 TFLOP/s; "
            "efficient 102, cuDNN 280–340 TFLOP/s (forward FLOPs 4·B·H·S²·D/2)",
        ),
        f"{H200_RUN}; {SEED} (13% occupancy)",
        on_cpu="No efficient or cuDNN backend on a CPU, and no occupancy: a CPU 'kernel' is an op on cores "
        "without SMs. The CPU's sdpa_flash is a tiled C++ loop.",
        evidence=(),
    ),
    Step(
        "default",
        "What PyTorch picks by default",
        "`F.scaled_dot_product_attention` with no context manager: torch tries its backends in a priority "
        "order and takes the first whose checks pass.",
        (
            Question(
                "default_backend",
                "Which backend will it pick? (flash, efficient, cudnn, math)",
                "choice",
                "choice",
                "flash",
                "sdpa_choice",
                ("sdpa_default", "backend", None),
                ("flash", "efficient", "cudnn", "math"),
            ),
        ),
        ("sdpa_default",),
        "prefill",
        "The order depends on the torch version and the GPU: PyTorch 2.11 on Hopper puts cuDNN first. The "
        "refusals of the others are torch's own debug messages (the reveal lists them).",
        ("torch 2.11 on the H200 picked cuDNN for most shapes (the article: flash)",),
        H200_RUN,
        on_cpu="On a CPU the order is flash then math; there is no cuDNN or efficient backend to refuse.",
        evidence=("sdpa_default",),
    ),
    Step(
        "fwd_bwd",
        "Forward and backward: does the ranking hold?",
        "Training runs the backward too: dq, dk and dv, checked against fp64. Rank the variants fastest first.",
        (
            Question(
                "bwd_ranking",
                "Rank them, fastest first (names or numbers, comma separated)",
                "ranking",
                "ranking",
                {"gpu": "sdpa_cudnn,sdpa_flash,sdpa_efficient", "cpu": "sdpa_flash,naive_inplace,sdpa_math"},
                "slower_than_best",
                judge="ranking",
            ),
        ),
        ("sdpa_efficient", "sdpa_flash", "sdpa_cudnn"),
        "prefill_bwd",
        "The backward recomputes the scores tile by tile and does about 2.5× the forward's FLOPs; kernels that "
        "win the forward can lose it, and the best forward+backward reaches a smaller share of peak.",
        ("forward+backward: cuDNN ~57% of the 989 TFLOP/s spec at best; forward alone 64–68%",),
        H200_SWEEP,
        on_cpu="On a CPU the fused backends are flash (C++) and math; the ranking is between them and naive.",
    ),
    Step(
        "sliding",
        "A sliding-window mask",
        "Each query sees only the W most recent keys. SDPA takes it as a dense mask tensor; FlexAttention as a "
        "mask_mod it can skip whole blocks with.",
        (
            Question(
                "sliding_winner",
                "Who wins?",
                "choice",
                "choice",
                {"gpu": "flex_compiled", "cpu": "flex"},
                "block_sparsity",
                judge="winner",
            ),
        ),
        ("sdpa_cudnn", "sdpa_efficient", "flex_compiled"),
        "sliding",
        "A dense mask makes every score be computed and then thrown away; a block mask skips the blocks that "
        "are fully masked, so the work shrinks with the window. Flash refuses any mask tensor.",
        ("window 256 at B2 H16 S4096 D64: compiled flex 62–66 µs, cuDNN with the dense mask 558 µs",),
        H200_MASKS,
        on_cpu="On a CPU flex runs eager (compiling it takes ~20 s on 2 cores), so its block sparsity is not used.",
    ),
    Step(
        "document",
        "A document mask",
        "Four packed documents, causal inside each. The mask_mod's formulation decides what the kernel computes "
        "per score: a lookup `doc[q] == doc[k] & (q >= k)` or attention-gym's offsets-based search.",
        (
            Question(
                "document_winner",
                "Who wins?",
                "choice",
                "choice",
                {"gpu": "flex_compiled", "cpu": "flex"},
                "block_sparsity",
                judge="winner",
            ),
        ),
        ("sdpa_cudnn", "sdpa_efficient", "flex_compiled"),
        "document",
        "The same mask written two ways costs 4× apart: attention-gym's offsets-based generate_doc_mask_mod "
        "needs 119,808 B of shared memory per block (one block per SM), the plain lookup does not.",
        (
            "B2 H16 S4096 D64, lengths 1000/1500/600/996, compiled flex by do_bench: attention-gym's offsets "
            "mask_mod 580 µs, a document-id lookup 149 µs, the start lookup attnscope builds in 122 µs; "
            "cuDNN with the dense mask 564 µs",
        ),
        H200_FORMULATIONS,
        on_cpu="On a CPU flex runs eager: the mask_mod is evaluated on index grids, no kernel is generated.",
    ),
    Step(
        "decode",
        "A decode step",
        "One new token attends to the whole KV cache (grouped-query heads). Each cached byte is read once and "
        "used for about H/KV multiply-adds.",
        (
            Question(
                "decode_bound",
                "Compute-bound, memory-bound or overhead-bound? (compute/memory/overhead)",
                "choice",
                "choice",
                "memory",
                "split_kv",
                None,
                ("compute", "memory", "overhead"),
                judge="bound",
            ),
            Question(
                "decode_bandwidth",
                "What % of this machine's measured copy bandwidth will it reach? (x or lo-hi)",
                "number",
                "pct",
                "80-100",
                "split_kv",
                judge="bandwidth_pct",
            ),
        ),
        ("sdpa_default",),
        "decode",
        "FLOPs per byte read is about 2·H/KV, far below the machine's balance (matmul peak ÷ bandwidth), so the "
        "time is the KV cache's bytes over the bandwidth; the best kernels split the KV sequence across SMs to "
        "read it at full speed.",
        (
            "B8 H32 KV8 Sk8192 D128: cuDNN's attention kernel reads the 268 MB cache at ~4.2 TB/s (88% of the "
            "4.81 TB/s spec; the call 84% by CUDA-graph replay), flash's split-KV kernel ~4.1 TB/s (85%); "
            "x.sum() over the same bytes reaches 3.7 TB/s",
        ),
        H200_DECODE,
        why_cpu="On a CPU the call's fixed cost (dispatch, allocation, waking the threads) takes most of a decode "
        "step this small: the bytes at the copy bandwidth and the FLOPs at the matmul rate explain a small share of "
        "the time, so the step is overhead-bound, and the split-KV kernels of a GPU have no counterpart here.",
    ),
    Step(
        "cudnn_host",
        "cuDNN's host cost per call",
        "The same prefill attention forced onto cuDNN and onto flash. Before the GPU has work, the host prepares "
        "each call: torch's checks, the cuDNN frontend's graph (built the first time a shape is seen, then looked "
        "up), the launch. `CPU µs` in `attnscope run` is that host time per call, `GPU µs` the kernels'.",
        (
            Question(
                "cudnn_host_ratio",
                "cuDNN's host time per call ÷ flash's? (x, x+ for at least, or lo-hi)",
                "number",
                "ratio",
                "1.55",
                "opaque_library",
                judge="host_ratio",
                gpu_only=True,
            ),
        ),
        ("sdpa_flash", "sdpa_cudnn"),
        "prefill",
        "Host time per call is what the CPU spends before the GPU can start. Where it is below the GPU time the "
        "GPU never waits and the host cost is hidden; on short kernels (small shapes, decode) it can exceed the "
        "GPU time and the GPU waits for launches (CPU-bound). The two backends' host costs differ by little "
        "against their GPU times at this shape.",
        (
            "B4 H16 S2048 D64: cuDNN 20.0 µs of host time per call against its 104.7 µs on the GPU, flash 18.7 "
            "against 160.7 µs: 1.07× (1.05–1.15× over paired rounds); at B1 H8 S512 D64 the sign flips, "
            "0.73–0.80× (the article: 214 against 138 µs, 1.55×)",
        ),
        "attnscope on one H200 (docs/results/h200_launch_host.md, h200.md)",
        evidence=("sdpa_flash", "sdpa_cudnn"),
        gpu_only=True,
    ),
)
