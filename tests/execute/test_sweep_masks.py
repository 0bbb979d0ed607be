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
