"""An idempotent producer thread writing numbered records, paced to a fault schedule, and
its ledger of delivery reports.

Record ``i`` has the value ``b"%09d" % i`` and goes to partition ``i % partitions``, so the
expected contents of every partition are known in advance.
"""

from __future__ import annotations

import threading
import time
from collections import Counter

from kafka_fast import KafkaError, Producer


def value_of(i: int) -> bytes:
    return b"%09d" % i


def expected_partitions(count: int, partitions: int) -> dict[int, list[bytes]]:
    """What every partition must hold, in order: ``{partition: [value, ...]}``."""
    return {p: [value_of(i) for i in range(p, count, partitions)] for p in range(partitions)}


class Pacer:
    """How many records may have been produced by now, so that they are spread over the
    phases of a fault schedule (each phase's share over the time phases took so far)."""

    def __init__(self, total: int, phases: int, first_guess: float) -> None:
        self.total = total
        self.phases = phases
        self._done = 0
        self._durations: list[float] = []
        self._guess = first_guess
        self._phase_start = time.monotonic()
        self._finished = False
        self._lock = threading.Lock()

    def next_phase(self) -> None:
        now = time.monotonic()
        with self._lock:
            self._durations.append(now - self._phase_start)
            self._phase_start = now
            self._done = min(self._done + 1, self.phases - 1)

    def finish(self) -> None:
        with self._lock:
            self._finished = True

    def allowed(self) -> int:
        with self._lock:
            if self._finished:
                return self.total
            expected = (sum(self._durations) / len(self._durations)
                        if self._durations else self._guess)
            within = min(1.0, (time.monotonic() - self._phase_start) / max(expected, 0.1))
            return int(self.total * (self._done + within) / self.phases)


class ProducerRun(threading.Thread):
    """Produces ``count`` records to ``topic`` as the pacer allows, then flushes.

    With ``transaction_size`` (and a ``transactional.id`` in ``conf``) the records go in
    transactions of that many records, each committed.

    Every delivery report is kept: ``offsets[p]`` lists (value, offset) in report order,
    ``failures`` the failed ones, ``client_errors`` what reached ``error_cb``.
    """

    def __init__(self, conf: dict, topic: str, partitions: int, count: int, pacer: Pacer,
                 flush_timeout: float = 120.0, transaction_size: int = 0) -> None:
        super().__init__(name=f"producer-{topic}", daemon=True)
        self.topic = topic
        self.partitions = partitions
        self.count = count
        self.pacer = pacer
        self.flush_timeout = flush_timeout
        self.transaction_size = transaction_size
        self.transactions = 0
        self.delivered: dict[int, list[tuple[bytes, int]]] = {p: [] for p in range(partitions)}
        self.failures: list[tuple[KafkaError, bytes]] = []
        self.client_errors: list[KafkaError] = []
        self.produced = 0
        self.unflushed: int | None = None
        self.exception: BaseException | None = None
        self.conf = dict(conf, on_delivery=self._report, error_cb=self.client_errors.append)

    def _report(self, err: KafkaError | None, msg) -> None:
        if err is None:
            self.delivered[msg.partition()].append((msg.value(), msg.offset()))
        else:
            self.failures.append((err, msg.value()))

    def run(self) -> None:
        try:
            with Producer(self.conf) as producer:
                if self.transaction_size:
                    producer.init_transactions(60)
                    producer.begin_transaction()
                self._produce(producer)
                if self.transaction_size:
                    producer.commit_transaction(self.flush_timeout)
                    self.transactions += 1
                self.unflushed = producer.flush(self.flush_timeout)
        except BaseException as exc:  # handed to the test by result()
            self.exception = exc

    def _produce(self, producer: Producer) -> None:
        topic, partitions = self.topic, self.partitions
        i = 0
        while i < self.count:
            allowed = min(self.pacer.allowed(), self.count)
            if i >= allowed:
                producer.poll(0.02)
                continue
            while i < allowed:
                try:
                    producer.produce(topic, value_of(i), partition=i % partitions)
                except BufferError:
                    producer.poll(0.05)
                    continue
                i += 1
                if i % 1000 == 0:
                    producer.poll(0)
                if self.transaction_size and i % self.transaction_size == 0 and i < self.count:
                    producer.commit_transaction(self.flush_timeout)
                    self.transactions += 1
                    producer.begin_transaction()
            self.produced = i

    def result(self, timeout: float) -> None:
        """Wait for the thread; raise what it raised or a clear error if it is still going."""
        self.join(timeout)
        if self.is_alive():
            raise TimeoutError(f"producer still running after {timeout:.0f}s: "
                               f"{self.produced} of {self.count} produced")
        if self.exception is not None:
            raise self.exception

    def failure_summary(self) -> str:
        codes = Counter(err.name() for err, _ in self.failures)
        return f"{len(self.failures)} failed reports {dict(codes)}"
