"""The one trace reader: streaming fast path == whole-document path; every bad input is one clean line."""

from __future__ import annotations

import gzip
import json
import re
from pathlib import Path

import pytest

from attnscope.cli.main import main
from attnscope.trace import TraceError, load_trace, trace_from_doc
from tests.rawtrace import H200, VARIANTS
from tests.synth import doc, kernel, launch, op, write_kineto

FIELDS = ("cpu_ops", "runtime", "gpu", "annotations", "memory", "device_properties", "num_events", "num_skipped")


@pytest.mark.parametrize("variant", VARIANTS)
def test_streaming_reader_equals_whole_document_parse(variant, tmp_path):
    path = H200 / f"{variant}.json"
    raw = json.loads(path.read_text())
    ref = trace_from_doc(raw, str(path))
    fast = load_trace(path)  # Kineto's layout: the streaming path
    minified = tmp_path / "min.json"
    minified.write_text(json.dumps(raw))  # any other layout: the whole-document path
    whole = load_trace(minified)
    gz = tmp_path / "t.json.gz"
    gz.write_bytes(gzip.compress(path.read_bytes()))
    zipped = load_trace(gz)
    for f in FIELDS:
        assert getattr(fast, f) == getattr(ref, f) == getattr(whole, f) == getattr(zipped, f), f
    # and the counts are the raw file's own
    assert len(fast.gpu) == sum(e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset") for e in raw["traceEvents"])
    assert len(fast.cpu_ops) == sum(e.get("cat") == "cpu_op" for e in raw["traceEvents"])
    assert fast.num_events == len(raw["traceEvents"])


def test_streaming_reader_handles_events_split_across_chunks(tmp_path, monkeypatch):
    import attnscope.trace.source as S

    monkeypatch.setattr(S, "CHUNK", 97)  # every event straddles chunk boundaries
    path = H200 / "sdpa_math.json"
    gz = tmp_path / "t.json.gz"
    gz.write_bytes(gzip.compress(path.read_bytes()))
    ref = trace_from_doc(json.loads(path.read_text()), str(path))
    for p in (path, gz):
        tr = load_trace(p)
        assert tr.gpu == ref.gpu and tr.cpu_ops == ref.cpu_ops and tr.num_events == ref.num_events


@pytest.mark.parametrize("size", [1, 2, 5, 8, 9, 10, 13, 64])
def test_runs_are_whole_events_wherever_the_pieces_are_cut(size):
    """The text after ``"traceEvents": [`` cut into pieces of every small size (a separator inside a piece, across
    two, or across several): the runs, read as JSON arrays, hold every event once, in order."""
    from attnscope.trace.source import event_runs

    events = [{"ph": "X", "cat": "cpu_op", "name": f"op{i}", "ts": i, "args": {"s": "}, {" * i}} for i in range(7)]
    # Kineto's layout: one event per block, "{" and "}" on lines indented by two spaces
    body = b",\n  ".join(b"{\n    " + json.dumps(e)[1:-1].encode() + b"\n  }" for e in events) + b"\n]\n}"
    pieces = iter([body[i : i + size] for i in range(0, len(body), size)])
    tail: list[bytes] = []
    got = [e for run in event_runs(Path("t.json"), b"", pieces, tail) for e in json.loads(run)]
    assert got == events
    assert tail == [b"]\n}"]


def _broken_events():
    return [
        op("aten::mm", 0, 100, 1),
        launch(10, corr=5, ext=1),
        kernel("gemm", 200, 10, corr=5),
        {"ph": "X", "cat": "kernel", "name": "no_ts", "dur": 3, "args": {}},  # missing ts
        {"ph": "X", "cat": "cpu_op", "name": "aten::bad", "tid": 1, "ts": "soon", "dur": 1, "args": {}},
    ]


@pytest.mark.parametrize("layout", ["kineto", "minified"])
def test_broken_events_are_skipped_and_counted(tmp_path, layout):
    d = doc(_broken_events())
    p = tmp_path / "t.json"
    if layout == "kineto":
        write_kineto(p, d)
    else:
        p.write_text(json.dumps(d))
    tr = load_trace(p)
    assert tr.num_skipped == 2 and len(tr.gpu) == 1 and len(tr.cpu_ops) == 1


def test_an_unparseable_event_in_kineto_layout_is_skipped_not_fatal(tmp_path):
    p = write_kineto(tmp_path / "t.json", doc(_broken_events()[:3]))
    text = p.read_text().replace('"name": "gemm"', '"name": "gemm", "oops": ,', 1)
    p.write_text(text)
    tr = load_trace(p)
    assert tr.num_skipped == 1 and len(tr.gpu) == 0 and len(tr.cpu_ops) == 1


def _bad_inputs(tmp_path):
    good = (H200 / "naive.json").read_bytes()
    files = {
        "missing": (tmp_path / "nope.json", None, "no such file"),
        "empty": (tmp_path / "empty.json", b"", "empty file"),
        "blank gzip": (tmp_path / "blank.json.gz", gzip.compress(b"  \n"), "empty file"),
        "truncated": (tmp_path / "trunc.json", good[: len(good) // 2], "truncated"),
        "truncated minified": (
            tmp_path / "trunc_min.json",
            json.dumps(json.loads(good))[:5000].encode(),
            "not valid JSON",
        ),
        "corrupt gzip": (tmp_path / "bad.json.gz", b"\x1f\x8b\x08\x00garbage-not-deflate" * 3, "corrupt gzip"),
        "truncated gzip": (tmp_path / "cut.json.gz", gzip.compress(good)[:2000], "corrupt gzip"),
        "not kineto": (tmp_path / "list.json", b'{"results": [1, 2, 3]}', "not a Kineto trace"),
        "json list": (tmp_path / "list2.json", b"[1, 2]", "not a Kineto trace"),
        "no events": (tmp_path / "noev.json", b'{"traceEvents": []}', "no events"),
    }
    for path, data, _ in files.values():
        if data is not None:
            path.write_bytes(data)
    return files


def test_every_bad_input_is_one_line_naming_the_file_with_exit_2(tmp_path, capsys):
    for label, (path, _, problem) in _bad_inputs(tmp_path).items():
        assert main(["analyze", str(path)]) == 2, label
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and "Traceback" not in err, (label, err)
        assert str(path) in err and problem in err, (label, err)


def test_a_trace_without_gpu_events_is_fingerprinted_by_its_cpu_ops(tmp_path, capsys):
    """No --cpu needed: a CPU-only trace is detected and its leaf compute ops counted."""
    path = tmp_path / "cpu.json"
    path.write_text(json.dumps(doc([op("aten::mm", 0, 10, 1)])))
    assert main(["analyze", str(path)]) == 0
    out = capsys.readouterr().out
    assert "┃ ops ┃" in out  # the CPU table: leaf ops, not kernels
    assert re.search(r"│ cpu\s+│ ok\s+│", out), out


def test_load_trace_errors_are_trace_errors(tmp_path):
    for label, (path, _, problem) in _bad_inputs(tmp_path).items():
        if label == "no events":
            continue  # a readable trace: analyze refuses it, the reader does not
        with pytest.raises(TraceError, match=problem):
            load_trace(path)


def test_one_bad_file_among_good_ones_still_analyses_the_rest(tmp_path, capsys):
    bad = tmp_path / "empty.json"
    bad.write_bytes(b"")
    out = tmp_path / "o.json"
    assert main(["analyze", str(H200 / "naive.json"), str(bad), "--json", str(out), "--jobs", "1"]) == 2
    assert "empty.json: empty file" in capsys.readouterr().err
    assert [r["variant"] for r in json.loads(out.read_text())["results"]] == ["naive"]


def test_cpu_only_trace_is_accepted_with_cpu_flag(tmp_path):
    p = tmp_path / "cpu.json"
    p.write_text(json.dumps(doc([op("aten::mm", 0, 10, 1, **{"Input Dims": [[2, 2], [2, 2]]})])))
    out = tmp_path / "o.json"
    assert main(["analyze", str(p), "--cpu", "--json", str(out)]) == 0
    (r,) = json.loads(out.read_text())["results"]
    assert r["device_kind"] == "cpu" and r["trace_summary"] is None


def test_reader_without_orjson_or_msgspec_gives_the_same_trace(monkeypatch):
    """The GPU image has neither orjson nor msgspec: the safe path with the stdlib parser, same events."""
    import json

    import attnscope.trace as T
    import attnscope.trace.safe as safe
    from tests.rawtrace import H200

    path = H200 / "sdpa_math.json"
    fast = T.load_trace(path)
    monkeypatch.setattr(T, "_fast", None)  # as when msgspec cannot be imported
    for mod in (T, safe):
        monkeypatch.setattr(mod, "loads", json.loads)
        monkeypatch.setattr(mod, "JSONError", json.JSONDecodeError)
    slow = T.load_trace(path)
    assert [(o.name, o.ts, o.ext_id) for o in slow.cpu_ops] == [(o.name, o.ts, o.ext_id) for o in fast.cpu_ops]
    assert [(g.name, g.dur, g.correlation) for g in slow.gpu] == [(g.name, g.dur, g.correlation) for g in fast.gpu]
    assert slow.cpu_ops == fast.cpu_ops and slow.gpu == fast.gpu and slow.runtime == fast.runtime
    assert len(slow.runtime) == len(fast.runtime) > 0 and slow.device_properties == fast.device_properties


def _shape_doc(with_kernel: bool) -> dict:
    dims = {"Input Dims": [[4, 8], [4, 8]], "Input type": ["float", "float"]}
    evs = [
        op("aten::mm", 0, 10, 1, **dims),
        op("aten::copy_", 20, 5, 2, **dims),
        op("aten::add", 30, 5, 3, **dims),
    ]
    if with_kernel:
        evs += [launch(1, corr=1, ext=1), kernel("gemm_kernel", 5, 3, corr=1)]
    return doc(evs, deviceProperties=[{"name": "NVIDIA H200", "computeMajor": 9, "computeMinor": 0}])


@pytest.mark.parametrize("layout", ["kineto", "whole"])
def test_a_gpu_trace_keeps_only_the_shapes_the_analysis_reads(tmp_path, layout):
    d = _shape_doc(with_kernel=True)
    tr = load_trace(write_kineto(tmp_path / "t.json", d)) if layout == "kineto" else trace_from_doc(d)
    by = {o.name: o for o in tr.cpu_ops}
    assert by["aten::copy_"].input_dims == [[4, 8], [4, 8]]  # copies are judged by their shapes
    assert by["aten::mm"].input_types == ["float", "float"]  # a matmul's input dtype decides the TF32 advice
    assert by["aten::add"].input_dims is None  # never read on a GPU trace: not kept (memory at 10^6 ops)


def test_a_cpu_only_profile_from_a_gpu_machine_keeps_every_shape(tmp_path):
    """deviceProperties lists the GPU but no GPU event exists: the CPU analysis counts every leaf op by
    its dims, so the reader goes back for the shapes it first skipped."""
    tr = load_trace(write_kineto(tmp_path / "t.json", _shape_doc(with_kernel=False)))
    assert not tr.gpu and {o.name: o.input_dims for o in tr.cpu_ops}["aten::mm"] == [[4, 8], [4, 8]]


def test_a_name_with_an_escaped_quote_is_read_whole(tmp_path):
    """The bulk reader takes names up to the next quote; an escaped one fails its event there, and the
    chunk is read one event at a time: the same ops, the name decoded."""
    text = (H200 / "sdpa_math.json").read_text()
    assert text.count('"name": "aten::softmax"') >= 1
    odd = text.replace('"name": "aten::softmax"', '"name": "aten::soft\\"max\\\\"')
    p = tmp_path / "odd.json"
    p.write_text(odd)
    tr = load_trace(p)
    ref = trace_from_doc(json.loads(odd), str(p))
    assert tr.cpu_ops == ref.cpu_ops and tr.gpu == ref.gpu and tr.num_events == ref.num_events
    assert 'aten::soft"max\\' in {o.name for o in tr.cpu_ops}


def test_the_bulk_reader_takes_module_ranges_and_passes_other_python_functions(tmp_path, monkeypatch):
    """with_stack's python_function events in Kineto's own layout are read in the one regex pass:
    nn.Module ranges kept (as the document parser keeps them), other Python functions passed over."""
    import attnscope.trace as T

    block = (
        '  {{\n    "ph": "X", "cat": "python_function", "name": "{name}", "pid": 460, "tid": 460,\n'
        '    "ts": {ts}, "dur": 50.5,\n    "args": {{\n      "Python parent id": 1, "Python id": 2, '
        '"Python thread": 0\n    }}\n  }},\n'
    )
    extra = block.format(name="nn.Module: LlamaAttention_0", ts="5138829570990.5") + block.format(
        name="torch/nn/modules/module.py(1750): _call_impl", ts="5138829570991.5"
    )
    text = (H200 / "sdpa_math.json").read_text()
    at = text.index('  {\n    "ph": "X", "cat": "user_annotation"')
    p = tmp_path / "with_stack.json"
    p.write_text(text[:at] + extra + text[at:])

    def no_fallback(*a):
        raise AssertionError("a chunk went one event at a time")

    monkeypatch.setattr(T, "_scan_each", no_fallback)
    tr = load_trace(p)
    ref = trace_from_doc(json.loads(p.read_text()), str(p))
    assert [(m.name, m.ts, m.dur) for m in tr.modules] == [("nn.Module: LlamaAttention_0", 5138829570990.5, 50.5)]
    assert tr.modules == ref.modules and tr.cpu_ops == ref.cpu_ops and tr.num_events == ref.num_events


def _events_of(tr):
    return (tr.cpu_ops, tr.gpu, tr.runtime, tr.annotations, tr.modules, tr.memory, tr.num_events, tr.notes)


@pytest.mark.parametrize("path", __import__("tests.trace.test_trace_golden", fromlist=["traces"]).traces())
def test_the_per_category_decoder_reads_what_the_general_one_reads(path, monkeypatch):
    """Each trace of tests/data read with the tagged decoder (a Struct per category) and with ``Event`` alone."""
    import attnscope.trace.fast as fast

    tagged = load_trace(path)
    monkeypatch.setattr(fast, "_TAGGED", fast._EVENTS)
    assert _events_of(load_trace(path)) == _events_of(tagged)


def test_a_category_the_tagged_decoder_does_not_list_is_read_all_the_same(tmp_path, monkeypatch):
    import attnscope.trace.fast as fast

    events = [
        op("aten::mm", 0, 10, 1),
        {"ph": "X", "cat": "a_category_of_tomorrow", "name": "x", "pid": 1, "tid": 1, "ts": 2, "dur": 1},
        launch(3, corr=7, ext=1),
        kernel("gemm", 20, 4, corr=7),
    ]
    path = write_kineto(tmp_path / "t.json", doc(events))
    tr = load_trace(path)
    assert [o.name for o in tr.cpu_ops] == ["aten::mm"] and [g.correlation for g in tr.gpu] == [7]
    assert tr.notes == [] and tr.num_events == 4  # the general decoder, not the safe path
    monkeypatch.setattr(fast, "_TAGGED", fast._EVENTS)
    assert _events_of(load_trace(path)) == _events_of(tr)
