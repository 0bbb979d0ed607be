"""A flag the command does not know is refused in one line by that command: the line names the command and points
to its own --help (it named `attnscope` and `attnscope --help`, whose page lists only the commands)."""

from __future__ import annotations

import pytest

from attnscope.cli.main import main


@pytest.mark.parametrize(
    ("argv", "line"),
    [
        (
            ["model", "--config", "tiny", "--modes", "prefill"],
            "attnscope model: error: unrecognized arguments: --modes prefill (see attnscope model --help)",
        ),
        (["run", "--foo"], "attnscope run: error: unrecognized arguments: --foo (see attnscope run --help)"),
        (
            ["analyze", "x.json", "--bar", "1"],
            "attnscope analyze: error: unrecognized arguments: --bar 1 (see attnscope analyze --help)",
        ),
    ],
)
def test_an_unknown_flag_is_refused_by_its_command(argv: list[str], line: str, capsys: pytest.CaptureFixture) -> None:
    assert main(argv) == 2
    out = capsys.readouterr()
    assert out.err == line + "\n" and out.out == ""


def test_no_command_is_still_the_top_levels() -> None:
    assert main(["--nope"]) == 2
