"""The producer's routing state: the pure-Python twin of ``kafka_fast.producer._routing``."""

from __future__ import annotations

import threading

RouteLock = threading.Lock


class PartitionRoute:
    """Per-partition routing state: ``fast`` is the open batch produce()'s fast path may
    append to (None when the general path must run); ``entries`` the delivery data kept for
    that batch's records (None while no record asked for a report)."""

    __slots__ = ("fast", "entries")


class TopicRoute:
    """Per-topic routing state: partition count, partition states, sticky partition."""

    __slots__ = ("parts", "num_partitions", "sticky")


class RouterState:
    """The accumulator's counters and flags that produce() checks for every record."""

    __slots__ = ("lock", "topics", "count", "count_limit", "linger_due", "wake", "algorithm",
                 "batch_records")
