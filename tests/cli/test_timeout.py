"""`--timeout` means one thing in every command: a finite number of seconds > 0, enforced by a worker that can
be stopped, and refused (not ignored) by the inline executor, which runs the job in this process."""

from __future__ import annotations

import pytest

from attnscope.cli.main import main

COMMANDS = [["run", "--seq", "16"], ["guess", "--seq", "16"], ["sweep", "--seq", "16"]]


def _refused(capsys: pytest.CaptureFixture[str], argv: list[str]) -> str:
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and "error" in err, err
    return err


@pytest.mark.parametrize("cmd", COMMANDS, ids=lambda c: c[0])
@pytest.mark.parametrize(
    ("value", "said"), [("0", "> 0"), ("-5", "> 0"), ("nan", "finite"), ("inf", "finite"), ("x", "number")]
)
def test_timeout_must_be_a_finite_positive_number(tmp_path, capsys, cmd, value, said):
    err = _refused(capsys, [*cmd, "--executor", "process", "--timeout", value, "--json", str(tmp_path / "o.json")])
    assert "--timeout" in err and said in err
    assert not (tmp_path / "o.json").exists()


@pytest.mark.parametrize("cmd", COMMANDS, ids=lambda c: c[0])
def test_the_inline_executor_refuses_a_timeout_it_cannot_enforce(tmp_path, capsys, cmd):
    err = _refused(capsys, [*cmd, "--executor", "inline", "--timeout", "5", "--json", str(tmp_path / "o.json")])
    assert "--timeout needs a worker it can stop" in err and "inline" in err and "--executor process" in err


def test_run_without_executor_says_inline_is_its_default(capsys):
    """run's executor is inline unless --executor says otherwise: the line must not read as if the user had passed
    --executor inline."""
    err = _refused(capsys, ["run", "--device", "cpu", "--seq", "16", "--timeout", "5"])
    assert "--executor inline (given, or the default) runs the jobs in this process" in err


def test_the_same_line_in_run_sweep_and_model(capsys):
    """One check, one message: run, sweep and model say the same words for the same mistake."""
    lines = [_refused(capsys, [c, "--seq", "16", "--executor", "inline", "--timeout", "1"]) for c in ("run", "sweep")]
    lines.append(_refused(capsys, ["model", "--device", "cpu", "--executor", "inline", "--timeout", "1"]))
    assert lines[0] == lines[1] == lines[2]
