"""MetadataManager on its own, against a fake ClusterLink answering with codec-decoded
MetadataResponses."""

from __future__ import annotations

import pytest
from fake_link import FakeLink, answer, through_codec

from kafka_fast.cluster.metadata import MetadataManager
from kafka_fast.config import make_config
from kafka_fast.errors import KafkaError, KafkaException
from kafka_fast.protocol.messages import MetadataRequest, MetadataResponse

R = MetadataResponse
V = 12


def manager(role: str = "consumer", **extra) -> tuple[MetadataManager, FakeLink]:
    conf = make_config({"bootstrap.servers": "127.0.0.1:9", **extra}, role)
    link = FakeLink()
    return MetadataManager(link, conf), link


def metadata(topics: dict[str, list[int]], error: dict[str, int] | None = None) -> R:
    """Brokers 1 and 2; ``topics`` maps a name to its partitions' leaders."""
    return R(
        brokers=[R.MetadataResponseBroker(node_id=1, host="b1.example", port=9092, rack="r1"),
                 R.MetadataResponseBroker(node_id=2, host="b2.example", port=9093)],
        cluster_id="cluster-A", controller_id=2,
        topics=[R.MetadataResponseTopic(
            name=name, error_code=(error or {}).get(name, 0),
            partitions=[R.MetadataResponsePartition(
                partition_index=i, leader_id=leader, leader_epoch=7 + i,
                replica_nodes=[1, 2], isr_nodes=[1, 2])
                for i, leader in enumerate(leaders)])
            for name, leaders in topics.items()])


def sent_topics(link: FakeLink, i: int = -1) -> list[str] | None:
    req = through_codec(link.sent[i].request, V)
    return None if req.topics is None else [t.name for t in req.topics]


def test_refresh_installs_the_decoded_view():
    mgr, link = manager(**{"request.timeout.ms": 5000, "metadata.max.age.ms": 60000})
    fut = mgr.request(["orders"], False)
    assert link.started == 1 and not link.sent  # sent on the I/O thread only
    link.loop.run()
    assert len(link.sent) == 1 and link.sent[0].node_id is None  # any broker
    assert isinstance(link.sent[0].request, MetadataRequest)
    assert sent_topics(link) == ["orders"]
    assert link.sent[0].request.allow_auto_topic_creation is False  # consumer
    assert 4900 <= link.sent[0].timeout_ms <= 5000
    answer(link.sent[0], metadata({"orders": [1, 2, -1], "other": [2]}), V, node_id=2)
    link.loop.run()
    view = fut.result(0)
    assert link.views == [view] and link.cluster is view
    assert {n: (b.host, b.port, b.rack) for n, b in view.brokers.items()} == {
        1: ("b1.example", 9092, "r1"), 2: ("b2.example", 9093, None)}
    assert (view.cluster_id, view.controller_id, view.source_node) == ("cluster-A", 2, 2)
    assert [view.leader("orders", p) for p in range(3)] == [1, 2, None]
    assert view.leader_epoch("orders", 1) == 8
    assert view.partitions_for("other") == [0]
    # A leaderless partition: asked again after a backoff; the periodic refresh is armed.
    delays = sorted(t.delay for t in link.loop.live_timers())
    assert len(delays) == 2 and 0.08 <= delays[0] <= 0.12 and delays[1] == 60.0
    follow_up = min(link.loop.live_timers(), key=lambda t: t.delay)
    link.loop.fire(follow_up)
    assert sent_topics(link) == ["orders"] and len(link.sent) == 2


def test_requests_coalesce_while_one_is_in_flight():
    mgr, link = manager()
    first = mgr.request(["a"], False)
    link.loop.run()
    again = mgr.request(["a"], False)  # covered by the request in flight
    other = mgr.request(["b"], False)  # waits for the next one
    link.loop.run()
    assert len(link.sent) == 1
    answer(link.sent[0], metadata({"a": [1]}), V, node_id=1)
    link.loop.run()
    assert first.result(0) is again.result(0)
    assert first.result(0).leader("a", 0) == 1 and not other.done()
    assert len(link.sent) == 2 and sent_topics(link) == ["b"]
    answer(link.sent[1], metadata({"b": [2, 1]}), V, node_id=1)
    link.loop.run()
    view = other.result(0)
    assert [view.leader("b", p) for p in (0, 1)] == [2, 1]
    assert view.leader("a", 0) == 1  # kept from the previous view
    assert mgr.tracked == {"a", "b"}
    # The periodic refresh asks for every topic asked for so far.
    periodic = [t for t in link.loop.live_timers() if t.delay == 300.0]
    assert len(periodic) == 1
    link.loop.fire(periodic[0])
    assert sent_topics(link) == ["a", "b"]


@pytest.mark.parametrize(("given", "interval"), [
    ({}, 300.0),
    ({"topic.metadata.refresh.interval.ms": 1000}, 1.0),
    ({"metadata.max.age.ms": 4000}, 4.0),
    ({"topic.metadata.refresh.interval.ms": 2000, "metadata.max.age.ms": 1500}, 1.5),
    ({"topic.metadata.refresh.interval.ms": 1500, "metadata.max.age.ms": 9000}, 1.5),
    ({"topic.metadata.refresh.interval.ms": -1}, None),
    ({"topic.metadata.refresh.interval.ms": -1, "metadata.max.age.ms": 5000}, 5.0),
])
def test_periodic_refresh_interval(given, interval):
    mgr, link = manager("producer", **given)
    assert mgr.refresh_interval == interval
    mgr.start_periodic()  # no topic in use yet: the broker list, at most every 10 s
    expected = [] if interval is None else [max(interval, 10.0)]
    assert [t.delay for t in link.loop.live_timers()] == expected
    mgr.request(["a"], False)
    link.loop.run()
    answer(link.sent[0], metadata({"a": [1]}), V, node_id=1)
    link.loop.run()
    # a topic in use: every interval, asking for it
    assert [t.delay for t in link.loop.live_timers()] == ([] if interval is None
                                                          else [interval])
    if interval is not None:
        link.loop.fire(link.loop.live_timers()[0])
        assert sent_topics(link) == ["a"] and len(link.sent) == 2


def test_transport_error_is_retried_after_a_backoff():
    mgr, link = manager(role="producer")
    fut = mgr.request(["t"], False)
    link.loop.run()
    assert link.sent[0].request.allow_auto_topic_creation is True  # producer
    link.sent[0].future.set_exception(KafkaException(KafkaError.of(KafkaError._TRANSPORT, "down")))
    link.loop.run()
    assert not fut.done() and len(link.sent) == 1
    (retry,) = link.loop.live_timers()
    assert 0.08 <= retry.delay <= 0.12
    link.loop.fire(retry)
    assert len(link.sent) == 2 and sent_topics(link) == ["t"]
    answer(link.sent[1], metadata({"t": [1]}), V, node_id=1)
    link.loop.run()
    assert fut.result(0).leader("t", 0) == 1


@pytest.mark.parametrize("code", [KafkaError._AUTHENTICATION, KafkaError._SSL])
def test_terminal_error_fails_at_once(code):
    mgr, link = manager()
    fut = mgr.request(None, True)
    link.loop.run()
    assert sent_topics(link) is None  # all topics
    link.sent[0].future.set_exception(KafkaException(KafkaError.of(code, "no")))
    link.loop.run()
    assert fut.exception(0).args[0].code() == code
    assert link.views == [] and not link.loop.live_timers()


def test_topic_error_is_reported_in_the_view():
    mgr, link = manager()
    fut = mgr.request(["gone"], False)
    link.loop.run()
    answer(link.sent[0], metadata({"gone": []},
                                  {"gone": KafkaError.UNKNOWN_TOPIC_OR_PART}), V, node_id=1)
    link.loop.run()
    info = fut.result(0).topics["gone"]
    assert info.error == KafkaError.UNKNOWN_TOPIC_OR_PART and info.partitions == {}


def test_fail_all_fails_waiting_requests():
    mgr, link = manager()
    inflight = mgr.request(["x"], False)
    link.loop.run()
    queued = mgr.request(["y"], False)
    link.loop.run()
    exc = KafkaException(KafkaError.of(KafkaError._DESTROY, "closed"))
    mgr.fail_all(exc)
    assert inflight.exception(0) is exc and queued.exception(0) is exc
