"""`attnscope diff`'s terminal text where the two files share no variant: one line that says nothing was compared
and why, not a table of headers with no row."""

from __future__ import annotations

import io

from attnscope.api.diff import diff
from attnscope.report.text.diff import render_diff
from attnscope.report.text.terminal import console
from tests.rawtrace import DATA, H200, raw_events

# 64 SDPA calls with an explicit attn_mask tensor, whose pattern a trace does not record: no case is read
DATA_H100_DECODE = DATA / "h100" / "serving" / "decode_eager.json.gz"


def _doc(*variants: str) -> dict[str, object]:
    rows = [{"variant": v, "status": "ok", "kernels": [], "cpu_time_us": 1.0} for v in variants]
    return {"results": rows}


def _text(d: dict[str, object], width: int = 80) -> str:
    out = io.StringIO()
    render_diff(d, console(file=out, width=width, color_system=None), title="attnscope diff: a → b")
    return out.getvalue()


def test_no_variant_in_both_says_nothing_was_compared() -> None:
    text = _text(diff(_doc("llama_train_sdpa"), _doc("naive", "sdpa_default")))
    assert "no variant in both files (variants pair by name): nothing compared" in text
    assert "┏" not in text  # no empty table
    assert "only in A: llama_train_sdpa" in text and "only in B: naive, sdpa_default" in text


def test_a_shared_variant_is_a_table_row() -> None:
    text = _text(diff(_doc("naive", "flex"), _doc("naive", "sdpa_default")))
    assert "nothing compared" not in text
    assert "┏" in text and "│ naive" in text


def test_long_only_in_and_regression_lines_wrap_under_their_own_text() -> None:
    """At 80 columns the list of variants only one file has wraps under its first name, not at column 0 (H200's
    nine study variants against the H100's three paged ones), and so does a regression line."""
    a = _doc("naive", "naive_inplace", "sdpa_math", "sdpa_efficient", "sdpa_flash", "sdpa_cudnn", "sdpa_default")
    b = _doc("paged_gather_sdpa", "paged_flex_compiled", "paged_flashinfer")
    lines = _text(diff(a, b)).splitlines()
    at = next(i for i, line in enumerate(lines) if "only in A:" in line)
    assert lines[at].startswith("  • only in A: naive, ")
    assert lines[at + 1].startswith(" " * 4) and lines[at + 1].strip().startswith("sdpa_")
    assert all(len(line.rstrip()) <= 80 for line in lines)
    slow = {"results": [{"variant": "x" * 30, "status": "ok", "kernels": [], "cpu_time_us": 100.0}]}
    slower = {"results": [{"variant": "x" * 30, "status": "ok", "kernels": [], "cpu_time_us": 250.0}]}
    d = diff(slow, slower, threshold_pct=5)
    lines = _text(d, width=50).splitlines()
    at = next(i for i, line in enumerate(lines) if line.startswith("  ✗ "))
    assert lines[at + 1].startswith(" " * 4)
    said = " ".join(line.strip() for line in lines[at : at + 3])
    assert "cpu_time_us 100.0 → 250.0 (+150.0% > 5%)" in said  # 250 / 100 − 1 = +150%


def test_two_traces_of_different_gpus_say_so_and_one_pair_is_not_named_on_every_line() -> None:
    """The Llama SDPA step (an H200) against a one-rank DDP step (an H100), the GPUs read from each raw trace's
    ``deviceProperties``: an analyze document records no environment, so the device change was said only among
    the changed flags, and every detail line repeated the one pair's name before the kernel."""
    import gzip
    import json

    from attnscope.api.diff import diff_files
    from tests.rawtrace import DATA

    a, b = DATA / "llama_train_sdpa.json.gz", DATA / "ranks_ddp_h100" / "rank0.json.gz"
    names = [json.loads(gzip.open(p).read())["deviceProperties"][0]["name"] for p in (a, b)]
    assert names == ["NVIDIA H200", "NVIDIA H100 80GB HBM3"]
    d = diff_files(a, b)
    assert f"device: {names[0]} → {names[1]}" in d["context_changes"]
    lines = _text(d, width=120).splitlines()
    assert any(line.startswith(f"  ≠ not the same setting: device: {names[0]} → {names[1]}") for line in lines)
    details = [line for line in lines if line.startswith("  • ") and "GPU time" in line]
    assert details and all(line.startswith("  • ") and " → " in line for line in details)
    pair = d["variants"][0]["variant"]
    assert not [line for line in lines if line.startswith(f"  • {pair}: ")]
    # a document that records its device in the environment says it there, once
    env_a, env_b = {"device_name": names[0]}, {"device_name": names[1]}
    ra = {"variant": "v", "status": "ok", "kernels": [], "device_name": names[0]}
    rb = {"variant": "v", "status": "ok", "kernels": [], "device_name": names[1]}
    said = diff({"env": env_a, "results": [ra]}, {"env": env_b, "results": [rb]})["context_changes"]
    assert said == [f"env device_name: {names[0]} → {names[1]}"]


def test_several_pairs_keep_their_names_on_each_detail_line() -> None:
    rows = [{"variant": v, "status": "ok", "cpu_time_us": 1.0, "kernels": []} for v in ("naive", "flex")]
    other = [dict(r, kernels=[{"name": "k", "category": "gemm", "duration_us": 1.0}]) for r in rows]
    lines = _text(diff({"results": rows}, {"results": other}), width=120).splitlines()
    assert "  • naive: + k (gemm, ×1)" in lines and "  • flex: + k (gemm, ×1)" in lines


def test_two_traces_of_different_cases_say_each_field_that_differs() -> None:
    """The H200 flash study's cuDNN call against the same variant at the large case: the shapes from each raw
    trace's aten::scaled_dot_product_attention (query [B, H, S, D]); an analyze document has no case at its top,
    so the 161.8% slower call was said with no word that the two calls solve different problems."""
    from attnscope.api.diff import diff_files
    from tests.rawtrace import H200_BIG

    a, b = H200 / "sdpa_cudnn.json", H200_BIG / "sdpa_cudnn.json"
    shapes = []
    for p in (a, b):
        (op,) = [e for e in raw_events(p) if e.get("name") == "aten::scaled_dot_product_attention"]
        shapes.append(op["args"]["Input Dims"][0])
    (ba, ha, sa, da), (bb, hb, sb, db) = shapes
    said = diff_files(a, b)["context_changes"]
    for key, x, y in (("batch", ba, bb), ("heads", ha, hb), ("seq_q", sa, sb), ("head_dim", da, db)):
        assert (f"case {key}: {x} → {y}" in said) == (x != y), key
    assert sum(x != y for x, y in zip(*shapes, strict=True)) == 4  # all four differ here
    assert not [s for s in said if s.startswith("device")]  # both on the H200
    # a trace whose calls give no one case against one that does: one line, not each field against nothing
    one = diff_files(H200 / "decode" / "sdpa_cudnn.json", DATA_H100_DECODE)["context_changes"]
    assert "case: only A names one (B is a trace or names none): the cases could not be compared" in one
