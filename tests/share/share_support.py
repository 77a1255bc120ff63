"""Helpers of the share-group tests: topics with records, group configs, polling loops."""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable

from kafka_fast import AdminClient, Producer
from kafka_fast.admin import NewTopic
from kafka_fast.config import make_config
from kafka_fast.net import KafkaClient
from kafka_fast.protocol import messages as m

#: ConfigResource type of a group in (Incremental)AlterConfigs (Kafka's ConfigResource.Type)
GROUP_CONFIG_RESOURCE = 32


def new_topic(bootstrap: str, partitions: int = 1, records: int = 0) -> str:
    """A new topic with ``records`` records, values ``v0``, ``v1``... (partition i % n)."""
    name = f"share-{uuid.uuid4().hex[:10]}"
    with AdminClient({"bootstrap.servers": bootstrap}) as admin:
        for fut in admin.create_topics([NewTopic(name, partitions, 1)]).values():
            fut.result(30)
    if records:
        produce(bootstrap, name, [b"v%d" % i for i in range(records)], partitions)
    return name


def produce(bootstrap: str, topic: str, values: list[bytes], partitions: int = 1,
            batch_each: bool = False) -> None:
    """Write ``values`` (value i to partition i % partitions); ``batch_each``: one record
    batch per record."""
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 0})
    for i, value in enumerate(values):
        producer.produce(topic, value=value, partition=i % partitions)
        if batch_each:
            assert producer.flush(30) == 0
    assert producer.flush(30) == 0
    producer.close()


def set_group_config(bootstrap: str, group: str, configs: dict[str, str]) -> None:
    """Set share-group configs (e.g. share.auto.offset.reset) with IncrementalAlterConfigs
    on the group resource."""
    R = m.IncrementalAlterConfigsRequest
    req = R(resources=[R.AlterConfigsResource(
        resource_type=GROUP_CONFIG_RESOURCE, resource_name=group,
        configs=[R.AlterableConfig(name=k, config_operation=0, value=v)
                 for k, v in configs.items()])])
    with KafkaClient(make_config({"bootstrap.servers": bootstrap}, "admin")) as client:
        resp = client.send_any(req).result(30)
    for res in resp.responses:
        assert res.error_code == 0, (res.error_code, res.error_message)


def new_group(bootstrap: str) -> str:
    """A share group that starts at the earliest offsets."""
    group = f"share-group-{uuid.uuid4().hex[:10]}"
    set_group_config(bootstrap, group, {"share.auto.offset.reset": "earliest"})
    return group


def poll_until(consumer, done: Callable[[list], bool], timeout: float = 30.0,
               each: Callable[[object], None] | None = None) -> list:
    """Poll ``consumer`` until ``done(all messages so far)``; the messages (error-free)."""
    got: list = []
    deadline = time.monotonic() + timeout
    while not done(got):
        assert time.monotonic() < deadline, f"gave up after {timeout}s with {len(got)} records"
        batch = consumer.poll(0.5)
        for msg in batch:
            assert msg.error() is None, msg.error()
            if each is not None:
                each(msg)
        got.extend(batch)
    return got


def describe_share_group(bootstrap: str, group: str) -> list[str]:
    """The member ids ShareGroupDescribe lists for ``group`` (one-broker cluster: the broker
    is the coordinator)."""
    req = m.ShareGroupDescribeRequest(group_ids=[group])
    with KafkaClient(make_config({"bootstrap.servers": bootstrap}, "admin")) as client:
        resp = client.send_any(req).result(30)
    (described,) = resp.groups
    assert described.error_code == 0, (described.error_code, described.error_message)
    return [member.member_id for member in described.members]
