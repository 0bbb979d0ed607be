"""`attnscope report`: one HTML page from result files (api.write_html)."""

from __future__ import annotations

import argparse
from typing import Any

from attnscope.cli.common import EXIT_OK, add_assets_arg
from attnscope.cli.flags import check_output_dir, check_output_file
from attnscope.core.files import check_outputs
from attnscope.core.units import fmt_bytes


def add_parser(sub: Any, text: str) -> None:
    rp = sub.add_parser("report", help=text)
    rp.add_argument(
        "files", nargs="+", help="run/analyze/model JSON documents, sweep JSONL files or Kineto traces (sniffed)"
    )
    rp.add_argument("-o", "--out", required=True, metavar="PATH", help="the HTML file to write")
    add_assets_arg(rp, with_html=False)
    rp.set_defaults(func=cmd_report)


def cmd_report(args: argparse.Namespace) -> int:
    from attnscope.api import write_html

    check_output_file(args.out, "-o")
    check_output_dir(args.assets, "--assets")
    check_outputs([("input", f) for f in args.files], [("-o", args.out)])
    out = write_html(args.files, args.out, assets=args.assets)
    size = out.stat().st_size
    how = f"plotly shared in {args.assets}" if args.assets else "one self-contained file"
    print(f"attnscope: report written to {out} ({fmt_bytes(size)}, {how})")  # a page with --assets: KiB, not "0.0 MB"
    return EXIT_OK
