"""Consumer groups: list them (ListGroups on every broker), describe them
(ConsumerGroupDescribe, or DescribeGroups for classic groups) and delete them (DeleteGroups),
at each group's coordinator. Result types follow confluent-kafka's names and fields."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from concurrent.futures import Future
from functools import partial
from typing import Any

from ..cluster.listing import BrokerMetadata, GroupMember, GroupMetadata
from ..consumer.consumer_protocol import decode_assignment
from ..errors import KafkaError, KafkaException
from ..net.client import KafkaClient
from ..net.request import settle_all
from ..protocol import messages as m
from ..protocol.versioned import versioned
from ..topic_partition import TopicPartition
from .acls import AclOperation, authorized_operations
from .calls import coordinator_call, error_of, exception_error
from .model import ConsumerGroupState, ConsumerGroupType, Node, to_enum

#: ConsumerGroupDescribe answers after which the group is described as a classic one.
_CLASSIC_FALLBACK = frozenset({KafkaError.GROUP_ID_NOT_FOUND, KafkaError._UNSUPPORTED_FEATURE,
                               KafkaError.UNSUPPORTED_VERSION})


class ConsumerGroupListing:
    """One group a broker coordinates (``list_consumer_groups``)."""

    def __init__(self, group_id: str, is_simple_consumer_group: bool,
                 state: ConsumerGroupState | str | int | None = None,
                 type: ConsumerGroupType | str | int | None = None) -> None:
        self.group_id = group_id
        self.is_simple_consumer_group = is_simple_consumer_group
        if state is not None:
            self.state = to_enum(state, ConsumerGroupState)
        if type is not None:
            self.type = to_enum(type, ConsumerGroupType)

    def __repr__(self) -> str:
        return (f"ConsumerGroupListing({self.group_id!r}, "
                f"state={getattr(self, 'state', None)}, type={getattr(self, 'type', None)})")


class ListConsumerGroupsResult:
    """Every group found (``valid``) and a KafkaError for each broker that could not be
    asked (``errors``)."""

    def __init__(self, valid: list[ConsumerGroupListing] | None = None,
                 errors: list[KafkaError] | None = None) -> None:
        self.valid = valid
        self.errors = errors


class MemberAssignment:
    """The partitions assigned to a group member."""

    def __init__(self, topic_partitions: list[TopicPartition] | None) -> None:
        self.topic_partitions = topic_partitions or []


class MemberDescription:
    """A group member: ids, host, current ``assignment`` and, for KIP-848 groups, the
    ``target_assignment`` the member is moving to (None for classic groups)."""

    def __init__(self, member_id: str, client_id: str, host: str,
                 assignment: MemberAssignment, group_instance_id: str | None = None,
                 target_assignment: MemberAssignment | None = None) -> None:
        self.member_id = member_id
        self.client_id = client_id
        self.host = host
        self.assignment = assignment
        self.target_assignment = target_assignment
        self.group_instance_id = group_instance_id


class ConsumerGroupDescription:
    """A described group: members, assignor, state, type, coordinator and (when asked for)
    the operations this client may perform on it."""

    def __init__(self, group_id: str, is_simple_consumer_group: bool,
                 members: list[MemberDescription], partition_assignor: str,
                 state: ConsumerGroupState | str | int | None, coordinator: Node,
                 authorized_operations: Sequence[AclOperation | str | int] | None = None,
                 type: ConsumerGroupType | str | int = ConsumerGroupType.UNKNOWN
                 ) -> None:
        self.group_id = group_id
        self.is_simple_consumer_group = is_simple_consumer_group
        self.members = members
        self.authorized_operations = ([to_enum(op, AclOperation) for op in
                                       authorized_operations] if authorized_operations
                                      else None)
        self.partition_assignor = partition_assignor
        if state is not None:
            self.state = to_enum(state, ConsumerGroupState)
        if type is not None:
            self.type = to_enum(type, ConsumerGroupType)
        self.coordinator = coordinator

    def __repr__(self) -> str:
        return (f"ConsumerGroupDescription({self.group_id!r}, {len(self.members)} members, "
                f"state={getattr(self, 'state', None)}, type={getattr(self, 'type', None)})")


def node_of(client: KafkaClient, node_id: int) -> Node:
    """The Node for a broker id, with its address from the latest metadata."""
    b = client.cluster.brokers.get(node_id)
    if b is None:
        return Node(node_id, "", -1)
    return Node(b.node_id, b.host, b.port, b.rack)


# -- listing ---------------------------------------------------------------------------------

def each_broker(client: KafkaClient, make: Callable[[], Any], timeout: float) -> Future:
    """Send ``make()`` to every broker in fresh metadata; a Future of ``{node: response |
    KafkaError}`` once all answered or failed (_TIMED_OUT after ``timeout`` seconds)."""
    out: Future = Future()
    ms = max(1, int(timeout * 1000))

    def ask(view_fut: Future) -> None:
        if view_fut.exception() is not None:
            settle_all([out], error=view_fut.exception())
            return
        nodes = sorted(view_fut.result().brokers)
        answers: dict[int, Any] = {}
        if not nodes:
            settle_all([out], answers)
            return

        def answered(node: int, fut: Future) -> None:
            exc = fut.exception()
            answers[node] = fut.result() if exc is None else exception_error(exc)
            if len(answers) == len(nodes):
                settle_all([out], dict(sorted(answers.items())))

        def on_loop(node: int) -> Callable[[Future], None]:
            return lambda f: client.loop.call_soon(lambda: answered(node, f))

        for node in nodes:
            fut = client.send(node, make(), timeout_ms=ms)
            fut.add_done_callback(on_loop(node))

    def expire() -> None:
        settle_all([out], error=KafkaException(KafkaError.of(
            KafkaError._TIMED_OUT, f"the brokers did not all answer within {timeout:g}s")))

    client.request_metadata().add_done_callback(ask)
    client.call_later(timeout, expire)
    return out


def list_consumer_groups(client: KafkaClient, timeout: float,
                         states: set[ConsumerGroupState] | None = None,
                         types: set[ConsumerGroupType] | None = None,
                         share: bool = False) -> Future:
    """ListGroups on every broker (filtered by state and type there, and here for brokers
    too old to filter); a Future of ListConsumerGroupsResult. Share groups are listed with
    ``share`` alone (their type UNKNOWN), as confluent-kafka leaves them out."""
    state_names = sorted(_BROKER_STATE_NAMES[s] for s in states or ()
                         if s in _BROKER_STATE_NAMES)
    type_names = ["share"] if share else sorted(
        t.broker_name() for t in types or () if t != ConsumerGroupType.UNKNOWN)

    def make() -> Any:
        return versioned(m.ListGroupsRequest, lambda: m.ListGroupsRequest(
            states_filter=state_names, types_filter=type_names))

    out: Future = Future()

    def collect(fut: Future) -> None:
        if fut.exception() is not None:
            settle_all([out], error=fut.exception())
            return
        valid, errors = [], []
        for node, resp in fut.result().items():
            if isinstance(resp, KafkaError):
                errors.append(KafkaError.of(resp.code(), f"broker {node}: {resp.str()}"))
                continue
            if resp.error_code:
                errors.append(KafkaError.of(resp.error_code, f"broker {node}"))
                continue
            for g in resp.groups:
                if _is_share(g) != share:
                    continue
                listing = ConsumerGroupListing(
                    g.group_id, g.protocol_type == "",
                    ConsumerGroupState.from_broker(getattr(g, "group_state", None)),
                    _group_type(g))
                if states and listing.state not in states:
                    continue
                if types and listing.type not in types:
                    continue
                valid.append(listing)
        valid.sort(key=lambda g: g.group_id)
        settle_all([out], ListConsumerGroupsResult(valid, errors))

    each_broker(client, make, timeout).add_done_callback(collect)
    return out


_BROKER_STATE_NAMES = {ConsumerGroupState.PREPARING_REBALANCING: "PreparingRebalance",
                       ConsumerGroupState.COMPLETING_REBALANCING: "CompletingRebalance",
                       ConsumerGroupState.STABLE: "Stable", ConsumerGroupState.DEAD: "Dead",
                       ConsumerGroupState.EMPTY: "Empty"}


def _is_share(g: Any) -> bool:
    """A listed group is a share group (KIP-932)."""
    return (getattr(g, "group_type", None) or "").lower() == "share" or g.protocol_type == "share"


def _group_type(g: Any) -> ConsumerGroupType:
    """A listed group's type: the broker's (ListGroups v5+), else classic when it speaks
    the classic consumer protocol."""
    named = getattr(g, "group_type", None)
    if named:
        return ConsumerGroupType.from_broker(named)
    return ConsumerGroupType.CLASSIC if g.protocol_type in ("consumer", "") \
        else ConsumerGroupType.UNKNOWN


# -- describing --------------------------------------------------------------------------------

def describe_consumer_group(client: KafkaClient, group_id: str, timeout: float,
                            include_authorized_operations: bool) -> Future:
    """ConsumerGroupDescribe at the coordinator; for classic groups (and brokers without
    it) DescribeGroups. A Future of ConsumerGroupDescription."""
    out: Future = Future()
    deadline = time.monotonic() + timeout
    ops = include_authorized_operations

    def new_protocol(resp: Any, node: int) -> Any:
        g = resp.groups[0]
        err = error_of(g.error_code, g.error_message)
        if err is not None:
            return err
        members = [MemberDescription(
            x.member_id, x.client_id, x.client_host, _assignment(x.assignment),
            group_instance_id=x.instance_id,
            target_assignment=_assignment(x.target_assignment)) for x in g.members]
        return ConsumerGroupDescription(
            g.group_id, False, members, g.assignor_name,
            ConsumerGroupState.from_broker(g.group_state), node_of(client, node),
            authorized_operations(g.authorized_operations) if ops else None,
            ConsumerGroupType.CONSUMER)

    def classic(resp: Any, node: int) -> Any:
        return _classic_description(client, resp.groups[0], node, ops)

    def first_done(fut: Future) -> None:
        exc = fut.exception()
        if exc is None:
            settle_all([out], fut.result())
            return
        if exception_error(exc).code() not in _CLASSIC_FALLBACK:
            settle_all([out], error=exc)
            return
        second = coordinator_call(
            client, group_id,
            lambda: versioned(m.DescribeGroupsRequest, lambda: m.DescribeGroupsRequest(
                groups=[group_id], include_authorized_operations=ops)),
            classic, max(0.001, deadline - time.monotonic()))
        second.add_done_callback(lambda f: settle_all(
            [out], None if f.exception() else f.result(), f.exception()))

    coordinator_call(
        client, group_id,
        lambda: m.ConsumerGroupDescribeRequest(group_ids=[group_id],
                                               include_authorized_operations=ops),
        new_protocol, timeout).add_done_callback(first_done)
    return out


def _assignment(a: Any) -> MemberAssignment:
    if a is None:
        return MemberAssignment([])
    return MemberAssignment([TopicPartition(t.topic_name, p)
                             for t in a.topic_partitions for p in t.partitions])


def _classic_description(client: KafkaClient, g: Any, node: int, ops: bool) -> Any:
    err = error_of(g.error_code)
    if err is not None:
        return err
    members = []
    for x in g.members:
        tps = []
        if g.protocol_type == "consumer" and x.member_assignment:
            tps = [TopicPartition(t, p) for t, ps in decode_assignment(x.member_assignment)
                   .items() for p in ps]
        members.append(MemberDescription(
            x.member_id, x.client_id, x.client_host, MemberAssignment(tps),
            group_instance_id=getattr(x, "group_instance_id", None)))
    return ConsumerGroupDescription(
        g.group_id, g.protocol_type == "", members, g.protocol_data,
        ConsumerGroupState.from_broker(g.group_state), node_of(client, node),
        authorized_operations(getattr(g, "authorized_operations", None)) if ops else None,
        ConsumerGroupType.CLASSIC)


def delete_consumer_group(client: KafkaClient, group_id: str, timeout: float) -> Future:
    """DeleteGroups at the coordinator; a Future of None."""

    def parse(resp: Any, _node: int) -> Any:
        (r,) = [r for r in resp.results if r.group_id == group_id]
        return error_of(r.error_code)

    return coordinator_call(
        client, group_id,
        lambda: versioned(m.DeleteGroupsRequest,
                          lambda: m.DeleteGroupsRequest(groups_names=[group_id])),
        parse, timeout)


# -- list_groups() (confluent-kafka's deprecated GroupMetadata form) ---------------------------

def group_metadata(client: KafkaClient, group: str | None, timeout: float
                   ) -> list[GroupMetadata]:
    """Every group (or ``group``) as GroupMetadata: ListGroups on each broker, then
    DescribeGroups there. Blocks up to ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    if group is not None:
        found: Future = coordinator_call(
            client, group,
            lambda: versioned(m.DescribeGroupsRequest,
                              lambda: m.DescribeGroupsRequest(groups=[group])),
            lambda resp, node: (node, resp.groups[0]), timeout)
        node, g = _wait(found, deadline)
        return [_group_metadata(client, node, g)]
    listed = _wait(each_broker(client, lambda: versioned(
        m.ListGroupsRequest, lambda: m.ListGroupsRequest()), timeout), deadline)
    described: dict[int, Future] = {}
    for node, resp in listed.items():
        if isinstance(resp, KafkaError) or resp.error_code or not resp.groups:
            continue
        names = [g.group_id for g in resp.groups]
        ms = max(1, int((deadline - time.monotonic()) * 1000))
        described[node] = client.send(node, versioned(
            m.DescribeGroupsRequest, partial(m.DescribeGroupsRequest, groups=names)),
            timeout_ms=ms)
    out = []
    for node, fut in described.items():
        for g in _wait(fut, deadline).groups:
            out.append(_group_metadata(client, node, g))
    return out


def _wait(fut: Future, deadline: float) -> Any:
    try:
        return fut.result(max(0.0, deadline - time.monotonic()))
    except TimeoutError:
        raise KafkaException(KafkaError.of(KafkaError._TIMED_OUT,
                                        "groups not described in time")) from None


def _group_metadata(client: KafkaClient, node: int, g: Any) -> GroupMetadata:
    md = GroupMetadata()
    b = node_of(client, node)
    md.broker = BrokerMetadata(b.id, b.host, b.port)
    md.id = g.group_id
    md.error = error_of(g.error_code)
    md.state = g.group_state
    md.protocol_type = g.protocol_type
    md.protocol = g.protocol_data
    for x in g.members:
        member = GroupMember()
        member.id = x.member_id
        member.client_id = x.client_id
        member.client_host = x.client_host
        member.metadata = bytes(x.member_metadata)
        member.assignment = bytes(x.member_assignment)
        md.members.append(member)
    return md
