"""stats_cb and metrics() against a real broker with known traffic."""

from __future__ import annotations

import json
import threading
import time

from harness.topics import create_topic, unique_topic

from kafka_fast import AdminClient, Consumer, Producer, TopicPartition

from .doc_fields import documented

N = 200  # records, half to each of the 2 partitions
VALUE = b"v" * 100
BATCHES = 4  # two flushes, each sealing one batch per partition
INTERVAL_MS = 300


class Collector:
    """A stats_cb that keeps each report and the thread it ran on."""

    def __init__(self) -> None:
        self.reports: list[dict] = []
        self.threads: set[int] = set()

    def __call__(self, payload: str) -> None:
        self.threads.add(threading.get_ident())
        self.reports.append(json.loads(payload))


def _poll_for(client, seconds: float) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        client.poll(0.05)


def _check_layout(stats: dict, sections: dict[str, set[str]], consumer: bool) -> None:
    """Every object has exactly the documented fields."""
    top = sections["Top level"] if consumer else sections["Top level"] - {"cgrp"}
    assert set(stats) == top
    assert stats["brokers"]
    for b in stats["brokers"].values():
        assert set(b) == sections["brokers"]
        assert set(b["rtt"]) == set(b["throttle"]) == sections["windows"]
    assert stats["topics"]
    for t in stats["topics"].values():
        assert set(t) == sections["topics"]
        assert set(t["batchsize"]) == set(t["batchcnt"]) == sections["windows"]
        for p in t["partitions"].values():
            assert set(p) == sections["partitions"]
    if consumer:
        assert set(stats["cgrp"]) == sections["cgrp"]


def _check_metrics(metrics: dict, documented_metrics: set[str]) -> set[str]:
    names = {k.split("{", 1)[0] for k in metrics}
    assert names <= documented_metrics, names - documented_metrics
    return names


def test_producer_and_consumer_statistics(real_broker):
    kafka = real_broker
    sections, metric_names = documented()
    topic = unique_topic("stats")
    create_topic(kafka, topic, 2)
    seen_metrics: set[str] = set()

    # -- producer: N records in BATCHES batches ----------------------------------------------
    pstats = Collector()
    p = Producer(kafka.client_config({
        "linger.ms": 60000, "statistics.interval.ms": INTERVAL_MS, "stats_cb": pstats,
        "client.id": "stats-producer"}))
    try:
        for _ in range(2):
            for i in range(N // 2):
                p.produce(topic, VALUE, partition=i % 2)
            assert p.flush(15) == 0
        started = time.monotonic()
        _poll_for(p, 1.5)
        elapsed = time.monotonic() - started
        assert len(pstats.reports) >= 2
        assert len(pstats.reports) <= elapsed / (INTERVAL_MS / 1000) + 8  # since creation
        assert pstats.threads == {threading.get_ident()}
        last = pstats.reports[-1]
        _check_layout(last, sections, consumer=False)
        assert last["type"] == "producer" and last["client_id"] == "stats-producer"
        assert last["txmsgs"] == N
        assert last["msg_cnt"] == 0 and last["msg_size"] == 0
        assert last["tx"] > 0 and last["rx"] > 0 and last["tx_bytes"] > N * len(VALUE)
        assert any(b["rtt"]["cnt"] > 0 for b in last["brokers"].values())
        assert any(b["state"] == "UP" for b in last["brokers"].values())
        t = last["topics"][topic]
        assert {k: v["txmsgs"] for k, v in t["partitions"].items()} == {"0": N // 2,
                                                                        "1": N // 2}
        assert all(v["leader"] >= 0 for v in t["partitions"].values())
        assert t["batchcnt"]["cnt"] == BATCHES and t["batchcnt"]["sum"] == N
        assert t["batchsize"]["sum"] == last["txmsg_bytes"] > N * len(VALUE)
        assert last["ts"] > pstats.reports[0]["ts"]
        m = p.metrics()
        seen_metrics |= _check_metrics(m, metric_names)
        assert m["kafka_fast_tx_messages_total"] == N
        assert m[f'kafka_fast_partition_tx_messages_total{{topic="{topic}",partition="1"}}'] \
            == N // 2
        assert m["kafka_fast_tx_requests_total"] >= last["tx"]
    finally:
        p.flush(5)

    # -- consumer: read the N records, commit ------------------------------------------------
    cstats = Collector()
    c = Consumer(kafka.client_config({
        "group.id": unique_topic("stats-group"), "auto.offset.reset": "earliest",
        "enable.auto.commit": False, "statistics.interval.ms": INTERVAL_MS,
        "stats_cb": cstats}))
    try:
        c.subscribe([topic])
        got = 0
        deadline = time.monotonic() + 30
        while got < N and time.monotonic() < deadline:
            msg = c.poll(0.5)
            if msg is not None and msg.error() is None:
                got += 1
        assert got == N
        c.commit(asynchronous=False)
        before = len(cstats.reports)
        deadline = time.monotonic() + 1.5
        while time.monotonic() < deadline:
            assert c.poll(0.1) is None
        assert len(cstats.reports) - before >= 2
        assert cstats.threads == {threading.get_ident()}
        last = cstats.reports[-1]
        _check_layout(last, sections, consumer=True)
        assert last["type"] == "consumer"
        assert last["rxmsgs"] == N and last["rxmsg_bytes"] > N * len(VALUE)
        assert last["cgrp"]["assignment_size"] == 2
        assert last["cgrp"]["rebalance_cnt"] >= 1 and last["cgrp"]["state"] == "up"
        for part in last["topics"][topic]["partitions"].values():
            assert part["rxmsgs"] == N // 2
            assert part["hi_offset"] == N // 2
            assert part["app_offset"] == part["committed_offset"] == N // 2
            assert part["consumer_lag"] == 0
            assert part["fetchq_cnt"] == 0
        assert c.position([TopicPartition(topic, 0)])[0].offset == N // 2
        m = c.metrics()
        seen_metrics |= _check_metrics(m, metric_names)
        assert m["kafka_fast_rx_messages_total"] == N
        assert m[f'kafka_fast_partition_consumer_lag{{topic="{topic}",partition="0"}}'] == 0
        assert m["kafka_fast_consumer_assignment_size"] == 2
    finally:
        c.close()
    assert seen_metrics == metric_names  # every documented metric exists


def test_admin_client_statistics(kafka):
    stats = Collector()
    admin = AdminClient(kafka.client_config({"statistics.interval.ms": 200,
                                             "stats_cb": stats}))
    try:
        admin.list_topics(timeout=10)
        deadline = time.monotonic() + 3
        while len(stats.reports) < 2 and time.monotonic() < deadline:
            admin.poll(0.1)
        assert len(stats.reports) >= 2
        io_threads = {t.ident for t in threading.enumerate() if t.name.startswith("kafka_fast-io")}
        assert not stats.threads & io_threads
        assert stats.reports[-1]["tx"] > 0
        m = admin.metrics()
        assert m["kafka_fast_tx_requests_total"] > 0
        assert any(k.startswith("kafka_fast_broker_rtt_us_avg{") for k in m)
    finally:
        admin.close()


def test_no_statistics_without_interval(kafka):
    stats = Collector()
    p = Producer(kafka.client_config({"stats_cb": stats}))
    try:
        _poll_for(p, 0.5)
        assert stats.reports == []
        assert "kafka_fast_tx_requests_total" in p.metrics()
    finally:
        p.flush(5)
