"""A screenshot of the tour's page, as the README shows it.

    python benchmarks/tour_screenshot.py docs/results/tour_h200.json [docs/results/tour.png]

Reads a tour transcript (or an already written tour page, .html), writes the page beside the
transcript (same name, .html) when given JSON, and the top 1800 px of it, rendered in headless Chromium
(/usr/bin/chromium through Playwright), to the PNG (default docs/results/tour.png).
"""

from __future__ import annotations

import sys
from pathlib import Path

from attnscope.report.html.tour import write_tour_html

ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run"]
ARGS += ["--disable-background-networking", "--disable-component-update", "--disable-sync"]


def screenshot(page_path: Path, png: Path, height: int = 1800) -> None:
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        b = p.chromium.launch(executable_path="/usr/bin/chromium", args=ARGS)
        pg = b.new_page(viewport={"width": 1400, "height": height})
        pg.goto(page_path.resolve().as_uri())
        pg.wait_for_function("document.body.dataset.plotsRendered", timeout=60_000)
        png.parent.mkdir(parents=True, exist_ok=True)
        pg.screenshot(path=str(png))
        b.close()


def main(argv: list[str]) -> int:
    if not argv or len(argv) > 2:
        print(__doc__, file=sys.stderr)
        return 2
    src = Path(argv[0])
    png = Path(argv[1]) if len(argv) == 2 else Path("docs/results/tour.png")
    page = src if src.suffix == ".html" else write_tour_html(src, src.with_suffix(".html"))
    screenshot(page, png)
    print(f"{page} ({page.stat().st_size / 1e6:.2f} MB), {png}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
