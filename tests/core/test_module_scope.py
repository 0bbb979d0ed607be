"""The role of a with_stack module range, from its class name alone."""

from __future__ import annotations

import pytest

from attnscope.core.scopes import module_scope


@pytest.mark.parametrize(
    ("name", "role"),
    [
        ("nn.Module: LlamaAttention_0", "attention"),
        ("nn.Module: Linear_3", "proj"),
        ("nn.Module: LlamaMLP_1", "mlp"),
        ("nn.Module: LlamaRMSNorm_2", "norm"),
        ("nn.Module: Embedding_0", "embedding"),
        ("nn.Module: BertLMPredictionHead_0", "lm_head"),
        ("nn.Module: BertOnlyMLMHead_0", "lm_head"),  # the masked-LM head around the prediction head
        ("nn.Module: GPT2LMHeadModel_0", None),  # the whole model, whose name holds "LMHead": not the lm_head
        ("aten::mm", None),  # not a module range
    ],
)
def test_role_from_the_class_name(name: str, role: str | None) -> None:
    s = module_scope(name)
    assert (s.role if s is not None else None) == role
