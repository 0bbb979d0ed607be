"""The user's ``--mask-mod`` / ``--score-mod`` file is code: it is imported (run) only once every other check has
passed, so a command refused for any other reason never executes it; and --help says that the file is executed."""

from __future__ import annotations

from pathlib import Path

import pytest

from attnscope.cli.main import build_parser, main

pytest.importorskip("torch")

CASE = ["--device", "cpu", "--batch", "1", "--heads", "2", "--seq", "16", "--head-dim", "8", "--dtype", "fp32"]


def _planted(tmp_path: Path) -> tuple[Path, Path]:
    """A mask_mod file whose import writes a marker file (as any code at a module's top level could)."""
    marker = tmp_path / "marker"
    src = tmp_path / "mine.py"
    src.write_text(
        f"from pathlib import Path\nPath({str(marker)!r}).write_text('ran')\n\n"
        "def causal(b, h, q, k):\n    return q >= k\n"
    )
    return src, marker


@pytest.mark.parametrize(
    "bad",
    [
        ["--html", "/proc/x.html"],  # an output checked late
        ["--json", "/proc/x.json"],
        ["--guess", "/nonexistent/guesses.toml"],
        ["--variants", "naive,nonesuch"],
        ["--batch", "1048576", "--seq", "16777216", "--variants", "naive"],  # no memory holds it
        ["--executor", "inline", "--timeout", "5"],
        ["--budget", "nan"],
    ],
    ids=["html", "json", "guess", "variant", "size", "timeout", "budget"],
)
@pytest.mark.parametrize("flag", ["--mask-mod", "--score-mod"])
def test_user_code_does_not_run_when_another_check_refuses(tmp_path, capsys, bad, flag):
    src, marker = _planted(tmp_path)
    fn = "causal" if flag == "--mask-mod" else "plain"
    assert main(["run", *CASE, flag, f"{src}:{fn}", *bad]) == 2
    assert capsys.readouterr().err.count("\n") == 1
    assert not marker.exists(), "the user's file was executed before the command was refused"


def test_a_bad_guess_file_is_refused_before_the_user_code_runs(tmp_path, capsys):
    src, marker = _planted(tmp_path)
    guess = tmp_path / "g.toml"
    guess.write_text("[[predict]]\nthis is not toml = = =\n")
    assert main(["run", *CASE, "--mask-mod", f"{src}:causal", "--guess", str(guess)]) == 2
    assert not marker.exists()


def test_with_every_check_passed_the_file_is_run(tmp_path, capsys):
    """The control: the marker does appear once nothing else is wrong (the test above can fail)."""
    from attnscope.api.running import check_run
    from attnscope.cli.run import request_of

    src, marker = _planted(tmp_path)
    args = build_parser(["run"]).parse_args(["run", *CASE, "--mask-mod", f"{src}:causal", "--variants", "naive"])
    checked = check_run(request_of(args))
    assert marker.read_text() == "ran" and checked.case.mask == "causal" and "flex_user" in checked.variants


@pytest.mark.parametrize("flag", ["--mask-mod", "--score-mod"])
def test_help_says_the_file_is_executed(flag):
    p = build_parser(["run"])
    sub = next(a for a in p._actions if a.dest == "command")
    helps = {a.option_strings[0]: a.help for a in sub.choices["run"]._actions if a.option_strings}
    assert "its code runs" in " ".join(helps[flag].split())
