"""Serving cases through run, sweep and recommend on the CPU: paged decode, a ragged packed batch, speculative-decode
verification and a chunk of a chunked prefill; each row checked against the fp64 reference."""

from __future__ import annotations

import json

import pytest

from attnscope.cli.main import main

pytest.importorskip("torch")
SMALL = ["--device", "cpu", "--heads", "2", "--kv-heads", "1", "--head-dim", "16", "--budget", "0.02", "--no-peak"]
# each kind's flags and the KV lengths it must record (uniform:20..90@2: random.Random(2).randint(20, 90) three times)
KINDS = {
    "decode, paged": (
        ["--seq", "1", "--batch", "3", "--kv-lens", "uniform:20..90@2", "--page-size", "16"],
        [27, 31, 30],
    ),
    "decode, packed ragged": (["--seq", "1", "--batch", "2", "--kv-lens", "33,7"], [33, 7]),
    "verify, paged": (["--seq", "4", "--batch", "2", "--seq-kv", "40", "--page-size", "8"], [40, 40]),
    "prefill chunk, paged ragged": (
        ["--seq", "16", "--batch", "2", "--kv-lens", "48,16", "--page-size", "16"],
        [48, 16],
    ),
}


@pytest.mark.slow
@pytest.mark.parametrize("kind", list(KINDS))
def test_run_measures_each_serving_kind_on_the_cpu(tmp_path, kind):
    out = tmp_path / "r.json"
    flags, lengths = KINDS[kind]
    argv = ["run", *SMALL, *flags, "--variants", "paged_gather_sdpa,paged_flex", "--json", str(out)]
    assert main(argv) == 0
    doc = json.loads(out.read_text())
    rows = {r["variant"]: r for r in doc["results"]}
    for r in rows.values():
        assert r["status"] == "ok" and r["numerics_ok"] is True, (r["variant"], r.get("reason"))
        assert r["extra"]["cache"]["kv_lengths"] == lengths
    gather = [c for c in rows["paged_gather_sdpa"]["hidden_copies"] if c.get("kind") == "gather"]
    assert len(gather) == 2  # K and V


@pytest.mark.slow
def test_sweep_over_page_sizes_then_recommend(tmp_path, capsys):
    store, rec = tmp_path / "s.jsonl", tmp_path / "rec.json"
    argv = ["sweep", "--device", "cpu", "--heads", "2", "--kv-heads", "1", "--head-dim", "16", "--budget", "0.02",
            "--seq", "1", "--batch", "2", "--kv-lens", "uniform:20..60@1", "--page-size", "0,16",
            "--variants", "paged_gather_sdpa,paged_flex", "--out", str(store)]  # fmt: skip
    assert main(argv) == 0
    rows = [json.loads(line) for line in store.read_text().splitlines() if line.strip()]
    assert sorted((r["variant"], r["case"].get("page_size") or 0) for r in rows) == [
        ("paged_flex", 0), ("paged_flex", 16), ("paged_gather_sdpa", 0), ("paged_gather_sdpa", 16)
    ]  # fmt: skip
    capsys.readouterr()
    assert main(["recommend", str(store), "--json", str(rec)]) == 0
    assert "Serving:" in capsys.readouterr().out
    (point,) = json.loads(rec.read_text())["serving"]["points"]
    assert set(point["fastest_page"]) == {"paged_flex", "paged_gather_sdpa"}
    assert point["best"]["variant"] in {"paged_flex", "paged_gather_sdpa"}


def test_bucket_without_steps_is_refused_before_work(capsys):
    # --bucket sizes the decode loop's CUDA graphs: alone it changed nothing and was accepted silently
    assert main(["run", "--seq", "1", "--kv-lens", "8,16", "--batch", "2", "--bucket", "64"]) == 2
    err = capsys.readouterr().err.strip()
    assert err == (
        "attnscope: error: --bucket sizes the CUDA graphs of a decode loop: give it with --steps N, or leave it out"
    )
