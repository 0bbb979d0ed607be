"""The one free-memory reader (``attnscope.measure.env.free_memory_bytes``), which the attention case's size check
and the model's both read: the GPU's own free memory, or the host's MemAvailable within the container's limit."""

from __future__ import annotations

from pathlib import Path

import pytest

from attnscope.measure import env

KIB = 1024


def _files(monkeypatch: pytest.MonkeyPatch, texts: dict[str, str]) -> list[str]:
    """Path.read_text answers from ``texts``; any other file is missing (OSError)."""
    opened: list[str] = []

    def read_text(self: Path, *a: object, **k: object) -> str:
        opened.append(str(self))
        if str(self) in texts:
            return texts[str(self)]
        raise OSError(f"no {self}")

    monkeypatch.setattr(Path, "read_text", read_text)
    return opened


def test_the_host_s_mem_available_without_a_container_limit(monkeypatch):
    opened = _files(monkeypatch, {"/proc/meminfo": "MemTotal: 16000 kB\nMemFree: 2000 kB\nMemAvailable: 7000 kB\n"})
    assert env.free_memory_bytes("cpu") == 7000 * KIB
    assert "/proc/meminfo" in opened


def test_the_container_s_limit_caps_mem_available(monkeypatch):
    # limit 5000 KiB, 1000 KiB used: 4000 KiB left, below MemAvailable's 7000 KiB
    _files(
        monkeypatch,
        {
            "/proc/meminfo": "MemAvailable: 7000 kB\n",
            "/sys/fs/cgroup/memory.max": f"{5000 * KIB}\n",
            "/sys/fs/cgroup/memory.current": f"{1000 * KIB}\n",
        },
    )
    assert env.free_memory_bytes("cpu") == 4000 * KIB


def test_nothing_said_is_none(monkeypatch):
    _files(monkeypatch, {"/proc/meminfo": "MemTotal: 1 kB\n"})
    monkeypatch.setattr(env.os, "sysconf", lambda name: (_ for _ in ()).throw(ValueError(name)))
    assert env.free_memory_bytes("cpu") is None


def test_a_gpu_is_asked_about_itself(monkeypatch):
    torch = pytest.importorskip("torch")
    asked = []
    monkeypatch.setattr(torch.cuda, "mem_get_info", lambda d: asked.append(d) or (1000 + (d.index or 0), 5000))
    assert env.free_memory_bytes("cuda:1") == 1001 and env.free_memory_bytes("cuda") == 1000
    assert asked == [torch.device("cuda:1"), torch.device("cuda")]
