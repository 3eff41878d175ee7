"""The SQL models in Spark SQL: the DuckDB text transpiled by sqlglot, then the documented rewrites below.

One source serves both engines. The models are written in portable SQL where that costs nothing (ties broken by
the id itself, not a hash every engine computes differently; a whole-partition window instead of a refined named
window); what stays DuckDB-specific is rewritten on the parsed query, never on its text:

1. ``WITH x AS NOT MATERIALIZED (...)`` -> ``WITH x AS (...)``: Spark has no CTE materialisation hints.
2. ``CAST(json AS MAP(VARCHAR, VARCHAR))`` -> ``from_json(json, 'map<string,string>')``: Spark casts no string
   to a map.
3. ``map_contains(m, k)`` -> ``map_contains_key(m, k)``: sqlglot keeps the DuckDB name.
4. ``string_agg(DISTINCT x, sep ORDER BY x) [FILTER (WHERE c)]`` -> ``nullif(array_join(array_sort(collect_set(
   CASE WHEN c THEN x END)), sep), '')``: Spark 4's LISTAGG(DISTINCT) fails at run time (ClassCastException) when
   its distinct-aggregate rewrite runs (two DISTINCT aggregates, or DISTINCT with FILTER). ``collect_set`` skips
   NULLs as ``string_agg`` does, ``array_sort`` is ascending in binary order as DuckDB's default collation, and
   ``nullif`` gives NULL for an empty set as DuckDB does.

``$name`` parameters become Spark's named markers ``:name`` (sqlglot), bound through ``spark.sql(query, args)``.
"""

from __future__ import annotations

import functools
from typing import Any

from shadow.analytics import _sql as sql


def _drop_materialized(tree: Any) -> None:
    from sqlglot import exp

    for cte in tree.find_all(exp.CTE):
        if cte.args.get("materialized") is not None:
            cte.set("materialized", None)


def _json_to_map(tree: Any) -> None:
    from sqlglot import exp

    for cast in list(tree.find_all(exp.Cast)):
        if cast.to.this == exp.DataType.Type.MAP:
            spark_type = cast.to.sql(dialect="spark").lower()
            cast.replace(exp.Anonymous(this="from_json",
                                       expressions=[cast.this.copy(), exp.Literal.string(spark_type)]))


def _map_contains(tree: Any) -> None:
    from sqlglot import exp

    for fn in list(tree.find_all(exp.Anonymous)):
        if fn.name.lower() == "map_contains":
            fn.set("this", "map_contains_key")


def _distinct_string_agg(tree: Any) -> None:
    from sqlglot import exp

    for agg in list(tree.find_all(exp.GroupConcat)):
        if not isinstance(agg.this, exp.Order) or not isinstance(agg.this.this, exp.Distinct):
            continue
        (value,) = agg.this.this.expressions
        flt = agg.parent if isinstance(agg.parent, exp.Filter) else None
        if flt is not None:
            value = exp.Case(ifs=[exp.If(this=flt.expression.this.copy(), true=value.copy())])
        sep = agg.args.get("separator") or exp.Literal.string(",")
        collected = exp.Anonymous(this="collect_set", expressions=[value.copy()])
        joined = exp.Anonymous(this="array_join", expressions=[
            exp.Anonymous(this="array_sort", expressions=[collected]), sep.copy()])
        (flt or agg).replace(exp.Nullif(this=joined, expression=exp.Literal.string("")))


REWRITES = (_drop_materialized, _json_to_map, _map_contains, _distinct_string_agg)


@functools.cache
def spark_sql(name: str) -> str:
    """Model ``name`` in Spark SQL (transpiled once per process)."""
    import sqlglot

    tree = sqlglot.parse_one(sql.load(name), read="duckdb")
    for rewrite in REWRITES:
        rewrite(tree)
    return str(tree.sql(dialect="spark", pretty=True))
