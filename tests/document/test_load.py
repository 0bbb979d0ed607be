"""The one reader of result files: what a file is, from its content; the rows a recommendation reads, with what was
left out said; the sweep store's rows read by the same reader; a file of no known kind refused in one line."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

from attnscope.document.load import head, jsonl_rows, load, load_document, result_rows
from attnscope.document.schema import DocumentError

ROOT = Path(__file__).resolve().parents[2]
ROW = {"variant": "naive", "status": "ok", "case": {"batch": 1, "heads": 2, "seq_q": 8, "head_dim": 4}}


def test_kinds_are_read_from_content(tmp_path):
    assert load(ROOT / "tests/data/h200/run.json").kind == "run"
    assert load(ROOT / "tests/data/cpu/tiny_sweep.jsonl").kind == "sweep"
    assert load(ROOT / "tests/data/h200/flex.json").kind == "trace"
    gz = tmp_path / "t.json.gz"
    gz.write_bytes(gzip.compress(b'{"traceEvents": []}'))
    assert load(gz).kind == "trace"


def test_result_rows_leave_a_torn_line_out_and_say_so(tmp_path):
    p = tmp_path / "s.jsonl"
    p.write_text(json.dumps(ROW) + "\n" + json.dumps({**ROW, "variant": "sdpa"}) + "\n" + '{"variant": "fl')
    rows, notes = result_rows([p])
    assert [r["variant"] for r in rows] == ["naive", "sdpa"]
    assert notes == [f"{p}: line 3 is not valid JSON (a torn write?): left out"]


def test_result_rows_take_a_run_documents_results(tmp_path):
    doc = json.loads((ROOT / "tests/data/h200/run.json").read_text())
    rows, notes = result_rows([ROOT / "tests/data/h200/run.json"])
    assert [r["variant"] for r in rows] == [r["variant"] for r in doc["results"]] and notes == []


@pytest.mark.parametrize(
    ("content", "says"),
    [
        ({"schema_version": 1, "kind": "recommend", "best": [], "policy": []}, "a recommendation"),
        ({"schema_version": 1, "kind": "diff", "a": "x", "b": "y"}, "a diff document"),
    ],
)
def test_a_file_of_another_kind_is_named(tmp_path, content, says):
    p = tmp_path / "f.json"
    p.write_text(json.dumps(content))
    with pytest.raises(DocumentError, match=says):
        result_rows([p])


def test_a_row_with_a_bad_field_is_refused(tmp_path):
    p = tmp_path / "s.jsonl"
    p.write_text(json.dumps({**ROW, "gpu_time_us": "fast"}) + "\n")
    with pytest.raises(DocumentError, match="gpu_time_us must be a number"):
        result_rows([p])


def test_a_folder_is_not_a_file(tmp_path):
    """A folder is said to be one (it read 'not a file', which a folder given by mistake leaves unexplained)."""
    with pytest.raises(DocumentError, match=r": a directory: name a result file or a trace in it$"):
        load(tmp_path)


# ---------------------------------------------------------------- head: the sniffed start of a file


def test_head_reads_only_the_first_n_bytes_of_a_plain_file(tmp_path):
    p = tmp_path / "f.txt"
    p.write_bytes(b"0123456789")
    assert head(p, 4) == b"0123"


def test_head_decompresses_gzip_and_stops_at_n_bytes(tmp_path):
    """10,000 'a's gzip to a few dozen bytes: the whole file fits in n=200 read bytes, and the
    decompressed head is cut at n=200 bytes, all 'a'."""
    p = tmp_path / "f.gz"
    p.write_bytes(gzip.compress(b"a" * 10_000))
    assert len(p.read_bytes()) < 200
    assert head(p, 200) == b"a" * 200


def test_head_of_a_small_gzip_is_its_whole_text(tmp_path):
    p = tmp_path / "f.gz"
    p.write_bytes(gzip.compress(b'{"traceEvents": []}'))
    assert head(p) == b'{"traceEvents": []}'


def test_head_says_corrupt_gzip(tmp_path):
    """The gzip magic, then method byte 0xff (only 8, deflate, exists): zlib refuses it."""
    p = tmp_path / "bad.gz"
    p.write_bytes(b"\x1f\x8b\xff\x00" + b"\xff" * 30)
    with pytest.raises(DocumentError, match=r"bad\.gz: corrupt gzip \("):
        head(p)


# ---------------------------------------------------------------- the committed files, old ones included

# The variants of the H200 study's run document (tests/data/h200/README.md), written before documents named their kind.
STUDY = ["naive", "naive_inplace", "sdpa_math", "sdpa_efficient", "sdpa_flash", "sdpa_cudnn", "sdpa_default", "flex"]


def test_an_old_run_document_loads_as_a_run():
    """run.json has no "kind" field (written before there was one): its kind is read from its rows."""
    src = load(ROOT / "tests/data/h200/run.json")
    assert "kind" not in src.doc and src.kind == "run" and src.notes == []
    assert [r["variant"] for r in src.doc["results"]] == [*STUDY, "flex_compiled"]
    assert load_document(ROOT / "tests/data/h200/run.json") is not None


def _torn_sweep(tmp_path: Path) -> tuple[Path, list[str]]:
    """The first three rows of the committed CPU sweep, then the fourth cut inside a two-byte character ("µ" is
    0xC2 0xB5 in UTF-8; the cut keeps 0xC2 only): what a process killed mid-write leaves."""
    lines = (ROOT / "tests/data/cpu/tiny_sweep.jsonl").read_bytes().splitlines(keepends=True)
    second = lines[1]
    cut = second.index("µ".encode()) + 1
    p = tmp_path / "torn.jsonl"
    p.write_bytes(b"".join(lines[:3]) + second[:cut])
    return p, [json.loads(line)["variant"] for line in lines[:3]]


def test_a_jsonl_with_a_torn_last_line_keeps_its_rows_and_names_the_line(tmp_path):
    p, names = _torn_sweep(tmp_path)
    src = load(p)
    assert src.kind == "sweep"
    assert [r["variant"] for r in src.doc["rows"]] == names == ["naive_inplace", "sdpa_math", "sdpa_flash"]
    assert src.notes == [f"{p}: line 4 is not valid JSON (a torn write?): left out"]


def test_the_sweep_store_reads_its_lines_with_the_same_reader(tmp_path):
    """A resumed sweep measures what its store lacks: the store's rows are the loader's rows, the torn line counted."""
    from attnscope.execute.store import Store

    p, names = _torn_sweep(tmp_path)
    store = Store(p)
    assert [r["variant"] for r in store.rows()] == names and store.num_torn == 1
    rows, notes = jsonl_rows(p.read_bytes() + b"\n[1, 2]\n", "s")
    assert len(rows) == 3 and notes == [
        "s: line 4 is not valid JSON (a torn write?): left out",
        "s: line 5 is not a result row (no variant/status): left out",
    ]


def test_a_line_ends_at_newline_alone_so_a_stray_carriage_return_is_one_bad_line():
    # seen in the suite: gzip bytes (a timestamp in the header) holding \r split one bad line in two, so a store
    # counted 44 unreadable lines for 43 and numbered every later line one too high
    good = json.dumps({"variant": "naive", "status": "ok"}).encode()
    rows, notes = jsonl_rows(good + b"\n\x1f\x8b\rgarbage\n" + good + b"\r\n", "s")
    assert len(rows) == 2 and notes == ["s: line 2 is not valid JSON (a torn write?): left out"]


def test_a_gzipped_trace_is_known_by_its_bytes_whatever_its_name(tmp_path):
    assert load(ROOT / "tests/data/llama_train_sdpa.json.gz").kind == "trace"
    renamed = tmp_path / "trace.bin"
    renamed.write_bytes((ROOT / "tests/data/llama_train_sdpa.json.gz").read_bytes())
    src = load(renamed)
    assert src.kind == "trace" and src.path == renamed and src.doc == {}
    assert b'"traceEvents"' in head(renamed)  # the decompressed text, not the gzip bytes


@pytest.mark.parametrize(
    ("content", "says"),
    [
        (b"hello\nworld\n", "not valid JSON"),
        (b"\x00\xff\xfe binary \x80\x81\n\x90", "not valid JSON"),
        (b"   \n\n", "empty file"),
        (b'{"name": "a config", "layers": 2}', "not an attnscope result document"),
        (b"[1, 2, 3]", "no result rows"),
        (b"\x1f\x8b\xff\x00" + b"\xff" * 30, "corrupt gzip"),
    ],
)
def test_an_unknown_file_is_refused_in_one_line(tmp_path, content, says):
    p = tmp_path / "unknown.dat"
    p.write_bytes(content)
    with pytest.raises(DocumentError, match=says) as e:
        load(p)
    assert "\n" not in str(e.value) and str(p) in str(e.value)


def _committed() -> list[Path]:
    """The result files committed with the project: documents of every version written so far, and JSONL stores."""
    found = [
        *ROOT.glob("docs/results/**/*.json"),
        *ROOT.glob("docs/results/**/*.jsonl"),
        *ROOT.glob("tests/data/*/*.json"),
    ]
    found += ROOT.glob("tests/data/*/*.jsonl")
    return sorted(p for p in found if b'"traceEvents"' not in p.read_bytes()[: 1 << 16])


def _raw_rows(p: Path) -> list[dict] | None:
    """The rows a file holds, read with json alone: a document's results, or a JSONL's lines; None for neither."""
    text = p.read_text(encoding="utf-8")
    try:
        doc = json.loads(text)
    except ValueError:
        return [json.loads(line) for line in text.splitlines() if line.strip()]
    if isinstance(doc, dict) and "schema_version" in doc and isinstance(doc.get("results"), list):
        return doc["results"]
    return None


# the fields a model row written before the --batch/--seq grids lacks, read back from its document's point
GENERIC = {"variant", "case", "batch", "seq", "median_us", "p25_us", "p75_us"}


def test_every_committed_result_file_loads_with_all_its_rows():
    """Old documents (no kind, fewer fields) and stores load; the rows are the file's, none left out (an older model
    document's rows with the generic fields added, their own kept as they were).  Any other
    committed JSON (a recommendation, a settings file, host timings) is refused in one line naming the file."""
    loaded = refused = 0
    for p in _committed():
        raw = _raw_rows(p)
        if raw is None:
            with pytest.raises(DocumentError) as e:
                load(p)
            assert "\n" not in str(e.value) and str(p) in str(e.value)
            refused += 1
            continue
        src = load(p)
        rows = src.doc["rows"] if src.kind == "sweep" else src.doc["results"]
        assert len(rows) == len(raw) and src.notes == [], p
        for got, was in zip(rows, raw, strict=True):
            if "variant" not in was and "impl" in was:  # a model row of the older layout: given the generic fields
                assert {k: got[k] for k in was} == was and set(got) - set(was) == GENERIC, p
            else:
                assert got == was, p
        loaded += 1
    assert loaded >= 10 and refused >= 1


def test_paths_in_a_list_are_read_by_the_same_loader():
    """A path given inside a list is sniffed as a path given alone: a trace is a trace, not a broken document."""
    from attnscope.document.load import as_sources

    nested = [[str(ROOT / "tests/data/h200/flex.json"), ROOT / "tests/data/h200/run.json"]]
    assert [s.kind for s in as_sources(nested)] == ["trace", "run"]


# --- a document without its "kind": told apart by its rows, each rule by a hand-made document ---------------------


def _doc(*rows: dict, **extra) -> dict:
    return {"schema_version": 1, "results": list(rows), **extra}


def test_a_document_whose_every_row_came_from_a_trace_is_an_analyze_document():
    from attnscope.document.load import kind_of

    t = {**ROW, "source": "trace"}
    assert kind_of(_doc(t, {**t, "variant": "flex"}), "a.json") == "analyze"
    # one measured row among traced ones: a run (analyze writes only traced rows)
    assert kind_of(_doc(t, {**ROW, "source": "run"}), "a.json") == "run"
    assert kind_of(_doc({**ROW, "source": "run"}, t), "a.json") == "run"
    assert kind_of(_doc(ROW), "a.json") == "run"  # a row that names no source
    assert kind_of(_doc(), "a.json") == "run"  # no rows at all: nothing says trace
    # rows that are not dicts are not read; the traced row alone decides
    assert kind_of(_doc(t, "not a row"), "a.json") == "analyze"


def test_the_kind_field_wins_and_model_documents_are_told_by_their_rows():
    from attnscope.document.load import kind_of

    t = {**ROW, "source": "trace"}
    assert kind_of(_doc(t, kind="run"), "a.json") == "run"
    assert kind_of(_doc(ROW, kind="analyze"), "a.json") == "analyze"
    assert kind_of(_doc({"impl": "sdpa", "status": "ok"}), "a.json") == "model"
    assert kind_of(_doc(t, model="llama"), "a.json") == "model"
    assert kind_of(_doc(t, config={"layers": 2}), "a.json") == "model"


def test_documents_that_hold_no_results_are_refused_naming_what_they_are():
    from attnscope.document.load import kind_of
    from attnscope.document.schema import SCHEMA_VERSION

    assert SCHEMA_VERSION == 2  # the versions named below
    cases = [
        ({"kind": "diff"}, "x.json: a diff document (what attnscope diff writes), not results"),
        ({"kind": "recommend"}, "x.json: a recommendation (what attnscope recommend writes), not result rows"),
        ({"best": {}, "policy": []}, "x.json: a recommendation (what attnscope recommend writes), not result rows"),
        ({"results": []}, "x.json: not an attnscope result document (no schema_version/results)"),
        ({"schema_version": 1}, "x.json: not an attnscope result document (no schema_version/results)"),
        (
            {"schema_version": SCHEMA_VERSION + 1, "results": []},
            "x.json: a result document of schema_version 3, newer than this attnscope reads (result documents of "
            "schema_version 1, 2): a newer attnscope reads it",
        ),
    ]
    for doc, said in cases:
        with pytest.raises(DocumentError) as e:
            kind_of(doc, "x.json")
        assert str(e.value) == said
    # the schema this attnscope writes, and a result list beside "best" and "policy", are results
    assert kind_of({"schema_version": SCHEMA_VERSION, "results": []}, "x.json") == "run"
    assert kind_of({"schema_version": 1, "results": [], "best": {}, "policy": []}, "x.json") == "run"


def test_a_kind_named_in_the_document_is_its_kind_and_a_tour_needs_its_kind_and_steps():
    """``kind`` names run, analyze, model or sweep as it is, even where the fields would say otherwise (a model
    document whose rows lack ``impl``; a sweep with no results list).  A tour transcript is a document of kind "tour"
    with its steps, refused in full words; "steps" alone (a run's document carrying a key of that name) is no tour."""
    from attnscope.document.load import kind_of

    rows = [{"variant": "sdpa", "status": "ok"}]
    assert kind_of({"kind": "model", "schema_version": 1, "results": rows}, "x.json") == "model"
    assert kind_of({"schema_version": 1, "results": rows}, "x.json") == "run"  # the same without its kind
    assert kind_of({"kind": "sweep"}, "x.json") == "sweep"
    assert kind_of({"schema_version": 2, "results": rows, "steps": 3}, "x.json") == "run"
    with pytest.raises(DocumentError) as e:
        kind_of({"kind": "tour", "steps": []}, "t.json")
    assert str(e.value) == (
        "t.json: a tour transcript (what attnscope tour writes), not result rows: the tour draws its own page "
        "(a finished transcript resumed with an HTML path measures nothing more)"
    )
