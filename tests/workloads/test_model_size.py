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


def _ns(**kw):
    from types import SimpleNamespace

    return SimpleNamespace(**kw)


def test_shape_reads_every_family_s_names_and_defaults():
    from attnscope.workloads.hf.size import shape

    # GPT-2's names, no n_inner (4·H), no KV heads (= heads), no head_dim (H / heads)
    gpt2 = _ns(n_embd=64, n_head=4, n_layer=3, vocab_size=100, n_positions=32, n_inner=None)
    assert shape(gpt2) == {"H": 64, "I": 256, "L": 3, "nh": 4, "kv": 4, "hd": 16, "V": 100, "P": 32}
    # Llama's names, an explicit head_dim that is not H / heads, GQA, max_position_embeddings
    llama = _ns(
        hidden_size=96,
        intermediate_size=200,
        num_hidden_layers=2,
        num_attention_heads=6,
        num_key_value_heads=2,
        head_dim=32,
        vocab_size=50,
        max_position_embeddings=128,
    )
    assert shape(llama) == {"H": 96, "I": 200, "L": 2, "nh": 6, "kv": 2, "hd": 32, "V": 50, "P": 128}
    # d_model (T5-like names) and no position table
    t5 = _ns(d_model=48, num_attention_heads=3, num_hidden_layers=1, vocab_size=10)
    assert shape(t5) == {"H": 48, "I": 192, "L": 1, "nh": 3, "kv": 3, "hd": 16, "V": 10, "P": 0}


def _llama_like(model_type: str, tied: bool) -> object:
    return _ns(
        model_type=model_type,
        hidden_size=8,
        intermediate_size=16,
        num_hidden_layers=2,
        num_attention_heads=2,
        num_key_value_heads=1,
        head_dim=4,
        vocab_size=10,
        tie_word_embeddings=tied,
    )


def test_parameters_of_qwen2_gemma2_and_an_ungated_family_by_hand():
    # H 8, I 16, 2 heads of 4, 1 KV head, V 10, 2 layers
    q_o, k_v = 2 * 8 * 2 * 4, 2 * 8 * 1 * 4  # 128, 64
    gated, plain = 3 * 8 * 16, 2 * 8 * 16  # 384, 256
    # Qwen2: q, k, v biases (2·4 + 2·1·4 = 16), norms 2·H, final norm H, lm_head V·H untied
    qwen2 = q_o + k_v + gated + 2 * 8 + 16
    assert parameters(_llama_like("qwen2", tied=False)) == 2 * qwen2 + 10 * 8 + 8 + 10 * 8
    assert parameters(_llama_like("qwen2", tied=True)) == 2 * qwen2 + 10 * 8 + 8
    # Gemma 2: four norms per layer (4·H)
    gemma2 = q_o + k_v + gated + 4 * 8
    assert parameters(_llama_like("gemma2", tied=True)) == 2 * gemma2 + 10 * 8 + 8
    # a family outside the gated list: a 2-matrix MLP
    other = q_o + k_v + plain + 2 * 8
    assert parameters(_llama_like("opt", tied=False)) == 2 * other + 10 * 8 + 8 + 10 * 8


def test_decode_bytes_by_hand_with_eager_scores():
    from attnscope.workloads.hf.size import estimate

    cfg = _llama_like("llama", tied=False)
    p = parameters(cfg)
    e = estimate(cfg, "decode", batch=3, seq=5, dtype="fp16", impl="eager")
    t = 3 * 5
    assert e.parts == {
        "weights": p * 2,
        "KV cache": 2 * 2 * t * 1 * 4 * 2,  # K and V × layers × tokens × kv heads × hd × bytes
        "logits": t * 10 * 2,
        "one layer's working set": t * (4 * 8 + 2 * 16) * 2 + 3 * 2 * 5 * 5 * 4,  # + batch × heads × S² fp32
    }
    assert e.bytes == sum(e.parts.values()) and e.mode == "decode"
    train = estimate(cfg, "train", batch=3, seq=5, dtype="fp32", impl="eager")
    # activations: L·T·(10H + 3I)·b + L·(batch·nh·S²)·(b + 4)
    assert train.parts["activations"] == 2 * t * (10 * 8 + 3 * 16) * 4 + 2 * (3 * 2 * 25) * (4 + 4)
    assert train.parts["logits and loss"] == t * 10 * (4 + 8)


def test_estimate_text_names_each_nonzero_term_in_its_unit():
    from attnscope.workloads.hf.size import SizeEstimate

    e = SizeEstimate(
        "train", 3 * 1024**3 + 512 * 1024**2, {"weights": 3 * 1024**3, "gradients": 0, "activations": 512 * 1024**2}
    )
    assert e.text() == "~3.5 GiB (weights 3.0 GiB + activations 512.0 MiB)"
    small = SizeEstimate("decode", 1536 + 1023, {"a": 1536, "b": 1023})
    assert small.text() == "~2.5 KiB (a 1.5 KiB + b 1023 B)"


def test_too_big_refuses_above_the_headroom_only_and_takes_the_largest_implementation():
    from attnscope.workloads.hf.size import estimate
    from attnscope.workloads.sizing import HEADROOM

    cfg = _llama_like("llama", tied=False)
    kw = {"batch": 2, "seq": 64, "dtype": "fp32"}
    eager = estimate(cfg, "prefill", impl="eager", **kw).bytes
    sdpa = estimate(cfg, "prefill", impl="sdpa", **kw).bytes
    assert eager > sdpa
    assert too_big(cfg, ["prefill"], ["sdpa", "eager"], free_bytes=None, **kw) == []
    # free memory whose headroom just holds eager: fits; just short of it: refused, quoting eager (the larger)
    free = int(eager / HEADROOM) + 1
    assert too_big(cfg, ["prefill"], ["sdpa", "eager"], free_bytes=free, **kw) == []
    free_short = int(eager / HEADROOM) - 1
    over = too_big(cfg, ["prefill"], ["sdpa", "eager"], free_bytes=free_short, **kw)
    assert over == [f"prefill needs {estimate(cfg, 'prefill', impl='eager', **kw).text()}"]
    assert too_big(cfg, ["prefill"], ["sdpa"], free_bytes=free_short, **kw) == []  # sdpa alone fits


def test_names_and_defaults_the_first_tests_left_open():
    from attnscope.workloads.hf.size import estimate, shape

    # GPT-2 with its n_inner set
    assert shape(_ns(n_embd=64, n_head=4, n_layer=1, vocab_size=10, n_inner=300))["I"] == 300
    # no model_type: no family's extras; no tie_word_embeddings: an untied lm_head
    bare = _ns(hidden_size=8, intermediate_size=16, num_hidden_layers=1, num_attention_heads=2, vocab_size=10)
    assert parameters(bare) == (2 * 8 * 8 + 2 * 8 * 8 + 2 * 8 * 16 + 2 * 8) + 10 * 8 + 8 + 10 * 8
    # Gemma 3's text model has Gemma 2's four norms per layer
    g3 = _llama_like("gemma3_text", tied=True)
    assert parameters(g3) == 2 * (2 * 8 * 2 * 4 + 2 * 8 * 1 * 4 + 3 * 8 * 16 + 4 * 8) + 10 * 8 + 8
    # Qwen2 with 2 KV heads: biases 2·4 (q) + 2·2·4 (k, v)
    qwen = _llama_like("qwen2", tied=True)
    qwen.num_key_value_heads = 2
    assert parameters(qwen) == 2 * (2 * 8 * 2 * 4 + 2 * 8 * 2 * 4 + 3 * 8 * 16 + 2 * 8 + 2 * 4 + 2 * 2 * 4) + 10 * 8 + 8
    # the implementation defaults to sdpa (no eager scores)
    cfg = _llama_like("llama", tied=False)
    assert estimate(cfg, "prefill", batch=1, seq=8, dtype="fp32") == estimate(
        cfg, "prefill", batch=1, seq=8, dtype="fp32", impl="sdpa"
    )


def test_units_switch_at_exactly_one_kib_and_one_gib():
    from attnscope.workloads.hf.size import SizeEstimate

    assert SizeEstimate("x", 1024, {"a": 1024}).text() == "~1.0 KiB (a 1.0 KiB)"
    assert SizeEstimate("x", 1024**3, {"a": 1023}).text() == "~1.0 GiB (a 1023 B)"


def test_an_estimate_of_exactly_the_headroom_fits(monkeypatch):
    from attnscope.workloads.hf import size

    cfg = _llama_like("llama", tied=False)
    need = size.estimate(cfg, "train", batch=1, seq=4, dtype="fp32").bytes
    monkeypatch.setattr("attnscope.workloads.sizing.HEADROOM", 0.5)  # the one rule's fraction
    assert too_big(cfg, ["train"], ["sdpa"], batch=1, seq=4, dtype="fp32", free_bytes=2 * need) == []
    assert too_big(cfg, ["train"], ["sdpa"], batch=1, seq=4, dtype="fp32", free_bytes=2 * need - 1) != []


@pytest.mark.parametrize("name", ["gpt2", "bert-base"])
def test_an_untied_head_adds_vocab_times_hidden(name):
    cfg = _cfg(name)
    tied = parameters(cfg)
    cfg.tie_word_embeddings = False
    # GPT-2: V = 50,257, H = 768; BERT-base: V = 30,522, H = 768 — the head's own weight V·H
    v, h = (50_257, 768) if name == "gpt2" else (30_522, 768)
    assert parameters(cfg) - tied == v * h
