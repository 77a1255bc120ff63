"""Exactly-once consume-transform-produce with kafka_fast transactions.

Reads the records of ``--source`` in a consumer group, writes one result per record to
``--target`` (the value upper-cased, keyed by the input's ``partition:offset``), and commits the
consumed positions in the same transaction as the results. If the process dies mid-batch, a
new one started with the same ``--transactional-id`` fences it: the coordinator aborts the open
transaction, processing resumes from the last committed positions, and read_committed readers
of the target see every input's result exactly once.

    python examples/exactly_once.py --bootstrap 127.0.0.1:9092 --source words \\
        --target words-upper --group upper-case --transactional-id upper-case-0 \\
        [--batch 100] [--idle 5] [-C consumer.key=value ...] [-P producer.key=value ...]

Once it has partitions assigned, it stops after ``--idle`` seconds without new input and prints
how many records it processed.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable
from typing import Any

from kafka_fast import Consumer, KafkaException, Producer, TopicPartition

TIMEOUT = 30.0  # seconds for each transactional call


def transform(msg: Any) -> tuple[bytes, bytes]:
    """(key, value) of the result of one input record."""
    key = f"{msg.partition()}:{msg.offset()}".encode()
    return key, (msg.value() or b"").upper()


def positions(msgs: list[Any]) -> list[TopicPartition]:
    """The next offset to read per partition after ``msgs``."""
    last: dict[tuple[str, int], int] = {}
    for m in msgs:
        last[(m.topic(), m.partition())] = m.offset()
    return [TopicPartition(t, p, o + 1) for (t, p), o in last.items()]


def rewind(consumer: Consumer, msgs: list[Any]) -> None:
    """Go back to the first record of the batch in each partition (its transaction was
    aborted, so it is processed again)."""
    first: dict[tuple[str, int], int] = {}
    for m in msgs:
        first.setdefault((m.topic(), m.partition()), m.offset())
    for (t, p), o in first.items():
        consumer.seek(TopicPartition(t, p, o))


def run(consumer: Consumer, producer: Producer, target: str, *, batch: int = 100,
        idle: float = 5.0, before_commit: Callable[[list[Any]], None] | None = None) -> int:
    """Process until no input arrives for ``idle`` seconds once partitions are assigned;
    returns the number of records processed.

    ``before_commit(msgs)`` is called once a batch's results are queued, before its offsets
    and the commit (for logging, metrics or fault injection).
    """
    producer.init_transactions(TIMEOUT)
    processed = 0
    last_input = time.monotonic()
    while True:
        msgs = [m for m in consumer.consume(batch, 0.5) if not _eof(m)]
        if not msgs:
            if not consumer.assignment():
                last_input = time.monotonic()  # still joining the group
            elif time.monotonic() - last_input >= idle:
                break
            continue
        last_input = time.monotonic()
        producer.begin_transaction()
        for m in msgs:
            key, value = transform(m)
            producer.produce(target, value, key)
        if before_commit is not None:
            before_commit(msgs)
        try:
            producer.send_offsets_to_transaction(
                positions(msgs), consumer.consumer_group_metadata(), TIMEOUT)
            _commit(producer)
        except KafkaException as exc:
            if not exc.args[0].txn_requires_abort():
                raise  # fatal (e.g. fenced by a newer instance): stop
            producer.abort_transaction(TIMEOUT)
            rewind(consumer, msgs)
            continue
        processed += len(msgs)
    return processed


def _commit(producer: Producer) -> None:
    """Commit, calling again while the error says the call may be retried."""
    for _ in range(10):
        try:
            producer.commit_transaction(TIMEOUT)
            return
        except KafkaException as exc:
            if not exc.args[0].retriable():
                raise
    producer.commit_transaction(TIMEOUT)


def _eof(msg: Any) -> bool:
    err = msg.error()
    if err is None:
        return False
    if err.code() == -191:  # _PARTITION_EOF
        return True
    raise KafkaException(err)


def _settings(pairs: list[str]) -> dict[str, str]:
    out = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep:
            raise SystemExit(f"expected key=value, got {pair!r}")
        out[key] = value
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--bootstrap", required=True)
    ap.add_argument("--source", required=True)
    ap.add_argument("--target", required=True)
    ap.add_argument("--group", required=True)
    ap.add_argument("--transactional-id", required=True)
    ap.add_argument("--batch", type=int, default=100, help="records per transaction at most")
    ap.add_argument("--idle", type=float, default=5.0,
                    help="stop after this many seconds without input")
    ap.add_argument("-C", dest="consumer_conf", action="append", default=[],
                    metavar="KEY=VALUE", help="extra consumer setting")
    ap.add_argument("-P", dest="producer_conf", action="append", default=[],
                    metavar="KEY=VALUE", help="extra producer setting")
    args = ap.parse_args(argv)

    consumer = Consumer({
        "bootstrap.servers": args.bootstrap, "group.id": args.group,
        "enable.auto.commit": False, "auto.offset.reset": "earliest",
        "isolation.level": "read_committed", **_settings(args.consumer_conf)})
    producer = Producer({
        "bootstrap.servers": args.bootstrap, "transactional.id": args.transactional_id,
        **_settings(args.producer_conf)})
    try:
        consumer.subscribe([args.source])
        processed = run(consumer, producer, args.target, batch=args.batch, idle=args.idle)
    finally:
        producer.close()
        consumer.close()
    print(f"processed {processed} records", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
