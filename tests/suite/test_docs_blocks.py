"""Every `attnscope` command and Python block in README.md and docs/*.md is either run here, on the CPU, after a
declared rewrite to CPU sizes, or listed as not run with a reason from a fixed set; a page that gains a command
nobody classified fails this test.

The rewrite (``CPU_SIZES``, ``PLACEHOLDERS``, ``FAST``) is the whole difference between a page's command and the one
run here: GPU-sized shapes become CPU-sized ones, a placeholder (``A.json``, ``TRACE.json``) becomes a committed
file, and a run times each variant briefly.  Commands run in-process (``attnscope.cli.main.main``) in a scratch
folder, so torch is imported once.
"""

from __future__ import annotations

import argparse
import os
import re
import shlex
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
SHELL = ("", "bash", "sh", "text", "console")

# flag -> the CPU-sized value it takes here (a GPU-sized grid becomes one small point)
CPU_SIZES = {
    "--device": "cpu",
    "--batch": "1",
    "--heads": "2",
    "--kv-heads": "1",
    "--seq": "64",
    "--seq-kv": "128",
    "--head-dim": "16",
    "--budget-tokens": "64",
    "--mode": "fwd",
}
# a placeholder of a page -> a committed file that stands for it
PLACEHOLDERS = {
    "TRACE.json[.gz]...": "tests/data/h200/naive.json",
    "A.json": "docs/results/raw/cpu_torch213.json",
    "B.json": "docs/results/raw/cpu_torch213.json",
    "sweep.jsonl": "tests/data/cpu/tiny_sweep.jsonl",
}
# added to every run and sweep: a brief timing, no matmul peak, one quick variant unless the page names some
FAST = {"run": ["--budget", "0.02", "--no-peak"], "sweep": ["--budget", "0.02", "--executor", "inline"]}
# added to every model command: a brief timing per row, in this process (the tiny preset's rows take seconds)
MODEL_FAST = ["--budget", "0.05", "--executor", "inline"]
QUICK_VARIANTS = "naive,sdpa_flash"

# A serving case (a paged or ragged cache) keeps its query count (1 decode, 2-8 verification, more a chunk), and
# its batch where --kv-lens lists one length per sequence; its lengths and steps become CPU-sized, and its quick
# variant is one that reads the cache (the dense ones refuse it).
SERVING_VARIANT = "paged_gather_sdpa"
SERVING_SIZES = {
    "--kv-lens": lambda v: "uniform:256..512@0" if v.startswith("uniform:") else ",".join("512" for _ in v.split(",")),
    "--steps": lambda v: "4",
}


def _serving(args: list[str]) -> bool:
    return "--kv-lens" in args or "--page-size" in args


def _kept(args: list[str], flag: str) -> bool:
    """A flag whose value the page's command keeps: a serving case's --seq (what kind of serving step it is) and
    --batch where --kv-lens lists the lengths; a model's --mode (prefill, decode, train: not run's fwd)."""
    if flag == "--mode":
        return args[0] == "model"
    if flag == "--seq" and _serving(args):
        return True
    if flag == "--batch" and "--kv-lens" in args:
        return "," in args[args.index("--kv-lens") + 1]
    return False


# Why a command is not run here: each reason is one of these.
REASONS = {
    "output": "an example of output, not a command",
    "synopsis": "a synopsis of flags with placeholders; the concrete commands of the same page run",
    "long": "takes minutes on 2 cores; its test runs it at a tiny size",
    "gpu": "needs a GPU (Nsight Compute, several devices)",
    "interactive": "asks questions at a terminal",
    "extra": "needs an optional service (Ray) that CI starts in its own test",
    "yours": "a fragment of the reader's own code (their model, their training step)",
}
NOT_RUN = {
    "attnscope run — B=1 H=8 S=512 D=64 bf16 causal on cpu — x86_64 — torch 2.13.0+cpu": "output",
    "attnscope run — B=4 H=16 S=2048 D=64 bf16 causal on cuda — NVIDIA H200 — torch 2.11.0+cu130, CUDA 13.0, "
    "cuDNN 91900": "output",
    "attnscope analyze TRACE... [--capture TRACE] [--json OUT] [--top N] [--jobs N] [--kernels] [--cpu]": "synopsis",
    "attnscope diff A B [--threshold PCT] [--metrics gpu,cpu] [--json OUT]": "synopsis",
    "attnscope guess": "interactive",
    "attnscope run --mode fwd_bwd ...": "synopsis",
    "attnscope run --ncu ...": "gpu",
    "attnscope run ... --json out.json --html out.html": "synopsis",
    "attnscope sweep ... --out h200.jsonl --resume": "synopsis",
    "attnscope sweep ... --devices all": "gpu",
    "attnscope sweep ... --executor ray [--ray-address ADDR]": "extra",
    "attnscope sweep --seq 4096 --mask none,sliding:256,document:1000,1500,600,996 --softcap 0,30 "
    "--alibi no,yes": "long",
    "attnscope report *.json -o pages/run.html --assets pages/assets": "synopsis",
    "attnscope report a.json b.jsonl c.json -o all.html": "synopsis",
    "attnscope report trace.json -o trace.html": "synopsis",
    "attnscope report h200.jsonl -o h200.html": "synopsis",
    "attnscope run --seq 8192 --mask sliding:1024 --softcap 50 --variants naive,flex_compiled": "long",
    "attnscope model --config path/to/config.json": "synopsis",
    "attnscope model --config mixtral --layers 1": "long",
    "attnscope model --config llama-3-8b --layers 2 --batch 2 --seq 2048 --mode prefill,decode,train "
    "--impl eager,sdpa,flex_attention --json out.json [--html out.html] [--trace-dir traces/]": "long",
    "attnscope model --config llama-3-8b --layers 2 --batch 2 --seq 2048 --mode prefill,decode,train "
    "--impl eager,sdpa,flex_attention --json out.json": "long",
    "attnscope tour": "interactive",
    "attnscope tour --device cpu --out t.json --html t.html": "long",
    "attnscope tour --answers my_guesses.toml": "long",
    "attnscope tour --auto": "long",
    "attnscope tour --resume --out t.json": "synopsis",
    "attnscope report out.json [sweep.jsonl ...] -o report.html": "synopsis",
}
PY_REWRITE = {
    '"cuda")': '"cpu")',
    'seq=[512, 1024, 2048], head_dim=[64, 128], mode=["fwd", "fwd_bwd"], budget_tokens=8192': (
        'seq=[64], head_dim=[16], mode=["fwd"], budget_tokens=64'
    ),
    "seq_q=1024": "seq_q=64",
    '"trace.json.gz"': repr(str(ROOT / "tests" / "data" / "h200" / "naive.json")),
    "timing_budget_s=0.2": "timing_budget_s=0.02",
}

# put before a block that uses the reader's own objects: here a tiny Llama and its training step (transformers)
PY_PREPEND = {
    "python:docs/model.md:4": """
import torch
from transformers import LlamaConfig, LlamaForCausalLM

model = LlamaForCausalLM(LlamaConfig(hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                                     num_attention_heads=4, num_key_value_heads=2, vocab_size=256))
ids = torch.randint(0, 256, (1, 32))
opt = torch.optim.AdamW(model.parameters())


def train_step():
    model(ids, labels=ids).loss.backward()
    opt.step()
    opt.zero_grad()

""",
}
# appended to a block whose page says what it does when used: the plugin example, given the reader's my_attention,
# is a variant that runs (its note under the row) and skips a soft-capped case with check's reason
PY_APPEND = {
    "python:docs/plugins.md:2": """
import torch.nn.functional as F

import attnscope
from attnscope.core.cases import make_case
from attnscope.plugin import register


def my_attention(q, k, v):
    return F.scaled_dot_product_attention(q, k, v, is_causal=True)


for variant in VARIANTS:
    register(variant)
(row,) = attnscope.run(make_case("cpu", seq_q=64), variants="my_attention", timing_budget_s=0.02).results
assert (row.status, row.numerics_ok, row.notes) == ("ok", True, ("shown under the row",)), row
(row,) = attnscope.run(make_case("cpu", seq_q=64, softcap=30.0), variants="my_attention").results
assert (row.status, row.reason) == ("skipped", "no soft-capping"), row
""",
    # the annotated step's trace gives analyze the model's split, attention against the rest (model.md)
    "python:docs/model.md:4": """
import attnscope

split = attnscope.analyze("step.json").model_split
assert split is not None and 0 < split["attention"]["share"] < 1, split
""",
}


def _blocks(page: Path) -> list[tuple[str, str]]:
    return [(m.group(1), m.group(2)) for m in re.finditer(r"```(\w*)\n(.*?)```", page.read_text(), re.S)]


def commands(page: Path) -> list[str]:
    """The `attnscope` lines of a page's shell and text blocks, continuations joined and comments dropped."""
    out = []
    for lang, body in _blocks(page):
        if lang not in SHELL:
            continue
        for line in body.replace("\\\n", " ").splitlines():
            text = re.sub(r"\s+#.*$", "", line.strip())
            text = re.sub(r"\s+", " ", text)
            if text == "attnscope" or text.startswith("attnscope "):
                out.append(text)
    return out


def python_blocks(page: Path) -> list[tuple[str, str]]:
    rel = page.relative_to(ROOT)
    return [(f"python:{rel}:{i}", body) for i, (lang, body) in enumerate(_blocks(page), 1) if lang == "python"]


ALL_COMMANDS = [(str(p.relative_to(ROOT)), c) for p in PAGES for c in commands(p)]
ALL_PYTHON = [b for p in PAGES for b in python_blocks(p)]


def rewrite(command: str) -> list[str]:
    """The page's command as run here (see the module docstring)."""
    args = shlex.split(command)[1:]
    out: list[str] = []
    i = 0
    while i < len(args):
        a = args[i]
        if a.startswith("[") or a == "...":  # optional parts of a synopsis line
            while not args[i].endswith("]") and a != "...":
                i += 1
            i += 1
            continue
        if a in CPU_SIZES and i + 1 < len(args) and not _kept(args, a):
            out += [a, CPU_SIZES[a]]
            i += 2
            continue
        if a in SERVING_SIZES and i + 1 < len(args):
            out += [a, SERVING_SIZES[a](args[i + 1])]
            i += 2
            continue
        out.append(PLACEHOLDERS.get(a, a))
        i += 1
    cmd = out[0] if out else ""
    if cmd == "model":
        out += MODEL_FAST
    if cmd in FAST:
        out += FAST[cmd]
        if "--variants" not in out and "--guess" not in out:  # a guess file names the variants it needs
            out += ["--variants", SERVING_VARIANT if _serving(args) else QUICK_VARIANTS]
        if "--seq-kv" in out and "--seq" not in out:  # the CPU default seq (512) would exceed the CPU-sized seq-kv
            out += ["--seq", CPU_SIZES["--seq"]]
        if "--device" not in out:
            out += ["--device", "cpu"]
    return out


def test_every_command_and_block_is_run_or_says_why_not():
    seen = {c for _, c in ALL_COMMANDS} | {k for k, _ in ALL_PYTHON}
    stale = set(NOT_RUN) - seen
    assert not stale, f"NOT_RUN names what no page holds any more: {stale}"
    assert all(r in REASONS for r in NOT_RUN.values())


def test_the_rewrite_makes_gpu_sizes_cpu_sizes():
    assert rewrite("attnscope sweep --seq 128..16384x2 --head-dim 64,128 --causal both --mode fwd,fwd_bwd") == [
        "sweep", "--seq", "64", "--head-dim", "16", "--causal", "both", "--mode", "fwd",
        "--budget", "0.02", "--executor", "inline", "--variants", QUICK_VARIANTS, "--device", "cpu",
    ]  # fmt: skip
    assert rewrite("attnscope diff A.json B.json [--threshold 5]")[1:] == [PLACEHOLDERS["A.json"]] * 2
    decode = ["model", "--mode", "decode", "--steps", "4", *MODEL_FAST]
    assert rewrite("attnscope model --mode decode --steps 64") == decode
    assert rewrite("attnscope run") == ["run", *FAST["run"], "--variants", QUICK_VARIANTS, "--device", "cpu"]


RUN = [(page, c) for page, c in ALL_COMMANDS if c not in NOT_RUN]


@pytest.fixture
def scratch(tmp_path, monkeypatch):
    for name in ("tests", "docs", "examples"):
        (tmp_path / name).symlink_to(ROOT / name)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("COLUMNS", "160")
    return tmp_path


@pytest.mark.slow
def test_the_documented_commands_run_on_the_cpu(scratch, capsys):
    """In page order, so a report reads the JSON a run above it wrote."""
    from attnscope.cli.main import main

    failed = []
    for page, command in RUN:
        argv = rewrite(command)
        if argv[:1] == ["report"] and not (scratch / argv[1]).exists():
            shutil.copy(ROOT / "docs" / "results" / "raw" / "cpu_torch213.json", scratch / argv[1])
        try:
            rc = main(argv)
        except SystemExit as e:  # --version and argparse exit through SystemExit
            rc = int(e.code or 0)
        out = capsys.readouterr()
        if rc != 0:
            failed.append(f"{page}: {command} → {' '.join(argv)}: exit {rc}: {out.err.strip()[-300:]}")
    assert not failed, "\n".join(failed)


@pytest.mark.slow
@pytest.mark.parametrize(("key", "body"), [b for b in ALL_PYTHON if b[0] not in NOT_RUN], ids=lambda x: str(x)[:40])
def test_the_documented_python_runs_as_a_script_on_the_cpu(key, body, scratch):
    """Each block saved as a script and run by a fresh Python: a sweep's process executor re-imports it in every
    job, so a block without its ``if __name__ == "__main__":`` guard fails here as it fails its reader."""
    if key in PY_PREPEND:
        pytest.importorskip("transformers")
    body = PY_PREPEND.get(key, "") + textwrap.dedent(body)  # a block inside a list item is indented on its page
    for old, new in PY_REWRITE.items():
        body = body.replace(old, new)
    body += PY_APPEND.get(key, "")
    script = scratch / "block.py"
    script.write_text(body)
    env = dict(os.environ, PYTHONPATH=str(ROOT), KINETO_LOG_LEVEL="6")
    p = subprocess.run([sys.executable, str(script)], cwd=scratch, env=env, capture_output=True, text=True, timeout=240)
    assert p.returncode == 0, f"{key}:\n{p.stderr[-2000:]}"


def test_install_hints_install_the_clone():
    """attnscope is installed from its clone (`pip install -e '.[EXTRA]'`, scripts/setup.sh), never from a package
    index: every hint for attnscope or one of its extras, in the docs and in the messages, says so."""
    files = [*PAGES, *(ROOT / "attnscope").rglob("*.py"), ROOT / "examples" / "plugin" / "README.md"]
    wrong = []
    for f in files:
        for m in re.finditer(r"pip install[^\n`\"]*", f.read_text()):
            hint = m.group(0)
            if re.search(r"attnscope\[|pip install (?!-e )'?\.\[", hint):
                wrong.append(f"{f.relative_to(ROOT)}: {hint}")
    assert not wrong, "\n".join(wrong)


def test_pointers_in_help_and_messages_resolve():
    """A docs/*.md path named in the code exists; a "README: Section" pointer names a heading the README has."""
    headings = set(re.findall(r"^#+ (.+)$", (ROOT / "README.md").read_text(), re.M))
    broken = []
    for f in (ROOT / "attnscope").rglob("*.py"):
        text = f.read_text()
        broken += [
            f"{f.relative_to(ROOT)}: {p}" for p in re.findall(r"docs/[\w/]+\.md", text) if not (ROOT / p).exists()
        ]
        broken += [
            f"{f.relative_to(ROOT)}: README: {s}"
            for s in re.findall(r"README: ([A-Z][\w ]+)", text)
            if s not in headings
        ]
    readme = (ROOT / "examples" / "plugin" / "README.md").read_text()
    assert "section" not in readme.lower() or any(h in readme for h in headings)
    assert not broken, "\n".join(broken)


# The CPU tables the pages show as `attnscope run`'s output, compared with a run of the same case here: the cells
# that depend neither on timing and load nor on the CPU's kernels (status, ops, hidden copy, upcast, the error's
# verdict: ✓ or ✗, not its value) and the FLOPs footnote, where the page shows it. A table recorded by an older
# attnscope (an op more, a copy fewer) fails until the page shows what the tool prints now.
STABLE_COLUMNS = ("status", "ops", "hidden copy", "upcast", "error")
CPU_HEADER = re.compile(r"attnscope run — (?P<case>.+) on cpu — (?P<machine>\S+) — torch (?P<torch>\S+)")


def _table(text: str) -> tuple[str, dict[str, dict[str, str]]]:
    """The header's case and the table's rows (variant → column → cell) of one printed `attnscope run`."""
    lines = text.splitlines()
    header = next(m for m in map(CPU_HEADER.search, lines) if m)
    names = [c.strip() for c in next(line for line in lines if line.startswith("┃")).strip("┃").split("┃")]
    rows = {}
    for line in lines:
        if line.startswith("│"):
            cells = dict(zip(names, (c.strip() for c in line.strip().strip("│").split("│")), strict=True))
            cells["error"] = cells["error"].split()[-1]  # the verdict: the value varies with the CPU's kernels
            rows[cells["variant"]] = {k: cells[k] for k in STABLE_COLUMNS}
    return header.group("case"), rows


def _footnote(text: str, start: str) -> str | None:
    """The footnote beginning `• <start>`, its wrapped lines joined, or None where the page leaves it out."""
    m = re.search(rf"^ *• {re.escape(start)}(.*?)(?=^ *[•→]|^\S)", text, re.M | re.S)
    return None if m is None else " ".join(m.group(0).split())


def cpu_tables() -> list[tuple[str, str]]:
    """(page, block) of every text block that shows a CPU run's table."""
    return [
        (str(p.relative_to(ROOT)), body)
        for p in PAGES
        for lang, body in _blocks(p)
        if lang == "text" and CPU_HEADER.search(body) and "┃ variant" in body
    ]


def test_the_pages_show_cpu_tables():
    """The README's study output and fingerprint.md's excerpt are CPU tables this check reads (a page that stops
    showing one, or a header this check no longer parses, would silently leave nothing compared)."""
    pages = {page for page, _ in cpu_tables()}
    assert {"README.md", "docs/fingerprint.md"} <= pages
    case, rows = _table(dict(cpu_tables())["README.md"])
    assert case == "B=1 H=8 S=512 D=64 bf16 causal"
    assert rows["naive"] == {
        "status": "ok", "ops": "5", "hidden copy": "4.0 MiB", "upcast": "no", "error": "✓"
    }  # fmt: skip


@pytest.mark.slow
def test_the_cpu_tables_of_the_pages_are_what_the_tool_prints(scratch, capsys):
    """`bash scripts/study.sh` is `attnscope run` with the default case: run it here (a brief timing, no matmul peak:
    neither changes a compared cell) and compare every page's table with it, on the torch the page names."""
    import torch

    from attnscope.cli.main import main

    tables = [
        (page, body)
        for page, body in cpu_tables()
        if re.search(rf"on cpu — .* — torch {re.escape(torch.__version__)}(?!\S)", body)
    ]
    if not tables:
        pytest.skip(f"the pages' CPU tables were printed by another torch than {torch.__version__}")
    assert main(["run", "--device", "cpu", *FAST["run"]]) == 0
    printed = capsys.readouterr().out
    case, rows = _table(printed)
    wrong = []
    for page, body in tables:
        page_case, page_rows = _table(body)
        if page_case != case:
            wrong.append(f"{page}: the case {page_case!r}, the tool's default {case!r}")
        for variant, cells in page_rows.items():
            if cells != rows.get(variant):
                wrong.append(f"{page}: {variant} {cells}, printed {rows.get(variant)}")
        shown = _footnote(body, "FLOPs:")
        if shown is not None and shown != _footnote(printed, "FLOPs:"):
            wrong.append(f"{page}: the FLOPs footnote {shown!r}, printed {_footnote(printed, 'FLOPs:')!r}")
    assert not wrong, "\n".join(wrong)


# Names that are not Python: the profiler ranges attnscope writes into traces (attnscope.step[decode] N, ...).
RANGE_NAMES = {"attnscope.step", "attnscope.model", "attnscope.rebuild"}


def python_names(text: str) -> list[tuple[str, bool]]:
    """The dotted `attnscope.…` names a page gives in code, each with whether it is written as a call; mutmut's mutant
    names (`…__mutmut_*`) are not Python names."""
    out = []
    for span in re.findall(r"`([^`]+)`", re.sub(r"```.*?```", "", text, flags=re.S)):
        for m in re.finditer(r"\battnscope(?:\.\w+)+(?P<call>\()?", span):
            name = m.group(0).rstrip("(")
            if name not in RANGE_NAMES and "__mutmut_" not in name:
                out.append((name, bool(m.group("call"))))
    return out


def _resolve(name: str) -> object | None:
    """The object a dotted name stands for: the longest importable module, then attributes; None if none."""
    import importlib

    parts = name.split(".")
    for i in range(len(parts), 0, -1):
        try:
            obj: object = importlib.import_module(".".join(parts[:i]))
        except ImportError:
            continue
        for attr in parts[i:]:
            if not hasattr(obj, attr):
                return None
            obj = getattr(obj, attr)
        return obj
    return None


def test_the_python_names_a_page_gives_exist_and_a_call_names_a_callable():
    wrong = []
    for page in PAGES:
        for name, call in python_names(page.read_text()):
            obj = _resolve(name)
            if obj is None or (call and not callable(obj)):
                wrong.append(f"{page.relative_to(ROOT)}: {name}{'(...)' if call else ''}")
    assert not wrong, "\n".join(sorted(set(wrong)))


def test_a_module_written_as_a_call_is_found():
    """module_ranges is a module, its annotate the context manager (model.md once named the module as a call)."""
    names = python_names("`attnscope.workloads.hf.module_ranges(model)` and `attnscope.step[decode] 3`")
    assert names == [("attnscope.workloads.hf.module_ranges", True)]
    assert not callable(_resolve("attnscope.workloads.hf.module_ranges"))
    assert callable(_resolve("attnscope.workloads.hf.module_ranges.annotate"))
    assert _resolve("attnscope.api.modeling.NoSuchName") is None


# Flags the pages name that belong to other tools: ruff's, mutmut's, and the word a sentence uses for any flag.
FOREIGN_FLAGS = {"--check": "ruff format --check", "--all": "mutmut results --all", "--flag": "a flag, in words"}


def _command_flags() -> dict[str, set[str]]:
    from attnscope.cli.main import LAZY_COMMANDS, build_parser

    out = {}
    for name in ("run", "guess", *LAZY_COMMANDS):
        sub = next(a for a in build_parser([name])._actions if isinstance(a, argparse._SubParsersAction))
        out[name] = {o for a in sub.choices[name]._actions for o in a.option_strings}
    return out


def test_every_flag_a_page_names_exists_and_an_inline_command_has_its_flags():
    """A `--flag` anywhere on a page is a flag of an attnscope command, of a benchmark script (its source spells it),
    or of another tool named in FOREIGN_FLAGS; in an inline `attnscope CMD ...`, each flag is CMD's own."""
    flags = _command_flags()
    every = set().union(*flags.values()) | {"--version"}
    scripts = "\n".join(p.read_text() for p in (ROOT / "benchmarks").rglob("*.py"))
    wrong = []
    for page in PAGES:
        text = page.read_text()
        for f in set(re.findall(r"(?<![\w/.-])--[a-z][\w-]*", text)):
            if f not in every and f not in FOREIGN_FLAGS and f'"{f}"' not in scripts:
                wrong.append(f"{page.relative_to(ROOT)}: {f} is no flag")
        prose = re.sub(r"```.*?```", "", text, flags=re.S)
        for span in re.findall(r"`(attnscope (\w+)[^`]*)`", prose):
            cmd, name = " ".join(span[0].split()), span[1]
            if name in flags:
                wrong += [
                    f"{page.relative_to(ROOT)}: `{cmd}`: {name} has no {f}"
                    for f in re.findall(r"(?<![\w/.-])--[a-z][\w-]*", cmd)
                    if f not in flags[name]
                ]
    assert not wrong, "\n".join(sorted(wrong))


GPU_BLOCKS = [(key, body) for key, body in ALL_PYTHON if '"cuda"' in body and key not in NOT_RUN]


def test_some_block_is_written_for_a_gpu():
    assert [key for key, _ in GPU_BLOCKS] == ["python:docs/sweep.md:3"]


@pytest.mark.slow
@pytest.mark.parametrize(("key", "body"), GPU_BLOCKS, ids=lambda x: str(x)[:40])
def test_a_gpu_block_run_as_written_on_a_cpu_stops_in_one_line_before_any_work(key, body, scratch):
    """What a reader without a GPU sees from a block written for one: the library's one-line UsageError naming the
    device (the last line of the traceback), before anything is measured or written."""
    import torch

    if torch.cuda.is_available():
        pytest.skip("a GPU is here: the block runs")
    script = scratch / "block.py"
    script.write_text(body)
    env = dict(os.environ, PYTHONPATH=str(ROOT), KINETO_LOG_LEVEL="6")
    p = subprocess.run([sys.executable, str(script)], cwd=scratch, env=env, capture_output=True, text=True, timeout=120)
    last = p.stderr.strip().splitlines()[-1]
    assert p.returncode == 1 and last.startswith("attnscope.core.arguments.UsageError: case.device cuda: "), last
    assert "sees no CUDA GPU here" in last
    assert sorted(f.name for f in scratch.iterdir()) == ["block.py", "docs", "examples", "tests"]  # nothing written
