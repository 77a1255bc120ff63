"""The consumer: ``Consumer`` (confluent-kafka's API) and the columnar ``RecordBatchView``."""

from .batch_view import PackedColumn, RecordBatchView
from .consumer import Consumer, ConsumerGroupMetadata

__all__ = ["Consumer", "ConsumerGroupMetadata", "PackedColumn", "RecordBatchView"]
