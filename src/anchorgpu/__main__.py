"""``python -m anchorgpu``: the same command line as the ``anchorgpu`` console script."""

from anchorgpu.cli import entry

if __name__ == "__main__":
    entry()
