"""Every relative link in README.md and docs/ names a file (or folder) of the repository.

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
