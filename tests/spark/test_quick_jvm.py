"""The Spark tests' shared session runs its driver's JVM with the client compiler only
(harness.jvm_start)."""

from __future__ import annotations

from harness.jvm_start import CLIENT_COMPILER


def test_the_shared_sessions_driver_runs_with_the_client_compiler(spark):
    jvm = spark.sparkContext._jvm
    arguments = list(jvm.java.lang.management.ManagementFactory.getRuntimeMXBean()
                     .getInputArguments())
    assert CLIENT_COMPILER in arguments
