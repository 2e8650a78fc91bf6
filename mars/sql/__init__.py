"""The task language: SQL text -> `TaskSpec`, and SQL expressions -> Polars / Spark SQL."""

from mars.sql.errors import TaskError
from mars.sql.expressions import to_polars, to_spark_sql
from mars.sql.parser import parse_task

__all__ = ["TaskError", "parse_task", "to_polars", "to_spark_sql"]
