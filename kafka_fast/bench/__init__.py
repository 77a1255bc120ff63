"""End-to-end throughput benchmarks: kafka_fast's paths and peer clients side by side.

The engine of ``kafka-fast bench`` (its command line: ``kafka_fast/cli/bench.py``) and of the
scripts under ``benchmarks/`` (theirs: ``benchmarks/command.py``); ``store`` keeps the runs
whose JSON the docs' tables are generated from. Every case reports wall time and the process
CPU time it used (all threads, so librdkafka's background threads count too), each in a fresh
process.
"""

from .runner import BenchConfig, Result, run_all

__all__ = ["BenchConfig", "Result", "run_all"]
