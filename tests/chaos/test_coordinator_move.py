"""The group coordinator's broker is SIGKILLed under a steady stream (3-broker Apache Kafka):
the member finds the new coordinator and carries on in its generation.

One member (classic protocol, then KIP-848) reads a topic that a paced idempotent producer
writes, committing synchronously every ``COMMIT_EVERY`` records. Checked for kafka_fast: the
member keeps its generation and its single assignment (no revocation, no loss), every
synchronous commit succeeds, also after the move, and every record is read exactly once at
the offset its delivery report gave. confluent-kafka runs the same scenario beside it as the
reference: nothing may be lost; whether it kept its generation is printed, not asserted
(librdkafka gives its partitions up when no heartbeat succeeded for session.timeout.ms,
which a coordinator move can take). CHAOS_RUNS repeats each client's run.
"""

from __future__ import annotations

import signal
import threading
import time

import confluent_kafka
import pytest
from chaos_run import env_int
from confluent_kafka.admin import AdminClient
from harness.topics import create_topic, unique_topic

import kafka_fast

pytestmark = [pytest.mark.chaos, pytest.mark.timeout(240)]

PARTITIONS = 3
RECORDS = 3000
RATE = 150.0  # records per second
COMMIT_EVERY = 100
KILL_AFTER = 6.0  # seconds of stable consumption before the coordinator's broker dies
OFFSETS_TOPIC = "__consumer_offsets"
#: client -> (module, group.protocol)
CLIENTS = {"kafka_fast": (kafka_fast, "classic"), "confluent": (confluent_kafka, "classic"),
           "kafka_fast-consumer": (kafka_fast, "consumer"),
           "confluent-consumer": (confluent_kafka, "consumer")}


def _generation(consumer) -> int:
    meta = consumer.consumer_group_metadata()
    if isinstance(meta, bytes):  # confluent-kafka: librdkafka's "CGMDv2:" + int32 generation (host order)
        assert meta.startswith(b"CGMDv2:"), meta
        return int.from_bytes(meta[7:11], "little", signed=True)
    return meta.generation_id


def _coordinator(admin: AdminClient, group: str) -> int:
    desc = admin.describe_consumer_groups([group], request_timeout=10)[group].result(15)
    return desc.coordinator.id


def _positions(lib, topic: str, got: dict[int, list[tuple[int, bytes]]]) -> list:
    return [lib.TopicPartition(topic, q, records[-1][0] + 1)
            for q, records in sorted(got.items()) if records]


class _Stream(threading.Thread):
    """Writes record i (value b"%06d" % i) to partition i % PARTITIONS at RATE per second."""

    def __init__(self, bootstrap: str, topic: str) -> None:
        super().__init__(daemon=True)
        self.topic = topic
        self.producer = confluent_kafka.Producer({
            "bootstrap.servers": bootstrap, "enable.idempotence": True, "acks": "all",
            "linger.ms": 5, "message.timeout.ms": 120000})
        self.reports: dict[bytes, list[tuple[object, int, int]]] = {}
        self.failure: BaseException | None = None

    def _report(self, err, msg) -> None:
        self.reports.setdefault(msg.value(), []).append((err, msg.partition(), msg.offset()))

    def run(self) -> None:
        try:
            start = time.monotonic()
            for i in range(RECORDS):
                delay = start + i / RATE - time.monotonic()
                if delay > 0:
                    time.sleep(delay)
                self.producer.produce(self.topic, b"%06d" % i, partition=i % PARTITIONS,
                                      on_delivery=self._report)
                self.producer.poll(0)
            assert self.producer.flush(120) == 0
        except BaseException as exc:  # reported by the test
            self.failure = exc


def _member_run(cluster, kind: str, topic: str, group: str) -> dict:
    events: list[tuple[str, list]] = []

    def on_assign(c, parts):
        events.append(("assign", sorted((p.topic, p.partition) for p in parts)))

    def on_revoke(c, parts):
        events.append(("revoke", sorted((p.topic, p.partition) for p in parts)))

    def on_lost(c, parts):
        events.append(("lost", sorted((p.topic, p.partition) for p in parts)))

    lib, protocol = CLIENTS[kind]
    conf = {"bootstrap.servers": cluster.bootstrap, "group.id": group,
            "enable.auto.commit": False, "auto.offset.reset": "earliest",
            "fetch.wait.max.ms": 100, "group.protocol": protocol}
    if protocol == "classic":  # KIP-848 members take these from the broker
        conf.update({"session.timeout.ms": 6000, "heartbeat.interval.ms": 1000})
    consumer = lib.Consumer(conf)
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap})
    stream = _Stream(cluster.bootstrap, topic)
    got: dict[int, list[tuple[int, bytes]]] = {q: [] for q in range(PARTITIONS)}
    commit_errors: list[str] = []
    commits_after_move: list[list[tuple[int, int]]] = []
    generations: list[int] = []
    killed: int | None = None
    try:
        consumer.subscribe([topic], on_assign=on_assign, on_revoke=on_revoke, on_lost=on_lost)
        deadline = time.monotonic() + 30
        while not events and time.monotonic() < deadline:
            consumer.poll(0.2)
        assert events and events[0][0] == "assign", events
        generations.append(_generation(consumer))
        cluster.wait_in_sync(OFFSETS_TOPIC)
        stream.start()
        kill_at = time.monotonic() + KILL_AFTER
        since_commit = 0
        deadline = time.monotonic() + RECORDS / RATE + 90
        read: set[tuple[int, int]] = set()
        while len(read) < RECORDS and time.monotonic() < deadline:
            if killed is None and time.monotonic() >= kill_at:
                killed = _coordinator(admin, group)
                cluster.stop_node(killed, signal.SIGKILL)
            for msg in consumer.consume(500, 0.2):
                if msg.error() is not None:
                    commit_errors.append(f"consume: {msg.error()}")
                    continue
                got[msg.partition()].append((msg.offset(), msg.value()))
                read.add((msg.partition(), msg.offset()))
                since_commit += 1
            if since_commit >= COMMIT_EVERY:
                since_commit = 0
                try:
                    done = consumer.commit(offsets=_positions(lib, topic, got), asynchronous=False)
                except Exception as exc:  # KafkaException of either client
                    commit_errors.append(f"commit: {exc}")
                else:
                    if killed is not None:
                        commits_after_move.append(sorted((p.partition, p.offset)
                                                         for p in done))
        stream.join(120)
        final = consumer.commit(offsets=_positions(lib, topic, got), asynchronous=False)
        moved_to = _coordinator(admin, group)
        generations.append(_generation(consumer))
        committed = consumer.committed([lib.TopicPartition(topic, q)
                                        for q in range(PARTITIONS)], timeout=15)
        seen = list(events)  # what close() revokes is not part of the run
    finally:
        consumer.close()
    assert stream.failure is None, stream.failure
    return {"events": seen, "got": got, "commit_errors": commit_errors,
            "commits_after_move": commits_after_move, "generations": generations,
            "killed": killed, "moved_to": moved_to, "reports": stream.reports,
            "final": sorted((p.partition, p.offset) for p in final),
            "committed": sorted((p.partition, p.offset) for p in committed)}


@pytest.mark.parametrize("attempt", range(env_int("CHAOS_RUNS", 1)))
@pytest.mark.parametrize("kind", sorted(CLIENTS))
def test_member_keeps_its_generation_when_the_coordinator_dies(apache_cluster, kind, attempt):
    cluster = apache_cluster
    topic = unique_topic(f"coord-move-{kind}")
    group = f"group-{topic}"
    create_topic(cluster, topic, PARTITIONS, replication_factor=3)
    cluster.wait_in_sync(topic)
    run = _member_run(cluster, kind, topic, group)
    print(f"{kind}: coordinator {run['killed']} killed, moved to {run['moved_to']}; "
          f"generations {run['generations']}; events {[e[0] for e in run['events']]}; "
          f"commit errors {run['commit_errors']}", flush=True)
    assert run["moved_to"] != run["killed"]
    reports = run["reports"]
    assert len(reports) == RECORDS
    want: dict[int, list[tuple[int, bytes]]] = {q: [] for q in range(PARTITIONS)}
    for value, [(err, partition, offset)] in sorted(reports.items()):
        assert err is None, (value, err)
        want[partition].append((offset, value))
    end = [(q, RECORDS // PARTITIONS) for q in range(PARTITIONS)]
    for q in range(PARTITIONS):
        assert [o for o, _ in want[q]] == list(range(RECORDS // PARTITIONS))
        # Nothing lost, whichever client (each record at the offset its report gave).
        assert sorted(set(run["got"][q])) == want[q], f"partition {q}"
    assert run["final"] == end
    assert run["committed"] == end
    if CLIENTS[kind][0] is not kafka_fast:
        return  # the reference client's membership is printed above, for comparison
    # One assignment, never revoked or lost, and the same generation before and after.
    assert [e[0] for e in run["events"]] == ["assign"], run["events"]
    assert run["generations"][0] == run["generations"][1] > 0, run["generations"]
    assert run["commit_errors"] == []
    assert run["commits_after_move"], "no synchronous commit after the move"
    # Every record read exactly once.
    for q in range(PARTITIONS):
        assert run["got"][q] == want[q], f"partition {q}"
