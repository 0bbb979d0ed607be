"""One check of a document's schema_version serves result documents (run, analyze) and model documents: the same
words for a version that is no positive integer, and for a newer one the same sentence naming the document's kind,
its version and the versions read.  Result documents are read up to version 2, model documents up to 1 (the
constants are checked against those numbers, so a version bump asks for these words to be read again)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from attnscope.cli.main import main
from attnscope.document.load import kind_of, load
from attnscope.document.schema import MODEL_SCHEMA_VERSION, SCHEMA_VERSION, DocumentError, check_document, check_version

NO_VERSION = [0, -1, "1", True, False, None, 1.0, [1]]


def test_the_versions_read_are_the_ones_named_here():
    assert (SCHEMA_VERSION, MODEL_SCHEMA_VERSION) == (2, 1)


@pytest.mark.parametrize("model", [False, True])
@pytest.mark.parametrize("version", NO_VERSION)
def test_a_version_that_is_no_positive_integer_is_said_alike_for_both_kinds(model, version):
    with pytest.raises(DocumentError) as e:
        check_version({"schema_version": version}, "x.json", model=model)
    assert str(e.value) == f"x.json: schema_version must be a positive integer, got {version!r}"


@pytest.mark.parametrize("model", [False, True])
def test_a_missing_version_is_no_positive_integer(model):
    with pytest.raises(DocumentError) as e:
        check_version({}, "x.json", model=model)
    assert str(e.value) == "x.json: schema_version must be a positive integer, got None"


def test_a_huge_value_is_said_in_one_bounded_line():
    """A version that is a string of 10,000 characters: the message stops at 300 characters, for either kind and
    through check_document too (which did not bound it before)."""
    doc = {"schema_version": "9" * 10_000, "results": []}
    for check in (lambda: check_version(doc, "x.json"), lambda: check_version(doc, "x.json", model=True)):
        with pytest.raises(DocumentError) as e:
            check()
        assert len(str(e.value)) == 300 and str(e.value).startswith("x.json: schema_version must be a positive")
    with pytest.raises(DocumentError) as e:
        check_document(doc, "x.json")
    assert len(str(e.value)) == 300


@pytest.mark.parametrize(
    ("model", "version", "said"),
    [
        (
            False,
            3,
            "x.json: a result document of schema_version 3, newer than this attnscope reads (result documents of "
            "schema_version 1, 2): a newer attnscope reads it",
        ),
        (
            True,
            2,
            "x.json: a model document of schema_version 2, newer than this attnscope reads (model documents of "
            "schema_version 1): a newer attnscope reads it",
        ),
    ],
)
def test_a_newer_version_names_its_kind_and_the_versions_read(model, version, said):
    with pytest.raises(DocumentError) as e:
        check_version({"schema_version": version}, "x.json", model=model)
    assert str(e.value) == said


def test_the_versions_read_pass():
    for v in (1, 2):
        check_version({"schema_version": v}, "x.json")
    check_version({"schema_version": 1}, "x.json", model=True)


def test_check_document_and_kind_of_say_a_newer_result_document_in_the_same_words():
    said = (
        "x.json: a result document of schema_version 3, newer than this attnscope reads (result documents of "
        "schema_version 1, 2): a newer attnscope reads it"
    )
    doc = {"schema_version": 3, "results": []}
    for check in (lambda: check_document(doc, "x.json"), lambda: kind_of(doc, "x.json")):
        with pytest.raises(DocumentError) as e:
            check()
        assert str(e.value) == said


def test_a_model_document_with_no_kind_named_is_checked_as_a_model_document():
    """A document of no ``kind`` whose rows carry ``impl`` is read as a model document: its version 2 is past the model
    documents' 1 (though a result document's 2 is read), said as a model document's."""
    doc = {"schema_version": 2, "results": [{"impl": "sdpa", "status": "ok"}]}
    with pytest.raises(DocumentError) as e:
        kind_of(doc, "x.json")
    assert str(e.value).startswith("x.json: a model document of schema_version 2, newer than this attnscope reads")
    assert kind_of({**doc, "schema_version": 1}, "x.json") == "model"


def _run_doc(version: Any) -> dict[str, Any]:
    return {"schema_version": version, "tool": "attnscope", "results": [{"variant": "sdpa", "status": "ok"}]}


@pytest.mark.parametrize("command", ["recommend", "report"])
def test_a_newer_run_document_is_refused_in_one_line(tmp_path, capsys, command):
    doc = tmp_path / "new.json"
    doc.write_text(json.dumps(_run_doc(3)))
    argv = ["recommend", str(doc)] if command == "recommend" else ["report", str(doc), "-o", str(tmp_path / "p.html")]
    assert main(argv) == 2
    assert capsys.readouterr().err == (
        f"attnscope: error: {doc}: a result document of schema_version 3, newer than this attnscope reads "
        "(result documents of schema_version 1, 2): a newer attnscope reads it\n"
    )
    assert not (tmp_path / "p.html").exists()


@pytest.mark.parametrize("version", [0, "2", True])
def test_a_run_document_whose_version_is_no_version_is_refused_as_a_model_document_is(tmp_path, capsys, version):
    doc = tmp_path / "bad.json"
    doc.write_text(json.dumps(_run_doc(version)))
    assert main(["recommend", str(doc)]) == 2
    assert capsys.readouterr().err == (
        f"attnscope: error: {doc}: schema_version must be a positive integer, got {version!r}\n"
    )
    with pytest.raises(DocumentError):
        load(doc)
