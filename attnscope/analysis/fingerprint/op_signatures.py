"""Where each attention op of torch keeps its arguments, and what its causal flag means.

Argument positions come from torch's own schemas (``torch.ops.aten.<op>.default._schema``); read by
:mod:`attnscope.analysis.fingerprint.shape` (the case of a call) and
:mod:`attnscope.analysis.fingerprint.mask_ops` (which call took a built mask).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal


@dataclass(frozen=True)
class OpSig:
    """Where an attention op keeps its arguments (indices into the recorded inputs)."""

    layout: Literal["bhsd", "bshd"]  # how q's dims are ordered
    q: int  # index of q; k and v follow it
    causal: int | None = None  # a bool argument
    mask_type: int | None = None  # efficient's custom_mask_type: 0 none, 1 causal top-left, 2 bottom-right
    scale: int | None = None
    enable_gqa: int | None = None
    attn_mask: int | None = None  # an optional tensor argument: given means the mask is not read
    align: Literal["top_left", "lower_right"] | None = None  # what the causal flag means when Sq != Sk


TOP_LEFT_SDPA = "torch's is_causal is top-left aligned (query i sees keys 0..i)"
TOP_LEFT_EFF = "it passes is_causal to the kernel as custom_mask_type 1 (CausalFromTopLeft): top-left"
TOP_LEFT_CUDNN = "it passes is_causal to cuDNN's set_causal_mask, which is top-left aligned"
LOWER_RIGHT_FLASH = (
    "FlashAttention-2's causal mask is bottom-right aligned (the queries are the last Sq keys); SDPA refuses flash "
    "for is_causal with Sq != Sk, and torch.nn.attention.bias.causal_lower_right calls this op with is_causal=True"
)
ALIGN_WHY = {
    "aten::scaled_dot_product_attention": TOP_LEFT_SDPA,
    "aten::_scaled_dot_product_attention_math": TOP_LEFT_SDPA,
    "aten::_scaled_dot_product_efficient_attention": TOP_LEFT_EFF,
    "aten::_scaled_dot_product_efficient_attention_backward": TOP_LEFT_EFF,
    "aten::_scaled_dot_product_cudnn_attention": TOP_LEFT_CUDNN,
    "aten::_cudnn_attention_forward": TOP_LEFT_CUDNN,
    "aten::_scaled_dot_product_cudnn_attention_backward": TOP_LEFT_CUDNN,
    "aten::_cudnn_attention_backward": TOP_LEFT_CUDNN,
}
# efficient's custom_mask_type (torch's sdp::CustomMaskType): 0 none, 1 CausalFromTopLeft, 2 CausalFromBottomRight
MASK_TYPES: dict[str, tuple[bool, str | None]] = {
    "0": (False, None),
    "1": (True, "top_left"),
    "2": (True, "lower_right"),
}

# Argument positions from torch's own schemas (torch.ops.aten.<op>.default._schema; attn_bias / bias is the
# mask a backend was handed).
OP_SIGS: dict[str, OpSig] = {
    "aten::scaled_dot_product_attention": OpSig(
        "bhsd", 0, causal=5, scale=6, enable_gqa=7, attn_mask=3, align="top_left"
    ),
    "aten::_scaled_dot_product_attention_math": OpSig(
        "bhsd", 0, causal=5, scale=7, enable_gqa=8, attn_mask=3, align="top_left"
    ),
    "aten::_scaled_dot_product_flash_attention": OpSig("bhsd", 0, causal=4, scale=6, align="lower_right"),
    "aten::_flash_attention_forward": OpSig("bshd", 0, causal=8, scale=10, align="lower_right"),
    "aten::_scaled_dot_product_efficient_attention": OpSig("bhsd", 0, causal=6, scale=7, attn_mask=3, align="top_left"),
    "aten::_efficient_attention_forward": OpSig("bshd", 0, mask_type=9, scale=11, attn_mask=3),  # 3: bias
    "aten::_scaled_dot_product_cudnn_attention": OpSig("bhsd", 0, causal=6, scale=8, attn_mask=3, align="top_left"),
    "aten::_cudnn_attention_forward": OpSig("bhsd", 0, causal=10, scale=12, attn_mask=3, align="top_left"),
    "FlexAttentionAutogradOp": OpSig("bhsd", 0, scale=4),
    "aten::_scaled_dot_product_flash_attention_backward": OpSig("bhsd", 1, causal=11, scale=14, align="lower_right"),
    "aten::_flash_attention_backward": OpSig("bshd", 1, causal=11, scale=14, align="lower_right"),
    "aten::_scaled_dot_product_efficient_attention_backward": OpSig(
        "bhsd", 1, causal=11, scale=12, attn_mask=4, align="top_left"
    ),
    "aten::_efficient_attention_backward": OpSig("bshd", 1, mask_type=14, scale=16, attn_mask=4),  # 4: bias
    "aten::_scaled_dot_product_cudnn_attention_backward": OpSig(
        "bhsd", 1, causal=14, scale=15, attn_mask=8, align="top_left"
    ),
    "aten::_cudnn_attention_backward": OpSig("bhsd", 1, causal=14, scale=15, attn_mask=8, align="top_left"),
}
