"""Types of the producer's compiled routing state (``_routing.pyx``; twin:
``kafka_fast._pure.routing``)."""

from types import TracebackType
from typing import Any, Literal

class RouteLock:
    """A mutex like ``threading.Lock`` whose uncontended acquire is a C call."""

    def acquire(self, blocking: bool = True) -> bool: ...
    def release(self) -> None: ...
    def locked(self) -> bool: ...
    def __enter__(self) -> bool: ...
    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> Literal[False]: ...

class PartitionRoute:
    fast: Any
    entries: Any

class TopicRoute:
    parts: list[Any]
    num_partitions: int
    sticky: int

class RouterState:
    lock: RouteLock
    topics: dict[str, Any]
    count: int
    count_limit: int
    linger_due: bool
    wake: bool
    algorithm: int
    batch_records: int
