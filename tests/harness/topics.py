"""Topic helpers that work on every broker kind."""

from __future__ import annotations

import time
import uuid

from harness.brokers import Broker


def unique_topic(prefix: str = "t") -> str:
    """A topic name no other test uses: ``<prefix>-<12 hex digits>``."""
    return f"{prefix}-{uuid.uuid4().hex[:12]}"


def create_topic(
    broker: Broker,
    name: str,
    partitions: int = 1,
    replication_factor: int = 1,
    timeout: float = 20.0,
) -> None:
    """Create ``name`` on ``broker`` and wait until metadata shows every partition with a leader.

    Mock cluster: its control channel; Tansu and external clusters: CreateTopics
    through confluent-kafka's AdminClient.
    """
    broker.create_topic(name, partitions, replication_factor)
    wait_for_topic(broker, name, partitions, timeout)


def wait_for_topic(broker: Broker, name: str, partitions: int, timeout: float = 20.0) -> dict:
    """Poll metadata until ``name`` has ``partitions`` partitions, each with a leader.

    Returns ``{partition: leader_id}``; raises TimeoutError naming what was last seen.
    """
    from confluent_kafka.admin import AdminClient

    admin = AdminClient(broker.client_config())
    deadline = time.monotonic() + timeout
    seen: object = None
    while time.monotonic() < deadline:
        try:
            md = admin.list_topics(name, timeout=5)
        except Exception as exc:  # KafkaException while the cluster settles
            seen = exc
            time.sleep(0.1)
            continue
        topic = md.topics.get(name)
        if topic is not None and topic.error is None:
            leaders = {p.id: p.leader for p in topic.partitions.values()}
            seen = leaders
            if len(leaders) == partitions and all(v >= 0 for v in leaders.values()):
                return leaders
        else:
            seen = topic.error if topic is not None else "absent"
        time.sleep(0.1)
    raise TimeoutError(f"topic {name!r} not ready with {partitions} partitions: last saw {seen}")
