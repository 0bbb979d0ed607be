"""Ray on a laptop is local: a Ray started by a sweep listens on the loopback interface only (read from the
kernel's table of sockets of every process it started), RAY_ADDRESS in the environment does not redirect it, and a
cluster address that does not answer is refused within a bound, in one line."""

from __future__ import annotations

import ipaddress
import os
import time

import pytest

from attnscope.cli.main import main
from attnscope.core.types import Case

ray = pytest.importorskip("ray")
psutil = pytest.importorskip("psutil")  # a dependency of Ray


def _non_loopback_listeners() -> list[tuple[str, str, int]]:
    """(process, address, port) of every listening TCP socket of this process and the processes it started whose
    address is not a loopback one (an IPv4-mapped IPv6 address is judged by its IPv4 address)."""
    me = psutil.Process()
    out = []
    for p in [me, *me.children(recursive=True)]:
        try:
            conns = p.net_connections(kind="inet")
            name = p.name()
        except (psutil.NoSuchProcess, psutil.AccessDenied):
            continue
        for c in conns:
            if c.status != psutil.CONN_LISTEN:
                continue
            ip = ipaddress.ip_address(c.laddr.ip.split("%")[0])
            mapped = getattr(ip, "ipv4_mapped", None)
            if not (mapped or ip).is_loopback:
                out.append((name, c.laddr.ip, c.laddr.port))
    return out


@pytest.mark.slow
def test_a_local_ray_sweep_listens_on_loopback_only_and_ignores_ray_address(tmp_path, monkeypatch):
    from attnscope.api import sweep

    # a dead cluster address in the environment: followed, the sweep would hang or fail
    monkeypatch.setenv("RAY_ADDRESS", "127.0.0.1:1")
    seen: list[list[tuple[str, str, int]]] = []
    servers: list[int] = []

    def look(_):  # while the Ray started for the sweep is up, with an actor that ran a job
        servers.append(len([p for p in psutil.Process().children(recursive=True) if "raylet" in p.name()]))
        seen.append(_non_loopback_listeners())

    cases = [Case(1, 1, 16, 8, "fp32")]
    rows = sweep(cases, "naive", out=tmp_path / "s.jsonl", executor="ray", timing_budget_s=0.01, on_result=look)
    assert [r.status for r in rows] == ["ok"], [r.reason for r in rows]
    assert servers and servers[0] >= 1, "no raylet was seen: the check below would look at nothing"
    assert seen == [[]], f"listening beyond the loopback interface: {seen}"
    assert os.environ["RAY_ADDRESS"] == "127.0.0.1:1"  # put back as it was
    assert not ray.is_initialized()  # the Ray the sweep started is stopped


def test_a_cluster_that_does_not_answer_is_refused_in_one_line_within_the_bound(tmp_path, capsys):
    t0 = time.monotonic()
    argv = ["sweep", "--device", "cpu", "--seq", "16", "--heads", "1", "--head-dim", "8", "--executor", "ray"]
    assert main([*argv, "--ray-address", "127.0.0.1:1", "--out", str(tmp_path / "s.jsonl")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--ray-address" in err and "nothing answered at 127.0.0.1:1" in err
    assert time.monotonic() - t0 < 30  # refused (port 1 refuses at once); a silent host is cut at 10 s
    assert not (tmp_path / "s.jsonl").exists()


def test_the_sweep_says_where_ray_runs_and_that_ray_address_is_ignored(monkeypatch):
    from argparse import Namespace

    from attnscope.cli.sweep import _ray_notes

    monkeypatch.setenv("RAY_ADDRESS", "10.0.0.9:6379")
    (line,) = _ray_notes(Namespace(executor="ray", ray_address=None))
    assert "127.0.0.1 only" in line and "RAY_ADDRESS=10.0.0.9:6379 in the environment is ignored" in line
    monkeypatch.delenv("RAY_ADDRESS")
    assert "ignored" not in _ray_notes(Namespace(executor="ray", ray_address=None))[0]
    assert _ray_notes(Namespace(executor="process", ray_address=None)) == ()
