"""What the typed decoder refuses goes to the safe path, with a note; the events are the same.

Expected values are written out by hand from the events each test builds, never read back
from the reader.
"""

from __future__ import annotations

import gzip
import json

import pytest

import attnscope.trace as T
from attnscope.trace import load_trace
from tests.synth import doc, kernel, launch, op, write_kineto

BIG = 2**70  # over int64 and uint64


def _events(kname: str = "gemm", opname: str = "aten::mm") -> list[dict]:
    return [
        op(opname, 0, 100, 1, **{"Input Dims": [[4, 8], [8, 4]], "Input type": ["float", "float"]}),
        launch(10, corr=5, ext=1),
        kernel(kname, 200, 10, corr=5, grid=[1, 2, 3], block=[128, 1, 1]),
        {"ph": "s", "id": 5, "pid": 100, "tid": 100, "ts": 10, "cat": "ac2g", "name": "ac2g"},
        {"ph": "X", "cat": "python_function", "name": "torch/nn/x.py(1): f", "pid": 1, "tid": 1, "ts": 0, "dur": 1},
    ]


def _write(tmp_path, events, name="t.json", *, raw_edit=None) -> object:
    p = write_kineto(tmp_path / name, doc(events))
    if raw_edit is not None:
        p.write_bytes(raw_edit(p.read_bytes()))
    return p


def test_a_clean_trace_is_read_by_the_typed_decoder_without_a_note(tmp_path, capsys):
    tr = load_trace(_write(tmp_path, _events()))
    assert tr.notes == [] and capsys.readouterr().err == ""
    assert [(o.name, o.ts, o.dur, o.ext_id) for o in tr.cpu_ops] == [("aten::mm", 0.0, 100.0, 1)]
    assert tr.cpu_ops[0].input_dims == [[4, 8], [8, 4]] and tr.cpu_ops[0].input_types == ["float", "float"]
    (g,) = tr.gpu
    assert (g.name, g.ts, g.dur, g.correlation, g.grid, g.block) == ("gemm", 200.0, 10.0, 5, (1, 2, 3), (128, 1, 1))
    assert [(r.name, r.correlation, r.ext_id) for r in tr.runtime] == [("cudaLaunchKernel", 5, 1)]
    assert tr.num_events == 5 and tr.num_skipped == 0


def test_integers_over_int64_are_read_exactly(tmp_path, capsys):
    evs = _events()
    evs[0]["args"]["External id"] = BIG
    evs[1]["args"]["External id"] = BIG
    evs[1]["args"]["correlation"] = BIG + 1
    evs[2]["args"]["correlation"] = BIG + 1
    evs[3]["id"] = BIG  # a flow's id: never read
    tr = load_trace(_write(tmp_path, evs))
    assert tr.cpu_ops[0].ext_id == BIG and type(tr.cpu_ops[0].ext_id) is int
    assert tr.runtime[0].ext_id == BIG and tr.runtime[0].correlation == BIG + 1 == tr.gpu[0].correlation
    assert capsys.readouterr().err == ""


def test_invalid_utf8_in_a_read_name_goes_to_the_safe_path_with_a_note(tmp_path, capsys):
    p = _write(tmp_path, _events(kname="gemm_KNAME"), raw_edit=lambda b: b.replace(b"KNAME", b"\xff\xfe"))
    tr = load_trace(p)
    assert [g.name for g in tr.gpu] == ["gemm_\ufffd\ufffd"]
    assert [o.name for o in tr.cpu_ops] == ["aten::mm"] and tr.cpu_ops[0].input_dims == [[4, 8], [8, 4]]
    assert tr.num_events == 5 and tr.num_skipped == 0
    err = capsys.readouterr().err
    # the run holding the kernel (here: all events but the last, cut apart by the streaming reader)
    assert err.startswith("attnscope: note: ") and " of 5 events read by the safe JSON path" in err
    assert len(tr.notes) == 1


def test_invalid_utf8_in_a_field_never_read_needs_no_fallback(tmp_path, capsys):
    evs = _events()
    evs[2]["args"]["context"] = "CTX"  # a kernel arg no analysis reads: skipped unread
    p = _write(tmp_path, evs, raw_edit=lambda b: b.replace(b"CTX", b"\xff\xfe"))
    tr = load_trace(p)
    assert tr.notes == [] and capsys.readouterr().err == ""
    assert [g.name for g in tr.gpu] == ["gemm"] and len(tr.cpu_ops) == 1 and tr.num_events == 5


def test_old_kineto_unescaped_quotes_skip_that_event_only(tmp_path, capsys):
    # Old Kineto wrote names with raw quotes: the event is not JSON; it is skipped and counted.
    p = _write(
        tmp_path, _events(opname="aten::QUOTED"), raw_edit=lambda b: b.replace(b"aten::QUOTED", b'operator()"x"')
    )
    tr = load_trace(p)
    assert tr.cpu_ops == [] and tr.num_skipped == 1 and tr.num_events == 5
    assert [g.name for g in tr.gpu] == ["gemm"] and [r.correlation for r in tr.runtime] == [5]
    assert "safe JSON path" in capsys.readouterr().err


def test_a_string_number_reads_as_the_safe_path_reads_it(tmp_path):
    evs = _events()
    evs[2]["args"]["stream"] = "0x7"  # not a number int() reads: the event is skipped by both paths
    evs[0]["ts"] = "12.5"  # float("12.5")
    tr = load_trace(_write(tmp_path, evs))
    assert tr.cpu_ops[0].ts == 12.5
    assert tr.gpu == [] and tr.num_skipped == 1
    assert len(tr.notes) == 1


@pytest.mark.parametrize("layout", ["kineto", "minified", "gzip"])
def test_the_safe_path_alone_gives_the_same_events(tmp_path, monkeypatch, layout):
    """Every layout, read by the typed decoder and by the safe path alone: equal events."""
    d = doc(_events())
    if layout == "kineto":
        p = write_kineto(tmp_path / "t.json", d)
    elif layout == "minified":
        p = tmp_path / "t.json"
        p.write_text(json.dumps(d))
    else:
        p = tmp_path / "t.json.gz"
        p.write_bytes(gzip.compress(write_kineto(tmp_path / "k.json", d).read_bytes()))
    fast = load_trace(p)
    monkeypatch.setattr(T, "_fast", None)
    safe = load_trace(p)
    for f in ("cpu_ops", "gpu", "runtime", "annotations", "memory", "modules", "num_events", "num_skipped", "meta"):
        assert getattr(fast, f) == getattr(safe, f), f
    assert fast.cpu_ops[0].input_dims == [[4, 8], [8, 4]]
