"""The share consumer's parts without a broker: acknowledgement batches and state, share
session epochs and forgotten partitions, Messages, and the fixture's skip reason."""

from __future__ import annotations

import uuid

import pytest
from harness.apache_kafka import apache_kafka_missing

from kafka_fast import AcknowledgeType, IllegalStateException, Message, Messages
from kafka_fast.errors import KafkaError
from kafka_fast.share.acks import Acknowledgements, ack_batches, has_renew
from kafka_fast.share.model import GAP
from kafka_fast.share.session import FetchLimits, ShareSession

ACCEPT, RELEASE, REJECT, RENEW = (int(t) for t in AcknowledgeType)
LIMITS = FetchLimits(max_wait_ms=500, min_bytes=1, max_bytes=1 << 20, max_records=50)


def test_ack_batches_are_runs_of_consecutive_offsets():
    assert ack_batches({}) == []
    assert ack_batches({5: ACCEPT, 3: ACCEPT, 4: ACCEPT, 9: REJECT}) == [
        (3, 5, [ACCEPT]), (9, 9, [REJECT])]
    # a run of mixed types carries one type per offset
    assert ack_batches({0: ACCEPT, 1: RELEASE, 2: GAP}) == [(0, 2, [ACCEPT, RELEASE, GAP])]


def test_acknowledgements_move_from_in_flight_to_pending():
    acks = Acknowledgements()
    tp = ("t", 0)
    acks.hand_out(tp, [0, 1, 2])
    assert acks.unacknowledged() == 3
    acks.acknowledge(tp, 1, RELEASE)
    with pytest.raises(IllegalStateException, match="offset 1 of t \\[0\\] is not in flight"):
        acks.acknowledge(tp, 1, ACCEPT)
    acks.gaps(tp, [3])
    acks.accept_all()
    assert acks.unacknowledged() == 0
    assert acks.take({("t", 1)}) == {}
    assert acks.take({tp}) == {tp: {0: ACCEPT, 1: RELEASE, 2: ACCEPT, 3: GAP}}
    assert acks.pending_partitions() == set()


def test_renew_keeps_the_record_in_flight():
    acks = Acknowledgements()
    tp = ("t", 0)
    acks.hand_out(tp, [0, 1])
    acks.acknowledge(tp, 0, RENEW)
    assert acks.unacknowledged() == 2
    assert has_renew(acks.take({tp})) and acks.pending_partitions() == set()
    acks.acknowledge(tp, 0, RENEW)
    acks.acknowledge(tp, 0, ACCEPT)  # the final type replaces a renewal not sent yet
    assert acks.unacknowledged() == 1
    assert acks.take({tp}) == {tp: {0: ACCEPT}}
    assert not has_renew({tp: {0: ACCEPT, 1: GAP}})


def test_share_session_epochs_and_forgotten_partitions():
    ids = {"a": uuid.uuid4(), "b": uuid.uuid4()}
    session = ShareSession(1, "g")
    first = session.fetch_request("m", {("a", 0), ("b", 0)}, {}, ids, LIMITS, 100)
    assert first.share_session_epoch == 0 and first.forgotten_topics_data == []
    assert sorted((t.topic_id, [p.partition_index for p in t.partitions])
                  for t in first.topics) == sorted([(ids["a"], [0]), (ids["b"], [0])])
    session.answered(0)
    # b [0] is no longer wanted: forgotten; a [1] has acknowledgements only
    second = session.fetch_request("m", {("a", 0)}, {("a", 1): {7: ACCEPT}}, ids, LIMITS, 100)
    assert second.share_session_epoch == 1
    assert [(t.topic_id, t.partitions) for t in second.forgotten_topics_data] == [(ids["b"], [0])]
    (topic,) = second.topics
    acked = {p.partition_index: [(b.first_offset, b.last_offset, b.acknowledge_types)
                                 for b in p.acknowledgement_batches]
             for p in topic.partitions}
    assert acked == {0: [], 1: [(7, 7, [ACCEPT])]}
    assert (second.max_records, second.batch_size, second.is_renew_ack) == (50, 50, False)
    session.answered(0)
    renew = session.acknowledge_request("m", {("a", 0): {8: RENEW, 9: ACCEPT}}, ids)
    assert renew.is_renew_ack and renew.share_session_epoch == 2
    close = session.acknowledge_request("m", {("a", 0): {8: REJECT}}, ids, close=True)
    assert close.share_session_epoch == -1 and not close.is_renew_ack
    assert session.epoch == 2
    session.answered(KafkaError.INVALID_SHARE_SESSION_EPOCH)
    assert session.epoch == 0 and session.partitions == set()
    session.epoch = 2**31 - 1
    session.answered(0)
    assert session.epoch == 1


def test_messages_is_a_read_only_sequence():
    msgs = [Message("t", 0, i) for i in range(3)]
    batch = Messages(msgs)
    assert len(batch) == batch.count() == 3 and not batch.is_empty()
    assert list(batch) == msgs and batch[1] is msgs[1]
    assert isinstance(batch[1:], Messages) and list(batch[1:]) == msgs[1:]
    copy = batch.records()
    copy.clear()
    assert len(batch) == 3
    assert Messages().is_empty()
    assert Message("t", 0, 0).delivery_count() is None


def test_missing_share_broker_jars_say_what_to_run(tmp_path, monkeypatch):
    monkeypatch.setenv("KAFKA_FAST_CACHE", str(tmp_path))
    reason = apache_kafka_missing("0.0.1")
    assert reason is not None
    assert "tools/fetch_kafka.sh" in reason and "\n" not in reason


def _raised(make) -> tuple[type, str]:
    """The exception's base kind (TypeError, ValueError, RuntimeError) and text."""
    with pytest.raises(Exception) as info:
        make()
    for kind in (RuntimeError, TypeError, ValueError):
        if isinstance(info.value, kind):
            text = info.value.args[0]
            return kind, text.str() if isinstance(text, KafkaError) else str(text)
    raise AssertionError(f"unexpected {info.value!r}")


_SHARE_BASE = {"bootstrap.servers": "127.0.0.1:1", "group.id": "g", "socket.timeout.ms": 100}


@pytest.mark.parametrize("conf,kwargs", [
    (None, {}),
    ({"bootstrap.servers": "127.0.0.1:1"}, {}),
    ({**_SHARE_BASE, "on_commit": print}, {}),
    (_SHARE_BASE, {"on_commit": print}),
    ({"on_commit": print}, {}),
    *[({**_SHARE_BASE, name: value}, {}) for name, value in (
        ("enable.auto.commit", True), ("auto.offset.reset", "earliest"),
        ("group.protocol", "consumer"), ("partition.assignment.strategy", "range"),
        ("isolation.level", "read_committed"), ("group.instance.id", "i"),
        ("enable.partition.eof", True), ("group.remote.assignor", "uniform"),
        ("session.timeout.ms", 45000))],
])
def test_share_consumer_constructor_refusals_match_confluent(conf, kwargs):
    ck = pytest.importorskip("confluent_kafka", reason="pip install confluent-kafka")
    from kafka_fast import DeserializingShareConsumer, ShareConsumer

    def build(cls):
        if conf is None:
            return cls()
        return cls(conf, **kwargs) if kwargs else cls(conf)

    expected = _raised(lambda: build(ck.ShareConsumer))
    assert _raised(lambda: build(ShareConsumer)) == expected
    if conf is not None and not kwargs:
        assert _raised(lambda: DeserializingShareConsumer(conf)) == expected


def test_share_consumer_lifecycle_and_argument_checks_match_confluent():
    ck = pytest.importorskip("confluent_kafka", reason="pip install confluent-kafka")
    from kafka_fast import DeserializingShareConsumer, ShareConsumer

    outcomes = []
    for cls in (ck.ShareConsumer, ShareConsumer):
        seen = []
        sc = cls(_SHARE_BASE)
        seen.append(_raised(lambda: sc.__init__(_SHARE_BASE)))  # noqa: B023
        sc.subscribe(["t"])
        for bad in ("bad", None, [], object()):
            seen.append(_raised(lambda: sc.poll(timeout=bad))[0])  # noqa: B023
            seen.append(_raised(lambda: sc.commit_sync(timeout=bad))[0])  # noqa: B023
        sc.close()
        for call in (lambda: sc.subscribe(["x"]), sc.unsubscribe, sc.subscription,  # noqa: B023
                     lambda: sc.poll(0.1), lambda: sc.poll("bad"),  # noqa: B023
                     lambda: sc.acknowledge(None), lambda: sc.acknowledge(None, 9),  # noqa: B023
                     lambda: sc.acknowledge_offset("t", 0, 0, 1),  # noqa: B023
                     lambda: sc.acknowledge_offset(1, 0, 0, 1),  # noqa: B023
                     lambda: sc.commit_sync(0.1), lambda: sc.commit_sync("x"),  # noqa: B023
                     sc.commit_async, lambda: sc.set_sasl_credentials("u", "p")):  # noqa: B023
            with pytest.raises(RuntimeError) as info:  # each client's IllegalStateException
                call()
            seen.append((type(info.value).__name__, str(info.value)))
        outcomes.append(seen)
    assert outcomes[1] == outcomes[0]
    assert outcomes[0][0] == (RuntimeError, "ShareConsumer already initialized")
    assert outcomes[0][-1] == ("IllegalStateException", "Share consumer closed")
    # The acknowledgement mode is the base class's, not an attribute a subclass could clash with.
    for mode in ("implicit", "explicit"):
        dsc = DeserializingShareConsumer({**_SHARE_BASE, "share.acknowledgement.mode": mode})
        assert not hasattr(dsc, "_explicit")
        dsc.close()


def test_share_consumer_ssl_setup_failure_names_the_share_consumer(tmp_path):
    from kafka_fast import ShareConsumer

    missing = str(tmp_path / "ca.pem")
    kind, text = _raised(lambda: ShareConsumer(
        {**_SHARE_BASE, "security.protocol": "ssl", "ssl.ca.location": missing}))
    assert kind is ValueError
    assert text.startswith("Failed to create share consumer: cannot load the CA certificates")


@pytest.mark.parametrize("drain", ["commit_sync", "commit_async", "close"])
def test_share_consumer_calls_serve_queued_errors_like_confluent(drain):
    """Connection errors queued while nothing polls reach error_cb from commit_sync,
    commit_async and close, and an exception error_cb raises comes out of the call."""
    ck = pytest.importorskip("confluent_kafka", reason="pip install confluent-kafka")
    import time

    from harness import free_port

    from kafka_fast import ShareConsumer

    seen = []
    for cls in (ck.ShareConsumer, ShareConsumer):
        codes: list[int] = []
        raising = [drain != "close"]

        def error_cb(err, codes=codes, raising=raising):
            codes.append(err.code())
            if raising[0]:
                raise RuntimeError("raised by error_cb")

        sc = cls({"group.id": f"g-{uuid.uuid4().hex[:8]}", "socket.timeout.ms": 100,
                  "bootstrap.servers": f"127.0.0.1:{free_port()}", "error_cb": error_cb})
        sc.subscribe(["t"])
        time.sleep(0.3)
        assert codes == []  # nothing is served without a call
        outcome = None
        if drain == "close":
            sc.close()
        else:
            with pytest.raises(RuntimeError, match="raised by error_cb") as info:
                sc.commit_sync(0.5) if drain == "commit_sync" else sc.commit_async()
            outcome = str(info.value)
            raising[0] = False
            sc.close()
        seen.append((KafkaError._TRANSPORT in codes, outcome))
    expected = (True, None if drain == "close" else "raised by error_cb")
    assert seen[1] == seen[0] == expected


def test_share_consumer_second_thread_error_reads_as_confluents():
    """A call from a second thread while error_cb runs in poll(): confluent-kafka's
    ConcurrentModificationException and its words."""
    ck = pytest.importorskip("confluent_kafka", reason="pip install confluent-kafka")
    import re
    import threading

    from harness import free_port

    from kafka_fast import ShareConsumer

    seen = []
    for cls in (ck.ShareConsumer, ShareConsumer):
        captured: list[BaseException] = []
        in_callback, release = threading.Event(), threading.Event()

        def error_cb(err, in_callback=in_callback, release=release):
            if not in_callback.is_set():
                in_callback.set()
                release.wait(3.0)

        sc = cls({"group.id": f"g-{uuid.uuid4().hex[:8]}", "socket.timeout.ms": 100,
                  "bootstrap.servers": f"127.0.0.1:{free_port()}", "error_cb": error_cb})

        def worker(sc=sc, captured=captured, in_callback=in_callback, release=release):
            if in_callback.wait(3.0):
                try:
                    sc.commit_async()
                except Exception as exc:
                    captured.append(exc)
                finally:
                    release.set()

        sc.subscribe(["t"])
        thread = threading.Thread(target=worker)
        thread.start()
        sc.poll(1.0)
        thread.join(5.0)
        release.set()
        sc.close()
        assert len(captured) == 1
        seen.append((type(captured[0]).__name__, isinstance(captured[0], RuntimeError),
                     re.sub(r"\d+", "N", str(captured[0]))))
    assert seen[1] == seen[0] == ("ConcurrentModificationException", True, "Share consumer is "
                                  "not safe for multi-threaded access. currentThread(id: N) "
                                  "otherThread(id: N)")
