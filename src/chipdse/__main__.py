"""``python -m chipdse``: the same command line as the ``chipdse`` script."""

from chipdse.cli import run

run()
