"""Every number checked as a number: NaN, the infinities, and values past what a tensor or a timer can hold are
refused in one line, exit 2, before any work, for every flag of every command that takes a number.

The flags are read from the parsers themselves: a flag that takes a value and has no row in :data:`TABLE`
fails :func:`test_every_flag_that_takes_a_value_has_a_row`, so a new numeric flag cannot arrive unchecked.
Rows are either a list of bad values or :data:`TEXT` (the flag takes a name or a path, no number).
"""

from __future__ import annotations

import argparse
import time

import pytest

from attnscope.cli.main import LAZY_COMMANDS, build_parser, main
from attnscope.core.arguments import UsageError, check_seconds
from attnscope.core.types import Case

TEXT: tuple[str, ...] = ()  # a flag of names or paths: no number to check
HUGE = "99999999999999999999"  # past an int64
FLOATS = ["nan", "NaN", "inf", "-inf", "1e308", "-1"]  # 1e308 is past a week of seconds, past every dtype
INTS = ["nan", "inf", "1e308", HUGE, "-1", "0"]
AXES = [*INTS, f"1,{HUGE}", f"1..{HUGE}x2"]
SECONDS = [*FLOATS, "0", "604801"]  # a week (604,800 s) is the most any budget, timeout or limit may be
MASKS = ["sliding:nan", "sliding:inf", "sliding:-1", "sliding:1e308", "prefix:nan", "document:1e308", "padding:inf"]
DEVICES = [f"cuda:{HUGE}", "cuda:nan", "cuda:-1", "cuda:inf"]

# The case's flags come from the table of its fields (core/case.py): a numeric field gets the number rows (a whole
# number or, in a sweep, an axis of them), so a field added to the table is checked here without a new row.
SPECIAL = {"--device": DEVICES, "--mask": MASKS, "--softcap": FLOATS}


def _case_rows(command: str) -> dict[str, list[str] | tuple[str, ...]]:
    from attnscope.core.case import FIELDS

    rows: dict[str, list[str] | tuple[str, ...]] = {}
    for f in FIELDS:
        for flag in f.flags(command):
            if flag.name in SPECIAL:
                rows[flag.name] = SPECIAL[flag.name]
            elif flag.options.get("action") in ("store_true", "store_false"):
                continue  # takes no value
            elif f.numeric or flag.read is not None:
                rows[flag.name] = INTS if command == "run" or flag.name == "--budget-tokens" else AXES
            else:
                rows[flag.name] = TEXT
    if command == "sweep" and "--page-size" in rows:  # a page size of 0 is an axis value: the contiguous cache
        rows["--page-size"] = [v for v in rows["--page-size"] if v != "0"]
    return rows


CASE_FLAGS = _case_rows("run")
SWEEP_CASE_FLAGS = _case_rows("sweep")
RUN_FLAGS = {
    **CASE_FLAGS,
    "--variants": TEXT,
    "--json": TEXT,
    "--html": TEXT,
    "--assets": TEXT,
    "--trace-dir": TEXT,
    "--budget": SECONDS,
    "--executor": TEXT,
    "--timeout": SECONDS,
}
TABLE: dict[str, dict[str, list[str] | tuple[str, ...]]] = {
    "run": {**RUN_FLAGS, "--guess": TEXT, "--steps": INTS, "--bucket": INTS},
    "guess": {**RUN_FLAGS, "--save": TEXT},
    "variants": dict(CASE_FLAGS),
    "analyze": {"--json": TEXT, "--html": TEXT, "--assets": TEXT, "--jobs": INTS, "--top": INTS, "--capture": TEXT},
    "report": {"-o": TEXT, "--assets": TEXT},
    "recommend": {"--json": TEXT},
    "diff": {"--threshold": ["nan", "inf", "-inf", "-1"], "--metrics": TEXT, "--json": TEXT},
    "sweep": {
        **SWEEP_CASE_FLAGS,
        "--softcap": ["nan", "inf", "-inf", "1e308", "0,inf", "-1"],
        "--variants": TEXT,
        "--devices": [f"cuda:{HUGE}", "cuda:nan", "cuda:-1"],
        "--executor": TEXT,
        "--ray-address": TEXT,
        "--workers": INTS,
        "--timeout": SECONDS,
        "--out": TEXT,
        "--json": TEXT,
        "--html": TEXT,
        "--assets": TEXT,
        "--trace-dir": TEXT,
        "--budget": SECONDS,
    },
    "model": {
        "--config": TEXT,
        "--impl": TEXT,
        "--mode": TEXT,
        "--device": DEVICES,
        "--batch": AXES,
        "--seq": AXES,
        "--layers": INTS,
        "--steps": INTS,
        "--replay": TEXT,
        "--dtype": TEXT,
        "--budget": SECONDS,
        "--time-limit": SECONDS,
        "--json": TEXT,
        "--out": TEXT,
        "--executor": TEXT,
        "--devices": [f"cuda:{HUGE}", "cuda:nan", "cuda:-1"],
        "--timeout": SECONDS,
        "--html": TEXT,
        "--assets": TEXT,
        "--trace-dir": TEXT,
    },
    "tour": {"--device": DEVICES, "--answers": TEXT, "--out": TEXT, "--html": TEXT, "--size": TEXT, "--model": TEXT},
}
# what a command needs besides the flag so that nothing else is missing (its positionals, a CPU)
BASE = {"analyze": ["x.json"], "diff": ["a.json", "b.json"], "run": ["--device", "cpu"], "guess": ["--device", "cpu"]}
BASE |= {"sweep": ["--device", "cpu"], "variants": ["--device", "cpu"], "model": ["--device", "cpu"]}


def _value_flags(command: str) -> set[str]:
    """The options of ``command`` that take a value, read from its parser (each by its first spelling)."""
    p = build_parser([command])
    sub = next(a for a in p._actions if isinstance(a, argparse._SubParsersAction))
    return {a.option_strings[0] for a in sub.choices[command]._actions if a.option_strings and a.nargs != 0}


@pytest.mark.parametrize("command", ["run", "guess", *LAZY_COMMANDS])
def test_every_flag_that_takes_a_value_has_a_row(command):
    assert _value_flags(command) == set(TABLE[command]), "a flag without a row here, or a row for a flag now gone"


ROWS = [
    (command, flag, value)
    for command, flags in TABLE.items()
    for flag, values in flags.items()
    if values is not TEXT
    for value in values
]


@pytest.mark.parametrize(("command", "flag", "value"), ROWS, ids=[" ".join(r) for r in ROWS])
def test_a_number_that_is_no_usable_number_is_refused_in_one_line(command, flag, value, capsys):
    argv = [command, *BASE.get(command, []), f"{flag}={value}"]
    if flag == "--device":  # the base's --device cpu would be given twice
        argv = [command, *[a for a in BASE.get(command, []) if a not in ("--device", "cpu")], f"{flag}={value}"]
    if command == "sweep" and flag == "--devices":
        argv = [command, f"{flag}={value}"]
    t0 = time.monotonic()
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err, err
    word = flag.lstrip("-").split("-")[-1] if flag != "--kv-heads" else "kv"
    assert word in err.lower(), err  # it names what was wrong: the flag (or the case field) it came from
    assert time.monotonic() - t0 < 30  # refused before any work (no model built, nothing measured)


# The library's own checks: the same refusals, in the library's words (the parameter, never a --flag).
@pytest.mark.parametrize("v", [float("nan"), float("inf"), -1.0, 0.0, 1e308, "1", True, None])
def test_the_library_refuses_seconds_that_are_no_usable_number(v):
    with pytest.raises(UsageError) as e:
        check_seconds("timing_budget_s", v)
    assert str(e.value).startswith("timing_budget_s: ") and "--" not in str(e.value)


def test_the_library_refuses_a_bad_budget_before_any_job():
    from attnscope.execute.job import Options

    for v in (float("nan"), float("inf"), 1e308):
        with pytest.raises(ValueError, match="timing_budget_s"):
            Options(timing_budget_s=v)
    assert Options(timing_budget_s=0.5).timing_budget_s == 0.5


def test_the_library_refuses_a_bad_timeout_and_budget_in_run_and_sweep(tmp_path):
    from attnscope.api import run, sweep

    case = Case(1, 1, 8, 8, "fp32")
    for kw in ({"timeout_s": float("nan")}, {"timeout_s": float("inf")}, {"timing_budget_s": float("nan")}):
        with pytest.raises(ValueError, match=r"timeout_s|timing_budget_s"):
            run(case, "naive", executor="process", **kw)
        with pytest.raises(ValueError, match=r"timeout_s|timing_budget_s"):
            sweep([case], "naive", out=tmp_path / "s.jsonl", **kw)
        assert not (tmp_path / "s.jsonl").exists()  # nothing started, nothing written


@pytest.mark.parametrize(
    ("dtype", "cap", "ok"),
    [("fp16", 65504.0, True), ("fp16", 65505.0, False), ("bf16", 1e38, True), ("bf16", 3.4e38, False)],
)
def test_a_softcap_past_the_dtype_is_refused(dtype, cap, ok):
    """fp16's largest finite value is 65504 = (2 − 2⁻¹⁰)·2¹⁵; bf16's (2 − 2⁻⁷)·2¹²⁷ ≈ 3.3895e38."""
    assert (2 - 2**-10) * 2**15 == 65504.0 and abs((2 - 2**-7) * 2**127 - 3.3895e38) < 1e34
    if ok:
        assert Case(1, 1, 8, 8, dtype, softcap=cap).softcap == cap
    else:
        with pytest.raises(ValueError, match="softcap must be at most"):
            Case(1, 1, 8, 8, dtype, softcap=cap)
