"""Masks: parsing, the alignment refusal, kept-score counts by hand, and the fp64 reference of every mask
against attention written out here with Python loops (independent of attention-gym and of the tool)."""

from __future__ import annotations

import itertools
import math

import pytest

from attnscope.core.flops import attention_flops, kept_scores
from attnscope.core.masks import MaskSpec, ambiguity_message, check_mask, kept_formula, kept_pairs, parse_mask
from attnscope.core.types import Case


def case(mask: str | None = None, b: int = 1, h: int = 1, sq: int = 4, sk: int | None = None, d: int = 1, **kw):
    return Case(b, h, sq, d, dtype="fp32", seq_kv=sk, mask=mask, **kw)


# Kept score entries per (batch, head), added up row by row by hand.
HAND = [
    ("none", 1, 3, 4, 12),  # 3 rows × 4 keys
    ("causal", 1, 4, 4, 10),  # 1+2+3+4
    ("causal@top_left", 1, 2, 5, 3),  # 1+2: top-left ignores keys 2..4
    ("causal@top_left", 1, 5, 2, 9),  # 1+2+2+2+2
    ("causal_lower_right", 1, 2, 5, 9),  # queries at positions 3, 4: 4+5
    ("causal_lower_right", 1, 1, 1024, 1024),  # decode: the one query sees the whole cache
    ("sliding:3", 1, 5, 5, 12),  # 1+2+3+3+3
    ("sliding:2@lower_right", 1, 2, 6, 4),  # 2+2
    ("sliding:1", 1, 4, 4, 4),  # itself only
    ("document:2,3", 1, 5, 5, 9),  # (1+2) + (1+2+3)
    ("prefix:3", 1, 5, 5, 18),  # 3+3+3+4+5
    ("prefix:2@lower_right", 1, 2, 5, 9),  # queries at 3, 4: 4+5
    ("padding:2,4", 2, 3, 4, 18),  # 3·2 + 3·4
]


@pytest.mark.parametrize(("mask", "b", "sq", "sk", "kept"), HAND)
def test_kept_scores_by_hand(mask, b, sq, sk, kept):
    c = case(mask, b=b, sq=sq, sk=sk, h=3, d=8)
    assert kept_scores(c) == 3 * kept
    assert attention_flops(c) == 4 * 8 * 3 * kept


def test_the_decode_example_of_the_issue_counts_every_key():
    # B=1 H=8 KV=2 Sq=1 Sk=1024 D=64 lower-right: 1024 kept pairs per head, nothing halved
    c = Case(1, 8, 1, 64, kv_heads=2, seq_kv=1024, mask="causal_lower_right")
    assert attention_flops(c) == 4 * 64 * 8 * 1024
    assert not c.causal  # SDPA's is_causal (top-left) would be wrong here


def test_causal_square_keeps_the_diagonal():
    assert attention_flops(Case(1, 2, 64, 16)) == 4 * 16 * 2 * (64 * 65 // 2)


@pytest.mark.parametrize(
    ("kw", "needle"),
    [
        ({"sq": 1, "sk": 1024}, "ambiguous"),  # the default causal
        ({"mask": "causal", "sq": 3, "sk": 5}, "ambiguous"),
        ({"mask": "sliding:4", "sq": 3, "sk": 5}, "ambiguous"),
        ({"mask": "prefix:2", "sq": 3, "sk": 5}, "ambiguous"),
        ({"mask": "none", "sq": 3, "sk": 5, "alibi": True}, "ambiguous"),
    ],
)
def test_ambiguous_alignment_is_refused_with_both_meanings(kw, needle):
    with pytest.raises(ValueError) as e:
        case(**kw)
    msg = str(e.value)
    assert needle in msg and "top-left" in msg and "lower-right" in msg and "\n" not in msg
    mask = kw.get("mask", "causal")  # the fix spells the mask given: causal's own name, else MASK@lower_right
    assert ("causal_lower_right" if mask == "causal" else f"{mask}@lower_right") in msg


def test_alignment_does_not_matter_without_a_positional_mask():
    assert kept_scores(case("none", sq=3, sk=5)) == 15
    assert kept_scores(case("padding:2", sq=3, sk=5)) == 6


@pytest.mark.parametrize(
    ("kw", "needle"),
    [
        ({"mask": "sliding:0"}, ">= 1"),
        ({"mask": "sliding:x"}, "an integer"),
        ({"mask": "sliding"}, "needs an argument"),
        ({"mask": "diagonal"}, "no such mask"),
        ({"mask": "causal@middle"}, "alignment"),
        ({"mask": "document:1,2", "sq": 4}, "sum to 3"),
        ({"mask": "padding:1,2", "b": 1}, "batch of 1"),
        ({"mask": "padding:9", "sq": 4}, "exceeds"),
        ({"mask": "causal_lower_right", "sq": 5, "sk": 3}, "see no key"),
        ({"mask": "none", "softcap": 0.0}, "softcap"),
        ({"mask": "none", "softcap": math.inf}, "softcap"),
    ],
)
def test_bad_masks_give_one_line(kw, needle):
    with pytest.raises(ValueError) as e:
        case(**kw)
    assert needle in str(e.value) and "\n" not in str(e.value)


def test_mask_normalises_causal_and_label():
    assert case("causal").causal is True
    assert case("causal_lower_right").causal is True  # square: the same as is_causal
    assert case("sliding:2").causal is False
    assert case("causal@lower_right", sq=1, sk=8).mask == "causal_lower_right"
    c = case("sliding:2", softcap=30.0, alibi=True)
    assert "sliding:2 softcap=30 alibi" in c.label()
    assert Case.from_dict(c.to_dict()) == c
    assert parse_mask(" Document:1,2 ").lengths == (1, 2)


# ---------------------------------------------------------------------------------------------
# The fp64 reference against attention written out with loops here.

torch = pytest.importorskip("torch")


def _keeps(c: Case, b: int, i: int, j: int) -> bool:
    """The mask's definition from the issue, one pair at a time."""
    m = c.mask_spec
    p = i + (c.num_seq_kv - c.seq_q if m.align == "lower_right" else 0)  # the query's key position
    if m.kind == "none":
        return True
    if m.kind == "causal":
        return j <= p
    if m.kind == "sliding":
        return p - m.window < j <= p
    if m.kind == "prefix":
        return j < m.prefix or j <= p
    if m.kind == "document":
        ends = list(itertools.accumulate(m.lengths))
        doc = [next(n for n, e in enumerate(ends) if x < e) for x in (i, j)]
        return doc[0] == doc[1] and j <= i
    return j < m.lengths[b]  # padding


def _loops(c: Case, q, k, v, scale):
    b_, h_, sq, _ = q.shape
    sk, groups = k.shape[2], h_ // k.shape[1]
    off = c.num_seq_kv - c.seq_q if c.mask_spec.align == "lower_right" else 0
    outs = []
    for b in range(b_):
        keep = torch.tensor([[_keeps(c, b, i, j) for j in range(sk)] for i in range(sq)])
        heads = []
        for h in range(h_):
            s = q[b, h] @ k[b, h // groups].T * scale
            if c.alibi:  # slope 2^(-8(h+1)/H) times (key - query position)
                s = s + 2 ** (-8 * (h + 1) / h_) * (torch.arange(sk)[None, :] - torch.arange(sq)[:, None] - off)
            if c.softcap:
                s = c.softcap * torch.tanh(s / c.softcap)
            heads.append(torch.softmax(s.masked_fill(~keep, -math.inf), -1) @ v[b, h // groups])
        outs.append(torch.stack(heads))
    return torch.stack(outs)


MASKS = [
    ("none", 6, 6, {}),
    ("causal", 7, 7, {}),
    ("causal@top_left", 5, 9, {}),
    ("causal_lower_right", 3, 11, {}),
    ("sliding:3", 10, 10, {}),
    ("sliding:4@lower_right", 3, 12, {}),
    ("document:3,4,2", 9, 9, {}),
    ("prefix:4", 10, 10, {}),
    ("prefix:3@lower_right", 4, 9, {}),
    ("padding:5,9", 7, 9, {}),
    ("sliding:3", 10, 10, {"softcap": 2.0, "alibi": True}),
    ("causal_lower_right", 2, 7, {"alibi": True}),
    ("none", 5, 5, {"softcap": 1.5}),
]


@pytest.mark.parametrize(("mask", "sq", "sk", "kw"), MASKS)
def test_reference_matches_loops_and_counts(mask, sq, sk, kw):
    from attnscope.variants.mask_mods import count_kept_dense
    from attnscope.workloads.reference import reference_chunked

    c = Case(2, 4, sq, 8, dtype="fp32", kv_heads=2, seq_kv=sk, mask=mask, **kw)
    g = torch.Generator().manual_seed(1)
    q, k, v = (torch.randn(2, h, s, 8, generator=g, dtype=torch.float64) for h, s in ((4, sq), (2, sk), (2, sk)))
    go = torch.randn(2, 4, sq, 8, generator=g, dtype=torch.float64)
    # chunks of 3 query rows: several blocks, each with its own key range
    got = reference_chunked(c, q.float(), k.float(), v.float(), 0.3, grad_out=go, chunk_bytes=8 * 2 * sk * 3)
    leaves = [t.float().double().requires_grad_(True) for t in (q, k, v)]
    want = _loops(c, *leaves, 0.3)
    grads = torch.autograd.grad(want, leaves, go)
    assert torch.allclose(got["out"], want.detach(), atol=1e-12, rtol=0)
    for name, g_want in zip(("dq", "dk", "dv"), grads, strict=True):
        assert torch.allclose(got[name], g_want, atol=1e-12, rtol=0), name
    # the closed-form count against the dense mask and against the loops' definition
    by_loops = 4 * sum(_keeps(c, b, i, j) for b in range(2) for i in range(sq) for j in range(sk))
    assert kept_scores(c) == count_kept_dense(c) == by_loops


def test_reference_without_grads_is_the_same_and_too_large_says_so():
    from attnscope.workloads.reference import reference_chunked, too_large

    c = Case(1, 2, 5, 4, dtype="fp32", mask="sliding:2")
    g = torch.Generator().manual_seed(2)
    q, k, v = (torch.randn(1, 2, 5, 4, generator=g) for _ in range(3))
    out = reference_chunked(c, q, k, v, 0.5)["out"]
    assert torch.allclose(out, _loops(c, q.double(), k.double(), v.double(), 0.5), atol=1e-12, rtol=0)
    assert too_large(c) is None
    big = too_large(c, grads=True, limit=10.0)
    # 4·D·H·kept = 4·4·2·(1+2+2+2+2) = 288 forward, ×3.5 with gradients
    assert big is not None and "reference too large" in big.reason and "1.01e+03" in big.reason


# ---------------------------------------------------------------------------------------------
# Each variant does the mask its own way; the error column is against the masked fp64 reference.

VARIANT_MASKS = [
    ("sliding:5", 24, 24, {}),
    ("causal_lower_right", 1, 40, {"kv_heads": 2}),  # decode with GQA
    ("document:7,17", 24, 24, {}),
    ("padding:9,24", 24, 24, {}),
    ("prefix:6", 24, 24, {"softcap": 3.0}),
    ("causal", 24, 24, {"alibi": True}),
]


@pytest.mark.slow
@pytest.mark.parametrize(("mask", "sq", "sk", "kw"), VARIANT_MASKS)
def test_every_variant_applies_the_mask(mask, sq, sk, kw):
    from attnscope.execute.job import Options
    from tests.inline import run

    c = Case(2, 4, sq, 16, dtype="fp32", seq_kv=sk, mask=mask, **kw)
    rep = run(c, "naive,sdpa_math,sdpa_flash,sdpa_default,flex", Options(timing_budget_s=0.005, measure_peak=False))
    rows = {r.variant: r for r in rep.results}
    assert rows["naive"].status == "ok" and rows["flex"].status == "ok"
    for r in rep.results:
        if c.softcap is not None and r.variant.startswith("sdpa"):
            assert r.status == "skipped" and "no soft-capping" in r.reason
            continue
        assert r.status == "ok", (r.variant, r.reason)
        assert r.max_rel_error is not None and r.max_rel_error < 1e-5, (r.variant, r.max_rel_error)
        assert r.flops == attention_flops(c)
    notes = " ".join(rows["sdpa_math"].notes)
    if c.alibi:
        assert "ALiBi bias, -inf where masked" in notes  # an additive float mask
    elif c.causal or c.softcap is not None:
        assert "mask passed as" not in notes  # is_causal, no attn_mask
    elif mask == "causal_lower_right":
        assert "causal_lower_right(Sq, Sk)" in notes
    else:
        assert "dense" in notes


def test_flex_block_sparsity_counts_skipped_tiles():
    from attnscope.variants.mask_mods import block_mask_for, block_sparsity_pct

    # 512 tokens in 128-blocks: 4×4 tiles; a 128-token sliding window touches the diagonal and the one before
    # it: 4 + 3 = 7 tiles computed, 9 of 16 skipped.
    c = Case(1, 1, 512, 16, dtype="fp32", mask="sliding:128")
    assert block_sparsity_pct(block_mask_for(c, "cpu"), 512, 512) == pytest.approx(100 * 9 / 16)
    # causal: 10 of 16 computed
    assert block_sparsity_pct(block_mask_for(Case(1, 1, 512, 16), "cpu"), 512, 512) == pytest.approx(100 * 6 / 16)


def test_cli_refuses_the_ambiguous_decode_and_takes_the_mask(capsys):
    from attnscope.cli.main import main

    assert main(["run", "--device", "cpu", "--seq", "1", "--seq-kv", "64", "--causal"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "lower-right" in err and "top-left" in err
    assert main(["run", "--device", "cpu", "--mask", "sliding:-1"]) == 2
    # --causal is a shorthand of --mask: both at once is refused by the parser
    assert main(["run", "--device", "cpu", "--mask", "sliding:4", "--causal"]) == 2


def test_no_mask_needs_attention_gym(monkeypatch):
    from attnscope.variants.mask_mods import count_kept_dense

    for mod in ("attn_gym", "attn_gym.masks", "attn_gym.mods", "attn_gym.masks.document_mask"):
        monkeypatch.setitem(__import__("sys").modules, mod, None)  # import now raises ImportError
    assert count_kept_dense(case("causal_lower_right", sq=2, sk=5)) == 9
    # sliding:2 over 6 tokens: 1 + 2·5 = 11 kept per (batch, head)
    assert count_kept_dense(case("sliding:2", sq=6, sk=6)) == 11


# Masks: the exact wording of the parse / check refusals, window and prefix boundaries, and kept-score counts
# in the corners (negative offsets, empty windows, no queries, huge documents), each counted by hand here.


def _err(fn, *args, **kw) -> str:
    with pytest.raises(ValueError) as e:
        fn(*args, **kw)
    return str(e.value)


# ---------------------------------------------------------------------------------------------
# ambiguity_message


def test_ambiguity_message_names_both_ranges_and_the_fix():
    msg = ambiguity_message("mask causal", 3, 5)
    # top-left: queries at 0..Sq-1 = 0..2; lower-right: query i sees keys 0..i+(Sk-Sq) = 0..i+2
    assert msg == (
        "mask causal with seq_q=3 != seq_kv=5 is ambiguous: top-left (torch's is_causal: the queries "
        "are positions 0..2, query i sees keys 0..i) or lower-right (the queries are the last "
        "3 positions, as in decode and chunked prefill: query i sees keys 0..i+2); "
        "say which with mask causal_lower_right or mask causal_top_left (or KIND:ARGS@lower_right)"
    )


def test_ambiguity_message_of_another_mask_spells_that_mask_aligned():
    """A sliding window, a prefix or ALiBi over no mask is told how to say its own alignment, never to become
    causal (the message said 'say which with mask causal_lower_right or mask causal_top_left' for sliding:64)."""
    msg = _err(check_mask, parse_mask("sliding:64"), 1, 1, 256)
    assert msg.endswith("say which with mask sliding:64@lower_right or mask sliding:64@top_left")
    assert "causal_lower_right" not in msg and "query i sees keys 0..i" not in msg  # causal's rows, not a window's
    assert "positions 0..0 of the keys" in msg and "the last 1 positions" in msg  # Sq-1 = 0; Sq = 1
    msg = _err(check_mask, parse_mask("prefix:4"), 1, 2, 256)
    assert msg.endswith("say which with mask prefix:4@lower_right or mask prefix:4@top_left")
    msg = _err(check_mask, parse_mask("none"), 1, 2, 256, True)  # ALiBi's positions
    assert msg.startswith("mask none with alibi with seq_q=2 != seq_kv=256 is ambiguous")
    assert msg.endswith("say which with mask none@lower_right or mask none@top_left")
    for spelled in ("sliding:64@lower_right", "prefix:4@top_left"):  # what it says is accepted
        check_mask(parse_mask(spelled), 1, 2, 256)
    check_mask(parse_mask("none@lower_right"), 1, 2, 256, True)


def test_ambiguity_message_decode_shape():
    msg = ambiguity_message("X", 1, 1024)
    assert "positions 0..0," in msg  # Sq-1 = 0
    assert "keys 0..i+1023)" in msg  # Sk-Sq = 1023
    assert msg.endswith("(or KIND:ARGS@lower_right)")


# ---------------------------------------------------------------------------------------------
# parse_mask: lists, argument errors


def test_empty_list_items_are_skipped():
    assert parse_mask("document:1,,2").lengths == (1, 2)
    assert parse_mask("padding:3,").lengths == (3,)
    assert parse_mask("document: 2 , ,3").lengths == (2, 3)


def test_a_list_of_only_commas_is_missing():
    assert _err(parse_mask, "document:,") == "mask 'document:,': lengths missing"
    assert _err(parse_mask, "padding: , ") == "mask 'padding: , ': lengths missing"


@pytest.mark.parametrize(
    ("spec", "msg"),
    [
        ("sliding:0", "mask 'sliding:0': every window must be >= 1"),
        ("prefix:-1", "mask 'prefix:-1': every prefix length must be >= 0"),
        ("document:2,0", "mask 'document:2,0': every length must be >= 1"),
        ("padding:-1", "mask 'padding:-1': every length must be >= 1"),
        ("sliding:x", "mask 'sliding:x': window must be an integer, got 'x'"),
        ("prefix:1.5", "mask 'prefix:1.5': prefix length must be an integer, got '1.5'"),
        ("document:1,a", "mask 'document:1,a': lengths must be integers, got '1,a'"),
        ("padding:q", "mask 'padding:q': lengths must be integers, got 'q'"),
        ("none:3", "mask 'none:3': none takes no argument"),
        ("causal:1", "mask 'causal:1': causal takes no argument"),
    ],
)
def test_argument_errors_word_for_word(spec, msg):
    assert _err(parse_mask, spec) == msg


# ---------------------------------------------------------------------------------------------
# parse_mask: alignment


def test_two_at_signs_are_a_bad_alignment():
    # everything after the first @ is the alignment: 'top_left@lower_right' is not one of the two
    assert _err(parse_mask, "causal@top_left@lower_right") == (
        "mask 'causal@top_left@lower_right': alignment must be top_left or lower_right, got 'top_left@lower_right'"
    )
    assert _err(parse_mask, "sliding:2@lower_right@x") == (
        "mask 'sliding:2@lower_right@x': alignment must be top_left or lower_right, got 'lower_right@x'"
    )


def test_causal_lower_right_cannot_be_top_left():
    assert _err(parse_mask, "causal_lower_right@top_left") == (
        "mask 'causal_lower_right@top_left': causal_lower_right cannot be @top_left"
    )
    assert parse_mask("causal_lower_right@lower_right") == MaskSpec("causal", align="lower_right")
    assert parse_mask("CAUSAL_LOWER_RIGHT") == MaskSpec("causal", align="lower_right")


def test_causal_top_left_spelling():
    assert parse_mask("causal_top_left") == MaskSpec("causal", align="top_left")
    assert parse_mask(" Causal_Top_Left ") == MaskSpec("causal", align="top_left")
    assert parse_mask("causal_top_left@top_left") == MaskSpec("causal", align="top_left")
    # a stated alignment that contradicts the name is refused (it used to run lower-right without a word)
    with pytest.raises(ValueError, match="causal_top_left cannot be @lower_right"):
        parse_mask("causal_top_left@lower_right")


@pytest.mark.parametrize(
    ("spec", "want"),
    [
        ("document:2,3@lower_right", MaskSpec("document", lengths=(2, 3), align="lower_right")),
        ("padding:4,1@top_left", MaskSpec("padding", lengths=(4, 1), align="top_left")),
        ("padding:4", MaskSpec("padding", lengths=(4,))),
        ("sliding:3@lower_right", MaskSpec("sliding", window=3, align="lower_right")),
        ("prefix:2@top_left", MaskSpec("prefix", prefix=2, align="top_left")),
    ],
)
def test_alignment_is_kept_for_every_kind(spec, want):
    got = parse_mask(spec)
    assert got == want
    assert got.canonical == spec


# ---------------------------------------------------------------------------------------------
# check_mask


def test_alibi_is_off_by_default():
    check_mask(parse_mask("none"), 1, 3, 5)  # no positional part, no alibi: Sq != Sk is fine
    check_mask(parse_mask("padding:2"), 1, 3, 5)


def test_ambiguity_refusal_names_the_mask():
    msg = _err(check_mask, parse_mask("causal"), 1, 3, 5)
    assert msg == ambiguity_message("mask causal", 3, 5)
    assert msg.startswith("mask causal with seq_q=3 != seq_kv=5 is ambiguous")


def test_ambiguity_refusal_says_with_alibi_only_for_a_non_positional_mask():
    msg = _err(check_mask, parse_mask("none"), 1, 3, 5, alibi=True)
    assert msg.startswith("mask none with alibi with seq_q=3 != seq_kv=5 is ambiguous")
    msg = _err(check_mask, parse_mask("document:3"), 1, 3, 5, alibi=True)
    assert msg.startswith("mask document:3 with alibi with seq_q=3")
    # a positional mask is ambiguous by itself: no "with alibi"
    msg = _err(check_mask, parse_mask("sliding:4"), 1, 3, 5, alibi=True)
    assert msg.startswith("mask sliding:4 with seq_q=3 != seq_kv=5")
    assert "alibi" not in msg


def test_ambiguity_refusal_uses_the_stated_spelling():
    msg = _err(check_mask, parse_mask("causal"), 1, 1, 64, stated="causal")
    assert msg.startswith("causal with seq_q=1 != seq_kv=64 is ambiguous")
    msg = _err(check_mask, parse_mask("none"), 1, 1, 64, alibi=True, stated="mask none")
    assert msg.startswith("mask none with alibi with seq_q=1")


def test_document_refusals_word_for_word():
    assert _err(check_mask, parse_mask("document:3"), 1, 3, 5) == (
        "mask document:3: a packed sequence needs seq_q == seq_kv, got 3 and 5"
    )
    assert _err(check_mask, parse_mask("document:1,2"), 1, 4, 4) == (
        "mask document:1,2: document lengths sum to 3, the sequence is 4"
    )


def test_padding_refusals_word_for_word():
    assert _err(check_mask, parse_mask("padding:1,2"), 1, 4, 4) == "mask padding:1,2: 2 key length(s) for a batch of 1"
    assert _err(check_mask, parse_mask("padding:2,9"), 2, 4, 4) == "mask padding:2,9: a key length exceeds seq_kv=4"


def test_prefix_boundary():
    check_mask(parse_mask("prefix:4"), 1, 4, 4)  # P == Sk: every key is in the prefix, allowed
    check_mask(parse_mask("prefix:5@lower_right"), 1, 2, 5)
    check_mask(parse_mask("prefix:5"), 1, 4, 4)  # P > Sk: every key too, measured as the plain call


@pytest.mark.parametrize("spec", ["causal_lower_right", "sliding:2@lower_right", "prefix:0@lower_right"])
def test_lower_right_with_more_queries_than_keys_is_refused(spec):
    m = parse_mask(spec)
    # Sq=5, Sk=3 lower-right: queries at key positions -2..2, the first 5-3 = 2 see nothing
    assert _err(check_mask, m, 1, 5, 3) == (
        f"mask {m.canonical}: with seq_q=5 > seq_kv=3 lower-right, the first 2 "
        "queries see no key at all (their softmax is undefined)"
    )
    check_mask(m, 1, 3, 3)  # square: fine
    check_mask(m, 1, 3, 5)  # fewer queries: fine


def test_lower_right_prefix_of_one_key_leaves_no_row_empty():
    # prefix:1 lower-right, Sq=5, Sk=3: row i keeps key 0 and keys <= i - 2, so every row keeps at least key 0
    check_mask(parse_mask("prefix:1@lower_right"), 1, 5, 3)
    assert kept_pairs(parse_mask("prefix:1@lower_right"), 1, 5, 3) == 1 + 1 + 1 + 2 + 3


def test_top_left_causal_with_more_queries_than_keys_is_fine():
    check_mask(parse_mask("causal@top_left"), 1, 5, 3)  # rows past Sk keep all 3 keys, none is empty


# ---------------------------------------------------------------------------------------------
# kept_pairs in the corners


def test_no_queries_keep_nothing():
    for spec in ("causal", "sliding:2", "prefix:2", "causal_lower_right"):
        assert kept_pairs(parse_mask(spec), 2, 0, 4) == 0, spec


def test_negative_offset_rows_keep_nothing():
    """Sq=5, Sk=3 lower-right (what check_mask refuses, counted anyway): query i sits at key position i-2.

    causal: row i keeps keys 0..i-2 -> 0, 0, 1, 2, 3 = 6.
    sliding:2: keys in (i-4, i-2] that exist -> 0, 0, {0}, {0,1}, {1,2} = 0+0+1+2+2 = 5.
    prefix with no prefix (None): the causal count, 6.
    """
    assert kept_pairs(MaskSpec("causal", align="lower_right"), 1, 5, 3) == 6
    assert kept_pairs(MaskSpec("causal", align="lower_right"), 2, 5, 3) == 12
    assert kept_pairs(MaskSpec("sliding", window=2, align="lower_right"), 1, 5, 3) == 5
    assert kept_pairs(MaskSpec("prefix", align="lower_right"), 1, 5, 3) == 6
    assert kept_pairs(MaskSpec("prefix", prefix=0, align="lower_right"), 1, 5, 3) == 6


def test_an_empty_window_keeps_nothing():
    # W = 0 (or not given): each query sees the 0 most recent keys
    assert kept_pairs(MaskSpec("sliding", window=0), 1, 4, 4) == 0
    assert kept_pairs(MaskSpec("sliding"), 2, 3, 5) == 0


def test_prefix_none_is_causal():
    assert kept_pairs(MaskSpec("prefix"), 1, 4, 4) == 10  # 1+2+3+4


@pytest.mark.parametrize(
    ("spec", "b", "sq", "sk", "kept"),
    [
        ("sliding:4", 1, 4, 4, 10),  # W = Sq: 1+2+3+4, the causal count
        ("sliding:5", 1, 4, 4, 10),  # W > Sq: still causal
        ("sliding:3@top_left", 1, 5, 3, 1 + 2 + 3 + 2 + 1),  # row 3: (0,3] -> {1,2}; row 4: (1,4] -> {2}
        ("sliding:2@top_left", 1, 5, 3, 1 + 2 + 2 + 1 + 0),  # row 3: (1,3] -> {2}; row 4: (2,4] -> none
        ("prefix:4", 1, 4, 4, 16),  # P = Sk: every row keeps all 4
        ("prefix:1", 1, 4, 4, 10),  # P = 1: row 0 keeps key 0 anyway, the causal count
        ("prefix:2@top_left", 2, 4, 3, 2 * (2 + 2 + 3 + 3)),  # rows past Sk capped at 3
        ("prefix:3@lower_right", 1, 2, 6, 5 + 6),  # queries at 4, 5
        ("causal@top_left", 1, 4, 2, 1 + 2 + 2 + 2),
        ("document:1,1,1", 3, 3, 3, 9),  # the diagonal only, 3 per batch element
    ],
)
def test_boundaries_by_hand(spec, b, sq, sk, kept):
    assert kept_pairs(parse_mask(spec), b, sq, sk) == kept


def test_document_count_is_an_exact_integer():
    n = 2**30 + 1  # n(n+1)/2 = (2^30+1)(2^29+1) = 2^59 + 2^30 + 2^29 + 1, which a float cannot hold
    got = kept_pairs(MaskSpec("document", lengths=(n,)), 1, n, n)
    assert type(got) is int
    assert got == 2**59 + 2**30 + 2**29 + 1
    assert type(kept_pairs(parse_mask("document:2,3"), 1, 5, 5)) is int


def test_unknown_kind_has_no_count():
    assert _err(kept_pairs, MaskSpec("diagonal"), 1, 2, 2) == "no count for mask kind 'diagonal'"


# ---------------------------------------------------------------------------------------------
# kept_formula


@pytest.mark.parametrize(
    ("spec", "text"),
    [
        ("none", "Sq·Sk per (batch, head)"),
        ("causal", "Σ over queries of the keys at or before the query's position (offset Sk−Sq when lower-right)"),
        ("sliding:2", "Σ over queries of the W most recent keys that exist"),
        ("document:2,3", "Σ over documents of L·(L+1)/2"),
        ("prefix:2", "Σ over queries of max(P, keys at or before the query)"),
        ("padding:2", "Sq·K_b for each batch element"),
    ],
)
def test_kept_formula_words(spec, text):
    assert kept_formula(parse_mask(spec)) == text


@pytest.mark.parametrize(("seq_q", "empty"), [(5, 1), (6, 2)])
def test_a_top_left_window_past_the_last_key_is_refused(seq_q, empty):
    """sliding:2@top_left, Sk=3: row i keeps keys (i-2, i] ∩ [0, 3).  Row 3 keeps {2}; row 4 keeps (2, 4] ∩ [0, 3)
    = nothing; row 5 nothing.  So Sq=4 passes, Sq=5 leaves 1 query without a key, Sq=6 leaves 2."""
    m = parse_mask("sliding:2@top_left")
    check_mask(m, 1, 4, 3)
    with pytest.raises(ValueError) as e:
        check_mask(m, 1, seq_q, 3)
    assert str(e.value) == (
        f"mask sliding:2@top_left: with seq_q={seq_q} and seq_kv=3 top-left, the last {empty} queries are more than "
        "the window (2) past the last key and see no key at all (their softmax is undefined)"
    )


@pytest.mark.parametrize(
    ("spec", "what", "arg"), [("sliding:3,4", "window", "3,4"), ("prefix:2,99", "prefix length", "2,99")]
)
def test_a_window_or_prefix_takes_one_number(spec, what, arg):
    kind = spec.split(":")[0]
    with pytest.raises(ValueError) as e:
        parse_mask(spec)
    assert str(e.value) == f"mask {spec!r}: {kind} takes one {what}, got {arg!r}"


def test_a_hand_made_sliding_spec_without_a_window_is_not_checked_for_empty_rows():
    """MaskSpec("sliding") with no window (not what parse_mask makes, but the dataclass allows it): check_mask has
    no window to compare with and passes it, as kept_pairs counts it as a window of 0."""
    check_mask(MaskSpec("sliding"), 1, 8, 3 + 5)
    check_mask(MaskSpec("prefix", prefix=2), 1, 8, 8)
