"""A model row as a job (attnscope.execute.job.Job): one (implementation, batch, seq, mode) measured by its own
``measure`` in whatever executor runs it (inline, a worker process, a Ray actor), so a crash, an OOM or a timeout
is a row, and a store and ``--resume`` treat model rows as they treat attention rows.  Plain data: it crosses processes.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from attnscope.execute.job import job_key


@dataclass(frozen=True)
class ModelCase:
    """Where a model row is measured: the config (its values, to rebuild it in the worker) and the point."""

    config: str  # the name --config gave
    source: str  # preset, file or model_type
    values_json: str  # the config's values, layers already applied
    layers: int | None  # --layers, or None for the config's own depth
    depth: int  # the number of blocks built
    batch: int
    seq: int
    dtype: str
    device: str
    mode: str
    steps: int | None = None  # decode over a growing static cache, this many steps (model_decode.py)
    replay: str | None = None  # with steps: "eager" or "graph"

    def label(self) -> str:
        more = f" {self.steps} steps {self.replay}" if self.steps else ""
        return f"{self.config} B={self.batch} S={self.seq} {self.dtype}{more}"

    def point(self) -> dict[str, Any]:
        """The row's ``case``: what identifies it in a store (steps and replay only where set: older keys stay)."""
        return {
            "config": self.config,
            "layers": self.depth,
            "batch": self.batch,
            "seq": self.seq,
            "dtype": self.dtype,
            "device": self.device,
            "mode": self.mode,
            **({"steps": self.steps, "replay": self.replay} if self.steps else {}),
        }


@dataclass(frozen=True)
class ModelJob:
    case: ModelCase
    variant: str  # the attention implementation (transformers' attn_implementation)
    budget_s: float = 1.0
    explicit: bool = True  # --impl named it: an implementation left out of the CPU default set runs
    trace_dir: str | None = None
    grid: bool = False  # several points: trace names carry batch and seq

    @property
    def key(self) -> tuple[str, str, str]:
        graph = "+graph" if self.case.replay == "graph" else ""  # as the row's variant (model_rows.generic_row)
        return job_key(self.variant + graph, self.case.point())

    def label(self) -> str:
        return f"{self.variant} {self.case.mode} {self.case.label()}"

    def measure(self) -> ModelResult:
        """Build (or reuse) the model and measure the row in this process (needs torch and transformers)."""
        return measure(self)

    def failed(self, status: str, reason: str | None) -> ModelResult:
        """The row of a job whose worker could not answer (crashed, timeout) or that did not run."""
        from attnscope.document.model_rows import generic_row as generic
        from attnscope.execute.model_runner import empty_row

        row = empty_row(self.variant, self.case.mode, status, reason)
        if self.case.replay:
            row["replay"] = self.case.replay
        return ModelResult(self.variant, status, generic(row, _point_less_mode(self.case)))


@dataclass(frozen=True)
class ModelResult:
    """A model row (the JSON dict) with what executors read of a result: variant, status, cost, env."""

    variant: str
    status: str
    row: dict[str, Any]
    cost_s: dict[str, float] | None = None
    env: Any = None


def _point_less_mode(c: ModelCase) -> dict[str, Any]:
    p = c.point()
    p.pop("mode")
    return p


# One built model per worker process: the jobs of one implementation run one after another.
_model: dict[tuple[str, str, str, str], Any] = {}


def measure(job: ModelJob) -> ModelResult:
    """Build (or reuse) the model, time and profile the step; every failure is a row, never an exception."""
    from attnscope.document.model_rows import generic_row as generic
    from attnscope.execute import model_bench as bench
    from attnscope.execute.model_runner import _failure, empty_row
    from attnscope.workloads.hf.config import ModelSpec, build_config

    t0 = time.perf_counter()
    c = job.case
    spec = ModelSpec(c.source, c.config, None, json.loads(c.values_json))
    cuda = c.device.startswith("cuda")
    why = bench.unavailable(job.variant, c.mode, c.device, spec.is_encoder, job.explicit)
    if why is None and c.replay:
        from attnscope.execute.model_decode import graph_refusal

        why = graph_refusal(c.replay, c.device)
    if why:
        row = empty_row(job.variant, c.mode, "skipped", why)
    else:
        try:
            row = _measure(job, spec, build_config(spec, layers=c.layers), cuda)
        except Exception as e:  # noqa: BLE001 -- one job's failure is its row
            row = _failure(job.variant, c.mode, e)
        bench.free(cuda)
    if c.replay:
        row["replay"] = c.replay
    row = generic(row, _point_less_mode(c))
    return ModelResult(job.variant, row["status"], row, {"total": time.perf_counter() - t0})


def _measure(job: ModelJob, spec: Any, cfg: Any, cuda: bool) -> dict[str, Any]:
    import torch

    from attnscope.execute import model_bench as bench
    from attnscope.execute.model_runner import measure_row

    c = job.case
    opts = bench.BenchOptions(
        c.device,
        c.dtype,
        c.batch,
        c.seq,
        budget_s=job.budget_s,
        trace_dir=Path(job.trace_dir) if job.trace_dir else None,
        grid=job.grid,
    )
    key = (c.values_json, job.variant, c.dtype, c.device)
    if key not in _model:
        _model.clear()
        bench.free(cuda)
        _model[key] = bench.build_model(cfg, job.variant, opts, spec.is_encoder)
    gen = torch.Generator(device="cpu").manual_seed(0)
    ids = torch.randint(0, cfg.vocab_size, (c.batch, c.seq), generator=gen).to(c.device)
    if c.steps:
        from attnscope.execute.model_runner import measure_decode_row

        return measure_decode_row(_model[key], cfg, job.variant, ids, opts, c.steps, c.replay or "eager")
    return measure_row(_model[key], job.variant, c.mode, ids, opts, spec.is_encoder)
