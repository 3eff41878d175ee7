"""The ``shadow`` command line: a thin Typer layer; exit codes are decided here and nowhere else."""

from __future__ import annotations

from shadow.cli._app import ExitCode, app, main

# Each topic module adds its commands to ``app`` on import, in the order of the migration workflow
# (``shadow --help`` lists them so): try it, inventory, shadow and gate, cut over, watch, operate, integrate.
from shadow.cli import _demo as _demo  # isort: skip
from shadow.cli import _migration as _migration  # isort: skip
from shadow.cli import _rules as _rules  # isort: skip
from shadow.cli import _flags as _flags  # isort: skip
from shadow.cli import _contract as _contract  # isort: skip
from shadow.cli import _report as _report  # isort: skip
from shadow.cli import _dashboard as _dashboard  # isort: skip
from shadow.cli import _db as _db  # isort: skip
from shadow.cli import _integrations as _integrations  # isort: skip
from shadow.cli import _eval as _eval  # isort: skip
from shadow.cli import _doctor as _doctor  # isort: skip

__all__ = ["ExitCode", "app", "main"]
