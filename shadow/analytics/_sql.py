"""The SQL models under ``shadow/analytics/models/`` (package data), run with bound parameters only."""

from __future__ import annotations

import functools
import importlib.resources
import re
from collections.abc import Mapping
from importlib.resources.abc import Traversable
from typing import Any, Final, Protocol

import duckdb

_NAME: Final = re.compile(r"^[a-z][a-z0-9_]*$")
#: `$name` placeholders (DuckDB's named parameters), looked for outside comments and string literals.
_PARAM: Final = re.compile(r"\$([A-Za-z_][A-Za-z0-9_]*)")
_COMMENT_OR_STRING: Final = re.compile(r"--[^\n]*|/\*.*?\*/|'(?:[^']|'')*'|\"(?:[^\"]|\"\")*\"", re.DOTALL)


def models_dir() -> Traversable:
    """Where the ``.sql`` files are: ``shadow/analytics/models``, package data in a checkout and a wheel alike."""
    return importlib.resources.files("shadow.analytics") / "models"


@functools.cache
def _files() -> dict[str, str]:
    root = models_dir()
    return {p.name[: -len(".sql")]: p.read_text(encoding="utf-8")
            for p in root.iterdir() if p.name.endswith(".sql")}


def names() -> list[str]:
    """The names of every SQL model (file names without ``.sql``), sorted."""
    return sorted(_files())


def load(name: str) -> str:
    """The query in ``analytics/<name>.sql``, without a trailing semicolon, so it can be nested in another query."""
    if not _NAME.match(name):
        raise ValueError(f"{name!r} is not a model name; use lower-case letters, digits and underscores")
    try:
        text = _files()[name]
    except KeyError:
        raise KeyError(f"no SQL model {name!r}; known: {', '.join(names())}") from None
    return text.strip().rstrip(";").rstrip()


def parameters(query: str) -> set[str]:
    """The ``$name`` parameters a query binds (comments and string literals are ignored)."""
    return set(_PARAM.findall(_COMMENT_OR_STRING.sub(" ", query)))


def run(con: duckdb.DuckDBPyConnection, name: str, params: Mapping[str, object] | None = None, *,
        prefix: str = "") -> duckdb.DuckDBPyConnection:
    """Run model ``name`` on ``con`` with exactly the parameters it declares (values are bound, never pasted).

    ``prefix`` is fixed SQL placed before the query, for example ``"INSERT INTO error_followups "``.
    """
    query = load(name)
    given = dict(params or {})
    wanted = parameters(query)
    if set(given) != wanted:
        missing, extra = sorted(wanted - set(given)), sorted(set(given) - wanted)
        raise TypeError(f"model {name!r} takes parameters {sorted(wanted)}; missing {missing}, unexpected {extra}")
    statement = prefix + query
    return con.execute(statement, given) if given else con.execute(statement)


class ModelEngine(Protocol):
    """Where the report's models run: the DuckDB warehouse, or Spark over a Parquet export (``SparkModels``)."""

    def is_synced(self) -> bool:
        """Whether the derived tables exist."""

    def state(self) -> dict[str, str]:
        """Sync bookkeeping (``synced_at``, ...); empty when there is none."""

    def records(self, name: str, params: Mapping[str, Any] | None = None) -> list[dict[str, Any]]:
        """The rows of SQL model ``name`` as dicts, values as Python's (int, float, str, date, naive UTC times)."""

    def cutovers(self) -> dict[str, Any]:
        """Each tool's first cutover time."""
