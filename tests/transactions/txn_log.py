"""Test helpers at the transaction layer: a KafkaClient driven by hand (transactional
ProduceRequests built with the record engine) and the raw log read back with control batches."""

from __future__ import annotations

import time
from typing import Any, NamedTuple

from kafka_fast.config import make_config
from kafka_fast.errors import KafkaError, KafkaException
from kafka_fast.net import KafkaClient
from kafka_fast.protocol import messages as m
from kafka_fast.protocol.versioned import VersionedRequest
from kafka_fast.records import (
    CONTROL_ABORT,
    CONTROL_COMMIT,
    decode_batches,
    decode_control_key,
    encode_batch,
)
from kafka_fast.transactions import TransactionManager

CONTROL_NAMES = {CONTROL_ABORT: "ABORT", CONTROL_COMMIT: "COMMIT"}


class Entry(NamedTuple):
    """One record of the log: data (``kind`` "data") or a control marker ("COMMIT"/"ABORT")."""

    offset: int
    kind: str
    key: bytes | None
    value: bytes | None
    producer_id: int
    producer_epoch: int
    transactional: bool


def client_config(broker: Any, transactional_id: str, **extra: Any) -> Any:
    conf = broker.client_config({"transactional.id": transactional_id,
                                 "transaction.timeout.ms": 10000})
    conf.update(extra)
    return make_config(conf, "producer")


#: Produce errors ``HandProducer.produce`` retries.
RETRIED = (KafkaError.NOT_LEADER_OR_FOLLOWER, KafkaError.LEADER_NOT_AVAILABLE)


class HandProducer:
    """A transactional producer reduced to what the manager needs: one ProduceRequest per
    call, carrying one transactional batch stamped with the manager's producer id/epoch."""

    def __init__(self, broker: Any, transactional_id: str, **extra: Any) -> None:
        self.config = client_config(broker, transactional_id, **extra)
        self.client = KafkaClient(self.config).start()
        self.txn = TransactionManager(self.client, self.config)
        self.sequences: dict[tuple[str, int], int] = {}
        self.txn.on_new_epoch = lambda pid, epoch: self.sequences.clear()

    def produce(self, topic: str, partition: int, values: list[bytes],
                keys: list[bytes] | None = None, timeout: float = 10.0) -> int:
        """Add the partition to the transaction, write ``values``; the base offset."""
        self.txn.maybe_add_partitions([(topic, partition)]).result(timeout)
        deadline = time.monotonic() + timeout
        while True:
            code, offset = self.send_batch(topic, partition, values, keys, timeout)
            # A new topic's leader may answer before it has taken up leadership (Apache
            # Kafka right after CreateTopics): retried, as a producer would.
            if code not in RETRIED or time.monotonic() >= deadline:
                break
            time.sleep(0.1)
        if code:
            raise KafkaException(KafkaError(code))
        return offset

    def send_batch(self, topic: str, partition: int, values: list[bytes],
                   keys: list[bytes] | None = None, timeout: float = 10.0) -> tuple[int, int]:
        """One transactional Produce (no AddPartitionsToTxn); (error code, base offset)."""
        pid, epoch = self.txn.producer_id_and_epoch()
        tp = (topic, partition)
        seq = self.sequences.get(tp, 0)
        batch = encode_batch(values, keys, producer_id=pid, producer_epoch=epoch,
                             base_sequence=seq, transactional=True)
        self.client.wait_metadata([topic], timeout)
        leader = self.client.leader(topic, partition)
        data = m.ProduceRequest.TopicProduceData
        req = m.ProduceRequest(
            transactional_id=self.txn.transactional_id, acks=-1, timeout_ms=5000,
            topic_data=[data(name=topic, partition_data=[
                data.PartitionProduceData(index=partition, records=batch)])])
        # Topics by name: at most v12 (v13 names them by ID).
        resp = self.client.send(leader, VersionedRequest(m.ProduceRequest, lambda _v: req,
                                                         max_version=12)).result(timeout)
        p = resp.responses[0].partition_responses[0]
        if p.error_code == 0:
            self.sequences[tp] = seq + len(values)
        return p.error_code, p.base_offset

    def close(self) -> None:
        self.txn.close()
        self.client.close()


def read_log(client: KafkaClient, topic: str, partition: int, *, verify_crc: bool = True,
             timeout: float = 10.0, ended: bool = False) -> list[Entry]:
    """Every record of the partition from offset 0 to the high watermark, control records
    included, read with raw read_uncommitted Fetch requests.

    ``verify_crc=False`` is for the mock cluster, which writes its transaction markers with a
    zero CRC; data batches are CRC-checked either way. ``ended`` reads again until the log
    ends with a transaction marker (Apache Kafka writes markers after EndTxn answered).
    """
    deadline = time.monotonic() + timeout
    while True:
        out = _read_log_once(client, topic, partition, verify_crc, timeout)
        if not ended or (out and out[-1].kind != "data") or time.monotonic() > deadline:
            return out
        time.sleep(0.05)


def _read_log_once(client: KafkaClient, topic: str, partition: int, verify_crc: bool,
                   timeout: float) -> list[Entry]:
    client.wait_metadata([topic], timeout)
    fetch = m.FetchRequest
    deadline = time.monotonic() + timeout
    out: list[Entry] = []
    offset = 0
    for _ in range(1000):
        leader = client.leader(topic, partition)
        req = fetch(replica_id=-1, max_wait_ms=50, min_bytes=1, max_bytes=1 << 20,
                    isolation_level=0, topics=[fetch.FetchTopic(
                        topic=topic, topic_id=client.cluster.topics[topic].topic_id,
                        partitions=[fetch.FetchTopic.FetchPartition(
                            partition=partition, fetch_offset=offset,
                            partition_max_bytes=1 << 20, log_start_offset=-1,
                            current_leader_epoch=-1)])])
        p = client.send(leader, req).result(max(0.1, deadline - time.monotonic()))
        p = p.responses[0].partitions[0]
        assert p.error_code == 0, KafkaError(p.error_code)
        data = bytes(p.records or b"")
        for batch in decode_batches(data, verify_crc=verify_crc):
            if not batch.is_control:
                start = batch_start(data, batch.base_offset)
                decode_batches(data[start:start + batch.byte_size], verify_crc=True)
            for rec in batch.records():
                if rec.offset < offset:
                    continue
                kind = "data"
                if batch.is_control:
                    kind = CONTROL_NAMES[decode_control_key(rec.key)[1]]
                out.append(Entry(rec.offset, kind, rec.key, rec.value, batch.producer_id,
                                 batch.producer_epoch, batch.is_transactional))
            offset = max(offset, batch.next_offset)
        if offset >= p.high_watermark:
            return out
        assert time.monotonic() < deadline, f"log of {topic} [{partition}] not read: {out}"
    raise AssertionError(f"log of {topic} [{partition}] not read in 1000 fetches")


def batch_start(data: bytes, base_offset: int) -> int:
    """Byte position of the batch with ``base_offset`` in a fetched records buffer."""
    pos = 0
    while pos + 12 <= len(data):
        if int.from_bytes(data[pos:pos + 8], "big", signed=True) == base_offset:
            return pos
        pos += 12 + int.from_bytes(data[pos + 8:pos + 12], "big", signed=True)
    raise AssertionError(f"no batch at offset {base_offset}")


def summary(entries: list[Entry]) -> list[tuple[str, bytes | None]]:
    """(kind, value) per record: data values and COMMIT/ABORT markers in log order."""
    return [(e.kind, e.value if e.kind == "data" else None) for e in entries]


def committed_and_aborted(entries: list[Entry]) -> tuple[list[Entry], list[Entry]]:
    """Data records of committed and of aborted transactions, each in log order (a marker
    settles the open records of its producer id)."""
    open_: dict[int, list[Entry]] = {}
    committed: list[Entry] = []
    aborted: list[Entry] = []
    for e in entries:
        if e.kind == "data":
            open_.setdefault(e.producer_id, []).append(e)
        else:
            (committed if e.kind == "COMMIT" else aborted).extend(open_.pop(e.producer_id, []))
    assert not open_, f"transactions left open: {open_}"
    return committed, aborted


def read_records(broker: Any, topic: str, partitions: int, isolation: str, *,
                 reader: str, at_least: int, idle: float = 1.0,
                 timeout: float = 20.0) -> list[tuple[int, int, bytes | None, bytes | None]]:
    """(partition, offset, key, value) of every record a consumer returns from offset 0 (by
    assign, no group), read until ``at_least`` arrived and then nothing more for ``idle``
    seconds. ``reader``: "ours" (kafka_fast) or "confluent"."""
    conf = broker.client_config({"group.id": f"reader-{topic}", "enable.auto.commit": False,
                                 "isolation.level": isolation, "fetch.wait.max.ms": 100})
    if reader == "ours":
        from kafka_fast import Consumer, TopicPartition
        from kafka_fast.topic_partition import OFFSET_BEGINNING
    else:
        from confluent_kafka import OFFSET_BEGINNING, Consumer, TopicPartition
    consumer = Consumer(conf)
    got: list[tuple[int, int, bytes | None, bytes | None]] = []
    try:
        consumer.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in range(partitions)])
        deadline = time.monotonic() + timeout
        last = time.monotonic()
        while time.monotonic() < deadline:
            msgs = consumer.consume(1000, 0.2)
            for msg in msgs:
                assert msg.error() is None, msg.error()
                got.append((msg.partition(), msg.offset(), msg.key(), msg.value()))
            if msgs:
                last = time.monotonic()
            elif len(got) >= at_least and time.monotonic() - last >= idle:
                return got
        raise AssertionError(f"{reader} read {len(got)} of at least {at_least} records")
    finally:
        consumer.close()
