"""End-to-end throughput benchmarks: kafka_fast's paths and peer clients side by side.

Used by ``kafka-fast bench`` and ``benchmarks/bench_e2e.py``. Every runner reports wall time and
the process CPU time it used (all threads, so librdkafka's background threads count too).
"""

from .runner import BenchConfig, Result, run_all

__all__ = ["BenchConfig", "Result", "run_all"]
