"""attnscope sweep: grids, isolation through a whole sweep, resume after a real kill -9, Ctrl-C, and the
same rows whatever the executor.  Every case is tiny (B=1 H=1 S≤64 D=16 fp32) and timed for 0.01 s."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import types
from pathlib import Path

import pytest

from attnscope.cli.main import main
from attnscope.core.case_text import parse_causal, parse_choice_axis, parse_int_axis
from attnscope.core.cases import Axes, grid
from attnscope.execute.job import job_key
from attnscope.execute.store import Store
from attnscope.execute.sweep_plan import plan
from attnscope.report.text.sweep_summary import cost_medians, status_counts

ROOT = Path(__file__).resolve().parents[2]
TINY = ["--device", "cpu", "--batch", "1", "--heads", "1", "--head-dim", "16", "--dtype", "fp32"]
FAST = ["--budget", "0.01", "--no-peak", "--quiet"]


# ---- grids: pure ----


@pytest.mark.parametrize(
    ("text", "want"),
    [
        ("512..16384x2", [512, 1024, 2048, 4096, 8192, 16384]),
        ("64..256+64", [64, 128, 192, 256]),
        ("128..200x2", [128]),  # 256 is past the end: not included
        ("3..5", [3, 4, 5]),  # no step: +1
        ("1,2,2,3", [1, 2, 2, 3]),  # read as typed, order kept: the grid (and the flag) refuse the repeat
        ("64, 32..64x2", [64, 32, 64]),  # 64 twice, read as typed
        ("7", [7]),
    ],
)
def test_int_axis_ranges(text, want):
    assert parse_int_axis("seq", text) == want


@pytest.mark.parametrize(
    "text",
    ["", "1,,2", "0", "0..8x2", "8..4", "2..64x1", "2..64+0", "abc", "1.5", "²", "-4", "1..5000", "64..x2"],
)
def test_int_axis_refuses_nonsense(text):
    with pytest.raises(ValueError, match=r"^seq "):  # the axis's name: the command line says it as --seq
        parse_int_axis("seq", text)


def test_int_axis_limit():
    assert parse_int_axis("head-dim", "64..256x2", limit=256) == [64, 128, 256]
    with pytest.raises(ValueError, match="max 256"):
        parse_int_axis("head-dim", "64..512x2", limit=256)


def test_choice_axes():
    assert parse_causal("both") == [True, False] and parse_causal("no") == [False]
    with pytest.raises(ValueError, match="yes, no or both"):
        parse_causal("maybe")
    assert parse_choice_axis("mode", "fwd_bwd,fwd", ("fwd", "fwd_bwd")) == ["fwd_bwd", "fwd"]
    for bad in ("bwd", "", "fwd,"):
        with pytest.raises(ValueError, match=r"^mode "):
            parse_choice_axis("mode", bad, ("fwd", "fwd_bwd"))


def test_grid_is_the_product_and_budget_tokens_keeps_b_times_s():
    axes = Axes(seq=[128, 256, 512], head_dim=[64, 128], causal=[True, False], mode=["fwd", "fwd_bwd"])
    cases = grid(axes, "cpu")
    assert len(cases) == 3 * 2 * 2 * 2
    assert {(c.seq_q, c.head_dim, c.causal, c.mode) for c in cases} == {
        (s, d, c, m) for s in (128, 256, 512) for d in (64, 128) for c in (True, False) for m in ("fwd", "fwd_bwd")
    }
    budget = grid(Axes(seq=[128, 256, 2048], budget_tokens=2048), "cpu")
    assert [(c.batch, c.seq_q) for c in budget] == [(16, 128), (8, 256), (1, 2048)]
    with pytest.raises(ValueError, match="not a multiple of seq 3000"):
        grid(Axes(seq=[3000], budget_tokens=4096), "cpu")
    with pytest.raises(ValueError, match="KV=3"):
        grid(Axes(heads=[8], kv_heads=[3]), "cpu")
    with pytest.raises(ValueError, match="over 100,000"):
        grid(Axes(seq=list(range(1, 4001)), head_dim=list(range(1, 65))), "cpu")


def test_plan_is_the_grid_minus_what_is_done():
    from attnscope.execute.job import Options

    cases = grid(Axes(seq=[32, 64], mode=["fwd", "fwd_bwd"]), "cpu")
    done = {job_key("naive", cases[1].to_dict())}
    jobs = plan(cases, ["naive", "sdpa_flash"], Options(), explicit=True, done=done)
    assert len(jobs) == 4 * 2 - 1
    assert (cases[1], "naive") not in {(j.case, j.variant) for j in jobs}
    assert [j.case for j in jobs[:2]] == [cases[0], cases[0]]  # grouped by case
    assert len({j.trace_name for j in jobs}) == len(jobs)  # each job its own trace file


def test_a_free_worker_keeps_to_its_case_and_leaves_others_theirs():
    from collections import deque

    from attnscope.execute.executors import pick
    from attnscope.execute.worker import AttentionJob

    c1, c2, c3 = grid(Axes(seq=[32, 64, 128]), "cpu")
    queue = [AttentionJob(c, v) for c in (c1, c2, c3) for v in ("naive", "sdpa_flash", "sdpa_math")]
    one = deque(queue)  # one worker: the queue's own order
    order, last = [], None
    while one:
        j = pick(one, last, set())
        order.append(j)
        last = j.case
    assert order == queue
    two = deque(queue[1:])  # worker A took queue[0] (c1) and is busy with it; B is free
    b = pick(two, None, {c1})
    assert b == queue[3]  # the first job of c2: c1 is A's
    assert pick(two, c1, {c2}) == queue[1]  # A, free again, goes on with c1
    assert pick(two, c3, {c2}) == queue[6]  # its own case first, wherever it is in the queue
    assert pick(deque(queue[4:6]), c1, {c2}) == queue[4]  # nothing of c1, every other case taken: the first


def test_summary_numbers_by_hand():
    rows = [
        {"status": "ok", "cost_s": {"workload": 1.0, "timing": 2.0, "total": 4.0, "worker_start": 2.5}},
        {"status": "ok", "cost_s": {"workload": 3.0, "timing": 2.0, "total": 6.0}},
        {"status": "oom", "cost_s": {"total": 0.5}},
        {"status": "crashed", "cost_s": None},
    ]
    med = cost_medians(rows)
    assert med["workload"] == (2.0, 2) and med["timing"] == (2.0, 2)
    assert med["other"] == (1.0, 2)  # 4-1-2 and 6-3-2; the oom row timed no stage
    assert med["total"] == (4.0, 3)  # median of 4, 6, 0.5
    assert med["worker_start"] == (2.5, 1)
    assert list(status_counts(rows).items()) == [("ok", 2), ("oom", 1), ("crashed", 1)]


# ---- the command and the library ----


def _sweep(tmp_path: Path, *extra: str, out: str = "s.jsonl") -> tuple[int, list[dict]]:
    path = tmp_path / out
    rc = main(["sweep", *TINY, *FAST, "--out", str(path), *extra])
    return rc, Store(path).rows()


def _fake_recommender(monkeypatch) -> list[list[dict]]:
    """Stand-ins for the recommendation and its rendering: they record what the sweep hands them."""
    seen: list[list[dict]] = []
    import attnscope.analysis.recommend

    fake = lambda rows: (seen.append(rows), {"best": [{"variant": "x"}], "crossovers": [], "policy": []})[1]  # noqa: E731
    text = types.ModuleType("attnscope.report.text.sweep")
    text.render = lambda r: f"FAKE POLICY with {len(r['best'])} entry"
    monkeypatch.setattr(attnscope.analysis.recommend, "recommend", fake)
    monkeypatch.setitem(sys.modules, "attnscope.report.text.sweep", text)
    return seen


@pytest.mark.slow
def test_inline_sweep_resume_torn_line_and_recommendation(tmp_path, capsys, monkeypatch):
    seen = _fake_recommender(monkeypatch)
    js = tmp_path / "rec.json"
    rc, rows = _sweep(
        tmp_path, "--seq", "32", "--variants", "naive,sdpa_flash", "--executor", "inline", "--json", str(js)
    )
    assert rc == 0 and [(r["variant"], r["status"], r["mode"]) for r in rows] == [
        ("naive", "ok", "fwd"),
        ("sdpa_flash", "ok", "fwd"),
    ]
    assert all(r["env"] and r["env"]["torch"] and r["cost_s"]["total"] > 0 for r in rows)
    doc = json.loads(js.read_text())
    assert doc["files"] == [str(tmp_path / "s.jsonl")] and doc["tool"] == "attnscope"
    assert {k: doc[k] for k in ("best", "crossovers", "policy")} == {
        "best": [{"variant": "x"}],
        "crossovers": [],
        "policy": [],
    }
    assert "FAKE POLICY with 1 entry" in capsys.readouterr().out
    assert [r["variant"] for r in seen[-1]] == ["naive", "sdpa_flash"]  # every row of the file

    # a write cut short: the last row loses its tail; resume measures it again, on a fresh line
    path = tmp_path / "s.jsonl"
    data = path.read_bytes()
    path.write_bytes(data[: data.rstrip(b"\n").rfind(b"\n") + 1 + 40])
    assert [r["variant"] for r in Store(path).rows()] == ["naive"]
    rc, rows = _sweep(tmp_path, "--seq", "32,64", "--variants", "naive,sdpa_flash", "--executor", "inline", "--resume")
    assert rc == 0
    out = " ".join(capsys.readouterr().out.split())  # the terminal's width folds the long line
    assert "1 already in" in out and "3 to measure" in out and "1 unreadable line" in out
    keys = [job_key(r["variant"], r["case"]) for r in rows]
    assert len(keys) == len(set(keys)) == 4
    assert len(path.read_bytes().splitlines()) == 5  # 4 rows and the torn line, never glued together
    assert len(seen[-1]) == 4


@pytest.mark.slow
def test_the_sweep_prints_and_writes_what_attnscope_recommend_gives(tmp_path, capsys):
    rc, rows = _sweep(
        tmp_path, "--seq", "32", "--variants", "naive,sdpa_flash", "--executor", "inline", "--json", str(tmp_path / "a")
    )
    assert rc == 0 and len(rows) == 2
    swept = capsys.readouterr().out
    assert main(["recommend", str(tmp_path / "s.jsonl"), "--json", str(tmp_path / "b")]) == 0
    alone = capsys.readouterr().out
    a, b = (json.loads((tmp_path / n).read_text()) for n in "ab")
    a.pop("host", None)  # the sweep's own look at the machine while it measured (absent on a quiet one)
    assert a["best"] and a == b  # the same document, the same file named
    assert alone.strip().splitlines()[0] in swept  # and the same text


def test_html_flag_writes_the_page_of_every_row_and_is_checked_before_work(tmp_path, capsys):
    pytest.importorskip("plotly")
    page = tmp_path / "sweep.html"
    rc, rows = _sweep(
        tmp_path, "--seq", "32", "--variants", "naive,sdpa_flash", "--executor", "inline", "--html", str(page)
    )
    assert rc == 0 and len(rows) == 2
    text = page.read_text()
    assert "Sweep: s.jsonl (2 rows)" in text and "naive" in text and "sdpa_flash" in text
    # a directory is no page, and --html must not overwrite the rows: one line, exit 2, nothing measured
    for bad in (str(tmp_path), str(tmp_path / "t.jsonl")):
        capsys.readouterr()
        assert main(["sweep", *TINY, *FAST, "--seq", "32", "--out", str(tmp_path / "t.jsonl"), "--html", bad]) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and "--html" in err
        assert not (tmp_path / "t.jsonl").exists()


@pytest.mark.slow
def test_library_run_mode_and_sweep(tmp_path):
    from attnscope.api import run, sweep
    from attnscope.core.types import Case

    case = Case(batch=1, heads=1, seq_q=32, head_dim=16, dtype="fp32", device="cpu")
    r = run(case, "naive", mode="fwd_bwd", timing_budget_s=0.01, measure_peak=False).results[0]
    assert r.status == "ok" and r.mode == "fwd_bwd" and set(r.rel_errors) == {"out", "dq", "dk", "dv"}
    cases = grid(Axes(batch=[1], heads=[1], seq=[32], head_dim=[16], dtype=["fp32"], mode=["fwd", "fwd_bwd"]), "cpu")
    out = tmp_path / "lib.jsonl"
    got = sweep(cases, "naive", out=out, executor="inline", timing_budget_s=0.01, measure_peak=False)
    assert [(x.mode, x.status) for x in got] == [("fwd", "ok"), ("fwd_bwd", "ok")]
    with pytest.raises(ValueError, match="resume"):
        sweep(cases, "naive", out=out, executor="inline")
    # nothing missing (the same settings: a resume with another budget is refused, as the command line refuses it)
    assert sweep(cases, "naive", out=out, resume=True, executor="inline", timing_budget_s=0.01) == []


@pytest.mark.slow
def test_run_mode_fwd_bwd_on_the_command_line(tmp_path):
    js = tmp_path / "run.json"
    rc = main(["run", *TINY, "--seq", "32", "--mode", "fwd_bwd", "--variants", "naive", *FAST[:3], "--json", str(js)])
    assert rc == 0
    r = json.loads(js.read_text())["results"][0]
    assert r["mode"] == "fwd_bwd" and set(r["rel_errors"]) == {"out", "dq", "dk", "dv"}
    # 1·1·32·33/2 = 528 kept scores; 4·16·528 = 33792 forward FLOPs; fwd+bwd 3.5× = 118272
    assert r["flops"] == 118272


# ---- isolation through a sweep (worker processes) ----


@pytest.mark.slow
def test_every_failure_is_a_row_and_the_sweep_goes_on(tmp_path, test_variants):
    names = ["naive", "t_raise", "t_abort", "t_hang", "t_oom", "t_sticky", "naive_inplace"]
    rc, rows = _sweep(tmp_path, "--seq", "32", "--variants", ",".join(names), "--timeout", "10")
    assert rc == 0
    got = [(r["variant"], r["status"]) for r in rows]
    assert got == list(zip(names, ["ok", "error", "crashed", "timeout", "oom", "crashed", "ok"], strict=True)), got
    by = {r["variant"]: r for r in rows}
    assert "kernel exploded on purpose" in by["t_raise"]["reason"]
    # the signal and the last line the dying worker wrote (faulthandler's, after the variant's own)
    assert "signal SIGABRT" in by["t_abort"]["reason"] and "Fatal Python error: Aborted" in by["t_abort"]["reason"]
    assert by["t_hang"]["reason"] == "no result within the timeout of 10 s: the worker was stopped"
    assert "64.00 GiB" in by["t_oom"]["reason"]
    assert "sticky" in by["t_sticky"]["reason"]
    # after the sticky CUDA fault a fresh worker ran the next job; rows of dead workers still say where
    assert "worker_start" in by["naive_inplace"]["cost_s"]
    assert all(r["env"] and r["env"]["python"] for r in rows)


@pytest.mark.slow
def test_after_an_oom_the_same_worker_runs_the_next_case(tmp_path, test_variants):
    rc, rows = _sweep(tmp_path, "--seq", "32,64", "--variants", "t_oom,naive")
    assert rc == 0
    assert [(r["variant"], r["case"]["seq_q"], r["status"]) for r in rows] == [
        ("t_oom", 32, "oom"),
        ("naive", 32, "ok"),
        ("t_oom", 64, "oom"),
        ("naive", 64, "ok"),
    ]
    assert ["worker_start" in (r["cost_s"] or {}) for r in rows] == [True, False, False, False]


# ---- a real process: kill -9, Ctrl-C ----


def _start(out: Path, *extra: str, tmp: Path | None = None) -> subprocess.Popen:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "ATTNSCOPE_VARIANT_MODULES": "tests.variants_for_tests"}
    if tmp is not None:
        env["TMPDIR"] = str(tmp)
    cmd = [sys.executable, "-m", "attnscope.cli.main", "sweep", *TINY, *FAST, "--out", str(out), *extra]
    return subprocess.Popen(
        cmd,
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
        # the signals at their defaults, whatever this test run inherited (nohup ignores SIGHUP, a background job
        # SIGINT; an ignored signal stays ignored across exec, and the command keeps it so)
        preexec_fn=lambda: [signal.signal(s, signal.SIG_DFL) for s in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)],
    )


def _wait_for_rows(p: subprocess.Popen, out: Path, n: int, limit_s: float = 180) -> int:
    end = time.monotonic() + limit_s
    while time.monotonic() < end:
        rows = len(Store(out).rows())
        if rows >= n:
            return rows
        assert p.poll() is None, p.communicate()
        time.sleep(0.02)
    raise AssertionError(f"no {n} row(s) in {limit_s} s")


def _workers_of(pid: int) -> list[int]:
    try:
        kids = Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
    except OSError:
        return []
    return [int(k) for k in kids if b"spawn_main" in Path(f"/proc/{k}/cmdline").read_bytes()]


def _alive(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().split(")")[1].split()[0] != "Z"
    except OSError:
        return False


def _cleanup(p: subprocess.Popen) -> None:
    if p.poll() is None:
        p.kill()
    p.communicate()
    try:
        os.killpg(p.pid, signal.SIGKILL)  # anything of this test's own session left behind
    except ProcessLookupError:
        pass


@pytest.mark.slow
def test_kill_9_mid_sweep_then_resume_gives_every_row_once(tmp_path):
    out = tmp_path / "k.jsonl"
    tmp = tmp_path / "tmp"  # the temporary directory of both commands: what the killed one leaves is seen here
    tmp.mkdir()
    grid_args = ["--seq", "32", "--mode", "fwd,fwd_bwd", "--variants", "naive,t_hang,sdpa_flash"]
    p = _start(out, *grid_args, "--timeout", "600", tmp=tmp)
    try:
        assert _wait_for_rows(p, out, 1) == 1  # naive fwd is saved; t_hang now holds the worker
        workers = _workers_of(p.pid)
        assert workers or not Path(f"/proc/{p.pid}/task/{p.pid}/children").exists()
        os.kill(p.pid, signal.SIGKILL)
        p.wait(timeout=30)
        assert p.returncode == -signal.SIGKILL
        end = time.monotonic() + 20
        while any(_alive(w) for w in workers) and time.monotonic() < end:
            time.sleep(0.1)
        assert not any(_alive(w) for w in workers), "a worker outlived its sweep"
    finally:
        _cleanup(p)
    assert [r["variant"] for r in Store(out).rows()] == ["naive"]
    left = [d.name for d in tmp.iterdir() if d.name.startswith("attnscope-workers-")]
    assert len(left) == 1  # kill -9: the workers' folder outlives its sweep...
    again = [sys.executable, "-m", "attnscope.cli.main", "sweep", *TINY, *FAST, "--out", str(out), *grid_args]
    env = {
        **os.environ,
        "PYTHONPATH": str(ROOT),
        "ATTNSCOPE_VARIANT_MODULES": "tests.variants_for_tests",
        "TMPDIR": str(tmp),
    }
    refused = subprocess.run(again, cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
    assert refused.returncode == 2 and "--resume" in refused.stderr and len(refused.stderr.splitlines()) == 1
    done = subprocess.run(
        [*again, "--resume", "--timeout", "8"], cwd=ROOT, env=env, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr
    assert not [d.name for d in tmp.iterdir() if d.name.startswith("attnscope-")]  # ...until the next one starts
    rows = Store(out).rows()
    want = {(v, m) for v in ("naive", "t_hang", "sdpa_flash") for m in ("fwd", "fwd_bwd")}
    assert sorted((r["variant"], r["mode"]) for r in rows) == sorted(want)  # each exactly once
    assert {r["variant"]: r["status"] for r in rows if r["mode"] == "fwd_bwd"} == {
        "naive": "ok",
        "t_hang": "timeout",
        "sdpa_flash": "ok",
    }


@pytest.mark.slow
def test_ctrl_c_stops_cleanly_after_saving(tmp_path):
    out = tmp_path / "c.jsonl"
    p = _start(out, "--seq", "32", "--variants", "naive,t_hang,sdpa_flash", "--timeout", "600")
    try:
        _wait_for_rows(p, out, 1)
        os.kill(p.pid, signal.SIGINT)
        _, err = p.communicate(timeout=60)
    finally:
        _cleanup(p)
    assert p.returncode == 130, err
    assert "Traceback" not in err
    line = [ln for ln in err.splitlines() if "interrupted" in ln]
    assert len(line) == 1 and "1 row(s) saved in" in line[0] and line[0].endswith("--resume"), err
    store = Store(out)
    assert [r["variant"] for r in store.rows()] == ["naive"] and store.num_torn == 0


# ---- the same rows whatever the executor ----


def _comparable(r) -> tuple:
    kernels = tuple(k.name for k in r.fingerprint.kernels) if r.fingerprint else None
    return (r.variant, r.case, r.mode, r.status, r.numerics_ok, kernels, r.family, r.backend)


@pytest.mark.slow
@pytest.mark.parametrize("name", ["process", "ray"])
def test_executors_give_the_inline_rows(name, test_variants):
    from attnscope.core.types import Case
    from attnscope.execute.executors import make_executor
    from attnscope.execute.job import Options
    from attnscope.execute.worker import AttentionJob

    if name == "ray":
        ray = pytest.importorskip("ray")
        ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, configure_logging=False)
    fwd = Case(batch=1, heads=1, seq_q=32, head_dim=16, dtype="fp32", device="cpu")
    bwd = Case(batch=1, heads=1, seq_q=32, head_dim=16, dtype="fp32", device="cpu", mode="fwd_bwd")
    opts = Options(timing_budget_s=0.01, measure_peak=False)
    jobs = [
        AttentionJob(c, v, opts) for c in (fwd, bwd) for v in ("naive", "sdpa_math", "sdpa_flash", "t_raise", "t_oom")
    ]
    try:
        rows = {}
        for ex_name in ("inline", name):
            ex = make_executor(ex_name, timeout_s=None if ex_name == "inline" else 120, workers=2)
            try:
                rows[ex_name] = sorted((_comparable(r) for r in ex.run(jobs)), key=repr)
            finally:
                ex.close()
    finally:
        if name == "ray":
            ray.shutdown()
    assert len(rows["inline"]) == len(jobs)
    assert [r[3] for r in rows["inline"]].count("ok") == 6  # the comparison is not of empty rows
    assert rows[name] == rows["inline"]


def test_the_default_set_gives_a_serving_case_the_serving_variants_and_a_dense_case_the_others():
    from attnscope.core.cases import make_case
    from attnscope.execute.job import Options
    from attnscope.execute.sweep_plan import plan as plan_jobs

    dense, paged = make_case("cpu", seq_q=64), make_case("cpu", seq_q=1, seq_kv=64, page_size=16)
    names = ["sdpa_math", "paged_flex"]
    got = [
        (j.case.is_serving, j.variant) for j in plan_jobs([dense, paged], names, Options(), explicit=False, done=set())
    ]
    assert got == [(False, "sdpa_math"), (True, "paged_flex")]
    # asked for by name: every pair is a job (the mismatched ones become skipped rows that say why)
    assert len(plan_jobs([dense, paged], names, Options(), explicit=True, done=set())) == 4
