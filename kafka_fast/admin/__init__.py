"""Administrative client: topics, partitions, configurations, consumer groups, SCRAM users."""

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
from .scram import (
    ScramCredentialInfo,
    ScramMechanism,
    UserScramCredentialAlteration,
    UserScramCredentialDeletion,
    UserScramCredentialUpsertion,
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
    "ScramCredentialInfo",
    "ScramMechanism",
    "TopicMetadata",
    "UserScramCredentialAlteration",
    "UserScramCredentialDeletion",
    "UserScramCredentialUpsertion",
]
