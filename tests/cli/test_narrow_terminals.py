"""What matters is kept at any width (60, 80, 100, 160 columns), from real documents: no line wider than the
terminal; no word broken or cut ("…") that the same output at 1000 columns has whole; the study's lesson columns
(hidden copy, upcast, the time) left out last; advice wrapped, never cut; wide grids (model, recommend, diff,
variants, analyze --kernels) as one block per row where their words would not fit; footnotes only of columns shown,
the FLOP count said once, one unit per column."""

from __future__ import annotations

import io
import json
import re
from pathlib import Path
from typing import Any

import pytest

import attnscope.report.text.table as T
from attnscope.analysis.annotate import annotate
from attnscope.cli.main import main
from attnscope.report.text.table import DROP_ORDER, render
from attnscope.report.text.terminal import console

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "tests" / "data"
RUNS = {"h200": DATA / "h200" / "run.json", "cpu": DATA / "cpu" / "run_all.json"}
SWEEP = ROOT / "docs" / "results" / "raw" / "h200_sweep.jsonl"
MODEL = ROOT / "docs" / "results" / "raw" / "model" / "llama3_8b_h200.json"
WIDTHS = [60, 80, 100, 160]
BOX = re.compile(r"[│┃┏┓┗┛┡┩└┘├┤┬┴┼━─╇╋┳┻┯┷┠┨╰╯╭╮═║╞╡╪]")
LEFT_OUT = re.compile(
    r"\((?:kernel tables at )?\d+ columns: .*? left out(?: of [^;]*)?; a wider terminal or --json has them\)"
)


def _run_out(name: str, width: int, brief: bool | None = None) -> str:
    """The study at ``width`` columns; ``brief``: as a terminal narrower than NARROW prints it, whatever the width
    (the reference for a narrow output's words: the same text, unwrapped)."""
    doc = annotate(json.loads(RUNS[name].read_text()))
    c = console(width=width, record=True, file=io.StringIO(), color_system=None)
    narrow = T.NARROW
    if brief is not None:
        T.NARROW = 10**6 if brief else 0
    try:
        render(doc, c, title=f"attnscope run — {name}")
    finally:
        T.NARROW = narrow
    return str(c.export_text())


def _cli_out(argv: list[str], width: int, capsys: Any, monkeypatch: Any) -> str:
    monkeypatch.setenv("COLUMNS", str(width))
    rc = main(argv)
    out = capsys.readouterr()
    assert rc in (0, 1), out.err
    return str(out.out)


def _tokens(text: str) -> set[str]:
    text = LEFT_OUT.sub(" ", " ".join(BOX.sub(" ", text).split()))  # the note on what a narrow table left out
    return {t.strip(":;,·•") for t in text.split()} - {""}


def _check_width(out: str, width: int) -> None:
    wide = [line for line in out.splitlines() if len(line.rstrip()) > width]
    assert not wide, wide[:3]


def _check_words(narrow: str, wide: str, width: int) -> None:
    """Every word of the narrow output is a word of the wide one: nothing broken inside a word or cut with '…',
    but a word longer than the terminal's line (a long kernel name), folded because it cannot be whole."""
    whole = _tokens(wide)
    longer = [t for t in whole if len(t) > width - 8]
    broken = sorted(t for t in _tokens(narrow) - whole if not any(t in w for w in longer))
    assert not broken, broken[:10]


@pytest.mark.parametrize("name", sorted(RUNS))
@pytest.mark.parametrize("width", WIDTHS)
def test_the_study_keeps_its_lessons_at_any_width(name, width):
    out = _run_out(name, width)
    _check_width(out, width)
    _check_words(out, _run_out(name, 1000, brief=width < T.NARROW), width)
    head = next(line for line in out.splitlines() if line.startswith("┃"))
    time = "GPU µs" if name == "h200" else "CPU µs"
    # the study's first findings and the time stay (at 60 columns a CPU table has no room for upcast beside them)
    for col in ("variant", "hidden copy", *(("upcast",) if width >= 80 or name == "h200" else ()), time):
        assert col.split()[0] in head, (col, head)


@pytest.mark.parametrize("width", range(50, 200, 6))
def test_columns_go_in_the_order_the_study_teaches_last(width):
    """Whatever the width, a column is shown only if every column later in DROP_ORDER is shown too, and mem MiB
    never stays while hidden copy, upcast or the time is gone."""
    out = _run_out("h200", width)
    head = next(line for line in out.splitlines() if line.startswith("┃"))
    cells = {c.strip() for c in head.strip("┃").split("┃")}
    order = [c for c in DROP_ORDER if c not in ("ops",)]  # a GPU table has kernels, not ops
    shown = [c in cells for c in order]
    assert shown == sorted(shown), list(zip(order, shown, strict=True))  # False (left out) before True (kept)
    if "mem MiB" in cells:
        assert {"hidden copy", "upcast", "GPU µs"} <= cells


@pytest.mark.parametrize("width", WIDTHS)
def test_advice_wraps_instead_of_being_cut(width):
    doc = annotate(json.loads(RUNS["h200"].read_text()))
    out = _run_out("h200", width)
    flat = " ".join(out.split())
    advice = {i["advice"] for r in doc["results"] for i in r.get("insights") or [] if i.get("advice")}
    assert advice
    for a in advice:  # every advice whole, its words in order across the wrapped lines
        assert " ".join(a.split()) in flat, a
    assert not [line for line in out.splitlines() if line.rstrip().endswith("…")]  # no line cut short


@pytest.mark.parametrize("width", [60, 80])
def test_footnotes_speak_only_of_shown_columns_and_say_the_flop_count_once(width):
    out = _run_out("h200", width)
    head = next(line for line in out.splitlines() if line.startswith("┃"))
    assert "TFLOP/s" not in head and "%peak" not in head
    notes = [line for line in out.splitlines() if line.startswith("  • ")]
    assert not any(line.startswith("  • FLOPs") or "% peak" in line for line in notes), notes
    wide = _run_out("h200", 1000)
    assert sum(line.startswith("  • FLOPs") for line in wide.splitlines()) == 1


@pytest.mark.parametrize("width", WIDTHS)
def test_recommend_grid_at_any_width(width, tmp_path, capsys, monkeypatch):
    rec = tmp_path / "rec.json"
    out = _cli_out(["recommend", str(SWEEP), "--json", str(rec)], width, capsys, monkeypatch)
    wide = _cli_out(["recommend", str(SWEEP)], 1000, capsys, monkeypatch)
    _check_width(out, width)
    _check_words(out, wide, width)
    for b in json.loads(rec.read_text())["best"]:  # each point's best variant named in full (no sdpa_ prefix)
        assert b["variant"].removeprefix("sdpa_") in out


def test_recommendation_over_one_point_is_singular(tmp_path, capsys, monkeypatch):
    rows = [json.loads(line) for line in SWEEP.read_text().splitlines()]
    first = rows[0]
    one = [r for r in rows if r["case"] == first["case"] and r["mode"] == first["mode"]]
    store = tmp_path / "one.jsonl"
    store.write_text("".join(json.dumps(r) + "\n" for r in one))
    out = _cli_out(["recommend", str(store)], 160, capsys, monkeypatch)
    assert "over 1 point (" in out and "1 points" not in out


def _model_out(width: int) -> str:
    from attnscope.report.text.model import render as render_model
    from attnscope.report.text.model import render_layers

    c = console(width=width, record=True, file=io.StringIO(), color_system=None)
    doc = json.loads(MODEL.read_text())
    render_model(doc, c, title="attnscope model — llama3 8b on the H200")
    render_layers(doc, c)
    return str(c.export_text())


@pytest.mark.parametrize("width", WIDTHS)
def test_model_grid_at_any_width(width):
    out = _model_out(width)
    _check_width(out, width)
    _check_words(out, _model_out(1000), width)
    doc = json.loads(MODEL.read_text())
    for r in doc["results"]:  # every row's step time is printed whole
        if r.get("step_time"):
            assert f"{r['step_time']['median_us']:,.1f}" in out


@pytest.mark.parametrize("width", WIDTHS)
def test_variants_at_any_width(width, capsys, monkeypatch):
    argv = ["variants", "--device", "cpu"]
    out = _cli_out(argv, width, capsys, monkeypatch)
    _check_width(out, width)
    _check_words(out, _cli_out(argv, 1000, capsys, monkeypatch), width)


@pytest.mark.parametrize("width", WIDTHS)
def test_analyze_kernels_at_any_width(width, capsys, monkeypatch):
    argv = ["analyze", *map(str, sorted((DATA / "h200" / "b1h32s4096d128").glob("*.json"))), "--kernels"]
    out = _cli_out(argv, width, capsys, monkeypatch)
    _check_width(out, width)
    monkeypatch.setattr(T, "NARROW", 10**6 if width < T.NARROW else 0)  # the reference as brief as the output
    wide = _cli_out(argv, 1000, capsys, monkeypatch)
    # the kernel tables cut a long name to their name column (20 to 48 characters, marked "…"; --json has it)
    cut = re.compile(r"│ \d+ +│ ([^│]*…) │")
    _check_words(cut.sub("│", out), wide, width)


def _cpu_pair(tmp_path: Path) -> tuple[Path, Path]:
    doc = json.loads(RUNS["cpu"].read_text())
    naive = next(r for r in doc["results"] if r["variant"] == "naive")
    naive["hidden_copies"] = [
        {"op": "aten::masked_fill", "copy_op": "aten::copy_", "bytes": 512 * 1024 * 1024}
    ]  # a document's copy record holds the op that copied (the loader checks it)
    a, b = tmp_path / "a.json", tmp_path / "b.json"
    a.write_text(json.dumps(doc))
    naive["hidden_copies"] = []
    b.write_text(json.dumps(doc))
    return a, b


@pytest.mark.parametrize("width", WIDTHS)
def test_diff_on_cpu_runs_at_any_width(width, tmp_path, capsys, monkeypatch):
    a, b = _cpu_pair(tmp_path)
    out = _cli_out(["diff", str(a), str(b)], width, capsys, monkeypatch)
    _check_width(out, width)
    _check_words(out, _cli_out(["diff", str(a), str(b)], 1000, capsys, monkeypatch), width)
    assert "GPU µs" not in out  # two CPU runs: no GPU time on either side, no column for it
    assert "(1, 536870912)" not in out and "(0, 0)" not in out
    said = " ".join(BOX.sub(" ", out).split())
    if width in (60, 160):  # one block per variant at 60, one table line per variant at 160: the flags in one piece
        assert "hidden_copies: 1 (512.0 MiB) → none" in said
    assert {"hidden_copies", "(512.0", "MiB)", "none"} <= _tokens(out)


def test_a_time_column_has_one_unit():
    from attnscope.report.text.summary import _category_cells

    rows = [
        {"category": "gemm", "num_kernels": 2, "time_us": 20_000.0, "share_pct": 99.9},
        {"category": "copy", "num_kernels": 1, "time_us": 5.0, "share_pct": 0.1},
    ]
    # one unit for the whole column, µs, whatever the largest (the one µs formatter never switches to ms)
    assert [c[2] for c in _category_cells(rows)] == ["20,000.0 µs", "5.0 µs"]
    rows[0]["time_us"] = 9_000.0
    assert [c[2] for c in _category_cells(rows)] == ["9,000.0 µs", "5.0 µs"]
