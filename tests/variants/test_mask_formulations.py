"""The built-in mask_mods, evaluated on index grids, against rules written out here position by position."""

from __future__ import annotations

import sys

import pytest

torch = pytest.importorskip("torch")

from attnscope.core.masks import parse_mask  # noqa: E402
from attnscope.variants.mask_mods import doc_starts, mask_mod_for  # noqa: E402


def _grid(spec: str, sq: int, sk: int) -> list[list[bool]]:
    fn = mask_mod_for(parse_mask(spec), sq, sk, "cpu")
    assert fn is not None
    z = torch.zeros((), dtype=torch.int64)
    keep = fn(z, z, torch.arange(sq).view(-1, 1), torch.arange(sk).view(1, -1)).expand(sq, sk)
    return keep.tolist()


def _doc_of(lengths: list[int], pos: int) -> int:
    total = 0
    for i, n in enumerate(lengths):
        total += n
        if pos < total:
            return i
    raise AssertionError(pos)


def test_document_start_lookup_keeps_earlier_keys_of_the_same_document():
    lengths = [3, 1, 5, 2]
    got = _grid("document:3,1,5,2", 11, 11)
    want = [[_doc_of(lengths, q) == _doc_of(lengths, k) and k <= q for k in range(11)] for q in range(11)]
    assert got == want
    assert doc_starts((3, 1, 5, 2), "cpu").tolist() == [0, 0, 0, 3, 4, 4, 4, 4, 4, 9, 9]


@pytest.mark.parametrize(("spec", "sq", "sk"), [("sliding:3", 9, 9), ("sliding:4@lower_right", 3, 10)])
def test_sliding_keeps_the_w_most_recent_keys(spec, sq, sk):
    w = int(spec.split(":")[1].split("@")[0])
    off = sk - sq if "lower_right" in spec else 0
    want = [[0 <= (q + off) - k < w for k in range(sk)] for q in range(sq)]
    assert _grid(spec, sq, sk) == want


def test_prefix_keeps_the_prefix_and_the_causal_part():
    want = [[k < 4 or k <= q for k in range(10)] for q in range(10)]
    assert _grid("prefix:4", 10, 10) == want


def test_masks_run_without_attention_gym(monkeypatch):
    for mod in ("attn_gym", "attn_gym.masks", "attn_gym.mods", "attn_gym.masks.document_mask"):
        monkeypatch.setitem(sys.modules, mod, None)
    for spec in ("causal", "sliding:2", "prefix:2", "document:2,3", "padding:5"):
        assert mask_mod_for(parse_mask(spec), 5, 5, "cpu") is not None
