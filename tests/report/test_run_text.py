"""A run document on the terminal beyond its table (attnscope.report.text.run): the title, the error check's line,
a loaded host; from documents built here, never from a measurement."""

from __future__ import annotations

import io
import json
from pathlib import Path

from rich.console import Console

from attnscope.report.text.run import modifier_line, print_run, run_title

ROOT = Path(__file__).parents[2]
DATA = ROOT / "tests" / "data"
CASE = {"batch": 1, "heads": 2, "seq_q": 64, "head_dim": 16, "dtype": "fp32", "device": "cpu", "mode": "fwd"}


def test_the_title_names_the_case_the_device_and_cudas_versions_only_on_a_gpu():
    env = {"device_name": "x86_64 (2 cores)", "torch": "2.13.0", "cuda": "13.0", "cudnn": "91900"}
    cpu = run_title({"case": CASE, "env": env})
    assert cpu.startswith("attnscope run — B=1 H=2 S=64 D=16 fp32") and cpu.endswith(" — torch 2.13.0")
    assert "CUDA" not in cpu and " — x86_64 (2 cores) — " in cpu
    gpu = run_title({"case": {**CASE, "device": "cuda"}, "env": {**env, "device_name": "NVIDIA H100"}})
    assert gpu.endswith(" — NVIDIA H100 — torch 2.13.0, CUDA 13.0, cuDNN 91900")


def test_the_error_checks_line_from_the_first_row_that_checked():
    # tolerance 0.02, margin 4: 'needed' 0.08 (the check's own record); a probe for the cap; the mask unseen
    checks = [
        {"modifier": "scale", "difference": 0.5, "tolerance": 0.02, "needed": 0.08, "visible": True},
        {"modifier": "mask", "difference": 0.0123, "tolerance": 0.02, "needed": 0.08, "visible": False},
        {"modifier": "softcap", "difference": 1e-5, "tolerance": 0.02, "needed": 0.08, "visible": False,
         "q_scale": 8.0, "probe_difference": 0.25},
    ]  # fmt: skip
    line = modifier_line([{"variant": "a"}, {"variant": "b", "modifier_checks": checks}, {"modifier_checks": []}])
    assert line == (
        "error check (reference without each modifier against with it, 4× the tolerance needed): "
        "sees scale (5.0e-01), softcap (by a probe, q×8: 2.5e-01); "
        "is BLIND to mask (1.2e-02 < 8e-02): a variant ignoring it would pass"
    )
    # a margin of 2.5 reads 2.5 (from needed / tolerance: 0.025 / 0.01), every modifier seen: no BLIND part
    seen = [{"modifier": "scale", "difference": 0.5, "tolerance": 0.01, "needed": 0.025, "visible": True}]
    assert modifier_line([{"modifier_checks": seen}]) == (
        "error check (reference without each modifier against with it, 2.5× the tolerance needed): sees scale (5.0e-01)"
    )
    two = [{**checks[1], "modifier": m} for m in ("mask", "alibi")]  # two unseen: both named, comma-separated
    assert str(modifier_line([{"modifier_checks": two}])).endswith(
        "is BLIND to mask (1.2e-02 < 8e-02), alibi (1.2e-02 < 8e-02): a variant ignoring it would pass"
    )
    assert modifier_line([{"variant": "a"}]) is None and modifier_line([]) is None


def test_print_run_puts_the_checks_line_and_a_loaded_host_under_the_table():
    """A real run document (an H100's paged decode run) with a check and a loaded host set by hand."""
    doc = json.loads((DATA / "h100" / "paged_decode_run.json").read_text())
    checks = [{"modifier": "mask", "difference": 0.01, "tolerance": 0.02, "needed": 0.08, "visible": False}]
    doc["results"][1]["modifier_checks"] = checks
    doc["host"] = {"loaded": True, "why": "load average 3.1 on 2 cores"}
    buf = io.StringIO()
    print_run(doc, Console(file=buf, width=200, color_system=None))
    lines = buf.getvalue().splitlines()
    assert lines[0].strip().startswith("attnscope run — B=8 H=32 KV=8") and "NVIDIA H100 80GB HBM3" in lines[0]
    check = next(i for i, s in enumerate(lines) if s.startswith("  error check"))
    host = next(i for i, s in enumerate(lines) if s.startswith("  host loaded: load average 3.1 on 2 cores."))
    assert lines[check].endswith("is BLIND to mask (1.0e-02 < 8e-02): a variant ignoring it would pass")
    assert check < host == len(lines) - 1
    del doc["results"][1]["modifier_checks"]
    quiet = io.StringIO()
    print_run({**doc, "host": {"loaded": False}}, Console(file=quiet, width=200, color_system=None))
    assert "error check" not in quiet.getvalue() and "host loaded" not in quiet.getvalue()


def test_print_run_styles_its_lines_and_prints_names_as_they_are():
    """The BLIND line and a loaded host in yellow; every line without rich's markup or highlighting (a variant's or
    a modifier's name is printed as written, numbers uncoloured); --kernels and --verbose reach the table."""
    doc = json.loads((DATA / "h100" / "paged_decode_run.json").read_text())
    doc["results"][1]["modifier_checks"] = [
        {"modifier": "[bold]m[/bold]", "difference": 0.01, "tolerance": 0.02, "needed": 0.08, "visible": False}
    ]
    doc["results"][1]["variant"] = "[red]mine[/red]"
    doc["results"][1].setdefault("extra", {})["decode_loop"] = None  # no loop: its lines come from the other rows
    doc["host"] = {"loaded": True, "why": "load 3.1"}

    def printed(**kw):
        buf = io.StringIO()
        print_run(doc, Console(file=buf, width=200, color_system="standard", force_terminal=True), **kw)
        return buf.getvalue()

    lines = printed().splitlines()
    yellow = "\x1b[33m"
    check = next(s for s in lines if "error check" in s)
    assert check.startswith(f"{yellow}  \x1b[0m{yellow}error check (") and "[bold]m[/bold] (1.0e-02 < 8e-02)" in check
    assert "\x1b[1m" not in check and check.count("\x1b[") == 4  # the indent's colour and the text's: no highlights
    host = next(s for s in lines if "host loaded" in s)
    assert host.startswith(f"{yellow}  \x1b[0m{yellow}host loaded: load 3.1.")
    assert "[red]mine[/red]" in printed()  # the variant's name in the table as written, not as markup
    plain, kernels, verbose = printed(), printed(kernels=True), printed(verbose=True)
    assert "paged_gather_sdpa: kernels" in kernels and "paged_gather_sdpa: kernels" not in plain
    # the context manager's cost, a note of --verbose only (the document holds it for two rows)
    assert verbose.count("context manager costs") == 2 and "context manager" not in plain


def test_print_run_leaves_a_seen_modifier_unstyled_and_prints_decode_loops_as_written():
    """A check that sees every modifier is not a warning; a decode loop's lines (a real H100 loop's document) and a
    host's reason are printed as written: no markup read in them, no highlighted numbers."""
    doc = json.loads((ROOT / "docs" / "results" / "raw" / "serving" / "decode_loop.json").read_text())
    loops = [r for r in doc["results"] if (r.get("extra") or {}).get("decode_loop")]
    loops[0]["variant"] = "[b]mine[/b]"
    doc["results"][0]["modifier_checks"] = [
        {"modifier": "scale", "difference": 0.5, "tolerance": 0.02, "needed": 0.08, "visible": True}
    ]
    doc["host"] = {"loaded": True, "why": "[b]3[/b] tasks"}
    buf = io.StringIO()
    print_run(doc, Console(file=buf, width=300, color_system="standard", force_terminal=True))
    lines = buf.getvalue().splitlines()
    check = next(s for s in lines if "error check" in s)
    assert check.startswith("  error check (") and "\x1b[" not in check  # no colour at all
    loop = next(s for s in lines if "decode loop of" in s)
    assert loop.startswith("  [b]mine[/b]: decode loop of ") and "\x1b[" not in loop
    assert sum("decode loop of" in s for s in lines) == len(loops) >= 1
    host = next(s for s in lines if "host loaded" in s)
    assert "host loaded: [b]3[/b] tasks." in host and host.count("\x1b[") == 4


def test_the_lines_under_the_table_wrap_under_their_own_text():
    """At 60 columns the error check's line goes on under its own first column, not back at column 0."""
    checks = [{"modifier": m, "difference": 0.5, "tolerance": 0.02, "needed": 0.08, "visible": True}
              for m in ("scale", "mask", "softcap", "alibi")]  # fmt: skip
    doc = json.loads((DATA / "h100" / "paged_decode_run.json").read_text())
    doc["results"][0]["modifier_checks"] = checks
    buf = io.StringIO()
    print_run(doc, Console(file=buf, width=60, color_system=None))
    lines = buf.getvalue().splitlines()
    first = next(i for i, s in enumerate(lines) if s.startswith("  error check ("))
    rest = lines[first + 1 : first + 4]
    assert all(s.startswith("  ") and not s.startswith("   ") for s in rest), rest
    assert all(len(s.rstrip()) <= 60 for s in lines[first : first + 4])
    words = " ".join(s.strip() for s in lines[first:]).split(" alibi (5.0e-01)")[0]
    assert words.endswith("softcap (5.0e-01),") and "sees scale (5.0e-01), mask (5.0e-01)," in words
