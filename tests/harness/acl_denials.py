"""Users allowed everything but one operation, on Apache Kafka's StandardAuthorizer, and the
client actions that operation guards, run alike with kafka_fast and confluent-kafka.

Each user gets ALLOW ALL on every topic, group, transactional id and the cluster, and a
DENY binding (which wins over any ALLOW) on the operation under test. Every action returns
an ``Outcome``: where the client reported the denial (a delivery report, a message from
poll(), an exception, an admin future, error_cb) and the error's code, so the two clients
can be compared side by side. Every action is bounded in time.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from types import ModuleType
from typing import Any

from harness.apache_kafka import USERS, allow_everything, create_users
from harness.brokers import Broker

# Kafka's ResourceType / AclOperation / names used in the deny bindings.
CLUSTER = "kafka-cluster"
BOUND = 20.0  # seconds any one action may take before it counts as a hang


@dataclass(frozen=True)
class Denial:
    """``user`` may do everything except ``operation`` on each of ``resources``
    (``(resource type, name, pattern type)``)."""

    user: str
    operation: str
    resources: tuple[tuple[str, str, str], ...]


@dataclass
class Outcome:
    """Where a client reported a failure and with which code names (None: no failure)."""

    where: str
    code: str | None
    error_cb: list[str] = field(default_factory=list)

    def key(self) -> tuple[str, str | None]:
        return self.where, self.code


def _name(err: Any) -> str:
    """The code name of a KafkaError of either client (``err.name()`` is the code's name)."""
    return str(err.name())


def set_up_denials(cluster: Any, denials: list[Denial]) -> None:
    """Create the SCRAM users of ``denials``, allow each everything and add its deny bindings
    (through the PLAINTEXT listener, where ANONYMOUS is a super user); wait until every
    binding is in the broker's authorizer and every user can log in."""
    from confluent_kafka.admin import (
        AclBinding,
        AclBindingFilter,
        AclOperation,
        AclPermissionType,
        AdminClient,
        ResourcePatternType,
        ResourceType,
    )

    create_users(cluster, {d.user: password(d.user) for d in denials})
    for denial in denials:
        allow_everything(cluster, denial.user)
    bindings = [AclBinding(ResourceType[rtype], name, ResourcePatternType[pattern],
                           f"User:{d.user}", "*", AclOperation[d.operation],
                           AclPermissionType.DENY)
                for d in denials for rtype, name, pattern in d.resources]
    admin = AdminClient(cluster.client_config())
    for fut in admin.create_acls(bindings, request_timeout=30).values():
        fut.result(30)
    deadline = time.monotonic() + 30
    for denial in denials:
        wanted = len(denial.resources) + 4  # the deny bindings and the four ALLOW ALL
        while True:
            seen = admin.describe_acls(AclBindingFilter(
                ResourceType.ANY, None, ResourcePatternType.ANY, f"User:{denial.user}", None,
                AclOperation.ANY, AclPermissionType.ANY), request_timeout=10).result(15)
            if len(seen) >= wanted:
                break
            if time.monotonic() > deadline:
                raise TimeoutError(f"ACLs of {denial.user}: {len(seen)} of {wanted}")
            time.sleep(0.2)
    for denial in denials:
        _wait_for_login(user_view(cluster, denial.user), deadline)


def password(user: str) -> str:
    return USERS.get(user, f"{user}-secret")


def user_view(cluster: Any, user: str) -> Broker:
    return cluster.as_user(user, "SCRAM-SHA-256", password=password(user))


def _wait_for_login(view: Broker, deadline: float) -> None:
    from confluent_kafka.admin import AdminClient

    while True:
        try:
            AdminClient(view.client_config()).list_topics(timeout=3)
            return
        except Exception as exc:  # KafkaException: the credentials have not arrived yet
            if time.monotonic() > deadline:
                raise TimeoutError(f"{view.sasl_username} cannot log in: {exc}") from exc
            time.sleep(0.2)


def _drop(lib: ModuleType, producer: Any) -> None:
    """Let a producer go without waiting (flush() raises a fatal error after one)."""
    try:
        producer.flush(0)
    except lib.KafkaException:
        pass


# -- the actions, written once against the confluent-kafka API both clients offer ----------

class Actions:
    """The client operations under test for one client library (``kafka_fast`` or
    ``confluent_kafka``) as one user (``view``)."""

    def __init__(self, lib: ModuleType, admin_lib: ModuleType, view: Broker) -> None:
        self.lib = lib
        self.admin_lib = admin_lib
        self.view = view
        self.errors: list[str] = []

    def _conf(self, extra: dict[str, Any]) -> dict[str, Any]:
        def on_error(err: Any) -> None:
            self.errors.append(_name(err))

        return self.view.client_config({"error_cb": on_error, **extra})

    def _outcome(self, where: str, code: str | None) -> Outcome:
        return Outcome(where, code, sorted(set(self.errors)))

    # producer ---------------------------------------------------------------------------
    def produce(self, topic: str, extra: dict[str, Any] | None = None) -> Outcome:
        """Produce one record; the delivery report's error (or where an exception came
        from; ``hang`` when nothing was reported within BOUND)."""
        producer = self.lib.Producer(self._conf({"message.timeout.ms": 15000,
                                                 "linger.ms": 5, **(extra or {})}))
        reports: list[Any] = []
        try:
            producer.produce(topic, b"denied?", on_delivery=lambda err, msg: reports.append(err))
        except self.lib.KafkaException as exc:
            _drop(self.lib, producer)
            return self._outcome("produce-raised", _name(exc.args[0]))
        try:
            deadline = time.monotonic() + BOUND
            while not reports and time.monotonic() < deadline:
                producer.poll(0.2)
        except self.lib.KafkaException as exc:
            return self._outcome("poll-raised", _name(exc.args[0]))
        finally:
            _drop(self.lib, producer)
        if not reports:
            return self._outcome("hang", None)
        err = reports[0]
        return self._outcome("delivery", None if err is None else _name(err))

    def init_transactions(self, transactional_id: str) -> Outcome:
        producer = self.lib.Producer(self._conf({"transactional.id": transactional_id}))
        started = time.monotonic()
        try:
            producer.init_transactions(BOUND)
        except self.lib.KafkaException as exc:
            if time.monotonic() - started >= BOUND - 0.5:
                return self._outcome("hang", _name(exc.args[0]))
            fatal = exc.args[0].fatal()
            return self._outcome("raised-fatal" if fatal else "raised", _name(exc.args[0]))
        finally:
            _drop(self.lib, producer)
        return self._outcome("ok", None)

    # consumer ---------------------------------------------------------------------------
    def _poll_for_error(self, consumer: Any) -> Outcome:
        deadline = time.monotonic() + BOUND
        while time.monotonic() < deadline:
            try:
                msg = consumer.poll(0.2)
            except self.lib.KafkaException as exc:
                return self._outcome("poll-raised", _name(exc.args[0]))
            if msg is None:
                continue
            if msg.error() is not None:
                return self._outcome("poll", _name(msg.error()))
            return self._outcome("record", None)
        return self._outcome("hang", None)

    def subscribe(self, topic: str, group: str, extra: dict[str, Any] | None = None
                  ) -> Outcome:
        """Subscribe in ``group`` and poll until an error message or a record comes."""
        consumer = self.lib.Consumer(self._conf({
            "group.id": group, "auto.offset.reset": "earliest", "enable.auto.commit": False,
            "session.timeout.ms": 6000, **(extra or {})}))
        try:
            consumer.subscribe([topic])
            return self._poll_for_error(consumer)
        finally:
            consumer.close()

    def assign(self, topic: str, group: str) -> Outcome:
        """assign() partition 0 from the beginning and poll until an error or a record."""
        consumer = self.lib.Consumer(self._conf({
            "group.id": group, "auto.offset.reset": "earliest", "enable.auto.commit": False}))
        try:
            consumer.assign([self.lib.TopicPartition(topic, 0, self.lib.OFFSET_BEGINNING)])
            return self._poll_for_error(consumer)
        finally:
            consumer.close()

    def commit(self, topic: str, group: str) -> Outcome:
        """A synchronous commit of offset 1 of partition 0 without group membership."""
        consumer = self.lib.Consumer(self._conf({"group.id": group,
                                                 "enable.auto.commit": False}))
        try:
            consumer.commit(offsets=[self.lib.TopicPartition(topic, 0, 1)],
                            asynchronous=False)
        except self.lib.KafkaException as exc:
            return self._outcome("raised", _name(exc.args[0]))
        finally:
            consumer.close()
        return self._outcome("ok", None)

    def committed(self, topic: str, group: str) -> Outcome:
        """committed() of partition 0 (OffsetFetch)."""
        consumer = self.lib.Consumer(self._conf({"group.id": group}))
        try:
            (tp,) = consumer.committed([self.lib.TopicPartition(topic, 0)], timeout=BOUND)
        except self.lib.KafkaException as exc:
            return self._outcome("raised", _name(exc.args[0]))
        finally:
            consumer.close()
        return self._outcome("partition", None if tp.error is None else _name(tp.error))

    # metadata and admin -----------------------------------------------------------------
    def _admin(self) -> Any:
        """An AdminClient kept until the next one (confluent-kafka fails the futures of a
        client that is garbage collected)."""
        self.admin = self.admin_lib.AdminClient(self._conf({"request.timeout.ms": 15000}))
        return self.admin

    def list_topics(self, topic: str) -> Outcome:
        admin = self._admin()
        try:
            md = admin.list_topics(topic, timeout=BOUND)
        except self.lib.KafkaException as exc:
            return self._outcome("raised", _name(exc.args[0]))
        err = md.topics[topic].error if topic in md.topics else None
        return self._outcome("topic", None if err is None else _name(err))

    def _future(self, fut: Any) -> Outcome:
        try:
            fut.result(BOUND)
        except self.lib.KafkaException as exc:
            return self._outcome("future", _name(exc.args[0]))
        except TimeoutError:
            return self._outcome("hang", None)
        return self._outcome("ok", None)

    def create_topic(self, topic: str) -> Outcome:
        (fut,) = self._admin().create_topics([self.admin_lib.NewTopic(topic, 1, 1)]).values()
        return self._future(fut)

    def create_partitions(self, topic: str) -> Outcome:
        (fut,) = self._admin().create_partitions(
            [self.admin_lib.NewPartitions(topic, 2)]).values()
        return self._future(fut)

    def alter_topic_config(self, topic: str) -> Outcome:
        a = self.admin_lib
        resource = a.ConfigResource(a.ResourceType.TOPIC, topic, incremental_configs=[
            a.ConfigEntry("retention.ms", "86400000",
                          incremental_operation=a.AlterConfigOpType.SET)])
        (fut,) = self._admin().incremental_alter_configs([resource]).values()
        return self._future(fut)

    def describe_topic_config(self, topic: str) -> Outcome:
        a = self.admin_lib
        (fut,) = self._admin().describe_configs(
            [a.ConfigResource(a.ResourceType.TOPIC, topic)]).values()
        return self._future(fut)

    def delete_topic(self, topic: str) -> Outcome:
        (fut,) = self._admin().delete_topics([topic], operation_timeout=10).values()
        return self._future(fut)

    def describe_group(self, group: str) -> Outcome:
        (fut,) = self._admin().describe_consumer_groups([group]).values()
        return self._future(fut)

    def group_offsets(self, group: str) -> Outcome:
        (fut,) = self._admin().list_consumer_group_offsets(
            [self.lib.ConsumerGroupTopicPartitions(group)]).values()
        return self._future(fut)

    def listed_groups(self, group: str) -> Outcome:
        """list_consumer_groups(): whether ``group`` is among the groups listed."""
        fut = self._admin().list_consumer_groups(request_timeout=BOUND)
        try:
            result = fut.result(BOUND)
        except self.lib.KafkaException as exc:
            return self._outcome("future", _name(exc.args[0]))
        names = {g.group_id for g in result.valid}
        return self._outcome("listed" if group in names else "not-listed",
                             None if not result.errors else _name(result.errors[0]))

    def delete_group(self, group: str) -> Outcome:
        (fut,) = self._admin().delete_consumer_groups([group]).values()
        return self._future(fut)

    def alter_group_offsets(self, topic: str, group: str) -> Outcome:
        (fut,) = self._admin().alter_consumer_group_offsets(
            [self.lib.ConsumerGroupTopicPartitions(
                group, [self.lib.TopicPartition(topic, 0, 1)])]).values()
        return self._future(fut)

    def alter_broker_config(self) -> Outcome:
        a = self.admin_lib
        resource = a.ConfigResource(a.ResourceType.BROKER, "1", incremental_configs=[
            a.ConfigEntry("log.cleaner.threads", "1",
                          incremental_operation=a.AlterConfigOpType.SET)])
        (fut,) = self._admin().incremental_alter_configs([resource]).values()
        return self._future(fut)

    def describe_acls(self) -> Outcome:
        a = self.admin_lib
        return self._future(self._admin().describe_acls(a.AclBindingFilter(
            a.ResourceType.ANY, None, a.ResourcePatternType.ANY, None, None,
            a.AclOperation.ANY, a.AclPermissionType.ANY)))

    def watermarks(self, topic: str) -> Outcome:
        consumer = self.lib.Consumer(self._conf({"group.id": "acl-watermarks"}))
        try:
            consumer.get_watermark_offsets(self.lib.TopicPartition(topic, 0), timeout=BOUND)
        except self.lib.KafkaException as exc:
            return self._outcome("raised", _name(exc.args[0]))
        finally:
            consumer.close()
        return self._outcome("ok", None)

    def transaction(self, transactional_id: str, topic: str, group: str | None = None
                    ) -> Outcome:
        """init, begin, produce one record to ``topic`` (and send offsets of ``group`` when
        given), commit; where the first failure showed (``commit`` raising, a delivery
        report) and whether the error asks for an abort."""
        producer = self.lib.Producer(self._conf({"transactional.id": transactional_id}))
        reports: list[Any] = []
        try:
            producer.init_transactions(BOUND)
            producer.begin_transaction()
            producer.produce(topic, b"txn", on_delivery=lambda err, msg: reports.append(err))
            if group is not None:
                consumer = self.lib.Consumer(self._conf({"group.id": group}))
                try:
                    producer.send_offsets_to_transaction(
                        [self.lib.TopicPartition(topic, 0, 1)],
                        consumer.consumer_group_metadata(), BOUND)
                finally:
                    consumer.close()
            producer.commit_transaction(BOUND)
        except self.lib.KafkaException as exc:
            err = exc.args[0]
            where = "raised-abortable" if err.txn_requires_abort() else "raised"
            return self._outcome(where, _name(err))
        finally:
            _drop(self.lib, producer)
        err = reports[0] if reports else None
        return self._outcome("committed", None if err is None else _name(err))

    def offsets_for_times(self, topic: str) -> Outcome:
        consumer = self.lib.Consumer(self._conf({"group.id": "acl-times"}))
        try:
            (tp,) = consumer.offsets_for_times([self.lib.TopicPartition(topic, 0, 0)],
                                               timeout=BOUND)
        except self.lib.KafkaException as exc:
            return self._outcome("raised", _name(exc.args[0]))
        finally:
            consumer.close()
        return self._outcome("partition", None if tp.error is None else _name(tp.error))

    def list_offsets(self, topic: str) -> Outcome:
        a = self.admin_lib
        (fut,) = self._admin().list_offsets(
            {self.lib.TopicPartition(topic, 0): a.OffsetSpec.latest()}).values()
        return self._future(fut)

    def describe_topic(self, topic: str) -> Outcome:
        (fut,) = self._admin().describe_topics(
            self.lib.TopicCollection([topic])).values()
        return self._future(fut)

    def delete_records(self, topic: str) -> Outcome:
        (fut,) = self._admin().delete_records([self.lib.TopicPartition(topic, 0, 1)]).values()
        return self._future(fut)
