"""Deleting records: DeleteRecords at each partition's leader moves its low watermark."""

from __future__ import annotations

from concurrent.futures import Future
from typing import Any

from ..net.client import KafkaClient
from ..protocol import messages as m
from ..topic_partition import TopicPartition
from .calls import LEADER_CODES, AdminCall, error_of
from .offsets import partition_target


class DeletedRecords:
    """The result of deleting records of one partition: its new ``low_watermark``."""

    def __init__(self, low_watermark: int) -> None:
        self.low_watermark = low_watermark

    def __repr__(self) -> str:
        return f"DeletedRecords(low_watermark={self.low_watermark})"


def delete_records(client: KafkaClient, partitions: list[TopicPartition], operation_ms: int,
                   timeout: float) -> dict[TopicPartition, Future]:
    """DeleteRecords at each leader (after fresh metadata; a moved leader is followed);
    ``{TopicPartition: Future of DeletedRecords}``."""
    Topic = m.DeleteRecordsRequest.DeleteRecordsTopic
    Partition = m.DeleteRecordsRequest.DeleteRecordsTopic.DeleteRecordsPartition

    def build(group: list[TopicPartition]) -> m.DeleteRecordsRequest:
        by_topic: dict[str, list[Any]] = {}
        for tp in group:
            by_topic.setdefault(tp.topic, []).append(
                Partition(partition_index=tp.partition, offset=tp.offset))
        return m.DeleteRecordsRequest(
            topics=[Topic(name=t, partitions=ps) for t, ps in by_topic.items()],
            timeout_ms=operation_ms)

    def parse(resp: Any, _: list[TopicPartition]) -> dict[TopicPartition, Any]:
        return {TopicPartition(t.name, p.partition_index):
                error_of(p.error_code) or DeletedRecords(p.low_watermark)
                for t in resp.topics for p in t.partitions}

    return AdminCall(client, list(partitions), build, parse,
                     lambda tp: partition_target(client, tp), timeout,
                     topics=sorted({tp.topic for tp in partitions}),
                     refresh_codes=LEADER_CODES).start()
