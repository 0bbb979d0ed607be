"""In headless chromium (Debian's, through Playwright), offline: a page with a shared plotly asset draws every
figure; a changed asset is refused by its hash; log axes show the labelled ticks; the model legend fits."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import Any

import pytest

from attnscope.api.report import write_html
from tests.htmldocs import model_document
from tests.rawtrace import H200

pytest.importorskip("plotly")
CHROMIUM = os.environ.get("ATTNSCOPE_CHROMIUM", "/usr/bin/chromium")
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run"]


@pytest.fixture(scope="module")
def chromium() -> Any:
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        pytest.skip("playwright is not installed")
    if not shutil.which(CHROMIUM):
        pytest.skip(f"no chromium at {CHROMIUM} (scripts/browser.sh installs Debian's)")
    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        yield b
        b.close()


def _open(browser: Any, path: Path) -> tuple[Any, Any, list[str], list[str]]:
    errors: list[str] = []
    outside: list[str] = []
    ctx = browser.new_context(viewport={"width": 1400, "height": 900})

    def route(r: Any) -> None:
        if r.request.url.startswith("file://"):
            r.continue_()
        else:
            outside.append(r.request.url)
            r.abort()

    ctx.route("**/*", route)
    page = ctx.new_page()
    page.on("console", lambda m: m.type == "error" and errors.append(m.text))
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.goto(path.resolve().as_uri())
    return ctx, page, errors, outside


def _wait_drawn(page: Any) -> int:
    # polled from here: wait_for_function evaluates a string in the page, which its CSP forbids
    for _ in range(600):
        if page.evaluate("document.body.dataset.plotsRendered || document.body.dataset.plotsError || null"):
            break
        page.wait_for_timeout(100)
    assert page.evaluate("document.body.dataset.plotsError || null") is None
    return int(page.evaluate("document.body.dataset.plotsRendered"))


def test_a_page_with_shared_assets_draws_every_figure_offline(chromium, tmp_path):
    path = write_html(H200 / "run.json", tmp_path / "pages" / "run.html", assets=tmp_path / "assets")
    ctx, page, errors, outside = _open(chromium, path)
    n = len(json.loads(page.locator("#attnscope-data").text_content())["figures"])
    assert _wait_drawn(page) == n > 0
    assert errors == [] and outside == []
    ctx.close()


def test_a_page_moved_without_its_assets_says_so_in_the_console(chromium, tmp_path):
    path = write_html(H200 / "run.json", tmp_path / "run.html", assets=tmp_path / "assets")
    shutil.rmtree(tmp_path / "assets")
    ctx, page, errors, _ = _open(chromium, path)
    page.wait_for_timeout(1500)
    assert page.evaluate("document.body.dataset.plotsRendered || null") is None
    assert any("Plotly" in e for e in errors)  # tables and text still read; the figures need the asset
    assert "Fingerprints" in page.inner_text("main")
    ctx.close()


def test_log_axes_show_the_labelled_ticks(chromium, tmp_path):
    path = write_html(H200 / "run.json", tmp_path / "run.html", assets=tmp_path / "assets")
    ctx, page, _, _ = _open(chromium, path)
    _wait_drawn(page)
    figures = json.loads(page.locator("#attnscope-data").text_content())["figures"]
    for f in figures:
        axis = f["layout"].get("yaxis", {})
        if axis.get("type") != "log":
            continue
        shown = page.evaluate(
            f"() => Array.from(document.querySelectorAll('#{f['id']} .ytick text')).map(t => t.textContent)"
        )
        assert shown and set(shown) <= set(axis["ticktext"])
    ctx.close()


def test_the_model_legend_is_not_clipped(chromium, tmp_path):
    path = write_html([model_document()], tmp_path / "model.html", assets=tmp_path / "assets")
    ctx, page, _, _ = _open(chromium, path)
    _wait_drawn(page)
    figures = json.loads(page.locator("#attnscope-data").text_content())["figures"]
    split = next(f for f in figures if f["layout"].get("barmode") == "stack")
    box = page.evaluate(
        f"""() => {{
          const fig = document.getElementById('{split["id"]}');
          const svg = fig.querySelector('.main-svg').getBoundingClientRect();
          const items = Array.from(fig.querySelectorAll('.legend .traces')).map(t => t.getBoundingClientRect());
          return {{top: svg.top, bottom: svg.bottom, items: items.map(r => [r.top, r.bottom])}};
        }}"""
    )
    assert len(box["items"]) == len(split["data"])
    assert all(box["top"] <= t and b <= box["bottom"] for t, b in box["items"])
    ctx.close()
