"""Cluster view: brokers, topics, partition leaders and coordinators."""

from .coordinators import GROUP, TRANSACTION, coordinator_action
from .view import Broker, ClusterView, PartitionInfo, TopicInfo

__all__ = ["GROUP", "TRANSACTION", "Broker", "ClusterView", "PartitionInfo", "TopicInfo",
           "coordinator_action"]
