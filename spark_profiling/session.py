"""Starting (and stopping) the SparkSession the aggregation runs in.

The master is the one given, else spark-submit's (``--master``), else Spark's own default,
``local[*]``. A session already running in this process (a test's, a notebook's) is used as
it is and left running.
"""
from __future__ import annotations

import logging
from collections.abc import Iterator
from contextlib import contextmanager

from pyspark import SparkConf
from pyspark.sql import SparkSession

log = logging.getLogger(__name__)

APP_NAME = "hetsched-aggregate"


@contextmanager
def spark_session(master: str | None = None, conf: dict[str, str] | None = None) -> Iterator[SparkSession]:
    active = SparkSession.getActiveSession()
    if active is not None:
        yield active
        return
    spark_conf = SparkConf().setAppName(APP_NAME)
    if master:
        spark_conf.setMaster(master)
    spark_conf.setIfMissing("spark.ui.showConsoleProgress", "false")
    for key, value in (conf or {}).items():
        spark_conf.set(key, value)
    session = SparkSession.builder.config(conf=spark_conf).getOrCreate()
    session.sparkContext.setLogLevel("WARN")
    log.info("Spark %s started, master %s", session.version, session.sparkContext.master)
    try:
        yield session
    finally:
        session.stop()
