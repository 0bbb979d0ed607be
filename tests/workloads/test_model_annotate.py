"""annotate() leaves the model and transformers exactly as it found them."""

from __future__ import annotations

import sys

import pytest

pytest.importorskip("transformers")


def test_annotate_puts_everything_back():
    import torch

    from attnscope.workloads.hf.config import build_config, resolve
    from attnscope.workloads.hf.module_ranges import annotate, module_roles

    from transformers import AutoModelForCausalLM  # isort: skip

    cfg = build_config(resolve("tiny"), layers=1)
    model = AutoModelForCausalLM.from_config(cfg, attn_implementation="sdpa")
    ml = sys.modules[type(model).__module__]
    from transformers.modeling_utils import ALL_ATTENTION_FUNCTIONS

    before = (ml.repeat_kv, ml.apply_rotary_pos_emb, ml.eager_attention_forward, ALL_ATTENTION_FUNCTIONS["sdpa"])
    roles = {(role, name) for _, role, name in module_roles(model)}
    assert ("attention", "model.layers.0.self_attn") in roles
    assert ("proj", "model.layers.0.self_attn.k_proj") in roles
    assert ("mlp", "model.layers.0.mlp") in roles and ("layer", "model.layers.0") in roles
    assert ("lm_head", "lm_head") in roles and ("rotary_emb", "model.rotary_emb") in roles
    with annotate(model):
        assert ml.repeat_kv is not before[0] and ALL_ATTENTION_FUNCTIONS["sdpa"] is not before[3]
        model(torch.randint(0, cfg.vocab_size, (1, 8)))
    after = (ml.repeat_kv, ml.apply_rotary_pos_emb, ml.eager_attention_forward, ALL_ATTENTION_FUNCTIONS["sdpa"])
    assert after == before
    assert not any(m._forward_hooks or m._forward_pre_hooks for m in model.modules())
