"""CPU time of ``attnscope analyze TRACE --json OUT`` in several checkouts of the repository, interleaved.

    git worktree add --detach /tmp/at_A COMMIT_A; git worktree add --detach /tmp/at_B COMMIT_B
    python benchmarks/ab_checkouts.py TRACE /tmp/at_A /tmp/at_B [--rounds 7] [--python /tmp/asv/bin/python]
        [--no-json] [-- EXTRA ANALYZE ARGS]

Each round runs every checkout once, in an order rotated by one each round (so that no checkout always runs first
or after the same one), as a fresh process from the checkout's root (``python -m attnscope.cli.main``, the package
byte-compiled first, as an install would be).  CPU time is user + system of the process and the children it waited
for (``os.wait4``); on a machine shared with other work, compare the minima (the least disturbed run) and the
medians, never one run.  Peak RSS is the largest ``ru_maxrss`` of the runs.  The load average is printed at the
start and the end.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def run(py: str, checkout: Path, cmd: list[str]) -> tuple[float, float, float]:
    """(CPU s, wall s, peak RSS MiB) of one fresh ``analyze`` in ``checkout``."""
    t0 = time.perf_counter()
    p = subprocess.Popen(
        [py, "-m", "attnscope.cli.main", *cmd],
        cwd=checkout,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        env={**os.environ, "PYTHONPATH": str(checkout)},
    )
    assert p.stderr is not None
    err = p.stderr.read().decode()
    _, status, ru = os.wait4(p.pid, 0)
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"{checkout}: exit {os.waitstatus_to_exitcode(status)}: {err.strip()[-2000:]}")
    return ru.ru_utime + ru.ru_stime, time.perf_counter() - t0, ru.ru_maxrss / 1024  # Linux: KiB


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("trace")
    ap.add_argument("checkouts", nargs="+", type=Path)
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--python", default=sys.executable, help="the interpreter that runs attnscope")
    ap.add_argument("--no-json", action="store_true", help="analyze without --json (the command of 2026-12-04)")
    argv = sys.argv[1:]
    cut = argv.index("--") if "--" in argv else len(argv)
    a = ap.parse_args(argv[:cut])
    extra = argv[cut + 1 :]  # after --: more arguments for analyze
    trace = str(Path(a.trace).resolve())
    for c in a.checkouts:  # as an install would be: the byte code written once, not by the first timed run
        compile_cmd = [a.python, "-m", "compileall", "-q", str(c / "attnscope")]
        subprocess.run(compile_cmd, check=True, stdout=subprocess.DEVNULL)
    out = Path(tempfile.mkdtemp(prefix="ab_checkouts_")) / "out.json"
    cmd = ["analyze", trace, *([] if a.no_json else ["--json", str(out)]), *extra]
    print(f"{os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f} at the start; {a.python}; {' '.join(cmd)}")
    got: dict[Path, list[tuple[float, float, float]]] = {c: [] for c in a.checkouts}
    n = len(a.checkouts)
    for r in range(a.rounds):
        for c in a.checkouts[r % n :] + a.checkouts[: r % n]:
            got[c].append(run(a.python, c, cmd))
    print(f"load average {os.getloadavg()[0]:.1f} at the end")
    for c, rows in got.items():
        cpu = [x[0] for x in rows]
        print(
            f"{c!s:40} CPU min {min(cpu):.3f} s, median {statistics.median(cpu):.3f} s; wall min "
            f"{min(x[1] for x in rows):.3f} s; peak RSS {max(x[2] for x in rows):.0f} MiB ({len(rows)} runs)"
        )
    out.unlink(missing_ok=True)
    out.parent.rmdir()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
