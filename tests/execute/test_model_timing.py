"""The model step is timed by the one timing loop, with the decode cache restored before every step."""

from __future__ import annotations

import pytest

pytest.importorskip("transformers")

from attnscope.execute import model_bench


def test_every_timed_step_follows_a_reset():
    log: list[str] = []
    host, gpu = model_bench.time_steps(
        lambda: log.append("step"), lambda: log.append("reset"), cuda=False, budget_s=0.0
    )
    assert gpu is None
    # a zero budget gives the loop's floor of 5 timed steps, after one calibration step: 6 steps, each after a reset
    assert log == ["reset", "step"] * 6
    assert host.num_samples == 5 and host.method.startswith("wall time per step")


def test_decode_step_sees_the_same_cache_each_time():
    import torch

    from attnscope.workloads.hf.config import build_config, resolve

    cfg = build_config(resolve("tiny"), layers=1)
    opts = model_bench.BenchOptions("cpu", "fp32", 1, 8)
    model = model_bench.build_model(cfg, "sdpa", opts, False)
    ids = torch.randint(0, cfg.vocab_size, (1, 8), generator=torch.Generator().manual_seed(0))
    step, reset = model_bench.make_step(model, "decode", ids, False)
    reset()
    first = step()
    for _ in range(3):  # without the reset between steps the cache would grow and the logits change
        reset()
        again = step()
        assert torch.equal(first, again)
    step()  # a second step on the same cache: a longer context, other logits
    assert not torch.equal(first, step())
