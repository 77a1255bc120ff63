"""``Producer``: confluent-kafka's Producer API on the compiled record engine.

``produce()`` appends one record to its partition's open native batch (one C call); a sender
on the client's I/O thread ships sealed batches, one ProduceRequest per leader. Delivery
reports are served by ``poll()``/``flush()`` on the calling thread.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Mapping
from typing import Any

from ..cluster.listing import ClusterMetadata, fetch_cluster_metadata
from ..config import client_config
from ..config.producer import ACKS
from ..errors import ConfigError, KafkaError, KafkaException
from ..net import KafkaClient, switch_interval
from ..transactions.prepared import PreparedTransaction, end_prepared
from ..transactions.producer_link import link_producer
from .accumulator import Accumulator, TopicState, now_ms
from .arguments import (
    as_bytes,
    as_callback,
    as_headers,
    as_partition,
    as_timeout,
    as_timestamp,
    as_topic,
)
from .bulk import BatchProducer, produce_dicts
from .contract import check_partition
from .delivery import DeliveryQueue, Rest, raise_failures, report_failures, serve_batch
from .partitioner import algorithm_id, partition_key
from .routing import ProduceRouter
from .sender import MAX_IDEMPOTENT_IN_FLIGHT, Sender

log = logging.getLogger("kafka_fast.producer")
_PURGED = (KafkaError._PURGE_QUEUE, KafkaError._PURGE_INFLIGHT)


def _resolve_idempotence(conf: Any) -> tuple[bool, int]:
    """(idempotence on?, RequiredAcks) with the Java client's rules for conflicts."""
    acks = ACKS[conf["acks"]]
    idempotent = conf["enable.idempotence"]
    explicit = conf.is_set("enable.idempotence")
    if conf["transactional.id"] and not idempotent:
        raise ConfigError("transactional.id requires enable.idempotence=true")
    if idempotent:
        problems = []
        if acks != -1:
            problems.append(f"acks={conf['acks']} (must be all)")
        if conf["max.in.flight.requests.per.connection"] > MAX_IDEMPOTENT_IN_FLIGHT:
            problems.append("max.in.flight.requests.per.connection="
                            f"{conf['max.in.flight.requests.per.connection']} (at most 5)")
        if conf["retries"] == 0:
            problems.append("retries=0")
        if problems:
            if explicit or conf["transactional.id"]:
                raise ConfigError(
                    "enable.idempotence=true conflicts with " + ", ".join(problems))
            idempotent = False  # defaulted on: another setting asked for weaker guarantees
    return idempotent, acks


class Producer(ProduceRouter):
    """A Kafka producer (call-compatible with ``confluent_kafka.Producer``).

    ``produce()`` is inherited from ``ProduceRouter`` (:mod:`kafka_fast.producer.routing`,
    compiled in ``producer/_produce.pyx``): records whose topic and partitions are known go
    straight into their partition's open batch there; the others take ``_produce`` below.
    """

    _acc: Accumulator

    def __init__(self, conf: Mapping[str, Any] | None = None, **kwargs: Any) -> None:
        config = client_config(conf, kwargs, "producer")
        self._config = config
        self._idempotent, acks = _resolve_idempotence(config)
        self._default_cb = config["on_delivery"]
        self._only_errors = config["delivery.report.only.error"]
        self._algorithm = algorithm_id(config["partitioner"])
        self._client = KafkaClient(config, name=config["client.id"])
        self._reports = DeliveryQueue()
        self._acc = Accumulator(config, self._algorithm)
        self._sender = Sender(self._client, config, self._acc, self._reports,
                              idempotent=self._idempotent, acks=acks)
        self._sender.recorder = self._client.stats.counters
        self._client.stats.sources.producer = self._acc.queue_snapshot
        self._closed = False
        self._txn = link_producer(
            self._client, self._sender, config, flush=self.flush,
            purge=lambda: self.purge(in_queue=True, in_flight=False),
            held=self.__len__) if config["transactional.id"] else None
        #: The sender's pass as registered with the I/O loop (removal needs the same object).
        self._sender_hook = self._sender.run
        self._bulk = BatchProducer(self._acc, self._client, config, self._learn_topic,
                                   self._serve, self._reports)
        if config["compression.type"] != "none":
            # Compressed batches of produce() are built on produce_batch's encoder threads.
            self._acc.encode = self._bulk.encode_sealed
        self._client.add_poll_hook(self._sender_hook)
        self._client.start()
        self._switch = switch_interval.request(config["python.switch.interval.ms"] / 1000.0)

    # -- producing -------------------------------------------------------------------------
    def _produce(self, topic: Any, value: Any, key: Any, partition: Any, on_delivery: Any,
                 timestamp: Any, headers: Any, callback: Any) -> None:
        """produce()'s general path: checks and converts every argument."""
        if self._txn is not None:
            self._txn.check_produce()
        # The record contract's order (kafka_fast.producer.contract): partition, timestamp,
        # headers, key, value; a partition the topic lacks is refused last.
        partition = as_partition(partition)
        timestamp = as_timestamp(timestamp)
        if headers is not None:
            headers = as_headers(headers)
        if key is not None and key.__class__ is not bytes:
            key = as_bytes(key, "key")
        if value is not None and value.__class__ is not bytes:
            value = as_bytes(value, "value")
        if on_delivery is None:
            on_delivery = self._default_cb if callback is None else as_callback(
                callback, "callback")
        elif not callable(on_delivery):
            as_callback(on_delivery)
        acc = self._acc
        lock = acc.lock
        lock.acquire()  # (``with`` costs twice as much per call)
        try:
            if acc.count >= acc.count_limit:
                self._refuse()
            if acc.linger_due:
                acc.seal_lingering(time.monotonic())
            t = acc.topics.get(topic)
            if t is not None and t.num_partitions:
                if partition == -1:
                    partition = partition_key(key, t.num_partitions, acc.algorithm)
                    if partition < 0:
                        partition = t.sticky
                else:
                    check_partition(topic, partition, t.num_partitions)
                ps = t.parts[partition]
                b = ps.fast
                if (b is not None and on_delivery is None and ps.entries is None
                        and len(b) < acc.batch_records
                        and (b.append(value, key) if headers is None and not timestamp
                             else b.append(value, key, timestamp or None, headers))):
                    acc.count += 1
                    return
                acc.append(ps, value, key, timestamp, headers, on_delivery)
            else:
                self._produce_unknown(topic, value, key, partition, timestamp, headers,
                                      on_delivery)
            acc.count += 1
        finally:
            lock.release()
        if acc.wake:
            acc.wake = False
            self._client.wakeup()

    def _refuse(self) -> None:
        """produce() found the count at its limit: raise why (lock held)."""
        self._check_open()
        fatal = self._sender.fatal_error
        if fatal is not None:
            raise KafkaException(fatal)
        self._acc.check_budget()
        self._acc.refresh_limit()

    def _produce_unknown(self, topic: Any, value: Any, key: Any, partition: int,
                         timestamp: int, headers: Any, cb: Any) -> None:
        """A record for a topic whose partitions are not known yet (lock held)."""
        topic = as_topic(topic)
        acc = self._acc
        t = acc.topics.get(topic)
        if t is None:
            t = acc.topic(topic)
            if self._learn_topic(t):
                return self._append_known(t, value, key, partition, timestamp, headers, cb)
            self._client.request_metadata([topic])
        elif t.num_partitions:
            return self._append_known(t, value, key, partition, timestamp, headers, cb)
        acc.check_size(value, key, headers)
        if not t.pending:
            t.first_pending = time.monotonic()
        t.pending.append((value, key, partition, timestamp or now_ms(), headers, cb,
                          time.monotonic()))
        acc.wake = True

    def _learn_topic(self, t: TopicState) -> bool:
        """Take ``t``'s partitions from the cached metadata (lock held), placing the records
        that waited for them first; True if known."""
        return self._sender.learn_topic(t, self._client.cluster.topics.get(t.name))

    def _append_known(self, t: TopicState, value: Any, key: Any, partition: int,
                      timestamp: int, headers: Any, cb: Any) -> None:
        acc = self._acc
        if partition == -1:
            partition = acc.partitioner(key, t)
        else:
            check_partition(t.name, partition, t.num_partitions)
        acc.append(t.parts[partition], value, key, timestamp, headers, cb)

    def produce_batch(self, topic: str, values: Any = None, partition: int = -1,
                      on_delivery: Any = None, *, keys: Any = None, timestamps: Any = None,
                      headers: Any = None, messages: Any = None, callback: Any = None) -> int:
        """Queue many records at once; returns how many were queued.

        The positional parameters are confluent-kafka's (``topic, messages, partition,
        on_delivery``); the columnar arguments ``keys``, ``timestamps`` and ``headers`` are
        keywords.

        Columnar form: ``values``/``keys`` as lists, 2-D uint8 numpy arrays (one row per
        record) or packed ``(data, offsets[, nulls])`` columns; partitioning and encoding run
        in compiled code with no Python object per record. ``timestamps``: None, one int or
        N ints; ``headers``: None, one header list for all records or N per-record lists.
        With ``on_delivery`` every record gets a report; without, failures are reported to
        ``error_cb`` or raised by ``poll()``/``flush()``. A large call keeps at most 16 MB
        (or four ``batch.size`` batches) encoded and unacknowledged, waiting for
        acknowledgements before encoding more; it stops waiting after ``delivery.timeout.ms``
        in all and queues the rest (reports tell how those went).

        The columnar form needs the topic's partitions: when they are not known yet it asks
        the cluster for up to ``request.timeout.ms`` (records ``produce()`` queued for the
        topic meanwhile stay ahead of these). If they do not come, it raises KafkaException
        ``_TIMED_OUT`` (retriable) naming the topic and what was missing; a topic error that
        retrying cannot clear (e.g. ``TOPIC_AUTHORIZATION_FAILED``) is raised at once with
        its own code. Either way no record of the call was queued. (``produce()`` queues
        records for an unknown topic instead; they fail with ``_MSG_TIMED_OUT`` after
        ``delivery.timeout.ms``, or with such a final topic error.)

        confluent-kafka's form, ``produce_batch(topic, [dict, ...])`` with dict keys
        ``value``, ``key``, ``partition``, ``timestamp``, ``headers``, ``callback``: records
        that cannot be queued get an ``_error`` entry; returns the number queued.
        """
        self._check_open()
        cb = on_delivery if on_delivery is not None else callback
        if cb is not None:
            as_callback(cb)
        if messages is not None:
            values = messages
        if isinstance(values, list) and values and all(isinstance(v, dict) for v in values):
            if keys is not None or timestamps is not None or headers is not None:
                raise TypeError("produce_batch with a list of message dicts takes no "
                                "keys/timestamps/headers arguments")
            return produce_dicts(self.produce, topic, values, as_partition(partition), cb)
        if self._txn is not None:
            self._txn.check_produce()
        # The I/O thread's large socket calls run without the interpreter lock meanwhile.
        with self._client.lock_policy.bulk():
            return self._bulk.produce_columns(as_topic(topic), values, keys,
                                              as_partition(partition), timestamps, headers,
                                              cb if cb is not None else self._default_cb)

    # -- delivery reports --------------------------------------------------------------------
    def poll(self, timeout: float | None = -1) -> int:
        """Serve delivery reports and client events (error_cb, throttle_cb) on this thread.

        Waits up to ``timeout`` seconds (None or negative, the default as in confluent-kafka:
        until something arrives) for the first one. Returns the number of events served (one
        per record report).
        """
        self._check_open()
        wait = 0 if timeout.__class__ is int and timeout == 0 else as_timeout(timeout)
        served = self._serve()
        if served == 0 and wait != 0:
            deadline = None if wait is None else time.monotonic() + wait
            while served == 0:
                remaining = 0.2 if deadline is None else min(0.2, deadline - time.monotonic())
                if remaining <= 0:
                    break
                self._reports.wait(remaining)
                served = self._serve()
        return served

    def _serve(self) -> int:
        """Serve reports and client events; a raising callback's exception propagates and
        what it left unserved is served first by the next call (``DeliveryQueue.rest``)."""
        queue = self._reports
        served = queue.serve_rest() if queue.rest else 0
        reports = queue.done
        served += self._client.serve_events()
        if not reports:
            return served
        failures: list[KafkaError] = []
        acc = self._acc
        default_cb = self._default_cb
        only_errors = self._only_errors
        rest = queue.rest
        try:
            while reports:
                batch = reports.popleft()
                with acc.lock:
                    acc.count -= batch.count
                    acc.bytes -= batch.size
                    if acc.count_limit == 0:
                        acc.refresh_limit(not self._closed and self._sender.fatal_error is None)
                served += batch.count
                serve_batch(batch, default_cb, only_errors, failures, rest)
        finally:
            # Records the application purged itself are not news to it.
            failures = [f for f in failures if f.code() not in _PURGED]
            if failures:
                if reports or rest:  # a callback raised: reported after what it left
                    rest.append(Rest(self._report_each, (), iter((failures,)), False))
                else:
                    self._report_failures(failures)
        return served

    def _report_each(self, it: Any) -> None:
        for failures in it:
            self._report_failures(failures)

    def _report_failures(self, failures: list[KafkaError]) -> None:
        error_cb = self._config["error_cb"]
        if error_cb is not None:
            report_failures(error_cb, self._reports.rest, iter(failures))
            return
        raise_failures(failures)

    def flush(self, timeout: float | None = None) -> int:
        """Send everything queued at once (without waiting out ``linger.ms``, also for records
        that get their partition while flush runs) and serve reports until none is left or
        ``timeout`` seconds passed; returns the number of records still held."""
        self._check_open()
        wait = as_timeout(timeout)
        acc = self._acc
        with acc.lock:
            acc.flushing += 1
            acc.seal_all()
        try:
            self._client.wakeup()
            deadline = None if wait is None else time.monotonic() + wait
            while True:
                self._serve()
                if acc.count <= 0:
                    return 0
                remaining = 0.1 if deadline is None else min(0.1, deadline - time.monotonic())
                if remaining <= 0:
                    return acc.count
                self._reports.wait(remaining)
        finally:
            with acc.lock:
                acc.flushing -= 1

    def metrics(self) -> dict[str, int | float]:
        """A flat snapshot of the producer's counters with Prometheus-style names (labelled
        series keyed ``name{label="value"}``); see docs/statistics.md."""
        return self._client.metrics()

    def __len__(self) -> int:
        """Records queued, in flight, or waiting for their delivery report to be served."""
        return self._acc.count + self._reports.unserved()

    def __bool__(self) -> bool:
        return True

    # -- administration --------------------------------------------------------------------
    def cluster_id(self, timeout: float = -1) -> str | None:
        """The cluster id from broker metadata (None if ``timeout`` seconds pass first)."""
        self._check_open()
        return self._client.cluster_id(timeout)

    def set_sasl_credentials(self, username: str, password: str) -> None:
        """SASL PLAIN/SCRAM credentials for the next logins; open connections keep theirs."""
        self._check_open()
        self._client.set_sasl_credentials(username, password)

    def list_topics(self, topic: str | None = None, timeout: float = -1) -> ClusterMetadata:
        """Cluster metadata (confluent-kafka's ClusterMetadata shape), for one topic or all."""
        self._check_open()
        return fetch_cluster_metadata(self._client, topic,
                           None if timeout is None or timeout < 0 else timeout)

    def purge(self, in_queue: bool = True, in_flight: bool = True, blocking: bool = True
              ) -> None:
        """Fail queued (_PURGE_QUEUE) and/or in-flight (_PURGE_INFLIGHT) records; their
        reports are served by the next ``poll()``/``flush()``."""
        self._check_open()
        if not in_queue and not in_flight:
            return
        done = threading.Event()

        def run() -> None:
            try:
                sender = self._sender
                if in_queue:
                    sender.fail_all(KafkaError.of(KafkaError._PURGE_QUEUE, "Local: Purged in queue"),
                                    in_flight=in_flight,
                                    inflight_err=KafkaError.of(KafkaError._PURGE_INFLIGHT,
                                                            "Local: Purged in flight"))
                else:
                    sender.fail_inflight(KafkaError.of(KafkaError._PURGE_INFLIGHT,
                                                    "Local: Purged in flight"))
            finally:
                done.set()

        if self._client.loop.running:
            self._client.call_soon(run)
            if blocking:
                done.wait(10.0)
        else:
            run()

    # -- transactions (transactional.id) ---------------------------------------------------
    def init_transactions(self, timeout: float | None = None) -> None:
        """Register ``transactional.id`` with its coordinator (fences older producers with
        the same id and completes what they left open). Call once, before the first
        transaction; retriable errors may be retried by calling it again."""
        self._check_open()
        self._transactions("init_transactions").init_transactions(timeout)

    def begin_transaction(self) -> None:
        """Start a transaction: records produced until commit/abort belong to it."""
        self._check_open()
        self._transactions("begin_transaction").begin_transaction()

    def send_offsets_to_transaction(self, positions: Any, group_metadata: Any,
                                    timeout: float | None = None) -> None:
        """Commit the consumer positions (TopicPartitions with the next offset to read) for
        ``group_metadata`` (``Consumer.consumer_group_metadata()``) with the transaction."""
        self._check_open()
        self._transactions("send_offsets_to_transaction").send_offsets_to_transaction(
            positions, group_metadata, timeout)

    def commit_transaction(self, timeout: float | None = None) -> None:
        """Flush, then commit. Errors carry confluent-kafka's flags: ``txn_requires_abort()``
        (abort, then start over), ``retriable()`` (call again), ``fatal()``."""
        self._check_open()
        self._transactions("commit_transaction").commit_transaction(timeout)

    def prepare_transaction(self, timeout: float | None = None) -> PreparedTransaction:
        """Flush the open transaction and hand it over instead of committing it: returns a
        ``PreparedTransaction`` that ``end_prepared_transaction`` (of any producer) commits
        or aborts. This producer must not start another transaction afterwards; close it."""
        self._check_open()
        txn = self._transactions("prepare_transaction")
        remaining = self.flush(-1 if timeout is None else timeout)
        if remaining:
            raise KafkaException(KafkaError.of(
                KafkaError._TIMED_OUT, f"prepare_transaction: {remaining} records not delivered"))
        if txn.error is not None:
            raise KafkaException(txn.error)
        pid, epoch = txn.producer_id_and_epoch()
        return PreparedTransaction(txn.transactional_id, pid, epoch,
                                   txn.transaction_version == 2)

    def end_prepared_transaction(self, prepared: PreparedTransaction, commit: bool = True,
                                 timeout: float | None = None) -> None:
        """Commit (or abort) a transaction another producer prepared (``prepare_transaction``);
        needs no ``transactional.id`` of its own."""
        self._check_open()
        end_prepared(self._client, prepared, commit, timeout)

    def abort_transaction(self, timeout: float | None = None) -> None:
        """Fail the queued records (_PURGE_QUEUE), wait for those in flight, then abort."""
        self._check_open()
        self._transactions("abort_transaction").abort_transaction(timeout)

    def _transactions(self, name: str) -> Any:
        if self._txn is None:
            raise KafkaException(KafkaError.of(
                KafkaError._NOT_CONFIGURED,
                f"{name}: the transactional API requires transactional.id to be configured"))
        return self._txn

    def _check_open(self) -> None:
        if self._closed:
            raise RuntimeError("Producer has been closed")

    def close(self, timeout: float | None = None) -> None:
        """Flush (up to ``timeout`` seconds), fail what is left with _PURGE_QUEUE, serve the
        remaining reports and stop the network thread. Idempotent. A callback that raises
        meanwhile does not stop it: every report is still served, and the first such exception
        is raised once the producer is closed."""
        if self._closed:
            return
        wait = as_timeout(timeout)
        deadline = None if wait is None else time.monotonic() + wait
        raised: list[Exception] = []
        try:
            remaining = self._serving(lambda: self.flush(
                None if deadline is None else max(0.0, deadline - time.monotonic())),
                raised, "records failed before close: %s")
            if remaining is None:
                remaining = len(self)
            if remaining:
                self.purge()
                self._serving(self._serve, raised, "records failed at close: %s")
        finally:
            self._closed = True
            self._acc.count_limit = 0
            self._client.remove_poll_hook(self._sender_hook)
            self._client.close()
            switch_interval.release(self.__dict__.pop("_switch", None))
            self._bulk.close()
        if raised:
            raise raised[0]

    @staticmethod
    def _serving(call: Any, raised: list[Exception], failed: str) -> Any:
        """``call()`` again while a user callback raises from it (each time serving at least
        the report it raised on; the first exception kept in ``raised``); None when it raised
        unreported failures (logged with ``failed``)."""
        while True:
            try:
                return call()
            except KafkaException as exc:
                log.warning(failed, exc)
                return None
            except Exception as exc:
                if not raised:
                    raised.append(exc)

    def __enter__(self) -> Producer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __del__(self) -> None:
        # A constructor that raised leaves the later attributes unset: a client it made is
        # stopped all the same; without one there is nothing to stop.
        state = self.__dict__
        if state.get("_closed", False) or "_client" not in state:
            return
        try:
            self._client.close(0)
            switch_interval.release(state.pop("_switch", None))
        except Exception:  # interpreter shutdown: modules may be gone
            log.debug("stopping a dropped producer's client failed", exc_info=True)
