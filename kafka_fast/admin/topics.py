"""Topics and partitions: CreateTopics, DeleteTopics and CreatePartitions at the controller."""

from __future__ import annotations

from concurrent.futures import Future
from typing import Any

from ..net.client import KafkaClient
from ..net.request import VersionedRequest
from ..protocol import messages as m
from .calls import CONTROLLER, AdminCall, error_of
from .resources import NewPartitions, NewTopic


def create_topics(client: KafkaClient, topics: list[NewTopic], operation_ms: int,
                  validate_only: bool, timeout: float) -> dict[str, Future]:
    """``{topic: Future}`` resolving to None once the controller accepted."""
    by_name = {t.topic: t for t in topics}

    def build(names: list[str]) -> m.CreateTopicsRequest:
        return m.CreateTopicsRequest(
            topics=[_creatable(by_name[n]) for n in names],
            timeout_ms=operation_ms, validate_only=validate_only)

    def parse(resp: Any, _: list[str]) -> dict[str, Any]:
        return {t.name: error_of(t.error_code, t.error_message) for t in resp.topics}

    return AdminCall(client, list(by_name), build, parse, lambda _: CONTROLLER,
                     timeout).start()


def delete_topics(client: KafkaClient, names: list[str], operation_ms: int,
                  timeout: float) -> dict[str, Future]:
    """``{topic: Future}`` resolving to None."""

    def build(group: list[str]) -> VersionedRequest:
        def at(version: int) -> m.DeleteTopicsRequest:
            if version >= 6:
                return m.DeleteTopicsRequest(
                    topics=[m.DeleteTopicsRequest.DeleteTopicState(name=n) for n in group],
                    timeout_ms=operation_ms)
            return m.DeleteTopicsRequest(topic_names=list(group), timeout_ms=operation_ms)

        return VersionedRequest(m.DeleteTopicsRequest, at)

    def parse(resp: Any, _: list[str]) -> dict[str, Any]:
        return {r.name: error_of(r.error_code, getattr(r, "error_message", None))
                for r in resp.responses}

    return AdminCall(client, names, build, parse, lambda _: CONTROLLER, timeout).start()


def create_partitions(client: KafkaClient, items: list[NewPartitions], operation_ms: int,
                      validate_only: bool, timeout: float) -> dict[str, Future]:
    """``{topic: Future}`` resolving to None."""
    by_name = {p.topic: p for p in items}
    Topic = m.CreatePartitionsRequest.CreatePartitionsTopic
    Assignment = m.CreatePartitionsRequest.CreatePartitionsAssignment

    def build(names: list[str]) -> m.CreatePartitionsRequest:
        topics = []
        for n in names:
            p = by_name[n]
            assignments = ([Assignment(broker_ids=list(r)) for r in p.replica_assignment]
                           if p.replica_assignment else None)
            topics.append(Topic(name=p.topic, count=p.new_total_count, assignments=assignments))
        return m.CreatePartitionsRequest(topics=topics, timeout_ms=operation_ms,
                                         validate_only=validate_only)

    def parse(resp: Any, _: list[str]) -> dict[str, Any]:
        return {r.name: error_of(r.error_code, r.error_message) for r in resp.results}

    return AdminCall(client, list(by_name), build, parse, lambda _: CONTROLLER,
                     timeout).start()


def _creatable(t: NewTopic) -> Any:
    Topic = m.CreateTopicsRequest.CreatableTopic
    Assignment = m.CreateTopicsRequest.CreatableTopic.CreatableReplicaAssignment
    Config = m.CreateTopicsRequest.CreatableTopic.CreatableTopicConfig
    return Topic(
        name=t.topic, num_partitions=t.num_partitions,
        replication_factor=t.replication_factor,
        assignments=[Assignment(partition_index=i, broker_ids=list(ids))
                     for i, ids in enumerate(t.replica_assignment)],
        configs=[Config(name=k, value=v) for k, v in t.config.items()])
