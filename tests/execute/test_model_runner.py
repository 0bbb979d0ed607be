"""One model row (the model runner): its status on a failure, the step time it reports (the GPU's, not the
host's, where there is one), the quartiles beside it, the warm-up, the trace kept or not, and the generic fields
every attnscope row carries.  The measuring parts (the timing loop, the profiler, the split) are replaced by
fakes that hand back chosen numbers, so each field is checked against a value worked out here."""

from __future__ import annotations

import errno
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

pytest.importorskip("torch")

from attnscope.core.types import Timing
from attnscope.document.model_rows import generic_row
from attnscope.execute import model_bench, model_runner
from attnscope.execute.model_bench import BenchOptions, Skip

# The host (wall) time and the GPU time of one step, chosen so that every field tells them apart.
WALL = Timing(median_us=5000.0, p25_us=4900.0, p75_us=5100.0, min_us=4850.0, num_samples=21, method="wall")
GPU = Timing(median_us=1000.4567, p25_us=990.12345, p75_us=1120.9876, min_us=980.12345, num_samples=17, method="gpu")

# _timing(GPU), worked by hand: µs rounded to 3 decimals; IQR/median = (1120.9876 − 990.12345) / 1000.4567
# = 130.86415 / 1000.4567 = 0.130804…, rounded to 4 decimals 0.1308, above 10%: noisy.
GPU_ROW = {
    "median_us": 1000.457,
    "p25_us": 990.123,
    "p75_us": 1120.988,
    "min_us": 980.123,
    "num_samples": 17,
    "iqr_rel": 0.1308,
    "noisy": True,
    "method": "gpu",
}
# _timing(WALL): IQR/median = 200 / 5000 = 0.04: not noisy.
WALL_ROW = {
    "median_us": 5000.0,
    "p25_us": 4900.0,
    "p75_us": 5100.0,
    "min_us": 4850.0,
    "num_samples": 21,
    "iqr_rel": 0.04,
    "noisy": False,
    "method": "wall",
}

# The profiled step's split (what model_split.breakdown returns), its step as long as the GPU's timed median:
# within 1.25× either way, so fit_to_timed keeps its µs and records the comparison.
SPLIT = {
    "attention": {"us": 400.0, "share": 0.4},
    "rest": {"us": 600.0, "share": 0.6},
    "layers": [{"name": "layer0", "us": 1000.0}],
    "device": "gpu",
    "method": "split method",
    "total_us": 1000.0,
    "unattributed_us": 5.0,
    "scopes": {"step": 1},
    "step": {"step_us": 1000.0},
    "not_copied": "left out of the row's breakdown",
}


class Fakes:
    def __init__(self, monkeypatch: pytest.MonkeyPatch, *, gpu: Timing | None, split: dict[str, Any] | None):
        self.log: list[str] = []
        self.loaded: list[Any] = []
        clock = iter([10.0, 12.3456])  # the warm-up's start and end: 2.3456 s, rounded to 2.346
        monkeypatch.setattr(model_runner, "time", SimpleNamespace(perf_counter=lambda: next(clock)))
        monkeypatch.setattr(model_bench, "make_step", self.make_step)
        monkeypatch.setattr(model_bench, "time_steps", self.time_steps)
        monkeypatch.setattr(model_bench, "_sync", lambda cuda: self.log.append(f"sync {cuda}"))
        monkeypatch.setattr(model_bench, "peak_reset", lambda cuda: 7000 if cuda else None)
        monkeypatch.setattr(model_bench, "peak_extra", lambda cuda, base: (base or 0) + 4096 if cuda else None)
        monkeypatch.setattr(model_bench, "profile_step", self.profile_step)
        import attnscope.analysis.fingerprint.model_split as model_split
        import attnscope.trace as trace

        monkeypatch.setattr(trace, "load_trace", lambda path: ("trace of", Path(path).read_text()))
        monkeypatch.setattr(model_split, "breakdown", self.breakdown)
        self.gpu, self.split = gpu, split

    def make_step(self, model: Any, mode: str, ids: Any, encoder: bool) -> tuple[Any, Any]:
        self.log.append(f"make {model} {mode} {ids} {encoder}")
        return (lambda: self.log.append("step")), (lambda: self.log.append("reset"))

    def time_steps(self, step: Any, reset: Any, *, cuda: bool, budget_s: float) -> tuple[Timing, Timing | None]:
        self.log.append(f"time cuda={cuda} budget={budget_s}")
        reset()  # the loop is handed the step and its reset
        step()
        return WALL, self.gpu

    def profile_step(self, model: Any, step: Any, reset: Any, mode: str, path: Path, cuda: bool) -> Path:
        # written in a private folder named for the tool (removed once read)
        assert path.parent.name.startswith("attnscope-model-"), path
        self.log.append(f"profile {model} {mode} {path.name} {cuda}")
        reset()
        step()
        path.write_text(f"{mode} trace")
        return path

    def breakdown(self, trace: Any) -> dict[str, Any] | None:
        self.loaded.append(trace)
        return None if self.split is None else dict(self.split)


def test_a_gpu_row_reports_the_gpu_step_time_and_its_quartiles(monkeypatch, tmp_path):
    fakes = Fakes(monkeypatch, gpu=GPU, split=SPLIT)
    opts = BenchOptions("cuda:0", "bf16", 2, 16, budget_s=0.5, warmup=3, trace_dir=tmp_path / "kept")
    row = model_runner.measure_row("M", "sdpa", "prefill", "IDS", opts, False)
    # three warm-up steps, each after a reset, then one sync, the timing loop, and one profiled step
    assert fakes.log == [
        "make M prefill IDS False",
        *["reset", "step"] * 3,
        "sync True",
        "time cuda=True budget=0.5",
        "reset",
        "step",
        "profile M prefill model_sdpa_prefill.json True",
        "reset",
        "step",
    ]
    assert row["status"] == "ok" and row["reason"] is None
    assert row["impl"] == "sdpa" and row["mode"] == "prefill"
    assert row["step_time_us"] == 1000.457  # the GPU's median, not the host's 5,000
    assert row["step_time"] == GPU_ROW
    assert row["wall_time"] == WALL_ROW
    assert row["peak_memory_bytes"] == 7000 + 4096  # peak_extra of the base peak_reset returned
    assert row["warmup_s"] == 2.346
    kept = tmp_path / "kept" / "model_sdpa_prefill.json"
    assert row["trace_path"] == str(kept) and kept.read_text() == "prefill trace"
    assert fakes.loaded == [("trace of", "prefill trace")]
    assert "notes" not in row
    assert row["attention"] == {"us": 400.0, "share": 0.4} and row["rest"] == {"us": 600.0, "share": 0.6}
    assert row["layers"] == [{"name": "layer0", "us": 1000.0}]
    assert row["insights"] == []
    b = row["breakdown"]
    assert set(b) == {"device", "method", "total_us", "unattributed_us", "scopes", "step", "profile"}
    assert b["device"] == "gpu" and b["method"] == "split method" and b["total_us"] == 1000.0
    assert b["unattributed_us"] == 5.0 and b["scopes"] == {"step": 1} and b["step"] == {"step_us": 1000.0}
    # the profiled step was set against the GPU's median (1,000.457 µs: ratio 1.00, not scaled), not the host's
    assert b["profile"]["timed_step_us"] == 1000.457 and b["profile"]["scaled"] is False


def test_the_split_is_scaled_to_the_timed_gpu_step(monkeypatch):
    # the profiled step is 1,000 µs; a GPU median of 250 µs is 4× shorter (beyond 1.25×): every µs × 0.25
    gpu = Timing(median_us=250.0, p25_us=240.0, p75_us=260.0, min_us=239.0, num_samples=9, method="gpu")
    Fakes(monkeypatch, gpu=gpu, split=SPLIT)
    row = model_runner.measure_row("M", "sdpa", "prefill", "IDS", BenchOptions("cuda", "bf16", 1, 8), False)
    assert row["step_time_us"] == 250.0
    assert row["breakdown"]["profile"]["timed_step_us"] == 250.0
    assert row["breakdown"]["profile"]["profiled_over_timed"] == 4.0
    assert row["breakdown"]["profile"]["scaled"] is True
    assert row["breakdown"]["total_us"] == 250.0


def test_a_cpu_row_without_a_split_reports_the_wall_time(monkeypatch):
    fakes = Fakes(monkeypatch, gpu=None, split=None)
    opts = BenchOptions("cpu", "fp32", 1, 8, budget_s=0.25, warmup=1)
    row = model_runner.measure_row("M", "eager", "train", "IDS", opts, True)
    assert fakes.log == [
        "make M train IDS True",
        "reset",
        "step",
        "sync False",
        "time cuda=False budget=0.25",
        "reset",
        "step",
        "profile M train model_eager_train.json False",
        "reset",
        "step",
    ]
    assert row["step_time_us"] == 5000.0 and row["step_time"] == WALL_ROW and row["wall_time"] == WALL_ROW
    assert row["peak_memory_bytes"] is None and row["trace_path"] is None
    assert row["attention"] is None and row["rest"] is None and row["layers"] == []
    assert "breakdown" not in row and "notes" not in row


def test_a_trace_that_cannot_be_kept_costs_the_trace_not_the_row(monkeypatch, tmp_path):
    Fakes(monkeypatch, gpu=GPU, split=None)

    def full(src: Path, dest: Any, name: str | None = None) -> Path:
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(model_runner, "keep_file", full)
    opts = BenchOptions("cuda", "bf16", 4, 32, trace_dir=tmp_path, grid=True)
    row = model_runner.measure_row("M", "sdpa", "decode", "IDS", opts, False)
    assert row["status"] == "ok" and row["trace_path"] is None
    assert row["notes"] == [f"trace not kept in {tmp_path}: no space left on device (ENOSPC)"]


def test_a_decode_row_takes_the_steps_summary(monkeypatch, tmp_path):
    from attnscope.execute import model_decode

    summary = Timing(median_us=812.34567, p25_us=800.0, p75_us=900.0, min_us=790.0, num_samples=6, method="steps")
    seen: list[Any] = []

    def measure(model: Any, cfg: Any, ids: Any, steps: int, replay: str, opts: Any, path: Path) -> dict[str, Any]:
        assert path.parent.name.startswith("attnscope-model-"), path
        seen.append((model, cfg, ids, steps, replay, opts, path.name))
        path.write_text("decode loop")
        return {"summary": summary, "warmup_s": 0.5, "steps": [{"kv": 9}, {"kv": 10}]}

    monkeypatch.setattr(model_decode, "measure", measure)
    opts = BenchOptions("cuda", "bf16", 1, 8, trace_dir=tmp_path)
    row = model_runner.measure_decode_row("M", "CFG", "sdpa", "IDS", opts, 2, "graph")
    assert seen == [("M", "CFG", "IDS", 2, "graph", opts, "model_sdpa_decode_graph_2steps.json")]
    assert row["status"] == "ok" and row["mode"] == "decode" and row["impl"] == "sdpa"
    assert row["step_time_us"] == 812.346
    # IQR/median = 100 / 812.34567 = 0.12310…: 0.1231, noisy
    assert row["step_time"] == {
        "median_us": 812.346,
        "p25_us": 800.0,
        "p75_us": 900.0,
        "min_us": 790.0,
        "num_samples": 6,
        "iqr_rel": 0.1231,
        "noisy": True,
        "method": "steps",
    }
    assert row["warmup_s"] == 0.5 and row["steps"] == [{"kv": 9}, {"kv": 10}]
    kept = tmp_path / "model_sdpa_decode_graph_2steps.json"
    assert row["trace_path"] == str(kept) and kept.read_text() == "decode loop"
    assert "notes" not in row

    def full(src: Path, dest: Any, name: str | None = None) -> Path:
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(model_runner, "keep_file", full)
    row = model_runner.measure_decode_row("M", "CFG", "sdpa", "IDS", opts, 2, "eager")
    assert row["trace_path"] is None
    assert row["notes"] == [f"trace not kept in {tmp_path}: no space left on device (ENOSPC)"]
    # no --trace-dir: nothing kept, nothing noted
    row = model_runner.measure_decode_row("M", "CFG", "sdpa", "IDS", BenchOptions("cuda", "bf16", 1, 8), 2, "eager")
    assert row["trace_path"] is None and "notes" not in row


def test_out_of_memory_is_an_oom_row():
    import torch

    e = torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 2.00 GiB")
    row = model_runner._failure("sdpa", "train", e)
    assert row["status"] == "oom"
    assert row["reason"] == "OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB"
    assert row["impl"] == "sdpa" and row["mode"] == "train" and row["step_time_us"] is None

    class CudaOutOfMemoryError(RuntimeError):  # another library's OOM, told by its name
        pass

    assert model_runner._failure("eager", "prefill", CudaOutOfMemoryError("x"))["status"] == "oom"


def test_other_failures_are_error_or_skipped_rows():
    row = model_runner._failure("eager", "prefill", RuntimeError("shape\n   mismatch"))
    assert row["status"] == "error" and row["reason"] == "RuntimeError: shape mismatch"
    row = model_runner._failure("flex_attention", "decode", Skip("not on a CPU"))
    assert row["status"] == "skipped" and row["reason"] == "not on a CPU"
    assert row["impl"] == "flex_attention" and row["mode"] == "decode"
    row = model_runner._failure("eager", "decode", NotImplementedError())
    assert row["status"] == "skipped" and row["reason"] == "NotImplementedError"


def test_an_empty_row_has_every_field_and_no_numbers():
    assert model_runner.empty_row("sdpa", "decode", "skipped", "why") == {
        "impl": "sdpa",
        "mode": "decode",
        "status": "skipped",
        "reason": "why",
        "step_time_us": None,
        "step_time": None,
        "wall_time": None,
        "peak_memory_bytes": None,
        "attention": None,
        "rest": None,
        "layers": [],
        "insights": [],
    }


def test_generic_fields_of_a_row():
    point = {"config": "tiny", "layers": 1, "batch": 2, "seq": 16, "dtype": "bf16", "device": "cuda"}
    row = {**model_runner.empty_row("sdpa", "decode", "ok", None), "step_time": GPU_ROW, "replay": "graph"}
    g = generic_row(row, point)
    assert g["variant"] == "sdpa+graph"  # a graph-replayed row is its own entry
    assert g["case"] == {**point, "mode": "decode"}
    assert g["batch"] == 2 and g["seq"] == 16
    assert (g["median_us"], g["p25_us"], g["p75_us"]) == (1000.457, 990.123, 1120.988)
    assert g["impl"] == "sdpa" and g["replay"] == "graph" and g["status"] == "ok"
    eager = generic_row({**row, "replay": "eager"}, point)
    assert eager["variant"] == "sdpa"
    failed = generic_row(model_runner.empty_row("eager", "train", "oom", "OutOfMemoryError: x"), point)
    assert failed["variant"] == "eager" and failed["case"]["mode"] == "train"
    assert failed["median_us"] is None and failed["p25_us"] is None and failed["p75_us"] is None


def test_timing_of_none_is_none():
    assert model_runner._timing(None) is None
