"""Every relative link in README.md and docs/ names a file (or folder) of the repository, and so does every file
path a page names in code.

A link's target is resolved against the page that holds it; ``#anchors`` and web addresses are not checked.
The sample HTML pages are drawn on demand (``python benchmarks/html_samples.py``), not committed.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")
DRAWN = {"h200_run_report.html", "h200_sweep_report.html", "h200_model_report.html"}


def links(page: Path) -> list[str]:
    text = re.sub(r"```.*?```", "", page.read_text(), flags=re.S)  # code blocks hold no links
    return [t for t in LINK.findall(text) if not re.match(r"[a-z][a-z0-9+.-]*:|#", t)]


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_relative_links_resolve(page):
    broken = []
    for target in links(page):
        path = target.split("#")[0]
        if Path(path).name in DRAWN:
            continue
        if not (page.parent / path).exists():
            broken.append(target)
    assert broken == [], f"{page.relative_to(ROOT)}: broken links {broken}"


def test_the_checker_sees_a_broken_link(tmp_path):
    """The link pattern finds links outside code blocks only (a page written here, checked by hand)."""
    page = tmp_path / "p.md"
    page.write_text("[a](x.md) [b](https://e.org) [c](#top)\n```\n[d](y.md)\n```\n[e](z.md#s)\n")
    assert links(page) == ["x.md", "z.md#s"]


# A file a page names in code (`attnscope/workloads/sizing.py`, `rules/peers.py`, `tests/data/...`): written from the
# repository root, from docs/, from the package, or as the tail of one path in the package. Placeholders (an
# upper-case name: `cli/X.py`) and absolute paths are not files of the repository.
NAMED_FILE = re.compile(r"`([\w.-]+(?:/[\w.-]+)+\.(?:py|sh|toml|json|jsonl|md|txt|csv|gz|xz))(?::\w+)?`")
PACKAGE = [p.relative_to(ROOT).as_posix() for p in (ROOT / "attnscope").rglob("*") if p.is_file()]


def named_files(page: Path) -> list[str]:
    return [p for p in NAMED_FILE.findall(page.read_text()) if not re.search(r"(^|/)[A-Z]+\.\w+$", p)]


def resolves(path: str) -> bool:
    if any((base / path).exists() for base in (ROOT, ROOT / "docs", ROOT / "attnscope")):
        return True
    return sum(p.endswith(f"/{path}") for p in PACKAGE) == 1


@pytest.mark.parametrize("page", [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))], ids=lambda p: p.name)
def test_the_files_a_page_names_exist(page):
    missing = [p for p in named_files(page) if not resolves(p)]
    assert missing == [], f"{page.relative_to(ROOT)} names files that do not exist: {missing}"


def test_the_file_check_tells_a_moved_module(tmp_path):
    """A module named by the path it had before it moved into a subpackage is not found; its path now is, from the
    package or as the unique tail of one; a placeholder is not checked (checked by hand: attribution.py lives in
    analysis/fingerprint/)."""
    page = tmp_path / "p.md"
    page.write_text(
        "`analysis/attribution.py` `analysis/fingerprint/attribution.py` `fingerprint/attribution.py` `cli/X.py`"
    )
    assert named_files(page) == [
        "analysis/attribution.py",
        "analysis/fingerprint/attribution.py",
        "fingerprint/attribution.py",
    ]
    assert [resolves(p) for p in named_files(page)] == [False, True, True]
