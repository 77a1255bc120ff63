"""A transactional producer process stopped inside a transaction on the 3-broker Apache
Kafka cluster (SIGKILLed, or left running as a zombie): its successor with the same
transactional.id fences it (init_transactions aborts the open transaction) and commits its
own; a zombie's later commit fails as fenced; read_committed readers see exactly the
committed records, a read_uncommitted reader sees the stopped transaction's records too."""

from __future__ import annotations

import os
import select
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from harness.process import ManagedProcess
from harness.topics import create_topic, unique_topic
from log_reader import LogReader
from readback import read_confluent

from kafka_fast import Producer

pytestmark = [pytest.mark.chaos, pytest.mark.timeout(300)]

PARTITIONS = 3
WORKER = Path(__file__).with_name("txn_worker.py")
REPO = Path(__file__).resolve().parents[2]


def _spread(prefix: str, count: int) -> dict[int, list[bytes]]:
    """``prefix-<i>`` values per partition (record i on partition i % PARTITIONS)."""
    return {p: [b"%s-%d" % (prefix.encode(), i) for i in range(p, count, PARTITIONS)]
            for p in range(PARTITIONS)}


def _join(*parts: dict[int, list[bytes]]) -> dict[int, list[bytes]]:
    return {p: [v for part in parts for v in part[p]] for p in range(PARTITIONS)}


def _wait_for_line(proc: ManagedProcess, text: str, timeout: float) -> str:
    """Read the process's stdout until a line starting with ``text`` (bounded)."""
    deadline = time.monotonic() + timeout
    out = proc.popen.stdout
    seen = []
    while time.monotonic() < deadline:
        if not select.select([out], [], [], 0.2)[0]:
            if not proc.alive():
                break
            continue
        line = out.readline().decode().strip()
        if not line and not proc.alive():
            break
        seen.append(line)
        if line.startswith(text):
            return line
    raise TimeoutError(f"worker printed {seen}, not {text!r}, within {timeout:.0f}s:\n"
                       f"{proc.log_tail()}")


def _offsets_increase(reader: LogReader) -> bool:
    return all(all(a[0] < b[0] for a, b in zip(rows, rows[1:], strict=False))
               for rows in reader.records.values())


@pytest.mark.parametrize("stop", ["sigkill", "zombie"])
def test_stopped_transaction_is_fenced_by_its_successor(apache_cluster, chaos, tmp_path,
                                                        stop):
    cluster = apache_cluster
    rng = chaos.rng
    topic = unique_topic("chaos-txn")
    tid = f"tid-{topic}"
    create_topic(cluster, topic, PARTITIONS, replication_factor=3)
    cluster.wait_in_sync(topic)
    n_committed, n_open, n_successor = (rng.randint(5, 400) for _ in range(3))
    committed = _spread("committed", n_committed)
    doomed = _spread("open", n_open)
    successor = _spread("successor", n_successor)

    env = {"PYTHONPATH": os.pathsep.join(p for p in (str(REPO), os.environ.get("PYTHONPATH"))
                                         if p)}
    worker = ManagedProcess(
        [sys.executable, str(WORKER), cluster.bootstrap, topic, tid, str(PARTITIONS),
         str(n_committed), str(n_open)], tmp_path / "worker.log", env=env,
        stdin=subprocess.PIPE, stdout_pipe=True)
    readers = []
    try:
        _wait_for_line(worker, "STALLED", 90)
        chaos.fault(f"{'SIGKILL' if stop == 'sigkill' else 'pause'} transactional producer "
                    f"after {n_committed} committed records and {n_open} written in its "
                    "open transaction")
        if stop == "sigkill":
            os.kill(worker.pid, signal.SIGKILL)
            worker.popen.wait(10)
            worker.stop()

        uncommitted = LogReader(cluster, topic, PARTITIONS, "read_uncommitted")
        by_poll = LogReader(cluster, topic, PARTITIONS, "read_committed", "poll")
        by_batch = LogReader(cluster, topic, PARTITIONS, "read_committed", "batch")
        readers = [uncommitted, by_poll, by_batch]
        # The killed transaction's records are in the log ...
        uncommitted.read_until(n_committed + n_open, 60)
        assert uncommitted.values() == _join(committed, doomed)
        # ... and hold read_committed readers back while it is open.
        by_poll.read_until(n_committed, 60)
        by_poll.read_for(2.0)
        assert by_poll.values() == committed

        started = time.monotonic()
        with Producer(cluster.client_config({"transactional.id": tid, "linger.ms": 2})) as p:
            p.init_transactions(60)
            chaos.fault(f"successor initialised (fencing its predecessor) in "
                        f"{time.monotonic() - started:.1f}s")
            p.begin_transaction()
            for i in range(n_successor):
                p.produce(topic, b"successor-%d" % i, partition=i % PARTITIONS)
            p.commit_transaction(60)
        chaos.fault(f"successor committed {n_successor} records")
        if stop == "zombie":
            worker.popen.stdin.write(b"go\n")
            worker.popen.stdin.flush()
            result = _wait_for_line(worker, "RESULT", 90)
            chaos.fault(f"zombie tried to commit: {result}")
            assert result == "RESULT PRODUCER_FENCED fatal=1"

        want = _join(committed, successor)
        total = n_committed + n_successor
        for reader in (by_poll, by_batch):
            reader.read_until(total, 60)
            reader.read_for(1.0)
            assert reader.values() == want, reader.how
            assert _offsets_increase(reader), reader.how
            assert reader.errors == [], reader.how
            chaos.check(f"read_committed records ({reader.how})", reader.count())
        uncommitted.read_until(n_committed + n_open + n_successor, 60)
        uncommitted.read_for(1.0)
        assert uncommitted.values() == _join(committed, doomed, successor)
        assert _offsets_increase(uncommitted)
        chaos.check("read_uncommitted records", uncommitted.count())

        theirs = read_confluent(cluster, topic, PARTITIONS, total, timeout=60)
        assert {p: [g.value for g in theirs if g.partition == p]
                for p in range(PARTITIONS)} == want
        assert sorted((g.partition, g.offset) for g in theirs) == sorted(
            (p, o) for p, rows in by_poll.records.items() for o, _ in rows)
        chaos.check("read_committed records (confluent-kafka)", len(theirs))
    finally:
        for reader in readers:
            reader.close()
        worker.stop()
