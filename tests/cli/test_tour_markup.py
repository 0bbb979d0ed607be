"""The tour's console reads rich markup (its own text is styled); what comes from the user or lists names is
printed as written: the variants of a ranking question, a typed answer that cannot be read, the --out path."""

from __future__ import annotations

import io
from pathlib import Path

from rich.console import Console

from attnscope.cli import tour as tour_cli
from attnscope.cli.main import main
from attnscope.tour import session as tour_session
from attnscope.tour.steps import STEPS, variants_for


def _ranking():
    step = next(s for s in STEPS if s.id == "fwd_bwd")
    q = next(q for q in step.questions if q.answer == "ranking")
    return step, q


def test_a_ranking_prompt_lists_its_variants(monkeypatch):
    """'[naive_inplace, sdpa_math, sdpa_flash]' after the prompt was read as a rich tag and vanished: asked to rank
    'them' by number, the user never saw which variants (CPU order from the tour's own table)."""
    out = io.StringIO()
    console = Console(file=out, width=200, color_system=None)
    monkeypatch.setattr("builtins.input", lambda *a: "3,1,2")
    step, q = _ranking()
    items = variants_for(step, gpu=False)
    assert items == ("naive_inplace", "sdpa_math", "sdpa_flash")
    ask = tour_cli._interactive(console)
    assert ask(step, q, items) == ("3,1,2", "typed")
    assert "[naive_inplace, sdpa_math, sdpa_flash]" in out.getvalue()


def test_an_unreadable_answer_with_brackets_is_said_back_as_typed(monkeypatch):
    """A typed '[/]' (no ranking) was printed through the markup reader: a MarkupError, exit 70."""
    out = io.StringIO()
    console = Console(file=out, width=200, color_system=None)
    typed = iter(["[/]", "[bold]x", ""])
    monkeypatch.setattr("builtins.input", lambda *a: next(typed))
    step, q = _ranking()
    assert tour_cli._interactive(console)(step, q, variants_for(step, gpu=False)) == (None, "skipped")
    text = out.getvalue()
    assert "could not read '[/]'" in text and "could not read '[bold]x'" in text


def test_an_out_path_with_brackets_is_printed_as_written(tmp_path, monkeypatch, capsys):
    """--out 'x[/]y.json' (a folder named 'x[') ended in 'internal error: MarkupError', exit 70, before any step."""
    folder = tmp_path / "x["
    folder.mkdir()
    out = folder / "]y.json"
    monkeypatch.setattr(tour_session.Session, "run", lambda self: {"score": {"text": "0 of 0"}, "surprises": []})
    monkeypatch.setenv("COLUMNS", "400")
    assert main(["tour", "--auto", "--device", "cpu", "--size", "tiny", "--out", str(out)]) == 0
    text = capsys.readouterr().out
    assert f"the transcript is saved to {out} after every step" in text
    assert f"transcript written to {out}" in text
    assert Path(out).parent == folder


def test_the_tours_lines_wrap_under_their_own_text_at_80_columns():
    """At 80 columns a reveal line went on at column 0 ('you \\nsaid memory (study) → miss'): each line now wraps
    under its own first character, its markup read, no line past the width."""
    out = io.StringIO()
    say = tour_cli.hanging_say(Console(file=out, width=80, color_system=None))
    words = " ".join(f"word{i}" for i in range(40))
    say(f"  [bold]Compute-bound or overhead-bound?[/bold] you said memory (study) → {words}")
    say("\n[bold]Step 2/9: The in-place fix[/bold]  [dim](measuring takes about 2 s)[/dim]")
    lines = out.getvalue().splitlines()
    assert lines[0].startswith("  Compute-bound or overhead-bound? you said memory")  # no '[bold]' left
    first_blank = lines.index("")
    assert first_blank >= 3 and all(line.startswith("  ") and line[2] != " " for line in lines[1:first_blank])
    assert all(len(line) <= 80 for line in lines)
    assert " ".join(w for line in lines[:first_blank] for w in line.split()).endswith(words)
    assert lines[first_blank + 1] == "Step 2/9: The in-place fix  (measuring takes about 2 s)"
