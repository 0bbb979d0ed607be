"""Every path that reads a user's file, driven with hostile files: nesting deeper than any parser recurses, wrong
types where readers compute, bytes that are not UTF-8, a torn end, NaN and 1e999, JSON that is not an object.  No
reader may end in exit 70 (the tool's own bug): a document or config that cannot be read is exit 2 in one line, and
a store's unreadable line is left out, counted like a torn one, while its good rows are still read."""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any

import pytest

from attnscope.cli.main import main

DATA = Path(__file__).resolve().parents[1] / "data"
RUN_DOC = json.loads((DATA / "h200" / "run.json").read_text())
ROW = RUN_DOC["results"][0]

# A model document as `model --json` writes it (one row, written by hand from the fields its readers use).
MODEL_ROW = {
    "impl": "sdpa",
    "mode": "prefill",
    "status": "ok",
    "reason": None,
    "step_time_us": 100.0,
    "step_time": {"median_us": 100.0, "p25_us": 99.0, "p75_us": 101.0, "num_samples": 9, "method": "wall"},
    "attention": {
        "time_us": 40.0,
        "share": 0.4,
        "kernel_us": 30.0,
        "projections_us": 6.0,
        "around_us": 4.0,
        "parts": {"kernel": 30.0, "projections": 6.0, "around": 4.0},
    },
    "rest": {"time_us": 60.0, "share": 0.6, "parts": {"mlp": 60.0}},
    "layers": [{"layer": "model.layers.0", "attention_us": 40.0}],
    "breakdown": {"device": "cpu", "method": "CPU time of the ops", "total_us": 100.0, "unattributed_us": 0.0},
    "insights": [],
}
MODEL_DOC = {
    "schema_version": 1,
    "tool": "attnscope",
    "kind": "model",
    "config": {"name": "tiny"},
    "case": {"device": "cpu", "dtype": "bf16", "batch": 1, "seq": 16, "impls": ["sdpa"], "modes": ["prefill"]},
    "results": [MODEL_ROW],
    "recommendations": {},
}


def _model(**changes: Any) -> bytes:
    return json.dumps({**MODEL_DOC, **changes}).encode()


def _model_row(**changes: Any) -> bytes:
    return _model(results=[{**MODEL_ROW, **changes}])


def _run_row(**changes: Any) -> bytes:
    return json.dumps({**RUN_DOC, "results": [{**ROW, **changes}]}).encode()


# name → bytes of a whole file
HOSTILE: dict[str, bytes] = {
    "case_dtype_a_number": _run_row(case={**ROW["case"], "dtype": 5}),
    "case_mask_a_list": _run_row(case={**ROW["case"], "mask": [1]}),
    "hidden_copy_without_op": _run_row(hidden_copies=[{"copy_op": "aten::copy_", "bytes": 1}]),
    "hidden_copy_without_bytes": _run_row(hidden_copies=[{"op": "aten::masked_fill", "copy_op": "aten::copy_"}]),
    "upcast_without_src_dtype": _run_row(upcasts=[{"op": "aten::to", "bytes": 4}]),
    "kernel_without_duration": _run_row(kernels=[{"name": "k", "category": "attention"}]),
    "timing_without_p25": _run_row(gpu_time={"median_us": 1.0, "p75_us": 1.0}),
    "timing_median_a_string": _run_row(gpu_time={"median_us": "x"}),
    "model_attention_a_list": _model_row(attention=[1]),
    "model_breakdown_a_string": _model_row(breakdown="x"),
    "model_step_time_a_string": _model_row(step_time="x", step_time_us="y"),
    "model_layers_of_numbers": _model_row(layers=[1]),
    "model_attention_without_breakdown": _model_row(breakdown=None),
    "model_attention_without_kernel_us": _model_row(attention={"time_us": 1.0, "parts": {}}),
    "model_rest_parts_of_strings": _model_row(rest={"time_us": 1.0, "parts": {"mlp": "x"}}),
    "model_case_a_string": _model(case="x"),
    "model_env_a_list": _model(env=[1]),
    "model_recommendations_a_list": _model(recommendations=[1]),
    "model_recommendation_text_a_number": _model(recommendations={"prefill": {"text": 5}}),
    "nested_list": b"[" * 100_000,
    "nested_object": b'{"a":' * 50_000 + b"1" + b"}" * 50_000,
    "nested_toml": b"a = " + b"[" * 100_000,
    "deep_but_parsable": json.dumps({"schema_version": 1, "results": [{**ROW, "extra": {}}]})
    .replace('"extra": {}', '"extra": ' + '{"a":' * 400 + "1" + "}" * 400)
    .encode(),
    "variant_not_a_string": json.dumps({"schema_version": 1, "results": [{"variant": 1, "status": []}]}).encode(),
    "case_a_string": json.dumps({**RUN_DOC, "results": [{**ROW, "case": "x"}]}).encode(),
    "env_a_number": json.dumps({**RUN_DOC, "env": 5}).encode(),
    "kernel_without_category": json.dumps({**RUN_DOC, "results": [{**ROW, "kernels": [{"name": 1}]}]}).encode(),
    "time_a_string": json.dumps({**RUN_DOC, "results": [{**ROW, "gpu_time_us": "fast"}]}).encode(),
    "extra_a_list": json.dumps({**RUN_DOC, "results": [{**ROW, "extra": [1]}]}).encode(),
    "results_an_object": json.dumps({**RUN_DOC, "results": {}}).encode(),
    "schema_version_a_string": json.dumps({**RUN_DOC, "schema_version": "1"}).encode(),
    "not_utf8": b"\xff\xfe\x00garbage\x80\x81",
    "torn": json.dumps(RUN_DOC).encode()[:-40],
    "nan_and_1e999": json.dumps({**RUN_DOC, "results": [{**ROW, "gpu_time_us": float("nan")}]})
    .replace('"flops": ', '"flops": 1e999, "_": ', 1)
    .encode(),
    "a_list": b"[1, 2, 3]",
    "a_string": b'"hello"',
    "empty": b"",
    "corrupt_gzip": b"\x1f\x8b\x08\x00" + b"\x00" * 20,
    "gzipped_bomb": gzip.compress(b"[" * 100_000),
}


@pytest.fixture
def files(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    for name, data in HOSTILE.items():
        (tmp_path / f"{name}.json").write_bytes(data)
    (tmp_path / "good.json").write_text(json.dumps(RUN_DOC))
    return tmp_path


DEEP = '{"a":' * 400 + "1" + "}" * 400  # nested, but within what the parser reads

# what does not parse as a JSON object at all
NOT_OBJECTS = {"nested_list", "nested_object", "nested_toml", "not_utf8", "torn", "a_list", "a_string", "empty"}
NOT_OBJECTS |= {"corrupt_gzip", "gzipped_bomb"}


def test_the_hand_written_model_document_is_read():
    """The hostile model documents are this one with one value changed: it must itself be readable."""
    from attnscope.document.model_rows import model_document_problem

    assert model_document_problem(MODEL_DOC) is None


# Every command that reads a file the user names; FILE is the hostile one.
READERS = [
    ["report", "FILE", "-o", "page.html"],
    ["recommend", "FILE"],
    ["diff", "FILE", "good.json"],
    ["diff", "good.json", "FILE"],
    ["analyze", "FILE"],
    ["run", "--device", "cpu", "--seq", "16", "--no-peak", "--variants", "naive", "--guess", "FILE"],
    ["model", "--config", "FILE", "--seq", "16"],
    ["tour", "--size", "tiny", "--answers", "FILE", "--out", "t.json"],
    ["tour", "--size", "tiny", "--auto", "--resume", "--out", "FILE"],
    ["sweep", "--device", "cpu", "--seq", "16", "--resume", "--out", "store.jsonl", "--settings-from", "FILE"],
]


def _argv(template: list[str], name: str, tmp: Path) -> list[str]:
    if "--settings-from" in template:  # the sweep's recorded settings are the hostile file
        (tmp / "store.jsonl").write_text(json.dumps({**ROW}) + "\n")
        (tmp / "store.jsonl.settings.json").write_bytes(HOSTILE[name])
        return template[: template.index("--settings-from")]
    return [f"{name}.json" if a == "FILE" else a for a in template]


def _cases() -> list[Any]:
    """(reader, hostile file) pairs; a file that is a valid input to a reader that then measures (an empty answers
    file, a settings object) is left out for that reader: it would run, not refuse."""
    out = []
    for t in READERS:
        for name in sorted(HOSTILE):
            valid = (t[0] == "tour" and "--answers" in t and name == "empty") or (
                "--settings-from" in t and name not in NOT_OBJECTS
            )
            if not valid:
                out.append(
                    pytest.param(t, name, id=f"{' '.join(x for x in t if x.startswith('-') or x == t[0])}-{name}")
                )
    return out


@pytest.mark.parametrize(("template", "name"), _cases())
def test_no_hostile_file_ends_in_an_internal_error(files, capsys, monkeypatch, template, name):
    monkeypatch.setattr("builtins.input", lambda *a: "")  # a question asked would be a bug here, not a hang
    argv = _argv(template, name, files)
    rc = main(argv)
    err = capsys.readouterr().err
    assert "internal error" not in err, err
    assert rc != 70
    assert rc in (0, 1, 2), (rc, err[-500:])
    if rc == 2:
        assert err.startswith("attnscope: error:") and err.count("\n") == 1, err


def _store(tmp: Path, bad: list[bytes]) -> Path:
    """Two good rows (different variants) around every hostile value as one line each."""
    good = [json.dumps({**ROW, "variant": v}).encode() for v in ("naive", "sdpa_flash")]
    p = tmp / "store.jsonl"
    p.write_bytes(b"\n".join([good[0], *(b.replace(b"\n", b" ") for b in bad), good[1]]) + b"\n")
    return p


def test_a_store_skips_every_unreadable_line_and_counts_it(tmp_path):
    from attnscope.execute.store import Store

    rows_off = [
        {**ROW, "variant": 1},
        {**ROW, "status": None},
        {**ROW, "case": "x"},
        {**ROW, "gpu_time_us": "fast"},
        {**ROW, "kernels": [{"name": 1}]},
        {**ROW, "kernels": "all of them"},
        {**ROW, "gpu_time": 5},
    ]
    bad = [v for k, v in HOSTILE.items() if k not in ("empty", "nan_and_1e999", "deep_but_parsable")]
    bad += [json.dumps(r).encode() for r in rows_off]
    readable = [  # rows a reader can use: NaN and inf are numbers to it, and no reader walks `extra`
        json.dumps({**ROW, "variant": "nan_row", "gpu_time_us": float("nan"), "flops": float("inf")}).encode(),
        json.dumps({**ROW, "variant": "deep_row", "extra": {}}).replace('"extra": {}', f'"extra": {DEEP}').encode(),
    ]
    store = Store(_store(tmp_path, bad + readable))
    rows = store.rows()
    assert [r["variant"] for r in rows] == ["naive", "nan_row", "deep_row", "sdpa_flash"]
    assert store.num_torn == len(bad)  # every other line: left out and counted
    assert len(store.done()) == 4  # one key per readable row (four variants, one case)


def test_recommend_reads_a_store_with_hostile_lines_and_says_the_count_once(tmp_path, capsys):
    bad = [HOSTILE[k] for k in ("nested_list", "nested_object", "not_utf8", "variant_not_a_string", "a_list")]
    p = _store(tmp_path, [*bad, b'{"variant": "x", "status": "ok", "case": "x"}'])
    assert main(["recommend", str(p)]) == 0
    err = capsys.readouterr().err
    assert err.count("left out") == 1 and "6 lines left out" in err, err


def test_report_page_says_the_count_once(tmp_path, monkeypatch, capsys):
    pytest.importorskip("plotly")
    monkeypatch.chdir(tmp_path)
    bad = [HOSTILE[k] for k in ("nested_list", "nested_object", "not_utf8")]
    p = _store(tmp_path, bad)
    assert main(["report", str(p), "-o", "p.html"]) == 0
    page = Path("p.html").read_text(encoding="utf-8")
    assert page.count("3 lines left out") == 1 and "nested too deeply to read" in page


@pytest.mark.slow
def test_sweep_resume_over_a_store_with_hostile_lines_measures_only_what_is_missing(tmp_path, monkeypatch, capsys):
    """The store holds naive's row for the one case (read back from a first sweep) between hostile lines: the
    resumed sweep measures the one missing job and counts the lines it left out, once."""
    monkeypatch.chdir(tmp_path)
    argv = ["sweep", "--device", "cpu", "--seq", "16", "--batch", "1", "--heads", "1", "--head-dim", "16"]
    argv += ["--causal", "yes", "--dtype", "fp32", "--no-peak", "--budget", "0.01", "--executor", "inline"]
    assert main([*argv, "--variants", "naive", "--out", "s.jsonl"]) == 0
    first = Path("s.jsonl").read_bytes()
    bad = [HOSTILE[k] for k in ("nested_list", "not_utf8", "variant_not_a_string")]
    Path("s.jsonl").write_bytes(first + b"\n".join(bad) + b"\n")
    capsys.readouterr()
    assert main([*argv, "--variants", "naive,naive_inplace", "--out", "s.jsonl", "--resume"]) == 0
    out = capsys.readouterr().out
    assert "1 already in s.jsonl, 1 to measure" in out and "3 unreadable line(s)" in out
    lines = [json.loads(x) for x in Path("s.jsonl").read_bytes().splitlines() if x.startswith(b'{"')]
    assert sorted(r["variant"] for r in lines if isinstance(r.get("variant"), str)) == ["naive", "naive_inplace"]


def test_a_model_store_skips_rows_no_reader_can_take(tmp_path, capsys):
    """`model --out` rows (a case with a config) are checked as model rows: the good ones are read (recommend
    compares them), each bad one is left out, and the count is said once."""
    case = {"config": "tiny", "layers": 2, "batch": 1, "seq": 16, "dtype": "bf16", "device": "cpu"}

    def row(impl: str, **changes: Any) -> bytes:
        r = {**MODEL_ROW, "impl": impl, "variant": impl, "case": {**case, "mode": "prefill"}, "median_us": 100.0}
        return json.dumps({**r, **changes}).encode()

    good = [row("sdpa"), row("eager", step_time_us=150.0, median_us=150.0)]
    bad = [row("x", attention=[1]), row("y", step_time="x"), row("z", case={**case, "seq": "16"})]
    p = tmp_path / "m.jsonl"
    p.write_bytes(b"\n".join([good[0], *bad, good[1]]) + b"\n")
    from attnscope.execute.store import Store

    store = Store(p)
    assert [r["impl"] for r in store.rows()] == ["sdpa", "eager"] and store.num_torn == 3
    assert main(["recommend", str(p)]) == 0
    err = capsys.readouterr().err
    assert err.count("left out") == 1 and "3 lines left out" in err, err
