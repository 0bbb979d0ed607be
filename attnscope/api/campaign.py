"""The one campaign loop of every measuring command (run, guess, sweep, model, the tour): jobs → executor → store →
one document.

:func:`measure_jobs` runs the jobs through an executor and owns what each of those commands needs while they run:

- every row saved as it comes: appended to the JSONL store (durable before the next job's callback), and/or the
  document so far rewritten atomically (marked partial), so a crash or a kill loses only the jobs running;
- progress as events (:class:`Started`, :class:`Finished`): the command line draws them as one progress bar;
- the time limit: jobs not started when it is spent become ``skipped`` rows that say so (the first always runs);
- a stop (SIGINT, SIGTERM, SIGHUP: a ``KeyboardInterrupt``): the executor closed, every finished row saved, then
  :class:`Interrupted`, whose message says what was saved where and how to resume;
- the host's load read before the first job and judged with the timings after the last
  (:func:`attnscope.measure.host.assess`).

Its caller builds and annotates the document once, from the results this returns; resume and the settings check
(:func:`resume_settings`) are read from the store before the jobs are planned.
"""

from __future__ import annotations

import contextlib
import signal
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Generic, TypeVar

from attnscope.core.arguments import UsageError
from attnscope.core.files import WriteError
from attnscope.execute.executors import Executor
from attnscope.execute.job import Job, Measured
from attnscope.execute.store import Store

R = TypeVar("R", bound=Measured)


@dataclass(frozen=True)
class Planned:
    """Said once, before the first job: the jobs to measure now and the rows the store already holds."""

    total: int
    done_before: int
    torn: int = 0  # lines of the store that are no rows (a write cut short), skipped
    title: str = ""  # what the campaign measures, for a progress line (a run: its case)


@dataclass(frozen=True)
class Started:
    """A job was handed to a worker: ``label`` names it (variant and case)."""

    label: str
    variant: str


@dataclass(frozen=True)
class Finished:
    """A job's row, saved: ``row`` is the dict the store and the document hold; ``done`` of ``total``."""

    row: dict[str, Any]
    status: str
    label: str
    done: int
    total: int


Event = Planned | Started | Finished


class Interrupted(KeyboardInterrupt):
    """A stop while measuring, raised after every finished row was saved: ``what`` says what was saved where and
    how to go on (one line); the signal that stopped it is the ``__cause__``."""

    def __init__(self, what: str) -> None:
        super().__init__(what)
        self.what = what


class StoreFull(WriteError):
    """The store could not grow (a full disk): the cause, then how many rows it holds and how to go on."""

    def __init__(self, cause: WriteError, what: str) -> None:
        OSError.__init__(self, f"{cause}; {what}")
        self.errno, self.path = cause.errno, cause.path


@dataclass
class Campaign(Generic[R]):
    """What :func:`measure_jobs` measured: this call's results in the order they came, the host's verdict, and the
    files that could not be written (``{"document": why}``; a full disk never stops the measuring)."""

    results: list[R]
    host: dict[str, Any]
    elapsed_s: float
    unsaved: dict[str, str] = field(default_factory=dict)
    in_document: int = 0  # rows in the partial document as last written


HELD = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)  # held while a row is written


@contextlib.contextmanager
def _signals_after() -> Iterator[None]:
    """Hold the stopping signals while a row is written: the signal lands after the fsync, never halfway through a
    line."""
    if threading.current_thread() is not threading.main_thread():
        yield  # not ours to hold
        return
    old: dict[int, Callable[[int, Any], Any]] = {}
    for sig in HELD:
        h = signal.getsignal(sig)
        if callable(h):  # an ignored or default signal is left as it is
            old[int(sig)] = h
    caught: list[int] = []
    for num in old:
        signal.signal(num, lambda signum, frame: caught.append(signum))
    try:
        yield
    finally:
        for num, h in old.items():
            signal.signal(num, h)
    if caught:
        old[caught[0]](caught[0], None)


def measure_jobs(
    jobs: Sequence[Job[R]],
    executor: Executor,
    *,
    row: Callable[[R], dict[str, Any]],
    store: Store | None = None,
    document: str | Path | None = None,
    partial: Callable[[list[R]], dict[str, Any]] | None = None,
    on_event: Callable[[Event], None] | None = None,
    on_result: Callable[[R], None] | None = None,
    time_limit_s: float | None = None,
    env: Callable[[], Any] | None = None,
    timings: Callable[[list[R]], Iterable[tuple[str, Sequence[float]]]] | None = None,
    done_before: int = 0,
    resume: str | None = None,
    title: str = "",
) -> Campaign[R]:
    """Measure ``jobs`` through ``executor`` (closed on the way out, whatever happens) and save each row as it comes.

    ``row``: a result as the dict the store and the document hold.  ``store``: append each row there.
    ``document`` with ``partial``: rewrite ``partial(results so far)`` there after every row (a failed write is
    kept in ``unsaved`` and the measuring goes on).  ``env``: the environment of a row whose worker died before it
    could say.  ``timings``: ``(label, [p25, median, p75])`` of the results, for the host's verdict.
    ``done_before``: rows the store held already.  ``resume``: how to go on after a stop (a command; None: the
    store cannot be resumed from, so nothing is said).  ``title``: what the :class:`Planned` event names.
    """
    from attnscope.measure import host

    emit = on_event or (lambda e: None)
    results: list[R] = []
    unsaved: dict[str, str] = {}
    in_document = [0]
    fallback: list[Any] = []
    load = host.read_load()  # before the measuring adds its own threads to the load
    t0 = time.monotonic()
    labels = {j.key: j.label() for j in jobs}
    emit(Planned(len(jobs), done_before, store.num_torn if store is not None else 0, title))

    def keep(r: R) -> None:
        if r.env is None and env is not None:  # its worker died first: a worker's environment, else this process's
            seen = next((x.env for x in reversed(results) if x.env is not None), None)
            if seen is None and not fallback:
                fallback.append(env())
            r = replace(r, env=seen if seen is not None else fallback[0])
        if store is not None:
            try:
                with _signals_after():
                    store.append(row(r))
            except WriteError as e:  # the store cannot grow: what it holds, and how to go on
                raise StoreFull(e, _store_holds(store, resume)) from e
        results.append(r)
        if document is not None and partial is not None:
            try:
                write_document(document, partial(results))
                unsaved.pop("document", None)
                in_document[0] = len(results)
            except WriteError as e:
                unsaved["document"] = str(e)  # tried again with the whole document at the end
        if on_result is not None:
            on_result(r)
        saved = row(r)
        emit(Finished(saved, r.status, labels.get(job_key_of(saved), r.variant), len(results), len(jobs)))

    def started(job: Job[Any]) -> None:
        emit(Started(job.label(), job.variant))

    try:
        for r in executor.run(jobs, on_start=started):
            keep(r)
            late = time_limit_s is not None and time.monotonic() - t0 > time_limit_s
            if late and any(x.status != "skipped" for x in results):  # the first row always runs
                why = f"not started: the time limit of {time_limit_s or 0:g} s was spent on the rows before it"
                seen = {job_key_of(row(x)) for x in results}
                for j in jobs:
                    if j.key not in seen:
                        keep(j.failed("skipped", why))
                break
    except KeyboardInterrupt as e:
        raise Interrupted(_saved_text(store, document, results, unsaved, done_before, resume)) from e
    finally:
        executor.close()
        import gc

        gc.unfreeze()  # worker.free_after froze what survived each job run in this process
    verdict = host.assess(*load, timings(results) if timings else host.timings_of(results))
    return Campaign(results, verdict, time.monotonic() - t0, unsaved, in_document[0])


def job_key_of(r: dict[str, Any]) -> tuple[str, str, str]:
    from attnscope.execute.job import job_key

    return job_key(r["variant"], r.get("case"))


def write_document(path: str | Path, doc: dict[str, Any]) -> None:
    from attnscope.document.schema import write_atomic

    write_atomic(path, doc)


def _store_holds(store: Store, resume: str | None) -> str:
    try:
        held = f"{len(store.rows())} row(s) are"
    except OSError:  # the store cannot be read back either (its folder gone): what was appended is there
        held = "the rows before it are"
    return f"{held} saved in {store.path}: free space, then resume with: {resume or 'resume'}"


def _saved_text(
    store: Store | None,
    document: str | Path | None,
    results: list[Any],
    unsaved: dict[str, str],
    done_before: int,
    resume: str | None,
) -> str:
    """What an interrupted campaign leaves, naming only the files that hold rows: ``N row(s) saved in X (M measured
    in this run); resume with: …``."""
    where: list[str] = []
    n = 0
    if store is not None and store.path.exists():
        n = len(store.rows())
        if n:
            where.append(str(store.path))
    if document is not None and results and "document" not in unsaved and Path(document).exists():
        if store is None:
            return f"{len(results) + done_before} row(s) saved in {document} (marked partial)"
        where.append(str(document))
    if not where:
        if results and document is not None:
            return f"{len(results)} finished row(s) not saved: {document} could not be written"
        if results:
            return f"{len(results)} row(s) measured, not saved (no file to save them in was given)"
        return "nothing measured yet" + (f"; start again with: {resume}" if resume and store is not None else "")
    how = f"; resume with: {resume}" if resume and store is not None and n else ""
    return f"{n} row(s) saved in {' and '.join(where)} ({len(results)} measured in this run){how}"


class SettingsDiffer(UsageError):
    """A resume refused: the rows in ``out`` were measured with other settings (as recorded in ``path``).
    ``differences``: (setting, recorded, now) for each that differs (budget_s, flush_l2, torch, transformers,
    device); the message names them in the library's words (a command line names them as its flags)."""

    def __init__(self, out: str | Path, path: Path, differences: list[tuple[str, Any, Any]]) -> None:
        from attnscope.execute.store_settings import LIBRARY_WORDS

        said = "; ".join(f"{LIBRARY_WORDS[k]} {a} → {b}" for k, a, b in differences)
        super().__init__(
            f"resume: the rows in {out} were measured with other settings ({said}, as recorded in {path}): pass the "
            "same settings, another out, or force=True",
            fields=("out", "force"),
        )
        self.out, self.path, self.differences = out, path, differences


class StoreHoldsRows(UsageError):
    """The store ``out`` already holds ``rows`` rows and this is no resume (or holds only lines that are no rows:
    ``rows`` 0, ``torn`` of them); the message is in the library's words (a command line says it in its flags')."""

    def __init__(self, out: str | Path, rows: int, torn: int) -> None:
        if rows:
            said = f"{out} already holds {rows} row(s): pass resume=True to measure only what is missing"
        else:
            said = f"{out}: not an attnscope store (no result rows in its {torn} lines); choose another file"
        super().__init__(said, fields=("out", "resume"))
        self.out, self.rows, self.torn = out, rows, torn


def open_store(out: str | Path, *, resume: bool) -> Store:
    """The JSONL store ``out``, checked before any work: without ``resume`` it must hold nothing; resumed, it must
    hold rows (a file of lines that are none is not a store).  :class:`StoreHoldsRows` otherwise."""
    store = Store(out)
    if store.path.exists() and store.path.stat().st_size > 0:
        rows = store.rows()
        if not resume or (not rows and store.num_torn > 1):
            raise StoreHoldsRows(out, len(rows) if not resume else 0, store.num_torn)
    return store


def resume_settings(out: str | Path, now: dict[str, Any], *, resuming: bool, force: bool) -> dict[str, Any] | None:
    """The settings to record beside the store ``out`` (``<out>.settings.json``), after refusing a resume whose
    recorded settings differ from ``now`` unless ``force``.  None: the file stays as it is (a forced resume keeps
    the first run's record)."""
    from attnscope.execute import store_settings

    if not resuming:
        return now
    recorded = store_settings.load(out)
    if recorded is None:
        return now  # rows from before settings were recorded: nothing to compare with
    diff = [(k, recorded[k], now.get(k)) for k in store_settings.KEYS if k in recorded and recorded[k] != now.get(k)]
    if diff and not force:
        raise SettingsDiffer(out, store_settings.settings_path(out), diff)
    return None if diff else now


def record_settings(out: str | Path, settings: dict[str, Any] | None) -> None:
    """Write what :func:`resume_settings` returned beside the store (nothing for None)."""
    if settings is not None:
        from attnscope.execute.store_settings import settings_path

        write_document(settings_path(out), settings)


def read_load() -> tuple[float | None, int | None]:
    """The host's load read now (1-minute load average, logical cores): before a campaign adds its own threads."""
    from attnscope.measure import host

    return host.read_load()


def host_verdict(
    load: tuple[float | None, int | None], timings: Iterable[tuple[str, Sequence[float]]]
) -> dict[str, Any]:
    """Was the host busy enough to distort the timings? The load read before, judged with ``(label, [p25, median,
    p75])`` of each timing after (attnscope.measure.host.assess)."""
    from attnscope.measure import host

    return host.assess(*load, timings)
