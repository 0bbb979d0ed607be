"""A document not in Kineto's layout (one line, as ``json.dump`` writes it) is decoded in runs cut between events.

A cut is tried at a ``}, {`` and kept only where the run before it is valid JSON.  The expected events come from the
standard library's ``json`` reading the whole document, never from the reader.
"""

from __future__ import annotations

import gzip
import json
import random
import re
from pathlib import Path

import pytest

import attnscope.trace as T
import attnscope.trace.fast as F
import attnscope.trace.source as S
from attnscope.trace import TraceError, load_trace


def _tricky_events(n: int, seed: int = 0) -> list[dict]:
    """Kernels and ops whose args hold what a naive cut would split: ``}, {`` inside strings and lists of objects."""
    rnd = random.Random(seed)
    out = []
    for i in range(n):
        if i % 3 == 0:
            args = {"correlation": i, "nested": [{"a": 1}, {"b": [{}]}]}
            name = f"k{i}" + "}, {" * rnd.randint(0, 3)
            out.append({"ph": "X", "cat": "kernel", "name": name, "pid": 0, "tid": 7, "ts": i, "dur": 1, "args": args})
        elif i % 3 == 1:
            out.append({"ph": "X", "cat": "cpu_op", "name": f"aten::op{i}", "pid": 1, "tid": 1, "ts": i, "dur": 1,
                        "args": {"External id": i, "note": '"}, {"cat": "kernel"'}})  # fmt: skip
        else:
            out.append({"ph": "s", "cat": "ac2g", "name": "ac2g", "id": i, "pid": 1, "tid": 1, "ts": i})
    return out


@pytest.mark.parametrize("run", [1, 37, 200, 1 << 19])
@pytest.mark.parametrize("separators", [(", ", ": "), (",", ":")], ids=["json.dump", "compact"])
def test_the_runs_hold_every_event_once_in_order(run: int, separators: tuple[str, str], monkeypatch) -> None:
    events = _tricky_events(300)
    text = json.dumps({"traceEvents": events}, separators=separators).encode()
    monkeypatch.setattr(F, "RUN", run)
    split = F.split_whole(text)
    assert not isinstance(split, str)
    runs = list(F.element_runs(split[1], 1 << 20))
    assert [e for r in runs for e in json.loads(r)] == events
    if run < 1000:
        assert len(runs) > 3  # cut often, so that many tried cuts fall inside strings and nested objects


def test_load_trace_reads_a_one_line_document_in_runs(tmp_path, monkeypatch) -> None:
    events = _tricky_events(600)
    p = tmp_path / "one_line.json"
    p.write_text(json.dumps({"traceEvents": events, "deviceProperties": [{"id": 0}]}))
    monkeypatch.setattr(F, "RUN", 64)
    tr = load_trace(p)
    assert tr.num_events == 600
    assert [g.name for g in tr.gpu] == [e["name"] for e in events if e["cat"] == "kernel"]
    assert [o.ext_id for o in tr.cpu_ops] == [e["args"]["External id"] for e in events if e["cat"] == "cpu_op"]
    assert tr.device_properties == [{"id": 0}]


def test_a_run_the_typed_decoder_refuses_goes_to_the_safe_path_alone(tmp_path, monkeypatch, capsys) -> None:
    """One kernel's stream written as a string: its run is read by the safe path, the others by the typed one."""
    events = _tricky_events(90)
    events[45]["args"] = {"stream": "0x7"}
    p = tmp_path / "one_line.json"
    p.write_text(json.dumps({"traceEvents": events}))
    monkeypatch.setattr(F, "RUN", 256)
    tr = load_trace(p)
    assert tr.num_events == 90 and tr.num_skipped == 1  # int("0x7") fails: skipped and counted
    assert len(tr.gpu) == 29  # 30 kernels, the one with the unreadable stream skipped
    note = capsys.readouterr().err
    assert "events read by the safe JSON path" in note
    refused = int(re.search(r"([\d,]+) of [\d,]+ events", note).group(1).replace(",", ""))  # type: ignore[union-attr]
    assert 1 <= refused < 90  # its run alone, not the whole document


def test_an_event_longer_than_the_bound_is_refused(monkeypatch) -> None:
    """A valid document whose first event (20 kB of ``}, {`` in a string) is longer than the bound: every cut tried
    inside it leaves the string open, and the search stops at the bound instead of trying on to the end."""
    text = b'{"traceEvents": [{"name": "' + b"}, {" * 5000 + b'"}, {"cat": "kernel"}]}'
    monkeypatch.setattr(F, "RUN", 64)
    split = F.split_whole(text)
    assert not isinstance(split, str), split
    with pytest.raises(ValueError, match="no event boundary"):
        list(F.element_runs(split[1], 4096))
    assert len([e for r in F.element_runs(split[1], 1 << 20) for e in json.loads(r)]) == 2  # within a larger bound


def test_a_broken_one_line_document_is_one_line(tmp_path) -> None:
    p = tmp_path / "broken.json"
    p.write_text('{"traceEvents": [{"cat": "kernel", "name": "k", "ts": 1, "dur": 1}, {"cat": ')
    with pytest.raises(TraceError, match="not valid JSON"):
        load_trace(p)


# A document over MAX_WHOLE is never held whole: its events are cut as the text comes, and the document's other
# members (before the list and after it) are read from a small document made of them and the last events.


def _one_line(tmp_path, events, name="big.json") -> object:
    doc = {"schemaVersion": 1, "traceEvents": events, "deviceProperties": [{"id": 0, "name": "H"}]}
    doc["distributedInfo"] = {"rank": 3}
    p = tmp_path / name
    p.write_text(json.dumps(doc))
    return p


@pytest.mark.parametrize("run", [64, 1000])
def test_a_long_one_line_document_is_read_as_it_comes(tmp_path, monkeypatch, run) -> None:
    events = _tricky_events(900)
    p = _one_line(tmp_path, events)
    monkeypatch.setattr(S, "MAX_WHOLE", 4000)  # the file is ~130 kB: read run by run past the first 4 kB
    monkeypatch.setattr(F, "RUN", run)
    seen: list[int] = []
    real = F.Reader.read
    monkeypatch.setattr(F.Reader, "read", lambda self, data: seen.append(len(data)) or real(self, data))
    tr = load_trace(p)
    assert len(seen) > 5 and max(seen) < 20 * run + 4000  # many runs, none of them the whole document
    assert tr.num_events == 900
    assert [g.name for g in tr.gpu] == [e["name"] for e in events if e["cat"] == "kernel"]
    assert [o.ts for o in tr.cpu_ops] == [e["ts"] for e in events if e["cat"] == "cpu_op"]
    assert tr.device_properties == [{"id": 0, "name": "H"}]  # written after the list
    assert tr.meta == {"schemaVersion": 1, "distributedInfo": {"rank": 3}}


def test_a_real_trace_in_one_line_gives_the_same_analysis(tmp_path, monkeypatch) -> None:
    """The H200 model training trace re-saved by ``json.dump`` (another layout, deviceProperties moved after the
    events), read run by run: the same analysis document as from Kineto's own layout."""
    from attnscope.api import analyze
    from attnscope.document.schema import document

    src = Path(__file__).resolve().parents[1] / "data" / "h200" / "model" / "model_sdpa_train.json.gz"
    doc = json.loads(gzip.decompress(src.read_bytes()))
    doc["deviceProperties"] = doc.pop("deviceProperties")
    p = tmp_path / "model_sdpa_train.json"
    p.write_text(json.dumps(doc))
    want = document(None, [analyze(src, variant="v")])
    monkeypatch.setattr(S, "MAX_WHOLE", 100_000)  # 1.9 MB read run by run
    got = document(None, [analyze(p, variant="v")])
    for d in (want, got):
        d["results"][0].pop("trace_path")
    assert got == want


@pytest.mark.parametrize(
    ("text", "why"),
    [
        pytest.param(b'{"traceEvents": [' + b'{"cat": "x"}, ' * 3000 + b"{}", "not valid JSON", id="cut short"),
        pytest.param(b'{"other": [' + b'{"cat": "x"}, ' * 3000 + b"{}]}", "without a traceEvents list", id="no list"),
        pytest.param(b'{"traceEvents": [' + b" " * 40_000 + b"]}", "runs past", id="a whitespace run"),
    ],
)
def test_a_long_broken_document_is_one_line(tmp_path, monkeypatch, text, why) -> None:
    p = tmp_path / "broken.json"
    p.write_bytes(text)
    monkeypatch.setattr(S, "MAX_WHOLE", 4000)
    monkeypatch.setattr(F, "RUN", 64)
    monkeypatch.setattr(T, "MAX_EVENT", 8000)
    with pytest.raises(TraceError, match=why):
        load_trace(p)
