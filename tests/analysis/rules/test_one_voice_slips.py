"""Lines of one output that must not contradict each other."""

from __future__ import annotations

from attnscope.analysis.rules.mask_build import _mask_advice


def _ev(backend: str | None, dims: list[int]) -> dict[str, object]:
    return {"mask": "causal_lower_right", "dims": dims, "backend": backend, "built_inside": None}


def test_a_dense_lower_right_build_under_flash_is_not_called_flash_refusing() -> None:
    text = _mask_advice({"kernels": []}, _ev("flash", [1, 8192]))
    assert "neither flash nor efficient can take the call" not in text
    assert "SDPA ran flash, which applies the lower-right mask inside the kernel" in text
    # one query, lower-right: every key is kept, so no mask is needed at all
    assert "it sees all 8192 keys" in text


def test_under_cudnn_the_fallback_is_named() -> None:
    text = _mask_advice({"kernels": []}, _ev("cudnn", [4, 8]))
    assert "neither flash nor efficient can take the call (here SDPA ran cuDNN)" in text


# ---- the dense-mask and block-sparsity advice against the recommendation (issue 19's document-mask run)

DOC_CASE = {
    "batch": 2,
    "heads": 16,
    "seq_q": 4096,
    "head_dim": 64,
    "dtype": "bf16",
    "causal": False,
    "device": "cuda",
    "mask": "document:1000,1500,600,996",
}


def _row(variant: str, median: float, spread: float, **kw: object) -> dict[str, object]:
    return {
        "variant": variant,
        "status": "ok",
        "device_kind": "gpu",
        "case": DOC_CASE,
        "gpu_time_us": median,
        "gpu_time": {"median_us": median, "p25_us": median - spread, "p75_us": median + spread, "num_samples": 50},
        **kw,
    }


def _doc_rows(flex_us: float, spread: float = 2.0) -> list[dict[str, object]]:
    return [
        _row("sdpa_default", 559.0, spread, family="sdpa", dense_mask=True, sdpa_backend="cudnn"),
        _row(
            "flex_compiled",
            flex_us,
            spread,
            family="flex",
            compile_time_s=4.0,
            block_sparsity_pct=60.0,
            block_size=[128, 128],
        ),
    ]


def _advice(doc: dict[str, object], variant: str, rule: str) -> str:
    from attnscope.analysis.annotate import annotate

    out = annotate(doc)
    r = next(r for r in out["results"] if r["variant"] == variant)
    return next(i["advice"] for i in r["insights"] if i["id"] == rule)


def test_dense_mask_advice_names_the_recommendation_when_flex_measured_slower() -> None:
    from attnscope.analysis.annotate import annotate

    doc = {"results": _doc_rows(582.0)}
    assert annotate(doc)["recommendation"]["best"] == "sdpa_default"
    advice = _advice(doc, "sdpa_default", "dense_mask")
    assert "keep sdpa_default at this case" in advice
    assert "flex_compiled measured 582.0 µs here, 1.04× slower than sdpa_default (559.0 µs" in advice
    assert "torch.compile(flex_attention)" not in advice
    sparsity = _advice(doc, "flex_compiled", "block_sparsity")
    assert "nothing to fix" not in sparsity and "do not make flex the fastest here" in sparsity


def test_inside_the_noise_the_advice_stands() -> None:
    doc = {"results": _doc_rows(562.0, spread=5.0)}  # quartiles overlap: no one is slower
    assert "torch.compile(flex_attention)" in _advice(doc, "sdpa_default", "dense_mask")
    assert "nothing to fix" in _advice(doc, "flex_compiled", "block_sparsity")


def test_flex_faster_keeps_the_flex_advice() -> None:
    doc = {"results": _doc_rows(186.0)}
    assert "torch.compile(flex_attention)" in _advice(doc, "sdpa_default", "dense_mask")


# ---- the single-row masked_fill advice against the same table (issue 19's decode: naive_inplace 194× slower)

DECODE = {"batch": 8, "heads": 32, "seq_q": 1, "seq_kv": 8192, "head_dim": 128, "dtype": "bf16", "device": "cuda"}


def _decode(variant: str, median: float, **kw: object) -> dict[str, object]:
    row = _row(variant, median, 1.0, family="naive", **kw)
    row["case"] = DECODE
    return row


MASKED_FILL = {"op": "aten::masked_fill", "copy_op": "aten::copy_", "bytes": 1 << 20, "dims": [8, 32, 1, 8192]}


def test_masked_fill_advice_drops_naive_inplace_when_the_table_shows_it_slower() -> None:
    doc = {"results": [_decode("naive", 100.0, hidden_copies=[MASKED_FILL]), _decode("naive_inplace", 19400.0)]}
    advice = _advice(doc, "naive", "hidden_copy")
    assert "(naive_inplace), or" not in advice and advice.startswith("use a fused SDPA backend")
    assert "naive_inplace measured 19,400.0 µs here, 194.00× slower than naive (100.0 µs)" in advice


def test_masked_fill_advice_cites_naive_inplace_where_it_measured_faster() -> None:
    faster = {"results": [_decode("naive", 100.0, hidden_copies=[MASKED_FILL]), _decode("naive_inplace", 50.0)]}
    assert _advice(faster, "naive", "hidden_copy") == (
        "use the in-place masked_fill_ on the scores: naive_inplace measured 50.0 µs here, 2.00× faster than naive "
        "(100.0 µs); or a fused SDPA backend (flash, cuDNN, efficient) that never materialises the scores"
    )


def test_masked_fill_advice_tied_says_memory_not_time() -> None:
    """Quartiles 95..105 and 96..106 µs overlap: a tie, so in place is not claimed faster."""
    rows = [_row("naive", 100.0, 5.0, hidden_copies=[MASKED_FILL]), _row("naive_inplace", 101.0, 5.0)]
    for r in rows:
        r["case"] = DECODE
    advice = _advice({"results": rows}, "naive", "hidden_copy")
    assert advice.startswith("use a fused SDPA backend")
    assert "saves the copy's memory but not time here: naive_inplace measured 101.0 µs, tied within the noise" in advice


def test_masked_fill_advice_unmeasured_says_so_and_how_to_measure() -> None:
    """Without a naive_inplace row the advice claims nothing of its speed and gives the command that measures it:
    the case's flags, read back by the command line's own parser, make the same case."""
    import shlex

    from attnscope.cli.flags import case_fields
    from attnscope.cli.main import build_parser
    from attnscope.core.case import Case
    from attnscope.core.cases import make_case

    case = {**DECODE, "causal": False}  # a document's case has every key; without one, causal takes its default
    row = _decode("naive", 100.0, hidden_copies=[MASKED_FILL])
    row["case"] = case
    advice = _advice({"results": [row]}, "naive", "hidden_copy")
    assert "faster" not in advice.split(";")[0]
    prefix = "whether in place is faster is not measured here: attnscope run --variants naive,naive_inplace "
    assert prefix in advice and advice.endswith(" measures it")
    command = advice[advice.index(prefix) + len(prefix) - len("attnscope run --variants naive,naive_inplace ") :]
    argv = shlex.split(command.removesuffix(" measures it"))[1:]
    assert argv[:3] == ["run", "--variants", "naive,naive_inplace"]
    args = build_parser(argv).parse_args(argv)
    assert make_case(args.device, **case_fields(args)) == Case.from_dict(case)


def test_masked_fill_advice_says_naive_inplace_ran_without_a_time() -> None:
    failed = {
        "results": [
            _decode("naive", 100.0, hidden_copies=[MASKED_FILL]),
            {"variant": "naive_inplace", "status": "oom", "case": DECODE},
        ]
    }
    advice = _advice(failed, "naive", "hidden_copy")
    assert "not measured here (naive_inplace ran here: oom, no time to compare): attnscope run" in advice


# ---- fwd_bwd under cuDNN: the forward kernel's µs are not given under the backward op's name


def test_opaque_library_splits_the_time_by_launching_op() -> None:
    from attnscope.analysis.rules.execution import opaque_library

    fwd = "cudnn_generated_fort_native_sdpa_sm90_flash_fprop_wgmma_f16_knob_3"
    bwd = "cudnn_generated_fort_native_sdpa_sm90_flash_bprop_wgmma_f16_knob_7"
    ks = [
        {"name": fwd, "category": "attention", "duration_us": 100.0, "launched_by": "aten::_cudnn_attention_forward"},
        {"name": bwd, "category": "attention", "duration_us": 240.0, "launched_by": "aten::_cudnn_attention_backward"},
        {"name": bwd, "category": "attention", "duration_us": 10.5, "launched_by": "aten::_cudnn_attention_backward"},
    ]
    [i] = opaque_library({"variant": "sdpa_cudnn", "kernels": ks, "source": "run"})
    assert i.evidence["by_op"] == [
        {"op": "aten::_cudnn_attention_forward", "num_kernels": 1, "us": 100.0},
        {"op": "aten::_cudnn_attention_backward", "num_kernels": 2, "us": 250.5},
    ]
    assert "1 launched by aten::_cudnn_attention_forward, 100.0 µs" in i.message
    assert "2 launched by aten::_cudnn_attention_backward, 250.5 µs" in i.message
    # the total (350.5) is never said to be launched by the backward op alone
    assert "launched by aten::_cudnn_attention_backward)" not in i.message


# ---- eager flex is not "CPU-bound, the GPU waits for launches": its H200 trace holds a pageable copy


def test_eager_flex_from_its_h200_trace_waits_on_the_device() -> None:
    from pathlib import Path

    from attnscope.analysis.rules.execution import cpu_bound
    from attnscope.api import analyze
    from attnscope.document.schema import result_to_dict

    trace = Path(__file__).resolve().parents[2] / "data" / "h200" / "flex.json"
    r = result_to_dict(analyze(trace, "flex"))
    # host time above the GPU time, as a run measures it: the trace's kernels decide what the host waited on
    r.update(source="run", cpu_time_us=2.0 * (r["gpu_time_us"] or 1.0), gpu_time_us=r["gpu_time_us"] or 1.0)
    (i,) = cpu_bound(r)
    assert i.id == "host_waits_on_device"
    assert "CPU-bound, the GPU waits" not in i.message
    assert i.evidence["synchronising_copy"] == "Memcpy HtoD (Pageable -> Device)"


def test_masked_fill_advice_on_the_h200_study_cites_the_measured_rows() -> None:
    """The H200 study's naive and naive_inplace launch the same compute kernels (the copy is the difference), so
    only the noise may tie them: their quartiles, read from the raw JSON, lie apart, and the advice cites both."""
    import json
    from pathlib import Path

    raw = json.loads((Path(__file__).resolve().parents[3] / "docs/results/raw/study/run_all.json").read_text())
    t = {r["variant"]: r["gpu_time"] for r in raw["results"] if r["variant"] in ("naive", "naive_inplace")}
    assert t["naive_inplace"]["p75_us"] < t["naive"]["p25_us"]
    advice = _advice(raw, "naive", "hidden_copy")
    mine, other = t["naive"]["median_us"], t["naive_inplace"]["median_us"]
    assert advice.startswith(
        f"use the in-place masked_fill_ on the scores: naive_inplace measured {other:,.1f} µs here, "
        f"{mine / other:.2f}× faster than naive ({mine:,.1f} µs)"
    )
