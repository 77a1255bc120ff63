"""The exact end of a partition's log, on every broker.

ListOffsets (latest) is exact on Apache Kafka and the mock cluster, but Tansu answers with
the base offset of the last batch + 1. Both are an offset inside or at the end of the last
batch, so the batch holding offset ``latest - 1`` is the last one there was when ListOffsets
answered; its header says where it ends. One Fetch at ``latest - 1`` with a tiny size limit
(a broker still returns the first batch whole) reads that header.
"""

from __future__ import annotations

import struct
from typing import TYPE_CHECKING, Any

from ..errors import KafkaError, KafkaException
from ..topic_partition import TopicPartition

if TYPE_CHECKING:
    from ..consumer import Consumer
    from ..net.client import KafkaClient

_HEAD = struct.Struct(">qi")          # baseOffset, batchLength
_LAST_DELTA = struct.Struct(">i")     # lastOffsetDelta, at byte 23 of a v2 RecordBatch
_MAGIC_AT = 16
_LAST_DELTA_AT = 23


def batch_end(records: bytes | None, fallback: int) -> int:
    """The offset after the first record batch in ``records`` (``fallback`` if there is no
    complete v2 batch header)."""
    if not records or len(records) < _LAST_DELTA_AT + 4:
        return fallback
    base, _ = _HEAD.unpack_from(records, 0)
    if records[_MAGIC_AT] < 2:
        return max(fallback, base + 1)
    return max(fallback, base + _LAST_DELTA.unpack_from(records, _LAST_DELTA_AT)[0] + 1)


def log_end_offsets(conf: dict[str, Any], consumer: Consumer, topic: str, partitions: list[int],
                    timeout: float) -> dict[int, int]:
    """``{partition: offset after its last record}`` for ``topic``."""
    latest = {p: _high_watermark(consumer, TopicPartition(topic, p), timeout)
              for p in partitions}
    pending = {p: e for p, e in latest.items() if e > 0}
    if not pending:
        return latest
    from ..config import make_config
    from ..net.client import KafkaClient

    client = KafkaClient(make_config(conf, "consumer"), name="kafka-fast-log-end").start()
    try:
        client.wait_metadata([topic], timeout)
        futures = {p: client.send(_leader(client, topic, p), _fetch_at(topic, p, e - 1),
                                  timeout_ms=int(timeout * 1000))
                   for p, e in pending.items()}
        for p, fut in futures.items():
            resp = fut.result(timeout)
            if not resp.responses or not resp.responses[0].partitions:
                continue
            data = resp.responses[0].partitions[0]
            if data.error_code:
                raise KafkaException(KafkaError.of(
                    data.error_code, f"reading the last batch of {topic} [{p}]"))
            latest[p] = batch_end(data.records, latest[p])
    finally:
        client.close()
    return latest


def _high_watermark(consumer: Consumer, tp: TopicPartition, timeout: float) -> int:
    marks = consumer.get_watermark_offsets(tp, timeout=timeout)
    assert marks is not None  # None comes only from cached=True
    return marks[1]


def _leader(client: KafkaClient, topic: str, partition: int) -> int:
    node = client.leader(topic, partition)
    if node is None:
        raise KafkaException(KafkaError.of(
            KafkaError._UNKNOWN_BROKER, f"no leader known for {topic} [{partition}]"))
    return node


def _fetch_at(topic: str, partition: int, offset: int) -> Any:
    from ..protocol import messages as m
    from ..protocol.versioned import versioned

    def make() -> Any:
        part = m.FetchRequest.FetchTopic.FetchPartition(
            partition=partition, current_leader_epoch=-1, fetch_offset=offset,
            last_fetched_epoch=-1, log_start_offset=-1, partition_max_bytes=1)
        # Tansu answers a Fetch with max_wait_ms=0 with no data at all: wait up to 100 ms
        # for the first byte (there is data at ``offset``, so no broker waits that long).
        return m.FetchRequest(replica_id=-1, max_wait_ms=100, min_bytes=1, max_bytes=1,
                              isolation_level=0, session_id=0, session_epoch=-1,
                              topics=[m.FetchRequest.FetchTopic(topic=topic, partitions=[part])])

    return versioned(m.FetchRequest, make, 12)
