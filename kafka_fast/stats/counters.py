"""Counters the clients keep for statistics, updated once per request, batch or fetch.

Each counter object has a single writer thread (the I/O thread): the connections update
their broker's ``BrokerCounters``, the producer's sender its ``PartitionCounters`` through
``BatchRecorder``, the consumer's fetch state through ``FetchRecorder``. Readers on other
threads (``metrics()``, the statistics timer) only read integers and copy dicts, which needs
no lock under the interpreter lock.
"""

from __future__ import annotations

from typing import Protocol

#: Samples kept per window for its percentiles.
WINDOW_SAMPLES = 1024


class Window:
    """min/max/avg/sum/cnt of a value over the client's lifetime; p50/p99 over the last
    ``WINDOW_SAMPLES`` values."""

    __slots__ = ("min", "max", "sum", "cnt", "samples", "pos")

    def __init__(self) -> None:
        self.min = 0
        self.max = 0
        self.sum = 0
        self.cnt = 0
        self.samples: list[int] = []
        self.pos = 0

    def add(self, value: int) -> None:
        if self.cnt == 0 or value < self.min:
            self.min = value
        if value > self.max:
            self.max = value
        self.sum += value
        self.cnt += 1
        samples = self.samples
        if len(samples) < WINDOW_SAMPLES:
            samples.append(value)
        else:
            samples[self.pos] = value
            self.pos = (self.pos + 1) % WINDOW_SAMPLES

    def snapshot(self) -> dict[str, int]:
        ordered = sorted(self.samples)
        cnt = self.cnt

        def pct(p: float) -> int:
            return ordered[min(len(ordered) - 1, int(len(ordered) * p))] if ordered else 0

        return {"min": self.min, "max": self.max, "avg": self.sum // cnt if cnt else 0,
                "sum": self.sum, "cnt": cnt, "p50": pct(0.50), "p99": pct(0.99)}


class BrokerCounters:
    """Requests and bytes to and from one broker (all its connections), round-trip times
    (microseconds) and throttle times (milliseconds)."""

    __slots__ = ("tx", "txbytes", "rx", "rxbytes", "connects", "disconnects", "rtt",
                 "throttle")

    def __init__(self) -> None:
        self.tx = 0
        self.txbytes = 0
        self.rx = 0
        self.rxbytes = 0
        self.connects = 0
        self.disconnects = 0
        self.rtt = Window()
        self.throttle = Window()

    def request_sent(self, nbytes: int) -> None:
        self.tx += 1
        self.txbytes += nbytes

    def response_received(self, nbytes: int, rtt_s: float) -> None:
        self.rx += 1
        self.rxbytes += nbytes
        self.rtt.add(int(rtt_s * 1_000_000))

    def throttled(self, throttle_ms: int) -> None:
        self.throttle.add(throttle_ms)


class PartitionCounters:
    """Messages and bytes produced to (``tx*``) or fetched from (``rx*``) one partition."""

    __slots__ = ("txmsgs", "txbytes", "rxmsgs", "rxbytes")

    def __init__(self) -> None:
        self.txmsgs = 0
        self.txbytes = 0
        self.rxmsgs = 0
        self.rxbytes = 0


class TopicCounters:
    """Produced batch sizes (wire bytes) and batch record counts of one topic, plus the
    uncompressed and wire bytes behind the compression ratio."""

    __slots__ = ("batchsize", "batchcnt", "raw_bytes", "wire_bytes")

    def __init__(self) -> None:
        self.batchsize = Window()
        self.batchcnt = Window()
        self.raw_bytes = 0
        self.wire_bytes = 0


class BatchRecorder(Protocol):
    """What the producer's sender reports: one call per delivered batch."""

    def batch_delivered(self, topic: str, partition: int, count: int, raw_bytes: int,
                        wire_bytes: int) -> None: ...


class FetchRecorder(Protocol):
    """What the consumer's fetch state reports: one call per fetched chunk of a partition."""

    def fetched(self, topic: str, partition: int, count: int, nbytes: int) -> None: ...


class ClientCounters:
    """Every counter of one client: per broker (keyed by node id, bootstrap addresses
    negative), per partition and per topic. Implements ``BatchRecorder`` and
    ``FetchRecorder``."""

    def __init__(self) -> None:
        self.brokers: dict[int, BrokerCounters] = {}
        self.partitions: dict[tuple[str, int], PartitionCounters] = {}
        self.topics: dict[str, TopicCounters] = {}

    def broker(self, node_id: int) -> BrokerCounters:
        counters = self.brokers.get(node_id)
        if counters is None:
            counters = self.brokers[node_id] = BrokerCounters()
        return counters

    def partition(self, topic: str, partition: int) -> PartitionCounters:
        key = (topic, partition)
        counters = self.partitions.get(key)
        if counters is None:
            counters = self.partitions[key] = PartitionCounters()
        return counters

    def topic(self, name: str) -> TopicCounters:
        counters = self.topics.get(name)
        if counters is None:
            counters = self.topics[name] = TopicCounters()
        return counters

    def batch_delivered(self, topic: str, partition: int, count: int, raw_bytes: int,
                        wire_bytes: int) -> None:
        p = self.partition(topic, partition)
        p.txmsgs += count
        p.txbytes += wire_bytes
        t = self.topic(topic)
        t.batchsize.add(wire_bytes)
        t.batchcnt.add(count)
        t.raw_bytes += raw_bytes
        t.wire_bytes += wire_bytes

    def fetched(self, topic: str, partition: int, count: int, nbytes: int) -> None:
        p = self.partition(topic, partition)
        p.rxmsgs += count
        p.rxbytes += nbytes
