"""``python -m shadow.cli``: the command line."""

from shadow.cli import main

main()
