"""How big a report page is and how soon it paints: plotly inline (the default) against one shared plotly beside
the pages (`attnscope report --assets DIR`).

    python benchmarks/html_size.py                 # the committed run, sweep and model documents
    python benchmarks/html_size.py --loads 5 --json out.json

For each document and each way, the page is written to a temporary folder and opened offline in headless chromium
(Debian's, through Playwright) ``--loads`` times, each in a fresh browser context (a cold cache: the shared asset is
read from disk every time). Per load: first contentful paint (the browser's ``paint`` timing) and the time until
every figure is drawn (``data-plots-rendered`` set by the page's script), both from navigation start. Printed:
bytes of the page, bytes of the asset, and the medians.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
from pathlib import Path
from typing import Any

from attnscope.api.report import write_html

ROOT = Path(__file__).resolve().parent.parent
DOCUMENTS = {
    "run": ROOT / "tests/data/h200/run.json",
    "sweep": ROOT / "tests/data/cpu/tiny_sweep.jsonl",
    "model": ROOT / "docs/results/raw/model/llama3_8b_h200.json",
}
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run"]
ARGS += ["--disable-background-networking", "--disable-component-update", "--disable-sync"]
TIMES = """() => {
  const nav = performance.getEntriesByType('navigation')[0];
  const fcp = performance.getEntriesByName('first-contentful-paint')[0];
  return {fcp_ms: fcp ? fcp.startTime : null, drawn_ms: Number(document.body.dataset.drawnAt) - nav.startTime};
}"""
MARK_DRAWN = """() => new Promise(done => {
  const check = () => document.body.dataset.plotsRendered
    ? (document.body.dataset.drawnAt = String(performance.now()), done())
    : requestAnimationFrame(check);
  check();
})"""


def load_times(browser: Any, page: Path, loads: int) -> dict[str, float]:
    fcp, drawn = [], []
    for _ in range(loads):
        ctx = browser.new_context(viewport={"width": 1400, "height": 900})
        ctx.route("**/*", lambda r: r.continue_() if r.request.url.startswith("file://") else r.abort())
        pg = ctx.new_page()
        pg.goto(page.resolve().as_uri())
        pg.evaluate(MARK_DRAWN)
        t = pg.evaluate(TIMES)
        fcp.append(t["fcp_ms"])
        drawn.append(t["drawn_ms"])
        ctx.close()
    return {"fcp_ms": statistics.median(fcp), "drawn_ms": statistics.median(drawn)}


def measure(loads: int, chromium: str) -> list[dict[str, Any]]:
    from playwright.sync_api import sync_playwright

    out = []
    with tempfile.TemporaryDirectory() as tmp, sync_playwright() as p:
        browser = p.chromium.launch(executable_path=chromium, args=ARGS)
        for kind, doc in DOCUMENTS.items():
            for way in ("inline", "assets"):
                folder = Path(tmp) / way
                page = write_html(doc, folder / f"{kind}.html", assets=folder / "assets" if way == "assets" else None)
                asset = sum(f.stat().st_size for f in (folder / "assets").glob("*.js")) if way == "assets" else 0
                row = {"document": kind, "way": way, "page_bytes": page.stat().st_size, "asset_bytes": asset}
                out.append(row | load_times(browser, page, loads))
        browser.close()
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--loads", type=int, default=5, help="loads per page (median reported)")
    ap.add_argument("--chromium", default="/usr/bin/chromium")
    ap.add_argument("--json", metavar="PATH", help="also write the rows here")
    args = ap.parse_args()
    rows = measure(args.loads, args.chromium)
    print(f"{'document':8} {'way':7} {'page MB':>8} {'asset MB':>9} {'first paint ms':>15} {'all drawn ms':>13}")
    for r in rows:
        print(
            f"{r['document']:8} {r['way']:7} {r['page_bytes'] / 1e6:8.3f} {r['asset_bytes'] / 1e6:9.3f} "
            f"{r['fcp_ms']:15.0f} {r['drawn_ms']:13.0f}"
        )
    if args.json:
        Path(args.json).write_text(json.dumps({"loads": args.loads, "rows": rows}, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
