"""No module below ``attnscope/cli/`` raises a message that names a command-line flag.

A library caller of ``attnscope.run(case)`` typed no ``--mask``: an error below the command line names the value
in the library's words (``mask 'sliding:x': …``, ``budget_s …``), and the command line's one error handler says
it as the flag the user typed (``attnscope/cli/errors.py``).

What is read, with ``ast`` (no module is imported): every string, and every literal part of an f-string, inside a
``raise`` expression or passed to an error's constructor (a call whose name ends in ``Error`` or ``Exception``),
and the strings bound to a name in the same function that such an expression reads (``what = f"--mask …"``, a
parameter's default ``what="--device"``).  A message assembled further away (a table entry read through an
attribute) is out of this test's reach: ``tests/api/test_library_numbers.py`` calls the library with bad values
and reads the messages themselves.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "attnscope"
FLAG = re.compile(r"--[A-Za-z]")


def _strings(node: ast.AST) -> Iterator[ast.Constant]:
    """Every string in ``node``; an f-string's literal part that ends in ``--`` before a formatted value
    (``f"--{what}"``) as if the value were a flag's name."""
    for n in ast.walk(node):
        if isinstance(n, ast.Constant) and isinstance(n.value, str):
            yield n
        if isinstance(n, ast.JoinedStr):
            for part, after in zip(n.values, n.values[1:], strict=False):
                if isinstance(part, ast.Constant) and isinstance(after, ast.FormattedValue):
                    if isinstance(part.value, str) and part.value.endswith("--"):
                        yield ast.Constant(part.value + "x", lineno=part.lineno, col_offset=part.col_offset)


def _is_error_call(node: ast.AST) -> bool:
    if not isinstance(node, ast.Call):
        return False
    f = node.func
    name = f.id if isinstance(f, ast.Name) else f.attr if isinstance(f, ast.Attribute) else ""
    return name.endswith(("Error", "Exception"))


def _messages(fn: ast.AST) -> list[ast.AST]:
    """The raise expressions and error constructions directly in ``fn`` (a module or a function)."""
    out: list[ast.AST] = []
    for n in ast.walk(fn):
        if isinstance(n, ast.Raise) and n.exc is not None:
            out.append(n.exc)
        elif _is_error_call(n):
            out.append(n)
    return out


def _bound(fn: ast.AST) -> dict[str, list[ast.AST]]:
    """name → the expressions bound to it in ``fn``: assignments and, for a function, its parameters' defaults."""
    out: dict[str, list[ast.AST]] = {}
    for n in ast.walk(fn):
        if isinstance(n, ast.Assign | ast.AnnAssign) and n.value is not None:
            targets = n.targets if isinstance(n, ast.Assign) else [n.target]
            for t in targets:
                if isinstance(t, ast.Name):
                    out.setdefault(t.id, []).append(n.value)
    if isinstance(fn, ast.FunctionDef | ast.AsyncFunctionDef):
        a = fn.args
        positional = a.posonlyargs + a.args
        for arg, default in zip(positional[len(positional) - len(a.defaults) :], a.defaults, strict=True):
            out.setdefault(arg.arg, []).append(default)
        for arg, kw_default in zip(a.kwonlyargs, a.kw_defaults, strict=True):
            if kw_default is not None:
                out.setdefault(arg.arg, []).append(kw_default)
    return out


def offenders(source: str, name: str) -> list[str]:
    """'FILE:LINE: text' for each flag-naming string that reaches an error in ``source``."""
    tree = ast.parse(source)
    found: dict[tuple[int, int], str] = {}
    scopes: list[ast.AST] = [
        tree,
        *(n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)),
    ]
    for scope in scopes:
        bound = _bound(scope)
        for message in _messages(scope):
            reached: list[ast.AST] = [message]
            for n in ast.walk(message):
                if isinstance(n, ast.Name) and n.id in bound:
                    reached += bound[n.id]
            for expr in reached:
                for s in _strings(expr):
                    if FLAG.search(s.value):
                        found[(s.lineno, s.col_offset)] = f"{name}:{s.lineno}: {s.value.strip()[:80]!r}"
    return [found[k] for k in sorted(found)]


def _library_modules() -> list[Path]:
    return sorted(p for p in PACKAGE.rglob("*.py") if p.relative_to(PACKAGE).parts[0] != "cli")


def test_no_library_error_names_a_flag() -> None:
    bad = [
        line for p in _library_modules() for line in offenders(p.read_text(encoding="utf-8"), str(p.relative_to(ROOT)))
    ]
    assert not bad, "errors below cli/ that name a flag (say the value in the library's words):\n" + "\n".join(bad)


def test_the_scan_covers_the_library() -> None:
    """The walk reaches the floors below the command line, and leaves cli/ out."""
    tops = {p.relative_to(PACKAGE).parts[0] for p in _library_modules()}
    assert {"core", "api", "execute", "measure", "variants", "workloads", "analysis", "document", "tour"} <= tops
    assert "cli" not in tops


@pytest.mark.parametrize(
    ("source", "count"),
    [
        ('raise ValueError("--mask x: bad")', 1),
        ('raise UsageError(f"--kv-lens {t!r}: bad")', 1),
        ("raise ValueError(f\"--{what.replace('_', '-')}: no file\")", 1),
        ('e = WriteError("--out: full")', 1),
        ('def f(t, what="--device"):\n    raise UsageError(f"{what} {t}: bad")', 1),
        ('def f(n):\n    what = f"--mask {n}"\n    raise ValueError(msg(what))', 1),
        ('raise ValueError("mask x: bad")', 0),  # the value's name: fine
        ('raise ValueError("a range like 1..2 -- or 3")', 0),  # a dash pair, no flag
        ('print("--mask x")', 0),  # not an error
        ('def f(what="--device"):\n    return what', 0),  # bound, but no error reads it
    ],
)
def test_the_scan_finds_what_it_should(source: str, count: int) -> None:
    """Hand-written sources: each flag-naming string that reaches an error is found once, and nothing else."""
    assert len(offenders(source, "x.py")) == count
