"""``python -m attnscope``: the same command line as the ``attnscope`` console script."""

from attnscope.cli.main import entry

if __name__ == "__main__":
    entry()
