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


def _alibi_by_hand(heads: int, sq: int, sk: int, keep) -> list:
    """slope_h·(k − q) with slope_h = 2^(-8(h+1)/H), minus, per row, its value at the row's last kept key
    (the largest, since the bias grows with k); a row that keeps nothing is left as it is."""
    out = []
    for h in range(heads):
        slope = 2.0 ** (-8.0 * (h + 1) / heads)
        rows = []
        for q in range(sq):
            kept = [k for k in range(sk) if keep(q, k)]
            top = slope * (max(kept) - q) if kept else 0.0
            rows.append([slope * (k - q) - top for k in range(sk)])
        out.append(rows)
    return out


@pytest.mark.parametrize(
    ("spec", "keep"),
    [
        ("none", lambda q, k: True),
        ("causal", lambda q, k: k <= q),
        ("sliding:3", lambda q, k: 0 <= q - k < 3),
    ],
)
def test_alibi_bias_rows_are_shifted_so_their_largest_kept_entry_is_zero(spec, keep):
    from attnscope.core.case import Case
    from attnscope.variants.mask_mods import alibi_bias

    case = Case(batch=1, heads=4, seq_q=6, head_dim=8, mask=spec, alibi=True)
    got = alibi_bias(case, "cpu", torch.float64)
    assert tuple(got.shape) == (1, 4, 6, 6)
    want = torch.tensor(_alibi_by_hand(4, 6, 6, keep), dtype=torch.float64)
    torch.testing.assert_close(got[0], want, rtol=0, atol=1e-12)


def test_alibi_without_a_mask_stays_accurate_in_bf16():
    """No mask, S = 512, H = 8: head 0's slope is 2^-1 = 0.5 and a row's dominant keys sit at slope·(k − q)
    up to 0.5·511 = 255.5, where bf16 steps by 2: unshifted, the bias rounded there (255.5 → 256) moves a
    key's weight by e^0.5 and the error was 0.23 (naive) against bf16's 2e-2.  Shifted, the dominant keys sit
    at 0, −0.5, −1, … (exact in bf16).  Reference: softmax(q·kᵀ·scale + slope·(k − q))·v in fp64, here."""
    from attnscope.core.case import Case
    from attnscope.measure.timing import TOLERANCE, relative_error
    from attnscope.variants.mask_mods import alibi_bias

    b, h, s, d = 1, 8, 512, 64
    g = torch.Generator().manual_seed(3)
    q, k, v = (torch.randn(b, h, s, d, generator=g).to(torch.bfloat16) for _ in range(3))
    slopes = torch.tensor([2.0 ** (-8.0 * (i + 1) / h) for i in range(h)], dtype=torch.float64).view(1, h, 1, 1)
    pos = torch.arange(s, dtype=torch.float64)
    q64, k64, v64 = (t.to(torch.float64) for t in (q, k, v))
    sc = q64 @ k64.transpose(-2, -1) * d**-0.5 + slopes * (pos.view(1, -1) - pos.view(-1, 1))
    ref = torch.softmax(sc, dim=-1) @ v64
    case = Case(batch=b, heads=h, seq_q=s, head_dim=d, mask="none", alibi=True)
    bias = alibi_bias(case, "cpu", torch.bfloat16)
    naive = torch.softmax(q @ k.transpose(-2, -1) * d**-0.5 + bias, dim=-1) @ v
    sdpa = torch.nn.functional.scaled_dot_product_attention(q, k, v, attn_mask=bias)
    for out in (naive, sdpa):
        err, _ = relative_error(out, ref)
        assert err < TOLERANCE["bf16"], err


@pytest.mark.parametrize("mask", ["none", "causal", "prefix:3"])
def test_naive_soft_capping_reads_alibi_unshifted(mask):
    """Soft-capping after ALiBi: c·tanh((q·kᵀ·scale + slope·(k − q))/c) is not the same score when the bias is
    shifted per row (tanh is no shift-invariant, the softmax alone is).  The 10,000-spec fuzz found naive off
    fp64 by up to 0.30 on such cases.  Reference: the formula in fp64, here, with the mask's keep-set by hand."""
    from attnscope.core.case import Case
    from attnscope.variants import REGISTRY
    from attnscope.workloads.attention import Inputs

    b, h, s, d, cap = 2, 4, 7, 16, 0.5
    g = torch.Generator().manual_seed(5)
    q, k, v = (torch.randn(b, h, s, d, generator=g) for _ in range(3))
    slopes = torch.tensor([2.0 ** (-8.0 * (i + 1) / h) for i in range(h)], dtype=torch.float64).view(1, h, 1, 1)
    pos = torch.arange(s, dtype=torch.float64)
    q64, k64, v64 = (t.to(torch.float64) for t in (q, k, v))
    sc = q64 @ k64.transpose(-2, -1) * d**-0.5 + slopes * (pos.view(1, -1) - pos.view(-1, 1))
    sc = cap * torch.tanh(sc / cap)
    keep = {
        "none": lambda i, j: True,
        "causal": lambda i, j: j <= i,
        "prefix:3": lambda i, j: j <= i or j < 3,
    }[mask]
    hide = torch.tensor([[not keep(i, j) for j in range(s)] for i in range(s)])
    ref = torch.softmax(sc.masked_fill(hide, float("-inf")), dim=-1) @ v64
    case = Case(batch=b, heads=h, seq_q=s, head_dim=d, dtype="fp32", mask=mask, softcap=cap, alibi=True)
    x = Inputs(q=q, k=k, v=v, scale=d**-0.5)
    for name in ("naive", "naive_inplace"):
        out = REGISTRY[name].prepare(case, x).fn()
        torch.testing.assert_close(out.to(torch.float64), ref, rtol=1e-5, atol=1e-5)
