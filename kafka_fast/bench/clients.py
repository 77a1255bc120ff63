"""Every measured case: one function per (client, path) that produces or consumes N records.

Peers are imported inside their functions, so a case whose client is not installed is only
skipped (``runner.available``). Each function returns ``(wall_s, cpu_s, error)`` measured from
the first produce/read call until every record is acknowledged/read; setting the client up
(connecting, learning the topic) and closing it are not timed.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections import deque
from collections.abc import Callable, Coroutine
from dataclasses import dataclass
from functools import partial
from typing import Any

from . import java
from .payload import Payload
from .result import Stopwatch

#: (wall seconds, process CPU seconds, error or "")
Timing = tuple[float, float, str]
#: what the asyncio rows run on uvloop add to their path (``runner.ratios`` keeps them apart)
ON_UVLOOP = " on uvloop"


@dataclass
class Target:
    """Where and how to run: bootstrap, topic, partitions, compression, acks."""

    bootstrap: str
    topic: str
    partitions: int
    compression: str
    acks: str
    timeout_s: float = 300.0
    producers: int = 1  # producers in the process (the *_threads cases)


@dataclass(frozen=True)
class Case:
    """One client path: ``name`` selects it, ``client`` and ``path`` label it in tables."""

    name: str
    client: str
    path: str
    direction: str
    run: Callable[[Target, Payload], Timing]
    default: bool = True  # part of the standard matrix (else only when named)


#: client name -> the module that must import for its cases to run ("java": the JVM and the
#: Apache Kafka jars, see ``java.missing``)
MODULES = {"kafka_fast": "kafka_fast", "confluent": "confluent_kafka", "aiokafka": "aiokafka",
           "kafka-python": "kafka", "java": "kafka_fast.bench.java", "asyncio": "asyncio"}


#: which Apache Kafka client the Java tools run with
JAVA_CLIENT = ("the newest cached release whose ApiVersions request the broker advertises "
               "(Apache Kafka 4.4: 4.4.0; Tansu 0.6.0: 4.3.1)")

#: Every setting each client runs with besides bootstrap, topic, acks and compression (which
#: come from the run): stored with each run's results and shown beside the tables.
CLIENT_SETTINGS: dict[str, dict[str, dict[str, object]]] = {
    # Fetch sizes are each consumer's best on Apache Kafka (1M records of 110 bytes, 6
    # partitions, alternated runs): librdkafka and the Java tool fetch up to 10 MB per
    # partition and 50 MB per request (librdkafka: 380k records/s, against 180-270k with 1-2 MB
    # per partition), librdkafka also keeps up to 256 MB prefetched and sends without Nagle
    # delay; kafka_fast fetches 2 MB per partition and 16 MB per request (2.2-2.3M records/s
    # and 0.40 CPU s/M, against 1.9-2.0M and 0.50 with 10 MB/50 MB: answers over 32 MB land in
    # fresh memory the kernel must fault in and clear).
    "kafka_fast": {
        "producer": {"linger.ms": 5, "queue.buffering.max.messages": 2_000_000,
                     "queue.buffering.max.kbytes": 2_097_152,
                     "produce.connections.per.broker": 2},
        "aio_producer": {"linger.ms": 5, "queue.buffering.max.messages": 2_000_000,
                         "queue.buffering.max.kbytes": 2_097_152,
                         "produce.connections.per.broker": 2},
        "consumer": {"group.id": "kafka-fast-bench", "enable.auto.commit": False,
                     "auto.offset.reset": "earliest", "max.partition.fetch.bytes": 2_097_152,
                     "fetch.max.bytes": 16_777_216},
    },
    "confluent": {
        "producer": {"linger.ms": 5, "queue.buffering.max.messages": 2_000_000,
                     "queue.buffering.max.kbytes": 2_097_152, "batch.size": 1_000_000,
                     "socket.nagle.disable": True},
        "aio_producer": {"linger.ms": 5, "queue.buffering.max.messages": 2_000_000,
                         "queue.buffering.max.kbytes": 2_097_152, "batch.size": 1_000_000},
        "consumer": {"group.id": "kafka-fast-bench-peer", "enable.auto.commit": False,
                     "auto.offset.reset": "earliest", "fetch.message.max.bytes": 10_485_760,
                     "fetch.max.bytes": 52_428_800, "queued.max.messages.kbytes": 262_144,
                     "fetch.queue.backoff.ms": 0, "socket.nagle.disable": True},
    },
    "aiokafka": {
        "producer": {"linger_ms": 5, "max_batch_size": 1_000_000, "enable_idempotence": False},
        "consumer": {"enable_auto_commit": False, "auto_offset_reset": "earliest"},
    },
    "kafka-python": {
        "producer": {"linger_ms": 5, "batch_size": 1_000_000},
        "consumer": {"enable_auto_commit": False, "auto_offset_reset": "earliest"},
    },
    "java": {
        "producer": {"linger.ms": 5, "batch.size": 1_000_000, "tool": "ProducerPerformance, "
                     "--throughput -1, values of the payload size, no keys",
                     "client": JAVA_CLIENT},
        "consumer": {**java.CONSUMER_SETTINGS,
                     "--fetch-size": java.CONSUMER_SETTINGS["max.partition.fetch.bytes"],
                     "--timeout": int(java.IDLE_TIMEOUT_S * 1000), "check.crcs": False,
                     "tool": "ConsumerPerformance in a fresh group; rate from fetch.nMsg.sec "
                     "(group join left out)", "client": JAVA_CLIENT},
    },
}


#: Why a peer's setting differs from its default: (client, setting) -> reason, shown in
#: docs/bench/settings.md beside the value.
SETTING_REASONS: dict[tuple[str, str], str] = {
    ("kafka_fast", "linger.ms"): "the same batching window as every peer",
    ("kafka_fast", "queue.buffering.max.messages"): "room for a whole run in the queue",
    ("kafka_fast", "queue.buffering.max.kbytes"): "room for a whole run in the queue",
    ("kafka_fast", "produce.connections.per.broker"):
        "best measured: Apache Kafka writes one connection's requests one at a time (4M records "
        "of 100 B, 6 partitions, one 4.4 node, alternated: produce_batch 4.16M/3.52M rec/s "
        "with 1 connection, 5.01M/3.78M with 2; produce() 2.14-2.36M with 1, 2.39-2.70M with 2, "
        "where the machine went from 0.5 idle cores to 0.1-0.2)",
    ("kafka_fast", "max.partition.fetch.bytes"): "best measured (2 MB beat 1 MB and 10 MB)",
    ("kafka_fast", "fetch.max.bytes"): "best measured (16 MB beat 50 MB: less fresh memory)",
    ("confluent", "linger.ms"): "the same batching window as every peer; of linger.ms 0, 5, 20 "
                                "and 100 with batch.size 0.1, 1 and 4 MB, 5 ms with 1 MB had "
                                "the lowest median CPU per record of produce() (1.71 CPU s/M "
                                "against 1.74-2.27; 3 runs of 300k records each on Tansu, "
                                "loaded machine)",
    ("confluent", "queue.buffering.max.messages"): "room for a whole run in the queue",
    ("confluent", "queue.buffering.max.kbytes"): "room for a whole run in the queue",
    ("confluent", "batch.size"): "librdkafka's default, written down beside the others' 1 MB "
                                 "(see linger.ms for the sizes tried)",
    ("confluent", "socket.nagle.disable"): "no Nagle delay on requests",
    ("confluent", "fetch.message.max.bytes"): "10 MB per partition: 380k rec/s against "
                                              "180-270k with 1-2 MB",
    ("confluent", "fetch.max.bytes"): "50 MB per request, with the per-partition size above",
    ("confluent", "queued.max.messages.kbytes"): "256 MB prefetched, so fetching never waits "
                                                 "for the application",
    ("confluent", "fetch.queue.backoff.ms"): "fetch again at once when the queue drains "
                                             "(default: wait up to 1000 ms once the queue "
                                             "thresholds were passed)",
    ("aiokafka", "max_batch_size"): "1 MB batches, as the other producers",
    ("aiokafka", "enable_idempotence"): "the other producers run without idempotence",
    ("kafka-python", "batch_size"): "1 MB batches, as the other producers",
    ("java", "batch.size"): "1 MB batches, as the other producers",
    ("java", "fetch.max.bytes"): "the fetch sizes of librdkafka above",
    ("java", "max.partition.fetch.bytes"): "the fetch sizes of librdkafka above",
    ("java", "max.poll.records"): "10,000 records per poll, as the batch paths of the others",
    ("java", "--fetch-size"): "the tool sets max.partition.fetch.bytes from this option "
                              "(default 1 MB), over a --command-property",
    ("java", "session.timeout.ms"): "Tansu completes a group join after about half the "
                                    "session timeout (~23 s at the default 45 s)",
    ("java", "heartbeat.interval.ms"): "below a third of the session timeout",
    ("java", "--timeout"): "the tool gives up after this long without a record (the default "
                           "10 s is shorter than a join on Tansu); fewer records than asked "
                           "fail the case",
    ("java", "check.crcs"): "set by the tool itself and not changeable: the Java consumer "
                            "skips the CRC check every other client makes",
    ("java", "client"): "Apache Kafka 4.4's client sends ApiVersions v5, which Tansu 0.6.0 "
                        "(advertising v0-4) answers by closing the connection: no connection "
                        "by node id, no group join",
    ("java", "tool"): "the Java client's own performance tools",
    **{(client, key): "the same batching window as every peer"
       for client, key in (("aiokafka", "linger_ms"), ("kafka-python", "linger_ms"),
                           ("java", "linger.ms"))},
    **{(client, key): "a fresh group reading from the start, no commits in the timed part"
       for client, keys in (("kafka_fast", ("group.id", "enable.auto.commit",
                                            "auto.offset.reset")),
                            ("confluent", ("group.id", "enable.auto.commit",
                                           "auto.offset.reset")),
                            ("aiokafka", ("enable_auto_commit", "auto_offset_reset")),
                            ("java", ("auto.offset.reset",)),
                            ("kafka-python", ("enable_auto_commit", "auto_offset_reset")))
       for key in keys},
}

def _closing(make: Callable[[Target], object], measure: Callable[..., Timing],
             **options) -> Callable[[Target, Payload], Timing]:
    """A case function: make the client, measure, close it (if it can be closed)."""

    def run(t: Target, p: Payload) -> Timing:
        client = make(t)
        try:
            return measure(client, t, p, **options)
        finally:
            close = getattr(client, "close", None)
            if close is not None:
                close()

    return run


def _acks_int(acks: str) -> int:
    """acks as the pure-Python clients take it."""
    return -1 if acks == "all" else int(acks)


# ---- producing with the confluent-kafka API (kafka_fast and confluent-kafka) ------------------

def _kf_producer(t: Target):
    from .. import Producer

    return Producer({"bootstrap.servers": t.bootstrap, "acks": t.acks,
                     "compression.type": t.compression,
                     **CLIENT_SETTINGS["kafka_fast"]["producer"]})


def _kf_switch_producer(t: Target):
    """kafka_fast's producer with the opt-in process-wide switch interval of 1 ms."""
    from .. import Producer

    return Producer({"bootstrap.servers": t.bootstrap, "acks": t.acks,
                     "compression.type": t.compression, "python.switch.interval.ms": 1,
                     **CLIENT_SETTINGS["kafka_fast"]["producer"]})


def _ck_producer(t: Target):
    import confluent_kafka

    return confluent_kafka.Producer({
        "bootstrap.servers": t.bootstrap, "acks": t.acks, "compression.type": t.compression,
        **CLIENT_SETTINGS["confluent"]["producer"]})


class _Reports:
    """A delivery callback that counts reports and keeps the first failure."""

    def __init__(self) -> None:
        self.ok = 0
        self.failed = 0
        self.first_error = None

    def __call__(self, err, msg) -> None:
        if err is None:
            self.ok += 1
        else:
            self.failed += 1
            self.first_error = self.first_error or err


def _flushed(producer, t: Target, n: int, sw: Stopwatch, reports: _Reports | None) -> Timing:
    """Flush, stop the clock, and say what was not delivered."""
    left = producer.flush(t.timeout_s)
    wall, cpu = sw.stop()
    error = f"{left} records not delivered" if left else ""
    if reports is not None and not error:
        if reports.failed:
            error = f"{reports.failed} delivery failures, first: {reports.first_error}"
        elif reports.ok != n:
            error = f"{reports.ok} delivery reports for {n} records"
    return wall, cpu, error


def _produce_loop(producer, t: Target, p: Payload, callback: bool) -> Timing:
    """``produce(topic, value, key)`` per record, ``poll(0)`` every 16k records."""
    values, keys = p.as_bytes_lists()
    producer.list_topics(t.topic, timeout=30)
    reports = _Reports() if callback else None
    produce = partial(producer.produce, on_delivery=reports) if callback else producer.produce
    sw = Stopwatch().start()
    _produce_range(produce, producer.poll, t.topic, values, keys, 0, len(values))
    return _flushed(producer, t, len(p), sw, reports)


def _produce_range(produce: Callable[..., Any], poll: Callable[[float], Any], topic: str,
                   values: list[bytes], keys: list[bytes], lo: int, hi: int) -> None:
    """``produce(topic, value, key)`` for records ``lo:hi``, waiting out a full queue, and
    ``poll(0)`` every 16k records."""
    for i in range(lo, hi):
        while True:
            try:
                produce(topic, values[i], keys[i])
                break
            except BufferError:
                poll(0.05)
        if not i & 0x3FFF:
            poll(0)


def _kf_produce_batch(producer, t: Target, p: Payload) -> Timing:
    """``produce_batch`` with the 2-D uint8 value and key arrays, 250k records per call."""
    producer.list_topics(t.topic, timeout=30)
    sw = Stopwatch().start()
    _send_share(producer, t, p, 0, len(p))
    return _flushed(producer, t, len(p), sw, None)


def _send_share(producer, t: Target, p: Payload, lo: int, hi: int) -> None:
    """Records ``lo:hi`` through ``produce_batch``, 250k per call, waiting out a full queue."""
    for start in range(lo, hi, 250_000):
        stop = min(hi, start + 250_000)
        while True:
            try:
                producer.produce_batch(t.topic, p.values[start:stop], keys=p.keys[start:stop])
                break
            except BufferError:
                producer.poll(0.05)


def _kf_produce_batch_threads(t: Target, p: Payload) -> Timing:
    """``t.producers`` producers in one process, each in its own thread calling
    ``produce_batch`` on its share of the records (2-D arrays, 250k records per call)."""
    import threading

    n = max(1, t.producers)
    producers = [_kf_producer(t) for _ in range(n)]
    for producer in producers:
        producer.list_topics(t.topic, timeout=30)
    bounds = [len(p) * i // n for i in range(n + 1)]
    errors: list[str] = []

    def work(producer, lo: int, hi: int) -> None:
        try:
            _send_share(producer, t, p, lo, hi)
            left = producer.flush(t.timeout_s)
            if left:
                errors.append(f"{left} records not delivered")
        except Exception as exc:  # reported as the case's error
            errors.append(repr(exc))

    threads = [threading.Thread(target=work, args=(producers[i], bounds[i], bounds[i + 1]))
               for i in range(n)]
    try:
        sw = Stopwatch().start()
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        wall, cpu = sw.stop()
    finally:
        for producer in producers:
            producer.close()
    return wall, cpu, "; ".join(errors)


def _shared_producer(send: Callable[[Any, Target, Any, int, int], None],
                     prepare: Callable[[Payload], Any] = lambda p: p
                     ) -> Callable[[Target, Payload], Timing]:
    """A case of ``t.producers`` threads calling ``send(producer, t, data, lo, hi)`` on ONE
    producer, each on its share of the records (``data`` is ``prepare(payload)``, made before
    the clock starts); timed until every record is acknowledged."""

    def run(t: Target, p: Payload) -> Timing:
        n = max(1, t.producers)
        data = prepare(p)
        producer = _kf_producer(t)
        producer.list_topics(t.topic, timeout=30)
        bounds = [len(p) * i // n for i in range(n + 1)]
        errors: list[str] = []

        def work(lo: int, hi: int) -> None:
            try:
                send(producer, t, data, lo, hi)
            except Exception as exc:  # reported as the case's error
                errors.append(repr(exc))

        threads = [threading.Thread(target=work, args=(bounds[i], bounds[i + 1]))
                   for i in range(n)]
        try:
            sw = Stopwatch().start()
            for thread in threads:
                thread.start()
            for thread in threads:
                thread.join()
            left = producer.flush(t.timeout_s)
            if left:
                errors.append(f"{left} records not delivered")
            wall, cpu = sw.stop()
        finally:
            producer.close()
        return wall, cpu, "; ".join(errors)

    return run


def _produce_share(producer, t: Target, lists: tuple[list[bytes], list[bytes]], lo: int,
                   hi: int) -> None:
    """Records ``lo:hi`` of ``(values, keys)`` through ``produce(topic, value, key)``,
    ``poll(0)`` every 16k records."""
    values, keys = lists
    _produce_range(producer.produce, producer.poll, t.topic, values, keys, lo, hi)


def _ck_produce_batch(producer, t: Target, p: Payload) -> Timing:
    """confluent-kafka's ``produce_batch(topic, [dict, ...])``, 10k prepared dicts per call."""
    values, keys = p.as_bytes_lists()
    messages = [{"value": v, "key": k} for v, k in zip(values, keys, strict=True)]
    del values, keys
    producer.list_topics(t.topic, timeout=30)
    step = 10_000
    sw = Stopwatch().start()
    for start in range(0, len(messages), step):
        chunk = messages[start:start + step]
        while producer.produce_batch(t.topic, chunk) < len(chunk):
            chunk = [m for m in chunk if "_error" in m]
            for m in chunk:
                del m["_error"]
            producer.poll(0.05)
        producer.poll(0)
    return _flushed(producer, t, len(p), sw, None)


# ---- consuming with the confluent-kafka API (kafka_fast and confluent-kafka) ------------------

def _kf_consumer(t: Target):
    from .. import OFFSET_BEGINNING, Consumer, TopicPartition

    consumer = Consumer({"bootstrap.servers": t.bootstrap,
                         **CLIENT_SETTINGS["kafka_fast"]["consumer"]})
    consumer.assign([TopicPartition(t.topic, i, OFFSET_BEGINNING) for i in range(t.partitions)])
    return consumer


def _ck_consumer(t: Target):
    import confluent_kafka

    consumer = confluent_kafka.Consumer({
        "bootstrap.servers": t.bootstrap, **CLIENT_SETTINGS["confluent"]["consumer"]})
    consumer.assign([confluent_kafka.TopicPartition(t.topic, i, confluent_kafka.OFFSET_BEGINNING)
                     for i in range(t.partitions)])
    return consumer


def _drain(n: int, t: Target, take: Callable[[], int]) -> Timing:
    """Call ``take`` (records read per call) until ``n`` records are read or time is up."""
    got = 0
    deadline = time.monotonic() + t.timeout_s
    sw = Stopwatch().start()
    while got < n and time.monotonic() < deadline:
        got += take()
    wall, cpu = sw.stop()
    return wall, cpu, "" if got >= n else f"read {got} of {n} records"


def _poll_loop(consumer, t: Target, p: Payload) -> Timing:
    """``poll(1.0)`` per record."""

    def take() -> int:
        msg = consumer.poll(1.0)
        return 1 if msg is not None and msg.error() is None else 0

    return _drain(len(p), t, take)


def _consume_loop(consumer, t: Target, p: Payload) -> Timing:
    """``consume(10000, 1.0)`` per call."""

    def take() -> int:
        return sum(1 for m in consumer.consume(10_000, 1.0) if m.error() is None)

    return _drain(len(p), t, take)


def _kf_consume_batch(consumer, t: Target, p: Payload) -> Timing:
    """``consume_batch(100000, 1.0)``: columns, no object per record."""
    return _drain(len(p), t, lambda: len(consumer.consume_batch(100_000, 1.0)))


# ---- aiokafka -------------------------------------------------------------------------------

def _run_on(loop: str, main: Callable[[], Coroutine[Any, Any, Timing]]) -> Timing:
    """Run ``main()`` on asyncio's own event loop (``"asyncio"``) or on uvloop's."""
    if loop == "uvloop":
        import uvloop

        return uvloop.run(main())
    return asyncio.run(main())


async def _gathered(send: Callable, values: list, keys: list) -> Timing:
    """``await send(value, key)`` per record (each returns a delivery future), the futures
    gathered every 50k records; timed until every record is acknowledged."""
    sw = Stopwatch().start()
    pending = []
    for i in range(len(values)):
        pending.append(await send(values[i], keys[i]))
        if len(pending) >= 50_000:
            await asyncio.gather(*pending)
            pending.clear()
    await asyncio.gather(*pending)
    wall, cpu = sw.stop()
    return wall, cpu, ""


def aiokafka_send(t: Target, p: Payload, loop: str = "asyncio") -> Timing:
    """``await send()`` per record, the delivery futures gathered every 50k records."""
    from aiokafka import AIOKafkaProducer

    values, keys = p.as_bytes_lists()
    codec = None if t.compression == "none" else t.compression

    async def main() -> Timing:
        producer = AIOKafkaProducer(bootstrap_servers=t.bootstrap,
                                    acks=_acks_int(t.acks), compression_type=codec,
                                    **CLIENT_SETTINGS["aiokafka"]["producer"])
        await producer.start()
        try:
            await producer.partitions_for(t.topic)
            return await _gathered(lambda v, k: producer.send(t.topic, v, key=k), values, keys)
        finally:
            await producer.stop()

    return _run_on(loop, main)


def aiokafka_getmany(t: Target, p: Payload) -> Timing:
    """``await getmany(max_records=100000)``."""
    from aiokafka import AIOKafkaConsumer, TopicPartition

    async def main() -> Timing:
        consumer = AIOKafkaConsumer(bootstrap_servers=t.bootstrap,
                                    **CLIENT_SETTINGS["aiokafka"]["consumer"])
        await consumer.start()
        try:
            tps = [TopicPartition(t.topic, i) for i in range(t.partitions)]
            consumer.assign(tps)
            await consumer.seek_to_beginning(*tps)
            got, n = 0, len(p)
            loop = asyncio.get_running_loop()
            deadline = loop.time() + t.timeout_s
            sw = Stopwatch().start()
            while got < n and loop.time() < deadline:
                batches = await consumer.getmany(timeout_ms=1000, max_records=100_000)
                got += sum(len(records) for records in batches.values())
            wall, cpu = sw.stop()
            return wall, cpu, "" if got >= n else f"read {got} of {n} records"
        finally:
            await consumer.stop()

    return asyncio.run(main())


def _aio_produce(module: str, settings: dict, loop: str = "asyncio"
                 ) -> Callable[[Target, Payload], Timing]:
    """``await producer.produce()`` per record with an ``AIOProducer`` (kafka_fast.aio or
    confluent_kafka.aio), the delivery futures gathered every 50k records; on ``loop``
    (``"asyncio"`` or ``"uvloop"``)."""

    def run(t: Target, p: Payload) -> Timing:
        import importlib

        values, keys = p.as_bytes_lists()
        aio = importlib.import_module(module)

        async def main() -> Timing:
            producer = aio.AIOProducer({
                "bootstrap.servers": t.bootstrap, "acks": t.acks,
                "compression.type": t.compression, **settings})
            try:
                await producer.list_topics(t.topic, 30)
                return await _gathered(lambda v, k: producer.produce(t.topic, v, k), values,
                                       keys)
            finally:
                await producer.close()

        return _run_on(loop, main)

    return run


def asyncio_futures(t: Target, p: Payload, loop: str = "asyncio") -> Timing:
    """No client: what asyncio itself costs an asyncio producer. ``_gathered``'s loop over a
    coroutine that makes one future per record; a thread resolves them in batches with one
    ``call_soon_threadsafe`` every millisecond (as a client's delivery thread would), with
    the record's value as the result. Nothing is sent: the floor under every row above it."""
    values, keys = p.as_bytes_lists()

    async def main() -> Timing:
        loop = asyncio.get_running_loop()
        queued: deque[tuple[asyncio.Future, bytes]] = deque()
        stop = threading.Event()
        resolved = [0]

        def resolve(batch: list) -> None:
            for future, value in batch:
                future.set_result(value)
            resolved[0] += len(batch)

        def deliver() -> None:
            while not stop.wait(0.001):
                if queued:
                    batch = [queued.popleft() for _ in range(len(queued))]
                    loop.call_soon_threadsafe(resolve, batch)

        async def send(value: bytes, key: bytes) -> asyncio.Future:
            future = loop.create_future()
            queued.append((future, value))
            return future

        thread = threading.Thread(target=deliver, daemon=True)
        thread.start()
        try:
            wall, cpu, _ = await _gathered(send, values, keys)
            n = len(values)
            return wall, cpu, "" if resolved[0] == n else f"{resolved[0]} of {n} resolved"
        finally:
            stop.set()
            thread.join()

    return _run_on(loop, main)


# ---- kafka-python ---------------------------------------------------------------------------

def _kp_producer(t: Target):
    from kafka import KafkaProducer

    producer = KafkaProducer(bootstrap_servers=t.bootstrap, acks=_acks_int(t.acks),
                             compression_type=None if t.compression == "none" else t.compression,
                             **CLIENT_SETTINGS["kafka-python"]["producer"])
    producer.partitions_for(t.topic)
    return producer


def _kp_send(producer, t: Target, p: Payload) -> Timing:
    """``send()`` per record, then ``flush()`` (which raises if records are left)."""
    values, keys = p.as_bytes_lists()
    sw = Stopwatch().start()
    for i in range(len(values)):
        producer.send(t.topic, values[i], key=keys[i])
    producer.flush(t.timeout_s)
    wall, cpu = sw.stop()
    return wall, cpu, ""


def _kp_consumer(t: Target):
    from kafka import KafkaConsumer, TopicPartition

    consumer = KafkaConsumer(bootstrap_servers=t.bootstrap,
                             **CLIENT_SETTINGS["kafka-python"]["consumer"])
    tps = [TopicPartition(t.topic, i) for i in range(t.partitions)]
    consumer.assign(tps)
    consumer.seek_to_beginning(*tps)
    return consumer


def _kp_poll(consumer, t: Target, p: Payload) -> Timing:
    """``poll(max_records=100000)``."""

    def take() -> int:
        return sum(len(v) for v in consumer.poll(timeout_ms=1000, max_records=100_000).values())

    return _drain(len(p), t, take)


def _confluent_api(client: str, make_producer: Callable[[Target], object],
                   produce_batch: Callable[..., Timing],
                   make_consumer: Callable[[Target], object]) -> list[Case]:
    """The cases a client with confluent-kafka's Producer/Consumer API runs."""

    def case(path: str, label: str, direction: str, run: Callable[[Target, Payload], Timing],
             default: bool = True) -> Case:
        return Case(f"{client}.{path}", client, label, direction, run, default)

    return [
        case("produce", "produce()", "produce",
             _closing(make_producer, _produce_loop, callback=False)),
        case("produce_batch", "produce_batch", "produce", _closing(make_producer, produce_batch)),
        case("produce_cb", "produce() + callback", "produce",
             _closing(make_producer, _produce_loop, callback=True), default=False),
        case("poll", "poll()", "consume", _closing(make_consumer, _poll_loop)),
        case("consume", "consume(10000)", "consume", _closing(make_consumer, _consume_loop)),
    ]


#: every case, in table order
CASES: list[Case] = [
    *_confluent_api("kafka_fast", _kf_producer, _kf_produce_batch, _kf_consumer),
    Case("kafka_fast.consume_batch", "kafka_fast", "consume_batch", "consume",
         _closing(_kf_consumer, _kf_consume_batch)),
    *_confluent_api("confluent", _ck_producer, _ck_produce_batch, _ck_consumer),
    Case("kafka_fast.aio_produce", "kafka_fast", "AIOProducer.produce()", "produce",
         _aio_produce("kafka_fast.aio", CLIENT_SETTINGS["kafka_fast"]["aio_producer"])),
    Case("confluent.aio_produce", "confluent", "AIOProducer.produce()", "produce",
         _aio_produce("confluent_kafka.aio", CLIENT_SETTINGS["confluent"]["aio_producer"])),
    Case("kafka_fast.produce_switch", "kafka_fast", "produce(), switch interval 1 ms (opt-in)",
         "produce", _closing(_kf_switch_producer, _produce_loop, callback=False), default=False),
    Case("kafka_fast.produce_batch_threads", "kafka_fast", "produce_batch, N producers",
         "produce", _kf_produce_batch_threads, default=False),
    Case("kafka_fast.produce_batch_shared", "kafka_fast",
         "produce_batch, N threads, one producer", "produce", _shared_producer(_send_share),
         default=False),
    Case("kafka_fast.produce_shared", "kafka_fast", "produce(), N threads, one producer",
         "produce", _shared_producer(_produce_share, Payload.as_bytes_lists), default=False),
    Case("aiokafka.send", "aiokafka", "send()", "produce", aiokafka_send),
    Case("asyncio.futures", "asyncio", "futures only, no client", "produce", asyncio_futures),
    # The asyncio rows again on uvloop (compared with confluent's AIOProducer on uvloop).
    Case("kafka_fast.aio_produce_uvloop", "kafka_fast", f"AIOProducer.produce(){ON_UVLOOP}",
         "produce", _aio_produce("kafka_fast.aio", CLIENT_SETTINGS["kafka_fast"]["aio_producer"],
                                 "uvloop"), default=False),
    Case("confluent.aio_produce_uvloop", "confluent", f"AIOProducer.produce(){ON_UVLOOP}",
         "produce", _aio_produce("confluent_kafka.aio",
                                 CLIENT_SETTINGS["confluent"]["aio_producer"], "uvloop"),
         default=False),
    Case("aiokafka.send_uvloop", "aiokafka", f"send(){ON_UVLOOP}", "produce",
         partial(aiokafka_send, loop="uvloop"), default=False),
    Case("asyncio.futures_uvloop", "asyncio", f"futures only, no client{ON_UVLOOP}", "produce",
         partial(asyncio_futures, loop="uvloop"), default=False),
    Case("kafka-python.send", "kafka-python", "send()", "produce",
         _closing(_kp_producer, _kp_send)),
    Case("aiokafka.getmany", "aiokafka", "getmany()", "consume", aiokafka_getmany),
    Case("java.producer_perf", "java", "ProducerPerformance", "produce",
         lambda t, p: java.producer_performance(t.bootstrap, t.topic, p, t.compression, t.acks,
                                                t.timeout_s)),
    Case("java.consumer_perf", "java", "ConsumerPerformance", "consume",
         lambda t, p: java.consumer_performance(t.bootstrap, t.topic, p, t.timeout_s)),
    Case("kafka-python.poll", "kafka-python", "poll()", "consume",
         _closing(_kp_consumer, _kp_poll)),
]

#: cases by name
CASE: dict[str, Case] = {case.name: case for case in CASES}
