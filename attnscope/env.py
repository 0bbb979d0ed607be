"""What the run ran on: torch, CUDA, cuDNN, device, driver, python, date."""

from __future__ import annotations

import datetime as dt
import os
import platform
import subprocess
import sys

from attnscope.types import Env


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
    )
