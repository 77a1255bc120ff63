"""Administrative client: topics, partitions, records, configurations, consumer groups and
SCRAM users."""

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
    DeletedRecords,
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
    "DeletedRecords",
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
