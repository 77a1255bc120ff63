"""Administrative client: topics, partitions and configurations."""

from .client import AdminClient
from .metadata import BrokerMetadata, ClusterMetadata, PartitionMetadata, TopicMetadata
from .resources import (
    AlterConfigOpType,
    ConfigEntry,
    ConfigResource,
    ConfigSource,
    NewPartitions,
    NewTopic,
    ResourceType,
)

__all__ = [
    "AdminClient",
    "AlterConfigOpType",
    "BrokerMetadata",
    "ClusterMetadata",
    "ConfigEntry",
    "ConfigResource",
    "ConfigSource",
    "NewPartitions",
    "NewTopic",
    "PartitionMetadata",
    "ResourceType",
    "TopicMetadata",
]
