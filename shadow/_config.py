"""Settings: where the call log lives, size limits, the flag TTL, the writer's queue; env vars and ``configure``."""

from __future__ import annotations

import dataclasses
import logging
import math
import os
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final, TypedDict, Unpack

from shadow import _logs as logs

if TYPE_CHECKING:
    from shadow.typing import Store

DEFAULT_DB_URL: Final = "sqlite:///shadow.db"

_ENV: Final = {
    "db_url": "SHADOW_DB_URL",
    "warehouse": "SHADOW_WAREHOUSE",
    "spool_path": "SHADOW_SPOOL",
    "flag_ttl": "SHADOW_FLAG_TTL",
    "flag_start_wait": "SHADOW_FLAG_START_WAIT",
    "flags_last_known": "SHADOW_FLAGS_LAST_KNOWN",
    "flags_last_known_max_age": "SHADOW_FLAGS_LAST_KNOWN_MAX_AGE",
    "flags_after_fork": "SHADOW_FLAGS_AFTER_FORK",
    "strict": "SHADOW_STRICT",
    "rules": "SHADOW_RULES",
}
#: What a forked child does with the flags its parent had loaded (``flags_after_fork``).
AFTER_FORK: Final = ("inherit", "reload")


@dataclass(frozen=True, slots=True)
class Settings:
    """Everything tunable. Defaults suit one laptop; ``SHADOW_*`` variables and ``configure`` override."""

    db_url: str = DEFAULT_DB_URL
    warehouse: str | None = None  # DuckDB file; default: beside the SQLite store, else ./shadow.duckdb
    spool_path: str | None = None  # append-only file for records the database could not take
    flag_ttl: float = 5.0  # seconds a process trusts its cached flags
    #: Seconds a process's first calls wait for its first flag read (LaunchDarkly's ``start_wait``); past it they
    #: are served the last-known flags if a file has them, else legacy, with one warning, and their records say
    #: ``flag_source='late'``.
    flag_start_wait: float = 5.0
    #: The last-known flags file (written after each successful read, read at start-up); "off" for none. Default:
    #: beside a SQLite call log (``shadow.db`` -> ``shadow.flags.json``), else in the user's cache directory.
    flags_last_known: str | None = None
    #: Seconds after which a last-known file is too old to use. A file a read confirmed at most ``flag_ttl`` ago is
    #: started on at once; an older one only when the first read fails or the start wait passes.
    flags_last_known_max_age: float = 86400.0
    flags_after_fork: str = "inherit"  # a forked child serves its parent's flags ("inherit") or starts afresh
    max_args_bytes: int = 8192  # stored arguments, after redaction
    max_payload_bytes: int = 16384  # stored legacy payload, after redaction
    queue_size: int = 10000  # records waiting for the writer
    batch_size: int = 500  # records per insert
    flush_interval: float = 0.5  # seconds between flushes of a partial batch
    spool_max_bytes: int = 256 * 1024 * 1024
    store_timeout: float = 5.0  # seconds one store call may take before its records are spooled instead
    strict: bool = False  # re-raise failures inside the shadow machinery (for tests)
    #: When the process writer starts, collect once and move what start-up made out of the cyclic GC's reach
    #: (``gc.freeze()``, in a background thread): a burst's full collections then walk the pending calls only.
    gc_freeze: bool = True
    #: your rules as ``--rules`` names them (MODULE or MODULE:NAME): what ``shadow ready``, ``flags set ...
    #: cutover``, ``report loop-rate`` and ``dashboard`` judge the logged errors with when no ``--rules`` is given
    rules: str | None = None
    #: Called as ``on_internal_error(operation, error)`` whenever shadow's own machinery fails and swallows the
    #: failure (the adapter, the writer thread); like scientist's ``raised``. Its own failures are logged.
    on_internal_error: Callable[[str, BaseException], object] | None = None
    #: Where the writer sends records instead of ``db_url``'s database: any ``shadow.typing.Store`` (an
    #: ``OtlpStore``, your own). Flags still come from ``db_url`` (or ``SHADOW_FLAGS``).
    store: Store | None = None

    def warehouse_path(self) -> Path:
        """The DuckDB warehouse file."""
        if self.warehouse:
            return Path(self.warehouse)
        sqlite = sqlite_path(self.db_url)
        if sqlite is not None:
            return sqlite.with_suffix(".duckdb")
        return Path("shadow.duckdb")

    def spool_file(self) -> Path:
        """The spool file for records the database could not take."""
        if self.spool_path:
            return Path(self.spool_path)
        sqlite = sqlite_path(self.db_url)
        base = sqlite.with_suffix("") if sqlite is not None else Path("shadow")
        return base.with_name(base.name + f".{os.getpid()}.spool")


def sqlite_path(url: str) -> Path | None:
    """The file of a ``sqlite:///`` URL, or None for other databases and in-memory SQLite."""
    prefix = "sqlite:///"
    if url.startswith("sqlite+pysqlite:///"):
        url = "sqlite:///" + url[len("sqlite+pysqlite:///"):]
    if not url.startswith(prefix):
        return None
    rest = url[len(prefix):].split("?", 1)[0]
    if rest in ("", ":memory:"):
        return None
    return Path(rest)


@dataclass(frozen=True, slots=True)
class Problem:
    """One invalid setting: the variable, the value found, what is wrong, and an example of a valid value."""

    variable: str
    value: str
    reason: str
    example: str

    def __str__(self) -> str:
        return f"{self.variable}={self.value!r} {self.reason}; for example {self.variable}={self.example}"


_TRUE: Final = frozenset({"1", "true", "yes", "on"})
_FALSE: Final = frozenset({"0", "false", "no", "off"})


def _check(name: str, var: str, raw: str) -> tuple[Any, Problem | None]:
    """The setting's value parsed from ``raw``, or a problem (and the value is not used)."""
    if name in ("flag_ttl", "flag_start_wait", "flags_last_known_max_age"):
        try:
            seconds = float(raw)
        except ValueError:
            seconds = math.nan
        if not math.isfinite(seconds) or seconds < 0:
            example = {"flag_ttl": "5", "flag_start_wait": "5"}.get(name, "86400")
            return None, Problem(var, raw, "is not a finite, non-negative number of seconds", example)
        return seconds, None
    if name == "flags_after_fork":
        word = raw.strip().lower()
        if word not in AFTER_FORK:
            return None, Problem(var, raw, "is not inherit or reload", "inherit")
        return word, None
    if name == "strict":
        word = raw.strip().lower()
        if word not in _TRUE | _FALSE:
            return None, Problem(var, raw, "is not a yes/no value", "1")
        return word in _TRUE, None
    if name == "db_url":
        from shadow.calllog._sqlite import backend_of, normalise_url  # SQLAlchemy only for what is not a SQLite file

        if is_otlp_url(raw):
            return raw.strip(), None
        try:
            backend = backend_of(normalise_url(raw))
        except ValueError as exc:  # its own words: "supports SQLite and PostgreSQL, not 'mysql'"
            return None, Problem(var, raw, f"cannot be used: {str(exc).split('; use', 1)[0]}", "sqlite:///shadow.db")
        except Exception:
            return None, Problem(var, raw, "is not a database URL", "sqlite:///shadow.db")
        if backend not in ("sqlite", "postgresql"):
            return None, Problem(var, raw, f"names a {backend} database; shadow stores to SQLite or PostgreSQL",
                                 "postgresql+psycopg://user@host:5432/dbname")
        return raw, None
    return raw, None


def env_problems() -> list[Problem]:
    """Every invalid ``SHADOW_*`` setting read by ``settings()`` (``shadow doctor`` adds the others)."""
    return [problem for _name, _value, problem in _read_env() if problem is not None]


def _read_env() -> list[tuple[str, Any, Problem | None]]:
    out = []
    for name, var in _ENV.items():
        raw = os.environ.get(var)
        if raw is None or raw == "":
            continue
        value, problem = _check(name, var, raw)
        out.append((name, value, problem))
    return out


_reported: set[tuple[str, str]] = set()


def report_once(problem: Problem) -> None:
    """Warn about an invalid setting once per process (the default is used in its place)."""
    key = (problem.variable, problem.value)
    if key in _reported:
        return
    _reported.add(key)
    from shadow._logs import get_logger

    get_logger("shadow.config").warning(
        "setting_invalid", variable=problem.variable, value=problem.value, reason=problem.reason,
        example=f"{problem.variable}={problem.example}", using="the default",
    )


def _from_env() -> dict[str, Any]:
    out: dict[str, Any] = {}
    for name, value, problem in _read_env():
        if problem is not None:
            report_once(problem)
        else:
            out[name] = value
    return out


_lock = threading.Lock()
_current: Settings | None = None


def settings() -> Settings:
    """The settings in force: ``configure`` calls over ``SHADOW_*`` variables over defaults."""
    global _current
    found = _current
    if found is not None:
        return found
    with _lock:
        if _current is None:
            _current = Settings(**_from_env())
        return _current


class Changes(TypedDict, total=False):
    """What ``configure`` takes: any ``Settings`` field by name, with its type."""

    db_url: str
    warehouse: str | None
    spool_path: str | None
    flag_ttl: float
    flag_start_wait: float
    flags_last_known: str | None
    flags_last_known_max_age: float
    flags_after_fork: str
    max_args_bytes: int
    max_payload_bytes: int
    queue_size: int
    batch_size: int
    flush_interval: float
    spool_max_bytes: int
    store_timeout: float
    strict: bool
    gc_freeze: bool
    rules: str | None
    on_internal_error: Callable[[str, BaseException], object] | None
    store: Store | None


def configure(**changes: Unpack[Changes]) -> Settings:
    """Change settings for this process, for example ``configure(db_url="postgresql+psycopg://...")``.

    ``configure(store=OtlpStore.from_url("otlp+http://collector:4318"))`` (or any ``Store``) sends the records
    there; ``configure(store=None)`` goes back to ``db_url``. The writer is rebuilt on the next call and the old one
    finishes its queue in the background.
    """
    global _current
    unknown = set(changes) - {f.name for f in dataclasses.fields(Settings)}
    if unknown:
        names = ", ".join(f.name for f in dataclasses.fields(Settings))
        raise TypeError(f"unknown setting(s) {sorted(unknown)}; known: {names}")
    if "db_url" in changes:
        from shadow.calllog._sqlite import normalise_url

        if not is_otlp_url(str(changes["db_url"])):
            normalise_url(changes["db_url"])  # a URL shadow cannot use is a ValueError here, not a log line later
    after_fork = changes.get("flags_after_fork", "inherit")
    if after_fork not in AFTER_FORK:
        raise ValueError(f"flags_after_fork must be one of {', '.join(AFTER_FORK)}, not {after_fork!r}")
    hook = changes.get("on_internal_error")
    if hook is not None and not callable(hook):
        raise TypeError(f"on_internal_error must be a function (operation, error), not {type(hook).__name__}")
    for name, value in changes.items():
        problem = _bad_number(name, value)
        if problem is not None:
            raise ValueError(f"{name}={value!r} {problem}")
    store = changes.get("store")
    if store is not None and not callable(getattr(store, "write", None)):
        raise TypeError(f"store must be a shadow.typing.Store (an object with .write(records)), not "
                        f"{type(store).__name__}; for example shadow.calllog.OtlpStore.from_url(...)")
    base = settings()
    with _lock:
        _current = dataclasses.replace(base, **changes)
        return _current


#: The numeric settings, the least each may be, and an example (``configure`` refuses the rest: a value every
#: call would then fail on is better refused where it is set).
_NUMBERS: Final[dict[str, tuple[type, float, str]]] = {
    "flag_ttl": (float, 0, "5"), "flag_start_wait": (float, 0, "5"), "flags_last_known_max_age": (float, 0, "86400"),
    "max_args_bytes": (int, 256, "8192"), "max_payload_bytes": (int, 256, "16384"), "queue_size": (int, 1, "10000"),
    "batch_size": (int, 1, "500"), "flush_interval": (float, 0.001, "0.5"), "spool_max_bytes": (int, 0, "268435456"),
    "store_timeout": (float, 0.01, "5"),
}


def _bad_number(name: str, value: object) -> str | None:
    """What is wrong with ``value`` for the numeric setting ``name`` (None when it is fine or not numeric)."""
    found = _NUMBERS.get(name)
    if found is None:
        return None
    kind, least, example = found
    number_types = (int,) if kind is int else (int, float)
    if isinstance(value, bool) or not isinstance(value, number_types):
        return f"is not {'an integer' if kind is int else 'a number'}; for example {name}={example}"
    if not math.isfinite(value) or value < least:
        return f"must be at least {least:g}; for example {name}={example}"
    return None


def report_internal_error(operation: str, error: BaseException) -> None:
    """Tell the ``on_internal_error`` hook, if any, about a failure inside shadow (never raises)."""
    hook = settings().on_internal_error
    if hook is None:
        return
    try:
        hook(operation, error)
    except BaseException as hook_error:
        from shadow._hostile import swallowed

        if not swallowed(hook_error):
            raise
        from shadow._logs import get_logger

        get_logger("shadow").error("on_internal_error_failed", error_type=type(hook_error).__name__)


def _after_fork() -> None:
    global _lock
    _lock = threading.Lock()


os.register_at_fork(after_in_child=_after_fork)


def reset() -> None:
    """Forget ``configure`` calls and re-read the environment on next use (tests)."""
    global _current
    with _lock:
        _current = None


def is_otlp_url(url: str) -> bool:
    """Whether ``url`` names an OTLP/HTTP collector (``otlp+http://``, ``otlp+https://``) rather than a database."""
    return url.strip().lower().startswith(("otlp+http://", "otlp+https://"))


def level_from_env(default: str = "WARNING") -> int:
    """The log level ``SHADOW_LOG_LEVEL`` names, else ``default``; an invalid value is reported once, never raised."""
    raw = os.environ.get(logs.LEVEL_ENV)
    if logs.level_problem(default) is not None and raw is not None:
        report_once(Problem(logs.LEVEL_ENV, raw, "is not a log level", "INFO"))
        raw = None
    number = logging.getLevelName((raw or default).strip().upper())
    return number if isinstance(number, int) else logging.WARNING
