"""docs/layout.md draws the packages as the import contracts in pyproject.toml have them: every package of
attnscope/ on the page, the floors in the `layers` contract's order, each floor allowed the floors below it."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PAGE = (ROOT / "docs" / "layout.md").read_text()
CONTRACTS = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]["contracts"]
BESIDE = ("document", "report")  # outside the floors: any floor may import them


def _drawing() -> dict[str, tuple[str, set[str]]]:
    """package -> (floor, the packages its row says it may import), read from the page's first code block."""
    block = re.search(r"```\n(floor.*?)```", PAGE, re.S)
    assert block is not None
    rows: dict[str, tuple[str, set[str]]] = {}
    last = None
    for line in block.group(1).splitlines()[1:]:
        m = re.match(r"\s+(\d+|-)\s+(\w+)\s+(.*)", line)
        if m:
            last = m.group(2)
            rows[last] = (m.group(1), set())
            text = m.group(3)
        else:
            text = line
        assert last is not None
        allowed = re.sub(r"\(.*?\)|\byes\b", "", text)
        rows[last][1].update(w for w in re.findall(r"[a-z]+", allowed) if w != "nothing")
    return rows


def _layers() -> list[list[str]]:
    (layers,) = [c for c in CONTRACTS if c["type"] == "layers"]
    return [[p.strip().removeprefix("attnscope.") for p in layer.split("|")] for layer in layers["layers"]]


def test_every_package_is_drawn():
    packages = {p.parent.name for p in (ROOT / "attnscope").glob("*/__init__.py")}
    assert set(_drawing()) == packages


def _forbidden(pkg: str) -> set[str]:
    """The packages a `forbidden` contract keeps ``pkg`` from importing (the torch contract apart)."""
    out: set[str] = set()
    for c in CONTRACTS:
        if c["type"] == "forbidden" and f"attnscope.{pkg}" in c["source_modules"]:
            out |= {m.removeprefix("attnscope.") for m in c["forbidden_modules"] if m.startswith("attnscope.")}
    return out


def test_floors_follow_the_layers_contract_and_each_may_import_what_is_below():
    """Each floor may import the floors below it and the packages beside them, less what a `forbidden` contract
    keeps it from (the command line and the tour speak to the API only; execute renders nothing)."""
    rows, layers = _drawing(), _layers()
    for i, layer in enumerate(layers):
        below = {p for lower in layers[i + 1 :] for p in lower}
        for pkg in layer:
            floor, allowed = rows[pkg]
            assert floor == str(len(layers) - i), pkg
            want = (below | (set(BESIDE) if pkg != "core" else set())) - _forbidden(pkg)
            assert allowed == want, (pkg, allowed ^ want)


def test_packages_beside_the_floors_import_what_the_forbidden_contracts_leave():
    rows = _drawing()
    every = set(rows)
    for c in CONTRACTS:
        if c["type"] != "forbidden" or not any(
            m in ("attnscope.document", "attnscope.report") for m in c["source_modules"]
        ):
            continue
        if "torch" in c["forbidden_modules"]:
            continue
        (src,) = [m.removeprefix("attnscope.") for m in c["source_modules"]]
        forbidden = {m.removeprefix("attnscope.") for m in c["forbidden_modules"]}
        assert rows[src][1] == every - forbidden - {src}, src
