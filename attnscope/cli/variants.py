"""`attnscope variants`: every variant and whether it can run the case here (api.variant_support), as a table."""

from __future__ import annotations

import argparse
from typing import Any

from attnscope.cli import common
from attnscope.cli.common import EXIT_OK
from attnscope.cli.flags import case_fields
from attnscope.cli.run import _add_case_args


def add_parser(sub: Any, text: str) -> None:
    v = sub.add_parser("variants", help=text)
    _add_case_args(v)
    v.set_defaults(func=cmd_variants)


def cmd_variants(args: argparse.Namespace) -> int:
    from rich.table import Table

    from attnscope.api import variant_support
    from attnscope.api.running import case_of
    from attnscope.report.text.terminal import fit

    case = case_of(case_fields(args), args.device)
    t = Table(title=f"variants on {case.label()}", header_style="bold")
    for col in ("variant", "runs here", "what it is", "reason if not"):
        t.add_column(col)
    for row in variant_support(case):
        t.add_row(row["variant"], row["runs_here"], row["description"], row["reason"])
    common.console().print(fit(t))  # one block per variant where the terminal cannot hold the columns' words
    return EXIT_OK
