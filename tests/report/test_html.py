"""The HTML report without a browser: what goes into the page, escaping, sniffing, the CLI."""

from __future__ import annotations

import base64
import hashlib
import html
import json
import re
from collections import defaultdict

import pytest

from attnscope.analysis.fingerprint.build import fingerprint
from attnscope.api.report import render_html
from attnscope.cli.main import main
from attnscope.report.html.page import embed_json, esc, plot_text
from attnscope.report.html.sweep import panel_axes, params
from attnscope.trace import load_trace
from tests.htmldocs import IMG_KERNEL, SCRIPT_VARIANT, h200_run, hostile_run, model_document, sweep_rows
from tests.rawtrace import DATA, H200, VARIANTS, raw_events, raw_gpu_events_in_call

pytest.importorskip("plotly")

DATA_BLOCK = re.compile(r'<script type="application/json" id="attnscope-data">(.*?)</script>', re.S)
SCRIPT = re.compile(r"<script>(.*?)</script>\n", re.S)


def figures(page: str) -> list[dict]:
    return json.loads(DATA_BLOCK.search(page).group(1))["figures"]


def without_scripts(page: str) -> str:
    """The HTML the page is made of, less its own inline scripts (plotly.js holds every kind of text)."""
    return SCRIPT.sub("", DATA_BLOCK.sub("", page))


@pytest.mark.parametrize("variant", VARIANTS)
def test_start_times_are_the_raw_event_timestamps(variant):
    raw = sorted(raw_gpu_events_in_call(raw_events(H200 / f"{variant}.json")), key=lambda e: e["ts"])
    ks = fingerprint(load_trace(H200 / f"{variant}.json")).kernels
    assert sorted(k.start_us for k in ks) == [e["ts"] for e in raw]


def test_run_timeline_reads_the_traces_beside_a_document_without_start_times():
    doc = h200_run()
    assert all("start_us" not in k for r in doc["results"] for k in r["kernels"])  # an older document
    page = render_html([H200 / "run.json"])
    timeline = figures(page)[0]
    bars = [t for t in timeline["data"] if t["type"] == "bar"]
    count: dict[str, int] = defaultdict(int)
    dur: dict[str, float] = defaultdict(float)
    for t in bars:
        for y, x in zip(t["y"], t["x"], strict=True):
            count[y] += 1
            dur[y] += x
    for v in VARIANTS:
        raw = raw_gpu_events_in_call(raw_events(H200 / f"{v}.json"))
        assert count[v] == len(raw), v  # sdpa_math 20 kernels, flash 1: every one drawn
        assert dur[v] == pytest.approx(sum(e["dur"] for e in raw)), v
        starts = [b for t in bars for y, b in zip(t["y"], t["base"], strict=True) if y == v]
        assert min(starts) == 0.0
        assert max(starts) == pytest.approx(max(e["ts"] for e in raw) - min(e["ts"] for e in raw))


def test_hostile_names_are_text_everywhere(tmp_path):
    page = render_html([hostile_run(tmp_path)], out_dir=tmp_path)
    html_only = without_scripts(page)
    assert "<script>window.__pwned" not in html_only
    assert "<img src=x" not in html_only
    assert esc(SCRIPT_VARIANT) in html_only  # shown, as text
    assert esc(IMG_KERNEL) in html_only
    block = DATA_BLOCK.search(page).group(1)
    assert "<" not in block and ">" not in block and "&" not in block
    text = json.dumps(figures(page))
    assert json.dumps(plot_text(SCRIPT_VARIANT))[1:-1] in text  # entities for plotly, which reads tags
    assert "<img" not in text and "<script" not in text
    assert 'href="./javascript%3Aalert%281%29.json"' not in html_only  # the trace is missing: no link at all
    assert "javascript:alert" not in re.findall(r'href="([^"]*)"', html_only)


def test_rate_above_the_measured_peak_is_flagged(tmp_path):
    page = without_scripts(render_html([hostile_run(tmp_path)]))
    row = next(r for r in page.split("<tr>") if "naive_inplace" in r and "st-ok" in r)
    assert "150.0 ⚠ &gt;100%: inconsistent" in row


def test_only_the_pages_own_scripts_may_run():
    page = render_html([H200 / "run.json"])
    csp = html.unescape(re.search(r'http-equiv="Content-Security-Policy" content="([^"]*)"', page).group(1))
    assert "default-src 'none'" in csp and "unsafe-eval" not in csp and "script-src 'unsafe-inline'" not in csp
    bodies = SCRIPT.findall(page)
    assert len(bodies) == 2  # plotly.js and the page script
    for b in bodies:
        digest = base64.b64encode(hashlib.sha256(b.encode()).digest()).decode()
        assert f"'sha256-{digest}'" in csp
    assert "http://" not in without_scripts(page).replace("https://ui.perfetto.dev", "")


def test_embed_json_round_trips_and_cannot_close_its_block():
    obj = {"k": "</script><!-- & <b>", "n": [1.5, None]}
    s = embed_json(obj)
    assert "</" not in s and "<!--" not in s
    assert json.loads(s) == obj
    assert json.loads(embed_json({"t": float("nan"), "u": (1, float("inf"))})) == {"t": None, "u": [1, None]}


def test_sweep_panels_crossovers_and_default():
    rows = sweep_rows()
    page = render_html([rows])
    html_only = without_scripts(page)
    for mode in ("fwd", "fwd_bwd"):
        for d in (64, 128):
            assert f"<h3>mode={mode}, head_dim={d}</h3>" in html_only
    # by construction flash is fastest at S=128 only (0.5 against cudnn's 0.8 per unit), cudnn after
    assert html_only.count("between S=128 and S=512: sdpa_flash → sdpa_cudnn") == 4
    assert html_only.count("1.62× slower") == 4  # sdpa_default 0.81 against flash 0.5 at S=128
    # 0.81 against 0.8 elsewhere: 0.81·0.98 < 0.8·1.02, the quartiles overlap
    assert html_only.count("1.01× (tied: quartiles overlap)") == 12 * 2  # margin (runner-up is the default) and default
    # one policy over all 16 points: flash is best at the 4 points with S=128, cudnn at the other 12
    assert html_only.count("<b>Policy: </b>S = 128 → sdpa_flash; otherwise sdpa_cudnn") == 1
    assert "<td>S = 128</td><td>sdpa_flash</td><td>4</td><td>4 (0)</td><td>none</td>" in html_only
    assert "<td>otherwise</td><td>sdpa_cudnn</td><td>12</td><td>12 (0)</td><td>none</td>" in html_only
    assert html_only.count("<td>128 → 512</td><td>sdpa_flash → sdpa_cudnn</td>") == 4  # every axis: only S
    # sdpa_default: tied with cudnn at the 12 points with S ≥ 512, 1.62× slower than flash at the 4 with S=128
    assert "best at 0, tied at 12, slower at 4 of 16 points" in html_only
    cmap = {t["name"]: t for t in figures(page)[0]["data"]}  # the crossover map comes first
    assert sorted(cmap) == ["sdpa_cudnn", "sdpa_flash"]
    assert (
        cmap["sdpa_flash"]["x"] == [128] * 4 and sorted(cmap["sdpa_cudnn"]["x"]) == [512] * 4 + [2048] * 4 + [8192] * 4
    )
    lines = [t for f in figures(page) for t in f["data"] if t.get("mode") == "lines+markers"]
    assert len(lines) == 4 * 2 * 4  # 4 panels × (time, TFLOP/s) × 4 variants; the oom row is not a point
    assert all(len(t["x"]) == 4 for t in lines)
    assert "CUDA out of memory" in html_only


def test_sweep_names_implementations_and_hides_changes_within_the_noise():
    """sweeps.py's impl_sweep: sdpa_default ran flash's kernel at S 128 and 256, cuDNN's after.
    By hand from its table: the best implementation per S and the next one, two crossovers beyond the noise and
    one within it (flash → cudnn at S 2048 → 4096, tied at 4096)."""
    from tests.analysis.recommend.sweeps import impl_sweep

    page = render_html([impl_sweep()])
    html_only = html.unescape(without_scripts(page))
    cells = [re.sub(r"<[^>]+>", "", c) for c in re.findall(r"<tr>(.*?)</tr>", html_only, re.S)]
    want = [
        "128flash (sdpa_flash = sdpa_default)10.0sdpa_cudnn1.20×best (the same kernels as sdpa_flash, 1.01×)",
        "256flash (sdpa_flash = sdpa_default)19.9sdpa_cudnn1.06×best",  # 21 / 19.9
        "512cudnn (sdpa_cudnn = sdpa_default)40.0sdpa_flash1.02× (tied: quartiles overlap)best",  # 41 / 40; 40.1 ≤ 40.2
        "1024cudnn (sdpa_cudnn = sdpa_default)80.0sdpa_flash1.25×best (the same kernels as sdpa_cudnn, 1.01×)",
        "2048sdpa_flash150.0cudnn (sdpa_cudnn = sdpa_default)1.07×1.07× slower",  # 160 / 150; default 161 / 150
        "4096cudnn (sdpa_cudnn = sdpa_default)300.0sdpa_flash1.01× (tied: quartiles overlap)"
        "best (the same kernels as sdpa_cudnn, 1.00×)",  # 302 / 300; 299 ≤ 303; default 301 / 300
    ]
    assert [c for c in cells if c[:3].isdigit() and "(" in c] == want
    assert (
        "Crossovers: between S=256 and S=512: sdpa_default (flash; = sdpa_flash) → sdpa_default (cudnn; = sdpa_cudnn); "
        "between S=1024 and S=2048: sdpa_cudnn (= sdpa_default) → sdpa_flash; "
        "1 more change within the noise: see --json"
    ) in html_only
    assert "Crossovers along every axis: where the best implementation changes (2)" in html_only
    assert "1 more change within the noise: see attnscope recommend --json" in html_only
    assert "sdpa_flash → sdpa_cudnn" not in html_only  # the change within the noise is only in the JSON
    assert "<b>Policy: </b>sdpa_default (cudnn at 4, flash at 2; = sdpa_cudnn at 4 of 6 points" in html_only
    cmap = {t["name"]: t for t in figures(page)[0]["data"]}  # one square per point, one name per implementation
    assert {k: v["x"] for k, v in cmap.items()} == {
        "sdpa_cudnn = sdpa_default": [512, 1024, 4096],
        "sdpa_flash = sdpa_default": [128, 256],
        "sdpa_flash": [2048],
    }
    assert cmap["sdpa_flash"]["marker"]["color"] == cmap["sdpa_flash = sdpa_default"]["marker"]["color"]


def test_sweep_leaves_a_compiled_row_that_ran_eager_code_out_of_plots_and_ranking():
    """A flex_compiled row with aten kernels only (dynamo's recompile limit reached: eager flex), timed fastest at
    S=128: it is neither plotted nor ranked, and the recommendation says why, as the terminal does."""
    from tests.analysis.recommend.sweeps import impl_sweep, row

    eager = row("flex_compiled", 128, 64, 5.0, 4.9, 5.1, kernels=[{"name": "aten_mul_kernel", "category": "other"}])
    eager |= {"family": "flex", "compile_time_s": 3.0, "device_kind": "gpu"}
    page = render_html([[*impl_sweep(), eager]])
    html_only = html.unescape(without_scripts(page))
    lines = [t["name"] for f in figures(page) for t in f["data"] if t.get("mode") == "lines+markers"]
    assert lines and "flex_compiled" not in lines
    assert "Left out of the comparison (1 row)" in html_only
    assert "<td>flex_compiled</td><td>compiled flex that ran eager flex: no kernel generated by torch.compile" in (
        html_only
    )
    assert "128flash (sdpa_flash = sdpa_default)10.0" in re.sub(r"<[^>]+>", "", html_only)  # not flex's 5.0


def test_sweep_batch_that_follows_seq_is_no_panel_axis():
    rows = []
    for s, b in ((512, 8), (1024, 4), (2048, 2)):
        for d in (64, 128):
            rows.append({"variant": "x", "status": "ok", "case": {"batch": b, "seq_q": s, "head_dim": d}})
    assert panel_axes([params(r) for r in rows]) == ["head_dim"]
    rows.append({"variant": "x", "status": "ok", "case": {"batch": 1, "seq_q": 512, "head_dim": 64}})
    assert panel_axes([params(r) for r in rows]) == ["head_dim", "batch"]


def test_model_shares():
    page = render_html([model_document()])
    html_only = without_scripts(page)
    # eager prefill: attention (900 + 300 + 300) µs of a 10,000 µs profiled step; kernel 9%, mlp the rest
    row = next(r for r in html_only.split("<tr>") if "<td>eager</td><td>prefill</td>" in r)
    cells = re.findall(r"<td>([^<]*)</td>", row)
    assert cells[3:8] == ["15.0%", "9.0%", "3.0%", "3.0%", "85.0%"]
    assert (
        "<td>eager · prefill</td><td>hidden copies</td><td>repeat_kv</td><td>aten::reshape</td><td>2</td>" in html_only
    )
    assert "no flash-attn" in html_only and "sdpa at 9,000.0 µs per step" in html_only
    split = next(f for f in figures(page) if f["layout"].get("barmode") == "stack")
    kernel = next(t for t in split["data"] if t["name"] == "attention: kernel")
    assert kernel["x"] == pytest.approx([9.0, 9.0, 3.0, 3.0])  # 900/10,000, 2,700/30,000, 300/10,000, 900/30,000
    assert all(sum(t["x"][i] for t in split["data"]) == pytest.approx(100.0) for i in range(4))


def test_report_cli_sniffs_every_kind(tmp_path, capsys):
    sweep = tmp_path / "sweep.jsonl"
    sweep.write_text("\n".join(json.dumps(r) for r in sweep_rows()) + '\n{"variant": "cut')
    model = tmp_path / "model.json"
    model.write_text(json.dumps(model_document()))
    analyze = tmp_path / "analyze.json"
    assert main(["analyze", str(H200 / "sdpa_math.json"), "--json", str(analyze)]) == 0
    out = tmp_path / "r" / "report.html"
    rc = main(["report", str(H200 / "run.json"), str(sweep), str(model), str(analyze), "-o", str(out)])
    assert rc == 0
    page = without_scripts(out.read_text())
    for h in ("<h2>Run: run.json</h2>", "<h2>Sweep: sweep.jsonl", "<h2>Model: tiny</h2>", "<h2>Analyze: analyze"):
        assert h in page
    assert "is not valid JSON (a torn write?): left out" in page
    assert "report written to" in capsys.readouterr().out


def test_analyze_html_flag(tmp_path):
    out = tmp_path / "a.html"
    assert main(["analyze", str(H200 / "sdpa_math.json"), "--html", str(out)]) == 0
    page = without_scripts(out.read_text())
    assert "GPU time by category" in page and "Top kernels and the ops that launched them" in page


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (None, "no such file"),
        ("", "empty file"),
        ("{not json", "not valid JSON"),
        ('{"schema_version": 1, "kind": "diff", "a": "x"}', "a diff document"),
        ('{"hello": 1}', "not an attnscope result document"),
        ("[1, 2]", "no result rows"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(tmp_path, capsys, content, message):
    f = tmp_path / "in.json"
    if content is not None:
        f.write_text(content)
    assert main(["report", str(f), "-o", str(tmp_path / "o.html")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and message in err and "Traceback" not in err
    assert not (tmp_path / "o.html").exists()


def test_run_html_flag_draws_from_the_documents_own_start_times(tmp_path):
    pytest.importorskip("torch")
    j, h = tmp_path / "r.json", tmp_path / "r.html"
    args = ["run", "--device", "cpu", "--batch", "1", "--heads", "2", "--seq", "64", "--head-dim", "16"]
    args += ["--dtype", "fp32", "--variants", "naive,sdpa_math", "--json", str(j), "--html", str(h), "--budget", "0.05"]
    assert main(args) == 0
    doc = json.loads(j.read_text())
    page = h.read_text()
    bars = [t for t in figures(page)[0]["data"] if t["type"] == "bar"]
    for r in doc["results"]:
        ks = r["kernels"]
        assert ks and all(k["start_us"] is not None for k in ks)  # no trace kept: the document carries them
        drawn = sorted(b for t in bars for y, b in zip(t["y"], t["base"], strict=True) if y == r["variant"])
        assert drawn == pytest.approx(sorted(k["start_us"] - min(x["start_us"] for x in ks) for k in ks))


def test_a_sweep_row_with_a_non_scalar_case_value_is_left_out_and_said(tmp_path):
    """A hand-edited or foreign row whose head_dim is a dict: no reader can take it, so it is left out like a torn
    line, the page says which line and why, and the other rows are drawn."""
    rows = [json.loads(line) for line in open("tests/data/cpu/tiny_sweep.jsonl")]
    rows[0]["case"]["head_dim"] = {"x": 1}
    src = tmp_path / "odd.jsonl"
    src.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    assert params(rows[0])["head_dim"] == '{"x": 1}'
    out = tmp_path / "odd.html"
    assert main(["report", str(src), "-o", str(out)]) == 0
    page = out.read_text()
    assert "line 1 is not a result row (case.head_dim must be a number or null, got dict): left out" in page
    assert html.escape('head_dim={"x": 1}') not in page


LOADED = {"loaded": True, "why": "load average 9.00 on 2 cores (4.50 per core, above 1.25)", "signs": ["load"]}
CAVEAT = (
    "host loaded: load average 9.00 on 2 cores (4.50 per core, above 1.25). Timings and rankings may be wrong: "
    "measure again on a quiet machine"
)


def _before(page: str, text: str, heading: str) -> bool:
    """``text`` appears on the page, above the first ``heading``."""
    return text in page and page.index(text) < page.index(heading)


@pytest.mark.parametrize("loaded", [True, False])
def test_the_host_caveat_tops_the_run_and_model_pages(loaded):
    from attnscope.report.html.tour import tour_page

    host = LOADED if loaded else {"loaded": False, "why": "no sign of a busy host", "signs": []}
    run = {**h200_run(), "host": host}
    model = {**model_document(), "host": host}
    tour = {"kind": "tour", "steps": [], "host": host, "score": {"text": "1 of 2"}}
    pages = [
        (without_scripts(render_html([run])), "<h3>Fingerprints</h3>"),
        (without_scripts(render_html([model])), "<h3>Where the step goes"),
        (without_scripts(tour_page(tour)), "<h2>Score</h2>"),
    ]
    for page, heading in pages:
        assert _before(page, html.escape(CAVEAT, quote=True), heading) is loaded
        assert ("host loaded" in page) is loaded


def test_analyze_page_has_every_step_and_the_graph_replays(tmp_path):
    """The real graph-replayed decode loop (tests/data/h100/serving): the page's steps table has one row per
    decode_step_<s> range of the raw trace, and the CUDA graph section counts its cudaGraphLaunch calls (both read
    from the raw JSON with the json module)."""
    import gzip
    import json
    import re

    trace = DATA / "h100" / "serving" / "decode_graph_replay.json.gz"
    ev = json.loads(gzip.open(trace).read())["traceEvents"]
    steps = [e for e in ev if e.get("cat") == "user_annotation" and e["name"].startswith("decode_step_")]
    launches = [e for e in ev if e.get("cat") == "cuda_runtime" and e["name"] == "cudaGraphLaunch"]
    assert steps and launches
    out = tmp_path / "a.html"
    assert main(["analyze", str(trace), "--html", str(out)]) == 0
    page = out.read_text()
    steps_part = page.split("<h4>Steps</h4>", 1)[1].split("<h4>", 1)[0]
    assert f"{len(steps):,} steps from" in steps_part
    assert len(re.findall(r"<tr>", steps_part)) == len(steps) + 1  # the header and one row per step
    graphs_part = page.split("<h4>CUDA graphs</h4>", 1)[1].split("<h4>", 1)[0]
    assert f"CUDA graphs: {len(launches):,} graph launch(es)" in graphs_part


def test_evidence_with_nothing_recorded_reads_a_dash_not_python_none():
    """The H200 decode cuDNN trace builds its mask with aten::ones and aten::tril that no other cpu_op encloses
    (read from the raw trace): the mask_rebuilt evidence's ``built_inside`` is null, and the page printed it as
    Python's "None"; a nested dict printed as Python's repr."""
    from attnscope.report.html.run import insights_block

    path = H200 / "decode" / "sdpa_cudnn.json"
    ops = [e for e in raw_events(path) if e.get("cat") == "cpu_op"]

    def enclosing(o):
        return [p for p in ops if p is not o and p["tid"] == o["tid"] and p["ts"] <= o["ts"] <= p["ts"] + p["dur"]]

    builds = [o for o in ops if o["name"] in ("aten::ones", "aten::tril")]
    assert builds and not any(enclosing(o) for o in builds)
    page = render_html([str(path)])
    body = re.sub(r"<script.*?</script>", "", page, flags=re.S)
    cells = [html.unescape(c) for c in re.findall(r"<td>(.*?)</td>", body, flags=re.S)]
    at = cells.index("built_inside")
    assert cells[at + 1] == "—" and "None" not in cells
    evidence = {
        "inside": None,
        "dims": [[4, 2048], [4, 2048]],
        "measured": {"verdict": "not_measured", "command": None},
    }
    said = str(
        insights_block(
            [{"variant": "v", "insights": [{"id": "x", "severity": "info", "message": "m", "evidence": evidence}]}]
        )
    )
    assert "None" not in said and "{" not in said
    assert "[4, 2048], [4, 2048]" in said and "verdict: not_measured; command: —" in said
