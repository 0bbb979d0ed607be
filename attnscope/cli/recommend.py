"""`attnscope recommend`: the best variant per case of sweep rows (api.recommend), printed and written."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from attnscope.cli import common
from attnscope.cli.common import EXIT_FAIL, EXIT_OK, say_unwritten, write_outputs
from attnscope.cli.flags import check_output_file
from attnscope.core.files import check_outputs


def add_parser(sub: Any, text: str) -> None:
    rc = sub.add_parser("recommend", help=text)
    rc.add_argument(
        "files",
        nargs="+",
        help="sweep JSONL files, run --json documents, or model documents and --out stores (a later row of the same "
        "variant, case and mode stands)",
    )
    rc.add_argument("--json", help="write the recommendation as JSON here")
    rc.set_defaults(func=cmd_recommend)


def _note(text: str) -> None:
    from attnscope.report.text.terminal import clean

    print(f"attnscope: {clean(text)}", file=sys.stderr)


def cmd_recommend(args: argparse.Namespace) -> int:
    from attnscope.api import NothingMeasured, recommend

    check_output_file(args.json, "--json")
    check_outputs([("input", f) for f in args.files], [("--json", args.json)])
    try:
        rec = recommend(args.files, on_note=_note)
    except NothingMeasured as e:
        _note(f"nothing measured to recommend from: {e}")
        return EXIT_FAIL
    unwritten = write_outputs(args, rec)  # a full disk: said after the recommendation, exit 74
    from rich.text import Text

    console = common.console()
    if rec.get("kind") == "model":  # `model --out` rows: one line per mode and point
        for where, r in rec["recommendations"].items():
            console.print(Text.assemble((f"Recommendation ({where}):", "bold"), f" {r['text']}"))
    else:
        from attnscope.report.text.sweep import render

        console.print(render(rec), highlight=False)
        for point in (rec.get("serving") or {}).get("points", []):
            console.print(f"Serving: {point['text']}", highlight=False, markup=False)
    return say_unwritten(unwritten) if unwritten else EXIT_OK
