"""The statistics of one client: librdkafka-shaped JSON for ``stats_cb`` and the flat
``metrics()`` dict, both built from one snapshot.

``ClientStats`` owns the client's ``ClientCounters``; what it reads from elsewhere comes in
as callables (``Sources``), set by the client that owns it: the network client's brokers
and leaders, the producer's queue snapshot, the consumer's partition and group snapshots.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from .counters import ClientCounters

#: librdkafka's "invalid offset" in statistics.
OFFSET_INVALID = -1001


@dataclass(frozen=True)
class BrokerView:
    """One broker as the network client sees it (all its connections together)."""

    node_id: int
    name: str  # librdkafka style: "host:port/nodeid" ("host:port/bootstrap")
    nodename: str  # "host:port"
    state: str  # INIT, DOWN, CONNECT, SSL_HANDSHAKE, APIVERSION_QUERY, AUTH_HANDSHAKE, UP
    outbuf_cnt: int  # requests waiting to be sent
    waitresp_cnt: int  # requests sent, waiting for a response


@dataclass(frozen=True)
class ProducerQueues:
    """A snapshot of the producer's queues, taken under the accumulator's lock."""

    msg_cnt: int
    msg_size: int
    msg_max: int
    msg_size_max: int
    #: (topic, partition) -> (msgq_cnt, msgq_bytes, xmit_msgq_cnt)
    partitions: dict[tuple[str, int], tuple[int, int, int]]


@dataclass(frozen=True)
class ConsumerPartition:
    """A snapshot of one assigned partition, taken under the consumer's fetch-state lock."""

    fetchq_cnt: int
    fetchq_size: int
    app_offset: int
    stored_offset: int
    committed_offset: int
    hi_offset: int
    lo_offset: int
    ls_offset: int


@dataclass(frozen=True)
class GroupView:
    state: str
    rebalance_cnt: int
    assignment_size: int


@dataclass
class Sources:
    """Where the snapshot's non-counter parts come from (each called once per snapshot)."""

    brokers: Callable[[], list[BrokerView]] = list
    leader: Callable[[str, int], int | None] = lambda _t, _p: None
    replyq: Callable[[], int] = lambda: 0
    producer: Callable[[], ProducerQueues] | None = None
    consumer: Callable[[], dict[tuple[str, int], ConsumerPartition]] | None = None
    group: Callable[[], GroupView] | None = None
    read_committed: bool = False
    extra: dict[str, Any] = field(default_factory=dict)


def _offset(value: int) -> int:
    return value if value >= 0 else OFFSET_INVALID


class ClientStats:
    """Counters plus sources of one client; ``snapshot()``, ``to_json()``, ``metrics()``."""

    def __init__(self, name: str, client_id: str, client_type: str) -> None:
        self.name = name
        self.client_id = client_id
        self.type = client_type
        self.counters = ClientCounters()
        self.sources = Sources()
        self.created = time.monotonic()

    # -- the librdkafka-shaped statistics ----------------------------------------------------
    def snapshot(self) -> dict[str, Any]:
        """The statistics object (see docs/statistics.md); callable from any thread."""
        src = self.sources
        counters = self.counters
        now = time.monotonic()
        brokers: dict[str, Any] = {}
        views = {v.node_id: v for v in src.brokers()}
        tx = tx_bytes = rx = rx_bytes = 0
        for node_id, bc in sorted(dict(counters.brokers).items()):
            tx += bc.tx
            tx_bytes += bc.txbytes
            rx += bc.rx
            rx_bytes += bc.rxbytes
            view = views.get(node_id)
            if view is None:
                continue  # a connection no longer kept (a retired bootstrap address)
            brokers[view.name] = {
                "name": view.name, "nodeid": node_id if node_id >= 0 else -1,
                "nodename": view.nodename, "state": view.state,
                "tx": bc.tx, "txbytes": bc.txbytes, "rx": bc.rx, "rxbytes": bc.rxbytes,
                "outbuf_cnt": view.outbuf_cnt, "waitresp_cnt": view.waitresp_cnt,
                "rtt": bc.rtt.snapshot(), "throttle": bc.throttle.snapshot()}
        queues = src.producer() if src.producer is not None else None
        assigned = src.consumer() if src.consumer is not None else {}
        parts = dict(counters.partitions)
        keys = set(parts) | set(assigned)
        if queues is not None:
            keys |= set(queues.partitions)
        topic_counters = dict(counters.topics)
        topics: dict[str, Any] = {}
        txmsgs = txmsg_bytes = rxmsgs = rxmsg_bytes = 0
        for topic, partition in sorted(keys):
            t = topics.get(topic)
            if t is None:
                tc = topic_counters.get(topic)
                t = topics[topic] = {
                    "topic": topic,
                    "batchsize": tc.batchsize.snapshot() if tc is not None else _EMPTY_WINDOW,
                    "batchcnt": tc.batchcnt.snapshot() if tc is not None else _EMPTY_WINDOW,
                    "partitions": {}}
            pc = parts.get((topic, partition))
            ptx, ptxb, prx, prxb = ((pc.txmsgs, pc.txbytes, pc.rxmsgs, pc.rxbytes)
                                    if pc is not None else (0, 0, 0, 0))
            txmsgs += ptx
            txmsg_bytes += ptxb
            rxmsgs += prx
            rxmsg_bytes += prxb
            q = queues.partitions.get((topic, partition), (0, 0, 0)) if queues else (0, 0, 0)
            cp = assigned.get((topic, partition))
            leader = src.leader(topic, partition)
            entry: dict[str, Any] = {
                "partition": partition, "leader": -1 if leader is None else leader,
                "msgq_cnt": q[0], "msgq_bytes": q[1], "xmit_msgq_cnt": q[2],
                "txmsgs": ptx, "txbytes": ptxb, "rxmsgs": prx, "rxbytes": prxb}
            entry.update(self._consumer_fields(cp, src.read_committed))
            t["partitions"][str(partition)] = entry
        out: dict[str, Any] = {
            "name": self.name, "client_id": self.client_id, "type": self.type,
            "ts": int(now * 1_000_000), "time": int(time.time()),
            "age": int((now - self.created) * 1_000_000), "replyq": src.replyq(),
            "msg_cnt": queues.msg_cnt if queues else 0,
            "msg_size": queues.msg_size if queues else 0,
            "msg_max": queues.msg_max if queues else 0,
            "msg_size_max": queues.msg_size_max if queues else 0,
            "tx": tx, "tx_bytes": tx_bytes, "rx": rx, "rx_bytes": rx_bytes,
            "txmsgs": txmsgs, "txmsg_bytes": txmsg_bytes,
            "rxmsgs": rxmsgs, "rxmsg_bytes": rxmsg_bytes,
            "brokers": brokers, "topics": topics}
        if src.group is not None:
            g = src.group()
            out["cgrp"] = {"state": g.state, "rebalance_cnt": g.rebalance_cnt,
                           "assignment_size": g.assignment_size}
        return out

    @staticmethod
    def _consumer_fields(cp: ConsumerPartition | None, read_committed: bool) -> dict[str, int]:
        if cp is None:
            return {"fetchq_cnt": 0, "fetchq_size": 0, "app_offset": OFFSET_INVALID,
                    "stored_offset": OFFSET_INVALID, "committed_offset": OFFSET_INVALID,
                    "hi_offset": OFFSET_INVALID, "lo_offset": OFFSET_INVALID,
                    "ls_offset": OFFSET_INVALID, "consumer_lag": -1,
                    "consumer_lag_stored": -1}
        end = cp.ls_offset if read_committed else cp.hi_offset
        lag = max(0, end - cp.committed_offset) if end >= 0 and cp.committed_offset >= 0 else -1
        stored = cp.stored_offset if cp.stored_offset >= 0 else cp.committed_offset
        lag_stored = max(0, end - stored) if end >= 0 and stored >= 0 else -1
        return {"fetchq_cnt": cp.fetchq_cnt, "fetchq_size": cp.fetchq_size,
                "app_offset": _offset(cp.app_offset), "stored_offset": _offset(cp.stored_offset),
                "committed_offset": _offset(cp.committed_offset),
                "hi_offset": _offset(cp.hi_offset), "lo_offset": _offset(cp.lo_offset),
                "ls_offset": _offset(cp.ls_offset), "consumer_lag": lag,
                "consumer_lag_stored": lag_stored}

    def to_json(self) -> str:
        return json.dumps(self.snapshot(), separators=(",", ":"))

    # -- metrics() ---------------------------------------------------------------------------
    def metrics(self) -> dict[str, int | float]:
        """A flat snapshot with Prometheus-style names; labelled series are keyed
        ``name{label="value",...}`` (see docs/statistics.md)."""
        s = self.snapshot()
        out: dict[str, int | float] = {}
        for name, key in _TOTALS:
            out[f"kafka_fast_{name}"] = s[key]
        out["kafka_fast_age_seconds"] = s["age"] / 1_000_000
        for b in s["brokers"].values():
            label = f'{{broker="{b["name"]}"}}'
            for name, key in _BROKER:
                out[f"kafka_fast_broker_{name}{label}"] = b[key]
            out[f"kafka_fast_broker_up{label}"] = 1 if b["state"] == "UP" else 0
            for window, unit in (("rtt", "rtt_us"), ("throttle", "throttle_ms")):
                for stat in ("avg", "max", "p99"):
                    out[f"kafka_fast_broker_{unit}_{stat}{label}"] = b[window][stat]
        counters = dict(self.counters.topics)
        for t in s["topics"].values():
            label = f'{{topic="{t["topic"]}"}}'
            out[f"kafka_fast_topic_batch_bytes_avg{label}"] = t["batchsize"]["avg"]
            out[f"kafka_fast_topic_batch_messages_avg{label}"] = t["batchcnt"]["avg"]
            tc = counters.get(t["topic"])
            if tc is not None and tc.wire_bytes:
                out[f"kafka_fast_topic_compression_ratio{label}"] = round(
                    tc.raw_bytes / tc.wire_bytes, 3)
            for p in t["partitions"].values():
                plabel = f'{{topic="{t["topic"]}",partition="{p["partition"]}"}}'
                for name, key in _PARTITION:
                    out[f"kafka_fast_partition_{name}{plabel}"] = p[key]
        cgrp = s.get("cgrp")
        if cgrp is not None:
            out["kafka_fast_consumer_rebalances_total"] = cgrp["rebalance_cnt"]
            out["kafka_fast_consumer_assignment_size"] = cgrp["assignment_size"]
        return out


_EMPTY_WINDOW = {"min": 0, "max": 0, "avg": 0, "sum": 0, "cnt": 0, "p50": 0, "p99": 0}

#: metrics() names (without the ``kafka_fast_`` prefix) and the statistics fields they copy.
_TOTALS = (
    ("tx_requests_total", "tx"), ("tx_bytes_total", "tx_bytes"),
    ("rx_responses_total", "rx"), ("rx_bytes_total", "rx_bytes"),
    ("tx_messages_total", "txmsgs"), ("tx_message_bytes_total", "txmsg_bytes"),
    ("rx_messages_total", "rxmsgs"), ("rx_message_bytes_total", "rxmsg_bytes"),
    ("queued_messages", "msg_cnt"), ("queued_bytes", "msg_size"),
    ("queued_messages_max", "msg_max"), ("queued_bytes_max", "msg_size_max"),
    ("reply_queue", "replyq"),
)
_BROKER = (
    ("tx_requests_total", "tx"), ("tx_bytes_total", "txbytes"),
    ("rx_responses_total", "rx"), ("rx_bytes_total", "rxbytes"),
    ("outbuf_requests", "outbuf_cnt"), ("waitresp_requests", "waitresp_cnt"),
)
_PARTITION = (
    ("tx_messages_total", "txmsgs"), ("tx_bytes_total", "txbytes"),
    ("rx_messages_total", "rxmsgs"), ("rx_bytes_total", "rxbytes"),
    ("queued_messages", "msgq_cnt"), ("xmit_messages", "xmit_msgq_cnt"),
    ("fetchq_messages", "fetchq_cnt"), ("fetchq_bytes", "fetchq_size"),
    ("app_offset", "app_offset"), ("committed_offset", "committed_offset"),
    ("stored_offset", "stored_offset"), ("hi_offset", "hi_offset"),
    ("lo_offset", "lo_offset"), ("consumer_lag", "consumer_lag"),
    ("consumer_lag_stored", "consumer_lag_stored"),
)
