"""The size check's counts against hand arithmetic and the published parameter counts of the real models."""

from __future__ import annotations

import pytest

pytest.importorskip("transformers")

from attnscope.workloads.hf.config import build_config, resolve
from attnscope.workloads.hf.size import estimate, parameters, too_big


def _cfg(name: str, layers: int | None = None):
    return build_config(resolve(name), layers=layers)


def test_tiny_by_hand():
    # V 512, H 128, I 256, 4 heads, 2 KV heads, head_dim 32, 2 layers, untied lm_head
    per_layer = 2 * 128 * 128 + 2 * 128 * 64 + 3 * 128 * 256 + 2 * 128  # q+o, k+v, gated MLP, two norms
    assert per_layer == 147_712
    assert parameters(_cfg("tiny")) == 2 * per_layer + 512 * 128 + 512 * 128 + 128


def test_llama_3_8b_by_hand():
    h, i, v = 4096, 14336, 128256
    per_layer = 2 * h * h + 2 * h * 1024 + 3 * h * i + 2 * h
    assert parameters(_cfg("llama-3-8b")) == 32 * per_layer + 2 * v * h + h == 8_030_261_248


@pytest.mark.parametrize(
    "name,published",
    [("gpt2", 124_439_808), ("bert-base", 109_514_298), ("mistral-7b", 7_241_732_096)],
)
def test_published_counts(name, published):
    # GPT2LMHeadModel (tied), BertForMaskedLM, Mistral-7B-v0.1: the counts their model cards give
    assert parameters(_cfg(name)) == published


def test_train_bytes_by_hand():
    cfg = _cfg("tiny")
    p = 426_624
    e = estimate(cfg, "train", batch=1, seq=32, dtype="bf16")
    assert e.parts["weights"] == 2 * p and e.parts["gradients"] == 2 * p and e.parts["AdamW moments"] == 4 * p
    assert e.parts["activations"] == 2 * 32 * (10 * 128 + 3 * 256) * 2  # layers × tokens × (10H + 3I) × bytes
    assert e.parts["logits and loss"] == 32 * 512 * (2 + 8)
    assert e.bytes == sum(e.parts.values())


def test_prefill_bytes_by_hand_eager_adds_scores():
    cfg = _cfg("tiny")
    sdpa = estimate(cfg, "prefill", batch=2, seq=64, dtype="fp32", impl="sdpa")
    eager = estimate(cfg, "prefill", batch=2, seq=64, dtype="fp32", impl="eager")
    assert sdpa.parts["KV cache"] == 2 * 2 * 128 * 2 * 32 * 4  # K and V × layers × tokens × kv heads × hd × bytes
    assert eager.bytes - sdpa.bytes == 2 * 4 * 64 * 64 * 4  # batch × heads × S² fp32 scores


def test_llama_3_8b_training_refused_on_22_gib():
    over = too_big(
        _cfg("llama-3-8b"), ["prefill", "train"], ["sdpa"], batch=1, seq=128, dtype="bf16", free_bytes=22 * 1024**3
    )
    # weights alone are 8.03e9 × 2 B = 14.96 GiB (< 0.85 × 22 GiB); training needs 4× that
    assert len(over) == 1 and over[0].startswith("train needs ~")
    assert too_big(_cfg("tiny"), ["train"], ["eager"], batch=1, seq=32, dtype="bf16", free_bytes=10**9) == []
