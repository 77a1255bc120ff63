"""One member of a consumer group, in its own process so a test can SIGKILL it.

    python group_member.py BOOTSTRAP TOPIC GROUP LOG

Consumes with kafka_fast, commits synchronously after every batch (and on revocation),
and writes what it did to LOG, one event a line, flushed before every commit (``t`` is
``time.monotonic()``, which every process on the machine shares):

    A t p,p,..        partitions assigned         V t p,..   revoked   L t p,..   lost
    R p offset value  a record                    C t p offset   a commit the broker accepted
    F t code p,..     a commit that failed        E t code fatal   an error from consume()
    X t               closed cleanly

It closes the consumer and exits at EOF on stdin.
"""

from __future__ import annotations

import sys
import threading
import time

from kafka_fast import Consumer, KafkaError, KafkaException, TopicPartition

CONSUMER_SETTINGS = {
    "enable.auto.commit": False,
    "auto.offset.reset": "earliest",
    "session.timeout.ms": 6000,
    "heartbeat.interval.ms": 500,
    "max.poll.interval.ms": 60000,
}


class Member:
    """The consume/commit loop and its event log."""

    def __init__(self, bootstrap: str, topic: str, group: str, log_path: str) -> None:
        self.topic = topic
        self.log = open(log_path, "a", buffering=1 << 20)  # closed in run()
        self.consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": group,
                                  **CONSUMER_SETTINGS})
        self.read_upto: dict[int, int] = {}  # next offset to read, per owned partition
        self.committed: dict[int, int] = {}

    def event(self, kind: str, *fields: object) -> None:
        self.log.write(" ".join([kind, f"{time.monotonic():.6f}", *map(str, fields)]) + "\n")

    def on_assign(self, consumer: Consumer, partitions: list[TopicPartition]) -> None:
        self.event("A", ",".join(str(tp.partition) for tp in partitions))
        self.log.flush()

    def on_revoke(self, consumer: Consumer, partitions: list[TopicPartition]) -> None:
        self.commit({tp.partition for tp in partitions})
        self._forget("V", partitions)

    def on_lost(self, consumer: Consumer, partitions: list[TopicPartition]) -> None:
        self._forget("L", partitions)

    def _forget(self, kind: str, partitions: list[TopicPartition]) -> None:
        for tp in partitions:
            self.read_upto.pop(tp.partition, None)
            self.committed.pop(tp.partition, None)
        self.event(kind, ",".join(str(tp.partition) for tp in partitions))
        self.log.flush()

    def commit(self, partitions: set[int]) -> None:
        """Commit what was read of ``partitions`` and not committed yet (after the log
        holds every record the commit covers)."""
        offsets = [TopicPartition(self.topic, p, upto) for p, upto in sorted(self.read_upto.items())
                   if p in partitions and upto > self.committed.get(p, -1)]
        if not offsets:
            return
        self.log.flush()
        try:
            result = self.consumer.commit(offsets=offsets, asynchronous=False)
        except KafkaException as exc:
            err = exc.args[0]
            self.event("F", err.name(), ",".join(str(tp.partition) for tp in offsets))
            return
        for tp in result or []:
            if tp.error is None:
                self.committed[tp.partition] = tp.offset
                self.event("C", tp.partition, tp.offset)
            else:
                self.event("F", tp.error.name(), tp.partition)
        self.log.flush()

    def run(self, stop: threading.Event) -> None:
        self.consumer.subscribe([self.topic], on_assign=self.on_assign,
                                on_revoke=self.on_revoke, on_lost=self.on_lost)
        try:
            while not stop.is_set():
                seen: set[int] = set()
                lines = []
                for msg in self.consumer.consume(2000, 0.2):
                    err = msg.error()
                    if err is not None:
                        if err.code() != KafkaError._PARTITION_EOF:
                            self.event("E", err.name(), int(err.fatal()))
                        continue
                    p, offset = msg.partition(), msg.offset()
                    lines.append(f"R {p} {offset} {msg.value().decode()}\n")
                    self.read_upto[p] = offset + 1
                    seen.add(p)
                if lines:
                    self.log.write("".join(lines))
                    self.commit(seen)
        finally:
            self.consumer.close()
            self.event("X")
            self.log.close()


def main(bootstrap: str, topic: str, group: str, log_path: str) -> None:
    stop = threading.Event()

    def wait_for_eof() -> None:
        sys.stdin.read()
        stop.set()

    threading.Thread(target=wait_for_eof, daemon=True).start()
    Member(bootstrap, topic, group, log_path).run(stop)


if __name__ == "__main__":
    main(*sys.argv[1:5])
