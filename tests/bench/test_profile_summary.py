"""benchmarks/profile_paths.py's summary of py-spy's collapsed stacks."""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from benchmarks.profile_paths import render, summarize  # noqa: E402

RAW = "\n".join([
    "thread (11): MainThread;main (kafka_fast/bench/worker.py:40);"
    "produce_batch (kafka_fast/producer/producer.py:200);encode_batch (_records.so) 30",
    "thread (11): MainThread;main (kafka_fast/bench/worker.py:40);"
    "produce_batch (kafka_fast/producer/producer.py:200);"
    "produce_batch (kafka_fast/producer/producer.py:200);kf_crc32c (_crc32c.so) 10",
    "thread (12): kafka_fast-io-p;_run (kafka_fast/net/loop.py:90);epoll_wait (libc.so.6) 20",
    "thread (13);sendmsg (libc.so.6) 5",
    "thread (11): MainThread;<module> (x.py:1);_call_with_frames_removed "
    "(<frozen importlib._bootstrap>:241) 50",
    "thread (11): MainThread;make (kafka_fast/bench/payload.py:20);fill (rand.so) 7",
    "garbage line",
])


def test_samples_are_split_by_thread_leaf_and_kafka_fast_function():
    prof = summarize(RAW)
    assert prof["total"] == 65 and prof["setup"] == 57
    assert prof["threads"] == [("MainThread", 40), ("kafka_fast-io-p", 20), ("(unnamed)", 5)]
    assert prof["self"] == [("encode_batch (_records.so)", 30), ("epoll_wait (libc.so.6)", 20),
                            ("kf_crc32c (_crc32c.so)", 10), ("sendmsg (libc.so.6)", 5)]
    # A function on the stack twice (recursion) counts once per sample.
    assert prof["inclusive"] == [("main (worker.py)", 40), ("produce_batch (producer.py)", 40),
                                 ("_run (loop.py)", 20)]
    text = render({"kafka_fast.produce_batch": prof},
                  {"broker": "Tansu", "records": 1000, "size": 100, "key_size": 10,
                   "partitions": 6, "compression": "none", "commit": "abc", "machine": "cpu"})
    assert "| `MainThread` | 61.5% |" in text
    assert "| `encode_batch (_records.so)` | 46.2% |" in text
    assert "65 samples of the measured path (57 more in imports" in text
