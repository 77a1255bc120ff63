"""AdminClient: topics, partitions, records, configurations and SCRAM users (a confluent-kafka
compatible subset)."""

from __future__ import annotations

from collections.abc import Hashable, Iterable
from concurrent.futures import Future
from concurrent.futures import TimeoutError as FutureTimeout
from typing import Any

from ..config import make_config
from ..errors import KafkaError, KafkaException
from ..net.client import KafkaClient
from ..net.request import VersionedRequest
from ..protocol.messages import (
    AlterUserScramCredentialsRequest,
    CreatePartitionsRequest,
    CreateTopicsRequest,
    DeleteRecordsRequest,
    DeleteTopicsRequest,
    DescribeConfigsRequest,
    IncrementalAlterConfigsRequest,
)
from ..topic_partition import OFFSET_END, TopicPartition
from .calls import ANY, CONTROLLER, AdminCall
from .groups import ConsumerGroupTopicPartitions, group_offsets, list_groups
from .metadata import ClusterMetadata, cluster_metadata
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
    UserScramCredentialAlteration,
    UserScramCredentialUpsertion,
    check_alteration,
    new_salt,
    salted_password,
)


def _error(code: int, message: str | None) -> KafkaError | None:
    return KafkaError(code, message or None) if code else None


def _typed(items: Iterable[Any], cls: type) -> list[Any]:
    out = list(items) if not isinstance(items, (str, bytes)) else [items]
    for item in out:
        if not isinstance(item, cls):
            raise TypeError(f"Expected a list of {cls.__name__}, got {type(item).__name__}")
    return out


def _unique(items: Iterable[Any], key, what: str) -> list[Any]:
    out = list(items)
    if not out:
        raise ValueError(f"Expected a non-empty list of {what}")
    seen = set()
    for item in out:
        k = key(item)
        if k in seen:
            raise ValueError(f"Duplicate {what[:-1]} {k!r} in the request")
        seen.add(k)
    return out


class AdminClient:
    """Administrative operations on a cluster.

    ``conf`` is a librdkafka/Java-style dict (``bootstrap.servers`` required). Operations
    return ``{item: concurrent.futures.Future}``; a failed item's Future raises
    ``KafkaException`` carrying the broker's error code and message. ``error_cb`` and
    ``throttle_cb`` are called from a thread of the client's own.
    """

    def __init__(self, conf: dict[str, Any]) -> None:
        self._config = make_config(conf, "admin")
        self._client = KafkaClient(self._config, serve_events_thread=True).start()

    # -- lifecycle ---------------------------------------------------------------------------
    def close(self, timeout: float = 5.0) -> None:
        self._client.close(timeout)

    def __enter__(self) -> AdminClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def poll(self, timeout: float = 0.0) -> int:
        """Accepted for compatibility: callbacks are served by the client's own thread."""
        return 0

    def __len__(self) -> int:
        return self._client.events.queue.qsize()

    def _timeout(self, request_timeout: float | None) -> float:
        if request_timeout is None or request_timeout < 0:
            return self._config["request.timeout.ms"] / 1000.0
        return float(request_timeout)

    def _operation_ms(self, operation_timeout: float, request_timeout: float | None) -> int:
        """The broker-side time limit of an operation: ``operation_timeout``, or when it is
        0 the request time-out (a KRaft controller answers REQUEST_TIMED_OUT at once to a
        deadline of 0, as the Java client avoids by sending its API time-out)."""
        if operation_timeout > 0:
            return int(operation_timeout * 1000)
        return int(self._timeout(request_timeout) * 1000)

    # -- metadata ----------------------------------------------------------------------------
    def list_topics(self, topic: str | None = None, timeout: float = -1) -> ClusterMetadata:
        """Cluster brokers and topics (one ``topic`` or all), fresh from a broker.

        Raises KafkaException(_TIMED_OUT) if no broker answers within ``timeout`` seconds
        (-1: ``request.timeout.ms``).
        """
        wait = self._timeout(timeout)
        if topic is None:
            fut = self._client.request_metadata(all_topics=True)
        else:
            fut = self._client.request_metadata([topic])
        try:
            view = fut.result(wait)
        except FutureTimeout:
            raise KafkaException(KafkaError(
                KafkaError._TIMED_OUT, f"no metadata within {wait:g}s")) from None
        return cluster_metadata(view, None if topic is None else [topic])

    # -- topics ------------------------------------------------------------------------------
    def create_topics(self, new_topics: list[NewTopic], operation_timeout: float = 0,
                      request_timeout: float | None = None,
                      validate_only: bool = False) -> dict[str, Future]:
        """Create topics; ``{topic: Future}`` resolving to None once the controller accepted."""
        topics = _unique(_typed(new_topics, NewTopic), lambda t: t.topic, "NewTopic objects")
        by_name = {t.topic: t for t in topics}
        op_ms = self._operation_ms(operation_timeout, request_timeout)

        def build(names: list[Hashable]) -> CreateTopicsRequest:
            return CreateTopicsRequest(
                topics=[_creatable(by_name[n]) for n in names],
                timeout_ms=op_ms, validate_only=validate_only)

        def parse(resp: Any) -> dict[Hashable, Any]:
            return {t.name: _error(t.error_code, t.error_message) for t in resp.topics}

        return AdminCall(self._client, list(by_name), build, parse, lambda _: CONTROLLER,
                         self._timeout(request_timeout)).start()

    def delete_topics(self, topics: list[str], operation_timeout: float = 0,
                      request_timeout: float | None = None) -> dict[str, Future]:
        """Delete topics; ``{topic: Future}`` resolving to None."""
        names = _unique(topics, lambda t: t, "topic names")
        op_ms = self._operation_ms(operation_timeout, request_timeout)

        def build(group: list[Hashable]) -> VersionedRequest:
            def at(version: int) -> DeleteTopicsRequest:
                if version >= 6:
                    return DeleteTopicsRequest(
                        topics=[DeleteTopicsRequest.DeleteTopicState(name=n) for n in group],
                        timeout_ms=op_ms)
                return DeleteTopicsRequest(topic_names=list(group), timeout_ms=op_ms)

            return VersionedRequest(DeleteTopicsRequest, at)

        def parse(resp: Any) -> dict[Hashable, Any]:
            return {r.name: _error(r.error_code, getattr(r, "error_message", None))
                    for r in resp.responses}

        return AdminCall(self._client, names, build, parse, lambda _: CONTROLLER,
                         self._timeout(request_timeout)).start()

    def create_partitions(self, new_partitions: list[NewPartitions],
                          operation_timeout: float = 0, request_timeout: float | None = None,
                          validate_only: bool = False) -> dict[str, Future]:
        """Add partitions; ``{topic: Future}`` resolving to None."""
        items = _unique(_typed(new_partitions, NewPartitions), lambda p: p.topic,
                        "NewPartitions objects")
        by_name = {p.topic: p for p in items}
        op_ms = self._operation_ms(operation_timeout, request_timeout)
        Topic = CreatePartitionsRequest.CreatePartitionsTopic
        Assignment = CreatePartitionsRequest.CreatePartitionsAssignment

        def build(names: list[Hashable]) -> CreatePartitionsRequest:
            topics = []
            for n in names:
                p = by_name[n]
                assignments = ([Assignment(broker_ids=list(r)) for r in p.replica_assignment]
                               if p.replica_assignment else None)
                topics.append(Topic(name=p.topic, count=p.new_total_count,
                                    assignments=assignments))
            return CreatePartitionsRequest(topics=topics, timeout_ms=op_ms,
                                           validate_only=validate_only)

        def parse(resp: Any) -> dict[Hashable, Any]:
            return {r.name: _error(r.error_code, r.error_message) for r in resp.results}

        return AdminCall(self._client, list(by_name), build, parse, lambda _: CONTROLLER,
                         self._timeout(request_timeout)).start()

    # -- consumer groups ---------------------------------------------------------------------
    def list_consumer_groups(self, request_timeout: float | None = None) -> Future:
        """Every group of the cluster (ListGroups on each broker): a Future of
        ListConsumerGroupsResult (``valid`` listings, ``errors`` of brokers that failed)."""
        return list_groups(self._client, self._timeout(request_timeout))

    def list_consumer_group_offsets(
            self, list_consumer_group_offsets_request: list[ConsumerGroupTopicPartitions],
            request_timeout: float | None = None,
    ) -> dict[ConsumerGroupTopicPartitions, Future]:
        """Committed offsets of groups (OffsetFetch at each coordinator): ``{request: Future
        of ConsumerGroupTopicPartitions}``; ``topic_partitions`` None asks for all of them."""
        items = _typed(list_consumer_group_offsets_request, ConsumerGroupTopicPartitions)
        wait = self._timeout(request_timeout)
        return {item: group_offsets(self._client, item, wait) for item in items}

    # -- records -----------------------------------------------------------------------------
    def delete_records(self, topic_partition_offsets: list[TopicPartition],
                       request_timeout: float | None = None,
                       operation_timeout: float = 0) -> dict[TopicPartition, Future]:
        """Delete each partition's records before its ``offset`` (OFFSET_END: all of them);
        ``{TopicPartition: Future}`` resolving to ``DeletedRecords(low_watermark)``.

        Each partition is asked of its leader in fresh metadata; a partition whose leader
        moved meanwhile fails with NOT_LEADER_OR_FOLLOWER (call again).
        """
        items = _unique(_typed(topic_partition_offsets, TopicPartition),
                        lambda tp: (tp.topic, tp.partition), "TopicPartition objects")
        for tp in items:
            if tp.partition < 0 or (tp.offset < 0 and tp.offset != OFFSET_END):
                raise ValueError(f"delete_records needs a partition and an offset >= 0 or "
                                 f"OFFSET_END: got {tp!r}")
        wait = self._timeout(request_timeout)
        try:
            self._client.request_metadata(sorted({tp.topic for tp in items})).result(wait)
        except FutureTimeout:
            raise KafkaException(KafkaError(
                KafkaError._TIMED_OUT, f"no metadata within {wait:g}s")) from None
        op_ms = self._operation_ms(operation_timeout, request_timeout)
        Topic = DeleteRecordsRequest.DeleteRecordsTopic
        Partition = DeleteRecordsRequest.DeleteRecordsTopic.DeleteRecordsPartition

        def target(tp: Any) -> Any:
            leader = self._client.cluster.leader(tp.topic, tp.partition)
            return leader if leader is not None and leader >= 0 else ANY

        def build(group: list[Hashable]) -> DeleteRecordsRequest:
            by_topic: dict[str, list[Any]] = {}
            for tp in group:
                by_topic.setdefault(tp.topic, []).append(
                    Partition(partition_index=tp.partition, offset=tp.offset))
            return DeleteRecordsRequest(
                topics=[Topic(name=t, partitions=ps) for t, ps in by_topic.items()],
                timeout_ms=op_ms)

        def parse(resp: Any) -> dict[Hashable, Any]:
            return {TopicPartition(t.name, p.partition_index):
                    _error(p.error_code, None) or DeletedRecords(p.low_watermark)
                    for t in resp.topics for p in t.partitions}

        return AdminCall(self._client, items, build, parse, target, wait).start()

    # -- configurations ----------------------------------------------------------------------
    def describe_configs(self, resources: list[ConfigResource],
                         request_timeout: float | None = None,
                         include_synonyms: bool = False) -> dict[ConfigResource, Future]:
        """``{resource: Future}`` resolving to ``{name: ConfigEntry}``.

        Broker resources are asked of that broker, the others of any broker.
        """
        items = _unique(_typed(resources, ConfigResource), lambda r: r,
                        "ConfigResource objects")
        Resource = DescribeConfigsRequest.DescribeConfigsResource

        def build(group: list[Hashable]) -> DescribeConfigsRequest:
            return DescribeConfigsRequest(
                resources=[Resource(resource_type=r.restype_int, resource_name=r.name,
                                    configuration_keys=None) for r in group],
                include_synonyms=include_synonyms)

        def parse(resp: Any) -> dict[Hashable, Any]:
            out: dict[Hashable, Any] = {}
            for r in resp.results:
                key = ConfigResource(r.resource_type, r.resource_name)
                err = _error(r.error_code, r.error_message)
                out[key] = err if err is not None else {
                    c.name: _config_entry(c) for c in r.configs}
            return out

        return AdminCall(self._client, items, build, parse, _resource_target,
                         self._timeout(request_timeout)).start()

    def incremental_alter_configs(self, resources: list[ConfigResource],
                                  request_timeout: float | None = None,
                                  validate_only: bool = False) -> dict[ConfigResource, Future]:
        """Apply each resource's ``incremental_configs``; ``{resource: Future}`` of None."""
        items = _unique(_typed(resources, ConfigResource), lambda r: r,
                        "ConfigResource objects")
        for r in items:
            for entry in r.incremental_configs:
                if not isinstance(entry.incremental_operation, AlterConfigOpType):
                    raise ValueError(f"ConfigEntry {entry.name!r} of {r!r} needs an "
                                     "incremental_operation (AlterConfigOpType)")
        by_key = {r: r for r in items}
        Resource = IncrementalAlterConfigsRequest.AlterConfigsResource
        Alterable = IncrementalAlterConfigsRequest.AlterConfigsResource.AlterableConfig

        def build(group: list[Hashable]) -> IncrementalAlterConfigsRequest:
            return IncrementalAlterConfigsRequest(
                resources=[Resource(
                    resource_type=by_key[r].restype_int, resource_name=by_key[r].name,
                    configs=[Alterable(name=e.name,
                                       config_operation=e.incremental_operation.value,
                                       value=e.value)
                             for e in by_key[r].incremental_configs])
                    for r in group],
                validate_only=validate_only)

        def parse(resp: Any) -> dict[Hashable, Any]:
            return {ConfigResource(r.resource_type, r.resource_name):
                    _error(r.error_code, r.error_message) for r in resp.responses}

        return AdminCall(self._client, items, build, parse, _resource_target,
                         self._timeout(request_timeout)).start()

    # -- SCRAM users -------------------------------------------------------------------------
    def alter_user_scram_credentials(self, alterations: list[UserScramCredentialAlteration],
                                     request_timeout: float | None = None
                                     ) -> dict[str, Future]:
        """Upsert or delete SCRAM credentials; ``{user: Future}`` resolving to None.

        Passwords are salted and hashed here (PBKDF2, as the broker stores them); only
        the salted password goes over the wire.
        """
        items = _typed(alterations, UserScramCredentialAlteration)
        if not items:
            raise ValueError("Expected a non-empty list of SCRAM credential alterations")
        for a in items:
            check_alteration(a)
        users = list(dict.fromkeys(a.user for a in items))
        Upsertion = AlterUserScramCredentialsRequest.ScramCredentialUpsertion
        Deletion = AlterUserScramCredentialsRequest.ScramCredentialDeletion
        upsertions: dict[str, list[Any]] = {u: [] for u in users}
        deletions: dict[str, list[Any]] = {u: [] for u in users}
        for a in items:
            if isinstance(a, UserScramCredentialUpsertion):
                info = a.scram_credential_info
                salt = a.salt or new_salt()
                upsertions[a.user].append(Upsertion(
                    name=a.user, mechanism=info.mechanism.value, iterations=info.iterations,
                    salt=salt, salted_password=salted_password(
                        info.mechanism, a.password, salt, info.iterations)))
            else:
                deletions[a.user].append(Deletion(name=a.user, mechanism=a.mechanism.value))

        def build(group: list[Hashable]) -> AlterUserScramCredentialsRequest:
            return AlterUserScramCredentialsRequest(
                deletions=[d for u in group for d in deletions[u]],
                upsertions=[x for u in group for x in upsertions[u]])

        def parse(resp: Any) -> dict[Hashable, Any]:
            return {r.user: _error(r.error_code, r.error_message) for r in resp.results}

        return AdminCall(self._client, users, build, parse, lambda _: CONTROLLER,
                         self._timeout(request_timeout)).start()


def _resource_target(resource: Any) -> Any:
    if resource.restype in (ResourceType.BROKER, ResourceType.BROKER_LOGGER):
        try:
            return int(resource.name)
        except ValueError:
            raise ValueError(f"broker resource name must be a broker id: {resource.name!r}") \
                from None
    return ANY


def _creatable(t: NewTopic) -> Any:
    Topic = CreateTopicsRequest.CreatableTopic
    Assignment = CreateTopicsRequest.CreatableTopic.CreatableReplicaAssignment
    Config = CreateTopicsRequest.CreatableTopic.CreatableTopicConfig
    return Topic(
        name=t.topic, num_partitions=t.num_partitions,
        replication_factor=t.replication_factor,
        assignments=[Assignment(partition_index=i, broker_ids=list(ids))
                     for i, ids in enumerate(t.replica_assignment)],
        configs=[Config(name=k, value=v) for k, v in t.config.items()])


def _config_entry(c: Any) -> ConfigEntry:
    try:
        source = ConfigSource(getattr(c, "config_source", -1))
    except ValueError:
        source = ConfigSource.UNKNOWN_CONFIG
    is_default = getattr(c, "is_default", False) or source == ConfigSource.DEFAULT_CONFIG
    synonyms = {}
    for s in getattr(c, "synonyms", None) or ():
        try:
            s_source = ConfigSource(s.source)
        except ValueError:
            s_source = ConfigSource.UNKNOWN_CONFIG
        synonyms[s.name] = ConfigEntry(s.name, s.value, s_source, is_synonym=True)
    return ConfigEntry(c.name, c.value, source, is_read_only=c.read_only,
                       is_default=is_default, is_sensitive=c.is_sensitive,
                       synonyms=synonyms)
