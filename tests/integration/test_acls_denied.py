"""Every operation the client performs, denied in turn by Apache Kafka's StandardAuthorizer,
side by side with confluent-kafka on the same broker and the same SCRAM users.

Each user may do everything (ALLOW ALL on every topic, group, transactional id and the
cluster) except one operation (a DENY binding, which wins). For every denied operation the
test checks where kafka_fast reports it (delivery report, poll() message, exception, admin
future) and with which code, that nothing waits longer than a bound, and what confluent-kafka
reports for the same call. Where the two differ, ``THEIRS`` records confluent-kafka's outcome
and the comment says why ours is kept.
"""

from __future__ import annotations

import logging
import time

import confluent_kafka
import confluent_kafka.admin
import pytest
from harness.acl_denials import CLUSTER, Actions, Denial, Outcome, set_up_denials, user_view
from harness.topics import create_topic, unique_topic

import kafka_fast
import kafka_fast.admin

pytestmark = [pytest.mark.apache, pytest.mark.timeout(180)]

TAF, GAF, CAF = ("TOPIC_AUTHORIZATION_FAILED", "GROUP_AUTHORIZATION_FAILED",
                 "CLUSTER_AUTHORIZATION_FAILED")
XAF = "TRANSACTIONAL_ID_AUTHORIZATION_FAILED"
IDEMPOTENT = {"enable.idempotence": True}


class World:
    def __init__(self, cluster) -> None:
        self.cluster = cluster
        suffix = unique_topic("x")[2:]
        self.topic, self.group = f"acl-t-{suffix}", f"acl-g-{suffix}"
        self.txn, self.new = f"acl-x-{suffix}", f"acl-new-{suffix}"
        topic = ("TOPIC", self.topic, "LITERAL")
        group = ("GROUP", self.group, "LITERAL")
        txn = ("TRANSACTIONAL_ID", self.txn, "LITERAL")
        cluster_res = ("BROKER", CLUSTER, "LITERAL")
        self.denials = {
            "describe-topic": Denial(f"dt{suffix}", "DESCRIBE", (topic,)),
            "read-topic": Denial(f"rt{suffix}", "READ", (topic,)),
            "write-topic": Denial(f"wt{suffix}", "WRITE", (topic,)),
            "read-group": Denial(f"rg{suffix}", "READ", (group,)),
            "describe-group": Denial(f"dg{suffix}", "DESCRIBE", (group,)),
            # InitProducerId without a transactional id is allowed by IdempotentWrite on the
            # cluster or Write on any topic (KIP-679): deny both.
            "idempotent-write": Denial(f"iw{suffix}", "IDEMPOTENT_WRITE", (cluster_res,)),
            "idempotent-write+write": Denial(f"ix{suffix}", "WRITE",
                                             (("TOPIC", "*", "LITERAL"),)),
            "write-txn": Denial(f"wx{suffix}", "WRITE", (txn,)),
            "describe-txn": Denial(f"dx{suffix}", "DESCRIBE", (txn,)),
            "create": Denial(f"cr{suffix}", "CREATE",
                             (cluster_res, ("TOPIC", "acl-new-", "PREFIXED"))),
            "alter-topic": Denial(f"at{suffix}", "ALTER", (topic,)),
            "alter-configs-topic": Denial(f"ac{suffix}", "ALTER_CONFIGS", (topic,)),
            "describe-configs-topic": Denial(f"dc{suffix}", "DESCRIBE_CONFIGS", (topic,)),
            "alter-configs-cluster": Denial(f"ak{suffix}", "ALTER_CONFIGS", (cluster_res,)),
            "describe-cluster": Denial(f"dk{suffix}", "DESCRIBE", (cluster_res,)),
            # Delete on the cluster allows deleting any topic: deny both.
            "delete-topic": Denial(f"de{suffix}", "DELETE", (topic, cluster_res)),
        }
        both = self.denials["idempotent-write+write"]
        set_up_denials(cluster, list(self.denials.values()))
        set_up_denials(cluster, [Denial(both.user, "IDEMPOTENT_WRITE", (cluster_res,))])

    def actions(self, lib: str, denial: str) -> Actions:
        libs = {"ours": (kafka_fast, kafka_fast.admin),
                "theirs": (confluent_kafka, confluent_kafka.admin)}[lib]
        return Actions(*libs, user_view(self.cluster, self.denials[denial].user))


@pytest.fixture(scope="module")
def world(apache_kafka) -> World:
    w = World(apache_kafka)
    create_topic(apache_kafka, w.topic, 1)
    return w


def _run(world: World, lib: str, denial: str, action: str, args) -> Outcome:
    w = world
    names = {"T": w.topic, "G": w.group, "X": w.txn, "NEW": w.new}
    real = [names.get(a, a) if isinstance(a, str) else a for a in args]
    real = [f"{w.group}-{lib}" if a == "G-own" else a for a in real]
    real = [f"{w.new}-{lib}" if a == "NEW-own" else a for a in real]
    real = [f"{w.txn}-{lib}-{action}" if a == "X-own" else a for a in real]
    return getattr(w.actions(lib, denial), action)(*real)


SAME = object()
#: (denied operation, action, arguments, ours: (where, code), theirs: SAME or (where, code),
#: or None: not run, see the comment)
CASES = [
    # Describe on the topic: metadata.
    ("describe-topic", "list_topics", ("T",), ("topic", TAF), SAME),
    ("describe-topic", "produce", ("T",), ("delivery", TAF), SAME),
    ("describe-topic", "subscribe", ("T", "G-own"), ("poll", TAF), SAME),
    # confluent-kafka's assign()ed consumer waits for ever without a word: ours reports it.
    ("describe-topic", "assign", ("T", "G-own"), ("poll", TAF), ("hang", None)),
    # Offsets of a topic the user may not describe: confluent-kafka answers
    # _UNKNOWN_PARTITION (_NOENT from the admin client); ours gives the broker's reason.
    ("describe-topic", "watermarks", ("T",), ("raised", TAF), ("raised", "_UNKNOWN_PARTITION")),
    ("describe-topic", "offsets_for_times", ("T",), ("raised", TAF),
     ("raised", "_UNKNOWN_PARTITION")),
    ("describe-topic", "list_offsets", ("T",), ("future", TAF), ("future", "_NOENT")),
    ("describe-topic", "committed", ("T", "G-own"), ("partition", TAF), SAME),
    ("describe-topic", "describe_topic", ("T",), ("future", TAF), SAME),
    # A record of a transaction that never reached the broker: confluent-kafka fails the
    # commit with _INCONSISTENT; ours names the cause.
    ("describe-topic", "transaction", ("X-own", "T"), ("raised-abortable", TAF),
     ("raised-abortable", "_INCONSISTENT")),
    # Read on the topic: fetching, committing its offsets.
    ("read-topic", "subscribe", ("T", "G-own"), ("poll", TAF), SAME),
    ("read-topic", "assign", ("T", "G-own"), ("poll", TAF), SAME),
    ("read-topic", "commit", ("T", "G-own"), ("raised", TAF), SAME),
    # Read on the group: joining it, committing.
    ("read-group", "subscribe", ("T", "G"), ("poll", GAF), SAME),
    ("read-group", "commit", ("T", "G"), ("raised", GAF), SAME),
    ("read-group", "transaction", ("X-own", "T", "G"), ("raised-abortable", GAF), SAME),
    # Write on the topic.
    ("write-topic", "produce", ("T",), ("delivery", TAF), SAME),
    ("write-topic", "produce", ("T", IDEMPOTENT), ("delivery", TAF), SAME),
    ("write-topic", "transaction", ("X-own", "T"), ("raised-abortable", TAF), SAME),
    # IdempotentWrite on the cluster (and Write on every topic): the idempotent producer's
    # InitProducerId. confluent-kafka raises the fatal error from poll(); ours fails the
    # record's delivery report with it and tells error_cb (checked below).
    ("idempotent-write+write", "produce", ("T", IDEMPOTENT), ("delivery", CAF),
     ("poll-raised", CAF)),
    # IdempotentWrite alone: Write on the topics still allows InitProducerId (KIP-679).
    ("idempotent-write", "produce", ("T", IDEMPOTENT), ("delivery", None), SAME),
    # Write / Describe on the transactional id: init_transactions() fails for good.
    ("write-txn", "init_transactions", ("X",), ("raised-fatal", XAF), SAME),
    ("describe-txn", "init_transactions", ("X",), ("raised-fatal", XAF), SAME),
    # Create on the cluster and the topic: create_topics, and auto-creation.
    ("create", "create_topic", ("NEW-own",), ("future", TAF), SAME),
    ("create", "produce", ("NEW-own",), ("delivery", TAF), SAME),
    # The broker answers TOPIC_AUTHORIZATION_FAILED to a consumer's auto-creation; ours
    # reports that, confluent-kafka UNKNOWN_TOPIC_OR_PART (hiding the cause).
    ("create", "subscribe", ("NEW-own", "G-own", {"allow.auto.create.topics": True}),
     ("poll", TAF), ("poll", "UNKNOWN_TOPIC_OR_PART")),
    # Describe on the group: finding its coordinator, describing and listing it.
    ("describe-group", "describe_group", ("G",), ("future", GAF), SAME),
    ("describe-group", "group_offsets", ("G",), ("future", GAF), SAME),
    ("describe-group", "listed_groups", ("G",), ("not-listed", None), SAME),
    ("describe-group", "subscribe", ("T", "G"), ("poll", GAF), SAME),
    # confluent-kafka's commit() waits 45 s and raises _WAIT_COORD: not run here.
    ("describe-group", "commit", ("T", "G"), ("raised", GAF), None),
    ("describe-group", "transaction", ("X-own", "T", "G"), ("raised-abortable", GAF), SAME),
    # Alter / AlterConfigs / DescribeConfigs through the admin client.
    ("alter-topic", "create_partitions", ("T",), ("future", TAF), SAME),
    ("alter-configs-topic", "alter_topic_config", ("T",), ("future", TAF), SAME),
    ("describe-configs-topic", "describe_topic_config", ("T",), ("future", TAF), SAME),
    ("alter-configs-cluster", "alter_broker_config", (), ("future", CAF), SAME),
    # Delete on the topic (and the cluster).
    ("delete-topic", "delete_records", ("T",), ("future", TAF), SAME),
    ("delete-topic", "delete_topic", ("T",), ("future", TAF), SAME),
    # Describe on the cluster: DescribeAcls. The broker answers CLUSTER_AUTHORIZATION_FAILED;
    # confluent-kafka's future succeeds (with no bindings) and hides it.
    ("describe-cluster", "describe_acls", (), ("future", CAF), ("ok", None)),
]


@pytest.mark.parametrize(("denial", "action", "args", "ours", "theirs"), CASES,
                         ids=[f"{c[0]}:{c[1]}{'-idem' if IDEMPOTENT in c[2] else ''}"
                              for c in CASES])
def test_denied_operation_reported_like_confluent(world, denial, action, args, ours, theirs):
    got = _run(world, "ours", denial, action, args)
    assert got.key() == ours, got
    if theirs is not None:
        reference = _run(world, "theirs", denial, action, args)
        assert reference.key() == (ours if theirs is SAME else theirs), reference


def _fatal_sequence(world: World, lib) -> list[tuple]:
    """What an idempotent producer refused InitProducerId reports, in order: error_cb,
    poll() raising, the delivery report, then produce() raising (name, fatal)."""
    events: list[tuple] = []
    view = user_view(world.cluster, world.denials["idempotent-write+write"].user)
    producer = lib.Producer(view.client_config({
        **IDEMPOTENT, "error_cb": lambda e: events.append(("error_cb", e.name(), e.fatal()))}))
    producer.produce(world.topic, b"x", on_delivery=lambda err, msg: events.append(
        ("delivery", err.name(), err.fatal())))
    deadline = time.monotonic() + 10
    while not any(e[0] == "delivery" for e in events) and time.monotonic() < deadline:
        try:
            producer.poll(0.2)
        except lib.KafkaException as exc:
            events.append(("poll", exc.args[0].name(), exc.args[0].fatal()))
    with pytest.raises(lib.KafkaException) as raised:
        producer.produce(world.topic, b"y")
    events.append(("produce", raised.value.args[0].name(), raised.value.args[0].fatal()))
    assert producer.flush(5) == 0
    return events


def test_idempotent_producer_denied_side_by_side(world):
    """confluent-kafka raises the fatal error once from poll(), then reports the record as
    _PURGE_QUEUE and raises _FATAL from produce(); ours tells error_cb (fatal), fails the
    record with the cause and raises the cause from produce(): the cause is never lost."""
    assert _fatal_sequence(world, kafka_fast) == [
        ("error_cb", CAF, True), ("delivery", CAF, True), ("produce", CAF, True)]
    assert _fatal_sequence(world, confluent_kafka) == [
        ("poll", CAF, True), ("delivery", "_PURGE_QUEUE", False), ("produce", "_FATAL", False)]


def test_consumer_closed_while_offsets_lookup_retries_logs_no_error(apache_kafka, caplog):
    """A watermark look-up that timed out while retrying (an unknown topic) leaves a metadata
    refresh scheduled; when it runs after close() it fails its waiters quietly (it raised in
    the I/O thread: logged as an error and passed to error_cb)."""
    errors: list = []
    caplog.set_level(logging.ERROR, logger="kafka_fast")
    for i in range(5):
        consumer = kafka_fast.Consumer(apache_kafka.client_config(
            {"group.id": "acl-closed", "error_cb": errors.append}))
        with pytest.raises(kafka_fast.KafkaException) as raised:
            consumer.get_watermark_offsets(
                kafka_fast.TopicPartition(unique_topic(f"acl-none{i}"), 0), timeout=0.5)
        assert raised.value.args[0].code() == kafka_fast.KafkaError._TIMED_OUT
        consumer.close()
    time.sleep(0.5)
    assert [r.getMessage() for r in caplog.records] == []
    assert errors == []
