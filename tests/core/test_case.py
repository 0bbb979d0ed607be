"""The case declared once: the table of its fields (attnscope.core.case) against the Case dataclass, the flags of
run and sweep, the trace file names, the labels, the JSON, the sweep's axes and the recommender's axes.

Expected values are written by hand from the flags' documented spellings and the grammar of labels and names."""

from __future__ import annotations

import argparse
import dataclasses
import json

import pytest

from attnscope.cli.flags import case_fields
from attnscope.cli.main import build_parser
from attnscope.core.case import AXIS_FIELDS, FIELD, FIELDS, Case, recommender_axes
from attnscope.core.cases import Axes, axes_from, default_case, grid, make_case
from attnscope.execute.job import trace_file_name

# Every flag spelling of the case's fields before the table (read from `--help` of run and sweep).
RUN_FLAGS = [
    "--device",
    "--batch",
    "--heads",
    "--kv-heads",
    "--seq",
    "--seq-kv",
    "--head-dim",
    "--dtype",
    "--causal",
    "--no-causal",
    "--mask",
    "--softcap",
    "--alibi",
    "--mode",
    "--mask-mod",
    "--score-mod",
    "--page-size",
    "--kv-lens",
]
SWEEP_FLAGS = ["--batch", "--budget-tokens", "--heads", "--kv-heads", "--seq", "--seq-kv", "--head-dim", "--dtype"]
SWEEP_FLAGS += ["--causal", "--mode", "--mask", "--softcap", "--alibi", "--device"]

# A case with every field away from its default.
FULL = Case(
    batch=2,
    heads=8,
    seq_q=64,
    head_dim=32,
    dtype="fp32",
    causal=False,
    kv_heads=2,
    seq_kv=128,
    device="cuda:1",
    mask="sliding:16@lower_right",
    softcap=30.0,
    alibi=True,
    mode="fwd_bwd",
    mask_mod="user/mods.py:doc",
    score_mod="user/mods.py:cap",
)


def _parser(command: str) -> argparse.ArgumentParser:
    p = build_parser([command])
    sub = next(a for a in p._actions if isinstance(a, argparse._SubParsersAction))
    return sub.choices[command]  # type: ignore[no-any-return]


def _options(command: str) -> set[str]:
    return {o for a in _parser(command)._actions for o in a.option_strings}


def test_every_dataclass_field_is_in_the_table_once_and_nothing_else():
    names = [f.name for f in FIELDS]
    assert sorted(names) == sorted(f.name for f in dataclasses.fields(Case))
    assert len(names) == len(set(names)) == 17
    for f in dataclasses.fields(Case):
        assert FIELD[f.name].type == f.type, f.name  # the table says the dataclass's annotation


def test_every_field_has_a_flag_in_run_and_in_sweep_and_every_old_spelling_stays():
    run, sweep = _options("run"), _options("sweep")
    for f in FIELDS:
        assert f.flag in run, f.name
        # a user's flex functions are run-only (written for one shape): no sweep flag and no axis
        assert (f.flag in sweep) == (f.name not in ("mask_mod", "score_mod")), f.name
        assert (f.axis is None) or f.flag in sweep, f.name
    assert set(RUN_FLAGS) <= run
    assert set(SWEEP_FLAGS) <= sweep
    for command in ("guess", "variants"):  # they take the case as run does
        assert set(RUN_FLAGS) <= _options(command)


def test_run_lists_the_case_flags_in_the_order_it_always_did():
    group = next(g for g in _parser("run")._action_groups if g.title and g.title.startswith("case"))
    assert [o for a in group._group_actions for o in a.option_strings] == RUN_FLAGS


def test_run_flags_give_the_case_they_name():
    args = _parser("run").parse_args(
        "--device cpu --batch 2 --heads 8 --kv-heads 2 --seq 64 --seq-kv 128 --head-dim 32 --dtype float32 "
        "--mask sliding:16@lower_right --softcap 30 --alibi --mode fwd_bwd "
        "--mask-mod user/mods.py:doc --score-mod user/mods.py:cap".split()
    )
    want = dataclasses.replace(FULL, device="cpu")
    assert make_case("cpu", **case_fields(args)) == want
    assert "device" not in case_fields(args)  # the device is the API's to parse (attnscope.api.running.case_of)
    # no flag at all: the device's default case, causal
    bare = make_case("cpu", **case_fields(_parser("run").parse_args([])))
    assert bare == Case(batch=1, heads=8, seq_q=512, head_dim=64, dtype="bf16", causal=True, device="cpu")
    assert make_case("cpu", **case_fields(_parser("run").parse_args(["--no-causal"]))).causal is False


def test_causal_no_causal_and_mask_exclude_each_other_in_run():
    for argv in (["--causal", "--mask", "none"], ["--no-causal", "--causal"], ["--mask", "none", "--no-causal"]):
        with pytest.raises(SystemExit) as e:
            _parser("run").parse_args(argv)
        assert e.value.code == 2


def test_default_case_per_device():
    assert default_case("cpu") == Case(batch=1, heads=8, seq_q=512, head_dim=64, device="cpu")
    assert default_case("cuda:1") == Case(batch=4, heads=16, seq_q=2048, head_dim=64, device="cuda:1")


def test_a_trace_name_tells_apart_cases_that_differ_in_one_field():
    base = Case(batch=1, heads=8, seq_q=64, head_dim=16, dtype="fp32", causal=False)
    other = {
        "batch": 2,
        "heads": 16,
        "kv_heads": 4,
        "seq_q": 128,
        "seq_kv": 96,
        "head_dim": 32,
        "dtype": "fp16",
        "causal": True,
        "mask": "sliding:8",
        "softcap": 20.0,
        "alibi": True,
        "mode": "fwd_bwd",
        "mask_mod": "mods.py:doc",
        "score_mod": "mods.py:cap",
        "page_size": 16,
        "kv_lens": "100",
    }
    assert set(other) == {f.name for f in FIELDS} - {"device"}  # one sweep runs on one device: not in the name
    base_name = trace_file_name("naive", base)
    for name, value in other.items():
        changed = dataclasses.replace(base, **{name: value})
        assert trace_file_name("naive", changed) != base_name, name
    assert base_name == "naive-b1-h8-s64-d16-fp32-fwd.json"
    causal = dataclasses.replace(base, causal=True)
    assert trace_file_name("naive", causal) == "naive-b1-h8-s64-d16-fp32-causal-fwd.json"


def test_a_trace_name_holds_the_mask():
    names = {m: trace_file_name("sdpa_flash", Case(1, 8, 64, 16, mask=m)) for m in ("sliding:8", "document:40,24")}
    assert names["sliding:8"] == "sdpa_flash-b1-h8-s64-d16-bf16-mask-sliding_8-fwd.json"
    assert names["document:40,24"] == "sdpa_flash-b1-h8-s64-d16-bf16-mask-document_40_24-fwd.json"
    full = trace_file_name("naive", FULL)
    assert full == (
        "naive-b2-h8-kv2-s64x128-d32-fp32-mask-sliding_16_lower_right-cap30-alibi-fwd_bwd"
        "-mm-mods.py_doc-sm-mods.py_cap.json"
    )


def test_label_names_every_field_that_is_not_its_default():
    assert FULL.label() == (
        "B=2 H=8 KV=2 S=64x128 D=32 fp32 sliding:16@lower_right softcap=30 alibi fwd+bwd"
        " mask_mod=mods.py:doc score_mod=mods.py:cap on cuda:1"
    )
    assert Case(1, 8, 512, 64).label() == "B=1 H=8 S=512 D=64 bf16 causal on cpu"
    assert Case(1, 8, 512, 64, causal=False, softcap=50.0).mask_label == "softcap=50"


def test_json_round_trip_of_a_case_with_every_field_set():
    d = FULL.to_dict()
    assert list(d) == [  # the dataclass's order: documents written before keep theirs
        "batch",
        "heads",
        "seq_q",
        "head_dim",
        "dtype",
        "causal",
        "kv_heads",
        "seq_kv",
        "device",
        "mask",
        "softcap",
        "alibi",
        "mode",
        "mask_mod",
        "score_mod",
    ]
    assert d["mask"] == "sliding:16@lower_right" and d["softcap"] == 30.0 and d["alibi"] is True
    assert Case.from_dict(json.loads(json.dumps(d))) == FULL
    # the user's functions are left out when not given: a plain case's dict is as it was before they existed
    plain = dataclasses.replace(FULL, mask_mod=None, score_mod=None).to_dict()
    assert list(plain) == list(d)[:-2]


def test_json_of_an_older_or_newer_writer_loads():
    old = {"batch": 1, "heads": 8, "seq_q": 64, "head_dim": 16, "dtype": "fp32", "causal": True, "device": "cpu"}
    assert Case.from_dict({**old, "a_later_field": 1}) == Case(1, 8, 64, 16, "fp32")


def _sweep_args(argv: list[str]) -> argparse.Namespace:
    return _parser("sweep").parse_args(argv)


def test_sweep_product_over_two_axes_is_counted_by_hand():
    cases = grid(axes_from(_sweep_args(["--seq", "16..64x2", "--mask", "none,sliding:4"])), "cpu")
    # 3 lengths (16, 32, 64) × 2 masks, the last axis varying fastest
    assert [(c.seq_q, c.mask) for c in cases] == [
        (16, "none"),
        (16, "sliding:4"),
        (32, "none"),
        (32, "sliding:4"),
        (64, "none"),
        (64, "sliding:4"),
    ]


def test_the_issue_masked_sweep_parses_into_its_points():
    from attnscope.cli.sweep import _axes

    argv = "--seq 32 --mask none,sliding:8,document:10,12,6,4 --softcap 0,30 --alibi no,yes".split()
    cases = grid(_axes(_sweep_args(argv), "cpu"), "cpu")
    assert len(cases) == 1 * 3 * 2 * 2  # seq × masks × caps × alibi
    assert {c.mask for c in cases} == {"none", "sliding:8", "document:10,12,6,4"}
    assert {c.softcap for c in cases} == {None, 30.0} and {c.alibi for c in cases} == {False, True}
    assert {(c.batch, c.heads, c.head_dim) for c in cases} == {(1, 8, 64)}  # the CPU's sweep defaults


def test_axes_know_only_the_table_and_refuse_what_excludes_each_other():
    assert sorted(Axes().values) == sorted(f.dest for f in AXIS_FIELDS)
    assert "seq" in Axes().values and "seq_q" not in Axes().values  # named as the flag
    with pytest.raises(TypeError, match="seq_q"):
        Axes(seq_q=[1])
    with pytest.raises(ValueError, match="mask and causal both set the masking"):
        axes_from(_sweep_args(["--mask", "none", "--causal", "yes"]))
    with pytest.raises(ValueError, match="not both"):
        axes_from(_sweep_args(["--batch", "1", "--budget-tokens", "64"]))


def test_sweep_help_names_each_default_the_table_gives():
    for f in AXIS_FIELDS:
        for kind, value in f.sweep_default.items():
            assert value in (f.sweep[0].help or ""), (f.name, kind)


def test_the_recommender_takes_its_axes_from_the_table():
    from attnscope.analysis.recommend import policy, ranges
    from attnscope.document import recommendation as words

    ax = recommender_axes()
    # the recommender's lists are the table's (not copies that could drift)
    assert (words.AXES, words.LABEL_AXES, words.SYMBOL) == (ax.policy, ax.label, ax.symbol)
    assert (policy.NUMERIC, ranges.TWIN) == (ax.numeric, ax.twin)
    # and the table gives what the recommender said by hand before it read the table
    assert ax.policy == (
        "mode", "seq_q", "head_dim", "causal", "mask", "dtype", "heads", "kv_heads", "seq_kv", "batch", "softcap",
        "alibi", "device", "page_size", "kv_lens",
    )  # fmt: skip
    assert ax.label == (
        "batch", "heads", "kv_heads", "seq_q", "seq_kv", "head_dim", "dtype", "causal", "mask", "softcap", "alibi",
        "mode", "page_size", "kv_lens", "device",
    )  # fmt: skip
    assert ax.symbol == {
        "seq_q": "S",
        "seq_kv": "S_kv",
        "head_dim": "D",
        "batch": "B",
        "heads": "H",
        "kv_heads": "H_kv",
        "page_size": "P",
        "kv_lens": "L_kv",
    }
    assert ax.numeric == {"seq_q", "seq_kv", "head_dim", "batch", "heads", "kv_heads", "softcap", "page_size"}
    assert ax.twin == {"seq_kv": "seq_q", "kv_heads": "heads"}
    # a row whose case leaves seq_kv and kv_heads out reads them from their twins
    got = words.axes_of({"case": {"batch": 1, "heads": 8, "seq_q": 64, "head_dim": 16, "seq_kv": None}})
    assert (got["seq_kv"], got["kv_heads"]) == (64, 8)


def test_every_field_but_the_x_axis_can_split_the_sweep_page():
    from attnscope.report.html.sweep import PANEL_AXES

    # seq_q is the figures' x axis; the run-only fields (no sweep flag) never vary in a sweep
    assert sorted(PANEL_AXES) == sorted({f.name for f in FIELDS if f.sweep} - {"seq_q"})
