"""Serving cases in the case table: lengths, the block table, FLOPs and bytes by hand, the checks."""

from __future__ import annotations

import math

import pytest

from attnscope.analysis.roofline import call_bytes
from attnscope.core import serving
from attnscope.core.case import FIELD, Case, file_stem, recommender_axes
from attnscope.core.cases import Axes, grid, make_case
from attnscope.core.flops import attention_flops


def test_kv_lens_list_and_distribution():
    assert serving.parse_kv_lens("100, 40").lengths == (100, 40)
    u = serving.parse_kv_lens("uniform:1024..32768@7")
    assert (u.lo, u.hi, u.seed, u.canonical) == (1024, 32768, 7, "uniform:1024..32768@7")
    assert serving.parse_kv_lens("uniform:5..9").canonical == "uniform:5..9@0"
    lens = u.resolve(32)
    assert len(lens) == 32 and all(1024 <= n <= 32768 for n in lens)
    assert len(set(lens)) > 16  # a ragged batch, not one length
    assert u.resolve(32) == lens  # seeded: the same batch every time
    assert serving.parse_kv_lens("uniform:1024..32768@8").resolve(32) != lens
    for bad in ("uniform:9..5", "zipf:1..9", "1,0", "a,b", "uniform:0..4"):
        with pytest.raises(ValueError, match=r"^kv_lens "):
            serving.parse_kv_lens(bad)


def test_kv_lens_sweep_axis_entries():
    assert serving.parse_kv_lens_axis("uniform:1..9,list:3,4,list:5,6") == ["uniform:1..9@0", "3,4", "5,6"]
    assert serving.parse_kv_lens_axis("3,4") == ["3,4"]
    with pytest.raises(ValueError, match="follows a distribution"):
        serving.parse_kv_lens_axis("uniform:1..9,4")


def test_block_table_is_a_scattered_permutation_of_the_pool():
    lens = (33, 16, 1, 40)  # pages of 16: 3 + 1 + 1 + 3 = 8
    t = serving.block_table(lens, 16)
    assert [len(r) for r in t] == [3, 1, 1, 3]
    flat = [p for r in t for p in r]
    assert sorted(flat) == list(range(8))  # every pool page once
    assert flat != list(range(8))  # not in order: scattered as an allocator leaves them
    assert serving.block_table(lens, 16) == t  # seeded
    rec = serving.table_record(t, 16)
    assert rec["table"] == t and rec["pages_per_sequence"] == [3, 1, 1, 3]
    assert "table" not in serving.table_record(t, 16, keep=4)


def test_case_resolves_lengths_sets_seq_kv_and_defaults_to_lower_right_causal():
    c = make_case("cpu", batch=3, seq_q=1, kv_lens="7,30,12", page_size=4)
    assert c.seq_kv == 30 and c.kv_lengths == (7, 30, 12)
    assert c.mask == "causal_lower_right" and c.serving_kind == "decode"
    assert Case.from_dict(c.to_dict()) == c
    assert " decode paged:4 kv_lens=7,30,12" in c.label()
    assert "-p4-kvl3x" in file_stem(c)
    assert make_case("cpu", seq_q=4, seq_kv=64, page_size=16).serving_kind == "verify"
    assert make_case("cpu", seq_q=64, seq_kv=512, kv_lens="512").serving_kind == "prefill_chunk"
    # a dense case is untouched: no keys added to its JSON (documents and job keys as before)
    assert "page_size" not in make_case("cpu").to_dict() and "kv_lens" not in make_case("cpu").to_dict()


@pytest.mark.parametrize(
    ("kw", "msg"),
    [
        ({"kv_lens": "7,30", "seq_kv": None}, "2 length"),
        ({"kv_lens": "7,30,12", "seq_kv": 12}, "leave seq_kv out"),
        ({"kv_lens": "7,3,30", "seq_q": 4}, "shorter than seq_q=4"),
        ({"page_size": 16, "mode": "fwd_bwd"}, "drop mode fwd_bwd"),
        ({"page_size": 16, "alibi": True}, r"drop alibi$"),
        ({"page_size": 16, "mask": "sliding:8@lower_right"}, "causal_lower_right"),
    ],
)
def test_serving_case_refusals(kw, msg):
    base = {"batch": 3, "seq_q": 1, "seq_kv": 30}
    with pytest.raises(ValueError, match=msg):
        make_case("cpu", **{**base, **kw})


def test_flops_count_each_sequence_on_its_own_length():
    """Sq=4, lengths 10 and 6, lower-right causal: query i sees L-4+i+1 keys.
    L=10: 7+8+9+10 = 34; L=6: 3+4+5+6 = 18; H=2 heads: 2·52 = 104 kept; FLOPs 4·D·104 with D=8."""
    c = make_case("cpu", batch=2, heads=2, head_dim=8, seq_q=4, kv_lens="10,6", page_size=4)
    assert attention_flops(c) == 4 * 8 * 104
    none = make_case("cpu", batch=2, heads=2, head_dim=8, seq_q=4, kv_lens="10,6", mask="none")
    assert attention_flops(none) == 4 * 8 * 2 * 4 * 16  # every key: H·Sq·ΣL


def test_bytes_count_only_what_each_sequence_keeps():
    """B=2 H=4 H_kv=2 D=8 bf16, Sq=1, lengths 10 and 33, pages of 16:
    Q + O = 2·2·4·1·8·2 = 256; K+V = 2·2·8·2·(10+33) = 2752; lengths 4·2 = 8; table 4·2·3 (33 → 3 pages) = 24."""
    c = make_case("cpu", batch=2, heads=4, kv_heads=2, head_dim=8, seq_q=1, kv_lens="10,33", page_size=16)
    n, words = call_bytes(c.to_dict())
    assert n == 256 + 2752 + 8 + 24
    assert "Σ L_b = 43" in words
    packed = make_case("cpu", batch=2, heads=4, kv_heads=2, head_dim=8, seq_q=1, kv_lens="10,33")
    assert call_bytes(packed.to_dict())[0] == 256 + 2752 + 8


def test_page_size_and_kv_lens_are_sweep_axes_and_recommender_axes():
    assert FIELD["page_size"].axis is not None and FIELD["kv_lens"].axis is not None
    axes = Axes(seq=[1], page_size=[None, 16], kv_lens=["uniform:20..40@1"], batch=[4])
    cases = grid(axes, "cpu")
    assert [c.page_size for c in cases] == [None, 16]
    assert all(c.kv_lens == "uniform:20..40@1" and c.is_serving for c in cases)
    ra = recommender_axes()
    assert ra.symbol["page_size"] == "P" and "page_size" in ra.numeric and "kv_lens" in ra.policy
    assert FIELD["page_size"].axis("0,16,64") == [None, 16, 64]


def test_pool_bytes_are_whole_pages():
    lens = (10, 33)
    assert serving.pool_tokens(lens, 16) == (1 + 3) * 16
    assert serving.pool_tokens(lens, None) == 43
    assert serving.causal_kept(4, 10) == 34 == sum(10 - 4 + i + 1 for i in range(4))
    assert serving.pages_of(33, 16) == math.ceil(33 / 16)


def test_the_size_check_counts_the_pool_in_whole_pages():
    """B=2 H=4 H_kv=2 D=8 bf16 Sq=1, lengths 10 and 33, pages of 16: the pool is (1 + 3) pages · 16 slots = 64 tokens;
    inputs = q (2·4·1·8) + K and V (2 · 64·2·8) elements · 2 B = (64 + 2048) · 2 = 4224 B."""
    from attnscope.workloads.sizing import input_bytes, variant_bytes

    c = make_case("cpu", batch=2, heads=4, kv_heads=2, head_dim=8, seq_q=1, kv_lens="10,33", page_size=16)
    assert input_bytes(c) == 4224
    # the gather copies K and V for the longest sequence in each batch row: 2 · 2·2·33·8 · 2 B = 4224 B
    assert variant_bytes(c, "paged_gather_flash").parts["gathered K, V"] == 4224
    # eager flex scores every pool token: 4 fp32 matrices of B·H·Sq·64 = 4·2·4·64·4 B = 8192 B
    assert variant_bytes(c, "paged_flex").parts["4 fp32 score matrices over the pool"] == 8192
    # and broadcasts the pool's K to every (batch, query head) in fp32 for its matmul: 2·4·64·8·4 B = 16384 B
    assert variant_bytes(c, "paged_flex").parts["K (then V) broadcast over batch and heads, fp32"] == 16384
