"""Types of the compiled Message builders (``_columns.pyx``; twin: ``kafka_fast._pure.columns``)."""

from typing import Any

from kafka_fast.message import Message as Message
from kafka_fast.records.buffers import byte_view as byte_view

def append_messages(out: list[Message], topic: str, partition: int, cols: Any, start: int,
                    stop: int, timestamp_type: int, leader_epoch: int) -> int: ...
def delivery_messages(out: list[Message], topic: str, partition: int, base_offset: int,
                      values: Any, keys: Any, headers: Any, timestamps: Any,
                      timestamp_type: int, fixed_timestamp: int, error: Any,
                      count: int) -> int: ...
def entry_messages(out: list[Message | None], items: list[Any], topic: str, partition: int,
                   base_offset: int, timestamp_type: int, fixed_timestamp: int,
                   error: Any) -> int: ...
