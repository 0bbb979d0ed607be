"""`attnscope report`: one HTML page from result files (api.write_html)."""

from __future__ import annotations

import argparse
from typing import Any

from attnscope.cli.run import EXIT_OK
from attnscope.core.arguments import check_output_file


def add_parser(sub: Any, text: str) -> None:
    rp = sub.add_parser("report", help=text)
    rp.add_argument("files", nargs="+", help="run/analyze/model JSON documents or sweep JSONL files (sniffed)")
    rp.add_argument("-o", "--out", required=True, metavar="PATH", help="the HTML file to write")
    rp.add_argument(
        "--assets",
        metavar="DIR",
        help="write plotly once into DIR (shared by every page that names the same DIR) and link it, instead of "
        "inlining it: a page of ~0.1 MB instead of ~4.8 MB; it then opens only beside DIR (see docs/report.md)",
    )
    rp.set_defaults(func=cmd_report)


def cmd_report(args: argparse.Namespace) -> int:
    from attnscope.api import write_html

    check_output_file(args.out, "-o")
    out = write_html(args.files, args.out, assets=getattr(args, "assets", None))
    size = out.stat().st_size
    how = f"plotly shared in {args.assets}" if args.assets else "one self-contained file"
    print(f"attnscope: report written to {out} ({size / 1e6:.1f} MB, {how})")
    return EXIT_OK
