"""Torch on CPU, kept small: sdpa_why in torch's words, `run --guess --strict`, and `attnscope guess`
driven through a pseudo-terminal the way a person types."""

from __future__ import annotations

import json
import os
import pty
import select
import sys
import time

import pytest

from attnscope.cli.main import main

pytestmark = pytest.mark.slow
SMALL = ["--device", "cpu", "--batch", "1", "--heads", "2", "--seq", "128", "--budget", "0.02", "--no-peak"]


def test_sdpa_why_on_cpu_uses_torchs_own_check():
    import torch

    from attnscope.variants.sdpa_why import explain

    q = k = torch.randn(1, 2, 16, 64, dtype=torch.bfloat16)
    v = torch.randn(1, 2, 16, 32, dtype=torch.bfloat16)
    why = explain(q, k, v, is_causal=True)
    assert why["chosen"] == "math" and why["order"] == ["flash", "math"]
    flash = why["checks"][0]
    assert flash["backend"] == "flash" and not flash["usable"]
    assert flash["reasons"] == ["head dims differ (q 64, k 64, v 32)"]
    assert "Value.size(-1): 32" in flash["torch_messages"][0]
    ok = explain(q, k, k, is_causal=True)
    assert ok["chosen"] == "flash" and ok["checks"][0]["usable"]


def test_forced_backend_skip_row_carries_the_reason():
    from attnscope.core.cases import make_case
    from attnscope.variants import REGISTRY, Unsupported
    from attnscope.workloads.attention import make_inputs

    case = make_case("cpu", batch=1, heads=2, seq_q=16)
    x = make_inputs(case, 0)
    x.v = x.v[..., :32].contiguous()
    with pytest.raises(Unsupported, match=r"FLASH_ATTENTION refused: flash: head dims differ \(q 64, k 64, v 32\)"):
        REGISTRY["sdpa_flash"].prepare(case, x)


def test_run_guess_strict_exits_1_on_a_miss_and_saves_verdicts(tmp_path):
    guess = tmp_path / "guess.toml"
    guess.write_text(
        '[[predict]]\nvariant = "naive"\nhidden_copy = true\n\n'
        '[[predict]]\nvariant = "naive_inplace"\nhidden_copy = true\n\n'
        '[[predict]]\nvariant = "sdpa_default"\nbackend = "flash"\n'
    )
    out = tmp_path / "r.json"
    rc = main(
        [
            "run",
            *SMALL,
            "--variants",
            "naive,naive_inplace,sdpa_default",
            "--guess",
            str(guess),
            "--strict",
            "--json",
            str(out),
        ]
    )
    assert rc == 1
    doc = json.loads(out.read_text())
    assert [v["outcome"] for v in doc["verdicts"]] == ["hit", "miss", "hit"]
    assert len(doc["predictions"]) == 3
    by = {r["variant"]: r for r in doc["results"]}
    assert "hidden_copy" in {i["id"] for i in by["naive"]["insights"]}
    assert by["sdpa_default"]["sdpa_why"]["chosen"] == "flash"
    assert doc["recommendation"]["best"] in by


def test_run_guess_rejects_bad_file_before_running(tmp_path, capsys):
    guess = tmp_path / "guess.toml"
    guess.write_text('[[predict]]\nvariant = "sdpa_math"\nkernels = 5\n')
    rc = main(["run", *SMALL, "--variants", "naive", "--guess", str(guess)])
    assert rc == 2
    assert "sdpa_math, which this run does not include" in capsys.readouterr().err


def _read_until(fd: int, needle: bytes, buf: bytearray, timeout: float = 60.0) -> None:
    end = time.monotonic() + timeout
    while needle not in buf:
        left = end - time.monotonic()
        assert left > 0, f"timed out waiting for {needle!r}; got:\n{buf.decode(errors='replace')}"
        ready, _, _ = select.select([fd], [], [], left)
        if ready:
            try:
                chunk = os.read(fd, 65536)
            except OSError:
                chunk = b""
            assert chunk, f"process ended before {needle!r}; got:\n{buf.decode(errors='replace')}"
            buf += chunk


def test_guess_interactive_through_a_pty(tmp_path):
    saved = tmp_path / "answers.toml"
    # the CLI as installed or not (the GPU image runs it from a checkout): the same entry point
    argv = [
        sys.executable,
        "-m",
        "attnscope.cli.main",
        "guess",
        *SMALL,
        "--variants",
        "naive,sdpa_math,sdpa_default",
        "--save",
        str(saved),
    ]
    pid, fd = pty.fork()
    if pid == 0:  # child: the CLI, as a person would start it
        os.environ.update(KINETO_LOG_LEVEL="6", COLUMNS="200")
        os.execv(argv[0], argv)
    buf = bytearray()
    # naive kernels, naive hidden copy, math kernels, math slower-than-naive, math upcast, default backend
    for prompt, answer in [
        (b"naive launch", b"5"),
        (b"behind your back", b"no"),
        (b"sdpa_math launch", b"lots"),
        (b"could not read", b"5"),
        (b"slower than naive", b""),
        (b"upcast", b"y"),
        (b"default SDPA pick", b"math"),
    ]:
        _read_until(fd, prompt, buf)
        os.write(fd, answer + b"\r")
    _read_until(fd, b"every miss is an insight", buf, timeout=120)
    _, status = os.waitpid(pid, 0)
    out = buf.decode(errors="replace")
    assert os.waitstatus_to_exitcode(status) == 0
    assert "MISS" in out and "hit" in out
    assert "naive hidden_copy: predicted no, measured yes" in out
    assert "sdpa_default backend: predicted math, measured flash" in out
    assert 'backend = "math"' in saved.read_text()


def test_guess_with_piped_answers_shows_each_answer_after_its_prompt(tmp_path):
    """Answers piped in (stdin no terminal): nothing echoes them, so the command prints each answer and its newline
    after the prompt; read line by line, the transcript is one prompt and its answer per line, as typed in a terminal.
    fp32 on a CPU with naive and sdpa_math: four questions (no upcast question for fp32, no backend question without
    sdpa_default).  'lots' is no count: asked again; at the fourth prompt the input ends (no answer, a newline)."""
    import subprocess

    argv = [sys.executable, "-m", "attnscope.cli.main", "guess", *SMALL, "--dtype", "fp32"]
    env = {**os.environ, "KINETO_LOG_LEVEL": "6", "COLUMNS": "200"}
    p = subprocess.run(
        [*argv, "--variants", "naive,sdpa_math"], input="5\nno\nlots\n5\n", capture_output=True, text=True,
        env=env, timeout=180, check=False,
    )  # fmt: skip
    assert p.returncode == 0, p.stderr
    lines = p.stdout.splitlines()
    naive_ops = "  How many leaf compute ops will naive launch per call? (n or lo-hi) "
    math_ops = "  How many leaf compute ops will sdpa_math launch per call? (n or lo-hi) "
    assert lines[1].startswith("Guess first:")
    assert lines[2] == naive_ops + "5"
    assert lines[3] == "  Will naive copy a full tensor behind your back? (y/n) no"
    assert lines[4] == math_ops + "lots"
    assert lines[5].startswith("    could not read 'lots': ")
    assert lines[6] == math_ops + "5"
    assert lines[7] == "  sdpa_math is slower than naive by at least what ratio? (e.g. 1.5) "  # the input ended here
    assert lines[8] == "Now measuring…"


def test_answers_typed_at_a_terminal_are_not_echoed_twice():
    from attnscope.cli.common import answer_reader

    said: list[str] = []
    assert answer_reader(input, said.append, echo=False) is input  # the terminal echoes what is typed
    reader = answer_reader(lambda prompt: "3\x1b[31m", said.append, echo=True)
    assert reader("? ") == "3\x1b[31m" and said == ["3[31m"]  # the answer kept as read, shown as data
