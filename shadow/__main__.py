"""``python -m shadow``: the command line."""

from shadow.cli import main

main()
