"""`attnscope model --mode decode --steps N`: decode over a growing static cache, each step timed and split.

Runs the tiny preset on the CPU (transformers installed).  Expected values: the KV length of step i is seq + i + 1
(arithmetic), the cache the attention op is given is seq + steps long (read from the raw trace's Input Dims with the
json module), and the three parts of each step add up to its total.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

pytest.importorskip("transformers")

from attnscope.cli.main import main

SEQ, STEPS = 8, 3


def _usage(capsys: pytest.CaptureFixture[str], argv: list[str]) -> str:
    t0 = time.monotonic()
    assert main(["model", *argv]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("attnscope: error:") and "\n" not in err
    assert time.monotonic() - t0 < 10  # refused before any model is built
    return err


def test_graph_replay_on_a_cpu_is_refused_in_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    err = _usage(capsys, ["--device", "cpu", "--mode", "decode", "--steps", "2", "--replay", "graph"])
    assert err == "attnscope: error: --replay graph: CUDA graphs need a CUDA device; this run is on cpu"


def test_the_graph_refusal_is_in_the_librarys_words():
    """The library names no flag (its callers pass replays=["graph"]); the command line puts --replay before it."""
    from attnscope.api.modeling import graph_refusal

    assert graph_refusal("graph", "cpu") == "CUDA graphs need a CUDA device; this run is on cpu"
    assert graph_refusal("graph", "cuda:0") is None and graph_refusal("eager", "cpu") is None


def test_steps_need_decode_and_replay_needs_steps(capsys: pytest.CaptureFixture[str]) -> None:
    assert "decode in --mode" in _usage(capsys, ["--device", "cpu", "--mode", "prefill", "--steps", "2"])
    assert "add --steps" in _usage(capsys, ["--device", "cpu", "--mode", "decode", "--replay", "eager"])
    assert "unknown lazy" in _usage(capsys, ["--device", "cpu", "--mode", "decode", "--steps", "2", "--replay", "lazy"])


def test_steps_beyond_the_positions_are_refused(capsys: pytest.CaptureFixture[str]) -> None:
    # the tiny preset's positions (max_position_embeddings) bound seq + steps
    from attnscope.workloads.hf.config import build_config, max_positions, resolve

    limit = max_positions(build_config(resolve("tiny"), layers=None))
    assert limit is not None
    err = _usage(capsys, ["--device", "cpu", "--mode", "decode", "--seq", str(limit - 1), "--steps", "2"])
    assert f"needs {limit + 1} positions" in err


@pytest.mark.slow
def test_eager_decode_loop_on_the_cpu(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out, js, traces = tmp_path / "rows.jsonl", tmp_path / "m.json", tmp_path / "traces"
    argv = ["model", "--device", "cpu", "--mode", "decode", "--impl", "sdpa", "--seq", str(SEQ), "--steps",
            str(STEPS), "--executor", "inline", "--budget", "0.05", "--json", str(js), "--out", str(out),
            "--trace-dir", str(traces)]  # fmt: skip
    assert main(argv) == 0
    (row,) = json.loads(js.read_text())["results"]
    assert row["status"] == "ok" and row["variant"] == "sdpa" and row["mode"] == "decode"
    assert row["case"]["steps"] == STEPS and row["case"]["replay"] == "eager"
    st = row["steps"]
    assert (st["num_steps"], st["replay"], st["cache"], st["cache_len"]) == (STEPS, "eager", "static", SEQ + STEPS)
    assert [p["kv_len"] for p in st["series"]] == [SEQ + i + 1 for i in range(STEPS)]
    for p in st["series"]:
        assert p["time_us"] > 0
        assert p["attention_us"] + p["rest_us"] + p["unattributed_us"] == pytest.approx(p["total_us"], abs=1e-2)
        assert 0 < p["attention_share"] < 1
    # the profiled loop: one range per step, and the attention op given the whole static cache (seq + steps keys)
    (trace,) = traces.glob("*.json")
    ev = json.loads(trace.read_text())["traceEvents"]
    ranges = [e["name"] for e in ev if e.get("cat") == "user_annotation" and e["name"].startswith("attnscope.step[")]
    assert ranges == [f"attnscope.step[decode] {i} kv={SEQ + i + 1}" for i in range(STEPS)]
    sdpa = [e for e in ev if e.get("cat") == "cpu_op" and e["name"] == "aten::scaled_dot_product_attention"]
    assert sdpa and {e["args"]["Input Dims"][1][2] for e in sdpa} == {SEQ + STEPS}
    assert "decode over a growing static cache" in capsys.readouterr().out
    # the store's row resumes as every model row does: nothing left to measure
    assert main([*argv[:-6], "--out", str(out), "--resume"]) == 0
    assert len(out.read_text().splitlines()) == 1


def test_graph_loop_split_matches_the_replays_to_the_eager_reference(tmp_path: Path) -> None:
    """The graph loop's profiled trace, written by hand: one eager reference step (mm, flash SDPA, add), then two
    replays, each in its attnscope.step range.  Each step: attention = its flash kernel, the rest = gemm + add."""
    from attnscope.execute.model_decode import split_steps
    from tests.synth import PID, TID, doc, kernel, launch, op, write_kineto

    flash = "void pytorch_flash::flash_fwd_kernel<x>"
    names, durs = ("nvjet_gemm", flash, "elementwise_add_kernel"), (10.0, 20.0, 5.0)
    sdpa = "aten::_scaled_dot_product_flash_attention"
    ev = []
    for i, name in enumerate(("aten::mm", sdpa, "aten::add")):
        ev += [
            op(name, 30 * i, 20, 1 + i),
            launch(2 + 30 * i, 11 + i, 1 + i),
            kernel(names[i], 5 + 30 * i, durs[i], 11 + i),
        ]
    for s, (t, corr) in enumerate(((1000, 50), (2000, 60))):
        ev.append({"ph": "X", "cat": "user_annotation", "name": f"attnscope.step[decode] {s} kv={9 + s}",
                   "pid": PID, "tid": TID, "ts": t - 5, "dur": 100})  # fmt: skip
        ev.append(launch(t, corr, None, name="cudaGraphLaunch"))
        ev += [kernel(n, t + 10 + 30 * j, d, corr) for j, (n, d) in enumerate(zip(names, durs, strict=True))]
    path = write_kineto(tmp_path / "loop.json", doc(ev))
    got = split_steps(path, "graph")
    want = {"attention_us": 20.0, "rest_us": 15.0, "unattributed_us": 0.0, "total_us": 35.0, "attention_share": 0.5714}
    assert got == [want, want]


def test_eager_and_graph_steps_of_the_same_kernels_split_alike(tmp_path: Path) -> None:
    """An eager loop on a GPU: each step launches the same three kernels itself (mm, flash SDPA, add).  Its attention
    share is read by kernel family, as the graph loop's is, so the two replays compare: attention = the flash kernel
    (20 µs), the rest = gemm + add (15 µs) in each step, by hand."""
    from attnscope.execute.model_decode import split_steps
    from tests.synth import PID, TID, doc, kernel, launch, op, write_kineto

    flash = "void pytorch_flash::flash_fwd_kernel<x>"
    names, durs = ("nvjet_gemm", flash, "elementwise_add_kernel"), (10.0, 20.0, 5.0)
    ops = ("aten::mm", "aten::_scaled_dot_product_flash_attention", "aten::add")
    ev = []
    for s, t in enumerate((1000, 2000)):
        ev.append({"ph": "X", "cat": "user_annotation", "name": f"attnscope.step[decode] {s} kv={9 + s}",
                   "pid": PID, "tid": TID, "ts": t - 5, "dur": 100})  # fmt: skip
        for j, name in enumerate(ops):
            corr = 100 * (s + 1) + j
            ev += [op(name, t + 30 * j, 20, corr), launch(t + 2 + 30 * j, corr, corr),
                   kernel(names[j], t + 5 + 30 * j, durs[j], corr)]  # fmt: skip
    path = write_kineto(tmp_path / "eager.json", doc(ev))
    got = split_steps(path, "eager")
    want = {"attention_us": 20.0, "rest_us": 15.0, "unattributed_us": 0.0, "total_us": 35.0, "attention_share": 0.5714}
    assert [{k: g[k] for k in want} for g in got] == [want, want]
    # no attnscope.model ranges in this trace: the module split has nothing to say
    assert all(g["module_attention_us"] is None and g["module_attention_share"] is None for g in got)


class _Replay:
    """A stand-in for a captured CUDA graph on the CPU: each replay runs the step eagerly, as the graph would."""

    def __init__(self, loop: object) -> None:
        self.loop = loop

    def replay(self) -> None:
        self.loop._forward()  # type: ignore[attr-defined]


def test_the_profiled_graph_loop_stays_inside_the_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # transformers 5's StaticCache writes each step at its own running length, not at cache_position: the capture's
    # eager reference step, run before the replayed steps, must not push the last step past the cache's seq + steps
    # positions (on a GPU that was a device-side index_copy_ assert; on the CPU index_copy_ raises)
    import torch

    from attnscope.execute import model_decode
    from attnscope.workloads.hf.config import build_config, resolve

    monkeypatch.setattr(torch.cuda, "synchronize", lambda *a, **k: None)  # the loop's syncs, on a CPU
    torch.manual_seed(0)
    cfg = build_config(resolve("tiny"), layers=None)
    from transformers import AutoModelForCausalLM

    model = AutoModelForCausalLM.from_config(cfg).eval()
    ids = torch.randint(0, cfg.vocab_size, (1, SEQ))
    loop = model_decode.Loop(model, cfg, ids, STEPS, "graph", torch.float32)
    loop.start()
    loop.graph = _Replay(loop)
    path = model_decode.profile_loop(loop, tmp_path / "loop.json", cuda=False, annotate_model=None)
    assert path.exists()
    written = loop.cache.layers[0].keys[0, 0].abs().sum(-1)  # per position: nonzero where a token was written
    assert int((written != 0).sum()) == SEQ + STEPS  # the prefill and every step, each in its own position


def test_the_per_step_table_shows_the_module_share_beside_the_kernel_share() -> None:
    import io

    from rich.console import Console

    from attnscope.report.text.model import render_decode_steps

    def row(replay: str, module: float | None) -> dict[str, object]:
        p = {"step": 0, "kv_len": 9, "time_us": 40.0, "attention_us": 20.0, "rest_us": 15.0, "unattributed_us": 5.0,
             "total_us": 40.0, "attention_share": 0.5}  # fmt: skip
        if module is not None:
            p["module_attention_share"] = module
        return {"status": "ok", "impl": "sdpa", "steps": {"replay": replay, "series": [p], "time_method": "t",
                                                            "split_method": "s"}}  # fmt: skip

    buf = io.StringIO()
    render_decode_steps({"results": [row("eager", 0.625), row("graph", None)]}, Console(file=buf, width=200))
    lines = buf.getvalue().splitlines()
    eager = next(ln for ln in lines if "eager" in ln and "sdpa" in ln)
    graph = next(ln for ln in lines if "graph" in ln and "sdpa" in ln)
    assert "attn module %" in buf.getvalue()
    # 20 of 40 µs = 50.0 (kernels), 15/40 = 37.5, 5/40 = 12.5, and the module share 62.5 on the eager row only
    assert [c.strip() for c in eager.split("│")[6:10]] == ["50.0", "37.5", "12.5", "62.5"]
    assert graph.split("│")[9].strip() == "—"
