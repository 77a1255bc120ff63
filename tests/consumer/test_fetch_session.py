"""Incremental fetch sessions (KIP-227) at the layer where they live.

Neither Tansu nor the mock cluster grants a session (both answer session id 0), so the session
state machine and the fetcher's handling of incremental answers are driven here with Fetch
requests and responses encoded and decoded by the protocol codec. Against those two, a session
id 0 answer keeps the consumer on full fetches and every record still reads back exactly;
Apache Kafka grants sessions, and the same reads go through incremental fetches there.
"""

from __future__ import annotations

import random
import threading
from concurrent.futures import Future

import pytest
from consumer_support import as_tuple, make_items, produce_confluent, read_all
from harness import create_topic, free_port, unique_topic

from kafka_fast import Consumer, TopicPartition
from kafka_fast.config import make_config
from kafka_fast.consumer.delivery import Delivery
from kafka_fast.consumer.fetch_session import FetchSession, fetch_request, next_epoch
from kafka_fast.consumer.fetch_state import FetchState
from kafka_fast.consumer.fetcher import Fetcher, sent_entry
from kafka_fast.consumer.offsets import OffsetClient
from kafka_fast.consumer.state import AppPosition, FetchCursor
from kafka_fast.net import KafkaClient
from kafka_fast.protocol import messages as m
from kafka_fast.records import encode_batch

V = 12
MAXB = 1 << 20
R = m.FetchResponse


def wire_request(plan) -> m.FetchRequest:
    req = fetch_request(plan, max_wait_ms=100, min_bytes=1, max_bytes=50 << 20,
                        isolation_level=1)
    return m.FetchRequest.decode(req.encode(V), V)


def partitions_of(req) -> dict:
    return {(t.topic, p.partition): (p.fetch_offset, p.current_leader_epoch,
                                     p.partition_max_bytes)
            for t in req.topics for p in t.partitions}


def forgotten_of(req) -> dict:
    return {f.topic: sorted(f.partitions) for f in req.forgotten_topics_data}


def response(session_id: int, data: dict | None = None, error: int = 0) -> R:
    """A decoded FetchResponse; ``data`` maps (topic, partition) to record bytes."""
    topics: dict[str, list] = {}
    for (topic, partition), records in (data or {}).items():
        topics.setdefault(topic, []).append(R.PartitionData(
            partition_index=partition, error_code=0, high_watermark=1000,
            last_stable_offset=1000, log_start_offset=0, aborted_transactions=[],
            records=records))
    resp = R(throttle_time_ms=0, error_code=error, session_id=session_id,
             responses=[R.FetchableTopicResponse(topic=t, partitions=ps)
                        for t, ps in topics.items()])
    return R.decode(resp.encode(V), V)


def batch(base: int, n: int) -> bytes:
    return encode_batch([b"v%d" % (base + i) for i in range(n)],
                        [b"k%d" % (base + i) for i in range(n)],
                        timestamps=[1_000 + i for i in range(n)], base_offset=base)


WANTED = {("t", 0): (10, 4, MAXB), ("t", 1): (20, 4, MAXB), ("u", 0): (5, 7, MAXB)}


def established() -> FetchSession:
    s = FetchSession()
    plan = s.plan(dict(WANTED))
    assert s.handle_response(plan, response(123, {("t", 0): b""})) is False
    return s


def test_full_fetch_establishes_then_incremental_sends_only_changes():
    s = FetchSession()
    plan = s.plan(dict(WANTED))
    req = wire_request(plan)
    assert (req.session_id, req.session_epoch) == (0, 0)
    assert partitions_of(req) == WANTED
    assert forgotten_of(req) == {}

    assert s.handle_response(plan, response(123, {("t", 0): batch(10, 3)})) is False
    assert (s.session_id, s.epoch) == (123, 1)

    # t[0] moved on to 13; t[1] and u[0] are unchanged and stay out of the request.
    wanted = dict(WANTED)
    wanted[("t", 0)] = (13, 4, MAXB)
    plan = s.plan(wanted)
    req = wire_request(plan)
    assert (req.session_id, req.session_epoch) == (123, 1)
    assert partitions_of(req) == {("t", 0): (13, 4, MAXB)}
    assert forgotten_of(req) == {}
    # An answer that leaves every partition out: no new data anywhere, epoch moves on.
    assert s.handle_response(plan, response(123)) is True
    assert s.epoch == 2

    # A changed leader epoch is a change too; nothing else changed.
    wanted[("u", 0)] = (5, 8, MAXB)
    req = wire_request(s.plan(wanted))
    assert (req.session_id, req.session_epoch) == (123, 2)
    assert partitions_of(req) == {("u", 0): (5, 8, MAXB)}


def test_removed_partitions_are_forgotten_and_readded_in_full():
    s = established()
    wanted = {k: v for k, v in WANTED.items() if k != ("t", 1)}
    del wanted[("u", 0)]
    plan = s.plan(wanted)
    req = wire_request(plan)
    assert (req.session_id, req.session_epoch) == (123, 1)
    assert partitions_of(req) == {}
    assert forgotten_of(req) == {"t": [1], "u": [0]}
    assert s.handle_response(plan, response(123)) is True
    assert set(s.known) == {("t", 0)}

    req = wire_request(s.plan({("t", 0): WANTED[("t", 0)], ("t", 1): (25, 4, MAXB)}))
    assert (req.session_id, req.session_epoch) == (123, 2)
    assert partitions_of(req) == {("t", 1): (25, 4, MAXB)}
    assert forgotten_of(req) == {}


@pytest.mark.parametrize("error", [70, 71])  # FETCH_SESSION_ID_NOT_FOUND, INVALID_..._EPOCH
def test_session_errors_go_back_to_a_full_fetch(error):
    s = established()
    plan = s.plan(dict(WANTED))
    assert plan.incremental
    assert s.handle_response(plan, response(0, error=error)) is False
    req = wire_request(s.plan(dict(WANTED)))
    assert (req.session_id, req.session_epoch) == (0, 0)
    assert partitions_of(req) == WANTED


def test_failed_request_and_closing_answer_reset_the_session():
    s = established()
    s.handle_response(s.plan(dict(WANTED)), None)
    assert (s.session_id, s.epoch, s.known) == (0, 0, {})

    s = established()
    # The broker ends the session in an incremental answer: still a valid answer.
    assert s.handle_response(s.plan(dict(WANTED)), response(0)) is True
    assert partitions_of(wire_request(s.plan(dict(WANTED)))) == WANTED


def test_session_id_zero_keeps_full_fetches():
    s = FetchSession()
    for _ in range(3):
        plan = s.plan(dict(WANTED))
        req = wire_request(plan)
        assert (req.session_id, req.session_epoch) == (0, 0)
        assert partitions_of(req) == WANTED
        assert s.handle_response(plan, response(0, {("t", 0): b""})) is False
    assert not s.active


def test_disabled_sessions_fetch_without_a_session():
    s = FetchSession(enabled=False)
    plan = s.plan(dict(WANTED))
    req = wire_request(plan)
    assert (req.session_id, req.session_epoch) == (0, -1)
    assert partitions_of(req) == WANTED
    assert s.handle_response(plan, response(9)) is False
    assert not s.active


def test_epochs_wrap_as_kafka_does_and_close_uses_final_epoch():
    assert [next_epoch(e) for e in (1, 2**31 - 2, 2**31 - 1, -1)] == [2, 2**31 - 1, 1, -1]
    s = established()
    s.epoch = 2**31 - 1
    plan = s.plan(dict(WANTED))
    assert wire_request(plan).session_epoch == 2**31 - 1
    assert s.handle_response(plan, response(123)) is True
    assert s.epoch == 1

    req = wire_request(s.close_plan())
    assert (req.session_id, req.session_epoch) == (123, -1)
    assert partitions_of(req) == {} and forgotten_of(req) == {}
    assert not s.active and s.close_plan() is None


def on_io(client: KafkaClient, fn, *args):
    """``fn(*args)`` on the client's I/O thread, the fetcher's owner; its result."""
    done: Future = Future()

    def run() -> None:
        try:
            done.set_result(fn(*args))
        except BaseException as exc:  # raised again in the test's thread
            done.set_exception(exc)

    client.call_soon(run)
    return done.result(30)


def test_fetcher_keeps_positions_of_partitions_an_incremental_answer_leaves_out():
    # The fetcher and the delivery side on their own: a fetch state, a client (its broker
    # never answers) and Fetch responses made by the codec.
    conf = make_config({"bootstrap.servers": f"127.0.0.1:{free_port()}", "group.id": "g",
                        "fetch.wait.max.ms": 100, "fetch.error.backoff.ms": 5000}, "consumer")
    client = KafkaClient(conf).start()
    state = FetchState()
    f = Fetcher(state, client, conf, OffsetClient(client, "g"))
    delivery = Delivery(state, auto_store=True, per_chunk=100, wake_fetcher=client.wakeup)
    try:
        apps = [AppPosition("t", 0), AppPosition("t", 1)]
        gens = [app.moved(offset) for app, offset in zip(apps, (10, 20), strict=True)]

        def start() -> tuple[list[FetchCursor], list]:
            # What the fetcher's turn does (I/O thread): cursors at 10 and 20, Fetches sent.
            parts = [FetchCursor(app, gen) for app, gen in zip(apps, gens, strict=True)]
            with state.lock:
                sent = []
                for ps, offset in zip(parts, (10, 20), strict=True):
                    ps.set_position(offset, -1)
                    state.parts[(ps.topic, ps.partition)] = ps.app
                    state.cursors[(ps.topic, ps.partition)] = ps
                    ps.fetching = True
                    sent.append(sent_entry(ps))
            return parts, sent

        parts, sent = on_io(client, start)
        wanted = {("t", 0): (10, -1, f.partition_max_bytes),
                  ("t", 1): (20, -1, f.partition_max_bytes)}
        session = f.session(7)
        session.session_id, session.epoch, session.known = 123, 5, dict(wanted)
        plan = session.plan(wanted)
        assert plan.incremental and plan.send == {}

        fut: Future = Future()
        fut.set_result(response(123, {("t", 0): batch(10, 3)}))
        on_io(client, f.on_response, 7, sent, plan, fut)
        with state.lock:
            assert (parts[0].fetch_offset, parts[1].fetch_offset) == (13, 20)
            assert parts[1].backoff_until == 0.0 and not parts[1].fetching
            assert apps[1].position == 20
            assert [(ch.app.partition, ch.count, ch.next_offset) for ch in state.ready] == [
                (0, 3, 13)]
            assert (state.queued_records, state.queued_bytes) == (3, len(batch(10, 3)))
        assert (session.session_id, session.epoch) == (123, 6)
        got: list = []
        count, info = delivery.take(10, got, None)
        delivery.advance(info)
        assert count == 3
        assert [(msg.partition(), msg.offset(), msg.value()) for msg in got] == [
            (0, 10, b"v10"), (0, 11, b"v11"), (0, 12, b"v12")]
        assert (apps[0].position, apps[0].stored, apps[1].position) == (13, 13, 20)
        assert state.queued_records == 0 and delivery.take(10, got, None) == (0, None)

        # A session error: back to a full fetch, the partitions are fetched again at once.
        def resend() -> list:
            with state.lock:
                for ps in parts:
                    ps.fetching = True
                return [sent_entry(ps) for ps in parts]

        sent = on_io(client, resend)
        plan = session.plan({("t", 0): (13, -1, f.partition_max_bytes),
                             ("t", 1): (20, -1, f.partition_max_bytes)})
        fut = Future()
        fut.set_result(response(0, error=70))
        on_io(client, f.on_response, 7, sent, plan, fut)
        assert not session.active
        with state.lock:
            assert all(not ps.fetching and ps.backoff_until == 0.0 for ps in parts)
            assert (parts[0].fetch_offset, parts[1].fetch_offset) == (13, 20)
            assert not state.ready
    finally:
        on_io(client, setattr, f, "closed", True)
        client.close()


def test_brokers_without_sessions_stay_on_full_fetches_and_read_exactly(broker):
    topic = unique_topic("fs")
    create_topic(broker, topic, 3)
    expected = produce_confluent(broker, topic, make_items(120, 3, "s"))
    c = Consumer(broker.client_config({"group.id": unique_topic("g"),
                                       "auto.offset.reset": "earliest",
                                       "fetch.wait.max.ms": 50}))
    try:
        c.assign([TopicPartition(topic, p) for p in range(3)])
        got = read_all(c, len(expected))
        assert sorted(as_tuple(msg) for msg in got) == expected
        assert c.poll(0.3) is None
        sessions = dict(c._fetcher.sessions)  # the consumer's own fetcher
        assert sessions, "no Fetch went out"
        for s in sessions.values():
            if broker.kind == "kafka":
                # Apache Kafka keeps sessions: after the full Fetch, incremental ones.
                assert s.enabled and s.session_id != 0 and s.epoch > 0
                assert set(s.known) == {(topic, p) for p in range(3)}
            elif broker.kind != "external":
                assert s.enabled and (s.session_id, s.epoch, s.known) == (0, 0, {})
    finally:
        c.close()


def test_large_compressed_partitions_of_one_answer_are_decoded_side_by_side():
    conf = make_config({"bootstrap.servers": f"127.0.0.1:{free_port()}", "group.id": "g"},
                       "consumer")
    client = KafkaClient(conf).start()
    state = FetchState()
    f = Fetcher(state, client, conf, OffsetClient(client, "g"))
    delivery = Delivery(state, auto_store=True, per_chunk=100_000, wake_fetcher=client.wakeup)
    rng = random.Random(7)

    sent_values: dict[int, list[bytes]] = {}

    def big(base: int, n: int, codec: str) -> bytes:
        values = [bytes(rng.getrandbits(8) for _ in range(40)) * 4 for _ in range(n)]
        sent_values[len(sent_values)] = values
        return encode_batch(values, [b"k%d" % (base + i) for i in range(n)],
                            timestamps=[2_000 + i for i in range(n)], base_offset=base,
                            compression=codec)

    try:
        parts = [FetchCursor(AppPosition("t", p), 0) for p in range(4)]
        payloads = {0: big(0, 2000, "lz4"), 1: big(0, 2000, "zstd"), 2: big(0, 2000, "gzip"),
                    3: batch(0, 5)}  # small and uncompressed: decoded in line

        def start() -> list:
            with state.lock:
                for ps in parts:
                    ps.set_position(0, -1)
                    state.parts[(ps.topic, ps.partition)] = ps.app
                    state.cursors[(ps.topic, ps.partition)] = ps
                    ps.fetching = True
                return [sent_entry(ps) for ps in parts]

        sent = on_io(client, start)
        assert all(len(payloads[p]) >= 64 * 1024 for p in range(3))
        plan = f.session(1).plan({("t", p): (0, -1, MAXB) for p in range(4)})
        fut: Future = Future()
        fut.set_result(response(0, {("t", p): payloads[p] for p in range(4)}))
        on_io(client, f.on_response, 1, sent, plan, fut)
        # three large compressed partitions: side by side, on the decoder threads
        assert any(t.name.startswith("kafka_fast-decode") for t in threading.enumerate())
        got: dict[int, list] = {}
        while True:
            out: list = []
            count, info = delivery.take(100_000, out, None)
            if info is None:
                break
            delivery.advance(info)
            for msg in out:
                got.setdefault(msg.partition(), []).append(
                    (msg.offset(), msg.key(), msg.value()))
        assert {p: len(v) for p, v in got.items()} == {0: 2000, 1: 2000, 2: 2000, 3: 5}
        for p in range(3):
            assert got[p] == [(i, b"k%d" % i, sent_values[p][i]) for i in range(2000)]
        assert got[3] == [(i, b"k%d" % i, b"v%d" % i) for i in range(5)]
        assert [ps.app.position for ps in parts] == [2000, 2000, 2000, 5]
    finally:
        f.release()
        # The pool is shut down at once; the fetcher closes at its next turn (the release
        # only queues the command), and stops asking for turns.
        with pytest.raises(RuntimeError):
            f.decoders.submit(int)
        assert not f.closed
        assert on_io(client, f.tick) is None and f.closed
        client.close()
