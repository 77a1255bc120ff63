"""Consume-transform-produce with send_offsets_to_transaction, across a crash.

Tansu only where offsets matter: the mock cluster neither stores transactional offset commits
nor aborts an open transaction when its transactional id is initialised again."""

from __future__ import annotations

import os
import select
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pytest
from confluent_kafka import Consumer as ConfluentConsumer
from confluent_kafka import TopicPartition as CTP
from harness import create_topic, unique_topic
from harness.reference_client import produce
from txn_log import committed_and_aborted, read_log, summary

from kafka_fast.config import make_config
from kafka_fast.net import KafkaClient

pytestmark = pytest.mark.timeout(120)

HERE = Path(__file__).resolve().parent
EXAMPLE = HERE.parents[1] / "examples" / "exactly_once.py"
WORKER = HERE / "ctp_worker.py"


def _inputs(broker, topic: str, n: int) -> dict[bytes, bytes]:
    """``n`` records over 2 partitions; {b"partition:offset": value}."""
    acked = produce(broker, topic, [(i % 2, None, b"word-%d" % i) for i in range(n)])
    return {f"{r.partition}:{r.offset}".encode(): r.value for r in acked}


def _output(broker, topic: str):
    client = KafkaClient(make_config({"bootstrap.servers": broker.bootstrap}, "consumer"))
    try:
        return read_log(client.start(), topic, 0, verify_crc=broker.kind != "mock", ended=True)
    finally:
        client.close()


def _group_offsets(broker, group: str, topic: str) -> list[int]:
    c = ConfluentConsumer(broker.client_config({"group.id": group}))
    try:
        return [tp.offset for tp in c.committed([CTP(topic, 0), CTP(topic, 1)], timeout=10)]
    finally:
        c.close()


def _assert_exactly_once(committed, inputs: dict[bytes, bytes]) -> None:
    keys = Counter(e.key for e in committed)
    assert set(keys) == set(inputs) and set(keys.values()) == {1}, keys
    assert all(e.value == inputs[e.key].upper() for e in committed)


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(HERE.parents[1]),
                                                    env.get("PYTHONPATH")) if p)
    return env


@pytest.mark.parametrize("broker", ["tansu", "mock"], indirect=True)
def test_example_runs(broker):
    source, target = unique_topic("eo-in"), unique_topic("eo-out")
    create_topic(broker, source, 2)
    create_topic(broker, target, 1)
    inputs = _inputs(broker, source, 25)
    group = f"group-{source}"
    out = subprocess.run(
        [sys.executable, str(EXAMPLE), "--bootstrap", broker.bootstrap, "--source", source,
         "--target", target, "--group", group, "--transactional-id", f"tid-{source}",
         "--batch", "10", "--idle", "2", "-C", "session.timeout.ms=6000"],
        capture_output=True, text=True, timeout=90, env=_env())
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "processed 25 records"
    log = _output(broker, target)
    committed, aborted = committed_and_aborted(log)
    assert aborted == [] and {k for k, _ in summary(log)} == {"data", "COMMIT"}
    _assert_exactly_once(committed, inputs)
    if broker.kind == "tansu":
        assert _group_offsets(broker, group, source) == [13, 12]


def _wait_line(proc: subprocess.Popen, prefix: str, timeout: float) -> str:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        ready, _, _ = select.select([proc.stdout], [], [], 0.5)
        if ready:
            line = proc.stdout.readline()
            if line.startswith(prefix):
                return line
            if not line and proc.poll() is not None:
                break
    raise AssertionError(f"no {prefix!r} from the worker (exit {proc.poll()}): "
                         f"{proc.stderr.read() if proc.poll() is not None else ''}")


def test_crash_mid_transaction_then_restart(real_broker):
    source, target = unique_topic("eo-crash-in"), unique_topic("eo-crash-out")
    create_topic(real_broker, source, 2)
    create_topic(real_broker, target, 1)
    inputs = _inputs(real_broker, source, 30)
    group, tid = f"group-{source}", f"tid-{source}"
    args = [sys.executable, str(WORKER), real_broker.bootstrap, source, target, group, tid]

    first = subprocess.Popen(args + ["2"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             text=True, env=_env())
    try:
        stalled = int(_wait_line(first, "STALLED", 60).split()[1])
    finally:
        os.kill(first.pid, signal.SIGKILL)
        first.wait(10)
    before = _output(real_broker, target)
    assert before[-1].kind == "data"  # the killed process's transaction is still open
    open_txn = before[-stalled:]
    assert all(e.kind == "data" for e in open_txn)
    killed_epoch = open_txn[0].producer_epoch

    second = subprocess.run(args + ["0"], capture_output=True, text=True, timeout=90,
                            env=_env())
    assert second.returncode == 0, second.stderr
    assert second.stdout.strip().startswith("PROCESSED ")

    log = _output(real_broker, target)
    assert log[:len(before)] == before
    # The restarted producer's InitProducerId aborted the open transaction: an ABORT marker
    # follows its records, before anything the new instance wrote.
    marker = log[len(before)]
    assert (marker.kind, marker.producer_id) == ("ABORT", open_txn[0].producer_id)
    assert all(e.producer_epoch > killed_epoch for e in log[len(before) + 1:])
    committed, aborted = committed_and_aborted(log)
    assert aborted == open_txn
    # Each input's result exactly once in the committed output, the aborted ones included.
    _assert_exactly_once(committed, inputs)
    assert {e.key for e in aborted} <= {e.key for e in committed}
    # The group's committed positions match the committed output: everything, per partition.
    assert _group_offsets(real_broker, group, source) == [15, 15]
