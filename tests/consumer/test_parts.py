"""The consumer's parts on their own, without a Consumer around them: the position validator
with answers made by the protocol codec, and each group member against a real broker's
coordinator, reporting to a recording event sink."""

from __future__ import annotations

import time
from concurrent.futures import Future

import pytest
from harness import create_topic, free_port, unique_topic

from kafka_fast import KafkaError
from kafka_fast.config import make_config
from kafka_fast.consumer.assignors import make_assignors
from kafka_fast.consumer.fetch_state import Chunk, FetchState
from kafka_fast.consumer.group import ClassicGroup
from kafka_fast.consumer.group_kip848 import ConsumerGroupMember
from kafka_fast.consumer.state import NEED_NONE, NEED_RESET, NEED_VALIDATE, PartitionState
from kafka_fast.consumer.validation import Validator
from kafka_fast.net import KafkaClient
from kafka_fast.protocol import messages as m
from kafka_fast.topic_partition import OFFSET_BEGINNING

R = m.OffsetForLeaderEpochResponse


def answer(topic: str, partition: int, epoch: int, end_offset: int, error: int = 0) -> Future:
    fut: Future = Future()
    fut.set_result(R(topics=[R.OffsetForLeaderTopicResult(topic=topic, partitions=[
        R.EpochEndOffset(partition=partition, error_code=error, leader_epoch=epoch,
                         end_offset=end_offset)])]))
    return fut


@pytest.fixture
def idle_client():
    conf = make_config({"bootstrap.servers": f"127.0.0.1:{free_port()}", "group.id": "g"},
                       "consumer")
    client = KafkaClient(conf).start()
    yield client
    client.close()


def validating(state: FetchState, position: int, fetched_to: int) -> PartitionState:
    """A partition at ``position`` (epoch 2) with records fetched up to ``fetched_to``,
    queued but not delivered, now waiting for validation under leader epoch 5."""
    ps = PartitionState("t", 0)
    ps.set_position(position, 2)
    ps.fetch_offset, ps.fetch_epoch = fetched_to, 2
    ps.need = NEED_VALIDATE
    ps.resolving = True
    with state.lock:
        state.parts[("t", 0)] = ps
    state.enqueue([Chunk(ps, ps.version, [], fetched_to, fetched_to - position, 100)])
    return ps


def test_validator_refetches_when_only_prefetched_records_were_truncated(idle_client):
    state = FetchState()
    dropped = []
    state.on_drop = dropped.append
    validator = Validator(state, idle_client, OFFSET_BEGINNING, 0.1)
    ps = validating(state, position=10, fetched_to=30)
    assert state.queued_records == 20
    validator.on_answer({("t", 0): (ps, ps.version, 30, 5)}, answer("t", 0, 2, 20))
    # The move waits for the polling thread, as an event.
    kind, move = state.next_event()
    assert kind == "call" and state.next_event() is None
    assert ps.need == NEED_VALIDATE and state.queued_records == 20
    assert move() is None  # nothing the application saw is gone: no error
    assert (ps.need, ps.fetch_offset, ps.position, ps.leader_epoch) == (NEED_NONE, 10, 10, 2)
    assert ps.known_leader_epoch == 5
    assert (state.queued_records, list(state.ready), dropped) == (0, [], [ps])


def test_validator_reports_truncation_of_delivered_records_and_resumes_at_the_end(idle_client):
    state = FetchState()
    validator = Validator(state, idle_client, OFFSET_BEGINNING, 0.1)
    ps = validating(state, position=25, fetched_to=30)
    validator.on_answer({("t", 0): (ps, ps.version, 30, 5)}, answer("t", 0, 3, 20))
    _, move = state.next_event()
    err = move()
    assert err.code() == KafkaError._LOG_TRUNCATION
    assert "offsets 20..24" in err.str() and "resumes at offset 20" in err.str()
    assert (ps.need, ps.fetch_offset, ps.position, ps.leader_epoch) == (NEED_NONE, 20, 20, 3)


def test_validator_stops_the_partition_under_auto_offset_reset_error(idle_client):
    state = FetchState()
    validator = Validator(state, idle_client, None, 0.1)
    ps = validating(state, position=25, fetched_to=30)
    validator.on_answer({("t", 0): (ps, ps.version, 30, 5)}, answer("t", 0, 3, 20))
    err = state.next_event()[1]()
    assert err.code() == KafkaError._LOG_TRUNCATION and "seek() to go on" in err.str()
    assert ps.need == NEED_RESET and ps.reset_to is None and ps.error_reported


def test_validator_confirms_a_position_the_leader_still_holds(idle_client):
    state = FetchState()
    validator = Validator(state, idle_client, OFFSET_BEGINNING, 0.1)
    ps = validating(state, position=10, fetched_to=30)
    validator.on_answer({("t", 0): (ps, ps.version, 30, 5)}, answer("t", 0, 2, 30))
    assert state.next_event() is None
    assert (ps.need, ps.resolving, ps.fetch_offset, ps.known_leader_epoch) == (
        NEED_NONE, False, 30, 5)
    assert state.queued_records == 20  # the prefetched records stay


def test_validator_reports_a_refusal_once(idle_client):
    state = FetchState()
    validator = Validator(state, idle_client, OFFSET_BEGINNING, 0.1)
    ps = validating(state, position=10, fetched_to=30)
    validator.on_answer({("t", 0): (ps, ps.version, 30, 5)},
                        answer("t", 0, -1, -1, error=KafkaError.TOPIC_AUTHORIZATION_FAILED))
    kind, err = state.next_event()
    assert kind == "error" and err.code() == KafkaError.TOPIC_AUTHORIZATION_FAILED
    ps.resolving = True
    validator.on_answer({("t", 0): (ps, ps.version, 30, 5)},
                        answer("t", 0, -1, -1, error=KafkaError.TOPIC_AUTHORIZATION_FAILED))
    assert state.next_event() is None
    assert ps.need == NEED_VALIDATE and not ps.resolving


class Recorder:
    """The event sink a group member reports to."""

    def __init__(self) -> None:
        self.events: list[tuple] = []

    def post(self, event: tuple) -> None:
        self.events.append(event)

    def post_error(self, err: KafkaError) -> None:
        self.events.append(("error", err))

    def wait_for(self, kind: str, timeout: float = 30.0) -> tuple:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            for ev in self.events:
                if ev[0] == kind:
                    return ev
            time.sleep(0.05)
        raise AssertionError(f"no {kind!r} event in {timeout}s; got {self.events}")


def member_for(broker, protocol: str, group: str):
    conf = make_config(broker.client_config({"group.id": group, "group.protocol": protocol,
                                             "session.timeout.ms": 10000,
                                             "heartbeat.interval.ms": 500}), "consumer")
    client = KafkaClient(conf).start()
    events = Recorder()
    if protocol == "classic":
        member = ClassicGroup(client, conf, events,
                              make_assignors(conf["partition.assignment.strategy"]))
    else:
        member = ConsumerGroupMember(client, conf, events)
    return client, member, events


@pytest.mark.parametrize("protocol", ["classic", "consumer"])
def test_a_group_member_on_its_own_joins_and_reports_its_assignment(kafka, protocol):
    topic = unique_topic("member")
    create_topic(kafka, topic, 3)
    client, member, events = member_for(kafka, protocol, unique_topic("g"))
    try:
        client.call_soon(lambda: member.subscribe([topic]))
        if protocol == "classic":
            _, partitions, epoch = events.wait_for("assign")
            assert partitions == [(topic, 0), (topic, 1), (topic, 2)]
        else:
            _, added, revoked, epoch = events.wait_for("incremental")
            assert (sorted(added), revoked) == ([(topic, 0), (topic, 1), (topic, 2)], [])
            client.call_soon(lambda: member.incremental_revoke_done(epoch))
        assert epoch == member.epoch and member.member_id
        deadline = time.monotonic() + 10
        while member.generation < 1 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert member.generation >= 1
        assert not [ev for ev in events.events if ev[0] == "error"]
        # The application stopped polling past max.poll.interval.ms: the next poll rejoins.
        watch = member.poll_watch
        assert not watch.exceeded(60.0) and watch.exceeded(0.0)
    finally:
        done: Future = Future()
        client.call_soon(lambda: done.set_result(member.close()))
        leave = done.result(10)
        if leave is not None:
            leave.result(10)
        client.close()
