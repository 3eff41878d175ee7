"""The ``shadow`` command line: a thin Typer layer; exit codes are decided here and nowhere else."""

from __future__ import annotations

from shadow.cli._app import ExitCode, app, main

# Each topic module adds its commands to ``app`` on import, in the order of the migration workflow
# (``shadow --help`` lists them so): try it, inventory, shadow and gate, cut over, watch, operate, integrate.
from shadow.cli import demo as _demo  # noqa: F401  # isort: skip
from shadow.cli import migration as _migration  # noqa: F401  # isort: skip
from shadow.cli import flags as _flags  # noqa: F401  # isort: skip
from shadow.cli import contract as _contract  # noqa: F401  # isort: skip
from shadow.cli import report as _report  # noqa: F401  # isort: skip
from shadow.cli import dashboard as _dashboard  # noqa: F401  # isort: skip
from shadow.cli import db as _db  # noqa: F401  # isort: skip
from shadow.cli import integrations as _integrations  # noqa: F401  # isort: skip
from shadow.cli import eval as _eval  # noqa: F401  # isort: skip

__all__ = ["ExitCode", "app", "main"]
