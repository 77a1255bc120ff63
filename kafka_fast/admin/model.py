"""Value types shared by the admin API and exported at the top level, as confluent-kafka's
``confluent_kafka._model`` has them: Node, TopicPartitionInfo, TopicCollection, Uuid, the
group, isolation and election enums, and ConsumerGroupTopicPartitions."""

from __future__ import annotations

import base64
import uuid
from enum import Enum
from typing import Any, TypeVar

from ..topic_partition import TopicPartition

E = TypeVar("E", bound=Enum)


def to_enum(value: Any, cls: type[E]) -> E:
    """``value`` as a member of ``cls``: a member, its name (any case) or its number."""
    if isinstance(value, cls):
        return value
    if isinstance(value, str):
        try:
            return cls[value.upper()]
        except KeyError:
            raise ValueError(f'Unknown value "{value}": should be a {cls.__name__}') from None
    if isinstance(value, int) and not isinstance(value, bool):
        return cls(value)
    raise TypeError(f'Unknown value "{value}": should be a {cls.__name__}')


class _Ordered(Enum):
    """An enum whose members sort by value (as confluent-kafka's enums do)."""

    def __lt__(self, other: object) -> bool:
        if not isinstance(other, type(self)):
            return NotImplemented
        return self.value < other.value


class ConsumerGroupState(_Ordered):
    """A classic group's state (librdkafka's names and values; KIP-848 states such as
    Assigning or Reconciling are UNKNOWN, as in confluent-kafka)."""

    UNKNOWN = 0
    UNKOWN = 0  # confluent-kafka's deprecated misspelling, an alias of UNKNOWN
    PREPARING_REBALANCING = 1
    COMPLETING_REBALANCING = 2
    STABLE = 3
    DEAD = 4
    EMPTY = 5

    @classmethod
    def from_broker(cls, name: str | None) -> ConsumerGroupState:
        """The state a broker names in ListGroups/DescribeGroups (``"Stable"``, ...)."""
        return _STATES.get((name or "").lower(), cls.UNKNOWN)


_STATES = {"preparingrebalance": ConsumerGroupState.PREPARING_REBALANCING,
           "completingrebalance": ConsumerGroupState.COMPLETING_REBALANCING,
           "stable": ConsumerGroupState.STABLE, "dead": ConsumerGroupState.DEAD,
           "empty": ConsumerGroupState.EMPTY}


class ConsumerGroupType(_Ordered):
    """The rebalance protocol of a group: CONSUMER (KIP-848) or CLASSIC."""

    UNKNOWN = 0
    CONSUMER = 1
    CLASSIC = 2

    @classmethod
    def from_broker(cls, name: str | None) -> ConsumerGroupType:
        return {"consumer": cls.CONSUMER, "classic": cls.CLASSIC}.get(
            (name or "").lower(), cls.UNKNOWN)

    def broker_name(self) -> str:
        return self.name.lower()


class IsolationLevel(_Ordered):
    """Which offsets ``list_offsets`` sees: all, or only up to the last stable offset."""

    READ_UNCOMMITTED = 0
    READ_COMMITTED = 1


class ElectionType(_Ordered):
    """Leader election kinds for ``elect_leaders``."""

    PREFERRED = 0
    UNCLEAN = 1


class Node:
    """A broker: ``id``, ``id_string``, ``host``, ``port`` and ``rack`` (None if unset)."""

    def __init__(self, id: int, host: str, port: int, rack: str | None = None) -> None:
        self.id = id
        self.id_string = str(id)
        self.host = host
        self.port = port
        self.rack = rack

    def __str__(self) -> str:
        rack = f"(Rack - {self.rack})" if self.rack else ""
        return f"({self.id}) {self.host}:{self.port} {rack}"

    def __repr__(self) -> str:
        return f"Node({self.id}, {self.host}:{self.port}, rack={self.rack})"

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Node):
            return NotImplemented
        return (self.id, self.host, self.port, self.rack) == (
            other.id, other.host, other.port, other.rack)

    def __hash__(self) -> int:
        return hash((self.id, self.host, self.port))


class TopicPartitionInfo:
    """A partition of a described topic: ``id``, ``leader`` (a Node, None when leaderless),
    ``replicas`` and ``isr`` (lists of Node)."""

    def __init__(self, id: int, leader: Node | None, replicas: list[Node],
                 isr: list[Node]) -> None:
        self.id = id
        self.leader = leader
        self.replicas = replicas
        self.isr = isr

    def __repr__(self) -> str:
        return (f"TopicPartitionInfo(id={self.id}, leader={self.leader!r}, "
                f"replicas={[n.id for n in self.replicas]}, isr={[n.id for n in self.isr]})")


class TopicCollection:
    """Topics to describe, by name."""

    def __init__(self, topic_names: list[str]) -> None:
        self.topic_names = topic_names


class Uuid:
    """A 128-bit id (topic ids); ``str()`` is its base64 form without padding, as
    confluent-kafka prints it."""

    def __init__(self, most_significant_bits: int, least_significant_bits: int) -> None:
        self._msb = int(most_significant_bits) & (2**64 - 1)
        self._lsb = int(least_significant_bits) & (2**64 - 1)

    @classmethod
    def from_uuid(cls, value: uuid.UUID) -> Uuid:
        return cls(value.int >> 64, value.int & (2**64 - 1))

    def get_most_significant_bits(self) -> int:
        return self._msb - 2**64 if self._msb >= 2**63 else self._msb

    def get_least_significant_bits(self) -> int:
        return self._lsb - 2**64 if self._lsb >= 2**63 else self._lsb

    def __int__(self) -> int:
        return (self._msb << 64) | self._lsb

    def __str__(self) -> str:
        raw = int(self).to_bytes(16, "big")
        return base64.b64encode(raw).rstrip(b"=").decode()

    __repr__ = __str__

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Uuid):
            return NotImplemented
        return int(self) == int(other)

    def __hash__(self) -> int:
        return hash(int(self))


class ConsumerGroupTopicPartitions:
    """A group and partitions of it: the request (``topic_partitions`` None: every partition
    the group has committed) and the answer (offsets and per-partition errors filled in)."""

    def __init__(self, group_id: str, topic_partitions: list[TopicPartition] | None = None
                 ) -> None:
        self.group_id = group_id
        self.topic_partitions = topic_partitions

    def __repr__(self) -> str:
        return f"ConsumerGroupTopicPartitions({self.group_id!r}, {self.topic_partitions!r})"
