"""The Spark session of the Spark tests (tests/test_parquet.py, tests/test_spark.py): PySpark in local mode, or a
skip where PySpark or a Java runtime is missing; CI (.ci/run) installs both and sets NSYSQL_SPARK=required, which
turns that skip into a failure, so that the Spark tests run on every submission."""
from __future__ import annotations

import importlib.util
import os
import shutil

import pytest


def spark_or_skip():
    missing = [what for what, absent in (("PySpark", importlib.util.find_spec("pyspark") is None),
                                         ("a Java runtime", shutil.which("java") is None)) if absent]
    if missing:
        why = (f"{' and '.join(missing)} not installed (not in the test extra: ~456 MB; .ci/run installs them, "
               "docs/cluster-cookbook.md)")
        if os.environ.get("NSYSQL_SPARK") == "required":
            pytest.fail(why)
        pytest.skip(why)
    from pyspark.sql import SparkSession
    return (SparkSession.builder.master("local[2]").appName("nsysql-test")
            .config("spark.sql.ansi.enabled", "true").config("spark.sql.ansi.doubleQuotedIdentifiers", "true")
            .config("spark.ui.enabled", "false").config("spark.sql.shuffle.partitions", "4")
            .config("spark.driver.memory", "1g").getOrCreate())
