"""One fault schedule through Toxiproxy, for kafka_fast or confluent-kafka alike.

A producer writes ``records`` keyed records to a 3-partition topic (replication factor 3) of a
cluster reached only through one proxy per broker, paced over ``produce_seconds``; from
``fault_at`` seconds on, the toxics of one ``Fault`` sit on the proxy of partition 0's leader
for ``window`` seconds, then are removed and the producer flushes. The log is read back
directly (not through the proxies) and compared with what was sent, per partition in order.
A consumer group then reads the topic through the proxies under the same fault. What happened
is a ``Outcome``: lost, duplicated, out of order, wedged (flush or read never finished),
recovery time (fault removed -> last delivery report), errors told to ``error_cb``, RSS growth.

Used by tests/chaos/test_toxiproxy.py (which asserts on the outcome) and by
tools/fault_table.py (which stores the outcomes of both clients side by side).
"""

from __future__ import annotations

import threading
import time
from collections import Counter
from dataclasses import asdict, dataclass, field
from types import ModuleType
from typing import Any

from harness.proc_usage import rss_bytes
from harness.toxiproxy import ProxiedCluster, Proxy


@dataclass(frozen=True)
class Toxic:
    kind: str
    stream: str
    attributes: dict[str, int]


@dataclass(frozen=True)
class Fault:
    """Toxics put on one broker's proxy together; ``breaks`` when they close or stall
    connections (then error_cb must be told)."""

    name: str
    toxics: tuple[Toxic, ...]
    breaks: bool


def _both(kind: str, **attributes: int) -> tuple[Toxic, ...]:
    return (Toxic(kind, "upstream", attributes), Toxic(kind, "downstream", attributes))


#: Seconds to wait for a timer thread switching a fault (one API call) at the end of a run.
API_JOIN = 15.0

FAULTS: dict[str, Fault] = {f.name: f for f in (
    Fault("latency", (Toxic("latency", "downstream", {"latency": 500, "jitter": 250}),), False),
    Fault("bandwidth", _both("bandwidth", rate=100), False),
    # The broker's answers stop with the socket open (toxiproxy drops them): only the
    # client's request timeout gets it out.
    Fault("timeout", (Toxic("timeout", "downstream", {"timeout": 0}),), True),
    Fault("reset_peer", (Toxic("reset_peer", "upstream", {"timeout": 300}),), True),
    Fault("slicer", _both("slicer", average_size=48, size_variation=40, delay=300), False),
    Fault("limit_data", (Toxic("limit_data", "downstream", {"bytes": 40_000}),), True),
    Fault("slow_close", (Toxic("slow_close", "downstream", {"delay": 3000}),
                         Toxic("limit_data", "downstream", {"bytes": 60_000})), True),
)}

#: The transport errors error_cb may be told of when a connection breaks or stalls.
TRANSPORT_CODES = ("_TRANSPORT", "_TIMED_OUT", "_ALL_BROKERS_DOWN")


def apply(proxy: Proxy, fault: Fault) -> None:
    for t in fault.toxics:
        proxy.add(t.kind, t.stream, **t.attributes)


@dataclass
class Outcome:
    client: str
    fault: str
    records: int
    delivered: int = 0
    failed: dict[str, int] = field(default_factory=dict)
    lost: int = 0
    duplicated: int = 0
    out_of_order: int = 0
    wedged: bool = False
    recovery_s: float | None = None
    errors: list[str] = field(default_factory=list)
    rss_growth_mb: float = 0.0
    group_lost: int | None = None
    group_duplicated: int | None = None
    group_wedged: bool | None = None
    lost_ranges: list[str] = field(default_factory=list)
    reader_mismatch: str = ""

    def as_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["errors"] = sorted(set(self.errors))[:10]
        return d


def key(i: int) -> bytes:
    return b"k%07d" % i


def value(i: int) -> bytes:
    return b"v%07d-" % i + b"x" * 80


def produce_under(lib: ModuleType, client: str, bootstrap: str, topic: str, proxy: Proxy,
                  fault: Fault, records: int, *, produce_seconds: float = 6.0,
                  fault_at: float = 1.5, window: float = 6.0, flush_timeout: float = 60.0,
                  extra: dict[str, Any] | None = None) -> tuple[Outcome, dict[int, list[int]]]:
    """Produce under ``fault``; returns the outcome so far and the sent order per partition
    (record numbers). Partition ``i % 3`` for record ``i``."""
    out = Outcome(client, fault.name, records)
    errors: list[str] = []
    acked: list[int] = []
    failed: Counter[str] = Counter()
    last_report = [0.0]

    def on_error(err: Any) -> None:
        errors.append(err.name() if hasattr(err, "name") else str(err))

    def on_delivery(err: Any, msg: Any) -> None:
        last_report[0] = time.monotonic()
        if err is None:
            acked.append(1)
        else:
            failed[err.name()] += 1

    conf = {"bootstrap.servers": bootstrap, "enable.idempotence": True, "acks": "all",
            "linger.ms": 5, "request.timeout.ms": 5000, "error_cb": on_error,
            "socket.connection.setup.timeout.ms": 5000}
    conf.update(extra or {})
    rss0 = rss_bytes()
    producer = lib.Producer(conf)
    sent: dict[int, list[int]] = {0: [], 1: [], 2: []}
    start = time.monotonic()
    faulted = cleared = False
    fault_end = 0.0
    chunk = max(1, records // 100)
    try:
        for base in range(0, records, chunk):
            target = start + produce_seconds * base / records
            while True:
                now = time.monotonic()
                if not faulted and now - start >= fault_at:
                    apply(proxy, fault)
                    faulted = True
                if faulted and not cleared and now - start >= fault_at + window:
                    proxy.clear()
                    cleared = True
                    fault_end = now
                if now >= target:
                    break
                producer.poll(min(0.05, target - now))
            for i in range(base, min(records, base + chunk)):
                p = i % 3
                while True:
                    try:
                        producer.produce(topic, value(i), key(i), partition=p,
                                         on_delivery=on_delivery)
                        break
                    except BufferError:
                        producer.poll(0.05)
                sent[p].append(i)
            producer.poll(0)
        if not faulted:
            apply(proxy, fault)
            faulted = True
        while not cleared:
            now = time.monotonic()
            if now - start >= fault_at + window:
                proxy.clear()
                cleared = True
                fault_end = now
            else:
                producer.poll(0.05)
        remaining = producer.flush(flush_timeout)
        out.wedged = remaining > 0
        producer.poll(0)
    finally:
        proxy.clear()
    out.delivered = len(acked)
    out.failed = dict(failed)
    out.errors = errors
    if last_report[0] > fault_end:
        out.recovery_s = round(last_report[0] - fault_end, 2)
    else:
        out.recovery_s = 0.0
    out.rss_growth_mb = round((rss_bytes() - rss0) / 1e6, 1)
    # Keep the producer alive until here so its buffers count in the RSS.
    del producer
    return out, sent


def compare(out: Outcome, sent: dict[int, list[int]],
            log: dict[int, list[tuple[bytes, bytes]]]) -> dict[int, list[int]]:
    """Fill lost / duplicated / out_of_order from the read-back ``log``; returns the record
    numbers read per partition."""
    got: dict[int, list[int]] = {}
    for p, entries in log.items():
        nums = []
        for k, v in entries:
            n = int(k[1:])
            assert v == value(n), (p, k, v[:20])
            nums.append(n)
        got[p] = nums
    for p, want in sent.items():
        have = got.get(p, [])
        counts = Counter(have)
        wanted = set(want)
        missing = sorted(wanted - set(counts))
        out.lost += len(missing)
        if missing:
            out.lost_ranges.append(f"p{p}: {missing[0]}..{missing[-1]} ({len(missing)})")
        out.duplicated += sum(c - 1 for c in counts.values() if c > 1)
        order = [n for n in dict.fromkeys(have) if n in wanted]
        out.out_of_order += sum(1 for a, b in zip(order, order[1:], strict=False) if a > b)
    return got


def read_log(lib: ModuleType, bootstrap: str, topic: str, partitions: int = 3,
             timeout: float = 60.0, committed: bool = False
             ) -> dict[int, list[tuple[bytes, bytes]]]:
    """Every record of ``topic`` per partition, in offset order, (key, value), read up to
    each partition's high watermark (``committed``: read_committed, transactions ended)."""
    consumer = lib.Consumer({"bootstrap.servers": bootstrap, "group.id": f"read-{topic}",
                             "enable.auto.commit": False, "auto.offset.reset": "earliest",
                             "enable.partition.eof": False,
                             "isolation.level": "read_committed" if committed
                             else "read_uncommitted"})
    try:
        ends = {p: consumer.get_watermark_offsets(lib.TopicPartition(topic, p), timeout=10)[1]
                for p in range(partitions)}
        consumer.assign([lib.TopicPartition(topic, p, 0) for p in range(partitions)])
        log: dict[int, list[tuple[bytes, bytes]]] = {p: [] for p in range(partitions)}
        offsets: dict[int, int] = {p: -1 for p in range(partitions)}
        deadline = time.monotonic() + timeout

        def behind() -> bool:
            if all(offsets[p] + 1 >= ends[p] for p in ends):
                return False
            # Control records (transaction markers) end a transactional log unseen.
            at = consumer.position([lib.TopicPartition(topic, p) for p in ends])
            return any(tp.offset < ends[tp.partition] for tp in at)

        while behind() and time.monotonic() < deadline:
            for m in consumer.consume(10_000, 0.5):
                if m.error() is not None:
                    raise lib.KafkaException(m.error())
                p = m.partition()
                assert m.offset() > offsets[p], (p, m.offset(), offsets[p])
                offsets[p] = m.offset()
                log[p].append((m.key(), m.value()))
        if behind():
            raise TimeoutError(f"{topic}: read {offsets} of {ends} within {timeout}s")
        return log
    finally:
        consumer.close()


def consume_under(lib: ModuleType, out: Outcome, bootstrap: str, topic: str, proxy: Proxy,
                  fault: Fault, expected: set[int], *, window: float = 6.0,
                  timeout: float = 60.0) -> None:
    """A consumer group reads ``topic`` through the proxies with ``fault`` on for the first
    ``window`` seconds; fills group_lost / group_duplicated / group_wedged."""
    consumer = lib.Consumer({"bootstrap.servers": bootstrap, "group.id": f"g-{topic}",
                             "auto.offset.reset": "earliest", "session.timeout.ms": 10000,
                             "request.timeout.ms": 5000,
                             "socket.connection.setup.timeout.ms": 5000,
                             "error_cb": lambda err: out.errors.append(err.name()),
                             "fetch.max.bytes": 1 << 20,
                             "max.partition.fetch.bytes": 256 << 10})
    seen: Counter[int] = Counter()
    start = time.monotonic()
    apply(proxy, fault)
    cleared = False
    try:
        consumer.subscribe([topic])
        while time.monotonic() - start < timeout and not expected <= set(seen):
            if not cleared and time.monotonic() - start >= window:
                proxy.clear()
                cleared = True
            for m in consumer.consume(5000, 0.2):
                if m.error() is None:
                    seen[int(m.key()[1:])] += 1
    finally:
        proxy.clear()
        consumer.close()
    out.group_lost = len(expected - set(seen))
    out.group_duplicated = sum(c - 1 for c in seen.values() if c > 1)
    out.group_wedged = out.group_lost > 0


def produce_plain(lib: ModuleType, bootstrap: str, topic: str, records: int,
                  partitions: int) -> dict[bytes, bytes]:
    """``records`` records round-robin over ``partitions`` (no fault);
    returns {b"partition:offset": value}."""
    acked: dict[bytes, bytes] = {}

    def on_delivery(err: Any, msg: Any) -> None:
        assert err is None, err
        acked[f"{msg.partition()}:{msg.offset()}".encode()] = msg.value()

    producer = lib.Producer({"bootstrap.servers": bootstrap, "linger.ms": 5})
    for i in range(records):
        producer.produce(topic, b"word-%d" % i, partition=i % partitions,
                         on_delivery=on_delivery)
    assert producer.flush(30) == 0
    assert len(acked) == records
    return acked


def run_example(bootstrap: str, direct: str, source: str, target: str, proxy: Proxy,
                fault: Fault, *, fault_at: float = 1.0, window: float = 6.0
                ) -> tuple[int, list[tuple[bytes, bytes]]]:
    """examples/exactly_once.py's loop through the proxies, ``fault`` on between
    ``fault_at`` and ``fault_at + window`` seconds;
    returns the records processed and the target's committed records."""
    import sys
    from pathlib import Path

    examples = str(Path(__file__).resolve().parents[2] / "examples")
    if examples not in sys.path:
        sys.path.insert(0, examples)
    from exactly_once import run

    import kafka_fast

    consumer = kafka_fast.Consumer({
        "bootstrap.servers": bootstrap, "group.id": f"eo-{source}", "enable.auto.commit": False,
        "auto.offset.reset": "earliest", "session.timeout.ms": 10000,
        "heartbeat.interval.ms": 1000, "request.timeout.ms": 5000})
    producer = kafka_fast.Producer({"bootstrap.servers": bootstrap,
                                    "transactional.id": f"tid-{source}",
                                    "transaction.timeout.ms": 60000,
                                    "request.timeout.ms": 5000})
    # Timers, not the loop, switch the fault: a loop stuck in a transaction still sees it end.
    timers = [threading.Timer(fault_at, apply, (proxy, fault)),
              threading.Timer(fault_at + window, proxy.clear)]
    try:
        consumer.subscribe([source])
        for t in timers:
            t.start()
        processed = run(consumer, producer, target, batch=100, idle=4.0)
    finally:
        for t in timers:
            t.cancel()
            if t.is_alive():
                t.join(API_JOIN)
        proxy.clear()
        producer.close()
        consumer.close()
    log = read_log(kafka_fast, direct, target, partitions=1, committed=True)
    return processed, log[0]


def run_fault(lib: ModuleType, client: str, cluster: ProxiedCluster, fault: Fault,
              records: int) -> tuple[Outcome, dict[int, list[int]], dict[int, list[int]]]:
    """The whole schedule for one fault and client: produce under it, read back, then a
    consumer group under it (skipped when records were lost). Returns the outcome, the
    record numbers sent and those read back, per partition."""
    topic = cluster.topic(f"toxi-{fault.name}")
    proxy = cluster.proxies[cluster.leader(topic)]
    out, sent = produce_under(lib, client, cluster.bootstrap, topic, proxy, fault, records)
    # The log read back by the reference client (confluent-kafka), not through the proxies;
    # then by ``lib``, which must read the same.
    import confluent_kafka

    reference = read_log(confluent_kafka, cluster.direct, topic)
    got = compare(out, sent, reference)
    if lib is not confluent_kafka:
        own = read_log(lib, cluster.direct, topic)
        if own != reference:
            check = Outcome(client, fault.name, records)
            compare(check, sent, own)
            out.reader_mismatch = f"{client} reads {check.lost} fewer: {check.lost_ranges}"
    if not out.lost:
        consume_under(lib, out, cluster.bootstrap, topic, proxy, fault, set(range(records)))
    return out, sent, got
