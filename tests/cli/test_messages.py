"""Each message a user met that said something untrue, now saying what is so."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from attnscope.cli.main import main

DATA = Path(__file__).resolve().parents[1] / "data"
SWEEP = DATA / "cpu" / "tiny_sweep.jsonl"  # a real CPU sweep


def test_strict_help_says_only_a_clear_miss_fails(capsys):
    assert main(["run", "--help"]) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert "clearly missed" in out and "unmeasurable or unclear one does not fail" in out
    assert "any missed or unmeasurable prediction" not in out


def test_an_explicit_causal_is_not_called_the_default(capsys):
    argv = ["run", "--device", "cpu", "--causal", "--seq", "8", "--seq-kv", "16"]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert "(--causal, the default)" not in err
    assert "from --causal" in err and "ambiguous" in err


def test_flash_attn_message_describes_no_other_machine():
    from attnscope.core.types import Case
    from attnscope.variants import REGISTRY

    v = REGISTRY["flash_attn2"]
    reason = v.check(Case(1, 1, 16, 16, dtype="bf16", device="cpu")) or ""
    for said in (v.description, reason):
        assert "2.11" not in said and "CUDA 13" not in said and "no wheel" not in said


def test_a_virtual_file_system_is_named_as_such(capsys, tmp_path):
    assert main(["report", str(SWEEP), "-o", "/proc/version"]) == 2
    err = capsys.readouterr().err
    assert "/proc is the kernel's virtual file system" in err and "No such file" not in err


def test_recommend_names_a_recommendation_as_one(capsys, tmp_path):
    rec = tmp_path / "rec.json"
    assert main(["recommend", str(SWEEP), "--json", str(rec)]) == 0
    assert "schema_version" in json.loads(rec.read_text())
    capsys.readouterr()
    assert main(["recommend", str(rec)]) == 2
    err = capsys.readouterr().err
    assert "a recommendation (what attnscope recommend writes), not result rows" in err
    assert "no schema_version" not in err


def test_recommend_says_it_left_out_a_torn_last_line(capsys, tmp_path):
    lines = SWEEP.read_text().splitlines()
    torn = tmp_path / "torn.jsonl"
    torn.write_text("\n".join(lines) + '\n{"variant": "na')  # a sweep killed mid-write
    assert main(["recommend", str(torn)]) == 0
    err = capsys.readouterr().err
    assert f"line {len(lines) + 1} is not valid JSON" in err and "left out" in err


def test_a_plugin_returning_the_wrong_layout_is_told_the_contract():
    torch = pytest.importorskip("torch")
    import attnscope
    from attnscope.core.types import Case
    from attnscope.variants import REGISTRY, Prepared, Variant, register

    def prepare(case, x):  # [B, S, H, D] instead of [B, H, S, D]: a layout mistake a plugin can make
        def call():
            o = torch.nn.functional.scaled_dot_product_attention(x.q, x.k, x.v, is_causal=case.causal)
            return o.transpose(1, 2).contiguous()

        return Prepared(fn=call)

    register(Variant("t_layout", "test", "test-only: wrong layout", lambda c: None, prepare))
    try:
        case = Case(batch=1, heads=2, seq_q=16, head_dim=8, dtype="fp32", causal=True, device="cpu")
        doc = attnscope.run(case, "t_layout", timing_budget_s=0.01, measure_peak=False)
    finally:
        REGISTRY.pop("t_layout", None)
    row = doc["results"][0]
    assert row["status"] == "error"
    assert "plugin contract" in row["reason"]
    assert "shape (1, 16, 2, 8), expected (1, 2, 16, 8)" in row["reason"]
    assert "broadcast" not in row["reason"] and "must match" not in row["reason"]


def test_the_sweep_header_counts_only_the_pairs_that_apply() -> None:
    # seen on an H100: "6 case(s) × 20 variant(s) = 120 job(s); … 54 to measure": the default set's 11 serving
    # variants do not apply to the 6 dense cases, so the grid is 6 × 9 = 54 jobs, and 120 − 54 = 66 pairs left out
    from types import SimpleNamespace

    from attnscope.api.campaign import Planned
    from attnscope.cli.sweep import header

    args = SimpleNamespace(out="s.jsonl")
    req = SimpleNamespace(cases=[None] * 6, num_variants=20, workers="inline", notes=[], left_out=None)
    assert header(args, req, Planned(total=52, done_before=2))[0] == (
        "attnscope sweep: 6 case(s) × 20 variant(s) = 54 job(s) (66 pair(s) of a serving variant and a dense "
        "case, or the reverse, do not apply); 2 already in s.jsonl, 52 to measure (inline)"
    )
    every = header(args, SimpleNamespace(**{**vars(req), "num_variants": 2}), Planned(total=12, done_before=0))
    assert (
        every[0]
        == "attnscope sweep: 6 case(s) × 2 variant(s) = 12 job(s); 0 already in s.jsonl, 12 to measure (inline)"
    )


@pytest.mark.parametrize(
    ("row", "said"),
    [
        ({"median_us": 1234.56, "status": "ok"}, "1,234.6 µs per step"),  # a model row: its step
        ({"status": "ok", "gpu_time": {"median_us": 12.34}, "cpu_time": {"median_us": 99.0}}, "12.3 µs"),
        ({"status": "ok", "gpu_time": None, "cpu_time": {"median_us": 5.0}}, "5.0 µs"),  # a CPU row
        ({"status": "ok", "gpu_time": {"median_us": None}, "reason": "no time"}, "no time"),
        ({"status": "ok", "gpu_time": "12.3", "reason": "odd"}, "odd"),  # a time that is no timing dict
        ({"status": "error", "gpu_time": {"median_us": 1.0}, "reason": "boom"}, "boom"),  # not ok: its reason
        ({"status": "error", "reason": "two\n  lines  here"}, "two lines here"),
        ({"status": "oom", "reason": "x" * 200}, "x" * 160),
        ({"status": "skipped"}, ""),
    ],
)
def test_a_finished_row_in_a_few_words(row, said, capsys):
    """The plain progress line (stderr not a terminal, as here): the job, its status, then a median where there is
    one, else why not."""
    from attnscope.api.campaign import Finished, Planned
    from attnscope.cli.common import Progress

    with Progress("t") as bar:
        bar(Planned(1, 0))
        bar(Finished(row, row["status"], "job", 1, 1))
    assert capsys.readouterr().err == f"[1/1] {row['status']} job: {said}\n"


def test_every_file_not_written_is_one_line_and_the_exit_status_is_74(capsys):
    from attnscope.cli.common import say_unwritten

    assert say_unwritten({"--json": "r.json: not written: full", "--html": "r.html: not written: full"}) == 74
    assert capsys.readouterr().err == (
        "attnscope: error: r.json: not written: full\nattnscope: error: r.html: not written: full\n"
    )
