"""The JSON document written piece by piece: the same bytes as orjson's whole-document output, in less memory."""

from __future__ import annotations

import io
import json
import lzma
from pathlib import Path

import orjson
import pytest

from attnscope.document.schema import write_atomic, write_json
from tests.peakrss import run_peak

ROOT = Path(__file__).resolve().parents[2]
GOLDEN = sorted((ROOT / "tests" / "data" / "golden").glob("*.json.xz"))
OPT = orjson.OPT_INDENT_2 | orjson.OPT_NON_STR_KEYS


def whole(doc: object) -> bytes:
    """What one orjson call writes for the whole document: the reference the pieces must add up to."""
    return orjson.dumps(doc, default=str, option=OPT) + b"\n"


def streamed(doc: dict) -> bytes:
    buf = io.BytesIO()
    write_json(buf, doc)
    return buf.getvalue()


@pytest.mark.parametrize("gold", GOLDEN, ids=[g.name.removesuffix(".json.xz") for g in GOLDEN])
def test_every_analyze_document_is_written_byte_for_byte(gold: Path) -> None:
    doc = json.loads(lzma.decompress(gold.read_bytes()))["document"]
    if doc is None:
        pytest.skip("this golden is an error, not a document")
    assert streamed(doc) == whole(doc)


def test_nesting_empties_long_lists_and_odd_keys() -> None:
    """Every branch of the walk: empty containers at depth, lists on each side of the chunking (16 walked, 17+
    chunked, 256 and 257 elements), non-string keys, NaN as null, tuples and unknown objects."""
    doc = {
        "empty": {"l": [], "d": {}, "nested": [[], {}, [[]]]},
        "few": [{"a": [1, {"b": []}]}] * 16,
        "chunked": [{"k": i, "v": [i, {"w": None}]} for i in range(17)],
        "edge": [list(range(3))] * 256,
        "edge1": [{"x": {}}] * 257,
        "keys": {1: "int", 2.5: "float", False: "bool", None: "none"},
        "odd": [float("nan"), float("inf"), (1, (2, 3)), Path("p")] * 5,
        "deep": {"a": {"b": {"c": {"d": [{"e": [[{"f": "g"}] * 20]}]}}}},
        "scalars": [1, "s", None, False, 2.0],
    }
    assert streamed(doc) == whole(doc)
    assert json.loads(streamed(doc))["keys"] == {"1": "int", "2.5": "float", "false": "bool", "null": "none"}


def test_write_atomic_writes_the_stream(tmp_path: Path) -> None:
    doc = {"results": [{"kernels": [{"name": f"k{i}", "t": i / 3} for i in range(1000)]}]}
    out = tmp_path / "doc.json"
    write_atomic(out, doc)
    assert out.read_bytes() == whole(doc)
    assert [p.name for p in tmp_path.iterdir()] == ["doc.json"]  # no temporary file left


def _peak_mib(*args: str) -> float:
    rc, lines, peak = run_peak(*args)
    assert rc == 0, lines
    return peak


def test_json_adds_little_to_the_peak_memory(tmp_path: Path) -> None:
    """The Llama training trace's 17 MB document: --json cost 35 MiB more than the text report alone when it was
    serialised whole (48 → 83 MiB); written piece by piece, a few MiB."""
    trace = "tests/data/llama_train_sdpa.json.gz"
    plain = _peak_mib("analyze", trace)
    with_json = _peak_mib("analyze", trace, "--json", str(tmp_path / "out.json"))
    assert (tmp_path / "out.json").stat().st_size > 10_000_000
    assert with_json - plain < 8, f"{plain:.0f} MiB without --json, {with_json:.0f} MiB with it"
