"""The library's errors name values; the command line's one error handler says each as the flag the user typed.

Each row below is one bad input, given twice: to the library (its message names the value, as the library calls it,
and no ``--flag``) and to ``attnscope`` (its one line names the flag).  The expected texts are written here by hand.
"""

from __future__ import annotations

import pickle

import pytest

from attnscope.cli.errors import as_flags
from attnscope.cli.main import main
from attnscope.core.arguments import UsageError, check_timeout, fields_of, parse_device, variant_names
from attnscope.core.cases import Axes, grid, make_case
from attnscope.execute.executors import parse_devices


def test_each_listed_value_becomes_its_flag() -> None:
    e = UsageError("seq_kv 12 with kv_lens 7,30: leave seq_kv out", fields=("seq_kv", "kv_lens"))
    assert as_flags(e) == "--seq-kv 12 with --kv-lens 7,30: leave --seq-kv out"


def test_only_the_listed_values_and_whole_names_are_said_as_flags() -> None:
    # "mask" is listed, "seq_q" is not; "mask_mod" and "is_causal" are other names, not the value "mask"/"causal"
    e = UsageError("mask none with seq_q=3: no mask_mod, torch's is_causal", fields=("mask", "causal"))
    assert as_flags(e) == "--mask none with seq_q=3: no mask_mod, torch's is_causal"


def test_quoted_values_are_left_as_given() -> None:
    """A value the user typed is data: 'sliding:mask' keeps its text; an apostrophe in prose opens no quote."""
    e = UsageError("mask 'sliding:mask': the window must be an integer; each sequence's mask", fields=("mask",))
    assert as_flags(e) == "--mask 'sliding:mask': the window must be an integer; each sequence's --mask"


def test_a_name_inside_a_path_or_a_file_name_is_left_as_it_is() -> None:
    e = UsageError("out out/x.jsonl: mask_mod mask.py:fn in run/out", fields=("out", "mask_mod", "mask"))
    assert as_flags(e) == "--out out/x.jsonl: --mask-mod mask.py:fn in run/out"


def test_a_name_read_as_a_plural_is_left_as_it_is() -> None:
    # seen on an H100: "this machine has 1 CUDA --device(s)" where "device(s)" is a word of the sentence
    e = UsageError("device cuda:99: this machine has 1 CUDA device(s), cuda:0 to cuda:0", fields=("device",))
    assert as_flags(e) == "--device cuda:99: this machine has 1 CUDA device(s), cuda:0 to cuda:0"


def test_an_error_without_fields_is_printed_as_it_is() -> None:
    assert as_flags(ValueError("budget_s: must be > 0")) == "budget_s: must be > 0"
    assert as_flags(UsageError("mask x", fields=("no_such_value",))) == "mask x"


def test_the_parameters_and_the_case_fields_have_their_flags() -> None:
    e = UsageError(
        "budget_s, timeout_s, time_limit_s, head_dim, seq, seq_q, case.device",
        fields=("budget_s", "timeout_s", "time_limit_s", "head_dim", "seq", "seq_q", "case.device"),
    )
    assert as_flags(e) == "--budget, --timeout, --time-limit, --head-dim, --seq, --seq, --device"


def test_fields_travel_with_the_error_across_a_pickle() -> None:
    """A worker process (or Ray) sends its error back pickled: the names must come with the message."""
    e = pickle.loads(pickle.dumps(UsageError("kv_lens '1,0': every length must be >= 1", fields=("kv_lens",))))
    assert isinstance(e, UsageError) and str(e) == "kv_lens '1,0': every length must be >= 1"
    assert fields_of(e) == ("kv_lens",)
    assert fields_of(ValueError("x")) == ()
    # a subclass built from other arguments (the campaign's store refusal) travels as the UsageError it also is
    from attnscope.api.campaign import StoreHoldsRows

    held = pickle.loads(pickle.dumps(StoreHoldsRows("s.jsonl", 2, 0)))
    assert type(held) is UsageError and fields_of(held) == ("out", "resume")
    assert str(held) == "s.jsonl already holds 2 row(s): pass resume=True to measure only what is missing"


def _library_message(call) -> str:
    with pytest.raises(ValueError) as e:
        call()
    return str(e.value)


# (the library's call, its message (start), the command line, its error line (after "attnscope: error: "))
ROWS = [
    (
        lambda: make_case("cpu", mask="sliding:x"),
        "mask 'sliding:x': window must be an integer",
        ["run", "--device", "cpu", "--mask", "sliding:x"],
        "--mask 'sliding:x': window must be an integer",
    ),
    (
        lambda: make_case("cpu", kv_lens="1,0"),
        "kv_lens '1,0': every length must be >= 1",
        ["run", "--device", "cpu", "--kv-lens", "1,0"],
        "--kv-lens '1,0': every length must be >= 1",
    ),
    (
        lambda: make_case("cpu", batch=2, kv_lens="4,5", seq_kv=4),
        "seq_kv 4 with kv_lens 4,5: the KV length is each sequence's (the longest is 5); leave seq_kv out",
        ["run", "--device", "cpu", "--batch", "2", "--kv-lens", "4,5", "--seq-kv", "4"],
        "--seq-kv 4 with --kv-lens 4,5: the KV length is each sequence's (the longest is 5); leave --seq-kv out",
    ),
    (
        lambda: make_case("cpu", seq_q=1, batch=1, kv_lens="8", mode="fwd_bwd"),
        "a serving cache (page_size or kv_lens) is measured forward and plain: drop mode fwd_bwd",
        ["run", "--device", "cpu", "--seq", "1", "--kv-lens", "8", "--mode", "fwd_bwd"],
        "a serving cache (--page-size or --kv-lens) is measured forward and plain: drop --mode fwd_bwd",
    ),
    (
        lambda: make_case("cpu", kv_heads=3),
        "kv_heads 3 must divide heads 8 (GQA groups)",
        ["run", "--device", "cpu", "--kv-heads", "3"],
        "--kv-heads 3 must divide --heads 8 (GQA groups)",
    ),
    (
        lambda: make_case("cpu", dtype="int4"),
        "dtype 'int4': use one of bf16, fp16, fp32",
        ["run", "--device", "cpu", "--dtype", "int4"],
        "--dtype 'int4': use one of bf16, fp16, fp32",
    ),
    (
        lambda: make_case("cpu", seq_q=4, seq_kv=8, causal=True),
        "the masking from causal (given, or by default when no mask is given) with seq_q=4 != seq_kv=8",
        ["run", "--device", "cpu", "--seq", "4", "--seq-kv", "8", "--causal"],
        "the masking from --causal (given, or by default when no --mask is given) with seq_q=4 != seq_kv=8",
    ),
    (
        lambda: grid(Axes(seq=[1000], budget_tokens=4096), "cpu"),
        "budget_tokens 4096 is not a multiple of seq 1000",
        ["sweep", "--device", "cpu", "--seq", "1000", "--budget-tokens", "4096", "--variants", "naive"],
        "--budget-tokens 4096 is not a multiple of seq 1000",
    ),
    (
        lambda: variant_names("a,,b"),
        "variants 'a,,b' has an empty name between commas",
        ["run", "--device", "cpu", "--variants", "a,,b"],
        "--variants 'a,,b' has an empty name between commas",
    ),
    (
        lambda: check_timeout("inline", 5.0),
        "timeout_s needs a worker it can stop, and executor inline (given, or the default) runs the jobs in this "
        "process: use executor process (or ray), or leave timeout_s out",
        ["run", "--device", "cpu", "--executor", "inline", "--timeout", "5"],
        "--timeout needs a worker it can stop, and --executor inline (given, or the default) runs the jobs in this "
        "process: use --executor process (or ray), or leave --timeout out",
    ),
    (
        lambda: parse_device("tpu"),
        "device 'tpu': attnscope measures on cpu or cuda[:N] (NVIDIA GPUs) only",
        ["run", "--device", "tpu"],
        "--device 'tpu': attnscope measures on cpu or cuda[:N] (NVIDIA GPUs) only",
    ),
    (  # model had its own device parser, which took cudaXYZ for a GPU: now the one parser refuses it
        lambda: parse_device("cudaXYZ"),
        "device 'cudaXYZ': attnscope measures on cpu or cuda[:N] (NVIDIA GPUs) only",
        ["model", "--device", "cudaXYZ"],
        "--device 'cudaXYZ': attnscope measures on cpu or cuda[:N] (NVIDIA GPUs) only",
    ),
    (
        lambda: parse_devices("cuda:0,cuda:0"),
        "devices 'cuda:0,cuda:0': names a GPU twice",
        ["sweep", "--devices", "cuda:0,cuda:0", "--variants", "naive"],
        "--devices 'cuda:0,cuda:0': names a GPU twice",
    ),
]


@pytest.mark.parametrize(("call", "library", "argv", "line"), ROWS, ids=[r[3].split(":")[0][:30] for r in ROWS])
def test_the_library_names_the_value_and_the_command_line_the_flag(call, library, argv, line, capsys) -> None:
    said = _library_message(call)
    assert said.startswith(library)
    assert "--" not in said  # no flag the library caller never typed
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith("attnscope: error: " + line), err
    assert err.count("\n") == 1  # one line


def test_a_tour_resumed_elsewhere_names_the_values_and_the_command_line_their_flags(tmp_path) -> None:
    """A transcript made on cuda at size small, resumed on cpu at tiny: the session names device and size; the
    command line's handler says --device and --size."""
    from attnscope.tour.session import Session, TourError

    s = Session("cpu", "tiny", lambda *a: ("", ""), tmp_path / "t.json", lambda m: None)
    with pytest.raises(TourError) as e:
        s.start({"device": "cuda", "size": "small"})
    said = str(e.value)
    assert said.endswith("made on cuda at small, not cpu at tiny: resume it with the same device and size")
    assert as_flags(e.value).endswith("resume it with the same --device and --size")


def _store_with_two_rows(path) -> None:
    path.write_text('{"variant": "naive", "status": "ok"}\n{"variant": "naive", "status": "ok"}\n')


@pytest.mark.parametrize("command", [["sweep", "--device", "cpu", "--variants", "naive"], ["model", "--device", "cpu"]])
def test_a_store_that_holds_rows_is_refused_by_the_one_check_naming_out_and_resume(tmp_path, capsys, command):
    """sweep and model (each had its own copy, worded differently) refuse a store with rows, before any work,
    in the one check's words said as flags."""
    out = tmp_path / "s.jsonl"
    _store_with_two_rows(out)
    assert main([*command, "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"attnscope: error: --out {out} already holds 2 row(s)")
    assert "pass --resume to measure only what is missing, or choose another file" in err and err.count("\n") == 1


def test_api_sweep_refuses_a_store_that_holds_rows_in_the_library_s_words(tmp_path) -> None:
    from attnscope.api import sweep

    out = tmp_path / "s.jsonl"
    _store_with_two_rows(out)
    with pytest.raises(ValueError) as e:  # attnscope.api.campaign.StoreHoldsRows
        sweep([make_case("cpu", seq_q=16, heads=1, head_dim=8)], ["naive"], out=out)
    assert str(e.value).startswith(f"{out} already holds 2 row(s)")
    assert "pass resume=True to measure only what is missing" in str(e.value) and "--" not in str(e.value)
