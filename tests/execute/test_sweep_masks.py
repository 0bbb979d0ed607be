"""The sweep's mask, soft-cap and ALiBi axes: parsing (document lengths hold commas), the grid, trace names,
and a tiny masked sweep end to end with the inline executor."""

from __future__ import annotations

import pytest

from attnscope.cli.main import main
from attnscope.core.case_text import parse_alibi_axis, parse_mask_axis, parse_softcap_axis
from attnscope.core.cases import Axes, grid
from attnscope.core.types import Case
from attnscope.execute.job import Options, trace_file_name
from attnscope.execute.store import Store
from attnscope.execute.sweep_plan import plan

TINY = ["--device", "cpu", "--batch", "1", "--heads", "1", "--head-dim", "16", "--dtype", "fp32"]
FAST = ["--budget", "0.01", "--no-peak", "--quiet"]


def test_mask_axis_document_lengths_keep_their_commas():
    got = parse_mask_axis("none,sliding:256,document:1000,1500,600,996")
    assert got == ["none", "sliding:256", "document:1000,1500,600,996"]
    assert parse_mask_axis("document:2,2,causal_lower_right,padding:3,4") == [
        "document:2,2",
        "causal_lower_right",
        "padding:3,4",
    ]
    assert parse_mask_axis("causal,causal") == ["causal", "causal"]  # read as typed: the grid refuses the repeat


@pytest.mark.parametrize(
    ("text", "words"),
    [
        ("256,none", "must start with a mask name"),
        ("sliding:256,512", "only document and padding take a comma list"),
        ("none,,causal", "empty item"),
        ("nonsense:3", "must start with a mask name"),
        ("sliding:x", "window must be an integer"),
    ],
)
def test_mask_axis_refuses_nonsense(text, words):
    with pytest.raises(ValueError, match=words):
        parse_mask_axis(text)


def test_softcap_and_alibi_axes():
    assert parse_softcap_axis("0,30,30,12.5") == [None, 30.0, 30.0, 12.5]  # as typed: the grid refuses 30 twice
    for bad in ("-1", "x", "inf", ""):
        with pytest.raises(ValueError, match=r"^softcap "):  # the field: the command line says --softcap
            parse_softcap_axis(bad)
    assert parse_alibi_axis("no,yes") == [False, True]
    assert parse_alibi_axis("both") == [False, True]
    assert parse_alibi_axis("yes") == [True]
    with pytest.raises(ValueError, match=r"^alibi "):
        parse_alibi_axis("maybe")


def test_grid_crosses_the_new_axes():
    axes = Axes(seq=[16], mask=["none", "sliding:4", "document:6,10"], softcap=[None, 30.0], alibi=[False, True])
    cases = grid(axes, "cpu")
    assert len(cases) == 3 * 2 * 2  # counted by hand: masks × caps × alibi
    assert {(c.mask, c.softcap, c.alibi) for c in cases} == {
        (m, s, a) for m in ("none", "sliding:4", "document:6,10") for s in (None, 30.0) for a in (False, True)
    }
    assert {c.causal for c in cases} == {False}  # none, sliding and document are not SDPA's is_causal
    with pytest.raises(ValueError, match=r"mask=document:6,10: .*sum to 16, the sequence is 32"):
        grid(Axes(seq=[16, 32], mask=["document:6,10"]), "cpu")


def test_trace_names_differ_per_mask_cap_and_alibi():
    base = {"batch": 1, "heads": 1, "seq_q": 16, "head_dim": 16, "dtype": "fp32"}
    cases = [
        Case(**base, causal=True),
        Case(**base, causal=False),
        Case(**base, mask="none"),
        Case(**base, mask="sliding:4"),
        Case(**base, mask="sliding:8"),
        Case(**base, mask="document:6,10"),
        Case(**base, mask="document:6,10", softcap=30.0),
        Case(**base, mask="document:6,10", alibi=True),
    ]
    names = [trace_file_name("naive", c) for c in cases]
    assert len(set(names)) == len(names)
    # a case without a mask keeps the name it always had
    assert names[0] == "naive-b1-h1-s16-d16-fp32-causal-fwd.json"
    assert names[1] == "naive-b1-h1-s16-d16-fp32-fwd.json"
    assert names[5] == "naive-b1-h1-s16-d16-fp32-mask-document_6_10-fwd.json"
    assert names[6] == "naive-b1-h1-s16-d16-fp32-mask-document_6_10-cap30-fwd.json"
    assert names[7].endswith("-mask-document_6_10-alibi-fwd.json")
    long_doc = Case(**{**base, "seq_q": 4000}, mask="document:" + ",".join(["10"] * 400))
    other = Case(**{**base, "seq_q": 4000}, mask="document:" + ",".join(["10"] * 398 + ["5", "15"]))
    a, b = trace_file_name("naive", long_doc), trace_file_name("naive", other)
    assert len(a) <= 210 and len(b) <= 210 and a != b


def test_plan_names_each_job_trace_by_its_mask():
    cases = grid(Axes(seq=[16], mask=["none", "sliding:4"]), "cpu")
    jobs = plan(cases, ["naive"], Options(), explicit=True, done=set())
    assert [j.trace_name for j in jobs] == [
        "naive-b1-h16-s16-d64-bf16-mask-none-fwd.json",
        "naive-b1-h16-s16-d64-bf16-mask-sliding_4-fwd.json",
    ]


def test_mask_and_causal_together_are_refused(tmp_path, capsys):
    rc = main(["sweep", *TINY, *FAST, "--out", str(tmp_path / "s.jsonl"), "--mask", "none", "--causal", "yes"])
    assert rc == 2
    assert "--mask and --causal both set the masking: give one of them" in capsys.readouterr().err
    assert not (tmp_path / "s.jsonl").exists()


@pytest.mark.slow
def test_a_tiny_masked_sweep_end_to_end(tmp_path):
    out, traces = tmp_path / "s.jsonl", tmp_path / "traces"
    rc = main(
        [
            "sweep",
            *TINY,
            *FAST,
            "--seq",
            "16",
            "--mask",
            "none,document:6,10",
            "--softcap",
            "0,30",
            "--variants",
            "naive",
            "--executor",
            "inline",
            "--out",
            str(out),
            "--trace-dir",
            str(traces),
        ]
    )
    assert rc == 0
    rows = Store(out).rows()
    got = {(r["case"]["mask"], r["case"]["softcap"], r["case"]["alibi"], r["status"]) for r in rows}
    assert len(rows) == 4 and got == {
        ("document:6,10", 30.0, False, "ok"),
        ("document:6,10", None, False, "ok"),
        ("none", 30.0, False, "ok"),
        ("none", None, False, "ok"),
    }
    assert all(r["numerics_ok"] is True for r in rows)
    files = sorted(p.name for p in traces.iterdir())
    assert files == sorted(
        [
            "naive-b1-h1-s16-d16-fp32-mask-none-fwd.json",
            "naive-b1-h1-s16-d16-fp32-mask-none-cap30-fwd.json",
            "naive-b1-h1-s16-d16-fp32-mask-document_6_10-fwd.json",
            "naive-b1-h1-s16-d16-fp32-mask-document_6_10-cap30-fwd.json",
        ]
    )


SAME = {
    "measured": "causal",
    "same": ["causal@top_left", "causal_lower_right"],
    "where": "seq_q == seq_kv (there top-left and lower-right put each query at the same keys)",
}


def test_three_spellings_of_one_mask_at_seq_eq_seq_kv_are_one_case_said_so():
    """At Sq == Sk top-left and lower-right give query i keys 0..i both (offset Sk - Sq = 0): one mask, one case per
    point, under the spelling listed first; the others said with the number of points (2 heads × 2 seqs = 4)."""
    axes = Axes(seq=[16, 32], heads=[1, 2], mask=["causal", "causal_top_left", "causal_lower_right"])
    cases = grid(axes, "cpu")
    assert [(c.heads, c.seq_q, c.mask) for c in cases] == [(h, s, "causal") for h in (1, 2) for s in (16, 32)]
    assert cases.same_masks == [{**SAME, "points": 4}]
    # listed the other way round: the first listed is the one measured
    cases = grid(Axes(seq=[16], mask=["causal_lower_right", "causal"]), "cpu")
    assert [c.mask for c in cases] == ["causal_lower_right"]
    assert cases.same_masks == [{**SAME, "measured": "causal_lower_right", "same": ["causal"], "points": 1}]
    # a window and a prefix by their alignment too; masks that are not one mask stay apart
    cases = grid(Axes(seq=[16], mask=["sliding:4@lower_right", "sliding:4", "sliding:8", "none"]), "cpu")
    assert [c.mask for c in cases] == ["sliding:4@lower_right", "sliding:8", "none"]
    assert [(e["measured"], e["same"]) for e in cases.same_masks] == [("sliding:4@lower_right", ["sliding:4"])]


def test_where_seq_ne_seq_kv_the_alignments_differ_and_each_is_measured():
    """Sq=16, Sk=32: top-left gives query 0 key 0, lower-right keys 0..16: two masks.  At Sq = Sk = 32 one."""
    cases = grid(Axes(seq=[16, 32], seq_kv=[32], mask=["causal_top_left", "causal_lower_right"]), "cpu")
    assert [(c.seq_q, c.mask) for c in cases] == [
        (16, "causal@top_left"),
        (16, "causal_lower_right"),
        (32, "causal@top_left"),
    ]
    assert cases.same_masks == [{**SAME, "measured": "causal@top_left", "same": ["causal_lower_right"], "points": 1}]
    assert grid(Axes(seq=[16], seq_kv=[32], mask=["causal_top_left", "causal_lower_right"]), "cpu").same_masks == []


def test_the_library_refuses_one_mask_given_as_two_cases(tmp_path):
    from attnscope.api import sweep

    base = {"batch": 1, "heads": 1, "seq_q": 16, "head_dim": 16, "dtype": "fp32"}
    with pytest.raises(ValueError, match=r"^cases lists .* causal on cpu and .* causal_lower_right on cpu, one mask"):
        sweep([Case(**base, mask="causal"), Case(**base, mask="causal_lower_right")], ["naive"], out=tmp_path / "s")
    assert not (tmp_path / "s").exists()


def test_the_sweep_measures_one_mask_once_and_says_so_under_the_grid(tmp_path, capsys):
    import json

    out, doc = tmp_path / "s.jsonl", tmp_path / "rec.json"
    argv = ["sweep", *TINY, *FAST, "--seq", "16", "--mask", "causal,causal_top_left,causal_lower_right"]
    rc = main([*argv, "--variants", "naive", "--executor", "inline", "--out", str(out), "--json", str(doc)])
    assert rc == 0
    rows = Store(out).rows()
    assert [r["case"]["mask"] for r in rows] == ["causal"]  # one row: one case × one variant
    said = (
        "mask causal@top_left and causal_lower_right: the same mask as causal where seq_q == seq_kv (there top-left "
        "and lower-right put each query at the same keys); measured once, as causal, at 1 point"
    )
    text = " ".join(capsys.readouterr().out.split())
    assert said in text
    assert text.index("Best implementation per case") < text.index(said) < text.index("Policy over")
    assert json.loads(doc.read_text())["same_masks"] == [{**SAME, "points": 1}]


def test_the_merge_is_in_the_rows_so_recommend_and_the_page_say_it_later(tmp_path, capsys):
    import json

    from attnscope.api import recommend
    from attnscope.api.report import write_html

    out = tmp_path / "s.jsonl"
    argv = ["sweep", *TINY, *FAST, "--seq", "16,32", "--seq-kv", "32", "--mask", "causal_top_left,causal_lower_right"]
    assert main([*argv, "--variants", "naive,sdpa_math", "--executor", "inline", "--out", str(out)]) == 0
    rows = Store(out).rows()
    # at seq 32 = seq_kv the two alignments are one mask: measured once, as the first, by both variants; at seq 16 the
    # alignments differ and each is measured (2 seq × 2 masks − 1 merged = 3 cases, × 2 variants = 6 rows)
    merged = [(r["case"]["seq_q"], r["case"]["mask"], r.get("same_masks")) for r in rows]
    assert len(rows) == 6 and merged.count((32, "causal@top_left", ["causal_lower_right"])) == 2
    assert all(same is None for seq, _, same in merged if seq == 16)
    said = (
        "mask causal_lower_right: the same mask as causal@top_left where seq_q == seq_kv (there top-left and "
        "lower-right put each query at the same keys); measured once, as causal@top_left, at 1 point"
    )
    assert said in " ".join(capsys.readouterr().out.split())  # the sweep itself
    # a later reader of the store alone: recommend's dict, its command, the sweep's page
    assert recommend([out])["same_masks"] == [
        {**SAME, "measured": "causal@top_left", "same": ["causal_lower_right"], "points": 1}
    ]
    assert main(["recommend", str(out)]) == 0
    assert said in " ".join(capsys.readouterr().out.split())
    page = tmp_path / "s.html"
    write_html([str(out)], page)
    assert said in page.read_text()
    # a store written before the rows said it: nothing claimed
    old = tmp_path / "old.jsonl"
    old.write_text("".join(json.dumps({k: v for k, v in r.items() if k != "same_masks"}) + "\n" for r in rows))
    assert recommend([old])["same_masks"] == []
