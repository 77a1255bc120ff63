"""End-to-end throughput benchmarks: kafka_fast's paths and peer clients side by side.

Used by ``kafka-fast bench`` and by ``benchmarks/bench_produce.py`` and ``bench_consume.py``
(through ``command``). Every case reports wall time and the process CPU time it used (all
threads, so librdkafka's background threads count too), each in a fresh process.
"""

from .runner import BenchConfig, Result, run_all

__all__ = ["BenchConfig", "Result", "run_all"]
