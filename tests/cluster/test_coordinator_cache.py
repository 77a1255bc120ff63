"""CoordinatorCache on its own, against a fake ClusterLink."""

from __future__ import annotations

import time

from fake_link import FakeLink, answer, through_codec

from kafka_fast.cluster import GROUP, TRANSACTION
from kafka_fast.cluster.coordinators import CoordinatorCache
from kafka_fast.config import make_config
from kafka_fast.errors import KafkaError
from kafka_fast.protocol.messages import FindCoordinatorRequest, FindCoordinatorResponse

F = FindCoordinatorResponse


def cache(versions: dict[int, int]) -> tuple[CoordinatorCache, FakeLink]:
    link = FakeLink(node=3, versions=versions)
    conf = make_config({"bootstrap.servers": "127.0.0.1:9"}, "consumer")
    return CoordinatorCache(link, conf), link


def built(link: FakeLink, i: int, version: int) -> FindCoordinatorRequest:
    return through_codec(link.sent[i].request.build(version), version)


def test_batched_lookup_learns_the_coordinators():
    coords, link = cache({FindCoordinatorRequest.API_KEY: 4})
    a = coords.lookup(GROUP, "g1")
    b = coords.lookup(GROUP, "g2")
    assert link.started == 2
    link.loop.run()
    assert len(link.sent) == 1 and link.sent[0].node_id == 3  # the node pick_node chose
    req = built(link, 0, 4)
    assert (req.key_type, req.coordinator_keys) == (GROUP, ["g1", "g2"])
    answer(link.sent[0], F(coordinators=[
        F.Coordinator(key="g1", node_id=5, host="c5.example", port=9105),
        F.Coordinator(key="g2", node_id=6, host="c6.example", port=9106)]), 4, node_id=3)
    link.loop.run()
    assert (a.result(0), b.result(0)) == (5, 6)
    assert link.learned == [(5, "c5.example", 9105), (6, "c6.example", 9106)]
    assert coords.lookup(GROUP, "g1").result(0) == 5  # cached: nothing sent
    assert len(link.sent) == 1
    coords.invalidate(GROUP, "g1")
    coords.lookup(GROUP, "g1")
    link.loop.run()
    assert len(link.sent) == 2


def test_old_broker_gets_one_key_per_request_and_retries_not_available():
    coords, link = cache({FindCoordinatorRequest.API_KEY: 3})
    fut = coords.lookup(TRANSACTION, "tx")
    link.loop.run()
    req = built(link, 0, 3)
    assert (req.key, req.key_type) == ("tx", TRANSACTION)
    answer(link.sent[0], F(error_code=KafkaError.COORDINATOR_NOT_AVAILABLE, node_id=-1,
                           host="", port=-1), 3, node_id=3)
    link.loop.run()
    assert not fut.done()
    (timer,) = link.loop.live_timers()
    assert 0.08 <= timer.delay <= 0.12
    time.sleep(timer.delay)  # the lookup is due again only then
    link.loop.fire(timer)
    assert len(link.sent) == 2
    answer(link.sent[1], F(node_id=7, host="c7.example", port=9107), 3, node_id=3)
    link.loop.run()
    assert fut.result(0) == 7 and link.learned == [(7, "c7.example", 9107)]
