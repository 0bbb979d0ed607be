"""Masks: the exact wording of the parse / check refusals, window and prefix boundaries, and kept-score counts
in the corners (negative offsets, empty windows, no queries, huge documents), each counted by hand here."""

from __future__ import annotations

import pytest

from attnscope.core.masks import MaskSpec, ambiguity_message, check_mask, kept_formula, kept_pairs, parse_mask


def _err(fn, *args, **kw) -> str:
    with pytest.raises(ValueError) as e:
        fn(*args, **kw)
    return str(e.value)


# ---------------------------------------------------------------------------------------------
# ambiguity_message


def test_ambiguity_message_names_both_ranges_and_the_fix():
    msg = ambiguity_message("--mask causal", 3, 5)
    # top-left: queries at 0..Sq-1 = 0..2; lower-right: query i sees keys 0..i+(Sk-Sq) = 0..i+2
    assert msg == (
        "--mask causal with seq_q=3 != seq_kv=5 is ambiguous: top-left (torch's is_causal: the queries "
        "are positions 0..2, query i sees keys 0..i) or lower-right (the queries are the last "
        "3 positions, as in decode and chunked prefill: query i sees keys 0..i+2); "
        "say which with --mask causal_lower_right, --mask causal@top_left (or KIND:ARGS@lower_right)"
    )


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
        ("prefix:0", "mask 'prefix:0': every prefix length must be >= 1"),
        ("document:2,0", "mask 'document:2,0': every length must be >= 1"),
        ("padding:-1", "mask 'padding:-1': every length must be >= 1"),
        ("sliding:x", "mask 'sliding:x': window must be integers, got 'x'"),
        ("prefix:1.5", "mask 'prefix:1.5': prefix length must be integers, got '1.5'"),
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
    # a stated alignment wins over the name's
    assert parse_mask("causal_top_left@lower_right") == MaskSpec("causal", align="lower_right")


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
    assert msg == ambiguity_message("--mask causal", 3, 5)
    assert msg.startswith("--mask causal with seq_q=3 != seq_kv=5 is ambiguous")


def test_ambiguity_refusal_says_with_alibi_only_for_a_non_positional_mask():
    msg = _err(check_mask, parse_mask("none"), 1, 3, 5, alibi=True)
    assert msg.startswith("--mask none with --alibi with seq_q=3 != seq_kv=5 is ambiguous")
    msg = _err(check_mask, parse_mask("document:3"), 1, 3, 5, alibi=True)
    assert msg.startswith("--mask document:3 with --alibi with seq_q=3")
    # a positional mask is ambiguous by itself: no "with --alibi"
    msg = _err(check_mask, parse_mask("sliding:4"), 1, 3, 5, alibi=True)
    assert msg.startswith("--mask sliding:4 with seq_q=3 != seq_kv=5")
    assert "--alibi" not in msg


def test_ambiguity_refusal_uses_the_stated_spelling():
    msg = _err(check_mask, parse_mask("causal"), 1, 1, 64, stated="--causal")
    assert msg.startswith("--causal with seq_q=1 != seq_kv=64 is ambiguous")
    msg = _err(check_mask, parse_mask("none"), 1, 1, 64, alibi=True, stated="--mask none")
    assert msg.startswith("--mask none with --alibi with seq_q=1")


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
    assert _err(check_mask, parse_mask("prefix:5"), 1, 4, 4) == "mask prefix:5: prefix 5 longer than seq_kv=4"


@pytest.mark.parametrize("spec", ["causal_lower_right", "sliding:2@lower_right"])
def test_lower_right_with_more_queries_than_keys_is_refused(spec):
    m = parse_mask(spec)
    # Sq=5, Sk=3 lower-right: queries at key positions -2..2, the first 5-3 = 2 see nothing
    assert _err(check_mask, m, 1, 5, 3) == (
        f"mask {m.canonical}: with seq_q=5 > seq_kv=3 lower-right, the first 2 "
        "queries see no key at all (their softmax is undefined)"
    )
    check_mask(m, 1, 3, 3)  # square: fine
    check_mask(m, 1, 3, 5)  # fewer queries: fine


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
