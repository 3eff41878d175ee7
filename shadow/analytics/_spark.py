"""The loop-rate models on Apache Spark over a ``shadow export parquet`` directory; only small aggregates come back.

``SparkModels`` reads the export (a local folder, or any URI Spark reads such as ``s3a://bucket/shadow``), computes
the derived tables (``flag_periods``, ``error_followups``, ``session_counters``) on the cluster and caches them,
then answers the report's models (``_dialect.spark_sql``) with bound parameters. Its ``records`` has the
warehouse's shape, so ``loop_rate_report`` renders the same report from either engine.
"""

from __future__ import annotations

import datetime as dt
import decimal
import functools
import os
import re
import shutil
import subprocess
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Final

from sqlalchemy import DateTime, Table

from shadow.analytics._dialect import spark_sql
from shadow.analytics._schema import LOG_TABLES, SMALL_TABLES, duck_type
from shadow.analytics._source import WarehouseError

#: Spark settings shadow starts a session with (``--spark-conf`` adds to or overrides them, not the time zone).
DEFAULT_CONF: Final = {
    "spark.ui.showConsoleProgress": "false",
    "spark.sql.shuffle.partitions": "8",
}


class SparkUnavailableError(WarehouseError):
    """pyspark, sqlglot or Java is missing; the message says what to install."""


#: The oldest Java that PySpark 4 runs on.
JAVA_FLOOR: Final = 17
_JAVA_VERSION: Final = re.compile(r'version "(\d+)(?:\.(\d+))?')


def _java_problem() -> str | None:
    """What is wrong with the java PySpark would start (``$JAVA_HOME/bin/java`` when JAVA_HOME is set, as its
    launcher picks it, else ``java`` on PATH), or None when it is Java 17 or later."""
    java_home = os.environ.get("JAVA_HOME")
    need = f"Java {JAVA_FLOOR} or later (a JDK or JRE on PATH, or JAVA_HOME)"
    if java_home:
        java = Path(java_home) / "bin" / "java"
        if not java.is_file():
            return (f"{need}: JAVA_HOME={java_home} has no bin/java (point it at a Java {JAVA_FLOOR}+ install, "
                    "or unset it)")
        found = str(java)
    else:
        on_path = shutil.which("java")
        if on_path is None:
            return need
        found = on_path
    major = _java_major(found)
    if isinstance(major, str):
        return f"{need}: {found} {major}"
    return f"{need}: {found} is Java {major}" if major < JAVA_FLOOR else None


@functools.lru_cache(maxsize=8)
def _java_major(java: str) -> int | str:
    """The major version ``java -version`` reports (asked once per executable: a JVM start is 0.1 s or more), or
    what went wrong asking."""
    try:
        done = subprocess.run([java, "-version"], capture_output=True, text=True, timeout=30, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"-version failed ({type(exc).__name__})"
    version = _JAVA_VERSION.search(done.stderr + done.stdout)
    if version is None:
        return "-version said no version"
    return int(version[2]) if version[1] == "1" and version[2] else int(version[1])  # "1.8.0" is Java 8


def missing() -> list[str]:
    """What running the models on Spark still needs here (empty when nothing)."""
    import importlib.util

    out = []
    if importlib.util.find_spec("pyspark") is None:
        out.append("pyspark (pip install 'shadow-errors[spark]')")
    if importlib.util.find_spec("sqlglot") is None:
        out.append("sqlglot (pip install 'shadow-errors[spark]')")
    java = _java_problem()
    if java is not None:
        out.append(java)
    return out


def session(master: str = "local[*]", conf: Mapping[str, str] | None = None) -> Any:
    """A SparkSession (or the running one) with shadow's defaults, ``conf`` on top, the session time zone UTC."""
    gaps = missing()
    if gaps:
        raise SparkUnavailableError("running the models on Spark needs " + ", ".join(gaps))
    from pyspark.sql import SparkSession

    builder = SparkSession.builder.master(master).appName("shadow-loop-rate")
    for key, value in {**DEFAULT_CONF, **(conf or {})}.items():
        builder = builder.config(key, value)
    try:
        spark = builder.config("spark.sql.session.timeZone", "UTC").getOrCreate()
    except Exception as exc:  # the JVM did not start, or refused the master or a setting
        first = next((line.strip() for line in str(exc).splitlines() if line.strip()), type(exc).__name__)
        raise SparkUnavailableError(f"Spark did not start on master {master!r} ({first[:300]}); check --spark-master "
                                    "(local[*], spark://host:7077, yarn, ...) and --spark-conf") from None
    spark.sparkContext.setLogLevel("ERROR")
    return spark


def parse_conf(pairs: list[str]) -> dict[str, str]:
    """``KEY=VALUE`` strings (``--spark-conf``) as a dict; a clear error for anything else."""
    out = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key.strip():
            raise ValueError(f"--spark-conf {pair!r} is not KEY=VALUE; for example "
                             "--spark-conf spark.executor.memory=4g")
        out[key.strip()] = value
    return out


def _py(value: Any) -> Any:
    """A collected value as DuckDB's Python API gives it: naive UTC times, ints for integral decimals."""
    if isinstance(value, dt.datetime) and value.tzinfo is not None:
        return value.astimezone(dt.UTC).replace(tzinfo=None)
    if isinstance(value, decimal.Decimal):
        return int(value) if value == value.to_integral_value() else float(value)
    return value


def _param(value: Any) -> Any:
    """A bound parameter: naive times are UTC (Spark would read them in the driver's local zone)."""
    if isinstance(value, dt.datetime) and value.tzinfo is None:
        return value.replace(tzinfo=dt.UTC)
    return value


def _spark_schema(table: Table) -> str:
    """The table's Spark DDL schema, for a folder without files."""
    kinds = {"VARCHAR": "string", "JSON": "string", "TIMESTAMP": "timestamp_ntz", "BOOLEAN": "boolean",
             "BIGINT": "bigint", "INTEGER": "int"}
    return ", ".join(f"`{c.name}` {kinds[duck_type(c)]}" for c in table.columns)


def _columns(table: Table, f: Any) -> list[Any]:
    """The table's columns; times as TIMESTAMP_NTZ (naive UTC, as in the warehouse), whatever Parquet said."""
    return [f.col(c.name).cast("timestamp_ntz").alias(c.name) if isinstance(c.type, DateTime) else f.col(c.name)
            for c in table.columns]


class SparkModels:
    """The SQL models on Spark over a Parquet export, with the warehouse's ``records`` interface."""

    def __init__(self, spark: Any, directory: str | Path, *, owns_session: bool = False) -> None:
        self.spark = spark
        self.directory = str(directory).rstrip("/")
        self._owns = owns_session
        self._cached: list[Any] = []
        self._load()

    @classmethod
    def open(cls, directory: str | Path, *, master: str = "local[*]",
             conf: Mapping[str, str] | None = None) -> SparkModels:
        """Start a session on ``master`` (or reuse the running one) and read the export at ``directory``."""
        gaps = missing()
        if gaps:
            raise SparkUnavailableError("running the models on Spark needs " + ", ".join(gaps))
        local = "://" not in str(directory)
        if local:
            root = Path(directory)
            for table in LOG_TABLES:
                if not (root / table.name).is_dir():
                    raise WarehouseError(f"{root} holds no {table.name}/ folder; give a directory written by "
                                         "`shadow export parquet DIR`")
            if not any((root / "calls").rglob("*.parquet")):
                raise WarehouseError(f"{root} holds no calls yet; export a synced call log first")
            directory = root.resolve()
        from pyspark.sql import SparkSession

        running = SparkSession.getActiveSession() is not None  # then reused as it is, and left running
        return cls(session(master, conf), directory, owns_session=not running)

    def _load(self) -> None:
        from pyspark.sql import functions as f

        base = self.directory
        for table in LOG_TABLES:
            folder = f"{base}/{table.name}"
            if "://" not in base and not any(Path(folder).rglob("*.parquet")):  # an export without marks, say
                frame = self.spark.createDataFrame([], schema=_spark_schema(table))
            else:
                frame = self.spark.read.option("basePath", folder).parquet(folder)
            frame.select(*_columns(table, f)).createOrReplaceTempView(table.name)
        for table in SMALL_TABLES:
            frame = self.spark.read.parquet(f"{base}/{table.name}.parquet")
            frame.select(*_columns(table, f)).createOrReplaceTempView(table.name)
        self.spark.sql("SELECT CAST(NULL AS STRING) AS session_id WHERE false").createOrReplaceTempView("sync_scope")
        self._derive("flag_periods", {})
        self._derive("error_followups", {"all_sessions": True})
        self._derive("session_counters", {"all_sessions": True})

    def _derive(self, name: str, params: Mapping[str, Any]) -> None:
        frame = self.spark.sql(spark_sql(name), args=dict(params)).cache()
        frame.count()  # computed once, here
        frame.createOrReplaceTempView(name)
        self._cached.append(frame)

    # --- the ModelEngine interface ---

    def is_synced(self) -> bool:
        """Always: the derived tables are computed when the export is read."""
        return True

    def state(self) -> dict[str, str]:
        """An export carries no sync bookkeeping."""
        return {}

    def records(self, name: str, params: Mapping[str, Any] | None = None) -> list[dict[str, Any]]:
        """The rows of model ``name`` as dicts, collected through Arrow (small: the models aggregate)."""
        frame = self.spark.sql(spark_sql(name), args={k: _param(v) for k, v in (params or {}).items()})
        return self._collect(frame)

    def cutovers(self) -> dict[str, Any]:
        """Each tool's first cutover time (from ``flag_periods``)."""
        rows = self._collect(self.spark.sql(
            "SELECT tool, min(first_cutover_at) AS first_cutover_at FROM flag_periods GROUP BY tool"))
        return {r["tool"]: r["first_cutover_at"] for r in rows}

    def table(self, name: str) -> list[dict[str, Any]]:
        """Every row of a view (``error_followups``, ...): for tests and small tables only."""
        return self._collect(self.spark.table(name))

    @staticmethod
    def _collect(frame: Any) -> list[dict[str, Any]]:
        return [{k: _py(v) for k, v in row.asDict().items()} for row in frame.collect()]

    def close(self) -> None:
        """Drop the cached tables; stop the session when this object started it."""
        for frame in self._cached:
            frame.unpersist()
        self._cached.clear()
        if self._owns:
            self.spark.stop()

    def __enter__(self) -> SparkModels:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()
