"""Attention libraries outside torch: the name advice says, the module each imports as, what to install, and the
variants that measure it.  Pure.

The environment records which of them import where a run measured (``Env.libraries``:
:func:`attnscope.measure.env.collect`), and advice names one only where it is known to import there
(:func:`attnscope.analysis.rules.libraries.importable`).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Library:
    name: str  # as advice says it
    module: str  # what the variants import
    install: str  # the pip requirement
    variants: tuple[str, ...]  # the variants that measure it


LIBRARIES: tuple[Library, ...] = (
    Library(
        "FlashInfer", "flashinfer", "flashinfer-python", ("flashinfer_prefill", "flashinfer_decode", "paged_flashinfer")
    ),
    Library("FlashAttention 2", "flash_attn", "flash-attn", ("flash_attn2",)),
    Library("FlashAttention 3", "flash_attn_interface", "flash-attention/hopper (built from source)", ("flash_attn3",)),
    Library("xformers", "xformers.ops", "xformers", ("xformers",)),
    Library("SageAttention", "sageattention", "sageattention", ("sageattention",)),
    Library("the cuDNN frontend", "cudnn", "nvidia-cudnn-frontend", ("cudnn_frontend",)),
)

BY_MODULE = {lib.module: lib for lib in LIBRARIES}
FLASHINFER = BY_MODULE["flashinfer"]

__all__ = ["BY_MODULE", "FLASHINFER", "LIBRARIES", "Library"]
