"""What every command of the command line shares: the exit statuses, the one-line argument parser, the terminal's
console, the one progress bar (it draws the measuring loop's events: attnscope.api.campaign), stopping on a signal,
and what could not be written after the work, said in the flags' words."""

from __future__ import annotations

import argparse
import contextlib
import functools
from collections.abc import Callable, Iterator, Sequence
from typing import Any

from attnscope.cli import stop
from attnscope.core.arguments import UsageError

EXIT_OK, EXIT_FAIL, EXIT_USAGE = 0, 1, 2
EXIT_INTERNAL = 70  # a bug, not bad input (sysexits' EX_SOFTWARE)
EXIT_WRITE = 74  # a file could not be written after the work was done: a full disk (sysexits' EX_IOERR)


class Parser(argparse.ArgumentParser):
    """argparse that reports a bad argument in one line (no usage block) and exits 2."""

    def error(self, message: str) -> Any:  # type: ignore[override]
        from attnscope.report.text.terminal import clean  # the message quotes what was typed

        self.exit(EXIT_USAGE, f"{self.prog}: error: {clean(message)} (see {self.prog} --help)\n")


def answer_reader(
    input_fn: Callable[[str], str], print_fn: Callable[[str], None], *, echo: bool | None = None
) -> Callable[[str], str]:
    """``input_fn`` that, with ``echo`` (default: stdin is no terminal), prints each answer after its prompt:
    answers piped in (``printf '3\\ny\\n' | attnscope guess``) are echoed by no terminal, and without the answer and
    its newline every prompt ran on into the next on one line (``guess`` and ``tour`` ask so).  A name typed is
    printed as data (control characters removed)."""
    import sys

    if not (echo if echo is not None else not sys.stdin.isatty()):
        return input_fn
    from attnscope.report.text.terminal import clean

    def read(prompt: str) -> str:
        text = input_fn(prompt)
        print_fn(clean(text))
        return text

    return read


def console(*, markup: bool = False) -> Any:
    """The terminal's Console: its width (COLUMNS where set; tables fit it, report/text/table.py), names printed
    as data (no markup, control characters removed: report/text/terminal.py).  ``markup``: for text whose every
    name is escaped with rich.markup.escape (the tour's)."""
    from attnscope.report.text.terminal import console

    return console(markup=markup)


ASSETS_HELP = (
    "write plotly once into DIR (shared by every page that names the same DIR) and link it, instead of inlining it: "
    "a page of ~0.1 MB instead of ~4.8 MB; it then opens only beside DIR (see docs/report.md)"
)


def add_assets_arg(parser: Any, with_html: bool = True) -> None:
    """``--assets DIR`` for a command that writes an HTML page (with ``--html`` where the page is optional)."""
    parser.add_argument("--assets", metavar="DIR", help=("with --html: " if with_html else "") + ASSETS_HELP)


def write_outputs(args: Any, doc: dict[str, Any]) -> dict[str, str]:
    """The document to --json, then the page to --html (attnscope.api.report.write_outputs), each tried whatever
    became of the other; what could not be written: {flag: why}, said by :func:`say_unwritten` after the study."""
    from attnscope.api.report import write_outputs as write

    paths = {k: getattr(args, k, None) for k in ("json", "html", "assets")}
    return {f"--{k}": why for k, why in write(doc, **paths).items()}


def say_unwritten(unwritten: dict[str, str]) -> int:
    """One line per file not written (the measurement above is kept in the others, or only on screen); exit 74."""
    import sys

    for why in unwritten.values():
        print(f"attnscope: error: {why}", file=sys.stderr)
    return EXIT_WRITE


@contextlib.contextmanager
def stopping() -> Iterator[None]:
    """SIGTERM (`timeout`, job schedulers) and SIGHUP (a closed terminal) stop the command as Ctrl-C does, while
    it measures; the handlers before are put back after.  A stop inside the measuring loop arrives as its
    ``Interrupted`` (every finished row saved, ``what`` saying where): :func:`attnscope.cli.main.main` says that."""
    old = stop.install()
    try:
        yield
    finally:
        stop.restore(old)


class Progress:
    """The one progress bar (stderr): a spinner, then for a campaign of several jobs the bar, done/total, elapsed
    time and ETA and the counts by status; the job now running.  ``lines``: where stderr is not a terminal (a log
    file, CI), one plain line per finished job instead.  ``quiet``: nothing.  Call it with each event of
    :func:`attnscope.api.campaign.measure_jobs` (``on_event``).  It keeps within the terminal's width without
    cutting a word or a number (:func:`_fitting_progress`)."""

    def __init__(self, title: str = "", *, bar: bool = True, lines: bool = True, quiet: bool = False) -> None:
        from rich.progress import (
            BarColumn,
            MofNCompleteColumn,
            SpinnerColumn,
            TextColumn,
            TimeElapsedColumn,
            TimeRemainingColumn,
        )

        from attnscope.report.text.terminal import console as terminal_console

        out = terminal_console(stderr=True)
        self.plain = lines and not quiet and not out.is_terminal
        self.title, self.bar = title, bar
        self.total, self.done = 0, 0
        self.counts: dict[str, int] = {}
        columns: list[Any] = [SpinnerColumn()]
        if bar:
            columns += [BarColumn(bar_width=BAR_WIDTH), MofNCompleteColumn(), TimeElapsedColumn(), TextColumn("ETA")]
            columns += [TimeRemainingColumn(), TextColumn("{task.fields[counts]}", markup=False)]
        else:
            columns.append(TimeElapsedColumn())
        columns.append(TextColumn("{task.description}", markup=False))
        head = len(columns) - (2 if bar else 1)  # the counts and the job: what moves below the bar where narrow
        self.progress = _fitting_progress()(
            *columns, console=out, transient=not bar, disable=quiet or not out.is_terminal, head=head
        )
        self.task = self.progress.add_task(title, total=None, counts="")

    def __enter__(self) -> Progress:
        self.progress.__enter__()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.progress.__exit__(*exc)

    def __call__(self, event: Any) -> None:
        from attnscope.api.campaign import Finished, Planned, Started

        if isinstance(event, Planned):
            self.total = event.total
            if event.title and not self.title:  # a run's case, known once the API has built it
                self.title = event.title
                self.progress.update(self.task, description=event.title)
            self.progress.update(self.task, total=event.total)
        elif isinstance(event, Started):  # a spinner names the variant after the title (the case); a bar the job
            what = f"{self.title}: {event.variant}" if not self.bar and self.title else event.label
            self.progress.update(self.task, description=what)
        elif isinstance(event, Finished):
            self._finished(event)

    def _finished(self, e: Any) -> None:
        import sys

        from attnscope.report.text.sweep_summary import counts_text
        from attnscope.report.text.terminal import clean

        self.done += 1
        self.counts[e.status] = self.counts.get(e.status, 0) + 1
        self.progress.update(self.task, advance=1, counts=counts_text(self.counts))
        if self.plain:
            line = f"[{self.done}/{self.total}] {e.status} {e.label}: {_said(e.row)}"
            print(clean(line), file=sys.stderr, flush=True)


BAR_WIDTH = 30  # the bar's cells where the line fits the terminal
MIN_BAR = 10  # the fewest it is shortened to where it does not


@functools.cache
def _fitting_progress() -> type:
    """rich's Progress drawn within the terminal's width without cutting a word or a number: where its one line is
    wider than the terminal, the columns after the first ``head`` (the counts by status, the job) go on a line of
    their own below, wrapped at spaces, and the bar is shortened (to MIN_BAR cells at least) to leave the rest of
    the first line whole.  (rich alone shrank every column of a line too wide, to ``8…`` and ``0:…``, and cut the
    job's name.)  A class made on first use: rich is imported only by commands that draw."""
    from rich.measure import Measurement
    from rich.padding import Padding
    from rich.progress import BarColumn
    from rich.progress import Progress as RichProgress
    from rich.table import Table
    from rich.text import Text

    class FittingProgress(RichProgress):
        def __init__(self, *columns: Any, head: int, **kwargs: Any) -> None:
            self.head = head
            super().__init__(*columns, **kwargs)

        def _width(self, table: Any) -> int:
            wide = self.console.options.update_width(1 << 16)
            return int(Measurement.get(self.console, wide, table).maximum)

        def _row(self, columns: Sequence[Any], task: Any) -> Any:
            row = Table.grid(*(c.get_table_column().copy() for c in columns), padding=(0, 1))
            row.add_row(*(c(task) for c in columns))
            return row

        def get_renderables(self) -> Any:
            table = self.make_tasks_table(self.tasks)
            if "live" not in self.__dict__:  # rich's first drawing, from within its constructor: no task yet
                yield table
                return
            width = self.console.width
            if self._width(table) <= width:
                yield table
                return
            columns: list[Any] = list(self.columns)  # every one a ProgressColumn (Progress above makes them)
            head, tail = columns[: self.head], columns[self.head :]
            bars = [c for c in head if isinstance(c, BarColumn) and c.bar_width]
            for task in (t for t in self.tasks if t.visible):
                row = self._row(head, task)
                over = self._width(row) - width
                if over > 0 and bars:  # the bar shortened for this drawing only: a wider terminal gets it whole
                    full = [b.bar_width for b in bars]
                    for b, n in zip(bars, full, strict=True):
                        b.bar_width = max(MIN_BAR, (n or 0) - over)
                    try:
                        row = self._row(head, task)
                    finally:
                        for b, n in zip(bars, full, strict=True):
                            b.bar_width = n
                yield row
                words = [t for t in (c(task) for c in tail) if isinstance(t, Text) and t.plain.strip()]
                if words:
                    yield Padding(Text("  ").join(words), (0, 0, 0, 2))

    return FittingProgress


def _said(row: dict[str, Any]) -> str:
    """A finished row in a few words: its median time where it has one, else why not."""
    t = row.get("median_us")
    if t is not None:
        return f"{t:,.1f} µs per step"
    timed = row.get("gpu_time") or row.get("cpu_time")
    if row.get("status") == "ok" and isinstance(timed, dict) and timed.get("median_us") is not None:
        return f"{timed['median_us']:,.1f} µs"
    return " ".join(str(row.get("reason") or "").split())[:160]


# a recorded setting as the flag (or the thing) that sets it
SETTING_WORDS = {
    "budget_s": "--budget",
    "flush_l2": "--flush-l2",
    "torch": "torch",
    "transformers": "transformers",
    "device": "device",
}


@contextlib.contextmanager
def store_in_flag_words() -> Iterator[None]:
    """The API's refusals of a store (attnscope.api.campaign: it already holds rows and this is no resume, or the
    rows there were measured with other settings), said in the flags' words."""
    from attnscope.api.campaign import SettingsDiffer, StoreHoldsRows

    try:
        yield
    except StoreHoldsRows as e:
        if not e.rows:
            raise UsageError(f"--out {e.out}: not an attnscope store (no result rows); choose another file") from None
        raise UsageError(
            f"--out {e.out} already holds {e.rows} row(s): pass --resume to measure only what is missing, or choose "
            "another file"
        ) from None
    except SettingsDiffer as e:
        said = "; ".join(f"{SETTING_WORDS[k]} {a} → {b}" for k, a, b in e.differences)
        raise UsageError(
            f"--resume: the rows in {e.out} were measured with other settings ({said}, as recorded in {e.path}): give "
            "the same settings, another --out, or --resume --force to add rows measured otherwise"
        ) from None
