"""The progress bar of model and sweep (and run's spinner) within the terminal's width, no word or number cut: at
60, 80 and 100 columns every line fits and holds the same words as the line drawn at 1000 columns (where rich
alone shrank every column of a line too wide: ``8…``, ``0:…``, a job's name cut)."""

from __future__ import annotations

import io
import re

import pytest

from attnscope.api.campaign import Finished, Planned, Started

LABEL = "flash_attention_2 prefill llama-3-8b B=2 S=2048 bf16"  # a model job's label, as model_job.py names it
GLYPHS = re.compile(r"[━╸╺╾╼⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏]")  # the bar's cells and the spinner's frames: no words


def _drawn(monkeypatch: pytest.MonkeyPatch, width: int, *, bar: bool = True) -> str:
    """The bar after 6 of 128 jobs finished, one of each status and a second ok, drawn at ``width`` columns."""
    from rich.console import Console

    import attnscope.report.text.terminal as terminal
    from attnscope.cli.common import Progress

    c = Console(file=io.StringIO(), width=width, record=True, color_system=None, force_terminal=True)
    monkeypatch.setattr(terminal, "console", lambda **_: c)
    p = Progress(bar=bar)
    p(Planned(total=128, done_before=0, title="B=1 H=8 S=512 D=64 bf16 causal on cpu"))
    p(Started(label=LABEL, variant="flash_attention_2"))
    for i, status in enumerate(["ok", "ok", "skipped", "error", "timeout", "oom"]):
        p(Finished(row={}, status=status, label=LABEL, done=i + 1, total=128))
    c.print(p.progress.get_renderable())
    return str(c.export_text())


def _words(text: str) -> list[str]:
    return GLYPHS.sub(" ", text).split()


@pytest.mark.parametrize("bar", [True, False])
@pytest.mark.parametrize("width", [60, 80, 100])
def test_the_progress_line_fits_without_cutting_a_word(monkeypatch, width, bar):
    wide = _drawn(monkeypatch, 1000, bar=bar)
    assert len(wide.strip().splitlines()) == 1  # room enough: the one line as before
    narrow = _drawn(monkeypatch, width, bar=bar)
    assert all(len(line) <= width for line in narrow.splitlines())
    assert "…" not in narrow
    assert _words(narrow) == _words(wide)  # every word whole, in the same order
    if bar:  # the words read by hand: 6 of 128 done, the counts by status, the job
        assert "6/128" in _words(narrow) and "oom" in narrow and LABEL.split() == _words(narrow)[-len(LABEL.split()) :]
