"""The one reader of result files: what a file is (a run, analyze or model document, a sweep's JSON lines, or a
Kineto trace for the API to analyse), sniffed from its content, and the rows a recommendation reads.  A torn line is
left out and said so; a file of another kind (a diff, a recommendation) is named as what it is.

Every reader goes through here: ``report``, ``recommend`` and ``diff`` (:func:`load`, :func:`result_rows`,
:func:`load_document`) and the sweep's store when it resumes (:func:`jsonl_rows`).  A trace is only recognised here
(gzipped or not); reading its events is the trace package's work, reached through the API."""

from __future__ import annotations

import json
import zlib
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from attnscope.document.schema import DocumentError, check_version

Kind = Literal["run", "analyze", "sweep", "model", "trace"]  # a trace: doc is {}, path names it


@dataclass
class Source:
    kind: Kind
    doc: dict[str, Any]  # a sweep's rows are under "rows"
    path: Path | None = None  # the file it came from: traces named in it are looked for beside it too
    notes: list[str] = field(default_factory=list)

    @property
    def label(self) -> str:
        return self.path.name if self.path else self.kind


def _is_row(d: Any) -> bool:
    return isinstance(d, dict) and "variant" in d and "status" in d and "results" not in d


def kind_of(doc: dict[str, Any], where: str) -> Kind:
    """run, analyze or model, from the document's own fields; a document of no kind named in it has its
    schema_version checked for the kind it is read as (:func:`attnscope.document.schema.check_version`)."""
    if doc.get("kind") in ("run", "analyze", "model", "sweep"):
        return doc["kind"]  # type: ignore[no-any-return]
    if doc.get("kind") == "diff":
        raise DocumentError(f"{where}: a diff document (what attnscope diff writes), not results")
    if doc.get("kind") == "recommend" or ("best" in doc and "policy" in doc and "results" not in doc):
        raise DocumentError(f"{where}: a recommendation (what attnscope recommend writes), not result rows")
    if doc.get("kind") == "tour" and "steps" in doc:
        raise DocumentError(
            f"{where}: a tour transcript (what attnscope tour writes), not result rows: the tour draws its own page "
            "(a finished transcript resumed with an HTML path measures nothing more)"
        )
    results = doc.get("results")
    if not isinstance(results, list) or "schema_version" not in doc:
        raise DocumentError(f"{where}: not an attnscope result document (no schema_version/results)")
    rows = [r for r in results if isinstance(r, dict)]
    if "model" in doc or "config" in doc or any("impl" in r for r in rows):
        kind: Kind = "model"
    elif rows and all(r.get("source") == "trace" for r in rows):
        kind = "analyze"
    else:
        kind = "run"
    check_version(doc, where, model=kind == "model")
    return kind


def parse_json(data: bytes | str) -> Any:
    """``json.loads`` for a file a user gave: ValueError for anything that cannot be read, nesting too deep for the
    parser (RecursionError) included."""
    try:
        return json.loads(data)
    except RecursionError:
        raise ValueError("nested too deeply to read") from None


def _row_problem(d: Any) -> str | None:
    """Why a JSON value is not a result row a reader can use (None: it is one): the fields every reader computes
    with must have their types."""
    if not _is_row(d):
        return "is not a result row (no variant/status)"
    if not isinstance(d["variant"], str) or not isinstance(d["status"], str):
        return "is not a result row (needs variant and status strings)"
    from attnscope.document.model_rows import is_model_row, model_row_problem

    if is_model_row(d):
        problem = model_row_problem(d)
        return None if problem is None else f"is not a result row ({problem})"
    from attnscope.document.schema import check_row

    try:
        check_row(d, "row")
    except DocumentError as e:
        return f"is not a result row ({str(e).removeprefix('row: ')})"
    return None


def jsonl_rows(data: bytes, where: str) -> tuple[list[dict[str, Any]], list[str]]:
    """The result rows of JSON lines, and one note per line left out: a torn line (a write cut short, even inside a
    multi-byte character), a line nested too deeply to read, or a line that is not a row with the types a reader
    needs.  Never raises: the caller decides what no rows means."""
    rows: list[dict[str, Any]] = []
    notes: list[str] = []
    # a line ends at \n alone (JSON Lines): splitlines() would also cut at a stray \r inside a broken line (a gzip
    # header's timestamp can hold one), counting it twice and numbering every later line wrong
    for i, line in enumerate(data.split(b"\n"), 1):
        if not line.strip():
            continue
        try:
            d = parse_json(line)
        except ValueError as e:  # UnicodeDecodeError included
            why = "nested too deeply to read" if "nested" in str(e) else "not valid JSON (a torn write?)"
            notes.append(f"{where}: line {i} is {why}: left out")
            continue
        problem = _row_problem(d)
        if problem is None:
            rows.append(d)
        else:
            notes.append(f"{where}: line {i} {problem}: left out"[:300])
    return rows, notes


def _said_once(notes: list[str], where: str) -> list[str]:
    """The lines left out of one file, said in one note (the count, then the first few lines' reasons)."""
    if len(notes) <= 1:
        return notes
    first = "; ".join(n.removeprefix(f"{where}: ").removesuffix(": left out") for n in notes[:3])
    return [f"{where}: {len(notes)} lines left out ({first}{'; …' if len(notes) > 3 else ''})"]


# Statuses a sweep's --resume measures again (execute.store.Store.done): the row that follows supersedes them.
RETRIED = frozenset({"crashed"})


def retried(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The rows without those that a later row of the same job (variant and case, mode included) superseded: a
    ``crashed`` row that ``--resume`` measured again.  Every other row is kept, in its order."""
    last: dict[str, int] = {}
    keys = []
    for i, r in enumerate(rows):
        k = json.dumps([r.get("variant"), r.get("case")], sort_keys=True, default=str)
        keys.append(k)
        last[k] = i
    return [r for i, r in enumerate(rows) if not (r.get("status") in RETRIED and last[keys[i]] != i)]


def _rows(data: bytes, where: str) -> tuple[list[dict[str, Any]], list[str]]:
    """JSON lines; a torn line (a sweep killed mid-write, then resumed) is passed over, and said so; a crashed row
    measured again by --resume gives way to the new one (:func:`retried`)."""
    rows, notes = jsonl_rows(data, where)
    rows = retried(rows)
    if not rows and all("not valid JSON" in n or "nested too deeply" in n for n in notes):
        raise DocumentError(
            f"{where}: not valid JSON (neither a result document nor JSON lines): no attnscope result rows"
        )
    if not rows:
        first = notes[0].removeprefix(f"{where}: ").removesuffix(": left out") if notes else ""
        raise DocumentError(
            f"{where}: no result rows (neither an attnscope document nor a sweep JSONL"
            + (f"; {first})" if "result row (" in first else ")")
        )
    return rows, _said_once(notes, where)


TRACE_HEAD = 1 << 16  # a Kineto trace names "traceEvents" near its start


def head(path: str | Path, n: int = TRACE_HEAD) -> bytes:
    """The first ``n`` bytes of a file, decompressed when it is gzipped (by its magic bytes, whatever its name)."""
    with open(path, "rb") as f:
        raw = f.read(n)
    if raw[:2] == b"\x1f\x8b":
        try:
            raw = zlib.decompressobj(31).decompress(raw, n)
        except zlib.error as e:
            raise DocumentError(f"{path}: corrupt gzip ({e})") from None
    return raw


def is_trace(p: Path) -> bool:
    """A Kineto trace: ``"traceEvents"`` near its start (gzipped or not), or a ``.gz`` name.  A corrupt gzip is a
    DocumentError; a file that cannot be opened is left to the reader to name."""
    try:
        return b'"traceEvents"' in head(p) or p.name.endswith(".gz")
    except OSError:
        return p.name.endswith(".gz")


def written_by_attnscope(p: Path) -> bool:
    """Whether a file that is not a trace is one attnscope wrote (a result document: its ``"schema_version"`` key,
    which Kineto spells ``"schemaVersion"``; or a store's JSON lines: a first line that is a result row), by its
    first bytes; False for a trace, or a file that cannot be read (left to the reader to name)."""
    try:
        h = head(p)
    except (OSError, DocumentError):
        return False
    if b'"traceEvents"' in h:
        return False
    if b'"schema_version"' in h:
        return True
    try:
        return _is_row(json.loads(h.split(b"\n", 1)[0]))
    except (ValueError, RecursionError):
        return False


def load(path: str | Path) -> Source:
    """A result file as a Source: a document, a sweep's rows, or (kind "trace") a Kineto trace left to the API."""
    p = Path(path)
    if p.exists() and not p.is_file():
        why = "a directory: name a result file or a trace in it" if p.is_dir() else "not a file"
        raise DocumentError(f"{p}: {why}")
    if p.is_file() and is_trace(p):
        return Source("trace", {}, p)
    return load_source(p)


def result_rows(paths: Sequence[str | Path]) -> tuple[list[dict[str, Any]], list[str]]:
    """The result rows of sweep JSONL files and run documents, in order, each checked like a document's results
    (DocumentError), and the notes of what was left out (torn lines)."""
    from attnscope.document.schema import check_document

    rows: list[dict[str, Any]] = []
    notes: list[str] = []
    for path in paths:
        src = load(path)
        if src.kind == "trace":
            raise DocumentError(f"{path}: a trace, not result rows (attnscope analyze reads it)")
        got = src.doc["rows"] if src.kind == "sweep" else src.doc.get("results") or []
        check_document({"schema_version": 1, "results": got}, str(path))
        rows += got
        notes += src.notes
    return rows, notes


def load_source(path: str | Path) -> Source:
    """A result file read as a document or as JSON lines (a trace is not sniffed here: see :func:`load`)."""
    p = Path(path)
    try:
        data = p.read_bytes()
    except FileNotFoundError:
        raise DocumentError(f"{p}: no such file") from None
    except OSError as e:
        raise DocumentError(f"{p}: cannot read ({e.__class__.__name__})") from None
    if not data.strip():
        raise DocumentError(f"{p}: empty file (no attnscope result rows)")
    try:
        doc = parse_json(data)
    except ValueError:
        doc = None  # several JSON values: JSON lines (or a torn one, or one nested too deeply)
    if isinstance(doc, dict) and not _is_row(doc):
        kind = kind_of(doc, str(p))
        if kind in ("run", "analyze"):  # the types every reader computes with, checked once, here
            from attnscope.document.schema import check_document

            check_document(doc, str(p), strict=True)
        elif kind == "model":
            from attnscope.document.model_rows import model_document_problem, with_generic_rows

            check_version(doc, str(p), model=True)
            problem = model_document_problem(doc)
            if problem is None:
                doc = with_generic_rows(doc)  # written before its rows carried their point: read as one written now
                problem = model_document_problem(doc)
            if problem is not None:
                raise DocumentError(f"{p}: not a readable model document: {problem}"[:300])
        return Source(kind, doc, p)
    if isinstance(doc, list) and doc and all(_row_problem(d) is None for d in doc):
        return Source("sweep", {"rows": doc}, p)
    rows, notes = _rows(data, str(p))
    from attnscope.document.model_rows import is_model_row, model_document

    if rows and all(is_model_row(r) for r in rows):  # `model --out` rows
        return Source("model", model_document(rows), p, notes)
    return Source("sweep", {"rows": rows}, p, notes)


def load_document(path: str | Path) -> dict[str, Any]:
    """A result document (run, analyze or model) as it is stored, checked (DocumentError): not JSON lines, not a
    trace, not a diff or a recommendation."""
    return document_of(load(path))


def document_of(src: Source) -> dict[str, Any]:
    """The checked result document a Source holds (DocumentError for a trace or a sweep's rows)."""
    where = str(src.path) if src.path else src.kind
    if src.kind == "trace":
        raise DocumentError(f"{where}: a trace, not a result document (attnscope analyze reads it)")
    if "results" not in src.doc:
        raise DocumentError(f"{where}: JSON lines (a sweep's rows), not a result document")
    from attnscope.document.schema import check_document

    check_document(src.doc, where)
    return src.doc


def as_sources(docs: Any) -> list[Source]:
    """Paths, documents and sweep rows, in order; consecutive sweep rows make one sweep."""
    out: list[Source] = []
    rows: list[dict[str, Any]] = []
    for d in docs:
        if _is_row(d):
            rows.append(d)
            continue
        if rows:
            out.append(Source("sweep", {"rows": rows}))
            rows = []
        if isinstance(d, Source):
            out.append(d)
        elif isinstance(d, str | Path):
            out.append(load(d))  # a trace too: the API analyses it
        elif isinstance(d, dict):
            out.append(Source(kind_of(d, "document"), d))
        elif isinstance(d, list):
            out.extend(as_sources(d))
        else:
            raise DocumentError(f"cannot report on a {type(d).__name__}")
    if rows:
        out.append(Source("sweep", {"rows": rows}))
    return out
