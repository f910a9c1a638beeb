"""Starting (and stopping) the SparkSession the aggregation runs in.

The master is the one given, else spark-submit's (``--master``), else Spark's own default,
``local[*]``. A session already running in this process (a test's, a notebook's) is used as
it is and left running.
"""
from __future__ import annotations

import logging
import signal
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
    interrupt_handler = signal.getsignal(signal.SIGINT)
    session = SparkSession.builder.config(conf=spark_conf).getOrCreate()
    session.sparkContext.setLogLevel("WARN")
    log.info("Spark %s started, master %s", session.version, session.sparkContext.master)
    try:
        yield session
    finally:
        session.stop()
        # SparkContext installs a SIGINT handler that cancels its jobs and is left behind by stop(): a Ctrl-C
        # after it crashed with AttributeError instead of KeyboardInterrupt, so a long-running caller (hetsched
        # tune --watch) could not put the topology back where it started.
        if interrupt_handler is not None and signal.getsignal(signal.SIGINT) is not interrupt_handler:
            signal.signal(signal.SIGINT, interrupt_handler)
