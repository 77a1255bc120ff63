"""describe_cluster, describe_topics and elect_leaders: against metadata and confluent-kafka
on every peer, on the 3-broker Apache Kafka cluster, and through a leader election."""

from __future__ import annotations

import signal
import time

import pytest
from admin_support import admin_for, wait_for
from confluent_kafka import KafkaException as ReferenceException
from confluent_kafka import TopicCollection as RefCollection
from confluent_kafka.admin import AdminClient as ReferenceAdmin
from harness import create_topic, unique_topic
from harness.ports import free_port

from kafka_fast import ElectionType, Node, TopicCollection, TopicPartition
from kafka_fast.admin import DescribeClusterResult, NewTopic, TopicDescription
from kafka_fast.errors import KafkaError, KafkaException

pytestmark = pytest.mark.timeout(180)


def _outcome(fut):
    try:
        return fut.result(30)
    except (KafkaException, ReferenceException) as exc:
        return exc.args[0].code()


def _node(n) -> tuple | None:
    return None if n is None else (n.id, n.id_string, n.host, n.port, n.rack)


def _cluster_view(c, controller: bool = True) -> dict:
    """A DescribeClusterResult as plain data. A KRaft cluster names a random broker as
    controller in each answer: ``controller=False`` leaves it out."""
    return {"cluster_id": c.cluster_id,
            "controller": _node(c.controller) if controller else None,
            "nodes": sorted(_node(n) for n in c.nodes),
            "operations": None if c.authorized_operations is None
            else [op.name for op in c.authorized_operations]}


def _topic_view(t) -> dict | int:
    if isinstance(t, int):
        return t
    return {"name": t.name, "topic_id": str(t.topic_id), "internal": t.is_internal,
            "partitions": [(p.id, _node(p.leader), [_node(n) for n in p.replicas],
                            [_node(n) for n in p.isr]) for p in t.partitions],
            "operations": None if t.authorized_operations is None
            else [op.name for op in t.authorized_operations]}


def test_cluster_and_topics_as_confluent_kafka_describes_them(broker):
    topic = unique_topic("described")
    create_topic(broker, topic, 3)
    missing = unique_topic("missing")
    reference = ReferenceAdmin(broker.client_config())
    with admin_for(broker) as admin:
        cluster = admin.describe_cluster().result(30)
        futures = admin.describe_topics(TopicCollection([topic, missing]))
        assert list(futures) == [topic, missing]
        ours = {name: _topic_view(_outcome(f)) for name, f in futures.items()}
        md = admin.list_topics(timeout=20)
    assert isinstance(cluster, DescribeClusterResult)
    assert sorted(n.id for n in cluster.nodes) == sorted(md.brokers)
    assert cluster.cluster_id == md.cluster_id
    assert {(n.id, n.host, n.port) for n in cluster.nodes} == {
        (b.id, b.host, b.port) for b in md.brokers.values()}
    # confluent-kafka 2.16 gets no answer to either call from the mock cluster.
    if broker.kind != "mock":
        assert _cluster_view(cluster) == _cluster_view(reference.describe_cluster().result(30))
        theirs = reference.describe_topics(RefCollection([topic, missing]))
        assert ours == {name: _topic_view(_outcome(f)) for name, f in theirs.items()}
    assert ours[missing] == KafkaError.UNKNOWN_TOPIC_OR_PART
    assert [p[0] for p in ours[topic]["partitions"]] == [0, 1, 2]
    assert {p[0]: (p[1][0], [r[0] for r in p[2]], [r[0] for r in p[3]])
            for p in ours[topic]["partitions"]} == {
        p.id: (p.leader, p.replicas, p.isrs) for p in md.topics[topic].partitions.values()}


def test_authorized_operations_follow_the_users_acls(apache_kafka):
    """alice is allowed everything by ACLs, noaccess nothing: both clients report the same."""
    topic = unique_topic("ops")
    create_topic(apache_kafka, topic, 1)
    seen = {}
    for user in ("alice", "noaccess"):
        view = apache_kafka.as_user(user)
        reference = ReferenceAdmin(view.client_config())
        with admin_for(view) as admin:
            ours = admin.describe_cluster(include_authorized_operations=True).result(30)
            topic_ops = _outcome(admin.describe_topics(
                TopicCollection([topic]), include_authorized_operations=True)[topic])
        theirs = reference.describe_cluster(include_authorized_operations=True).result(30)
        their_topic = _outcome(reference.describe_topics(
            RefCollection([topic]), include_authorized_operations=True)[topic])
        assert _cluster_view(ours) == _cluster_view(theirs)
        assert _topic_view(topic_ops) == _topic_view(their_topic)
        seen[user] = (_cluster_view(ours)["operations"], _topic_view(topic_ops))
    assert "ALTER" in seen["alice"][0] and "DESCRIBE" in seen["alice"][0]
    assert "READ" in seen["alice"][1]["operations"]
    assert seen["noaccess"] == (None, KafkaError.TOPIC_AUTHORIZATION_FAILED)


def test_three_brokers_are_described(apache_cluster):
    with admin_for(apache_cluster) as admin:
        cluster = admin.describe_cluster().result(30)
    assert [n.id for n in cluster.nodes] == [1, 2, 3]
    assert [n.port for n in cluster.nodes] == [apache_cluster.nodes[i].port for i in (1, 2, 3)]
    assert isinstance(cluster.controller, Node) and cluster.controller.id in (1, 2, 3)
    reference = ReferenceAdmin(apache_cluster.client_config())
    assert _cluster_view(cluster, False) == _cluster_view(
        reference.describe_cluster().result(30), False)


def _leader(admin, topic: str) -> int | None:
    desc = admin.describe_topics(TopicCollection([topic]))[topic].result(30)
    assert isinstance(desc, TopicDescription)
    leader = desc.partitions[0].leader
    return None if leader is None else leader.id


def test_preferred_leader_elected_back(apache_cluster):
    topic = unique_topic("elect")
    tp = TopicPartition(topic, 0)
    with admin_for(apache_cluster) as admin:
        admin.create_topics([NewTopic(topic, replica_assignment=[[2, 1, 3]])])[topic].result(30)
        apache_cluster.wait_in_sync(topic)
        assert wait_for(lambda: _leader(admin, topic) == 2, 30, "leader 2")
        # Nothing to elect while the preferred replica leads.
        (result,) = [admin.elect_leaders(ElectionType.PREFERRED, [tp]).result(30)]
        assert [(k.topic, k.partition, v.code()) for k, v in result.items()] == [
            (topic, 0, KafkaError.ELECTION_NOT_NEEDED)]
        assert [k.error.code() for k in result] == [KafkaError.ELECTION_NOT_NEEDED]
        unclean = admin.elect_leaders(ElectionType.UNCLEAN, [tp]).result(30)
        assert [v.code() for v in unclean.values()] == [KafkaError.ELECTION_NOT_NEEDED]

        apache_cluster.stop_node(2, signal.SIGTERM)
        wait_for(lambda: _leader(admin, topic) in (1, 3), 60, "a new leader")
        apache_cluster.start_node(2)
        apache_cluster.wait_for_brokers()
        apache_cluster.wait_in_sync(topic)
        assert _leader(admin, topic) != 2
        reference = ReferenceAdmin(apache_cluster.client_config())  # sees the same leader
        (ref_desc,) = reference.describe_topics(RefCollection([topic])).values()
        assert ref_desc.result(30).partitions[0].leader.id == _leader(admin, topic)

        elected = admin.elect_leaders(ElectionType.PREFERRED, [tp],
                                      operation_timeout=30).result(60)
        assert list(elected.values()) == [None]
        (key,) = elected
        assert (key.topic, key.partition, key.error) == (topic, 0, None)
        assert wait_for(lambda: _leader(admin, topic) == 2, 30, "leader 2 again")
        everywhere = admin.elect_leaders(ElectionType.PREFERRED).result(60)
        assert all(v is None for v in everywhere.values())
        assert tp not in everywhere


def test_cluster_id(apache_kafka):
    reference = ReferenceAdmin(apache_kafka.client_config())
    with admin_for(apache_kafka) as admin:
        cid = admin.cluster_id(timeout=20)
        assert cid == admin.describe_cluster().result(30).cluster_id
    assert cid == reference.cluster_id(timeout=20)
    with admin_for(_Unreachable(free_port())) as admin:
        started = time.monotonic()
        with pytest.raises(KafkaException) as info:
            admin.cluster_id(timeout=0.5)
        assert info.value.args[0].code() == KafkaError._TIMED_OUT
        assert time.monotonic() - started < 5


class _Unreachable:
    """A bootstrap address nothing listens on."""

    def __init__(self, port: int) -> None:
        self.port = port

    def client_config(self, extra: dict | None = None) -> dict:
        return {"bootstrap.servers": f"127.0.0.1:{self.port}", **(extra or {})}


def test_set_sasl_credentials_is_used_by_the_next_login(apache_kafka):
    wrong = apache_kafka.as_user("alice", "SCRAM-SHA-256", password="not-alices")
    with admin_for(wrong, {"request.timeout.ms": 3000, "reconnect.backoff.ms": 100,
                           "reconnect.backoff.max.ms": 500}) as admin:
        with pytest.raises(KafkaException) as info:
            admin.describe_cluster().result(30)
        assert info.value.args[0].code() in (KafkaError._AUTHENTICATION,
                                             KafkaError.SASL_AUTHENTICATION_FAILED)
        admin.set_sasl_credentials("alice", "alice-secret")
        cluster = wait_for(lambda: admin.describe_cluster().result(30), 30, "a login as alice")
        assert cluster.cluster_id == admin.cluster_id()
