"""``attnscope.api.model``: a transformers model's step per attention implementation, over a grid of (batch, seq)
points and modes, through the one campaign loop (attnscope.api.campaign) and the same store, resume and settings
check as a sweep; the rows annotated once, into the model document."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from attnscope.api.campaign import Event
from attnscope.document.schema import MODEL_SCHEMA_VERSION as SCHEMA_VERSION  # every kind's version: document/
from attnscope.execute.model_bench import DTYPES, IMPLS, MODES
from attnscope.execute.model_decode import REPLAYS, graph_refusal

__all__ = [
    "DTYPES",
    "IMPLS",
    "MODES",
    "REPLAYS",
    "ModelDocument",
    "ModelGrid",
    "check_config",
    "config_of",
    "graph_refusal",
    "mode_refusal",
    "model",
    "modes_for",
    "positions",
    "size_over",
    "trace_names",
]


@dataclass(frozen=True)
class ModelGrid:
    """What to measure, checked: the config (its spec and the built transformers config), the implementations
    (None: every one that can run here), the modes, the points, the dtype and device, the depth given (None: the
    config's), a decode loop's steps and replays."""

    spec: Any
    cfg: Any
    impls: list[str] | None
    modes: list[str]
    points: list[tuple[int, int]]
    dtype: str
    device: str
    layers: int | None = None
    steps: int | None = None
    replays: list[str] | None = None

    def __post_init__(self) -> None:
        """Each implementation, mode, point and replay listed once: each is measured once, so a repeat is a typo."""
        from attnscope.core.arguments import check_once

        lists = {"impls": self.impls, "modes": self.modes, "points": self.points, "replays": self.replays}
        for what, values in lists.items():
            check_once(what, values or ())
        why = mode_refusal(self.cfg, self.modes)
        if why:
            from attnscope.core.arguments import UsageError

            raise UsageError(f"modes {','.join(self.modes)}: {why}", fields=("modes",))

    @classmethod
    def build(
        cls,
        config: str = "tiny",
        *,
        impls: list[str] | None = None,
        modes: list[str] | None = None,
        points: list[tuple[int, int]] | None = None,
        dtype: str = "bf16",
        device: str = "cpu",
        layers: int | None = None,
        steps: int | None = None,
        replays: list[str] | None = None,
    ) -> ModelGrid:
        """The grid of a config (a preset, a config.json path or a transformers model type): its spec read and
        its transformers config built (``layers`` overrides the depth).  ``modes``: default every mode that applies
        to the config (:func:`modes_for`: an encoder has no decode).  ``points``: (batch, seq) pairs (default one
        point, batch 1 and 128 tokens)."""
        spec, cfg = config_of(config, layers)
        return cls(spec, cfg, impls, list(modes or modes_for(cfg)), list(points or [(1, 128)]), dtype, device, layers,
                   steps, replays)  # fmt: skip


class ModelDocument(dict[str, Any]):
    """The model document (the dict ``model --json`` writes), with ``earlier``: the rows the store held already
    (kept as they were, never measured again)."""

    def __init__(self, doc: dict[str, Any], earlier: int) -> None:
        super().__init__(doc)
        self.earlier = earlier


def model(
    grid: ModelGrid,
    *,
    budget_s: float = 1.0,
    time_limit_s: float | None = None,
    trace_dir: str | Path | None = None,
    out: str | Path | None = None,
    resume: bool = False,
    force: bool = False,
    partial_to: str | Path | None = None,
    executor: str = "process",
    devices: list[str] | None = None,
    timeout_s: float | None = None,
    on_event: Callable[[Event], None] | None = None,
    resume_with: str | None = None,
    lock: bool = True,
) -> ModelDocument:
    """Measure every (implementation, point, mode) row of ``grid`` and return the annotated model document.

    ``out``: a JSONL store, each row appended as it comes; ``resume`` measures only the rows it does not hold, and
    is refused when the rows there were timed with another budget, torch, transformers or device (as recorded in
    ``<out>.settings.json``) unless ``force``.  ``partial_to``: the document so far rewritten there after every row.
    ``time_limit_s``: rows not started by then are ``skipped`` rows that say so (the first always runs).  A stop
    raises :class:`attnscope.api.campaign.Interrupted` saying what was saved (``resume_with``: the command that
    goes on).  ``lock=False``: the caller holds ``out``'s lock.
    """
    import contextlib

    from attnscope.core.files import lock_store

    if resume and out is None:
        from attnscope.core.arguments import UsageError

        raise UsageError("resume needs out (the JSONL store to complete)")
    with lock_store(out, "out") if lock and out is not None else contextlib.nullcontext():
        return _measure(
            grid, budget_s, time_limit_s, trace_dir, out, resume, force, partial_to, executor, devices, timeout_s,
            on_event, resume_with,
        )  # fmt: skip


def _measure(
    grid: ModelGrid,
    budget_s: float,
    time_limit_s: float | None,
    trace_dir: str | Path | None,
    out: str | Path | None,
    resume: bool,
    force: bool,
    partial_to: str | Path | None,
    executor: str,
    devices: list[str] | None,
    timeout_s: float | None,
    on_event: Callable[[Event], None] | None,
    resume_with: str | None,
) -> ModelDocument:
    from attnscope.analysis.recommend.model_points import annotate_rows
    from attnscope.api.campaign import measure_jobs, open_store, record_settings, resume_settings
    from attnscope.execute import store_settings
    from attnscope.execute.executors import make_executor

    impls = grid.impls or list(IMPLS)
    env = _env(grid.device)
    store = open_store(out, resume=resume) if out is not None else None
    # rows of this grid already in the store (resume): kept as they are, never measured again
    earlier = [r for r in (store.rows() if store else []) if same_run(r, grid, impls)]
    settings = None
    if store is not None:
        now = store_settings.model_current(budget_s, grid.device)
        settings = resume_settings(store.path, now, resuming=resume and store.path.exists(), force=force)
    done = {_key(r) for r in earlier}
    todo = [j for j in jobs(grid, impls, budget_s, trace_dir) if j.key not in done]
    ex = make_executor(executor, devices=devices, timeout_s=timeout_s)
    if store is not None:
        record_settings(store.path, settings)

    def document_of(rows: list[dict[str, Any]], recs: dict[str, Any] | None, partial: bool) -> dict[str, Any]:
        return model_document(grid, impls, [*earlier, *rows], env, recs, partial)

    measured = measure_jobs(
        todo,
        ex,
        row=lambda r: r.row,
        store=store,
        document=partial_to,
        partial=lambda done_now: document_of([r.row for r in done_now], None, True),
        on_event=on_event,
        time_limit_s=time_limit_s,
        timings=wall_timings,
        done_before=len(earlier),
        resume=resume_with,
    )
    rows = [*earlier, *(r.row for r in measured.results)]
    doc = model_document(grid, impls, rows, env, annotate_rows(rows), False)  # annotated once, here
    doc["host"] = measured.host
    return ModelDocument(doc, len(earlier))


def config_of(config: str, layers: int | None) -> tuple[Any, Any]:
    """(the spec, the transformers config built at ``layers`` deep, or the config's own depth): a preset, a
    config.json path or a transformers model type; transformers is needed (a one-line error says how to get it)."""
    from attnscope.workloads.hf.config import build_config, require_transformers, resolve

    spec = resolve(config)
    require_transformers()
    return spec, build_config(spec, layers=layers)


def modes_for(cfg: Any) -> list[str]:
    """The modes that apply to a config (its ``model_type``): all of them for a decoder; prefill and train for an
    encoder, which has no KV cache and so no decode step."""
    from attnscope.workloads.hf.config import is_encoder_type

    encoder = is_encoder_type(str(getattr(cfg, "model_type", "")))
    return [m for m in MODES if not (encoder and m == "decode")]


def mode_refusal(cfg: Any, modes: list[str]) -> str | None:
    """Why ``modes`` cannot be measured on this config (None: they can): decode asked of an encoder."""
    applies = modes_for(cfg)
    if any(m not in applies for m in modes if m in MODES):
        return (
            f"{getattr(cfg, 'model_type', 'this model')} is an encoder (no KV cache): it has no decode step; "
            f"choose from {', '.join(applies)}"
        )
    return None


def check_config(config: str) -> None:
    """The config can be read (its spec) and transformers is here: checked before a long session starts."""
    from attnscope.workloads.hf.config import require_transformers, resolve

    resolve(config)
    require_transformers()


def positions(cfg: Any) -> int | None:
    """The positions the config allows (None: no limit)."""
    from attnscope.workloads.hf.config import max_positions

    return max_positions(cfg)


def size_over(
    cfg: Any, modes: list[str], impls: list[str], batch: int, seq: int, dtype: str, device: str
) -> tuple[list[str], int | None, float, float]:
    """(each mode whose estimate does not fit, the free bytes (None: unknown), the parameters, the usable share):
    attnscope.workloads.hf.size says how weights, activations and optimizer state are counted."""
    from attnscope.measure.env import free_memory_bytes
    from attnscope.workloads.hf.size import parameters, too_big
    from attnscope.workloads.sizing import HEADROOM

    free = free_memory_bytes(device)  # the one reader: the GPU's, or the host's within the container's limit
    over = too_big(cfg, modes, impls, batch=batch, seq=seq, dtype=dtype, free_bytes=free)
    return over, free, parameters(cfg), HEADROOM


def trace_names(
    device: str, dtype: str, impls: list[str], modes: list[str], points: list[tuple[int, int]]
) -> list[str]:
    """The file name of each row's kept trace."""
    from attnscope.execute.model_bench import BenchOptions, trace_name

    at = [BenchOptions(device, dtype, b, q, grid=len(points) > 1) for b, q in points]
    return [trace_name(o, i, m) for i in impls for o in at for m in modes]


def wall_timings(results: list[Any]) -> list[tuple[str, list[float]]]:
    """Each measured row's wall time (p25, median, p75), named by implementation and mode: what the host's scheduler
    shapes, for the host's verdict (as :func:`attnscope.measure.host.timings_of` for attention rows)."""
    walls = [(f"{r.row['impl']} {r.row['mode']}", r.row["wall_time"]) for r in results if r.row.get("wall_time")]
    return [(name, [t["p25_us"], t["median_us"], t["p75_us"]]) for name, t in walls]


def _key(r: dict[str, Any]) -> tuple[str, str, str]:
    from attnscope.execute.job import job_key

    return job_key(r["variant"], r["case"])


def jobs(grid: ModelGrid, impls: list[str], budget_s: float, trace_dir: str | Path | None) -> list[Any]:
    """One job per (implementation, batch, seq, mode), in that order: a worker builds each model once."""
    import json

    from attnscope.execute.model_job import ModelCase, ModelJob

    spec, cfg = grid.spec, grid.cfg
    values = {**spec.values, "model_type": cfg.model_type}
    if grid.layers is not None:
        from attnscope.workloads.hf.config import _with_depth

        values = _with_depth(values, grid.layers)
    steps = grid.steps
    replays: list[str | None] = list(grid.replays or []) or [None]
    return [
        ModelJob(
            ModelCase(
                spec.name,
                spec.source,
                json.dumps(values, sort_keys=True),
                None,
                cfg.num_hidden_layers,
                b,
                q,
                grid.dtype,
                grid.device,
                mode,
                steps if mode == "decode" and steps else None,
                replay if mode == "decode" and steps else None,
            ),
            impl,
            budget_s=budget_s,
            explicit=grid.impls is not None,
            trace_dir=str(trace_dir) if trace_dir else None,
            grid=len(grid.points) > 1,
        )
        for impl in impls
        for b, q in grid.points
        for mode in grid.modes
        for replay in (replays if mode == "decode" and steps else [None])
    ]


def same_run(r: dict[str, Any], grid: ModelGrid, impls: list[str]) -> bool:
    """A store row that belongs to this grid (same config, depth, dtype and device)."""
    c = r.get("case") or {}
    return (
        isinstance(c, dict)
        and c.get("config") == grid.spec.name
        and c.get("layers") == grid.cfg.num_hidden_layers
        and c.get("dtype") == grid.dtype
        and c.get("device") == grid.device
        and r.get("impl") in impls
        and c.get("mode") in grid.modes
        and (c.get("batch"), c.get("seq")) in grid.points
    )


def model_document(
    grid: ModelGrid,
    impls: list[str],
    rows: list[dict[str, Any]],
    env: dict[str, Any] | None,
    recs: dict[str, Any] | None,
    partial: bool,
) -> dict[str, Any]:
    """The model document: its head (schema version, kind, the config, the grid) and the rows in the grid's
    order (implementation, point, mode)."""
    from attnscope.workloads.hf.config import describe

    spec, first = grid.spec, grid.points[0]

    def order(r: dict[str, Any]) -> tuple[int, int, int]:
        p = (r.get("batch", first[0]), r.get("seq", first[1]))
        return (
            impls.index(r["impl"]),
            grid.points.index(p) if p in grid.points else len(grid.points),
            grid.modes.index(r["mode"]),
        )

    return {
        "schema_version": SCHEMA_VERSION,
        "tool": "attnscope",
        "kind": "model",
        "partial": partial,
        "env": env,
        "config": {"name": spec.name, "source": spec.source, "about": spec.about, **describe(grid.cfg)},
        "case": {
            "device": grid.device,
            "dtype": grid.dtype,
            "batch": first[0],
            "seq": first[1],
            "impls": impls,
            "modes": grid.modes,
            "points": [{"batch": b, "seq": q} for b, q in grid.points],
        },
        "results": sorted(rows, key=order),
        "recommendations": recs or {},
    }


def _env(device: str) -> dict[str, Any]:
    import dataclasses

    import transformers

    from attnscope.measure.env import collect

    return {**dataclasses.asdict(collect(device)), "transformers": transformers.__version__}
