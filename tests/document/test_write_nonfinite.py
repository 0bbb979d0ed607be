"""A document's NaN and Inf are written as null wherever they sit (JSON has neither), tuples as arrays."""

from __future__ import annotations

import collections
import json
from pathlib import Path

from attnscope.document.schema import row_bytes, write_atomic

NAN, INF = float("nan"), float("inf")


class Ratio(float):
    """A float subclass (numpy's float64 is one): its NaN is null too, a finite value is written as its text."""


Pair = collections.namedtuple("Pair", "a b")


def _doc() -> dict:
    return {
        "schema_version": 1,
        "results": [
            {
                "variant": "v",
                "status": "ok",
                "tflops": NAN,
                "roofline": {"pct": INF, "kernels": [{"tbps": -INF, "grid": (1, 2, NAN)}]},
                "pair": Pair(NAN, (Ratio(INF), Ratio(2.5))),
                "ordered": collections.OrderedDict(x=[NAN, 1.5]),
                3: "non-string key",
            }
        ],
    }


EXPECTED_ROW = {
    "variant": "v",
    "status": "ok",
    "tflops": None,
    "roofline": {"pct": None, "kernels": [{"tbps": None, "grid": [1, 2, None]}]},
    "pair": [None, [None, "2.5"]],
    "ordered": {"x": [None, 1.5]},
    "3": "non-string key",
}


def test_write_atomic_writes_nonfinite_floats_as_null(tmp_path: Path):
    p = tmp_path / "doc.json"
    write_atomic(p, _doc())
    assert json.loads(p.read_text()) == {"schema_version": 1, "results": [EXPECTED_ROW]}


def test_row_bytes_writes_nonfinite_floats_as_null():
    line = row_bytes(_doc()["results"][0])
    assert b"\n" not in line
    assert json.loads(line) == EXPECTED_ROW
