"""Follower fetching (KIP-392) in the fetcher on its own: where each partition is fetched
from, what each node's fetch session holds, and how errors and expiry send a partition back
to its leader. The client is a stand-in recording every Fetch; answers are made by the
protocol codec. tests/integration/test_follower_fetching.py runs the same on Apache Kafka.
"""

from __future__ import annotations

from concurrent.futures import Future

from kafka_fast.cluster.view import Broker, ClusterView, PartitionInfo, TopicInfo
from kafka_fast.config import make_config
from kafka_fast.consumer.fetch_state import FetchState
from kafka_fast.consumer.fetcher import Fetcher
from kafka_fast.consumer.state import NEED_NONE, AppPosition, FetchCursor
from kafka_fast.errors import KafkaError, KafkaException
from kafka_fast.net.lanes import Lane
from kafka_fast.protocol import messages as m
from kafka_fast.records import encode_batch

V = 12
R = m.FetchResponse
LEADER, FOLLOWER, OTHER = 1, 3, 2
EPOCH = 5


def view(replicas: tuple[int, ...] = (1, 2, 3), brokers=(1, 2, 3)) -> ClusterView:
    parts = {p: PartitionInfo(p, LEADER, EPOCH, replicas, replicas) for p in (0, 1)}
    return ClusterView(brokers={b: Broker(b, "127.0.0.1", 9000 + b) for b in brokers},
                       topics={"t": TopicInfo("t", None, None, parts)})


class FakeClient:
    """What the fetcher uses of KafkaClient; Fetches are recorded, answered by the test."""

    def __init__(self) -> None:
        self.cluster = view()
        self.sent: list[tuple[int, m.FetchRequest, Future]] = []
        self.down: set[int] = set()
        self.metadata_requests: list[list[str]] = []

    def leader(self, topic: str, partition: int) -> int | None:
        return self.cluster.leader(topic, partition)

    def node_ready(self, node: int, lane: Lane = Lane.DEFAULT) -> bool:
        return node not in self.down

    def node_unreachable(self, node: int, lane: Lane = Lane.DEFAULT) -> bool:
        return node in self.down

    def send(self, node: int, request, *, timeout_ms=None, lane=Lane.DEFAULT) -> Future:
        assert lane == Lane.FETCH
        req = m.FetchRequest.decode(request.build(V).encode(V), V)
        fut: Future = Future()
        self.sent.append((node, req, fut))
        return fut

    def request_metadata(self, topics=None) -> Future:
        self.metadata_requests.append(topics)
        fut: Future = Future()
        fut.set_result(None)
        return fut

    def wakeup(self) -> None:
        pass

    def call_later(self, delay, fn) -> None:
        pass

    def take(self) -> list[tuple[int, m.FetchRequest, Future]]:
        out, self.sent = self.sent, []
        return out


def partitions(req: m.FetchRequest) -> dict[tuple[str, int], tuple[int, int]]:
    return {(t.topic, p.partition): (p.fetch_offset, p.current_leader_epoch)
            for t in req.topics for p in t.partitions}


def forgotten(req: m.FetchRequest) -> set[tuple[str, int]]:
    return {(f.topic, p) for f in req.forgotten_topics_data for p in f.partitions}


def answer(fut: Future, session_id: int, data: dict, replica: dict | None = None,
           errors: dict | None = None) -> None:
    """Answer a Fetch: ``data`` maps partitions of "t" to (base offset, record count)."""
    replica, errors = replica or {}, errors or {}
    pds = []
    for p in sorted(set(data) | set(errors) | set(replica)):
        base, n = data.get(p, (0, 0))
        records = encode_batch([b"v%d" % (base + i) for i in range(n)], None,
                               timestamps=[1000] * n, base_offset=base) if n else b""
        pds.append(R.PartitionData(
            partition_index=p, error_code=errors.get(p, 0), high_watermark=100,
            last_stable_offset=100, log_start_offset=0, aborted_transactions=[],
            preferred_read_replica=replica.get(p, -1), records=records))
    resp = R(throttle_time_ms=0, error_code=0, session_id=session_id,
             responses=[R.FetchableTopicResponse(topic="t", partitions=pds)])
    fut.set_result(R.decode(resp.encode(V), V))


def setup(rack: str = "rack-c", **conf):
    cfg = make_config({"bootstrap.servers": "127.0.0.1:1", "group.id": "g",
                       "client.rack": rack, "fetch.error.backoff.ms": 5000, **conf},
                      "consumer")
    client = FakeClient()
    state = FetchState()
    f = Fetcher(state, client, cfg, offsets=None)  # type: ignore[arg-type]
    parts = [FetchCursor(AppPosition("t", p), 0) for p in (0, 1)]
    with state.lock:
        for ps in parts:
            ps.set_position(0, -1)
            state.parts[(ps.topic, ps.partition)] = ps.app
            state.cursors[(ps.topic, ps.partition)] = ps
    return f, client, state, parts


def follow_replica(f: Fetcher, client: FakeClient) -> None:
    """First Fetch to the leader (both partitions); it names FOLLOWER for partition 0 and
    answers partition 1 with records; the session with the leader is established."""
    f.tick()
    (node, req, fut), = client.take()
    assert node == LEADER and req.rack_id == "rack-c"
    assert partitions(req) == {("t", 0): (0, EPOCH), ("t", 1): (0, EPOCH)}
    answer(fut, 11, {1: (0, 2)}, replica={0: FOLLOWER})


def test_a_named_replica_is_fetched_from_and_leaves_the_leaders_session():
    f, client, state, (p0, p1) = setup()
    follow_replica(f, client)
    sent = {node: (req, fut) for node, req, fut in client.take()}
    # Partition 0 goes to the follower (same position, the leader's epoch); partition 1
    # stays with the leader, whose session forgets partition 0.
    assert sorted(sent) == [LEADER, FOLLOWER]
    req, fut = sent[FOLLOWER]
    assert partitions(req) == {("t", 0): (0, EPOCH)} and req.session_id == 0
    lreq, lfut = sent[LEADER]
    assert lreq.session_id == 11 and forgotten(lreq) == {("t", 0)}
    assert partitions(lreq) == {("t", 1): (2, EPOCH)}
    with state.lock:
        assert p0.read_replica == FOLLOWER and p1.read_replica == -1
        assert [(ch.app.partition, ch.count) for ch in state.ready] == [(1, 2)]

    # The follower serves the records; the next Fetch goes to it again.
    answer(fut, 22, {0: (0, 4)})
    (node, req, fut), = client.take()
    assert node == FOLLOWER and partitions(req) == {("t", 0): (4, EPOCH)}
    assert [(ch.app.partition, ch.count) for ch in state.ready] == [(1, 2), (0, 4)]
    assert p0.fetch_offset == 4 and p0.need == NEED_NONE


def test_offset_out_of_range_from_a_follower_goes_to_the_leader_without_a_reset():
    f, client, state, (p0, p1) = setup()
    follow_replica(f, client)
    sent = {node: (req, fut) for node, req, fut in client.take()}
    answer(sent[FOLLOWER][1], 22, {}, errors={0: KafkaError.OFFSET_OUT_OF_RANGE})
    with state.lock:
        assert p0.need == NEED_NONE and p0.fetch_offset == 0 and p0.read_replica == -1
        assert p0.backoff_until == 0.0
    assert client.take() == []  # the leader's Fetch is still out
    answer(sent[LEADER][1], 11, {})
    (node, req, fut), = client.take()
    # Back in the leader's session, at the same position; no rack for a while.
    assert node == LEADER and req.session_id == 11 and req.rack_id == ""
    assert partitions(req) == {("t", 0): (0, EPOCH)}
    assert not forgotten(req)

    # From the leader, out of range is a reset as before.
    answer(fut, 11, {}, errors={0: KafkaError.OFFSET_OUT_OF_RANGE})
    with state.lock:
        assert p0.need != NEED_NONE


def test_errors_and_failures_of_the_follower_go_back_to_the_leader():
    for error in (KafkaError.NOT_LEADER_OR_FOLLOWER, KafkaError.REPLICA_NOT_AVAILABLE,
                  KafkaError.OFFSET_NOT_AVAILABLE, KafkaError.FENCED_LEADER_EPOCH,
                  KafkaError.UNKNOWN_LEADER_EPOCH, None):
        f, client, state, (p0, p1) = setup()
        follow_replica(f, client)
        sent = {node: (req, fut) for node, req, fut in client.take()}
        fut = sent[FOLLOWER][1]
        if error is None:
            fut.set_exception(KafkaException(KafkaError.of(KafkaError._TRANSPORT)))
        else:
            answer(fut, 22, {}, errors={0: error})
        with state.lock:
            assert p0.read_replica == -1 and p0.backoff_until == 0.0, error
            assert p0.fetch_offset == 0 and p0.need == NEED_NONE
        answer(sent[LEADER][1], 11, {})
        (node, req, _), = client.take()
        assert node == LEADER and ("t", 0) in partitions(req), error
        assert ["t"] in client.metadata_requests


def test_an_unreachable_follower_sends_its_partitions_to_the_leader():
    f, client, state, (p0, p1) = setup()
    follow_replica(f, client)
    sent = {node: (req, fut) for node, req, fut in client.take()}
    client.down.add(FOLLOWER)  # its connection fails after this answer
    answer(sent[FOLLOWER][1], 22, {0: (0, 1)})
    assert client.take() == []
    with state.lock:
        assert p0.read_replica == -1 and p0.backoff_until == 0.0
    answer(sent[LEADER][1], 11, {})
    (node, req, _), = client.take()
    assert node == LEADER and partitions(req)[("t", 0)] == (1, EPOCH)


def test_the_preference_expires_with_metadata_max_age_and_with_the_replica():
    f, client, state, (p0, p1) = setup(**{"metadata.max.age.ms": 1000})
    follow_replica(f, client)
    sent = {node: (req, fut) for node, req, fut in client.take()}
    with state.lock:
        p0.read_replica_until -= 2.0  # metadata.max.age.ms has passed
    answer(sent[FOLLOWER][1], 22, {0: (0, 1)})
    answer(sent[LEADER][1], 11, {})
    (node, req, fut), = client.take()
    assert node == LEADER and partitions(req)[("t", 0)] == (1, EPOCH)
    assert req.rack_id == "rack-c"

    # The leader names the follower again, then metadata no longer lists it as a replica.
    answer(fut, 11, {}, replica={0: FOLLOWER})
    sent = {node: (req, fut) for node, req, fut in client.take()}
    assert set(sent) == {FOLLOWER, LEADER}
    client.cluster = view(replicas=(1, 2))
    answer(sent[FOLLOWER][1], 22, {})
    assert client.take() == []  # dropped, waiting for the leader's Fetch to come back
    assert p0.read_replica == -1 and ["t"] in client.metadata_requests
    answer(sent[LEADER][1], 11, {})
    (node, req, _), = client.take()
    assert node == LEADER and ("t", 0) in partitions(req)


def test_without_a_rack_nothing_changes():
    f, client, state, (p0, p1) = setup(rack="")
    f.tick()
    (node, req, fut), = client.take()
    assert node == LEADER and req.rack_id == ""
    answer(fut, 11, {0: (0, 1), 1: (0, 1)})
    (node, req, _), = client.take()
    assert node == LEADER
    assert p0.read_replica == p1.read_replica == -1
