"""The interactive tour through a pseudo-terminal: scripted answers typed at the prompts, a bad answer
asked again, Ctrl-C saving the transcript and --resume finishing it."""

from __future__ import annotations

import json
import signal
import sys
from pathlib import Path

import pexpect
import pytest

from tests.tour.conftest import run_tour, tour_env
from tests.tour.recompute import expected_outcome

# (prompt fragment, typed answer) in the order the CPU tour asks them
SCRIPT = [
    ("will naive launch", "6"),
    ("did not ask for", "y"),
    ("faster than naive", "1.1"),
    ("sdpa_math time", "2-4"),
    ("sdpa_math launch", "lots"),  # not a number: asked again
    ("sdpa_math launch", "17"),
    ("upcast bf16", "y"),
    ("sdpa_flash launch", "1"),
    ("Which backend", "fl"),  # a unique prefix is enough
    ("Rank them", "3,1,2"),  # numbers stand for the listed variants
    ("Who wins", "sdpa_default"),
    ("Who wins", ""),  # empty: skipped
    ("Compute-bound, memory-bound or overhead-bound", "memory"),
    ("copy bandwidth", "1-50"),
]


def _spawn(tmp_path: Path, *extra: str) -> pexpect.spawn:
    return pexpect.spawn(
        sys.executable,
        ["-m", "attnscope.cli.main", "tour", "--device", "cpu", "--out", "t.json", *extra],
        cwd=str(tmp_path),
        env=tour_env(),
        encoding="utf-8",
        timeout=120,
        dimensions=(50, 200),
        # Ctrl-C at its default, whatever this test run inherited (a background job ignores SIGINT, and an ignored
        # signal stays ignored across exec)
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )


def test_scripted_answers_through_a_pty(tmp_path: Path) -> None:
    child = _spawn(tmp_path)
    for fragment, answer in SCRIPT:
        child.expect_exact(fragment)
        child.sendline(answer)
        if answer == "lots":
            child.expect_exact("a whole number, or lo-hi")
    child.expect_exact("Score:")
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 0
    t = json.loads((tmp_path / "t.json").read_text())
    q = {q["id"]: q for s in t["steps"] for q in s["questions"]}
    assert q["naive_kernels"]["answer"] == "6" and q["naive_kernels"]["answer_source"] == "typed"
    assert q["math_kernels"]["answer"] == "17"
    assert q["default_backend"]["expected"] == "flash"
    assert q["bwd_ranking"]["expected"] == ["sdpa_flash", "naive_inplace", "sdpa_math"]
    assert q["document_winner"]["outcome"] == "skipped"
    assert q["inplace_speedup"]["expected"] == [0.88, 1.375]  # 1.1 stands for [1.1/1.25, 1.1·1.25]
    for s in t["steps"]:
        for qq in s["questions"]:
            want = expected_outcome(s, qq)
            if want is not None:
                assert qq["outcome"] == want, qq


def test_each_step_says_its_time_before_it_runs(tmp_path: Path) -> None:
    child = _spawn(tmp_path, "--auto")
    out = child.read()
    child.close()
    assert out.count("measuring takes about") == 9
    assert out.index("measuring takes about") < out.index("Evidence")


@pytest.mark.parametrize("stop_after", ["math backend"])
def test_ctrl_c_saves_and_resume_finishes(tmp_path: Path, stop_after: str) -> None:
    child = _spawn(tmp_path, "--auto")
    child.expect_exact(stop_after)
    child.sendintr()
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 130 or child.signalstatus is not None
    t = json.loads((tmp_path / "t.json").read_text())
    done = [s["id"] for s in t["steps"]]
    assert done[:2] == ["naive", "inplace"] and t["complete"] is False and "interrupted" in t
    p = run_tour("--auto", "--out", "t.json", "--resume", cwd=tmp_path)
    assert p.returncode == 0, p.stderr + p.stdout
    t2 = json.loads((tmp_path / "t.json").read_text())
    assert t2["complete"] is True and len(t2["steps"]) == 9
    assert t2["steps"][0] == t["steps"][0]  # the steps done before are kept, not measured again
    assert p.stdout.count("measuring takes about") == 9 - len(done)
    again = run_tour("--auto", "--out", "t.json", cwd=tmp_path)
    assert again.returncode == 2 and "--resume" in again.stderr


def test_piped_answers_show_each_answer_after_its_prompt(tmp_path: Path) -> None:
    """Answers piped in (stdin no terminal, nothing echoes them): each question's line is its prompt then the answer
    read, one question a line, in the order asked; the empty answer leaves the prompt alone on its line."""
    import subprocess

    piped = "".join(f"{answer}\n" for _, answer in SCRIPT)
    argv = [sys.executable, "-m", "attnscope.cli.main", "tour", "--device", "cpu", "--out", "t.json"]
    p = subprocess.run(argv, cwd=tmp_path, env=tour_env(), input=piped, capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr + p.stdout
    asked = [line for line in p.stdout.splitlines() if line.startswith("  ? ")]
    assert len(asked) == len(SCRIPT)
    for line, (fragment, answer) in zip(asked, SCRIPT, strict=True):
        assert line.count("  ? ") == 1 and fragment in line, line  # one prompt a line
        # the empty answer leaves the prompt alone, its hint of the variants last (printed as written, not a tag)
        assert (
            line.rstrip().endswith(f" {answer}")
            if answer
            else line.rstrip().endswith("? [naive_inplace, sdpa_default, flex]")
        ), line
