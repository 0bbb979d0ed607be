"""The peak resident memory of one ``attnscope`` command in a fresh process, as that process itself saw it.

``ru_maxrss`` of a child (``os.wait4``, ``RUSAGE_CHILDREN``) is no measure here: Linux carries the high-water mark of
the memory a process had before ``exec`` into it, so a child spawned by a test process of 600 MiB reports 600 MiB
whatever it did.  The child reads its own ``VmHWM`` (the peak since ``exec``) from ``/proc/self/status`` when the
command returns and writes it to a file named by the parent.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CHILD = """
import sys
from attnscope.cli.main import main
try:
    rc = main(sys.argv[2:])
finally:
    with open("/proc/self/status") as f, open(sys.argv[1], "w") as out:
        out.write(next(line for line in f if line.startswith("VmHWM")).split()[1])  # KiB
sys.exit(rc)
"""


def run_peak(*args: str) -> tuple[int, list[str], float]:
    """Exit status, stderr lines and peak RSS (MiB) of ``attnscope ARGS`` in a fresh process."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    with tempfile.NamedTemporaryFile("r", suffix=".hwm") as hwm:
        p = subprocess.run(
            [sys.executable, "-c", CHILD, hwm.name, *args],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            env=env,
            cwd=ROOT,
            check=False,
        )
        return p.returncode, p.stderr.decode().splitlines(), int(hwm.read()) / 1024
