"""A comma-list flag that lists a value twice (as typed, or once more through a range or an alias) is refused in one
line naming the flag and the value, exit 2, before any work; the library's grid says it in its own words.

Each value listed twice below is worked out by hand from the text: ``64..128+64,128`` is 64, 128 then 128 again;
``bf16,bfloat16`` is bf16 twice (bfloat16 is its long name); ``both,yes`` is no, yes, then yes again; a soft-cap and a
page size of 0 both mean none, so ``0,0.0`` is 0 twice.
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from attnscope.cli.main import main
from attnscope.core.arguments import UsageError, repeats, times

SWEEP = [
    ("--seq", "64,64", "64", "twice"),
    ("--seq", "64..128+64,128", "128", "twice"),
    ("--heads", "2,2,2", "2", "3 times"),
    ("--head-dim", "16,32,16", "16", "twice"),
    ("--batch", "1,1", "1", "twice"),
    ("--kv-heads", "2,2", "2", "twice"),
    ("--seq-kv", "64,64", "64", "twice"),
    ("--dtype", "bf16,bfloat16", "bf16", "twice"),
    ("--dtype", "fp32,fp32", "fp32", "twice"),
    ("--mask", "none,sliding:4,none", "none", "twice"),
    ("--softcap", "0,0.0", "0", "twice"),
    ("--softcap", "30,30", "30", "twice"),
    ("--alibi", "both,yes", "yes", "twice"),
    ("--mode", "fwd,fwd", "fwd", "twice"),
    ("--page-size", "0,16,0", "0", "twice"),
    # a list of KV lengths is said as the flag takes it (list:4,4), a distribution as written; a first entry that
    # starts with a number is a list too
    ("--kv-lens", "list:4,4,list:4,4", "list:4,4", "twice"),
    ("--kv-lens", "4,4,list:4,4", "list:4,4", "twice"),
    ("--kv-lens", "uniform:4..8@1,list:4,uniform:4..8@1", "uniform:4..8@1", "twice"),
]


def _refused(capsys: pytest.CaptureFixture[str], argv: list[str]) -> str:
    t0 = time.monotonic()
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err  # one line
    assert time.monotonic() - t0 < 10  # refused while the flags are read: nothing was measured
    return err.strip()


@pytest.mark.parametrize(("flag", "text", "value", "count"), SWEEP)
def test_a_sweep_axis_listing_a_value_twice_is_refused_by_its_flag(tmp_path, capsys, flag, text, value, count):
    out = tmp_path / "s.jsonl"
    argv = ["sweep", "--device", "cpu", "--variants", "naive", "--out", str(out), "--quiet", flag, text]
    err = _refused(capsys, argv)
    assert err == (
        f"attnscope sweep: error: argument {flag}: {value} is listed {count} in '{text}': give each value once "
        "(see attnscope sweep --help)"
    )
    assert not out.exists()  # before any work: not even the store was opened


def test_a_variant_named_twice_keeps_its_message(tmp_path, capsys):
    out = tmp_path / "s.jsonl"
    err = _refused(capsys, ["sweep", "--device", "cpu", "--variants", "naive,sdpa_math,naive", "--out", str(out)])
    assert err == "attnscope: error: --variants names naive more than once"
    err = _refused(capsys, ["run", "--device", "cpu", "--variants", "naive,naive"])
    assert err == "attnscope: error: --variants names naive more than once"


def test_a_list_without_repeats_passes_the_flag(tmp_path, capsys):
    """Lists of distinct values pass their flags and reach the sweep's own checks: here the last, a bad --mask
    entry, refused in the mask's words."""
    out = tmp_path / "s.jsonl"
    argv = ["sweep", "--device", "cpu", "--variants", "naive", "--out", str(out), "--seq", "64,128"]
    err = _refused(capsys, [*argv, "--dtype", "bf16,fp32", "--mask", "none,sliding:x"])
    assert err.startswith("attnscope: error: --mask 'sliding:x'") and "listed" not in err


def test_a_bad_entry_keeps_the_axis_own_message(tmp_path, capsys):
    """A list that cannot be read is left to the axis's check (its words name the value), repeat or not."""
    out = tmp_path / "s.jsonl"
    err = _refused(capsys, ["sweep", "--device", "cpu", "--out", str(out), "--seq", "64,64,x"])
    assert err == "attnscope: error: --seq '64,64,x': 'x' is neither a whole number nor a range like 512..16384x2"


@pytest.mark.parametrize(
    ("flag", "text", "value"),
    [("--seq", "16,16", "16"), ("--batch", "1..4x2,2", "2"), ("--impl", "eager,sdpa,eager", "eager"),
     ("--mode", "decode,decode", "decode"), ("--replay", "eager,eager", "eager")],
)  # fmt: skip
def test_a_model_list_listing_a_value_twice_is_refused_by_its_flag(capsys, flag, text, value):
    pytest.importorskip("transformers")
    err = _refused(capsys, ["model", "--device", "cpu", "--steps", "2", flag, text])
    assert err == (
        f"attnscope model: error: argument {flag}: {value} is listed twice in '{text}': give each value once "
        "(see attnscope model --help)"
    )


def test_diff_metrics_listing_a_metric_twice_is_refused(capsys):
    a = str(Path("tests/data/h200/naive.json"))
    err = _refused(capsys, ["diff", a, a, "--metrics", "gpu,cpu,gpu"])
    assert err == (
        "attnscope diff: error: argument --metrics: gpu is listed twice in 'gpu,cpu,gpu': give each value once "
        "(see attnscope diff --help)"
    )


def test_repeats_counts_each_value_listed_more_than_once_in_first_order():
    assert repeats([64, 128, 64, 32, 128, 64]) == [(64, 3), (128, 2)]
    assert repeats(["a", "b"]) == [] and repeats([]) == []
    assert [times(n) for n in (2, 3, 10)] == ["twice", "3 times", "10 times"]


def test_the_grid_refuses_an_axis_listing_a_value_twice_in_its_own_words():
    from attnscope.core.cases import Axes, grid

    with pytest.raises(UsageError) as e:
        grid(Axes(seq=[64, 128, 64]), "cpu")
    assert str(e.value) == "seq lists 64 twice: give each value once" and e.value.fields == ("seq",)
    with pytest.raises(UsageError, match=r"^mask lists 'none' 3 times"):
        grid(Axes(mask=["none", "none", "none"]), "cpu")
    assert len(grid(Axes(seq=[64, 128]), "cpu")) == 2  # each once: a case each


def test_a_model_grid_refuses_a_point_or_an_implementation_listed_twice():
    pytest.importorskip("transformers")
    from attnscope.api.modeling import ModelGrid

    with pytest.raises(UsageError) as e:
        ModelGrid.build("tiny", points=[(1, 16), (1, 16)])
    assert str(e.value) == "points lists (1, 16) twice: give each value once" and "--" not in str(e.value)
    with pytest.raises(UsageError, match=r"^impls lists 'eager' twice"):
        ModelGrid.build("tiny", impls=["eager", "eager"], points=[(1, 16)])


def test_a_variant_list_from_python_naming_one_twice_is_refused_as_the_text_is():
    """``variants=["naive", "naive"]`` was measured twice (the text 'naive,naive' was refused): now the same line."""
    pytest.importorskip("torch")
    import attnscope
    from attnscope.core.cases import make_case

    case = make_case("cpu", batch=1, heads=1, seq_q=16, head_dim=8, dtype="fp32")
    with pytest.raises(UsageError) as e:
        attnscope.run(case, variants=["naive", "sdpa_math", "naive"], timing_budget_s=0.01, measure_peak=False)
    assert str(e.value) == "variants names naive more than once" and e.value.fields == ("variants",)


def test_a_sweep_of_a_case_listed_twice_is_refused_before_any_row(tmp_path):
    from attnscope.api import sweep
    from attnscope.core.cases import make_case

    case = make_case("cpu", batch=1, heads=1, seq_q=16, head_dim=8, dtype="fp32")
    out = tmp_path / "s.jsonl"
    with pytest.raises(UsageError) as e:
        sweep([case, make_case("cpu", seq_q=32), case], ["naive"], out=out, executor="inline")
    assert str(e.value) == "cases lists B=1 H=1 S=16 D=8 fp32 causal on cpu twice: give each case once"
    assert not out.exists()
