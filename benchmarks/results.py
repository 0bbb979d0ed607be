"""Put one GPU tarball's outputs into docs/results/: raw files by scenario, and the tables between markers.

    python benchmarks/results.py out/attnscope-gpu-20261204-010000.tgz [--results docs/results]

1. Every scenario folder of the tarball (``attnscope-gpu-<date>/<scenario>/``) is copied into
   ``docs/results/raw/<scenario>/``: a file of the same name is replaced, the others stay (earlier measurements
   that the pages quote); the tarball's ``env.txt`` goes beside each as ``env.txt`` when the scenario wrote none.
2. In every ``docs/results/*.md``, the text between a marker pair is written again from a raw file:

       <!-- results: study/study_default.txt table -->
       ...
       <!-- /results -->

   The marker names a file under ``raw/`` and a part: ``table`` (the printed table, from its first ``┏`` line to its
   ``└`` line), ``all``, ``head:N`` or ``tail:N``; the part is written as a ``text`` code block.  A marker whose
   file is missing is left as it was and listed.
"""

from __future__ import annotations

import argparse
import re
import shutil
import sys
import tarfile
import tempfile
from pathlib import Path

MARK = re.compile(r"(?m)^(<!-- results: (\S+) (\S+) -->\n)(.*?)(<!-- /results -->)", re.S)


def part(text: str, what: str) -> str:
    lines = text.splitlines()
    if what == "all":
        return "\n".join(lines)
    if what == "table":
        start = next((i for i, line in enumerate(lines) if line.lstrip().startswith("┏")), None)
        if start is None:
            raise ValueError("no table in it")
        if start > 0 and "attnscope" in lines[start - 1]:
            start -= 1  # the title line above the table
        end = next(i for i in range(start, len(lines)) if lines[i].lstrip().startswith("└"))
        return "\n".join(line.rstrip() for line in lines[start : end + 1])
    kind, _, n = what.partition(":")
    if kind in ("head", "tail") and n.isdigit():
        return "\n".join(lines[: int(n)] if kind == "head" else lines[-int(n) :])
    raise ValueError(f"unknown part {what!r} (table, all, head:N, tail:N)")


def refresh(page: Path, raw: Path) -> tuple[int, list[str]]:
    """Rewrite the marked blocks of one page; return how many were written and the ones left as they were."""
    done, left = 0, []
    text = page.read_text()

    def sub(m: re.Match[str]) -> str:
        nonlocal done
        src = raw / m.group(2)
        try:
            body = part(src.read_text(errors="replace"), m.group(3))
        except (OSError, ValueError, StopIteration) as e:
            left.append(f"{page.name}: {m.group(2)} {m.group(3)}: {e}")
            return m.group(0)
        done += 1
        return f"{m.group(1)}```text\n{body}\n```\n{m.group(5)}"

    new = MARK.sub(sub, text)
    if new != text:
        page.write_text(new)
    return done, left


def unpack(tarball: Path, raw: Path) -> list[str]:
    """Each scenario folder of the tarball is copied into raw/<scenario>/; returns the scenarios."""
    with tempfile.TemporaryDirectory() as tmp, tarfile.open(tarball) as tar:
        tar.extractall(tmp, filter="data")
        tops = [p for p in Path(tmp).iterdir() if p.is_dir()]
        if len(tops) != 1:
            raise ValueError(f"{tarball}: expected one attnscope-gpu-<date>/ folder, found {len(tops)}")
        top = tops[0]
        scenarios = sorted(p.name for p in top.iterdir() if p.is_dir())
        for s in scenarios:
            dest = raw / s
            shutil.copytree(top / s, dest, dirs_exist_ok=True)
            if (top / "env.txt").is_file() and not (top / s / "env.txt").exists():
                shutil.copy(top / "env.txt", dest / "env.txt")
        return scenarios


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("tarball", nargs="?", type=Path, help="attnscope-gpu-<date>.tgz (none: only redraw the tables)")
    ap.add_argument("--results", type=Path, default=Path(__file__).resolve().parents[1] / "docs" / "results")
    a = ap.parse_args(argv)
    raw = a.results / "raw"
    if a.tarball is not None:
        if not a.tarball.is_file():
            print(f"error: {a.tarball}: no such file", file=sys.stderr)
            return 2
        try:
            scenarios = unpack(a.tarball, raw)
        except (tarfile.TarError, ValueError) as e:
            print(f"error: {e}", file=sys.stderr)
            return 2
        print(f"raw outputs: {', '.join(f'raw/{s}/' for s in scenarios)}")
    for page in sorted(a.results.glob("*.md")):
        done, left = refresh(page, raw)
        if done:
            print(f"{page.name}: {done} table(s) redrawn")
        for line in left:
            print(f"left as it was: {line}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
