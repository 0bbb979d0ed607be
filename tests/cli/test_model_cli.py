"""`attnscope model` on the CPU: the tiny preset end to end, and bad configs as one line and exit 2."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

pytest.importorskip("transformers")

from attnscope.cli.main import main

FAST = ["--seq", "32", "--budget", "0.01"]


def _one_line_exit_2(capsys: pytest.CaptureFixture[str], argv: list[str]) -> str:
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    # "attnscope: error:" from a check, "attnscope model: error: argument …" from a flag's type
    assert err.startswith(("attnscope: error:", "attnscope model: error:")) and "\n" not in err
    assert "Traceback" not in err
    return err


def test_unknown_preset(capsys):
    err = _one_line_exit_2(capsys, ["model", "--config", "llama-9000"])
    assert "llama-9000" in err and "tiny" in err  # names the presets it knows


def test_invalid_json(tmp_path: Path, capsys):
    p = tmp_path / "config.json"
    p.write_text('{"model_type": "llama", "hidden_size": 64,')
    assert "not valid JSON" in _one_line_exit_2(capsys, ["model", "--config", str(p)])


def test_heads_not_dividing_hidden(tmp_path: Path, capsys):
    p = tmp_path / "config.json"
    p.write_text(json.dumps({"model_type": "llama", "hidden_size": 100, "num_attention_heads": 3}))
    err = _one_line_exit_2(capsys, ["model", "--config", str(p)])
    assert "does not divide" in err and "100" in err and "3" in err


def test_kv_heads_not_dividing_heads(tmp_path: Path, capsys):
    p = tmp_path / "config.json"
    p.write_text(
        json.dumps({"model_type": "llama", "hidden_size": 96, "num_attention_heads": 6, "num_key_value_heads": 4})
    )
    assert "num_key_value_heads" in _one_line_exit_2(capsys, ["model", "--config", str(p)])


@pytest.mark.parametrize(
    "argv,needle",
    [
        (["--impl", "eager,magic"], "magic"),
        (["--mode", "serve"], "serve"),
        (["--dtype", "fp8"], "fp8"),
        (["--config", "gpt2", "--seq", "4096"], "positions"),
        (["--layers", "0"], "--layers"),
        (["--config", "/nonexistent/config.json"], "--config '/nonexistent/config.json': no such file"),
        (["--config", "/"], "--config '/': a directory; name the model's config.json"),
    ],
)
def test_bad_arguments(capsys, argv, needle):
    assert needle in _one_line_exit_2(capsys, ["model", *argv])


def _rows(path: Path) -> dict[tuple[str, str], dict]:
    d = json.loads(path.read_text())
    assert d["kind"] == "model" and d["config"]["name"] == "tiny" and d["env"]["transformers"]
    return {(r["impl"], r["mode"]): r for r in d["results"]}, d


@pytest.mark.slow
def test_tiny_preset_every_mode_eager_and_sdpa(tmp_path: Path, capsys):
    out = tmp_path / "m.json"
    traces = tmp_path / "traces"
    argv = ["model", "--config", "tiny", "--impl", "eager,sdpa", *FAST, "--json", str(out), "--trace-dir", str(traces)]
    assert main(argv) == 0
    rows, d = _rows(out)
    assert set(rows) == {(i, m) for i in ("eager", "sdpa") for m in ("prefill", "decode", "train")}
    for r in rows.values():
        assert r["status"] == "ok", r["reason"]
        a = r["attention"]
        assert 0 < a["share"] < 1 and a["kernel_us"] > 0 and a["projections_us"] > 0
        # the step clock: wall time on the CPU, CUDA events behind a GPU sleep on a GPU (the device the run used)
        clock = "CUDA events around each step" if d["case"]["device"].startswith("cuda") else "wall time per step"
        assert r["step_time"]["method"].startswith(clock), r["step_time"]["method"]
        assert [lay["layer"] for lay in r["layers"]] == ["model.layers.0", "model.layers.1"]
    # tiny: 4 query heads, 2 KV heads, head_dim 32, bf16, seq 32, batch B (1 on CPU, 2 on CUDA) → each
    # repeated K or V is B × 2 × 2 × 32 × 32 × 2 bytes; decode repeats the whole cache of 33 tokens
    batch = d["case"]["batch"]
    assert batch == (2 if d["case"]["device"].startswith("cuda") else 1)
    for mode, tokens in (("prefill", 32), ("train", 32), ("decode", 33)):
        copies = rows["eager", mode]["attention"]["hidden_copies"]
        eager = [c for c in copies if c["part"] == "repeat_kv" and not c["backward"]]
        assert sorted(c["bytes"] for c in eager) == [batch * 2 * 2 * tokens * 32 * 2] * 4  # K and V in 2 layers
        ids = {i["id"]: i for i in rows["eager", mode]["insights"]}
        assert "sdpa with enable_gqa avoids it" in ids["repeat_kv_copy"]["advice"]
        assert not [c for c in rows["sdpa", mode]["attention"]["hidden_copies"] if c["part"] == "repeat_kv"]
        assert "repeat_kv_copy" not in {i["id"] for i in rows["sdpa", mode]["insights"]}
    assert set(d["recommendations"]) == {"prefill", "decode", "train"}
    printed = capsys.readouterr().out
    assert "Recommendation (train)" in printed and "repeat_kv_copy" in printed
    # the same split from the trace alone
    row = json.loads(out.read_text())["results"][2]
    split = row["attention"]
    a_json = tmp_path / "a.json"
    assert main(["analyze", "--cpu", str(traces / "model_eager_train.json"), "--json", str(a_json)]) == 0
    from_trace = json.loads(a_json.read_text())["results"][0]["model_split"]
    assert from_trace["scopes"]["impl"] == "eager" and from_trace["scopes"]["mode"] == "train"
    # the model's row is scaled to the timed step where the profiled one differs by over 1.25× (the trace is not)
    prof = row["breakdown"].get("profile") or {}
    f = prof["timed_step_us"] / prof["profiled_step_us"] if prof.get("scaled") else 1.0
    want = {k: pytest.approx(v * f, rel=1e-4, abs=2e-3) for k, v in from_trace["attention"]["parts"].items()}
    assert split["parts"] == want
    assert "[repeat_kv_copy]" in capsys.readouterr().out


@pytest.mark.slow
def test_default_impls_on_cpu_skip_with_reasons(tmp_path: Path):
    out = tmp_path / "m.json"
    page = tmp_path / "m.html"
    argv = ["model", "--device", "cpu", "--mode", "prefill", *FAST, "--json", str(out), "--html", str(page)]
    assert main(argv) == 0
    assert "flash_attention_2" in page.read_text()
    rows, _ = _rows(out)
    assert rows["eager", "prefill"]["status"] == rows["sdpa", "prefill"]["status"] == "ok"
    fa2 = rows["flash_attention_2", "prefill"]
    assert fa2["status"] == "skipped" and "CUDA" in fa2["reason"]
    flex = rows["flex_attention", "prefill"]
    assert flex["status"] == "skipped" and "--impl flex_attention" in flex["reason"]


@pytest.mark.slow
def test_flex_on_cpu_runs_prefill_and_its_train_row_is_skipped_in_torchs_words(tmp_path: Path):
    out = tmp_path / "m.json"
    argv = ["model", "--device", "cpu", "--impl", "flex_attention", "--mode", "prefill,train", *FAST]
    argv += ["--json", str(out)]
    assert main(argv) == 0
    rows, _ = _rows(out)
    p = rows["flex_attention", "prefill"]
    assert p["status"] == "ok" and p["attention"]["kernel_us"] > 0
    assert not [c for c in p["attention"]["hidden_copies"] if c["part"] == "repeat_kv"]  # flex takes GQA as is
    r = rows["flex_attention", "train"]
    assert r["status"] == "skipped" and "backward" in r["reason"] and "CPU" in r["reason"]


@pytest.mark.slow
def test_rows_after_the_time_limit_are_skipped_rows_that_say_so(tmp_path: Path):
    out = tmp_path / "m.json"
    argv = ["model", "--impl", "eager,sdpa", "--mode", "prefill", *FAST, "--time-limit", "0.001", "--json", str(out)]
    assert main(argv) == 0
    rows, d = _rows(out)
    assert rows["eager", "prefill"]["status"] == "ok" and rows["eager", "prefill"]["warmup_s"] > 0
    late = rows["sdpa", "prefill"]
    assert late["status"] == "skipped" and "the time limit of 0.001 s" in late["reason"]
    assert d["recommendations"]["prefill"]["best"] == "eager"
