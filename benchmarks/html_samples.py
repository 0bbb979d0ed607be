"""The sample HTML reports of docs/results/, drawn again from the H200 documents committed there.

    python benchmarks/html_samples.py                 # all three pages: run, sweep, model (not committed)
    python benchmarks/html_samples.py --png           # and the screenshots committed beside them
    python benchmarks/html_samples.py OUT.html DOC... # one page from the documents given

The pages (about 5 MB each, plotly inlined) are ignored by git; the screenshots (the first 1700 px, in
headless chromium) are committed.
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


RESULTS = Path(__file__).resolve().parents[1] / "docs" / "results"
SAMPLES = {  # page -> the documents it is drawn from (paths under docs/results/)
    "h200_run_report.html": ["raw/study/run_all.json"],
    "h200_sweep_report.html": ["raw/h200_sweep.jsonl", "raw/h200_sweep_flex_compiled.jsonl"],
    "h200_model_report.html": ["raw/model/llama3_8b_h200.json"],
}


def main(argv: list[str]) -> int:
    png = "--png" in argv
    argv = [a for a in argv if a != "--png"]
    if len(argv) == 1:
        print(__doc__, file=sys.stderr)
        return 2
    every = {str(RESULTS / k): [str(RESULTS / d) for d in v] for k, v in SAMPLES.items()}
    jobs = {argv[0]: argv[1:]} if argv else every
    for page, docs in jobs.items():
        out = write_html(docs, page)
        line = f"{out} ({out.stat().st_size / 1e6:.2f} MB)"
        if png:
            screenshot(out, out.with_suffix(".png"))
            line += f", {out.with_suffix('.png')}"
        print(line)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
