"""The tour as a reader meets it: its H200 references count kernels as the study does and as the tour measures them
(checked against the committed H200 run document), its page renders code, names units and uses the run page's
colours, and its GPU-only parts stay off a CPU tour."""

from __future__ import annotations

import json
import re
from pathlib import Path

from attnscope.report.html.timeline import CATEGORY_COLOURS
from attnscope.report.html.tour import prose, tour_page
from attnscope.tour.steps import STEPS

ROOT = Path(__file__).resolve().parents[2]
H200_RUN = json.loads((ROOT / "tests" / "data" / "h200" / "run.json").read_text())
NUM_KERNELS = {r["variant"]: r["num_kernels"] for r in H200_RUN["results"]}
BY_ID = {s.id: s for s in STEPS}

# (step, the variant its reference counts, the pattern that reads the count out of the reference)
COUNTS = [
    ("naive", "naive", r"^(\d+) kernels per call"),
    ("inplace", "naive_inplace", r"the same (\d+) kernels"),
    ("math", "sdpa_math", r"^(\d+) kernels per call"),
    ("fused", "sdpa_flash", r"flash: (\d+) kernel"),
]


def test_each_reference_count_is_the_h200_runs_count_of_compute_kernels():
    """The committed H200 run counts compute kernels apart from Memcpy/Memset (naive: 5 + 1 memcpy + 1 memset);
    the tour's references say the same numbers, so "measured 5" never sits beside "7 kernels per call"."""
    for step, variant, pattern in COUNTS:
        text = " ".join(BY_ID[step].h200)
        m = re.search(pattern, text)
        assert m is not None, (step, text)
        assert int(m.group(1)) == NUM_KERNELS[variant], (step, variant)


def test_prose_renders_backticks_as_code_and_escapes_the_rest():
    assert prose("use `masked_fill_` not `masked_fill` & <b>") == (
        "use <code>masked_fill_</code> not <code>masked_fill</code> &amp; &lt;b&gt;"
    )
    assert prose("an odd ` backtick") == "an odd ` backtick"  # unmatched: shown as written


def _visible(html: str) -> str:
    """The page's text outside scripts, styles and attributes' JSON (the plot data)."""
    html = re.sub(r"<script.*?</script>|<style.*?</style>", "", html, flags=re.S)
    return re.sub(r"<[^>]+>", "", html)


def test_the_committed_cpu_transcript_page_has_no_literal_backticks_and_units_on_every_axis():
    t = json.loads((ROOT / "docs" / "results" / "tour_cpu.json").read_text())
    html = tour_page(t)
    assert "`" not in _visible(html)
    assert "<code>masked_fill_</code>" in html
    data = re.search(r'<script type="application/json" id="attnscope-data">(.*?)</script>', html, re.S)
    assert data is not None
    figures = json.loads(data.group(1))["figures"]
    axes = [f["layout"][ax]["title"] for f in figures for ax in ("xaxis", "yaxis")]
    assert figures and all(axes)
    assert all("(µs)" in f["layout"]["xaxis"]["title"] for f in figures)
    colours = {tr["marker"]["color"] for f in figures for tr in f["data"]}
    assert colours <= {*CATEGORY_COLOURS.values(), "#1f77b4"}  # the run page's palette, nothing of its own


def test_gpu_only_parts_stay_off_a_cpu():
    """The cuDNN host-cost step needs a GPU; the decode step explains itself without SMs on a CPU."""
    assert BY_ID["cudnn_host"].gpu_only
    assert "SM" not in BY_ID["decode"].why_cpu and "overhead-bound" in BY_ID["decode"].why_cpu
