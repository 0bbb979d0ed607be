"""A model grid's pure parts (api/modeling.py), on a hand-made config: which store rows belong to the grid, the
model document's head and its rows' order, each row's kept trace name and the jobs planned.  No transformers: the
config is a plain namespace with the fields they read."""

from __future__ import annotations

import json
from types import SimpleNamespace

import pytest

from attnscope.api.modeling import ModelGrid, jobs, model, model_document, same_run, trace_names, wall_timings
from attnscope.document.schema import MODEL_SCHEMA_VERSION

SPEC = SimpleNamespace(
    name="tiny", source="preset", about="a two-layer llama", values={"vocab_size": 1000, "hidden_size": 64}
)
CFG = SimpleNamespace(
    model_type="llama", hidden_size=64, num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2,
    intermediate_size=128, vocab_size=1000,
)  # fmt: skip
GRID = ModelGrid(SPEC, CFG, None, ["prefill", "train"], [(1, 64), (2, 128)], "fp32", "cpu")
IMPLS = ["sdpa", "eager"]


def _row(**case: object) -> dict:
    base = {"config": "tiny", "layers": 2, "batch": 1, "seq": 64, "dtype": "fp32", "device": "cpu", "mode": "train"}
    return {"impl": "sdpa", "case": {**base, **case}}


def test_a_row_of_this_grid_belongs_to_it() -> None:
    assert same_run(_row(), GRID, IMPLS) and same_run(_row(batch=2, seq=128, mode="prefill"), GRID, IMPLS)


@pytest.mark.parametrize(
    "other",
    [
        {"config": "llama-3-8b"},
        {"layers": 3},
        {"dtype": "bf16"},
        {"device": "cuda"},
        {"mode": "decode"},
        {"batch": 2},  # (2, 64) is no point of the grid, though 2 and 64 are each in one
        {"seq": 128},
    ],
)
def test_a_row_that_differs_in_one_field_is_another_grids(other: dict) -> None:
    assert not same_run(_row(**other), GRID, IMPLS)


def test_a_row_of_another_implementation_or_without_a_case_is_not_this_grids() -> None:
    assert not same_run({**_row(), "impl": "flash_attention_2"}, GRID, IMPLS)
    assert not same_run({"impl": "sdpa", "case": "tiny"}, GRID, IMPLS)
    assert not same_run({"impl": "sdpa"}, GRID, IMPLS)


def test_the_model_document_has_its_head_and_its_rows_in_the_grids_order() -> None:
    rows = [
        {"impl": "eager", "mode": "prefill", "batch": 1, "seq": 64},
        {"impl": "sdpa", "mode": "train", "batch": 2, "seq": 128},
        {"impl": "sdpa", "mode": "train", "batch": 9, "seq": 9},  # a point the grid lacks: after its points
        {"impl": "sdpa", "mode": "prefill"},  # no point: the first
        {"impl": "sdpa", "mode": "train", "batch": 1, "seq": 64},
        {"impl": "sdpa", "mode": "prefill", "batch": 2, "seq": 128},
    ]
    doc = model_document(GRID, IMPLS, rows, {"torch": "2.13"}, None, partial=True)
    order = [(r["impl"], r.get("batch"), r.get("seq"), r["mode"]) for r in doc["results"]]
    assert order == [
        ("sdpa", None, None, "prefill"),
        ("sdpa", 1, 64, "train"),
        ("sdpa", 2, 128, "prefill"),
        ("sdpa", 2, 128, "train"),
        ("sdpa", 9, 9, "train"),
        ("eager", 1, 64, "prefill"),
    ]
    head = {k: v for k, v in doc.items() if k != "results"}
    assert head == {
        "schema_version": MODEL_SCHEMA_VERSION,
        "tool": "attnscope",
        "kind": "model",
        "partial": True,
        "env": {"torch": "2.13"},
        "config": {
            "name": "tiny", "source": "preset", "about": "a two-layer llama", "model_type": "llama",
            "hidden_size": 64, "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 2,
            "head_dim": 16, "intermediate_size": 128, "vocab_size": 1000, "sliding_window": None,
            "attn_logit_softcapping": None,
        },
        "case": {
            "device": "cpu", "dtype": "fp32", "batch": 1, "seq": 64, "impls": IMPLS, "modes": ["prefill", "train"],
            "points": [{"batch": 1, "seq": 64}, {"batch": 2, "seq": 128}],
        },
        "recommendations": {},
    }  # fmt: skip
    assert model_document(GRID, IMPLS, [], None, {"sdpa": 1}, partial=False)["recommendations"] == {"sdpa": 1}


def test_rows_are_ordered_by_the_index_of_their_own_point() -> None:
    """Points (1, 64), (2, 128), (1, 128): a row at (2, 128) comes before one at (1, 128), whatever came first."""
    grid = ModelGrid(SPEC, CFG, None, ["prefill"], [(1, 64), (2, 128), (1, 128)], "fp32", "cpu")
    rows = [
        {"impl": "sdpa", "mode": "prefill", "batch": 1, "seq": 128},
        {"impl": "sdpa", "mode": "prefill", "batch": 2, "seq": 128},
    ]
    doc = model_document(grid, ["sdpa"], rows, None, None, partial=False)
    assert [(r["batch"], r["seq"]) for r in doc["results"]] == [(2, 128), (1, 128)]


def test_each_rows_trace_name_carries_the_point_only_in_a_grid_of_several() -> None:
    assert trace_names("cpu", "fp32", IMPLS, ["prefill", "train"], [(1, 64), (2, 128)]) == [
        "model_sdpa_prefill_b1_s64.json",
        "model_sdpa_train_b1_s64.json",
        "model_sdpa_prefill_b2_s128.json",
        "model_sdpa_train_b2_s128.json",
        "model_eager_prefill_b1_s64.json",
        "model_eager_train_b1_s64.json",
        "model_eager_prefill_b2_s128.json",
        "model_eager_train_b2_s128.json",
    ]
    assert trace_names("cpu", "fp32", ["sdpa"], ["prefill"], [(4, 256)]) == ["model_sdpa_prefill.json"]


def test_the_jobs_run_implementation_then_point_then_mode_each_with_the_config_rebuilt_in_the_worker() -> None:
    got = jobs(GRID, IMPLS, 0.25, "traces")
    assert [(j.variant, j.case.batch, j.case.seq, j.case.mode) for j in got] == [
        (i, b, s, m) for i in IMPLS for b, s in [(1, 64), (2, 128)] for m in ["prefill", "train"]
    ]
    j = got[0]
    assert (j.budget_s, j.explicit, j.trace_dir, j.grid) == (0.25, False, "traces", True)
    assert (j.case.config, j.case.source, j.case.layers, j.case.depth, j.case.dtype, j.case.device) == (
        "tiny", "preset", None, 2, "fp32", "cpu"
    )  # fmt: skip
    # sorted keys: the same config is the same text in every job and every run
    assert j.case.values_json == '{"hidden_size": 64, "model_type": "llama", "vocab_size": 1000}'
    assert (j.case.steps, j.case.replay) == (None, None)


def test_a_decode_grid_plans_one_job_per_replay_and_a_given_depth_is_in_the_values() -> None:
    grid = ModelGrid(SPEC, CFG, ["sdpa"], ["prefill", "decode"], [(1, 64)], "bf16", "cuda", 1, 8, ["eager", "graph"])
    got = jobs(grid, ["sdpa"], 1.0, None)
    assert [(j.case.mode, j.case.steps, j.case.replay) for j in got] == [
        ("prefill", None, None),
        ("decode", 8, "eager"),
        ("decode", 8, "graph"),
    ]
    assert all(j.explicit and j.trace_dir is None and not j.grid for j in got)
    want = {"vocab_size": 1000, "hidden_size": 64, "model_type": "llama", "num_hidden_layers": 1}
    assert json.loads(got[0].case.values_json) == want
    assert got[0].case.layers is None  # the depth is in the values already: the worker builds them as they are


def test_the_wall_timings_the_host_verdict_reads_are_each_measured_rows_quartiles() -> None:
    wall = {"p25_us": 90.0, "median_us": 100.0, "p75_us": 120.0}
    results = [
        SimpleNamespace(row={"impl": "sdpa", "mode": "train", "wall_time": wall}),
        SimpleNamespace(row={"impl": "eager", "mode": "train", "wall_time": None}),  # not measured: left out
        SimpleNamespace(row={"impl": "eager", "mode": "prefill"}),
    ]
    assert wall_timings(results) == [("sdpa train", [90.0, 100.0, 120.0])]


def test_a_resume_whose_store_holds_every_row_of_the_grid_measures_none(tmp_path) -> None:
    """Each held row's key is its job's key (variant and point), so nothing is planned; the document keeps them."""
    pytest.importorskip("transformers")
    from attnscope.api.campaign import Planned
    from attnscope.execute.store import Store

    grid = ModelGrid(SPEC, CFG, IMPLS, ["prefill"], [(1, 64)], "fp32", "cpu")
    store = Store(tmp_path / "m.jsonl")
    held = [j.failed("error", "held before") for j in jobs(grid, IMPLS, 0.25, None)]
    for r in held:
        store.append({**r.row, "variant": r.row["impl"]})
    planned: list[Planned] = []

    def seen(e: object) -> None:
        if isinstance(e, Planned):
            planned.append(e)
            assert e.total == 0, "a held row was planned again"  # stops before any model is built

    doc = model(grid, budget_s=0.25, out=tmp_path / "m.jsonl", resume=True, executor="inline", on_event=seen)
    assert planned == [Planned(0, 2, 0)] and doc.earlier == 2
    assert [(r["impl"], r["status"], r["reason"]) for r in doc["results"]] == [
        ("sdpa", "error", "held before"),
        ("eager", "error", "held before"),
    ]


# Each preset's architecture, read from its model card: BERT is the one encoder (bidirectional, no KV cache).
PRESET_MODES = {
    "bert-base": ["prefill", "train"],
    "gpt2": ["prefill", "decode", "train"],
    "llama-3-8b": ["prefill", "decode", "train"],
    "mistral-7b": ["prefill", "decode", "train"],
    "qwen2-7b": ["prefill", "decode", "train"],
    "gemma-2-9b": ["prefill", "decode", "train"],
    "tiny": ["prefill", "decode", "train"],
}


def test_every_preset_has_its_modes_listed_here() -> None:
    from attnscope.workloads.hf.config import preset_names

    assert sorted(PRESET_MODES) == preset_names()


@pytest.mark.parametrize(("preset", "modes"), PRESET_MODES.items())
def test_the_modes_that_apply_to_each_preset(preset: str, modes: list[str]) -> None:
    from attnscope.api.modeling import modes_for
    from attnscope.workloads.hf.config import resolve

    cfg = SimpleNamespace(model_type=resolve(preset).model_type)  # the preset's own model_type, no transformers
    assert modes_for(cfg) == modes


def test_the_library_refuses_decode_of_an_encoder() -> None:
    from attnscope.core.arguments import UsageError

    bert = SimpleNamespace(**{**vars(CFG), "model_type": "bert"})
    with pytest.raises(UsageError, match=r"^modes prefill,decode: bert is an encoder .*no decode step") as e:
        ModelGrid(SPEC, bert, None, ["prefill", "decode"], [(1, 64)], "fp32", "cpu")
    assert e.value.fields == ("modes",)
    assert ModelGrid(SPEC, bert, None, ["prefill", "train"], [(1, 64)], "fp32", "cpu").modes == ["prefill", "train"]
    assert ModelGrid(SPEC, CFG, None, ["decode"], [(1, 64)], "fp32", "cpu").modes == ["decode"]  # llama decodes


def test_a_grid_built_for_an_encoder_leaves_decode_out() -> None:
    pytest.importorskip("transformers")
    assert ModelGrid.build("bert-base", layers=1).modes == ["prefill", "train"]
    assert ModelGrid.build("gpt2", layers=1).modes == ["prefill", "decode", "train"]
