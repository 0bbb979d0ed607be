"""Write a sample HTML report and a screenshot of its top, as committed under docs/results/.

    python benchmarks/html_samples.py docs/results/h200_run_report.html tests/data/h200/run.json

writes the page and ``<page>.png`` beside it (the first 1700 px, in headless chromium).
"""

from __future__ import annotations

import sys
from pathlib import Path

from attnscope.api.report import write_html

ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run"]
ARGS += ["--disable-background-networking", "--disable-component-update", "--disable-sync"]


def screenshot(page_path: Path, png: Path, height: int = 1700) -> None:
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        b = p.chromium.launch(executable_path="/usr/bin/chromium", args=ARGS)
        pg = b.new_page(viewport={"width": 1400, "height": height})
        pg.goto(page_path.resolve().as_uri())
        pg.wait_for_function("document.body.dataset.plotsRendered", timeout=60_000)
        pg.screenshot(path=str(png))
        b.close()


def main(argv: list[str]) -> int:
    if len(argv) < 2:
        print(__doc__, file=sys.stderr)
        return 2
    out = write_html(argv[1:], argv[0])
    png = out.with_suffix(".png")
    screenshot(out, png)
    print(f"{out} ({out.stat().st_size / 1e6:.2f} MB), {png}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
