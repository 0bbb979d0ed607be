"""The general JSON parser of the safe path: orjson when installed, else the standard library (same result)."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

try:
    import orjson

    loads: Callable[[bytes], Any] = orjson.loads
    JSONError: type[ValueError] = orjson.JSONDecodeError
except ImportError:  # an image without orjson (the GPU machine's): the stdlib parser, slower, same result
    loads = json.loads
    JSONError = json.JSONDecodeError
