"""AdminClient: confluent-kafka's AdminClient API (method names, parameters, result types and
futures) over kafka_fast's network client. Each concern lives in its own module; this class
checks arguments and hands them over."""

from __future__ import annotations

import functools
import threading
import warnings
import weakref
from collections.abc import Callable, Iterable
from concurrent.futures import Future
from typing import Any, TypeVar

from ..cluster.listing import ClusterMetadata, GroupMetadata, fetch_cluster_metadata
from ..config import client_config
from ..errors import KafkaError, KafkaException
from ..net.client import KafkaClient
from ..net.request import settle_all
from ..topic_partition import OFFSET_END, TopicPartition
from . import acls as acl_ops
from . import cluster, configs, groups, offsets, records, scram, share_groups
from . import topics as topic_ops
from .acls import AclBinding, AclBindingFilter
from .events import EventServer
from .model import (
    ConsumerGroupState,
    ConsumerGroupTopicPartitions,
    ConsumerGroupType,
    ElectionType,
    IsolationLevel,
    TopicCollection,
)
from .offsets import OffsetSpec
from .resources import ConfigResource, NewPartitions, NewTopic
from .scram import UserScramCredentialAlteration


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


def _group_ids(group_ids: Any, what: str) -> list[str]:
    if not isinstance(group_ids, list):
        raise TypeError(f"Expected input to be list of group ids to be {what}")
    if not group_ids:
        raise ValueError(f"Expected at least one group to be {what}")
    for g in group_ids:
        if not isinstance(g, str):
            raise ValueError(f"Expected list of {str!r}")
        if not g:
            raise ValueError("'group_id' cannot be empty")
    if len(set(group_ids)) != len(group_ids):
        raise ValueError("Duplicate group ids in the request")
    return group_ids


def _enum_set(values: Any, cls: type, what: str) -> set[Any] | None:
    if values is None:
        return None
    if not isinstance(values, set):
        raise TypeError(f"'{what}' must be a set")
    for v in values:
        if not isinstance(v, cls):
            raise TypeError(f"All elements of {what} must be of type {cls.__name__}")
    return values


_Op = TypeVar("_Op", bound=Callable[..., Any])


def _tracked(method: _Op) -> _Op:
    """Remember the Futures an operation returns, for close() to fail what is left."""
    @functools.wraps(method)
    def wrapper(self: AdminClient, *args: Any, **kwargs: Any) -> Any:
        result = method(self, *args, **kwargs)
        for fut in result.values() if isinstance(result, dict) else (result,):
            self._outstanding.add(fut)
        return result
    return wrapper  # type: ignore[return-value]


class AdminClient:
    """Administrative operations on a cluster.

    ``conf`` is a librdkafka/Java-style dict (keyword arguments such as ``logger=`` are
    merged into it). Operations return
    ``concurrent.futures.Future`` objects (one, or a dict keyed as confluent-kafka keys
    them); a failed item's Future raises ``KafkaException`` with the broker's error code and
    message. Options are keyword-only, as confluent-kafka's are; ``request_timeout`` None
    or negative means ``request.timeout.ms``. Each Future is settled by then at the latest.

    ``error_cb``/``throttle_cb`` run on a thread of the client's own until the first
    ``poll()``; from then on only ``poll()`` serves them, as in confluent-kafka.
    """

    def __init__(self, conf: dict[str, Any], **kwargs: Any) -> None:
        if conf is None:  # confluent-kafka's AdminClient needs its dict
            raise TypeError("expected configuration dict, got NoneType")
        self._config = client_config(conf, kwargs, "admin")
        self._client = KafkaClient(self._config).start()
        self._events = EventServer(self._client, self._client.name)
        self._closed = False
        self._close_lock = threading.Lock()
        self._outstanding: weakref.WeakSet[Future] = weakref.WeakSet()

    # -- lifecycle and events ----------------------------------------------------------------
    def close(self, timeout: float = 5.0) -> None:
        """Fail what is outstanding with _DESTROY and stop the client's threads."""
        with self._close_lock:
            if self._closed:
                return
            self._closed = True
        self._events.close()
        self._client.close(timeout)
        # What the client did not settle while stopping (waiting for a retry or a
        # coordinator, say) fails now instead of at its deadline.
        settle_all([f for f in list(self._outstanding) if not f.done()],
                   error=KafkaException(KafkaError.of(KafkaError._DESTROY, "AdminClient closed")))

    def __enter__(self) -> AdminClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _check_open(self) -> None:
        if self._closed:
            raise RuntimeError("AdminClient has been closed")

    def poll(self, timeout: float) -> int:
        """Serve ``error_cb``/``throttle_cb`` events on this thread, waiting up to ``timeout``
        seconds (negative: until one arrives) for the first; the number served."""
        self._check_open()
        wait = threading.TIMEOUT_MAX if timeout is None or timeout < 0 else float(timeout)
        return self._events.poll(wait)

    def __len__(self) -> int:
        return self._client.events.queue.qsize()

    def metrics(self) -> dict[str, int | float]:
        """A flat snapshot of the client's request counters with Prometheus-style names
        (labelled series keyed ``name{label="value"}``); see docs/statistics.md."""
        return self._client.metrics()

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

        Raises KafkaException(_TRANSPORT) if no broker is reachable within ``timeout``
        seconds (-1: ``request.timeout.ms``), _TIMED_OUT if one is but does not answer.
        """
        self._check_open()
        return fetch_cluster_metadata(self._client, topic, self._timeout(timeout))

    def cluster_id(self, timeout: float = -1) -> str:
        """The cluster id from metadata; KafkaException(_TIMED_OUT) if none arrives within
        ``timeout`` seconds (-1: ``request.timeout.ms``)."""
        self._check_open()
        wait = self._timeout(timeout)
        cid = self._client.cluster_id(wait)
        if cid is None:
            raise KafkaException(KafkaError.of(
                KafkaError._TIMED_OUT, f"Failed to retrieve cluster id within {wait:g}s"))
        return cid

    def list_groups(self, group: str | None = None, timeout: float = -1
                    ) -> list[GroupMetadata]:
        """Deprecated in confluent-kafka (use list_consumer_groups/describe_consumer_groups):
        every group, or ``group``, with members as raw bytes. Blocks up to ``timeout``."""
        self._check_open()
        return groups.group_metadata(self._client, group, self._timeout(timeout))

    def set_sasl_credentials(self, username: str, password: str) -> None:
        """SASL PLAIN/SCRAM credentials for the next logins; open connections keep theirs."""
        self._check_open()
        self._client.set_sasl_credentials(username, password)

    # -- topics ------------------------------------------------------------------------------
    @_tracked
    def create_topics(self, new_topics: list[NewTopic], *, operation_timeout: float = 0,
                      request_timeout: float | None = None,
                      validate_only: bool = False) -> dict[str, Future]:
        """Create topics; ``{topic: Future}`` resolving to None once the controller accepted."""
        self._check_open()
        items = _unique(_typed(new_topics, NewTopic), lambda t: t.topic, "NewTopic objects")
        return topic_ops.create_topics(
            self._client, items, self._operation_ms(operation_timeout, request_timeout),
            validate_only, self._timeout(request_timeout))

    @_tracked
    def delete_topics(self, topics: list[str], *, operation_timeout: float = 0,
                      request_timeout: float | None = None) -> dict[str, Future]:
        """Delete topics; ``{topic: Future}`` resolving to None."""
        self._check_open()
        names = _unique(topics, lambda t: t, "topic names")
        return topic_ops.delete_topics(
            self._client, names, self._operation_ms(operation_timeout, request_timeout),
            self._timeout(request_timeout))

    @_tracked
    def create_partitions(self, new_partitions: list[NewPartitions], *,
                          operation_timeout: float = 0, request_timeout: float | None = None,
                          validate_only: bool = False) -> dict[str, Future]:
        """Add partitions; ``{topic: Future}`` resolving to None."""
        self._check_open()
        items = _unique(_typed(new_partitions, NewPartitions), lambda p: p.topic,
                        "NewPartitions objects")
        return topic_ops.create_partitions(
            self._client, items, self._operation_ms(operation_timeout, request_timeout),
            validate_only, self._timeout(request_timeout))

    @_tracked
    def describe_topics(self, topics: TopicCollection, *,
                        include_authorized_operations: bool = False,
                        request_timeout: float | None = None) -> dict[str, Future]:
        """Describe topics (never creating them); ``{name: Future of TopicDescription}``."""
        self._check_open()
        if not isinstance(topics, TopicCollection):
            raise TypeError("Expected input to be instance of TopicCollection")
        names = topics.topic_names
        if not isinstance(names, list):
            raise TypeError("Expected list of topic names to be described")
        for i, name in enumerate(names):
            if not isinstance(name, str):
                raise TypeError(f"Expected list of topics strings, not {type(name).__name__}")
            if not name:
                raise ValueError(f"Empty topic name at index {i} isn't allowed")
        if len(set(names)) != len(names):
            raise ValueError("Duplicate topic names in the request")
        return cluster.describe_topics(self._client, names, include_authorized_operations,
                                       self._timeout(request_timeout))

    @_tracked
    def describe_cluster(self, *, include_authorized_operations: bool = False,
                         request_timeout: float | None = None) -> Future:
        """A Future of DescribeClusterResult (controller, nodes, cluster id)."""
        self._check_open()
        return cluster.describe_cluster(self._client, include_authorized_operations,
                                        self._timeout(request_timeout))

    @_tracked
    def elect_leaders(self, election_type: ElectionType,
                      partitions: list[TopicPartition] | None = None, *,
                      request_timeout: float | None = None, operation_timeout: float = 0
                      ) -> Future:
        """Elect the preferred (or, UNCLEAN, any) replica as leader of ``partitions`` (None:
        every partition that needs it); a Future of ``{TopicPartition: KafkaError | None}``."""
        self._check_open()
        if not isinstance(election_type, ElectionType):
            raise TypeError("Expected 'election_type' to be of type 'ElectionType'")
        if partitions is not None:
            offsets.check_partitions(partitions, "partitions")
        return cluster.elect_leaders(
            self._client, election_type, partitions,
            self._operation_ms(operation_timeout, request_timeout),
            self._timeout(request_timeout))

    # -- records and offsets -----------------------------------------------------------------
    @_tracked
    def delete_records(self, topic_partition_offsets: list[TopicPartition], *,
                       request_timeout: float | None = None, operation_timeout: float = 0
                       ) -> dict[TopicPartition, Future]:
        """Delete each partition's records before its ``offset`` (OFFSET_END: all of them);
        ``{TopicPartition: Future of DeletedRecords}`` (the new low watermark)."""
        self._check_open()
        items = offsets.check_partitions(topic_partition_offsets, "topic_partition_offsets")
        for tp in items:
            if tp.offset < 0 and tp.offset != OFFSET_END:
                raise ValueError(f"delete_records needs an offset >= 0 or OFFSET_END: "
                                 f"got {tp!r}")
        return records.delete_records(
            self._client, items, self._operation_ms(operation_timeout, request_timeout),
            self._timeout(request_timeout))

    @_tracked
    def list_offsets(self, topic_partition_offsets: dict[TopicPartition, OffsetSpec], *,
                     isolation_level: IsolationLevel | None = None,
                     request_timeout: float | None = None) -> dict[TopicPartition, Future]:
        """Offsets of partitions by OffsetSpec (earliest, latest, max timestamp, a time);
        ``{TopicPartition(topic, partition, spec value): Future of ListOffsetsResultInfo}``."""
        self._check_open()
        offsets.check_offset_specs(topic_partition_offsets, isolation_level)
        return offsets.list_offsets(
            self._client, topic_partition_offsets,
            isolation_level or IsolationLevel.READ_UNCOMMITTED, self._timeout(request_timeout))

    # -- consumer groups ---------------------------------------------------------------------
    @_tracked
    def list_consumer_groups(self, *, request_timeout: float | None = None,
                             states: set[ConsumerGroupState] | None = None,
                             types: set[ConsumerGroupType] | None = None) -> Future:
        """Every group of the cluster (ListGroups on each broker), optionally only those in
        ``states`` and of ``types``: a Future of ListConsumerGroupsResult (``valid``
        listings, ``errors`` of brokers that failed)."""
        self._check_open()
        return groups.list_consumer_groups(
            self._client, self._timeout(request_timeout),
            _enum_set(states, ConsumerGroupState, "states"),
            _enum_set(types, ConsumerGroupType, "types"))

    @_tracked
    def describe_consumer_groups(self, group_ids: list[str], *,
                                 include_authorized_operations: bool = False,
                                 request_timeout: float | None = None) -> dict[str, Future]:
        """Members, assignments, state, type and coordinator of each group; ``{group_id:
        Future of ConsumerGroupDescription}`` (an unknown group is described as DEAD)."""
        self._check_open()
        ids = _group_ids(group_ids, "described")
        wait = self._timeout(request_timeout)
        return {g: groups.describe_consumer_group(self._client, g, wait,
                                                  include_authorized_operations)
                for g in ids}

    @_tracked
    def delete_consumer_groups(self, group_ids: list[str], *,
                               request_timeout: float | None = None) -> dict[str, Future]:
        """Delete groups without members; ``{group_id: Future of None}``."""
        self._check_open()
        ids = _group_ids(group_ids, "deleted")
        wait = self._timeout(request_timeout)
        return {g: groups.delete_consumer_group(self._client, g, wait) for g in ids}

    @_tracked
    def list_consumer_group_offsets(
            self, list_consumer_group_offsets_request: list[ConsumerGroupTopicPartitions], *,
            require_stable: bool = False, request_timeout: float | None = None,
    ) -> dict[str, Future]:
        """Committed offsets of groups (OffsetFetch at each coordinator): ``{group_id: Future
        of ConsumerGroupTopicPartitions}``; ``topic_partitions`` None asks for all of them.
        Unlike confluent-kafka, several groups may be asked at once."""
        self._check_open()
        items = offsets.check_group_requests(list_consumer_group_offsets_request, False)
        wait = self._timeout(request_timeout)
        return {r.group_id: offsets.committed_offsets(self._client, r, require_stable, wait)
                for r in items}

    @_tracked
    def alter_consumer_group_offsets(
            self, alter_consumer_group_offsets_request: list[ConsumerGroupTopicPartitions], *,
            request_timeout: float | None = None) -> dict[str, Future]:
        """Commit offsets for groups without active members: ``{group_id: Future of
        ConsumerGroupTopicPartitions}`` with each partition's error (None: committed)."""
        self._check_open()
        items = offsets.check_group_requests(alter_consumer_group_offsets_request, True)
        wait = self._timeout(request_timeout)
        return {r.group_id: offsets.commit_offsets(self._client, r, wait) for r in items}

    # -- share groups (KIP-932) --------------------------------------------------------------
    @_tracked
    def list_share_groups(self, *, request_timeout: float | None = None,
                          states: set[ConsumerGroupState] | None = None) -> Future:
        """Every share group of the cluster (ListGroups on each broker), optionally only those
        in ``states``: a Future of ListConsumerGroupsResult."""
        self._check_open()
        return groups.list_consumer_groups(
            self._client, self._timeout(request_timeout),
            _enum_set(states, ConsumerGroupState, "states"), None, share=True)

    @_tracked
    def describe_share_groups(self, group_ids: list[str], *,
                              include_authorized_operations: bool = False,
                              request_timeout: float | None = None) -> dict[str, Future]:
        """Members (with their assigned partitions), state, epochs and coordinator of each
        share group; ``{group_id: Future of ShareGroupDescription}``."""
        self._check_open()
        ids = _group_ids(group_ids, "described")
        wait = self._timeout(request_timeout)
        return {g: share_groups.describe_share_group(self._client, g, wait,
                                                     include_authorized_operations)
                for g in ids}

    @_tracked
    def list_share_group_offsets(
            self, list_share_group_offsets_request: list[ConsumerGroupTopicPartitions], *,
            request_timeout: float | None = None) -> dict[str, Future]:
        """Start offsets of share groups (DescribeShareGroupOffsets): ``{group_id: Future of
        ConsumerGroupTopicPartitions}``; ``topic_partitions`` None asks for all of them."""
        self._check_open()
        items = offsets.check_group_requests(list_share_group_offsets_request, False)
        wait = self._timeout(request_timeout)
        return {r.group_id: share_groups.share_group_offsets(self._client, r, wait)
                for r in items}

    @_tracked
    def alter_share_group_offsets(
            self, alter_share_group_offsets_request: list[ConsumerGroupTopicPartitions], *,
            request_timeout: float | None = None) -> dict[str, Future]:
        """Set the start offsets of share groups without members: ``{group_id: Future of
        ConsumerGroupTopicPartitions}`` with each partition's error (None: set)."""
        self._check_open()
        items = offsets.check_group_requests(alter_share_group_offsets_request, True)
        wait = self._timeout(request_timeout)
        return {r.group_id: share_groups.alter_share_group_offsets(self._client, r, wait)
                for r in items}

    @_tracked
    def delete_share_group_offsets(self, group_id: str, topics: list[str], *,
                                   request_timeout: float | None = None) -> dict[str, Future]:
        """Forget a member-less share group's offsets of ``topics``: ``{topic: Future of
        None}``."""
        self._check_open()
        (group,) = _group_ids([group_id], "changed")
        if isinstance(topics, str) or not topics or not all(
                isinstance(t, str) and t for t in topics):
            raise ValueError("delete_share_group_offsets needs a non-empty list of topic names")
        return share_groups.delete_share_group_offsets(self._client, group, list(topics),
                                                       self._timeout(request_timeout))

    # -- configurations ----------------------------------------------------------------------
    @_tracked
    def describe_configs(self, resources: list[ConfigResource], *,
                         request_timeout: float | None = None, broker: int = -1,
                         include_synonyms: bool = True, include_documentation: bool = False
                         ) -> dict[ConfigResource, Future]:
        """``{resource: Future of {name: ConfigEntry}}``. Broker resources are asked of that
        broker, others of ``broker`` (default any). With ``include_documentation`` each
        ConfigEntry carries the broker's ``documentation`` of it."""
        self._check_open()
        items = self._resources(resources)
        return configs.describe_configs(self._client, items, broker, include_synonyms,
                                        include_documentation, self._timeout(request_timeout))

    @_tracked
    def alter_configs(self, resources: list[ConfigResource], *,
                      request_timeout: float | None = None, validate_only: bool = False,
                      broker: int = -1) -> dict[ConfigResource, Future]:
        """Deprecated (as in confluent-kafka): replace each resource's whole configuration
        with its ``set_config`` values; ``{resource: Future of None}``."""
        warnings.warn("alter_configs has been deprecated. Use incremental_alter_configs "
                      "instead.", category=DeprecationWarning, stacklevel=2)
        self._check_open()
        items = self._resources(resources)
        return configs.alter_configs(self._client, items, broker, validate_only,
                                     self._timeout(request_timeout))

    @_tracked
    def incremental_alter_configs(self, resources: list[ConfigResource], *,
                                  request_timeout: float | None = None,
                                  validate_only: bool = False, broker: int = -1
                                  ) -> dict[ConfigResource, Future]:
        """Apply each resource's ``incremental_configs`` (SET, DELETE, APPEND, SUBTRACT);
        ``{resource: Future of None}``."""
        self._check_open()
        if not isinstance(resources, list):
            raise TypeError("Expected a list of ConfigResource")
        for r in resources:
            if not isinstance(r, ConfigResource):
                raise TypeError(f"Expected list of {ConfigResource!r}")
        items = self._resources(resources)
        for r in items:
            if not r.incremental_configs:
                raise ValueError("expected non-empty list of ConfigEntry to alter "
                                 f"incrementally in incremental_configs field of {r!r}")
            for entry in r.incremental_configs:
                if entry.incremental_operation is None:
                    raise TypeError(f"ConfigEntry {entry.name!r} of {r!r} needs an "
                                    "incremental_operation (AlterConfigOpType)")
        return configs.incremental_alter_configs(self._client, items, broker, validate_only,
                                                 self._timeout(request_timeout))

    @staticmethod
    def _resources(resources: Any) -> list[ConfigResource]:
        items = configs.check_resources(resources)
        if not items:
            raise ValueError("Expected non-empty list of ConfigResource objects")
        return items

    # -- ACLs --------------------------------------------------------------------------------
    @_tracked
    def create_acls(self, acls: list[AclBinding], *, request_timeout: float | None = None
                    ) -> dict[AclBinding, Future]:
        """Create ACL bindings; ``{binding: Future of None}``."""
        self._check_open()
        if isinstance(acls, list) and not acls:
            raise ValueError("Expected non-empty list of AclBinding objects")
        return acl_ops.create_acls(self._client, acls, self._timeout(request_timeout))

    @_tracked
    def describe_acls(self, acl_binding_filter: AclBindingFilter, *,
                      request_timeout: float | None = None) -> Future:
        """A Future of the AclBindings matching the filter (a list)."""
        self._check_open()
        if not isinstance(acl_binding_filter, AclBindingFilter):
            raise TypeError("Expected an AclBindingFilter object")
        return acl_ops.describe_acls(self._client, acl_binding_filter,
                                  self._timeout(request_timeout))

    @_tracked
    def delete_acls(self, acl_binding_filters: list[AclBindingFilter], *,
                    request_timeout: float | None = None) -> dict[AclBindingFilter, Future]:
        """Delete the ACLs each filter matches; ``{filter: Future of the deleted
        AclBindings}``."""
        self._check_open()
        if isinstance(acl_binding_filters, list) and not acl_binding_filters:
            raise ValueError("Expected non-empty list of AclBindingFilter objects")
        return acl_ops.delete_acls(self._client, acl_binding_filters,
                                self._timeout(request_timeout))

    # -- SCRAM users -------------------------------------------------------------------------
    @_tracked
    def describe_user_scram_credentials(self, users: list[str] | None = None, *,
                                        request_timeout: float | None = None
                                        ) -> Future | dict[str, Future]:
        """SCRAM credentials (mechanism, iterations) of ``users``: ``{user: Future of
        UserScramCredentialsDescription}``; with None, of every user: one Future of
        ``{user: UserScramCredentialsDescription}``."""
        self._check_open()
        scram.check_users(users)
        return scram.describe_credentials(self._client, users, self._timeout(request_timeout))

    @_tracked
    def alter_user_scram_credentials(self, alterations: list[UserScramCredentialAlteration], *,
                                     request_timeout: float | None = None
                                     ) -> dict[str, Future]:
        """Upsert or delete SCRAM credentials; ``{user: Future of None}``. Passwords are
        salted and hashed here; only the salted password goes over the wire."""
        self._check_open()
        scram.check_alterations(alterations)
        return scram.alter_credentials(self._client, alterations,
                                       self._timeout(request_timeout))
