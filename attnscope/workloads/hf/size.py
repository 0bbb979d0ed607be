"""Size before building: parameters, and bytes per mode, from a transformers config alone.  No torch.

Parameters (decoder of the Llama family; GPT-2 and BERT add their biases and position tables):

- embeddings ``V·H`` (plus ``P·H`` learned positions and ``2·H`` token types for BERT);
- per layer: attention ``H·(nh·hd) + 2·H·(kv·hd) + (nh·hd)·H``; MLP ``3·H·I`` when gated
  (Llama, Mistral, Qwen2, Gemma), else ``2·H·I``; norms ``2·H`` (Gemma-2: ``4·H``), doubled where they
  carry a bias; biases where the family has them (Qwen2: q, k, v; GPT-2 and BERT: every linear);
- a final norm ``H``; an lm_head ``V·H`` unless the embeddings are tied.

Bytes per mode, ``b`` the dtype's bytes, ``P`` the parameters, ``T = batch·seq`` tokens:

- weights ``P·b`` in every mode;
- prefill and decode: the KV cache ``2·L·T·kv·hd·b``, the logits ``T·V·b``, and one layer's working
  set ``T·(4·H + 2·I)·b`` plus, for eager attention, its scores ``batch·nh·seq²·4`` (fp32 softmax);
- train: gradients ``P·b``, AdamW's two moments ``2·P·b``; activations kept for backward
  ``L·T·(10·H + 3·I)·b`` plus eager's ``L·batch·nh·seq²·(b + 4)``; the loss upcasts the logits
  (``T·V·(b + 4 + 4)``).

These are estimates (a guide within tens of percent on activations, exact on weights for the
listed families), used to refuse a row that cannot fit before anything is allocated.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from attnscope.core.units import fmt_bytes as _fmt
from attnscope.workloads.sizing import fits

GATED = {"llama", "mistral", "qwen2", "gemma", "gemma2", "gemma3_text", "mixtral", "phi3", "qwen3"}
DTYPE_BYTES = {"bf16": 2, "fp16": 2, "fp32": 4}


def _get(cfg: Any, *names: str, default: Any = None) -> Any:
    for n in names:
        v = getattr(cfg, n, None)
        if v is not None:
            return v
    return default


def shape(cfg: Any) -> dict[str, int]:
    """The numbers the counts use: H, I, L, nh, kv, hd, V, positions."""
    h = int(_get(cfg, "hidden_size", "n_embd", "d_model"))
    nh = int(_get(cfg, "num_attention_heads", "n_head"))
    return {
        "H": h,
        "I": int(_get(cfg, "intermediate_size", "n_inner", default=4 * h)),
        "L": int(_get(cfg, "num_hidden_layers", "n_layer")),
        "nh": nh,
        "kv": int(_get(cfg, "num_key_value_heads", default=nh)),
        "hd": int(_get(cfg, "head_dim", default=h // nh)),
        "V": int(_get(cfg, "vocab_size")),
        "P": int(_get(cfg, "max_position_embeddings", "n_positions", default=0)),
    }


def parameters(cfg: Any) -> int:
    """Parameters of the model ``attnscope model`` builds from ``cfg`` (the causal-LM or masked-LM head)."""
    s = shape(cfg)
    h, i, nh, kv, hd, v = s["H"], s["I"], s["nh"], s["kv"], s["hd"], s["V"]
    mt = str(getattr(cfg, "model_type", ""))
    gpt2, bert = mt == "gpt2", mt == "bert"
    q_o = 2 * h * nh * hd
    k_v = 2 * h * kv * hd
    mlp = (3 if mt in GATED else 2) * h * i
    norms = (4 if mt in {"gemma2", "gemma3_text"} else 2) * h
    layer = q_o + k_v + mlp + norms
    if mt == "qwen2":
        layer += nh * hd + 2 * kv * hd
    if gpt2 or bert:  # every linear and norm has a bias
        layer += nh * hd + 2 * kv * hd + h + i + h + norms
    total = s["L"] * layer + v * h
    if gpt2:
        total += s["P"] * h + 2 * h  # learned positions, final norm with bias
    elif bert:
        total += s["P"] * h + 2 * h + 2 * h  # positions, 2 token types, embedding norm with bias
        total += h * h + h + 2 * h + v  # the masked-LM head: dense, its norm, the decoder's bias (weight tied)
    else:
        total += h  # final norm
    # GPT-2 and BERT tie the head to the embeddings unless the config says otherwise; the others say it themselves
    if not bool(getattr(cfg, "tie_word_embeddings", gpt2 or bert)):
        total += v * h  # an lm_head (or BERT's decoder) of its own: V·H
    return total


@dataclass(frozen=True)
class SizeEstimate:
    mode: str
    bytes: int
    parts: dict[str, int] = field(default_factory=dict)

    def text(self) -> str:
        terms = " + ".join(f"{k} {_fmt(b)}" for k, b in self.parts.items() if b)
        return f"~{_fmt(self.bytes)} ({terms})"


def estimate(cfg: Any, mode: str, *, batch: int, seq: int, dtype: str, impl: str = "sdpa") -> SizeEstimate:
    """Bytes one row needs at its peak (module docstring: the formula of each term)."""
    s = shape(cfg)
    b = DTYPE_BYTES[dtype]
    p = parameters(cfg)
    t = batch * seq
    scores_one = batch * s["nh"] * seq * seq if impl == "eager" else 0
    parts: dict[str, int] = {"weights": p * b}
    if mode == "train":
        parts["gradients"] = p * b
        parts["AdamW moments"] = 2 * p * b
        parts["activations"] = s["L"] * t * (10 * s["H"] + 3 * s["I"]) * b + s["L"] * scores_one * (b + 4)
        parts["logits and loss"] = t * s["V"] * (b + 8)
    else:
        parts["KV cache"] = 2 * s["L"] * t * s["kv"] * s["hd"] * b
        parts["logits"] = t * s["V"] * b
        parts["one layer's working set"] = t * (4 * s["H"] + 2 * s["I"]) * b + scores_one * 4
    return SizeEstimate(mode, sum(parts.values()), parts)


def too_big(
    cfg: Any, modes: list[str], impls: list[str], *, batch: int, seq: int, dtype: str, free_bytes: int | None
) -> list[str]:
    """One line per mode whose largest estimate does not fit in the free memory (the one rule,
    :func:`attnscope.workloads.sizing.fits`: ``HEADROOM`` of it)."""
    if free_bytes is None:
        return []
    out = []
    for mode in modes:
        est = max(
            (estimate(cfg, mode, batch=batch, seq=seq, dtype=dtype, impl=i) for i in impls), key=lambda e: e.bytes
        )
        if not fits(est.bytes, free_bytes):
            out.append(f"{mode} needs {est.text()}")
    return out
