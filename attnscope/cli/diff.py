"""`attnscope diff`: two result documents or traces compared (api.diff_files), printed and written."""

from __future__ import annotations

import argparse
from typing import Any

from attnscope.cli import common
from attnscope.cli.common import EXIT_FAIL, EXIT_OK, say_unwritten, write_outputs
from attnscope.cli.flags import check_output_file, comma_items, finite_float, listed_once
from attnscope.core.arguments import UsageError
from attnscope.core.files import check_outputs


def add_parser(sub: Any, text: str) -> None:
    d = sub.add_parser("diff", help=text)
    d.add_argument("a", help="baseline: an attnscope JSON document or a Kineto trace")
    d.add_argument("b", help="candidate: an attnscope JSON document or a Kineto trace")
    d.add_argument(
        "--threshold",
        type=finite_float("threshold", minimum=0.0),
        help="exit 1 when a time grows by more than this many percent",
    )
    d.add_argument(
        "--metrics",
        type=listed_once("--metrics", comma_items),
        default="gpu,cpu",
        help="times the threshold applies to: gpu, cpu (default gpu,cpu; a model's step time always)",
    )
    d.add_argument("--json", help="write the diff as JSON here")
    d.set_defaults(func=cmd_diff)


def cmd_diff(args: argparse.Namespace) -> int:
    from attnscope.api import diff_files

    metrics = tuple(comma_items(args.metrics))
    if not metrics or any(m not in ("gpu", "cpu") for m in metrics):
        raise UsageError(f"--metrics takes gpu, cpu or gpu,cpu; got {args.metrics!r}")
    check_output_file(args.json, "--json")
    check_outputs([("input", args.a), ("input", args.b)], [("--json", args.json)])
    d = diff_files(args.a, args.b, threshold_pct=args.threshold, metrics=metrics)
    unwritten = write_outputs(args, d)  # a full disk: said after the comparison, exit 74
    from attnscope.report.text.diff import render_diff

    render_diff(d, common.console(), title=f"attnscope diff: {args.a} → {args.b}")
    if unwritten:
        return say_unwritten(unwritten)
    return EXIT_FAIL if d["regressions"] else EXIT_OK
