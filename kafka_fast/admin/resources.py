"""Admin request and result types, shaped like confluent-kafka's."""

from __future__ import annotations

import functools
from enum import Enum, IntEnum
from typing import Any

from ..errors import KafkaError


class ResourceType(Enum):
    """Kafka resource types (values as in the protocol and librdkafka)."""

    UNKNOWN = 0
    ANY = 1
    TOPIC = 2
    GROUP = 3
    BROKER = 4
    TRANSACTIONAL_ID = 5
    BROKER_LOGGER = 8

    def __lt__(self, other: object) -> bool:
        if not isinstance(other, ResourceType):
            return NotImplemented
        return self.value < other.value


class ConfigSource(IntEnum):
    """Where a configuration value comes from (DescribeConfigs ``ConfigSource``). An int
    enum: confluent-kafka's ConfigEntry.source is a plain int, and code comparing it with
    ``ConfigSource.X.value`` or ``ConfigSource.X`` works with either."""

    UNKNOWN_CONFIG = 0
    DYNAMIC_TOPIC_CONFIG = 1
    DYNAMIC_BROKER_CONFIG = 2
    DYNAMIC_DEFAULT_BROKER_CONFIG = 3
    STATIC_BROKER_CONFIG = 4
    DEFAULT_CONFIG = 5
    DYNAMIC_BROKER_LOGGER_CONFIG = 6
    CLIENT_METRICS_CONFIG = 7
    GROUP_CONFIG = 8


class AlterConfigOpType(Enum):
    """Incremental configuration operations."""

    SET = 0
    DELETE = 1
    APPEND = 2
    SUBTRACT = 3


class NewTopic:
    """A topic to create. ``num_partitions``/``replication_factor`` -1 use broker defaults;
    ``replica_assignment`` is a list (one per partition) of broker id lists."""

    def __init__(self, topic: str, num_partitions: int = -1, replication_factor: int = -1,
                 replica_assignment: list[list[int]] | None = None,
                 config: dict[str, str] | None = None) -> None:
        if not isinstance(topic, str) or not topic:
            raise ValueError("NewTopic: topic must be a non-empty string")
        self.topic = topic
        self.num_partitions = int(num_partitions)
        self.replication_factor = int(replication_factor)
        self.replica_assignment = [list(r) for r in replica_assignment or []]
        self.config = {str(k): str(v) for k, v in (config or {}).items()}

    def __repr__(self) -> str:
        return f"NewTopic(topic={self.topic},num_partitions={self.num_partitions})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, NewTopic) and vars(self) == vars(other)

    def __hash__(self) -> int:
        return hash(self.topic)


class NewPartitions:
    """Grow ``topic`` to ``new_total_count`` partitions (optionally placing the new ones)."""

    def __init__(self, topic: str, new_total_count: int,
                 replica_assignment: list[list[int]] | None = None) -> None:
        if not isinstance(topic, str) or not topic:
            raise ValueError("NewPartitions: topic must be a non-empty string")
        self.topic = topic
        self.new_total_count = int(new_total_count)
        self.replica_assignment = [list(r) for r in replica_assignment or []]

    def __repr__(self) -> str:
        return f"NewPartitions(topic={self.topic},new_total_count={self.new_total_count})"


class ConfigEntry:
    """One configuration property of a resource (from describe_configs, or to alter)."""

    def __init__(self, name: str, value: str | None,
                 source: ConfigSource = ConfigSource.UNKNOWN_CONFIG,
                 is_read_only: bool = False, is_default: bool = False,
                 is_sensitive: bool = False, is_synonym: bool = False,
                 synonyms: dict[str, ConfigEntry] | None = None,
                 incremental_operation: AlterConfigOpType | None = None) -> None:
        self.name = name
        self.value = value
        self.source = source
        self.is_read_only = bool(is_read_only)
        self.is_default = bool(is_default)
        self.is_sensitive = bool(is_sensitive)
        self.is_synonym = bool(is_synonym)
        self.synonyms = dict(synonyms or {})
        self.incremental_operation = incremental_operation
        #: The broker's description of the property (describe_configs with
        #: include_documentation=True), else None.
        self.documentation: str | None = None

    def __repr__(self) -> str:
        return f'ConfigEntry({self.name}="{self.value}")'

    def __str__(self) -> str:
        return f'{self.name}="{self.value}"'


@functools.total_ordering
class ConfigResource:
    """A resource with configuration: ``ConfigResource(ConfigResource.Type.TOPIC, "t")``.

    ``restype`` may be a ``ResourceType``, its name (any case) or its number; for brokers
    ``name`` is the broker id. ``incremental_configs`` lists ``ConfigEntry`` objects with an
    ``incremental_operation`` for ``incremental_alter_configs``.
    """

    Type = ResourceType

    def __init__(self, restype: ResourceType | str | int, name: str,
                 set_config: dict[str, str] | None = None,
                 described_configs: dict[str, ConfigEntry] | None = None,
                 error: KafkaError | None = None,
                 incremental_configs: list[ConfigEntry] | None = None) -> None:
        if name is None:
            raise ValueError("Expected resource name to be a string")
        if isinstance(restype, str):
            try:
                restype = ResourceType[restype.upper()]
            except KeyError:
                raise ValueError(f'Unknown resource type "{restype}": should be a '
                                 "ConfigResource.Type") from None
        elif isinstance(restype, int):
            restype = ResourceType(restype)
        self.restype: ResourceType = restype
        self.restype_int = int(restype.value)
        self.name = str(name)
        self.set_config_dict = dict(set_config or {})
        self.incremental_configs = list(incremental_configs or [])
        self.configs = described_configs
        self.error = error

    def set_config(self, name: str, value: str, overwrite: bool = True) -> None:
        if not overwrite and name in self.set_config_dict:
            return
        self.set_config_dict[name] = value

    def add_incremental_config(self, config_entry: ConfigEntry) -> None:
        self.incremental_configs.append(config_entry)

    def __repr__(self) -> str:
        if self.error is not None:
            return f"ConfigResource({self.restype},{self.name},{self.error!r})"
        return f"ConfigResource({self.restype},{self.name})"

    def __hash__(self) -> int:
        return hash((self.restype, self.name))

    def __eq__(self, other: Any) -> bool:
        if not isinstance(other, ConfigResource):
            return NotImplemented
        return self.restype == other.restype and self.name == other.name

    def __lt__(self, other: Any) -> bool:
        if not isinstance(other, ConfigResource):
            return NotImplemented
        if self.restype != other.restype:
            return self.restype < other.restype
        return self.name < other.name

    def __len__(self) -> int:
        return len(self.set_config_dict)

