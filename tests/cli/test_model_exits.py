"""`attnscope model`'s exits: bad input refused before any model is built, nothing measured is exit 1."""

from __future__ import annotations

import time

import pytest

pytest.importorskip("transformers")

from attnscope.cli.main import main


def _usage(capsys: pytest.CaptureFixture[str], argv: list[str]) -> str:
    assert main(["model", *argv]) == 2
    err = capsys.readouterr().err.strip()
    # "attnscope: error:" from a check, "attnscope model: error: argument …" from a flag's type
    assert err.startswith(("attnscope: error:", "attnscope model: error:")) and "\n" not in err
    return err


def test_impl_given_twice_refused(capsys):
    assert "argument --impl: eager is listed twice in 'eager,eager'" in _usage(capsys, ["--impl", "eager,eager"])


@pytest.mark.parametrize("flag", ["--json", "--html", "--out"])
def test_proc_path_refused_before_measuring(capsys, flag):
    t0 = time.monotonic()
    err = _usage(capsys, [flag, "/proc/attnscope-x.json", "--seq", "16", "--budget", "0.01"])
    assert flag in err and time.monotonic() - t0 < 5  # no model was built or timed


def test_resume_needs_out(capsys):
    assert "--resume needs --out" in _usage(capsys, ["--resume"])


def test_out_with_rows_needs_resume(tmp_path, capsys):
    out = tmp_path / "m.jsonl"
    out.write_text('{"variant": "eager", "status": "ok"}\n')
    assert "--resume" in _usage(capsys, ["--out", str(out)])


def test_size_check_refuses_llama_3_8b_quickly(monkeypatch, capsys):
    monkeypatch.setattr("attnscope.measure.env.free_memory_bytes", lambda device: 22 * 1024**3)  # the one reader
    t0 = time.monotonic()
    err = _usage(capsys, ["--config", "llama-3-8b", "--device", "cpu"])
    assert time.monotonic() - t0 < 10
    # the estimate, the count and the free memory are named; training is 4 × 8.03e9 × 2 B ≈ 59.8 GiB of state
    assert "8.03 B parameters" in err and "train needs ~" in err and "22.0 GiB free" in err and "--layers" in err
    assert "AdamW moments 29.9 GiB" in err  # 2 × 8,030,261,248 × 2 B / 2^30


def test_size_check_passes_with_fewer_layers(monkeypatch, tmp_path):
    seen = []
    monkeypatch.setattr("attnscope.measure.env.free_memory_bytes", lambda device: seen.append(device) or 10**12)
    rc = main(["model", "--config", "tiny", "--impl", "sdpa", "--mode", "prefill", "--seq", "16", "--budget", "0.01"])
    assert rc == 0 and seen == ["cpu"]


def test_nothing_measured_is_exit_1(capsys):
    # flash_attention_2 runs on CUDA only: its one row is skipped
    argv = ["model", "--config", "tiny", "--impl", "flash_attention_2", "--mode", "prefill", "--seq", "16"]
    assert main([*argv, "--device", "cpu", "--executor", "inline"]) == 1
    err = capsys.readouterr().err
    assert "nothing was measured" in err and "flash_attention_2 prefill: skipped" in err


@pytest.mark.parametrize("modes", ["decode", "prefill,decode"])
def test_decode_of_an_encoder_is_refused_before_any_model(capsys, modes):
    # bert has no KV cache, so no decode step: one line, exit 2, no row measured (it skipped every row, exit 1)
    t0 = time.monotonic()
    err = _usage(capsys, ["--config", "bert-base", "--layers", "1", "--mode", modes, "--seq", "16"])
    assert time.monotonic() - t0 < 10
    assert err == (
        f"attnscope: error: --mode {modes}: bert is an encoder (no KV cache): it has no decode step; "
        "choose from prefill, train"
    )


def test_an_encoder_by_default_measures_prefill_and_train_and_a_decoder_all_three():
    from attnscope.cli.main import build_parser
    from attnscope.cli.model import prepare

    for config, modes in [("bert-base", ["prefill", "train"]), ("tiny", ["prefill", "decode", "train"])]:
        argv = ["model", "--config", config, "--layers", "1", "--device", "cpu", "--seq", "16"]
        assert prepare(build_parser(argv).parse_args(argv)).modes == modes


def test_help_lists_the_exit_codes(capsys):
    assert main(["model", "--help"]) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert "exit codes: 0 something measured; 1 nothing could be measured" in out and "130/143" in out


def test_devices_need_cuda(capsys):
    assert "--devices" in _usage(capsys, ["--device", "cpu", "--devices", "cuda:0,cuda:1"])


def test_timeout_needs_a_worker_and_must_be_positive(capsys):
    assert "argument --timeout: must be > 0" in _usage(capsys, ["--timeout", "0"])
    assert "use --executor process (or ray)" in _usage(capsys, ["--timeout", "5", "--executor", "inline"])


def test_grid_points_from_seq_and_batch():
    from attnscope.cli.main import build_parser
    from attnscope.cli.model import prepare

    argv = ["model", "--config", "tiny", "--device", "cpu", "--seq", "16..64x2", "--batch", "1,3"]
    grid = prepare(build_parser(argv).parse_args(argv))
    assert grid.points == [(1, 16), (3, 16), (1, 32), (3, 32), (1, 64), (3, 64)]


def test_bad_grid_is_refused(capsys):
    assert "--seq" in _usage(capsys, ["--seq", "16..x"])
