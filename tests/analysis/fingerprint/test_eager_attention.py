"""Attention written out as ops: a matmul → softmax → matmul chain on the scores' shape is attention; a softmax alone
(a classifier's head, an MoE router, a softmax over weights) is not, and advice that names attention variants stays
off such a trace.  Hand-made traces give the shapes (written in each test); the committed ones are read with the
json module for the facts the expectations rest on."""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any

from attnscope.analysis.fingerprint.build import analyse
from attnscope.analysis.fingerprint.eager_attention import holds_attention
from attnscope.trace import trace_from_doc
from tests.rawtrace import H200, raw_events
from tests.synth import doc, kernel, launch, op, write_kineto

ROOT = Path(__file__).resolve().parents[3]
SAMPLED = ROOT / "tests" / "data" / "hta" / "trace_filter_sampled_rank-0.json.gz"


def _op(name: str, ts: float, dims: list[Any], concrete: list[str] | None = None, ext: int | None = None) -> Any:
    extra: dict[str, Any] = {"Input Dims": dims}
    if concrete is not None:
        extra["Concrete Inputs"] = concrete
    return op(name, ts, 5.0, ext, **extra)


def _softmax(ts: float, dims: list[int], dim: str = "-1", dur: float = 10.0, ext: int | None = None) -> Any:
    return op("aten::softmax", ts, dur, ext, **{"Input Dims": [dims, [], []], "Concrete Inputs": ["", dim, ""]})


def _eager_layer(t0: float, b: int = 2, h: int = 4, sq: int = 16, sk: int = 16, d: int = 8) -> list[Any]:
    """One eager attention, as torch.matmul records it: the 4-d matmul with its 3-d bmm inside, the softmax with
    its _softmax inside, then the product with V (each op 5 µs, nested ones starting 1 µs later)."""
    return [
        op("aten::matmul", t0, 10.0, None, **{"Input Dims": [[b, h, sq, d], [b, h, d, sk]]}),
        _op("aten::bmm", t0 + 1, [[b * h, sq, d], [b * h, d, sk]]),
        _op("aten::mul", t0 + 20, [[b, h, sq, sk], []]),
        _softmax(t0 + 40, [b, h, sq, sk]),
        _op("aten::_softmax", t0 + 41, [[b, h, sq, sk], [], []], ["", "-1", "False"]),
        op("aten::matmul", t0 + 60, 10.0, None, **{"Input Dims": [[b, h, sq, sk], [b, h, sk, d]]}),
        _op("aten::bmm", t0 + 61, [[b * h, sq, sk], [b * h, sk, d]]),
    ]  # fmt: skip


def _chains(events: list[Any]) -> list[dict[str, Any]]:
    return list(analyse(trace_from_doc(doc(events))).fingerprint.eager_attention)


def test_a_matmul_softmax_matmul_chain_is_attention_counted_per_call() -> None:
    # two layers of B=2, H=4, Sq=Sk=16: the softmax sees [2, 4, 16, 16], the bmms [8, 16, 8] @ [8, 8, 16]
    assert _chains(_eager_layer(0) + _eager_layer(100)) == [
        {"ops": ["aten::matmul", "aten::softmax", "aten::matmul"], "scores_dims": [2, 4, 16, 16], "num_chains": 2}
    ]
    # Sq != Sk (a decode step over a cache): [..., 1, 64] scores, the product with V [..., 64, 8]
    assert _chains(_eager_layer(0, sq=1, sk=64)) == [
        {"ops": ["aten::matmul", "aten::softmax", "aten::matmul"], "scores_dims": [2, 4, 1, 64], "num_chains": 1}
    ]


def test_the_naive_h200_trace_holds_one_chain_on_the_softmax_shape() -> None:
    """tests/data/h200/naive.json: the softmax's recorded Input Dims are the chain's scores (read with json)."""
    ops = [e for e in raw_events(H200 / "naive.json") if e.get("cat") == "cpu_op"]
    (soft,) = [e["args"]["Input Dims"][0] for e in ops if e["name"] == "aten::softmax"]
    assert soft == [4, 16, 2048, 2048]  # B=4, H=16, S=2048 (the README's case)
    from attnscope.api.batch import analyze_traces

    d, errors = analyze_traces([H200 / "naive.json"])
    assert d is not None and errors == []
    (r,) = d["results"]
    assert r["attention_calls"] == [] and r["eager_attention"] == [
        {"ops": ["aten::matmul", "aten::softmax", "aten::matmul"], "scores_dims": soft, "num_chains": 1}
    ]
    assert holds_attention(r)


def test_a_softmax_without_the_product_with_values_is_no_attention() -> None:
    head = [  # a classifier's head: logits = linear(x), then softmax over the 10 classes
        op("aten::linear", 0, 20.0, None, **{"Input Dims": [[8, 512], [10, 512], [10]]}),
        _op("aten::addmm", 1, [[10], [8, 512], [512, 10], [], []]),
        _op("aten::softmax", 40, [[8, 10], [], []], ["", "-1", ""]),
    ]
    assert _chains(head) == []
    router = [  # an MoE router: linear to 4 experts, softmax, top-2, then each expert's batched product
        op("aten::linear", 0, 20.0, None, **{"Input Dims": [[32, 64], [4, 64]]}),
        _op("aten::matmul", 1, [[32, 64], [64, 4]]),
        _op("aten::softmax", 40, [[32, 4], [], []], ["", "-1", ""]),
        _op("aten::topk", 60, [[32, 4], [], [], [], []]),
        _op("aten::bmm", 80, [[4, 16, 64], [4, 64, 128]]),
    ]
    assert _chains(router) == []
    # scores of the right shape, but the softmax runs over dim 1 (the heads), not over the keys
    across = _eager_layer(0)
    across[3] = _softmax(40, [2, 4, 16, 16], dim="1")
    across[4] = _op("aten::_softmax", 41, [[2, 4, 16, 16], [], []], ["", "1", "False"])
    assert _chains(across) == []
    # the ops of a chain without record_shapes: nothing links them
    bare = [op(e["name"], e["ts"], e["dur"], None) for e in _eager_layer(0)]
    assert _chains(bare) == []


def test_a_chain_inside_an_attention_op_is_that_call_not_another() -> None:
    """SDPA's math backend runs matmul, softmax, matmul inside its op: the call is in attention_calls already."""
    inner = [{**e, "ts": e["ts"] + 1} for e in _eager_layer(0)]
    math = op("aten::_scaled_dot_product_attention_math", 0, 200.0, None)
    assert _chains([math, *inner]) == []


def test_the_sampled_ranking_trace_has_a_softmax_and_no_attention() -> None:
    """HTA's sampled trace (a ranking model) runs softmax over a [2, 1] weight and then mm([2048, 2], [2, 1]) under
    fb::convex_sum, with softmax kernels on the GPU: no product made the softmax's input, so no attention."""
    raw = json.loads(gzip.open(SAMPLED).read())["traceEvents"]
    softmax_dims = {str(e["args"].get("Input Dims")) for e in raw if e.get("name") == "aten::softmax"}
    assert softmax_dims == {"[[2, 1], [], []]"}
    assert any("softmax_warp_forward" in e["name"] for e in raw if e.get("cat") == "kernel")
    from attnscope.api.batch import analyze_traces

    d, errors = analyze_traces([SAMPLED])
    assert d is not None and errors == []
    (r,) = d["results"]
    assert any(k["category"] == "softmax" for k in r["kernels"])  # what made the old test say attention
    assert r["eager_attention"] == [] and r["attention_calls"] == []
    assert not holds_attention(r)


def _head_with_fill(t0: float = 0.0) -> list[Any]:
    """A classifier's head whose logits are masked out of place (masked_fill's clone: a DtoD copy of 1 MiB), with
    the softmax kernel on the GPU."""
    return [
        op("aten::linear", t0, 20.0, 1, **{"Input Dims": [[512, 4096], [512, 4096]]}),
        op("aten::masked_fill", t0 + 30, 100.0, 2, **{"Input Dims": [[512, 512], [512, 512], []]}),
        op("aten::clone", t0 + 35, 80.0, 3),
        op("aten::copy_", t0 + 40, 60.0, 4),
        launch(t0 + 50, corr=11, ext=4, name="cudaMemcpyAsync"),
        kernel("Memcpy DtoD (Device -> Device)", t0 + 200, 40.0, corr=11, cat="gpu_memcpy", bytes=1 << 20),
        _softmax(t0 + 150, [512, 512], dur=20.0, ext=5),
        launch(t0 + 155, corr=12, ext=5),
        kernel("void (anonymous namespace)::softmax_warp_forward<float, float, float, 9, false, false>", t0 + 260,
               10.0, corr=12),
    ]  # fmt: skip


def test_a_classifier_trace_named_after_a_variant_gets_no_attention_advice(tmp_path: Path) -> None:
    """The trace's name (naive.json, a built-in variant's) is no evidence of attention: what the trace shows is."""
    from attnscope.api.batch import analyze_traces

    path = write_kineto(tmp_path / "naive.json", doc(_head_with_fill()))
    d, errors = analyze_traces([path])
    assert d is not None and errors == []
    (r,) = d["results"]
    assert [k["category"] for k in r["kernels"] if k["category"] != "memcpy"] == ["softmax"]
    (fill,) = [i for i in r["insights"] if i["id"] == "hidden_copy"]
    assert fill["advice"] == (
        "use the in-place form (masked_fill_) where the input is not needed afterwards, or a fused variant that "
        "does the step inside one kernel"
    )
    assert "naive_inplace_measured" not in fill["evidence"]
    # the same trace with an eager attention before the head: attention is there, the advice names its backends
    path = write_kineto(tmp_path / "naive.json", doc(_eager_layer(-200) + _head_with_fill()))
    d, _ = analyze_traces([path])
    assert d is not None
    (fill,) = [i for i in d["results"][0]["insights"] if i["id"] == "hidden_copy"]
    assert "a fused SDPA backend (flash, cuDNN, efficient) that never materialises the scores" in fill["advice"]
