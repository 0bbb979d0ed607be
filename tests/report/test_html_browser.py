"""The HTML report opened in a real headless browser (Playwright driving Debian's chromium).

Each page must load with no console error and no network request, draw every figure, list every
variant, and keep hostile names as text.  Screenshots go to out/test-artifacts/ (or
$ATTNSCOPE_ARTIFACTS) for a person to look at.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import Any

import pytest

from attnscope.api.report import write_html
from tests.htmldocs import IMG_KERNEL, SCRIPT_VARIANT, h200_run, hostile_run, model_document, sweep_rows
from tests.rawtrace import H200

pytest.importorskip("plotly")
CHROMIUM = os.environ.get("ATTNSCOPE_CHROMIUM", "/usr/bin/chromium")
ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
ARTIFACTS = Path(os.environ.get("ATTNSCOPE_ARTIFACTS", Path(__file__).parents[2] / "out" / "test-artifacts"))


def _unavailable(why: str) -> None:
    if os.environ.get("ATTNSCOPE_REQUIRE_BROWSER") == "1":
        pytest.fail(f"browser tests required here, but {why}")
    pytest.skip(why)


@pytest.fixture(scope="module")
def browser() -> Any:
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        _unavailable("playwright is not installed")
    if not shutil.which(CHROMIUM):
        _unavailable(f"no chromium at {CHROMIUM} (scripts/browser.sh installs Debian's)")
    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        yield b
        b.close()


class Opened:
    def __init__(self, browser: Any, path: Path) -> None:
        self.console: list[str] = []
        self.outside: list[str] = []
        self.ctx = browser.new_context(viewport={"width": 1400, "height": 900})
        self.ctx.route("**/*", self._route)
        self.page = self.ctx.new_page()
        self.page.on("console", lambda m: m.type in ("error", "warning") and self.console.append(m.text))
        self.page.on("pageerror", lambda e: self.console.append(f"pageerror: {e}"))
        self.page.goto(path.resolve().as_uri())
        self.page.wait_for_function(
            "document.body.dataset.plotsRendered || document.body.dataset.plotsError", timeout=60_000
        )

    def _route(self, route: Any) -> None:
        url = route.request.url
        if url.startswith("file://"):
            route.continue_()
        else:  # any other request is a failure of "self-contained": record it, never let it out
            self.outside.append(url)
            route.abort()

    def drawn(self) -> list[int]:
        """Per figure: how many non-empty SVG shapes plotly drew in its plotting area."""
        return self.page.evaluate(
            """() => Array.from(document.querySelectorAll('div.plot')).map(el =>
                 Array.from(el.querySelectorAll('.cartesianlayer path, .barlayer path, .scatterlayer path'))
                   .filter(p => (p.getAttribute('d') || '').length > 4).length)"""
        )

    def screenshot(self, name: str) -> Path:
        ARTIFACTS.mkdir(parents=True, exist_ok=True)
        out = ARTIFACTS / name
        self.page.screenshot(path=str(out), full_page=True)
        return out

    def close(self) -> None:
        self.ctx.close()


def _open_checked(browser: Any, path: Path, shot: str) -> Opened:
    o = Opened(browser, path)
    assert o.page.evaluate("document.body.dataset.plotsError || null") is None
    assert o.console == []
    assert o.outside == []
    num_figs = len(json.loads(o.page.locator("#attnscope-data").text_content())["figures"])
    assert num_figs > 0
    assert o.page.evaluate("document.body.dataset.plotsRendered") == str(num_figs)
    drawn = o.drawn()
    assert len(drawn) == num_figs and all(n > 0 for n in drawn), drawn
    assert o.screenshot(shot).stat().st_size > 10_000
    return o


def test_run_report_in_the_browser(browser, tmp_path):
    path = write_html([H200 / "run.json"], tmp_path / "run.html")
    o = _open_checked(browser, path, "run_report.png")
    variants = [r["variant"] for r in h200_run()["results"]]  # read from the file, not from the report
    cells = o.page.eval_on_selector_all(
        "table.fingerprint tbody tr td:first-child", "tds => tds.map(t => t.textContent)"
    )
    assert cells == variants
    strips = o.page.evaluate(
        "() => Array.from(document.querySelectorAll('#fig-0 .yaxislayer-above text')).map(t => t.textContent)"
    )
    assert sorted(strips) == sorted(variants)  # one timeline strip per variant
    o.close()


def test_injected_names_stay_text(browser, tmp_path):
    path = write_html([hostile_run(tmp_path)], tmp_path / "hostile.html")
    o = _open_checked(browser, path, "hostile_report.png")
    assert o.page.evaluate("typeof window.__pwned") == "undefined"
    assert o.page.evaluate("document.querySelectorAll('main img, main script').length") == 0
    text = o.page.inner_text("main")
    assert SCRIPT_VARIANT in text  # the variant name, shown as the characters it is
    o.page.locator("details").filter(has_text=SCRIPT_VARIANT).first.evaluate("d => d.open = true")
    assert IMG_KERNEL in o.page.inner_text("main")
    # the timeline's strip label is the name as text (plotly decodes the entities it was given)
    labels = o.page.evaluate(
        "() => Array.from(document.querySelectorAll('#fig-0 .ytick text')).map(t => t.textContent)"
    )
    assert SCRIPT_VARIANT in labels
    # hover the kernel named <img …> on the timeline: plotly shows the name as text, with the fields asked for
    hover = o.page.evaluate(
        """() => {
          const gd = document.getElementById('fig-0');
          const c = gd.data.findIndex(t => (t.hovertext || []).some(h => h.includes('onerror')));
          const p = gd.data[c].hovertext.findIndex(h => h.includes('onerror'));
          Plotly.Fx.hover(gd, [{curveNumber: c, pointNumber: p}]);
          return gd.querySelector('.hoverlayer').textContent;
        }"""
    )
    assert IMG_KERNEL in hover
    for field in ("µs", "grid", "block", "registers/thread", "shared memory", "occupancy", "launched by aten::"):
        assert field in hover
    assert o.page.evaluate("document.querySelectorAll('img').length") == 0
    assert o.page.evaluate("typeof window.__pwned") == "undefined"
    o.close()


@pytest.mark.parametrize("kind", ["sweep", "model", "analyze"])
def test_other_reports_in_the_browser(browser, tmp_path, kind):
    if kind == "sweep":
        docs: Any = [sweep_rows()]
    elif kind == "model":
        docs = [model_document()]
    else:
        from attnscope.cli.main import main

        main(["analyze", str(H200 / "sdpa_math.json"), str(H200 / "flex.json"), "--json", str(tmp_path / "a.json")])
        docs = [tmp_path / "a.json"]
    path = write_html(docs, tmp_path / f"{kind}.html")
    _open_checked(browser, path, f"{kind}_report.png").close()
