"""The lighter page: `report --assets DIR` writes plotly once beside the pages and links it (named by its hash);
log axes carry labelled ticks; the model page's legend has room."""

from __future__ import annotations

import hashlib
import html
import json
import re

import pytest

from attnscope.api.report import render_html, write_html
from attnscope.cli.main import main
from attnscope.report.html.markup import log_ticks, tick_text
from tests.htmldocs import model_document, sweep_rows
from tests.rawtrace import H200

pytest.importorskip("plotly")
DATA_BLOCK = re.compile(r'<script type="application/json" id="attnscope-data">(.*?)</script>', re.S)


def test_a_page_with_shared_assets_is_small_and_links_one_file_named_by_its_hash(tmp_path):
    assets = tmp_path / "assets"
    run = write_html(H200 / "run.json", tmp_path / "pages" / "run.html", assets=assets)
    sweep = write_html([sweep_rows()], tmp_path / "pages" / "sweep.html", assets=assets)
    (asset,) = assets.iterdir()  # one file, shared
    body = asset.read_bytes()
    assert body.startswith(b"/**") or b"plotly" in body[:2000].lower()
    assert run.stat().st_size < 1_500_000 and asset.stat().st_size > 1_000_000
    for page in (run, sweep):
        text = page.read_text()
        assert f'<script src="../assets/{asset.name}"></script>' in text
        assert asset.name == f"plotly-{hashlib.sha256(body).hexdigest()[:12]}.min.js"
        csp = html.unescape(re.search(r'Content-Security-Policy" content="([^"]*)"', text).group(1))
        assert "script-src 'sha256-" in csp and "'self'" in csp and "http" not in csp and "*" not in csp
        assert body.decode()[:200] not in text  # plotly itself is not inside the page


def test_a_changed_asset_is_rewritten_by_the_next_page(tmp_path):
    write_html(H200 / "run.json", tmp_path / "a.html", assets=tmp_path / "assets")
    (asset,) = (tmp_path / "assets").iterdir()
    good = asset.read_bytes()
    asset.write_bytes(b"window.__changed = true;\n" + good)
    write_html(H200 / "run.json", tmp_path / "b.html", assets=tmp_path / "assets")
    assert asset.read_bytes() == good


def test_the_inline_page_holds_plotly_and_names_no_file(tmp_path):
    page = write_html(H200 / "run.json", tmp_path / "run.html").read_text()
    assert "<script src=" not in page
    assert len(page) > 3_000_000  # plotly.js inline: the self-contained default


def test_the_cli_writes_the_asset_and_says_where(tmp_path, capsys):
    out = tmp_path / "r.html"
    assert main(["report", str(H200 / "run.json"), "-o", str(out), "--assets", str(tmp_path / "a")]) == 0
    said = capsys.readouterr().out
    assert f"plotly shared in {tmp_path / 'a'}" in said
    assert len(list((tmp_path / "a").glob("plotly-*.min.js"))) == 1


@pytest.mark.parametrize(
    ("values", "x", "ticks"),
    [
        ([3.2, 870.0], False, [5, 10, 20, 50, 100, 200, 500, 1000]),  # 3.2/1.5 = 2.13 … 870*1.5 = 1305
        ([128, 256, 512, 4096], True, [128, 256, 512, 4096]),  # a few seq_len: themselves
        ([0.04, 0.3], False, [0.05, 0.1, 0.2]),  # 0.0267 … 0.45
        ([1.0, 1e9], False, [1.0, 10.0, 100.0, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9]),  # too many 1-2-5: decades
        ([100.0, 110.0], False, [100.0, 110.0]),  # inside one 1-2-5 step: the ends
    ],
)
def test_log_ticks(values, x, ticks):
    got = log_ticks(values, few_exact=x)
    assert got["tickvals"] == pytest.approx(ticks)
    assert len(got["ticktext"]) == len(ticks)


def test_tick_labels_read_at_a_glance():
    assert [tick_text(v) for v in (0.05, 2, 500, 1000, 20_000, 5e6, 1.5e3)] == [
        "0.05",
        "2",
        "500",
        "1k",
        "20k",
        "5M",
        "1.5k",
    ]


def test_every_log_axis_of_every_page_is_labelled():
    for docs in ([H200 / "run.json"], [sweep_rows()], [model_document()]):
        figures = json.loads(DATA_BLOCK.search(render_html(docs)).group(1))["figures"]
        logs = [
            f["layout"][a] for f in figures for a in ("xaxis", "yaxis") if f["layout"].get(a, {}).get("type") == "log"
        ]
        assert logs
        for axis in logs:
            assert axis["tickvals"] and len(axis["ticktext"]) == len(axis["tickvals"])


def test_the_model_split_figure_is_as_tall_as_its_legend():
    figures = json.loads(DATA_BLOCK.search(render_html([model_document()])).group(1))["figures"]
    split = next(f for f in figures if f["layout"].get("barmode") == "stack")
    legend_entries = len(split["data"])
    assert split["layout"]["height"] >= 60 + 22 * legend_entries


def test_assets_naming_a_file_is_one_line_and_exit_2(tmp_path, capsys):
    (tmp_path / "file").write_text("")
    out = tmp_path / "r.html"
    assert main(["report", str(H200 / "run.json"), "-o", str(out), "--assets", str(tmp_path / "file")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [f"attnscope: error: --assets {tmp_path / 'file'}: exists and is not a directory"]  # before any work
    assert not out.exists()


@pytest.mark.parametrize("command", ["run", "analyze", "sweep", "model"])
def test_assets_comes_with_html_on_every_command_that_writes_a_page(tmp_path, capsys, command):
    """Refused in one line before any work: --assets without --html, then --assets naming a file."""
    (tmp_path / "file").write_text("")
    first = {"run": [], "analyze": [str(H200 / "sdpa_flash.json")], "sweep": [], "model": ["--config", "llama"]}
    args = [command, *first[command], "--assets", str(tmp_path / "assets")]
    assert main(args) == 2
    assert capsys.readouterr().err.strip().splitlines() == [
        "attnscope: error: --assets holds the plotly of an HTML page: give --html PATH too"
    ]
    args = [command, *first[command], "--html", str(tmp_path / "p.html"), "--assets", str(tmp_path / "file")]
    if command == "sweep":
        args += ["--out", str(tmp_path / "rows.jsonl")]
    assert main(args) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [f"attnscope: error: --assets {tmp_path / 'file'}: exists and is not a directory"]
    assert not (tmp_path / "p.html").exists() and not (tmp_path / "rows.jsonl").exists()


def test_analyze_html_with_assets_links_the_shared_plotly(tmp_path):
    page, assets = tmp_path / "a.html", tmp_path / "assets"
    assert main(["analyze", str(H200 / "sdpa_flash.json"), "--html", str(page), "--assets", str(assets)]) == 0
    shared = list(assets.iterdir())
    assert len(shared) == 1 and shared[0].name.endswith(".js") and shared[0].stat().st_size > 1_000_000
    text = page.read_text()
    assert f'src="assets/{shared[0].name}"' in text and page.stat().st_size < 500_000
