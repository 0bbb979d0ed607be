"""``attnscope run --ncu``: each variant's call once more, under Nsight Compute.  Needs torch.

The run itself is unchanged; afterwards one child process runs every ok variant's call once,
each after a ``torch.cuda._sleep`` marker, inside ``cudaProfilerStart/Stop`` only, under
``ncu`` (attnscope/ncu.py builds the command and reads its CSV).  Without ncu, without
permission to read the counters, or on a timeout, the results stay as they are and each says why.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from dataclasses import replace
from typing import Any

from attnscope.analysis.fingerprint.counters import COUNTERS_SOURCE, tensor_cores_from_counters
from attnscope.core.types import Case, Result
from attnscope.measure import ncu

TIMEOUT_S = 600
PERMISSION = "ERR_NVGPUCTRPERM"


def _reason_from(stderr: str, stdout: str, rc: int) -> str:
    text = stderr + stdout
    if PERMISSION in text:
        return (
            f"ncu has no permission to read the GPU performance counters ({PERMISSION}): run as root or set "
            "NVreg_RestrictProfilingToAdminUsers=0"
        )
    lines = [ln for ln in text.splitlines() if ln.strip() and not ln.startswith("==PROF==")]
    return f"ncu exited with status {rc}: {lines[-1][:300] if lines else 'no output'}"


def profile(case: Case, variants: list[str], timeout_s: float = TIMEOUT_S) -> tuple[dict[str, Any], str | None]:
    """ncu's kernels per variant (plain dicts via ``ncu.NcuKernel``), or {} and the reason."""
    if not case.device.startswith("cuda"):  # first: on a CPU, installing ncu would change nothing
        return {}, "Nsight Compute profiles CUDA kernels: this run is on the CPU"
    exe = shutil.which("ncu")
    if exe is None:
        return {}, "ncu (Nsight Compute) is not on the PATH"
    args = ["--case", json.dumps(case.to_dict()), "--variants", ",".join(variants)]
    cmd = ncu.build_command(exe, sys.executable, args)
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout_s, check=False)
    except subprocess.TimeoutExpired:
        return {}, f"ncu did not finish within {timeout_s:.0f} s"
    try:
        kernels = ncu.parse_raw_csv(p.stdout)
    except ValueError:
        return {}, _reason_from(p.stderr, p.stdout, p.returncode)
    labels = [ln.split(" ", 1)[1] for ln in p.stderr.splitlines() if ln.startswith("attnscope-ncu-marker ")]
    return ncu.split_by_marker(kernels, labels), None


def attach(case: Case, results: list[Result]) -> tuple[list[Result], str | None]:
    """Profile every ok variant: each result gets the deep fields in ``ncu``, and its kernels' tensor cores
    from the counters (the name table's verdict is kept where ncu matched no kernel).  The results, and why
    ncu gave nothing (None when it ran)."""
    ok = [r for r in results if r.status == "ok"]
    per_variant, why = profile(case, [r.variant for r in ok]) if ok else ({}, "no variant ran")
    out = []
    for r in results:
        if r.status != "ok":
            out.append(r)
            continue
        if why is not None:
            r.ncu.update(status="unavailable", reason=why)
            out.append(r)
            continue
        got = per_variant.get(r.variant)
        if got is None:
            r.ncu.update(status="unavailable", reason="the variant's call did not run under ncu")
            out.append(r)
            continue
        names: list[tuple[str, str]] = [
            (k.name, str(k.category)) for k in (r.fingerprint.kernels if r.fingerprint else ())
        ]
        joined = ncu.join(names, got, case.dtype)
        r.ncu.update(
            status="ok",
            num_kernels=len(got),
            kernels=joined,  # trace_kernel: the index in this result's kernels
            source="Nsight Compute, one more call of the variant after the timed ones",
        )
        if r.fingerprint is not None:
            fp, differ = tensor_cores_from_counters(r.fingerprint, joined)
            r.ncu.update(tensor_cores_from=COUNTERS_SOURCE, name_table_disagrees=differ)
            r = replace(r, fingerprint=fp)
        out.append(r)
    return out, why


def _target(argv: list[str]) -> None:
    """The child under ncu: each variant's call, warmed up, then once inside the profiled range."""
    import warnings

    import torch

    from attnscope.variants import resolve
    from attnscope.workloads.attention import make_inputs

    case = Case.from_dict(json.loads(argv[argv.index("--case") + 1]))
    names = argv[argv.index("--variants") + 1].split(",")
    x = make_inputs(case, 0)
    for v in resolve(names):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            try:
                prep = v.prepare(case, x)
            except Exception:  # noqa: BLE001 - a variant that cannot run here has no marker
                continue
        with prep.context():
            for _ in range(3):
                prep.fn()
            torch.cuda.synchronize()
            torch.cuda.profiler.start()
            try:
                torch.cuda._sleep(1000)
                print(f"attnscope-ncu-marker {v.name}", file=sys.stderr, flush=True)
                prep.fn()
                torch.cuda.synchronize()
            finally:
                torch.cuda.profiler.stop()


if __name__ == "__main__":
    if sys.argv[1:2] == ["target"]:
        _target(sys.argv[2:])
