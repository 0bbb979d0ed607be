"""The general JSON parser: msgspec's untyped decoder when installed, else orjson, else the standard library.

All three give the same Python values for the JSON Kineto writes (msgspec and the standard library also keep
integers beyond 64 bits exact; orjson turns them into floats).  msgspec is imported anyway by the fast path, so
the common case imports no second parser (orjson alone pulls in ``uuid``, ``platform`` and ``datetime``: ~5 ms
of an ``analyze``).  Each parser's refusal is a ``JSONError``; ``safe.tolerant_loads`` retries what it refuses
with the standard library on the text decoded leniently.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

loads: Callable[[bytes], Any]
JSONError: tuple[type[Exception], ...]
try:
    import msgspec

    loads = msgspec.json.decode
    JSONError = (msgspec.DecodeError, json.JSONDecodeError)
except ImportError:  # an image without msgspec
    try:
        import orjson

        loads = orjson.loads
        JSONError = (orjson.JSONDecodeError,)
    except ImportError:
        loads = json.loads
        JSONError = (json.JSONDecodeError,)
