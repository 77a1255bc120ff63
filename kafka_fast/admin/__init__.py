"""Administrative client: topics, partitions, configurations and consumer groups."""

from .client import AdminClient
from .groups import (
    ConsumerGroupListing,
    ConsumerGroupState,
    ConsumerGroupTopicPartitions,
    ListConsumerGroupsResult,
)
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
    "ConsumerGroupListing",
    "ConsumerGroupState",
    "ConsumerGroupTopicPartitions",
    "ListConsumerGroupsResult",
    "NewPartitions",
    "NewTopic",
    "PartitionMetadata",
    "ResourceType",
    "TopicMetadata",
]
