"""Every field docs/statistics.md documents exists in librdkafka's statistics, at the same
place: a confluent-kafka Producer and Consumer report on the same broker."""

from __future__ import annotations

import json
import time

import pytest
from harness.topics import create_topic, unique_topic

from .doc_fields import documented

confluent_kafka = pytest.importorskip("confluent_kafka")


def _first_stats(client, reports: list[dict], want, seconds: float = 20.0) -> dict:
    """Poll ``client`` until one of its ``reports`` satisfies ``want``."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        client.poll(0.1)
        for r in reports:
            if want(r):
                return r
    raise AssertionError("no matching statistics from librdkafka")


def test_documented_fields_exist_in_librdkafka(kafka):
    sections, _ = documented()
    topic = unique_topic("stats-rdk")
    create_topic(kafka, topic, 2)
    reports: list[dict] = []

    def on_stats(payload: str) -> None:
        reports.append(json.loads(payload))

    p = confluent_kafka.Producer(kafka.client_config({
        "statistics.interval.ms": 200, "stats_cb": on_stats}))
    for i in range(10):
        p.produce(topic, b"x", partition=i % 2)
    p.flush(10)
    ours_top = sections["Top level"] - {"cgrp"}
    stats = _first_stats(p, reports, lambda r: topic in r.get("topics", {}) and any(
        b.get("nodeid", -1) >= 0 for b in r["brokers"].values()))
    assert ours_top <= set(stats), ours_top - set(stats)
    broker = next(b for b in stats["brokers"].values() if b["nodeid"] >= 0)
    assert sections["brokers"] <= set(broker), sections["brokers"] - set(broker)
    for window in ("rtt", "throttle"):
        assert sections["windows"] <= set(broker[window])
    t = stats["topics"][topic]
    assert sections["topics"] <= set(t), sections["topics"] - set(t)
    for window in ("batchsize", "batchcnt"):
        assert sections["windows"] <= set(t[window])
    part = t["partitions"]["0"]
    assert sections["partitions"] <= set(part), sections["partitions"] - set(part)
    assert stats["type"] == "producer"

    reports.clear()
    c = confluent_kafka.Consumer(kafka.client_config({
        "group.id": unique_topic("stats-rdk"), "statistics.interval.ms": 200,
        "stats_cb": on_stats}))
    try:
        c.subscribe([topic])
        stats = _first_stats(c, reports, lambda r: "cgrp" in r)
        assert sections["Top level"] <= set(stats)
        assert sections["cgrp"] <= set(stats["cgrp"]), sections["cgrp"] - set(stats["cgrp"])
    finally:
        c.close()
