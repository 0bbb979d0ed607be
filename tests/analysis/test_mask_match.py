"""The user's mask against the built-ins, entry by entry, on masks written out by hand."""

from __future__ import annotations

from attnscope.analysis.mask_match import builtin_runs, first_difference, match_builtin, runs_of
from attnscope.core.masks import parse_mask


def _grid(text: str) -> list[list[bool]]:
    """Rows of 1/0 as booleans: the mask as one would draw it."""
    return [[c == "1" for c in line.strip()] for line in text.strip().splitlines()]


def _rows(text: str):
    return [runs_of(r) for r in _grid(text)]


CAUSAL_4 = """
1000
1100
1110
1111
"""

# documents of 2, 3 and 1 tokens, causal within each
DOC_2_3_1 = """
100000
110000
001000
001100
001110
000001
"""

# window 2, 5 keys
SLIDING_2 = """
10000
11000
01100
00110
00011
"""


def test_runs_of_reads_intervals():
    assert runs_of([True, True, False, True]) == ((0, 2), (3, 4))
    assert runs_of([False, False]) == ()
    assert runs_of([False, True, True]) == ((1, 3),)


def test_builtin_rows_equal_the_drawn_masks():
    assert builtin_runs(parse_mask("causal"), 4, 4) == _rows(CAUSAL_4)
    assert builtin_runs(parse_mask("document:2,3,1"), 6, 6) == _rows(DOC_2_3_1)
    assert builtin_runs(parse_mask("sliding:2"), 5, 5) == _rows(SLIDING_2)
    # 2 queries lower-right against 4 keys: positions 2 and 3
    assert builtin_runs(parse_mask("causal_lower_right"), 2, 4) == _rows("1110\n1111")
    assert builtin_runs(parse_mask("causal@top_left"), 2, 4) == _rows("1000\n1100")
    assert builtin_runs(parse_mask("prefix:2"), 4, 4) == _rows("1100\n1100\n1110\n1111")


def test_causal_recognised():
    m = match_builtin(_rows(CAUSAL_4), 4, 4)
    assert m.equivalent_builtin == "causal"
    assert m.checked_entries == 16
    assert m.tried["none"] == (0, 1)  # row 0 keeps key 0 only: key 1 is the first difference


def test_document_lengths_inferred_from_the_blocks():
    m = match_builtin(_rows(DOC_2_3_1), 6, 6)
    assert m.equivalent_builtin == "document:2,3,1"
    assert m.checked_entries == 36


def test_sliding_window_inferred():
    assert match_builtin(_rows(SLIDING_2), 5, 5).equivalent_builtin == "sliding:2"


def test_both_causal_alignments_when_seq_differ():
    assert match_builtin(_rows("1110\n1111"), 2, 4).equivalent_builtin == "causal_lower_right"
    assert match_builtin(_rows("1000\n1100"), 2, 4).equivalent_builtin == "causal@top_left"
    # one query lower-right keeps every key: "none" is the simplest equal mask
    assert match_builtin(_rows("1111"), 1, 4).equivalent_builtin == "none"


def test_one_entry_off_is_not_equivalent():
    off = """
    100000
    110000
    001000
    011100
    001110
    000001
    """  # row 3 also keeps key 1, across the document boundary
    m = match_builtin(_rows(off), 6, 6)
    assert m.equivalent_builtin is None
    # row 2 keeps key 2 alone where causal keeps 0..2: (2, 0) is the first entry that differs
    assert m.tried["causal"] == (2, 0)
    # the rows start at 0, 0, 2, 1, 2, 5: read as documents starting at 0, 1, 2, 5, whose row 1 would not keep key 0
    assert m.tried["document:1,1,3,1"] == (1, 0)


def test_first_difference_names_the_entry():
    a = _rows(CAUSAL_4)
    b = _rows("1000\n1100\n1010\n1111")
    assert first_difference(a, b) == (2, 1)
    assert first_difference(a, a) is None


def test_two_runs_in_a_row_only_none_or_causal_tried():
    m = match_builtin(_rows("1010\n1111\n1111\n1111"), 4, 4)
    assert m.equivalent_builtin is None
    assert set(m.tried) == {"none", "causal"}
