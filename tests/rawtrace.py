"""Raw-trace helpers for tests: read the Kineto JSON directly, independent of attnscope."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

DATA = Path(__file__).parent / "data"
H200 = DATA / "h200"
H200_BIG = H200 / "b1h32s4096d128"
VARIANTS = [
    "naive",
    "naive_inplace",
    "sdpa_math",
    "sdpa_efficient",
    "sdpa_flash",
    "sdpa_cudnn",
    "sdpa_default",
    "flex",
    "flex_compiled",
]


def raw_events(path: Path) -> list[dict[str, Any]]:
    return json.loads(path.read_text())["traceEvents"]


def raw_call_window(events: list[dict[str, Any]]) -> tuple[float, float]:
    ann = [e for e in events if e.get("cat") == "user_annotation" and e["name"] == "attnscope::call"]
    assert len(ann) == 1
    return ann[0]["ts"], ann[0]["ts"] + ann[0]["dur"]


def raw_gpu_events_in_call(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """GPU events whose launch (runtime call) lies inside the attnscope::call window."""
    t0, t1 = raw_call_window(events)
    corr = {
        e["args"]["correlation"]
        for e in events
        if e.get("cat") in ("cuda_runtime", "cuda_driver") and t0 <= e["ts"] <= t1
    }
    return [
        e
        for e in events
        if e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset") and e["args"].get("correlation") in corr
    ]


def raw_mask_kernels(path: Path, dims: list[int]) -> list[dict[str, Any]]:
    """GPU events launched (runtime call by correlation, then the cpu_ops around it on its thread) under an
    aten::ones or aten::tril of ``dims``, or an aten::where whose first input is that boolean mask."""
    ev = raw_events(path)
    calls = {e["args"]["correlation"]: e for e in ev if e.get("cat") in ("cuda_runtime", "cuda_driver")}
    ops = [e for e in ev if e.get("cat") == "cpu_op"]

    def mask_op(o: dict[str, Any]) -> bool:
        a = o.get("args", {})
        if o["name"] == "aten::ones":
            return a.get("Concrete Inputs", [""])[0] == str(dims)
        first = (a.get("Input Dims") or [None])[0]
        if o["name"] == "aten::tril":
            return first == dims
        return o["name"] == "aten::where" and first == dims and a.get("Input type", [""])[0] == "bool"

    out = []
    for g in raw_gpu_events_in_call(ev):
        c = calls[g["args"]["correlation"]]
        around = [o for o in ops if o["tid"] == c["tid"] and o["ts"] <= c["ts"] <= o["ts"] + o["dur"]]
        if any(mask_op(o) for o in around):
            out.append(g)
    return out


LLAMA_TRACE = "llama_train_sdpa.json.gz"


def shared_llama_trace(start: Path | None = None, top: Path | None = None) -> Path:
    """The shared Llama training trace, or a failed test naming every place it was looked for.

    ``$ATTNSCOPE_SHARED_DATA`` first, then ``shared/data`` beside the checkout or beside any folder
    above it (CI clones next to ``../shared``; worktrees sit a level deeper).  A missing trace
    fails loudly: a model-scale check that silently skips is a check nobody runs.  Set
    ``ATTNSCOPE_NO_SHARED_DATA=1`` to skip on purpose (the skip and its reason show in the summary).
    ``top``: look no higher than this folder (a test's own tree, whatever lies above it on the machine).
    """
    import os

    import pytest

    env = os.environ.get("ATTNSCOPE_SHARED_DATA")
    places = [Path(env)] if env else []
    here = start or Path(__file__).resolve().parent
    above = [here, *here.parents]
    if top is not None:
        above = [p for p in above if p == top or top in p.parents]
    places += [p / "shared" / "data" for p in above][1:]
    for d in places:
        if (d / LLAMA_TRACE).is_file():
            return d / LLAMA_TRACE
    if os.environ.get("ATTNSCOPE_NO_SHARED_DATA") == "1":
        pytest.skip(f"{LLAMA_TRACE}: ATTNSCOPE_NO_SHARED_DATA=1")
    looked = ", ".join(str(d) for d in places)
    pytest.fail(
        f"{LLAMA_TRACE} not found (looked in {looked}); put the shared data beside the checkout, "
        "set ATTNSCOPE_SHARED_DATA, or ATTNSCOPE_NO_SHARED_DATA=1 to skip on purpose"
    )
