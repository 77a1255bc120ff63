"""Types of the compiled Produce wire module (``_producewire.pyx``; twin:
``kafka_fast._pure.producewire``)."""

from array import array
from collections.abc import Iterable
from typing import Any

NATIVE: bool

def released_calls() -> int: ...
def frame_produce(api_version: int, correlation_id: int, client_id: str | None,
                  transactional_id: str | None, acks: int, timeout_ms: int,
                  topics: Iterable[tuple[Any, Iterable[tuple[int, Any]]]], *,
                  header_version: int, flexible: bool, topic_ids: bool, inline_below: int,
                  nogil_bytes: int = ...) -> list[Any]: ...
def parse_produce_response(
    body: Any, *, flexible: bool, topic_ids: bool, append_time: bool, start_offset: bool,
    record_errors: bool, nogil_bytes: int = ...,
) -> tuple[list[Any], array[int], array[int], array[int], array[int], array[int], array[int],
           int] | None: ...
