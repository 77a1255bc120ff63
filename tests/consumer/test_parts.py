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
from kafka_fast.consumer.fetcher import Fetcher
from kafka_fast.consumer.group import ClassicGroup
from kafka_fast.consumer.group_kip848 import ConsumerGroupMember
from kafka_fast.consumer.offsets import OffsetClient
from kafka_fast.consumer.state import (
    NEED_NONE,
    NEED_RESET,
    NEED_VALIDATE,
    AppPosition,
    FetchCursor,
)
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


def validating(state: FetchState, position: int,
               fetched_to: int) -> tuple[AppPosition, FetchCursor]:
    """A partition at ``position`` (epoch 2) with records fetched up to ``fetched_to``,
    queued but not delivered, now waiting for validation under leader epoch 5."""
    app = AppPosition("t", 0)
    gen = app.moved(position, 2)
    cur = FetchCursor(app, gen)
    cur.set_position(fetched_to, 2)
    cur.need = NEED_VALIDATE
    cur.resolving = True
    with state.lock:
        state.parts[("t", 0)] = app
        state.cursors[("t", 0)] = cur
    state.enqueue([Chunk(app, gen, [], fetched_to, fetched_to - position, 100)])
    return app, cur


def fetcher_for(state: FetchState, client: KafkaClient, reset: str = "earliest") -> Fetcher:
    """The fetcher that applies the commands the validator leaves (its I/O-thread half)."""
    conf = make_config({"bootstrap.servers": "127.0.0.1:1", "group.id": "g",
                        "auto.offset.reset": reset}, "consumer")
    return Fetcher(state, client, conf, OffsetClient(client, "g"))


def apply_commands(state: FetchState, fetcher: Fetcher) -> None:
    with state.lock:
        for cmd in state.take_commands():
            fetcher.apply(cmd)


def test_validator_refetches_when_only_prefetched_records_were_truncated(idle_client):
    state = FetchState()
    dropped = []
    state.on_drop = dropped.append
    validator = Validator(state, idle_client, OFFSET_BEGINNING, 0.1)
    fetcher = fetcher_for(state, idle_client)
    app, cur = validating(state, position=10, fetched_to=30)
    assert state.queued_records == 20
    validator.on_answer({("t", 0): (cur, cur.version, 30, 5)}, answer("t", 0, 2, 20))
    # The move waits for the polling thread, as an event.
    kind, move = state.next_event()
    assert kind == "call" and state.next_event() is None
    assert cur.need == NEED_VALIDATE and state.queued_records == 20
    assert move() is None  # nothing the application saw is gone: no error
    assert (app.position, app.leader_epoch) == (10, 2)
    assert (state.queued_records, list(state.ready), dropped) == (0, [], [app])
    # The fetch cursor follows on the fetcher's next turn.
    assert cur.need == NEED_VALIDATE and cur.fetch_offset == 30
    apply_commands(state, fetcher)
    assert (cur.need, cur.fetch_offset, cur.fetch_epoch, cur.resolving) == (NEED_NONE, 10, 2,
                                                                            False)
    assert cur.known_leader_epoch == 5 and cur.gen == app.gen


def test_validator_reports_truncation_of_delivered_records_and_resumes_at_the_end(idle_client):
    state = FetchState()
    validator = Validator(state, idle_client, OFFSET_BEGINNING, 0.1)
    fetcher = fetcher_for(state, idle_client)
    app, cur = validating(state, position=25, fetched_to=30)
    validator.on_answer({("t", 0): (cur, cur.version, 30, 5)}, answer("t", 0, 3, 20))
    _, move = state.next_event()
    err = move()
    assert err.code() == KafkaError._LOG_TRUNCATION
    assert "offsets 20..24" in err.str() and "resumes at offset 20" in err.str()
    apply_commands(state, fetcher)
    assert (cur.need, cur.fetch_offset, app.position, app.leader_epoch) == (NEED_NONE, 20, 20,
                                                                            3)


def test_validator_stops_the_partition_under_auto_offset_reset_error(idle_client):
    state = FetchState()
    validator = Validator(state, idle_client, None, 0.1)
    fetcher = fetcher_for(state, idle_client, "error")
    app, cur = validating(state, position=25, fetched_to=30)
    validator.on_answer({("t", 0): (cur, cur.version, 30, 5)}, answer("t", 0, 3, 20))
    err = state.next_event()[1]()
    assert err.code() == KafkaError._LOG_TRUNCATION and "seek() to go on" in err.str()
    apply_commands(state, fetcher)
    assert cur.need == NEED_RESET and cur.reset_to is None and cur.error_reported
    assert app.position == 25  # kept until the application seeks


def test_validator_drops_a_move_the_application_overtook(idle_client):
    state = FetchState()
    validator = Validator(state, idle_client, OFFSET_BEGINNING, 0.1)
    fetcher = fetcher_for(state, idle_client)
    app, cur = validating(state, position=10, fetched_to=30)
    validator.on_answer({("t", 0): (cur, cur.version, 30, 5)}, answer("t", 0, 2, 20))
    _, move = state.next_event()
    with state.lock:  # a seek before the polling thread got to the move
        state.drop_buffered(app)
        state.command(("seek", app, app.moved(3, 2), 3, 2, False))
    assert move() is None
    apply_commands(state, fetcher)
    assert (app.position, cur.fetch_offset, cur.need, cur.resolving) == (3, 3, NEED_NONE, False)


def test_validator_confirms_a_position_the_leader_still_holds(idle_client):
    state = FetchState()
    validator = Validator(state, idle_client, OFFSET_BEGINNING, 0.1)
    app, cur = validating(state, position=10, fetched_to=30)
    validator.on_answer({("t", 0): (cur, cur.version, 30, 5)}, answer("t", 0, 2, 30))
    assert state.next_event() is None and not state.commands
    assert (cur.need, cur.resolving, cur.fetch_offset, cur.known_leader_epoch) == (
        NEED_NONE, False, 30, 5)
    assert state.queued_records == 20  # the prefetched records stay


def test_validator_reports_a_refusal_once(idle_client):
    state = FetchState()
    validator = Validator(state, idle_client, OFFSET_BEGINNING, 0.1)
    app, cur = validating(state, position=10, fetched_to=30)
    validator.on_answer({("t", 0): (cur, cur.version, 30, 5)},
                        answer("t", 0, -1, -1, error=KafkaError.TOPIC_AUTHORIZATION_FAILED))
    kind, err = state.next_event()
    assert kind == "error" and err.code() == KafkaError.TOPIC_AUTHORIZATION_FAILED
    cur.resolving = True
    validator.on_answer({("t", 0): (cur, cur.version, 30, 5)},
                        answer("t", 0, -1, -1, error=KafkaError.TOPIC_AUTHORIZATION_FAILED))
    assert state.next_event() is None
    assert cur.need == NEED_VALIDATE and not cur.resolving


def test_a_found_position_outlives_the_records_dropped_with_it():
    # The fetcher found offset 7 (committed) and fetched on; the application pauses before
    # polling: the records go, the position stays known, and the fetcher is told to fetch
    # from 7 again when resumed.
    state = FetchState()
    app = AppPosition("t", 0)
    with state.lock:
        state.parts[("t", 0)] = app
    state.enqueue([Chunk(app, app.gen, [], 7, 0, 0, start=True, epoch=3, committed=7),
                   Chunk(app, app.gen, [], 9, 2, 50)])
    with state.lock:
        state.drop_buffered(app)
        assert (app.position, app.leader_epoch, app.committed) == (7, 3, 7)
        assert (list(state.ready), state.queued_records, state.queued_bytes) == ([], 0, 0)
    # A start chunk of a paused partition is still applied; its records wait for resume.
    app.paused = True
    start = Chunk(app, app.gen, [], 11, 0, 0, start=True)
    state.enqueue([Chunk(app, app.gen, [], 13, 2, 50), start])
    with state.lock:
        assert state.pop_ready() is start and state.pop_ready() is None
    # A start chunk of an older generation is dropped.
    state.enqueue([Chunk(app, app.gen - 1, [], 20, 0, 0, start=True)])
    with state.lock:
        state.take_starts(app)
        assert app.position == 7 and not state.ready


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
