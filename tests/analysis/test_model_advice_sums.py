"""The model's advice: a saving is the difference of the timed step medians with its noise, and names the parts
it comes from; the upcast insight quotes the breakdown's own figure."""

from __future__ import annotations

from typing import Any

from attnscope.analysis.recommend.model_points import annotate_rows


def _row(
    impl: str, median: float, p25: float, p75: float, kernel: float, idle: float, profiled: float
) -> dict[str, Any]:
    parts = {"kernel": kernel, "projections": 100.0, "upcasts": 40.0}
    return {
        "impl": impl,
        "mode": "train",
        "status": "ok",
        "reason": None,
        "step_time": {
            "median_us": median,
            "p25_us": p25,
            "p75_us": p75,
            "noisy": False,
            "method": "wall time per step",
        },
        "attention": {
            "time_us": kernel + 140.0,
            "share": 0.3,
            "kernel_us": kernel,
            "around_us": 40.0,
            "projections_us": 100.0,
            "parts": parts,
            "hidden_copies": [],
            # the listed casts hold 25 µs of the part's 40 µs
            "upcasts": [{"op": "aten::to", "bytes": 1 << 20, "duration_us": 25.0}] if impl == "eager" else [],
        },
        "rest": {"time_us": 1000.0, "share": 0.5, "parts": {"mlp": 1000.0}},
        "breakdown": {
            "method": "GPU time",
            "total_us": kernel + 1140.0,
            "unattributed_us": 0.0,
            "step": {"step_us": profiled, "gpu_idle_us": idle, "cpu_only_us": 0.0, "unattributed_us": 0.0},
        },
        "insights": [],
    }


def test_saving_is_the_timed_difference_with_noise_and_parts():
    # a single profiled step of eager that was slow (90 ms) must not drive the figure: the medians do
    eager = _row("eager", 12_000.0, 11_800.0, 12_400.0, kernel=3_000.0, idle=2_000.0, profiled=90_000.0)
    sdpa = _row("sdpa", 9_000.0, 8_900.0, 9_100.0, kernel=1_000.0, idle=500.0, profiled=5_000.0)
    recs = annotate_rows([eager, sdpa])
    assert recs["train"]["best"] == "sdpa"
    [share] = [i for i in eager["insights"] if i["id"] == "attention_share"]
    # 12 000 − 9 000 = 3.00 ms, 25.0% of 12.00 ms; noise (600 + 200) / 2 = 400 µs
    assert "saves 3.00 ms per step (25.0% of 12.00 ms, measured step medians, ± 0.40 ms" in share["advice"]
    assert share["evidence"]["saved_us"] == 3000.0 and share["evidence"]["noise_us"] == 400.0
    # parts: kernel 3 000 − 1 000 = 2.00 ms, GPU idle 2 000 − 500 = 1.50 ms
    assert "comes from attention kernel 2.00 ms, GPU idle 1.50 ms" in share["advice"]


def test_upcast_insight_quotes_the_breakdown_part():
    eager = _row("eager", 12_000.0, 11_900.0, 12_100.0, kernel=3_000.0, idle=0.0, profiled=5_000.0)
    annotate_rows([eager])
    [up] = [i for i in eager["insights"] if i["id"] == "attention_upcast"]
    assert up["evidence"]["upcast_us"] == 40.0  # attention.parts.upcasts, the breakdown's figure (not the 25 µs listed)
    assert "40.0 µs" in up["message"]


def test_share_is_of_the_step_the_table_shows():
    eager = _row("eager", 12_000.0, 11_800.0, 12_400.0, kernel=3_000.0, idle=2_000.0, profiled=90_000.0)
    sdpa = _row("sdpa", 9_000.0, 8_900.0, 9_100.0, kernel=1_000.0, idle=500.0, profiled=5_000.0)
    annotate_rows([eager, sdpa])
    [share] = [i for i in eager["insights"] if i["id"] == "attention_share"]
    # attention 3 000 + 100 + 40 = 3 140 µs of the 90 000 µs profiled step (idle and CPU-only time included): 3.5%
    assert share["message"].startswith("attention is 3.5% of the train step (3,140.0 of 90,000.0 µs profiled)")

    from rich.console import Console

    from attnscope.report.text.model import render

    doc = {"case": {"points": [{"batch": 1, "seq": 16}]}, "results": [eager], "recommendations": {}}
    console = Console(width=200, record=True)
    render(doc, console, title="t")
    row = next(line for line in console.export_text().splitlines() if line.startswith("│ eager"))
    cells = [c.strip() for c in row.strip("│").split("│")]
    # attn %, …, unattr %, idle %, cpu-only %: idle 2 000 of 90 000 = 2.2%
    assert cells[4] == "3.5" and cells[10] == "2.2" and cells[9] == "0.0" and cells[11] == "0.0"
