"""Entry point PySpark finds on its own: at the first data source look-up, Spark imports
every top-level module named ``pyspark_*`` and registers its ``DefaultSource``, so
``format("kafka_fast")`` works without ``kafka_fast.spark.register(spark)``."""

from kafka_fast.spark.datasource import DefaultSource

__all__ = ["DefaultSource"]
