"""A user's own mask_mod and score_mod, loaded and checked directly (no run): which (batch, head) the mask is
read at, rows with several kept runs, rows that keep nothing, the chunked reading, the score check's tolerance
and where it looks, ALiBi's head order, and every way a file or function is refused.  Expected values are
worked out here (the masks' kept keys by hand, ALiBi's slopes from its paper's formula in fp64)."""

from __future__ import annotations

import sys
import textwrap
from pathlib import Path

import pytest

pytest.importorskip("torch")

import torch

from attnscope.core.types import Case
from attnscope.variants import user_code


def _file(tmp_path: Path, body: str, name: str = "mods.py") -> Path:
    p = tmp_path / name
    p.write_text("import torch\n\n" + textwrap.dedent(body))
    return p


def _mask_case(p: Path, fn: str, batch: int = 1, heads: int = 1, seq: int = 8, seq_kv: int | None = None) -> Case:
    return Case(batch, heads, seq, 4, "fp32", causal=False, seq_kv=seq_kv, mask_mod=f"{p}:{fn}")


# ------------------------------------------------------------------------------------------------ mask_mod


def test_a_causal_mask_mod_is_causal_and_every_entry_of_two_points_is_counted(tmp_path):
    p = _file(tmp_path, "def causal(b, h, q, kv):\n    return q >= kv\n")
    got, why = user_code.check_mask_mod(_mask_case(p, "causal", batch=2, heads=3, seq=8))
    assert why is None and got.equivalent_builtin == "causal"
    assert got.checked_entries == 2 * 8 * 8  # the first and last (batch, head), every (query, key)
    # tried in order: none first, whose first differing entry is (query 0, key 1)
    assert got.tried == {"none": (0, 1), "causal": None}


def test_a_document_mask_is_read_across_chunks_of_rows(tmp_path):
    # documents of 3, 4 and 1 tokens, causal inside each: read 3 rows at a time (chunks 0-2, 3-5, 6-7)
    p = _file(
        tmp_path,
        """
        DOC = torch.tensor([0, 0, 0, 1, 1, 1, 1, 2])

        def docs(b, h, q, kv):
            return (DOC[q] == DOC[kv]) & (q >= kv)
        """,
    )
    got, why = user_code.check_mask_mod(_mask_case(p, "docs", seq=8), rows_per_chunk=3)
    assert why is None and got.equivalent_builtin == "document:3,4,1"


def test_a_mask_read_at_the_last_batch_element_and_head(tmp_path):
    # differs from the others only at batch element 2, head 1: the last of B=3, H=2
    p = _file(tmp_path, "def odd(b, h, q, kv):\n    return (q >= kv) | ((b == 2) & (h == 1))\n")
    got, why = user_code.check_mask_mod(_mask_case(p, "odd", batch=3, heads=2))
    assert why == "it differs between batch element 0, head 0 and the last ones: every built-in but padding does not"
    assert got.equivalent_builtin is None and got.checked_entries == 2 * 8 * 8 and got.tried == {}
    # the same mask on B=2, H=2 never reaches batch element 2: causal at both points
    got, why = user_code.check_mask_mod(_mask_case(p, "odd", batch=2, heads=2))
    assert why is None and got.equivalent_builtin == "causal"
    # B=3, H=3: the last head is 2, not 1: causal at both points
    got, why = user_code.check_mask_mod(_mask_case(p, "odd", batch=3, heads=3))
    assert why is None and got.equivalent_builtin == "causal"


def test_a_mask_that_differs_between_heads_in_a_later_chunk(tmp_path):
    # heads agree on rows 0-3 and differ from row 4 on: found in the second chunk of 4 rows
    p = _file(tmp_path, "def late(b, h, q, kv):\n    return (q >= kv) & ((q < 4) | (h == 0) | (kv > 0))\n")
    got, why = user_code.check_mask_mod(_mask_case(p, "late", heads=2), rows_per_chunk=4)
    assert why is not None and why.startswith("it differs between batch element 0, head 0")
    assert got.equivalent_builtin is None


def test_a_row_with_two_runs_matches_no_builtin(tmp_path):
    # query 5 keeps keys 0-1 and 4-5: two runs (every other row one run)
    p = _file(tmp_path, "def gap(b, h, q, kv):\n    return (q >= kv) & ~((q == 5) & ((kv == 2) | (kv == 3)))\n")
    got, why = user_code.check_mask_mod(_mask_case(p, "gap"))
    assert why == "a row keeps two or more separate runs of keys: no built-in does"
    assert got.equivalent_builtin is None and got.checked_entries == 2 * 8 * 8 and got.tried == {}
    # two runs in the last chunk only: still found, and what was read before it is not matched
    got, why = user_code.check_mask_mod(_mask_case(p, "gap"), rows_per_chunk=4)
    assert why == "a row keeps two or more separate runs of keys: no built-in does"


def test_rows_with_at_most_one_run_each_are_matched_row_by_row(tmp_path):
    # every query keeps exactly the keys in [q − 2, q]: sliding:3, including rows 0 and 1 (shorter at the start)
    p = _file(tmp_path, "def win(b, h, q, kv):\n    return (kv <= q) & (kv > q - 3)\n")
    got, why = user_code.check_mask_mod(_mask_case(p, "win"))
    assert why is None and got.equivalent_builtin == "sliding:3"


def test_a_row_that_keeps_nothing_is_refused_naming_the_query(tmp_path):
    p = _file(tmp_path, "def hole(b, h, q, kv):\n    return (q >= kv) & (q != 6)\n")
    with pytest.raises(ValueError) as e:
        user_code.check_mask_mod(_mask_case(p, "hole", batch=2, heads=3), rows_per_chunk=4)
    assert str(e.value) == (
        "mask_mod mods.py:hole on B=2 H=3 Sq=8 Sk=8: ValueError: query 6 keeps no key: its softmax is undefined"
    )
    with pytest.raises(ValueError, match="query 6 keeps no key"):
        user_code.check_mask_mod(_mask_case(p, "hole"))
    # two empty rows: the first is named
    p2 = _file(tmp_path, "def holes(b, h, q, kv):\n    return (q >= kv) & (q != 2) & (q != 5)\n", "two.py")
    with pytest.raises(ValueError, match="query 2 keeps no key"):
        user_code.check_mask_mod(_mask_case(p2, "holes"))


def test_a_mask_on_fewer_queries_than_keys(tmp_path):
    # Sq 4, Sk 8, the queries at the end of the keys: lower-right causal keeps keys 0..q+4
    p = _file(tmp_path, "def lr(b, h, q, kv):\n    return kv <= q + 4\n")
    got, why = user_code.check_mask_mod(_mask_case(p, "lr", seq=4, seq_kv=8))
    assert why is None and got.equivalent_builtin == "causal_lower_right"
    assert got.checked_entries == 2 * 4 * 8


def test_a_mask_mod_that_is_not_boolean_is_refused(tmp_path):
    p = _file(
        tmp_path,
        """
        def floats(b, h, q, kv):
            return (q >= kv).float()

        def number(b, h, q, kv):
            return 1
        """,
    )
    with pytest.raises(ValueError) as e:
        user_code.check_mask_mod(_mask_case(p, "floats"))
    assert str(e.value).endswith("TypeError: returned a torch.float32 tensor, not a boolean tensor")
    with pytest.raises(ValueError) as e:
        user_code.check_mask_mod(_mask_case(p, "number"))
    assert str(e.value).endswith("TypeError: returned int, not a boolean tensor")


def test_keep_broadcasts_to_every_query_and_key():
    # a mask of the keys only (shape 1 × Sk) is every query's row; queries 2..4 of 6 keys
    keep = user_code._keep(lambda b, h, q, kv: kv < 3, 0, 0, 2, 5, 6, "cpu")
    assert keep.shape == (3, 6)
    assert keep.tolist() == [[True, True, True, False, False, False]] * 3
    seen = []

    def spy(b, h, q, kv):
        seen.append((int(b), int(h), q.tolist(), kv.tolist()))
        return q >= kv

    user_code._keep(spy, 4, 7, 1, 3, 3, "cpu")
    # the batch element and head as given; queries a column (2 × 1), keys a row (1 × 3)
    assert seen == [(4, 7, [[1], [2]], [[0, 1, 2]])]


def test_keep_builds_its_indices_on_the_device_given():
    seen = []

    def spy(b, h, q, kv):
        seen.append({t.device.type for t in (b, h, q, kv)})
        return q >= kv

    keep = user_code._keep(spy, 0, 0, 0, 2, 2, "meta")  # a device with no data: only where tensors live
    assert seen == [{"meta"}] and keep.device.type == "meta"


def test_runs_of_each_row_by_hand():
    keep = torch.tensor(
        [
            [True, True, False, False],  # keys 0-1
            [False, True, True, True],  # keys 1-3 (to the end)
            [False, False, False, True],  # key 3 alone
            [True, True, True, True],  # all
        ]
    )
    assert user_code._runs(keep) == [((0, 2),), ((1, 4),), ((3, 4),), ((0, 4),)]
    assert user_code._runs(torch.tensor([[True, False, True]])) is None


# ------------------------------------------------------------------------------------------------ score_mod


def _score_case(p: Path, fn: str, **kw) -> Case:
    return Case(1, kw.pop("heads", 4), kw.pop("seq", 16), 4, "fp32", score_mod=f"{p}:{fn}", **kw)


ALIBI = """
def alibi(score, b, h, q, kv):
    # ALiBi's slope of head h of H=4: 2^(-8 (h + 1) / 4), times (key − query)
    return score + (kv - q) * 2.0 ** (-8.0 * (h + 1) / 4)

def alibi_reversed(score, b, h, q, kv):
    # the slopes in the reverse head order: head 0 gets the smallest
    return score + (kv - q) * 2.0 ** (-8.0 * (4 - h) / 4)
"""


def test_alibi_in_its_head_order_is_accepted_and_the_reverse_is_not(tmp_path):
    pytest.importorskip("attn_gym")
    p = _file(tmp_path, ALIBI)
    assert user_code.check_score_mod(_score_case(p, "alibi", alibi=True)) is None
    why = user_code.check_score_mod(_score_case(p, "alibi_reversed", alibi=True))
    # read at the last head (3), whose slope is 2^-8 = 1/256; reversed, head 3 gets 2^-2 = 1/4.  The largest
    # difference is at the largest distance, |key − query| = 15: first, row by row, query 0 and key 15, where the
    # two differ by 15 × (1/4 − 1/256) = 3.69140625
    s = -120.0 + 240.0 * (0 * 16 + 15) / (16 * 16 - 1)  # the score the check put there (linspace ±4 × 30)
    assert why == (
        f"at query 0, key 15, score {s:.4g} it gives {s + 15 / 4:.6g} where the case's (alibi) gives {s + 15 / 256:.6g}"
    )


def test_the_score_check_tolerance_is_one_millionth(tmp_path):
    # no softcap, no alibi: the case's modification is none, the user's must return the score itself
    p = _file(
        tmp_path,
        """
        def near(score, b, h, q, kv):
            return score + 0.9e-6

        def far(score, b, h, q, kv):
            return torch.where((q == 15) & (kv == 3), score + 1e-3, score)

        def inside(score, b, h, q, kv):
            return torch.where((q == 7) & (kv == 15), score + 1.2e-6, score)

        def outside(score, b, h, q, kv):
            return torch.where((q == 7) & (kv == 15), score + 2e-6, score)
        """,
    )
    assert user_code.check_score_mod(_score_case(p, "near")) is None
    # at query 7, key 15 the score is −120 + 240·127/255 = −0.4706: allowed 1e-6 + 1e-6 · 0.4706 = 1.47e-6
    assert user_code.check_score_mod(_score_case(p, "inside")) is None
    s7 = -120.0 + 240.0 * 127 / 255
    assert user_code.check_score_mod(_score_case(p, "outside")) == (
        f"at query 7, key 15, score {s7:.4g} it gives {s7 + 2e-6:.6g} where the case's "
        f"(no softcap, no alibi) gives {s7:.6g}"
    )
    why = user_code.check_score_mod(_score_case(p, "far"))
    s = -120.0 + 240.0 * (15 * 16 + 3) / 255
    assert why == (
        f"at query 15, key 3, score {s:.4g} it gives {s + 1e-3:.6g} where the case's "
        f"(no softcap, no alibi) gives {s:.6g}"
    )


def test_the_score_check_reads_the_last_256_queries_and_keys(tmp_path):
    # 300 queries and keys: the check reads queries and keys 44..299 (ALiBi's bias is largest at the last keys)
    p = _file(
        tmp_path,
        """
        SEEN = []

        def spy(score, b, h, q, kv):
            SEEN.append((score.shape, score.dtype, int(b), int(h), q.flatten()[[0, -1]].tolist(),
                         kv.flatten()[[0, -1]].tolist(), float(score.min()), float(score.max())))
            return score
        """,
    )
    case = _score_case(p, "spy", heads=3, seq=300, softcap=20.0)
    user_code.check_score_mod(case)
    mod = sys.modules["attnscope_user_" + __import__("hashlib").sha256(str(p.resolve()).encode()).hexdigest()[:12]]
    # fp64 scores from −4·cap to 4·cap, the last head (2), batch element 0
    assert mod.SEEN == [((256, 256), torch.float64, 0, 2, [44, 299], [44, 299], -80.0, 80.0)]


def test_a_softcap_score_mod_and_flags(tmp_path):
    pytest.importorskip("attn_gym")
    p = _file(
        tmp_path,
        """
        def cap20(score, b, h, q, kv):
            return 20.0 * torch.tanh(score / 20.0)

        def both(score, b, h, q, kv):
            score = score + (kv - q) * 2.0 ** (-8.0 * (h + 1) / 4)
            return 20.0 * torch.tanh(score / 20.0)
        """,
    )
    assert user_code.check_score_mod(_score_case(p, "cap20", softcap=20.0)) is None
    assert user_code.check_score_mod(_score_case(p, "both", softcap=20.0, alibi=True)) is None
    why = user_code.check_score_mod(_score_case(p, "cap20", softcap=30.0))
    assert why is not None and "where the case's (softcap 30) gives" in why
    assert user_code.score_words(_score_case(p, "both", softcap=20.0, alibi=True)) == "softcap 20, alibi"
    assert user_code.score_words(_score_case(p, "cap20", softcap=2.5)) == "softcap 2.5"
    assert user_code.score_words(_score_case(p, "cap20", alibi=True)) == "alibi"
    assert user_code.score_words(_score_case(p, "cap20")) == "no softcap, no alibi"


def test_a_score_mod_of_another_shape_or_type(tmp_path):
    p = _file(
        tmp_path,
        """
        def row(score, b, h, q, kv):
            return score[0]

        def number(score, b, h, q, kv):
            return 1.5

        def boom(score, b, h, q, kv):
            raise KeyError("no  such\\n head")
        """,
    )
    assert user_code.check_score_mod(_score_case(p, "row")) == (
        "it returned Tensor (16,), not scores of the input's shape"
    )
    assert user_code.check_score_mod(_score_case(p, "number")) == (
        "it returned float (), not scores of the input's shape"
    )
    with pytest.raises(ValueError) as e:
        user_code.check_score_mod(_score_case(p, "boom"))
    assert str(e.value) == "score_mod mods.py:boom raised KeyError: 'no such\\n head'"


# ------------------------------------------------------------------------------------------------ loading


def test_split_source_refuses_each_malformed_source(tmp_path):
    p = _file(tmp_path, "def f(b, h, q, kv):\n    return q >= kv\n")
    assert user_code.split_source(f"{p}:f", "mask_mod") == (p, "f")
    # a colon inside the path: the function is after the last one
    d = tmp_path / "a:b"
    d.mkdir()
    (d / "m.py").write_text("")
    assert user_code.split_source(f"{d / 'm.py'}:g", "mask_mod") == (d / "m.py", "g")
    for bad in (str(p), ":f", f"{p}:", f"{p}:not-a-name"):
        with pytest.raises(ValueError) as e:
            user_code.split_source(bad, "mask_mod")
        assert str(e.value) == f"mask_mod {bad!r}: give FILE.py:FUNCTION"
    with pytest.raises(ValueError) as e:
        user_code.split_source(f"{tmp_path / 'nowhere.py'}:f", "score_mod")
    assert str(e.value) == f"score_mod: no file {tmp_path / 'nowhere.py'}"
    with pytest.raises(ValueError, match="no file"):
        user_code.split_source(f"{tmp_path}:f", "mask_mod")  # a folder is not a file


def test_load_calls_a_factory_with_the_device(tmp_path):
    p = _file(
        tmp_path,
        """
        DEVICES = []

        def factory(device):
            DEVICES.append(device)
            return lambda b, h, q, kv: q >= kv

        def with_default(b, h, q, kv, window=4):
            return q - kv < window

        def any_args(*args):
            return args[2] >= args[3]
        """,
    )
    fn = user_code.load(f"{p}:factory", "mask_mod", "meta-device")
    assert fn(0, 0, 3, 2) is True and fn(0, 0, 2, 3) is False
    mod = user_code._module(p, "mask_mod")
    assert mod.DEVICES == ["meta-device"]
    assert user_code.load(f"{p}:with_default", "mask_mod", "cpu")(0, 0, 5, 2) is True  # the default not counted
    assert user_code.load(f"{p}:any_args", "mask_mod", "cpu")(0, 0, 5, 2) is True  # *args: any number


def test_load_refuses_each_wrong_function(tmp_path):
    p = _file(
        tmp_path,
        """
        N = 3

        def three(b, q, kv):
            return q >= kv

        def bad_factory(device):
            raise RuntimeError("no   gpu\\nhere")

        def not_callable_factory(device):
            return 7

        def factory_of_three(device):
            return lambda b, q, kv: q >= kv
        """,
    )
    cases = {
        "missing": f"mask_mod: {p} has no function 'missing'",
        "N": f"mask_mod: 'N' in {p} is not a function",
        "three": (
            "mask_mod: three takes 3 argument(s); flex calls it with (b, h, q_idx, kv_idx) (or write a factory of "
            "the device that returns one)"
        ),
        "bad_factory": "mask_mod: bad_factory(device) raised RuntimeError: no gpu here",
        "not_callable_factory": "mask_mod: not_callable_factory(device) returned int, not a function",
        "factory_of_three": (
            "mask_mod: factory_of_three takes 3 argument(s); flex calls it with (b, h, q_idx, kv_idx) (or write a "
            "factory of the device that returns one)"
        ),
    }
    for fn, said in cases.items():
        with pytest.raises(ValueError) as e:
            user_code.load(f"{p}:{fn}", "mask_mod", "cpu")
        assert str(e.value) == said
    with pytest.raises(ValueError) as e:
        user_code.load(f"{p}:three", "score_mod", "cpu")
    assert str(e.value).startswith(
        "score_mod: three takes 3 argument(s); flex calls it with (score, b, h, q_idx, kv_idx)"
    )
    # a malformed source and a file that fails to import, through load: each names the flag
    with pytest.raises(ValueError) as e:
        user_code.load(str(p), "score_mod", "cpu")
    assert str(e.value) == f"score_mod {str(p)!r}: give FILE.py:FUNCTION"
    bad = tmp_path / "bad.py"
    bad.write_text("raise RuntimeError('not  yet\\n written')\n")
    with pytest.raises(ValueError) as e:
        user_code.load(f"{bad}:f", "mask_mod", "cpu")
    assert str(e.value) == f"mask_mod: importing {bad} failed: RuntimeError: not yet written"


def test_a_module_is_imported_once_and_a_failed_import_is_forgotten(tmp_path):
    p = _file(tmp_path, "COUNT = [0]\nCOUNT[0] += 1\n\ndef f(b, h, q, kv):\n    return q >= kv\n")
    a = user_code._module(p, "mask_mod")
    b = user_code._module(p, "mask_mod")
    assert a is b and a.COUNT == [1]
    assert a.__name__.startswith("attnscope_user_") and sys.modules[a.__name__] is a
    broken = tmp_path / "broken.py"
    broken.write_text("def f(:\n")
    with pytest.raises(ValueError) as e:
        user_code._module(broken, "score_mod")
    assert str(e.value).startswith(f"score_mod: importing {broken} failed: SyntaxError: ")
    assert not [m for m, v in sys.modules.items() if m.startswith("attnscope_user_") and v is None]
    name = "attnscope_user_" + __import__("hashlib").sha256(str(broken.resolve()).encode()).hexdigest()[:12]
    assert name not in sys.modules
    not_py = tmp_path / "mask.txt"
    not_py.write_text("x = 1\n")
    with pytest.raises(ValueError) as e:
        user_code._module(not_py, "mask_mod")
    assert str(e.value) == f"mask_mod: {not_py} is not a Python module"


def test_one_line_joins_whitespace_and_keeps_300_characters():
    assert user_code._one_line(RuntimeError("a\n  b\tc ")) == "a b c"
    assert user_code._one_line(RuntimeError("x" * 400)) == "x" * 300


def test_the_mask_is_read_at_batch_element_0_and_compared_with_the_last(tmp_path):
    # batch element 0 keeps every key, the others are causal: B=2 differs between the first and last point
    p = _file(tmp_path, "def first_free(b, h, q, kv):\n    return (q >= kv) | (b == 0)\n")
    got, why = user_code.check_mask_mod(_mask_case(p, "first_free", batch=2))
    assert why is not None and got.equivalent_builtin is None
    # B=1: one point, which keeps every key
    got, why = user_code.check_mask_mod(_mask_case(p, "first_free", batch=1))
    assert why is None and got.equivalent_builtin == "none"


def test_factories_are_built_for_the_cpu(tmp_path):
    p = _file(
        tmp_path,
        """
        DEVICES = []

        def mask(device):
            DEVICES.append(device)
            return lambda b, h, q, kv: q >= kv

        def score(device):
            DEVICES.append(device)
            return lambda s, b, h, q, kv: s
        """,
    )
    user_code.check_mask_mod(_mask_case(p, "mask"))
    assert user_code.check_score_mod(_score_case(p, "score")) is None
    assert user_code._module(p, "mask_mod").DEVICES == [torch.device("cpu")] * 2


def test_positional_counts_required_positional_arguments():
    assert user_code._positional(lambda b, h, q, kv: 0) == 4
    assert user_code._positional(lambda s, b, h, q, kv, *, scale=1: 0) == 5
    assert user_code._positional(lambda b, h, q, kv=0: 0) == 3
    assert user_code._positional(lambda *a: 0) is None
    assert user_code._positional(type) is None  # a builtin whose signature Python cannot read
