"""The client process of the soak: three kafka_fast workloads at once, for a fixed number of
records, reporting progress every second and its ledger at the end.

    python soak_client.py BOOTSTRAP SOURCE TARGET RECORDS SECONDS RESULT_PATH

- an idempotent producer (``acks=all``) writes ``RECORDS`` numbered records to ``SOURCE``
  (3 partitions, record ``i`` to partition ``i % 3``), paced evenly over ``SECONDS``;
- examples/exactly_once.py's consume-transform-produce loop reads ``SOURCE`` read_committed
  in its own group and writes one result per record to ``TARGET`` in transactions (a new run,
  new consumer and producer with the same ``transactional.id``, whenever the loop stops for
  want of input or on a non-fatal error);
- a consumer group (auto commit) reads ``SOURCE`` and counts every record it is given.

Each second a JSON line ``{"delivered": .., "transformed": .., "grouped": ..}`` (delivery
reports, records put in a transaction, distinct records the group saw) goes to stdout; at
the end (every workload done, or its drain time out) ``RESULT_PATH`` gets the delivery
reports per partition, what the group missed or saw twice, errors told to ``error_cb``, any
exception and, when the transactional loop stalled, its producer's statistics at the time,
as JSON.
"""

from __future__ import annotations

import json
import sys
import threading
import time
from collections import Counter
from pathlib import Path
from typing import Any

from paced_producer import Pacer, ProducerRun

from kafka_fast import Consumer, KafkaException, Producer

PARTITIONS = 3
#: Seconds the consumers may take to catch up once the producer is done.
DRAIN = 240.0
#: Seconds without input after which examples/exactly_once.py's loop returns (then restarts).
IDLE = 10.0
#: Errors of a lost connection, counted only; the others' texts are kept (the first TEXTS).
CONNECTION_ERRORS = ("_TRANSPORT", "_ALL_BROKERS_DOWN")
TEXTS = 20
#: Seconds without a transaction after which the transformer's producer statistics are kept
#: (the state behind a stall: brokers' connections, each partition's queue and leader).
STALL = 60.0
CLIENT = {"request.timeout.ms": 5000, "socket.connection.setup.timeout.ms": 5000}


def _examples() -> None:
    examples = str(Path(__file__).resolve().parents[2] / "examples")
    if examples not in sys.path:
        sys.path.insert(0, examples)


class Transformer(threading.Thread):
    """examples/exactly_once.py's loop over ``source`` until ``records`` are processed."""

    def __init__(self, bootstrap: str, source: str, target: str, records: int,
                 deadline: list[float]) -> None:
        super().__init__(name="soak-transformer", daemon=True)
        self.bootstrap, self.source, self.target = bootstrap, source, target
        self.records = records
        self.deadline = deadline
        self.processed = 0  # committed, counted when a run of the loop returns
        self.attempted = 0  # queued in a transaction (committed or aborted), as it goes
        self.runs = 0
        self.restarts: list[str] = []  # non-fatal errors that stopped the loop
        self.restart_texts: list[str] = []  # what they said (with the time into the run)
        self.errors: list[str] = []
        #: what errors other than lost connections said, with the time (at most TEXTS)
        self.error_texts: list[str] = []
        self.started = time.monotonic()
        self.exception: str = ""
        self.last_stats = ""  # the producer's latest statistics (JSON)
        #: the statistics of the first stall past STALL seconds (JSON), with when it began
        self.stall_stats = ""
        self.stall_began = 0.0

    def run(self) -> None:
        _examples()
        from exactly_once import run

        try:
            while time.monotonic() < self.deadline[0]:
                consumer = Consumer({
                    "bootstrap.servers": self.bootstrap, "group.id": f"soak-eo-{self.source}",
                    "enable.auto.commit": False, "auto.offset.reset": "earliest",
                    "isolation.level": "read_committed", "session.timeout.ms": 10000,
                    "heartbeat.interval.ms": 1000, "error_cb": self._error, **CLIENT})
                producer = Producer({
                    "bootstrap.servers": self.bootstrap,
                    "transactional.id": f"soak-tid-{self.source}",
                    "transaction.timeout.ms": 60000, "error_cb": self._error,
                    "statistics.interval.ms": 5000, "stats_cb": self._stats, **CLIENT})
                self.runs += 1
                try:
                    consumer.subscribe([self.source])
                    self.processed += run(consumer, producer, self.target, batch=200,
                                          idle=IDLE, before_commit=self._attempt)
                    if self.deadline[0] != float("inf"):
                        break  # idle after the producer finished: every input is done
                except KafkaException as exc:
                    # The loop stops on any consumer error; a non-fatal one (e.g. _TIMED_OUT
                    # when the group coordinator does not answer in time) is restarted as a
                    # supervisor restarts a process: new consumer and producer, resuming
                    # from the committed offsets.
                    if exc.args[0].fatal():
                        raise
                    self.restarts.append(exc.args[0].name())
                    self.restart_texts.append(self._stamped(exc.args[0]))
                finally:
                    producer.close()
                    consumer.close()
        except BaseException as exc:  # reported in the result
            self.exception = f"{type(exc).__name__}: {exc}"

    def _error(self, err: Any) -> None:
        self.errors.append(err.name())
        if err.name() not in CONNECTION_ERRORS and len(self.error_texts) < TEXTS:
            self.error_texts.append(self._stamped(err))

    def _stats(self, stats: str) -> None:
        self.last_stats = stats

    def watch(self, stalled_for: float) -> None:
        """Keep the producer's statistics once the loop has made no progress for STALL s."""
        if stalled_for >= STALL and not self.stall_stats:
            self.stall_stats = self.last_stats
            self.stall_began = round(time.monotonic() - self.started - stalled_for, 1)

    def _stamped(self, err: Any) -> str:
        return f"{time.monotonic() - self.started:.1f}s {err.name()}: {err.str()}"

    def _attempt(self, msgs: list[Any]) -> None:
        self.attempted += len(msgs)


class GroupReader(threading.Thread):
    """A consumer group member (auto commit) reading ``source`` until it has seen every one
    of ``records`` records (by number)."""

    def __init__(self, bootstrap: str, source: str, records: int,
                 deadline: list[float]) -> None:
        super().__init__(name="soak-group", daemon=True)
        self.records = records
        self.deadline = deadline
        self.seen: Counter[int] = Counter()
        self.errors: list[str] = []
        self.exception = ""
        self.conf = {"bootstrap.servers": bootstrap, "group.id": f"soak-group-{source}",
                     "auto.offset.reset": "earliest", "session.timeout.ms": 10000,
                     "heartbeat.interval.ms": 1000,
                     "error_cb": lambda e: self.errors.append(e.name()), **CLIENT}
        self.source = source

    def run(self) -> None:
        consumer = Consumer(self.conf)
        try:
            consumer.subscribe([self.source])
            while len(self.seen) < self.records and time.monotonic() < self.deadline[0]:
                for m in consumer.consume(1000, 0.5):
                    if m.error() is None:
                        self.seen[int(m.value())] += 1
        except BaseException as exc:  # reported in the result
            self.exception = f"{type(exc).__name__}: {exc}"
        finally:
            consumer.close()


def main(bootstrap: str, source: str, target: str, records: int, seconds: float,
         result_path: str) -> int:
    # Until the producer is done the consumers have no deadline of their own.
    deadline = [float("inf")]
    pacer = Pacer(records, 1, first_guess=seconds)
    producer = ProducerRun({"bootstrap.servers": bootstrap, "acks": "all",
                            "enable.idempotence": True, "linger.ms": 100,
                            "message.timeout.ms": 600000, **CLIENT},
                           source, PARTITIONS, records, pacer, flush_timeout=DRAIN)
    transformer = Transformer(bootstrap, source, target, records, deadline)
    group = GroupReader(bootstrap, source, records, deadline)
    workers: list[threading.Thread] = [producer, transformer, group]
    for w in workers:
        w.start()

    def progress() -> dict[str, int]:
        return {"delivered": sum(len(v) for v in producer.delivered.values()),
                "transformed": transformer.attempted, "grouped": len(group.seen)}

    attempted, since = -1, time.monotonic()
    while any(w.is_alive() for w in workers):
        if not producer.is_alive() and deadline[0] == float("inf"):
            deadline[0] = time.monotonic() + DRAIN
        print(json.dumps(progress()), flush=True)
        if transformer.attempted != attempted:
            attempted, since = transformer.attempted, time.monotonic()
        elif transformer.is_alive():
            transformer.watch(time.monotonic() - since)
        time.sleep(1.0)
    print(json.dumps(progress()), flush=True)
    missing = sorted(set(range(records)) - set(group.seen))
    result = {
        "delivered": {p: [[int(v), o] for v, o in rows]
                      for p, rows in producer.delivered.items()},
        "failed": dict(Counter(err.name() for err, _ in producer.failures)),
        "unflushed": producer.unflushed,
        "producer_exception": repr(producer.exception) if producer.exception else "",
        "producer_errors": dict(Counter(e.name() for e in producer.client_errors)),
        "transformed": transformer.processed, "transformer_runs": transformer.runs,
        "transformer_restarts": dict(Counter(transformer.restarts)),
        "transformer_exception": transformer.exception,
        "transformer_errors": dict(Counter(transformer.errors)),
        "transformer_error_texts": transformer.error_texts,
        "transformer_restart_texts": transformer.restart_texts,
        "transformer_stall": ({"began": transformer.stall_began,
                               "stats": json.loads(transformer.stall_stats)}
                              if transformer.stall_stats else None),
        "group_missing": len(missing), "group_missing_first": missing[:10],
        "group_repeated": sum(c - 1 for c in group.seen.values()),
        "group_exception": group.exception, "group_errors": dict(Counter(group.errors)),
    }
    Path(result_path).write_text(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]),
                  float(sys.argv[5]), sys.argv[6]))
