"""What one measurement is: the ``Job`` protocol every executor runs (a key in a store, a label for the progress,
``measure`` in the worker, ``failed`` where the worker could not answer), the options every job of a run or sweep
shares, and the key and trace file name of a job.  Two kinds of job implement it: the attention job beside the code
that measures it (:class:`attnscope.execute.worker.AttentionJob`) and the model's (attnscope.execute.model_job).
Plain data: nothing here imports what measures."""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Hashable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar, Protocol, TypeVar

from attnscope.core.arguments import MAX_BUCKET, MAX_SEED, MAX_STEPS, check_seconds, check_whole
from attnscope.core.case import file_stem
from attnscope.core.types import Case, Status


@dataclass(frozen=True)
class Options:
    """How to measure, the same for every job of a run or sweep."""

    flush_l2: bool = False
    timing_budget_s: float = 0.5  # per variant, per timer
    seed: int = 0
    trace_dir: Path | None = None  # keep each job's trace here (else a temporary file, deleted)
    measure_peak: bool = True
    steps: int = 0  # a serving case: also decode this many steps over a growing cache (attnscope.execute.serve)
    bucket: int = 256  # with steps: tokens per shape bucket (one CUDA graph each)

    def __post_init__(self) -> None:  # a library caller's numbers checked as the command line's flags are
        check_seconds("timing_budget_s", self.timing_budget_s)
        check_whole("steps", self.steps, minimum=0, maximum=MAX_STEPS)
        check_whole("bucket", self.bucket, maximum=MAX_BUCKET)
        check_whole("seed", self.seed, minimum=0, maximum=MAX_SEED)


class Measured(Protocol):
    """What an executor reads of a job's result: a frozen dataclass with a variant, a status, the environment it
    was measured in (None where the worker died first) and its costs in seconds."""

    __dataclass_fields__: ClassVar[dict[str, Any]]

    @property
    def variant(self) -> str: ...

    @property
    def status(self) -> str: ...

    @property
    def env(self) -> Any: ...

    @property
    def cost_s(self) -> dict[str, float] | None: ...


M = TypeVar("M", bound=Measured, covariant=True)


class Job(Protocol[M]):
    """One measurement, plain data that crosses processes: executors send it to a worker, which calls ``measure``;
    a worker that dies or hangs past the timeout gets ``failed``'s row instead.  ``key`` is what makes the row
    unique in a store (``--resume`` skips it), ``case`` what a worker caches between jobs (hashable), ``label``
    what the progress shows while it runs."""

    @property
    def key(self) -> tuple[str, str, str]: ...

    @property
    def case(self) -> Hashable: ...

    @property
    def variant(self) -> str: ...

    def label(self) -> str: ...

    def measure(self) -> M: ...

    def failed(self, status: Status, reason: str | None) -> M: ...


def job_key(variant: str, case: dict[str, Any] | None) -> tuple[str, str, str]:
    """(variant, case, mode): what makes a result unique in a store.  The case is compared by its
    fields, mode apart, so results written by an older or newer attnscope still match."""
    c = dict(case or {})
    mode = str(c.pop("mode", "fwd"))
    return variant, json.dumps(c, sort_keys=True, separators=(",", ":")), mode


def trace_file_name(variant: str, case: Case) -> str:
    """A file name that tells jobs of a sweep apart: the variant, then each field's part of it from the table of
    the case's fields (:func:`attnscope.core.case.file_stem`): shape, dtype, mask, soft-cap, ALiBi, mode.

    A case without a mask is named as before (``-causal`` or nothing); a mask adds ``-mask-<canonical>``
    (``document:1000,1500`` as ``document_1000_1500``), a soft-cap ``-cap<c>``, ALiBi ``-alibi``.  A name
    over 200 characters (a long document list) is cut and ends with a hash of the whole."""
    stem = re.sub(r"[^A-Za-z0-9_.+-]", "_", variant + file_stem(case))
    if len(stem) > 200:
        stem = stem[:180] + "-" + hashlib.sha256(stem.encode()).hexdigest()[:16]
    return stem + ".json"
