"""Analyse many trace files (one per rank, or a directory of them) in a process pool."""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

from attnscope.core.arguments import MAX_PROCESSES, check_whole
from attnscope.core.types import Result
from attnscope.trace import TraceError

TRACE_SUFFIXES = (".json", ".json.gz")
_RANK_IN_NAME = re.compile(r"rank[_\-.]?(\d+)", re.IGNORECASE)


def expand(paths: list[str]) -> list[Path]:
    """Files as given; a directory becomes its ``.json``/``.json.gz`` files, sorted, less the result files attnscope
    wrote there (:func:`results_in`: a run's ``--json`` beside its ``--trace-dir`` traces is no trace).  A file
    reached twice (named twice, by a link, or named and inside a directory given) is refused: each trace is one
    rank, read once."""
    out: list[Path] = []
    for p in map(Path, paths):
        if p.is_dir():
            files = sorted(f for f in p.iterdir() if f.is_file() and f.name.endswith(TRACE_SUFFIXES))
            ours = set(results_in(p))
            found = [f for f in files if f not in ours]
            if not found:
                why = f" (only {len(ours)} result file(s) attnscope wrote: report, diff or recommend read them)"
                raise TraceError(f"{p}: directory holds no .json or .json.gz trace files" + (why if ours else ""))
            out += found
        else:
            out.append(p)
    seen: dict[str, Path] = {}
    for p in out:
        first = seen.setdefault(os.path.realpath(p), p)
        if first is not p:
            same = "given twice" if str(first) == str(p) else f"the same file as {first}"
            raise TraceError(f"{p}: {same}: each trace is one rank, read once")
    return out


def results_in(folder: Path) -> list[Path]:
    """The ``.json``/``.json.gz`` files of ``folder`` that attnscope wrote (documents, a sweep's rows), sorted."""
    from attnscope.document.load import written_by_attnscope

    return sorted(
        f for f in folder.iterdir() if f.is_file() and f.name.endswith(TRACE_SUFFIXES) and written_by_attnscope(f)
    )


def _one(path: Path, require_gpu: bool, capture: str | None = None) -> Result | str:
    from attnscope.api import analyze

    try:
        return analyze(path, require_gpu=require_gpu, capture=capture)
    except TraceError as e:
        return str(e)
    except (OSError, MemoryError, RecursionError) as e:  # one bad file must not sink the others
        return f"{path}: {type(e).__name__}: {e}"


def _set_rank(r: Result, index: int) -> None:
    s = r.trace_summary
    if s is None:
        return
    if s.get("rank") is not None:
        s["rank_source"] = "distributedInfo"
        return
    m = _RANK_IN_NAME.search(Path(r.trace_path or "").name)
    s["rank"], s["rank_source"] = (int(m.group(1)), "file name") if m else (index, "position on the command line")


# Measured on HTA's two-rank sample (2 x 1.7 MB of JSON), 2 cores: 0.27 s of CPU in one process against 0.22 s in
# the parent and 0.13 s in the workers with a pool of two, the wall time no better
SMALL_TEXT = 16 << 20


def _text_size(paths: list[Path]) -> int:
    from attnscope.trace.source import text_size

    total = 0
    for p in paths:
        try:
            total += text_size(p)
        except OSError:  # unreadable: its own error comes from the analysis
            pass
    return total


LOADAVG = "/proc/loadavg"  # Linux: its 4th field, "R/T", counts the tasks running or ready to run right now


def runnable_now(samples: int = 3, gap_s: float = 0.002) -> int | None:
    """The tasks running or waiting for a core now, this process not counted: the median of ``samples`` readings
    of :data:`LOADAVG` ``gap_s`` apart; None where it is not read (not Linux)."""
    import statistics
    import time

    seen = []
    for i in range(samples):
        if i:
            time.sleep(gap_s)
        try:
            with open(LOADAVG, encoding="ascii") as f:
                running = int(f.read().split()[3].split("/")[0])
        except (OSError, ValueError, IndexError):
            return None
        seen.append(max(0, running - 1))  # the reader itself is running
    return round(statistics.median(seen))


def idle_cores() -> int | None:
    """The cores idle now: the cores less the tasks running or ready to run (:func:`runnable_now`); where the
    kernel does not say, the cores less the 1-minute load average, to the nearest whole one (a load that has just
    ended still weighs on that average for a minute); None where neither is read."""
    cores = os.cpu_count() or 1
    others = runnable_now()
    if others is not None:
        return max(0, cores - others)
    try:
        load = os.getloadavg()[0]
    except (OSError, AttributeError):  # no load average here (Windows)
        return None
    return max(0, round(cores - load))


def analyze_many(
    paths: list[Path], *, jobs: int | None = None, require_gpu: bool = True, capture: str | None = None
) -> tuple[list[Result], list[str]]:
    """Results in input order and one error line per file that could not be analysed.  Without ``jobs``, one
    process per idle core (:func:`idle_cores`; one per core where no load average is read), unless the traces hold
    under ``SMALL_TEXT`` bytes of JSON in all: then this process reads them one after the other (a pool's start
    costs more than it saves on them).  With fewer than two idle cores, this process reads them too: a pool's
    workers then share busy cores, for more CPU time and no less wall time."""
    if jobs is not None:  # a whole number of processes, as the command line's --jobs
        check_whole("jobs", jobs, maximum=MAX_PROCESSES)
    n = len(paths)
    workers = max(1, min(jobs or os.cpu_count() or 1, n))
    if jobs is None and workers > 1:
        idle = idle_cores()
        if _text_size(paths) < SMALL_TEXT or (idle is not None and idle < 2):
            workers = 1
        elif idle is not None:
            workers = min(workers, idle)
    if workers == 1:
        outs = [_one(p, require_gpu, capture) for p in paths]
    else:
        import multiprocessing  # only here: its import is a tenth of a one-trace run's budget
        from concurrent.futures import ProcessPoolExecutor

        methods = multiprocessing.get_all_start_methods()
        ctx = multiprocessing.get_context("fork" if "fork" in methods else "spawn")
        with ProcessPoolExecutor(max_workers=workers, mp_context=ctx) as pool:
            outs = list(pool.map(_one, paths, [require_gpu] * n, [capture] * n))
    results = [o for o in outs if isinstance(o, Result)]
    errors = [o for o in outs if isinstance(o, str)]
    if n > 1:
        for i, r in enumerate(results):
            _set_rank(r, i)
    return results, errors


def analyze_traces(
    traces: list[str] | list[Path], *, jobs: int | None = None, capture: str | None = None
) -> tuple[dict[str, Any] | None, list[str]]:
    """The annotated document `attnscope analyze --json` writes for these traces (files or directories of them),
    and one error line per file that could not be analysed; the document is None when none could.  A trace without
    GPU events is fingerprinted by its CPU ops; several traces also get the ranks combined (``overall``).  ``capture``:
    a trace of the capture of the CUDA graphs the traces replay."""
    from attnscope.trace import no_gc

    with no_gc():  # ~10^5 long-lived objects: collections would find nothing to free
        results, errors = analyze_many(expand([str(t) for t in traces]), jobs=jobs, require_gpu=False, capture=capture)
        if not results:
            return None, errors
        from attnscope.analysis.fingerprint.ranks import combine
        from attnscope.api import annotate
        from attnscope.document.schema import document

        named = [(r.variant, r.trace_summary) for r in results if r.trace_summary is not None]
        overall = combine(named) if len(named) > 1 else None
        return annotate(document(None, results, **({"overall": overall} if overall else {}))), errors


def light_gc() -> Any:
    """A context in which the cyclic garbage collector does not run (a short process building ~10^5 objects)."""
    from attnscope.trace import no_gc

    return no_gc()


def read_ahead(path: str | Path) -> None:
    """Start a second core reading the first part of one trace (attnscope.trace.parallel), for the analysis that
    follows in this process to use; the caller decides when (the command line: ATTNSCOPE_READ_CORES)."""
    from attnscope.trace import parallel

    parallel.start(path)
