"""Module attribution of a model step, pinned on synthetic traces whose answer is worked out by hand."""

from __future__ import annotations

from typing import Any

import pytest

from attnscope.analysis.fingerprint.model_split import breakdown
from attnscope.core.scopes import parse_scope, scope_name
from attnscope.trace import trace_from_doc
from tests.synth import PID, TID, doc, kernel, launch, op

BWD_TID = 200
BF16, F32 = "c10::BFloat16", "float"


def scope(role: str, path: str, ts: float, dur: float, tid: int = TID, backward: bool = False) -> dict[str, Any]:
    name = scope_name(role, path, backward=backward)
    return {"ph": "X", "cat": "user_annotation", "name": name, "pid": PID, "tid": tid, "ts": ts, "dur": dur}


def launched(name: str, ts: float, dur: float, ext: int, kdur: float, tid: int = TID, **args: Any) -> list[Any]:
    """An op at [ts, ts+dur] that launches one kernel of kdur µs (correlation id = ext)."""
    return [
        op(name, ts, dur, ext, tid=tid, **args),
        launch(ts + 1, corr=ext, ext=ext, dur=0.5, tid=tid),
        kernel(f"k_{ext}", 5000 + 100 * ext, kdur, corr=ext),
    ]


def _gpu_step() -> list[Any]:
    L = "model.layers.0"
    A = f"{L}.self_attn"
    ev = [
        scope("step", "train", 0, 2000),
        scope("mask", "create_causal_mask", 5, 5),
        *launched("aten::tril", 6, 2, 7, 13.0),
        scope("layer", L, 10, 490),
        scope("attention", A, 20, 280),
        scope("proj", f"{A}.q_proj", 25, 35),
        *launched("aten::linear", 26, 33, 1, 40.0),
        scope("repeat_kv", "repeat_kv", 70, 30),
        *launched("aten::copy_", 72, 26, 2, 7.0, **{"Input type": [BF16, BF16], "Input Dims": [[1, 2, 2, 16, 8]] * 2}),
        scope("core", "eager_attention_forward", 110, 140),
        *launched("aten::scaled_dot_product_attention", 120, 80, 3, 100.0),
        *launched("aten::copy_", 210, 20, 4, 11.0, **{"Input type": [F32, BF16], "Input Dims": [[1, 4, 16, 16]] * 2}),
        *launched("aten::add", 260, 10, 5, 3.0),
        scope("mlp", f"{L}.mlp", 310, 170),
        *launched("aten::mm", 320, 150, 6, 200.0),
        scope("loss", "", 600, 100),
        *launched("aten::nll_loss", 610, 50, 8, 17.0),
        *launched("aten::add", 800, 10, 9, 19.0),
        # backward, on the autograd thread, inside the attention's backward range
        scope("attention", A, 1000, 300, tid=BWD_TID, backward=True),
        op("autograd::engine::evaluate_function: ScaledDotProductFlashAttentionBackward0", 1010, 100, 10, tid=BWD_TID),
        *launched("aten::_flash_attention_backward", 1020, 80, 11, 50.0, tid=BWD_TID),
        op("autograd::engine::evaluate_function: MmBackward0", 1150, 100, 12, tid=BWD_TID),
        *launched("aten::mm", 1160, 80, 13, 30.0, tid=BWD_TID),
        op("autograd::engine::evaluate_function: NllLossBackward0", 1400, 50, 14, tid=BWD_TID),
        *launched("aten::nll_loss_backward", 1410, 30, 15, 9.0, tid=BWD_TID),
        # outside the step window: never counted
        *launched("aten::mm", 3000, 10, 16, 999.0),
    ]
    return ev


def test_scope_names_round_trip_and_others_are_ignored():
    assert parse_scope(scope_name("attention", "m.layers.3.self_attn", backward=True)).backward
    s = parse_scope(scope_name("core", "sdpa"))
    assert (s.role, s.path, s.backward) == ("core", "sdpa", False)
    assert parse_scope("Optimizer.step#AdamW.step") is None
    assert parse_scope("attnscope.model:nonsense:x") is None


def test_gpu_step_split_by_module_matches_hand_arithmetic():
    b = breakdown(trace_from_doc(doc(_gpu_step())))
    assert b is not None and b["device"] == "gpu"
    a = b["attention"]
    # forward: proj 40, repeat_kv 7, sdpa 100, upcast 11, other 3, mask 13; backward: sdpa bwd 50, mm bwd 30
    assert a["parts"]["kernel"] == pytest.approx(100 + 50)
    assert a["parts"]["projections"] == pytest.approx(40 + 30)
    assert a["parts"]["repeat_kv"] == pytest.approx(7)
    assert a["parts"]["upcasts"] == pytest.approx(11)
    assert a["parts"]["mask"] == pytest.approx(13)
    assert a["parts"]["other"] == pytest.approx(3)
    assert a["time_us"] == pytest.approx(40 + 7 + 100 + 11 + 3 + 13 + 50 + 30)
    assert a["kernel_us"] == pytest.approx(150)
    assert a["around_us"] == pytest.approx(7 + 11 + 3 + 13)
    rest = b["rest"]["parts"]
    assert rest["mlp"] == pytest.approx(200)
    assert rest["loss"] == pytest.approx(17)
    assert rest["other"] == pytest.approx(19)
    assert rest["backward_other"] == pytest.approx(9)
    attention = (40 + 7 + 100 + 11 + 3 + 13) + (50 + 30)
    total = attention + 200 + 17 + 19 + 9  # the kernel at ts 3000 lies outside the step
    assert b["total_us"] == pytest.approx(total)
    assert a["share"] == pytest.approx(round(attention / total, 4))


def test_gpu_step_copies_inside_attention_carry_their_part_and_size():
    a = breakdown(trace_from_doc(doc(_gpu_step())))["attention"]
    [c] = a["hidden_copies"]
    assert c["part"] == "repeat_kv" and c["layer"] == "model.layers.0"
    assert c["bytes"] == 1 * 2 * 2 * 16 * 8 * 2  # bf16 [1, 2, 2, 16, 8]
    assert c["duration_us"] == pytest.approx(7)
    [u] = a["upcasts"]
    assert u["bytes"] == 1 * 4 * 16 * 16 * 4 and u["part"] == "kernel"
    assert u["duration_us"] == pytest.approx(11)


def test_gpu_step_per_layer():
    [lay] = breakdown(trace_from_doc(doc(_gpu_step())))["layers"]
    assert lay["layer"] == "model.layers.0"
    # everything under the layer's forward range (mask and loss are outside it) plus the attention backward
    assert lay["attention_us"] == pytest.approx(40 + 7 + 100 + 11 + 3 + 50 + 30)
    assert lay["mlp_us"] == pytest.approx(200)
    assert lay["kernel_us"] == pytest.approx(150)


def test_cpu_step_uses_self_time_and_reports_time_outside_ops():
    events = [
        scope("step", "prefill", 0, 200),
        scope("attention", "m.layers.0.attn", 0, 100),
        scope("core", "sdpa", 5, 60),
        op("aten::scaled_dot_product_attention", 10, 50, 1),
        op("aten::_scaled_dot_product_flash_attention_for_cpu", 15, 40, 2),
        scope("mlp", "m.layers.0.mlp", 110, 70),
        op("aten::mm", 120, 50, 3),
    ]
    b = breakdown(trace_from_doc(doc(events)))
    assert b["device"] == "cpu"
    assert b["attention"]["kernel_us"] == pytest.approx(50)  # 10 µs self + 40 µs child, counted once
    assert b["rest"]["parts"]["mlp"] == pytest.approx(50)
    assert b["total_us"] == pytest.approx(200)
    assert b["unattributed_us"] == pytest.approx(100)


def test_trace_without_model_ranges_gives_none():
    assert breakdown(trace_from_doc(doc([op("aten::mm", 0, 10, 1)]))) is None


def _module(name: str, ts: float, dur: float, tid: int = TID) -> dict[str, Any]:
    """A with_stack python_function range of a module's forward."""
    return {
        "ph": "X",
        "cat": "python_function",
        "name": f"nn.Module: {name}",
        "pid": PID,
        "tid": tid,
        "ts": ts,
        "dur": dur,
        "args": {"Python id": 1, "Python parent id": 0},
    }


def _with_stack_step() -> list[Any]:
    return [
        _module("LlamaDecoderLayer_0", 0, 500),
        _module("LlamaRMSNorm_0", 1, 9),
        *launched("aten::rsqrt", 2, 5, 1, 4.0),
        _module("LlamaAttention_0", 10, 200),
        _module("Linear_0", 12, 30),
        *launched("aten::linear", 13, 25, 2, 40.0),
        *launched("aten::scaled_dot_product_attention", 50, 100, 3, 90.0),
        _module("LlamaMLP_0", 220, 200),
        *launched("aten::mm", 230, 150, 4, 120.0),
        op("autograd::engine::evaluate_function: MmBackward0", 600, 50, 5, tid=BWD_TID),
        *launched("aten::mm", 610, 30, 6, 60.0, tid=BWD_TID),
    ]


def test_with_stack_module_ranges_split_the_forward(tmp_path):
    from attnscope.trace import load_trace
    from tests.synth import write_kineto

    for tr in (
        trace_from_doc(doc(_with_stack_step())),
        load_trace(write_kineto(tmp_path / "t.json", doc(_with_stack_step()))),
    ):
        assert [m.name for m in tr.modules][:2] == ["nn.Module: LlamaDecoderLayer_0", "nn.Module: LlamaRMSNorm_0"]
        b = breakdown(tr)
        assert b["scopes"]["source"].startswith("with_stack") and not b["scopes"]["backward"]
        a = b["attention"]
        assert a["projections_us"] == pytest.approx(40) and a["kernel_us"] == pytest.approx(90)
        assert b["rest"]["parts"]["mlp"] == pytest.approx(120)
        assert b["rest"]["parts"]["norm"] == pytest.approx(4)
        assert b["rest"]["parts"]["backward_other"] == pytest.approx(60)  # no module ranges in the backward
        assert a["share"] == pytest.approx(round(130 / (4 + 40 + 90 + 120 + 60), 4))
        assert [lay["layer"] for lay in b["layers"]] == ["LlamaDecoderLayer_0"]


def test_a_multi_step_trace_is_split_on_its_last_step():
    """Two profiled steps (a warm-up, then the measured one): only the last step's kernels are counted."""
    events = [
        scope("step", "train", 0, 1000),
        scope("attention", "m.layers.0.attn", 10, 500),
        scope("core", "sdpa", 20, 400),
        *launched("aten::scaled_dot_product_attention", 30, 300, 1, 500.0),
        scope("step", "train", 2000, 1000),
        scope("attention", "m.layers.0.attn", 2010, 200),
        scope("core", "sdpa", 2020, 150),
        *launched("aten::scaled_dot_product_attention", 2030, 100, 2, 70.0),
        scope("mlp", "m.layers.0.mlp", 2300, 400),
        *launched("aten::mm", 2310, 300, 3, 30.0),
    ]
    b = breakdown(trace_from_doc(doc(events)))
    assert b["attention"]["kernel_us"] == pytest.approx(70)  # the warm-up's 500 µs kernel is not in it
    assert b["rest"]["parts"]["mlp"] == pytest.approx(30)
    assert b["total_us"] == pytest.approx(70 + 30)
    assert b["attention"]["share"] == pytest.approx(0.7)


def test_cpu_shares_are_of_the_step_span_time_outside_ops_included():
    """CPU: 50 µs of attention and 50 µs of MLP in a 200 µs step: 25 % each, not 50 % (of the ops alone)."""
    events = [
        scope("step", "prefill", 0, 200),
        scope("attention", "m.layers.0.attn", 0, 100),
        scope("core", "sdpa", 5, 60),
        op("aten::scaled_dot_product_attention", 10, 50, 1),
        scope("mlp", "m.layers.0.mlp", 110, 70),
        op("aten::mm", 120, 50, 2),
    ]
    b = breakdown(trace_from_doc(doc(events)))
    assert b["attention"]["share"] == pytest.approx(50 / 200)
    assert b["rest"]["share"] == pytest.approx(50 / 200)
    [lay] = b["layers"]
    assert lay["attention_share"] == pytest.approx(50 / 200)


def test_a_cast_back_inside_the_attention_core_during_backward_is_an_upcast():
    """Backward of an fp32 softmax: ToCopyBackward0 runs inside the core function's backward range; its
    kernel (6 µs) is an upcast, the matmul backward's (40 µs) is the kernel."""
    core_bwd = "eager_attention_forward"
    events = [
        scope("step", "train", 0, 1000),
        scope("attention", "m.layers.0.attn", 10, 100),
        scope("core", core_bwd, 20, 80),
        *launched("aten::matmul", 30, 50, 1, 20.0),
        scope("attention", "m.layers.0.attn", 500, 300, tid=BWD_TID, backward=True),
        scope("core", core_bwd, 510, 250, tid=BWD_TID, backward=True),
        op("autograd::engine::evaluate_function: ToCopyBackward0", 520, 60, 2, tid=BWD_TID),
        *launched("aten::_to_copy", 530, 40, 3, 6.0, tid=BWD_TID),
        op("autograd::engine::evaluate_function: UnsafeViewBackward0", 600, 100, 4, tid=BWD_TID),
        *launched("aten::bmm", 610, 80, 5, 40.0, tid=BWD_TID),
    ]
    a = breakdown(trace_from_doc(doc(events)))["attention"]
    assert a["parts"]["upcasts"] == pytest.approx(6)
    assert a["parts"]["kernel"] == pytest.approx(20 + 40)
    assert a["time_us"] == pytest.approx(20 + 6 + 40)


def test_the_lm_head_range_is_its_own_part_of_the_rest():
    """An lm_head range (annotate names the model's output projection so) holds 25 µs of the step's 35."""
    events = [
        scope("step", "prefill", 0, 1000),
        scope("attention", "m.layers.0.attn", 10, 100),
        *launched("aten::scaled_dot_product_attention", 20, 80, 1, 10.0),
        scope("lm_head", "lm_head", 200, 100),
        *launched("aten::linear", 210, 80, 2, 25.0),
    ]
    b = breakdown(trace_from_doc(doc(events)))
    assert b["rest"]["parts"]["lm_head"] == pytest.approx(25)
    assert b["rest"]["parts"]["other"] == pytest.approx(0)
    assert b["rest"]["share"] == round(25 / 35, 4)  # shares are given to 4 places


def test_gpu_step_document_by_hand_layers_scopes_and_an_unattributed_kernel():
    """_gpu_step plus one kernel (8 µs) launched inside the step from no op: it is unattributed."""
    events = [*_gpu_step(), launch(900, corr=20, ext=None), kernel("k_orphan", 6000, 8.0, corr=20)]
    b = breakdown(trace_from_doc(doc(events)))
    assert b["method"] == (
        "GPU time of the kernels, memcpys and memsets of one profiled step, each given to the op that launched "
        "it and from that op to the attnscope.model ranges around it"
    )
    assert b["unattributed_us"] == pytest.approx(8)
    attention = (40 + 7 + 100 + 11 + 3 + 13) + (50 + 30)
    total = attention + 200 + 17 + 19 + 9 + 8
    assert b["total_us"] == pytest.approx(total)
    assert b["attention"]["share"] == round(attention / total, 4)
    assert b["attention"]["projections_us"] == pytest.approx(70)
    # 10 ranges: step, mask, layer, attention, proj, repeat_kv, core, mlp, loss, the attention's backward
    assert b["scopes"] == {
        "num": 10,
        "core": True,
        "backward": True,
        "source": "attnscope.model ranges",
        "impl": "eager",
        "mode": "train",
    }
    [lay] = b["layers"]
    # in the layer: attention 241 (kernel 150, projections 70, around 7 + 11 + 3), MLP 200; the mask and the
    # loss lie outside it
    assert lay == {
        "layer": "model.layers.0",
        "attention_us": 241.0,
        "around_us": 21.0,
        "kernel_us": 150.0,
        "mlp_us": 200.0,
        "projections_us": 70.0,
        "total_us": 441.0,
        "attention_share": round(241 / total, 4),
    }


def test_cpu_trace_without_a_step_range_spans_its_ops_and_names_no_single_core():
    events = [
        scope("attention", "m.layers.1.attn", 100, 100),
        scope("core", "eager_attention_forward", 105, 40),
        op("aten::bmm", 110, 30, 1),
        scope("core", "sdpa", 150, 40),
        op("aten::scaled_dot_product_attention", 155, 30, 2),
        scope("attention", "m.layers.10.attn", 300, 50),
        op("aten::mm", 310, 20, 3),
        scope("attention", "m.layers.2.attn", 400, 100),
        op("aten::mm", 410, 40, 4),
    ]
    b = breakdown(trace_from_doc(doc(events)))
    assert b["method"].startswith("self time of each op of one profiled step (CPU), given to the attnscope.model")
    assert b["method"].endswith("the step's wall time outside any op is 'unattributed'")
    # no step range: the ops' span, 110 → 450 = 340 µs; in ops 30 + 30 + 20 + 40 = 120
    assert b["total_us"] == pytest.approx(340) and b["unattributed_us"] == pytest.approx(220)
    assert b["scopes"]["impl"] is None and b["scopes"]["mode"] is None and b["scopes"]["core"] is True
    # layers in numeric order, not text order (10 after 2)
    assert [lay["layer"] for lay in b["layers"]] == ["m.layers.1", "m.layers.2", "m.layers.10"]
    assert [lay["total_us"] for lay in b["layers"]] == [60.0, 40.0, 20.0]


def test_one_core_name_is_the_implementation_eager_s_function_read_as_eager():
    for name, impl in (("eager_attention_forward", "eager"), ("sdpa", "sdpa"), ("flex_attention", "flex_attention")):
        events = [
            scope("step", "prefill", 0, 100),
            scope("attention", "m.layers.0.attn", 0, 50),
            scope("core", name, 5, 40),
            op("aten::mm", 10, 30, 1),
        ]
        assert breakdown(trace_from_doc(doc(events)))["scopes"]["impl"] == impl


def test_ops_on_the_step_s_edges_are_inside_it():
    """An op that starts as the step starts and ends as it ends is counted; one a microsecond outside is not."""
    events = [
        scope("step", "prefill", 100, 100),
        scope("attention", "m.layers.0.attn", 100, 100),
        op("aten::mm", 100, 100, 1),
        scope("mlp", "m.layers.0.mlp", 99, 103),
        op("aten::add", 99, 2, 2),
        op("aten::add", 199, 2, 3),
    ]
    b = breakdown(trace_from_doc(doc(events)))
    assert b["attention"]["time_us"] == pytest.approx(100) and b["rest"]["time_us"] == pytest.approx(0)


def test_copies_by_dtype_layers_from_an_mlp_range_and_summed_mlp_kernels():
    """Inside attention: a bf16←fp32 cast (a downcast: neither a copy nor an upcast), an fp32←fp32 copy (a copy,
    4·8·4 B) and an fp32←bf16 cast (an upcast).  An MLP range with no layer range names the layer; its two
    kernels (20 + 30 µs) add up."""
    dims = {"Input Dims": [[4, 8], [4, 8]]}
    events = [
        scope("step", "train", 0, 1000),
        scope("attention", "m.layers.3.attn", 10, 300),
        *launched("aten::copy_", 20, 20, 1, 5.0, **{"Input type": [BF16, F32], **dims}),
        *launched("aten::copy_", 50, 20, 2, 6.0, **{"Input type": [F32, F32], **dims}),
        *launched("aten::copy_", 80, 20, 3, 7.0, **{"Input type": [F32, BF16], **dims}),
        scope("mlp", "m.layers.3.mlp", 400, 300),
        *launched("aten::mm", 410, 50, 4, 20.0),
        *launched("aten::mm", 500, 50, 5, 30.0),
    ]
    b = breakdown(trace_from_doc(doc(events)))
    a = b["attention"]
    assert a["parts"]["copies"] == pytest.approx(6) and a["parts"]["upcasts"] == pytest.approx(7)
    assert a["parts"]["kernel"] == pytest.approx(5)  # the downcast is the attention's own work here
    [c] = a["hidden_copies"]
    assert c["bytes"] == 4 * 8 * 4 and not c["backward"]
    assert [u["bytes"] for u in a["upcasts"]] == [4 * 8 * 4]
    [lay] = b["layers"]
    assert lay["layer"] == "m.layers.3" and lay["mlp_us"] == pytest.approx(50)
    assert lay["total_us"] == pytest.approx(5 + 6 + 7 + 50)


def test_cpu_ops_that_start_together_nest_by_length_and_count_once():
    """mm (10–35) holds linear (10–30): mm's self time 5 plus linear's 20, the 25 µs they span."""
    events = [
        scope("step", "prefill", 0, 100),
        scope("attention", "m.layers.0.attn", 0, 100),
        op("aten::linear", 10, 20, 1),
        op("aten::mm", 10, 25, 2),
    ]
    b = breakdown(trace_from_doc(doc(events)))
    assert b["attention"]["time_us"] == pytest.approx(25)


def _split_by_hand() -> dict:
    """A CPU split whose parts add up by hand: attention 600 (kernel 400, rotary 200) + rest 300 (mlp) +
    unattributed 100 = a 1000 µs profiled step; one layer; one upcast of 50 µs."""
    return {
        "device": "cpu",
        "total_us": 1000.0,
        "attention": {
            "time_us": 600.0,
            "share": 0.6,
            "kernel_us": 400.0,
            "around_us": 200.0,
            "projections_us": 0.0,
            "parts": {"kernel": 400.0, "rotary": 200.0},
            "hidden_copies": [{"bytes": 4096, "dims": [1, 2], "duration_us": None}],
            "upcasts": [{"bytes": 2048, "duration_us": 50.0}],
        },
        "rest": {"time_us": 300.0, "share": 0.3, "parts": {"mlp": 300.0}},
        "unattributed_us": 100.0,
        "layers": [{"layer": "l.0", "total_us": 900.0, "attention_us": 600.0, "attention_share": 0.6}],
        "scopes": {"num": 3, "core": True},
        "step": {"step_us": 1000.0, "attention_us": 600.0, "rest_us": 300.0, "unattributed_us": 100.0},
    }


def test_a_profiled_step_far_longer_than_the_timed_one_is_scaled_to_it():
    """Profiled 1000 µs, timed 80 µs: 12.5× (beyond 1.25×), so every µs is × 0.08: kernel 32, rotary 16,
    mlp 24, unattributed 8, the step 80 and the upcast 4; shares, bytes and dims stay."""
    from attnscope.analysis.fingerprint.model_split import fit_to_timed

    out = fit_to_timed(_split_by_hand(), 80.0)
    p = out["profile"]
    assert p["scaled"] is True and p["profiled_over_timed"] == 12.5
    assert p["profiled_step_us"] == 1000.0 and p["timed_step_us"] == 80.0
    a = out["attention"]
    assert (a["time_us"], a["kernel_us"], a["around_us"]) == (48.0, 32.0, 16.0)
    assert a["parts"] == {"kernel": 32.0, "rotary": 16.0}
    assert a["share"] == 0.6 and out["rest"]["share"] == 0.3
    assert a["upcasts"][0] == {"bytes": 2048, "duration_us": 4.0}
    assert a["hidden_copies"][0] == {"bytes": 4096, "dims": [1, 2], "duration_us": None}
    assert out["rest"]["parts"] == {"mlp": 24.0} and out["unattributed_us"] == 8.0
    assert out["step"]["step_us"] == 80.0 and out["total_us"] == 80.0
    assert out["layers"][0] == {"layer": "l.0", "total_us": 72.0, "attention_us": 48.0, "attention_share": 0.6}
    assert out["scopes"] == {"num": 3, "core": True}
    assert "12.50×" in p["method"] and "0.0800" in p["method"]


def test_a_profiled_step_within_1_25x_either_way_keeps_its_us():
    """1000 profiled against 801 timed (1.248×) and 1249 timed (0.8006×): within the bound, µs as profiled;
    against 799 (1.2516×) it is scaled."""
    from attnscope.analysis.fingerprint.model_split import fit_to_timed

    for timed in (801.0, 1249.0):
        out = fit_to_timed(_split_by_hand(), timed)
        assert out["profile"]["scaled"] is False
        assert out["attention"]["kernel_us"] == 400.0
    assert fit_to_timed(_split_by_hand(), 799.0)["profile"]["scaled"] is True
    assert fit_to_timed(_split_by_hand(), 1251.0)["profile"]["scaled"] is True
    assert "profile" not in fit_to_timed(_split_by_hand(), None)


def test_fit_to_timed_reads_the_step_span_first_and_its_bounds():
    """step 1000 µs (the span) beside total_us 900 (the GPU-time sum): the span is the profiled step."""
    from attnscope.analysis.fingerprint.model_split import fit_to_timed

    s = _split_by_hand()
    s["total_us"] = 900.0
    out = fit_to_timed(s, 80.0)
    assert out["profile"]["profiled_step_us"] == 1000.0
    del s["step"]
    assert fit_to_timed(s, 80.0)["profile"]["profiled_step_us"] == 900.0  # no span: the total
    assert "profile" not in fit_to_timed({"total_us": 0.0}, 80.0)
    assert "profile" not in fit_to_timed({}, 80.0)
    assert "profile" not in fit_to_timed(_split_by_hand(), -5.0)
    small = fit_to_timed(_split_by_hand(), 0.5)  # a sub-µs timed step is still a step: 2000×
    assert small["profile"]["scaled"] is True and small["profile"]["profiled_over_timed"] == 2000.0
    tiny = {**_split_by_hand(), "step": {"step_us": 0.5}}
    assert fit_to_timed(tiny, 0.04)["profile"]["profiled_over_timed"] == 12.5
    assert fit_to_timed(_split_by_hand(), 800.0)["profile"]["scaled"] is False  # exactly 1.25
    assert fit_to_timed(_split_by_hand(), 1250.0)["profile"]["scaled"] is False  # exactly 1/1.25
    p = fit_to_timed(_split_by_hand(), 801.0)["profile"]
    assert p["profiled_over_timed"] == 1.248  # 1000/801 = 1.2484…
    assert p["method"] == "the profiled step took 1.25× the timed median (within 1.25× either way): µs as profiled"
    q = fit_to_timed(_split_by_hand(), 80.0)["profile"]
    assert q["method"] == (
        "the profiled step took 12.50× the timed median (beyond 1.25× either way): every µs of the split is scaled "
        "by 0.0800 (timed / profiled), the profiled step's shares applied to the timed step: an estimate, since the "
        "profiler's cost is per op"
    )


def test_an_op_on_a_thread_without_ranges_or_autograd_node_is_other_not_backward():
    """An op on a thread that carries no attnscope.model range and runs under no autograd node: the rest's
    'other' (its kernel's 4 µs), not 'backward_other'."""
    events = [
        scope("step", "train", 0, 1000),
        scope("attention", "m.layers.0.attn", 10, 100),
        *launched("aten::matmul", 30, 50, 1, 20.0),
        *launched("aten::add", 300, 10, 2, 4.0, tid=300),
    ]
    rest = breakdown(trace_from_doc(doc(events)))["rest"]
    assert rest["parts"]["other"] == pytest.approx(4) and rest["parts"]["backward_other"] == 0


def test_a_copy_in_a_backward_range_is_tagged_backward_without_an_autograd_node():
    """bf16 → bf16 copies of [1, 2, 16, 8] (512 B) inside attention: one in the forward range, one in the backward
    range with no autograd node above it; each tagged by its range."""
    cp = {"Input type": [BF16, BF16], "Input Dims": [[1, 2, 16, 8]] * 2}
    events = [
        scope("step", "train", 0, 1000),
        scope("attention", "m.layers.0.attn", 10, 100),
        *launched("aten::copy_", 30, 20, 1, 3.0, **cp),
        scope("attention", "m.layers.0.attn", 500, 300, tid=BWD_TID, backward=True),
        *launched("aten::copy_", 520, 20, 2, 5.0, tid=BWD_TID, **cp),
    ]
    copies = breakdown(trace_from_doc(doc(events)))["attention"]["hidden_copies"]
    got = sorted((c["backward"], c["duration_us"], c["bytes"]) for c in copies)
    assert got == [(False, 3.0, 512), (True, 5.0, 512)]


def test_shares_of_a_step_shorter_than_one_microsecond():
    """A 0.5 µs step (0.3 µs attention, 0.2 µs rest): shares 0.6 and 0.4, not 0."""
    events = [
        scope("step", "train", 0, 1000),
        scope("attention", "m.layers.0.attn", 10, 100),
        *launched("aten::matmul", 30, 50, 1, 0.3),
        *launched("aten::add", 300, 10, 2, 0.2),
    ]
    s = breakdown(trace_from_doc(doc(events)))
    assert s["total_us"] == pytest.approx(0.5)
    assert s["attention"]["share"] == pytest.approx(0.6) and s["rest"]["share"] == pytest.approx(0.4)


def test_a_cpu_step_its_ops_fill_has_nothing_unattributed():
    """Ops back to back over the whole 100 µs step: 60 µs attention, 40 µs mlp, 0 outside any op."""
    events = [
        scope("step", "prefill", 0, 100),
        scope("attention", "m.layers.0.attn", 0, 60),
        op("aten::matmul", 0, 60, 1),
        scope("mlp", "m.layers.0.mlp", 60, 40),
        op("aten::mm", 60, 40, 2),
    ]
    b = breakdown(trace_from_doc(doc(events)))
    assert b["device"] == "cpu" and b["total_us"] == pytest.approx(100)
    assert b["attention"]["time_us"] == pytest.approx(60) and b["rest"]["parts"]["mlp"] == pytest.approx(40)
    assert b["unattributed_us"] == 0


def _step_range(i: int, ts: float, dur: float) -> dict[str, Any]:
    return {"ph": "X", "cat": "user_annotation", "name": f"attnscope.step[decode] {i}", "pid": PID, "tid": TID,
            "ts": ts, "dur": dur}  # fmt: skip


def test_each_step_of_a_decode_loop_is_split_on_its_own_window():
    """Three attnscope.step ranges: steps 0 and 1 each hold a step scope, an attention scope from the range's first
    µs (its matmul starting there too) and an add outside attention; step 2 holds no attention scope."""
    A = "m.layers.0.attn"
    events = [
        _step_range(0, 0, 500),
        scope("step", "decode", 0, 500),
        scope("attention", A, 0, 100),
        *launched("aten::matmul", 0, 50, 1, 30.0),
        *launched("aten::add", 200, 10, 2, 10.0),
        _step_range(1, 1000, 500),
        scope("step", "decode", 1000, 500),
        scope("attention", A, 1000, 100),
        *launched("aten::matmul", 1000, 50, 3, 50.0),
        *launched("aten::add", 1200, 10, 4, 10.0),
        _step_range(2, 2000, 100),
        *launched("aten::add", 2010, 10, 5, 7.0),
    ]
    from attnscope.analysis.fingerprint.model_split import breakdown_per_step

    got = breakdown_per_step(trace_from_doc(doc(events)))
    # step 0: 30 of 40 µs attention (0.75); step 1: 50 of 60 (0.8333)
    assert got == [
        {"attention_us": 30.0, "rest_us": 10.0, "unattributed_us": 0.0, "total_us": 40.0, "attention_share": 0.75},
        {"attention_us": 50.0, "rest_us": 10.0, "unattributed_us": 0.0, "total_us": 60.0, "attention_share": 0.8333},
        {"attention_us": None, "rest_us": None, "unattributed_us": None, "total_us": None, "attention_share": None},
    ]
