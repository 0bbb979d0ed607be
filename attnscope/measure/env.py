"""What the run ran on: torch, CUDA, cuDNN, device, driver, python, date, and which attention libraries outside
torch import here."""

from __future__ import annotations

import datetime as dt
import functools
import importlib
import importlib.util
import os
import platform
import subprocess
import sys
from pathlib import Path

from attnscope.core.arguments import UsageError, parse_device
from attnscope.core.libraries import LIBRARIES
from attnscope.core.types import Env


def _driver() -> str | None:
    try:
        out = subprocess.run(
            ["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"],
            capture_output=True,
            text=True,
            timeout=10,
            check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    line = out.stdout.strip().splitlines()
    return line[0].strip() if out.returncode == 0 and line else None


@functools.cache
def libraries() -> dict[str, str | None]:
    """Each library of :data:`attnscope.core.libraries.LIBRARIES` by module: its ``__version__`` where it imports
    in this process ("version unknown" where it has none), None where it is not installed or its import fails.  A
    library not installed costs one lookup (no import); an installed one is imported once per process, as its
    variants would."""
    out: dict[str, str | None] = {}
    for lib in LIBRARIES:
        top = lib.module.split(".")[0]
        try:
            if importlib.util.find_spec(top) is None:
                out[lib.module] = None
                continue
            importlib.import_module(lib.module)
        except Exception:  # noqa: BLE001 - any failure to import (missing, ABI, CUDA) means it does not import here
            out[lib.module] = None
            continue
        version = getattr(sys.modules[top], "__version__", None)
        out[lib.module] = str(version) if version else "version unknown"
    return out


def collect(device: str) -> Env:
    import torch

    cuda = device.startswith("cuda")
    cudnn = None
    if torch.backends.cudnn.is_available():
        cudnn = str(torch.backends.cudnn.version())
    name = torch.cuda.get_device_name(device) if cuda else (platform.processor() or platform.machine())
    return Env(
        torch=torch.__version__,
        cuda=torch.version.cuda,
        cudnn=cudnn,
        device_name=name,
        driver=_driver() if cuda else None,
        python=platform.python_version(),
        date=dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        platform=f"{sys.platform} {platform.machine()}",
        host_cores=os.cpu_count(),
        libraries=dict(libraries()),
    )


def _cgroup_room_bytes() -> int | None:
    """What the container's memory limit still allows (cgroup v2), if there is one."""
    try:
        limit = Path("/sys/fs/cgroup/memory.max").read_text().strip()
        used = int(Path("/sys/fs/cgroup/memory.current").read_text().strip())
    except (OSError, ValueError):
        return None
    return None if limit == "max" else max(0, int(limit) - used)


def free_memory_bytes(device: str) -> int | None:
    """Memory a run on ``device`` can still take: free GPU memory, or MemAvailable (and the
    container's limit) on the host.  None when the system does not say."""
    if device.startswith("cuda"):
        import torch

        return int(torch.cuda.mem_get_info(torch.device(device))[0])
    avail = None
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemAvailable:"):
                avail = int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    if avail is None and hasattr(os, "sysconf"):
        try:
            avail = os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
        except (OSError, ValueError):
            avail = None
    room = _cgroup_room_bytes()
    if avail is None:
        return room
    return min(avail, room) if room is not None else avail


def default_device() -> str:
    """cuda where torch sees a GPU, else cpu."""
    import torch

    return "cuda" if torch.cuda.is_available() else "cpu"


def check_device(text: str | None, what: str = "device") -> str | None:
    """The device string to use (normalised), after checking that torch can reach it.  ``what`` names the value in
    the message: ``device`` (default) or, for a library caller, ``case.device`` (the command line says ``--device``)."""
    if text is None:
        return None
    kind, idx = parse_device(text, what)
    if kind == "cpu":
        return "cpu"
    import torch

    if not torch.cuda.is_available():
        raise UsageError(
            f"{what} {text}: torch {torch.__version__} sees no CUDA GPU here; use {what} cpu", fields=(what,)
        )
    n = torch.cuda.device_count()
    if idx is not None and idx >= n:
        raise UsageError(f"{what} {text}: this machine has {n} CUDA device(s), cuda:0 to cuda:{n - 1}", fields=(what,))
    return "cuda" if idx is None else f"cuda:{idx}"
