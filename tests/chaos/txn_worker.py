"""A transactional producer stopped inside a transaction.

    python txn_worker.py BOOTSTRAP TOPIC TRANSACTIONAL_ID PARTITIONS COMMITTED OPEN

Commits one transaction of COMMITTED records ``committed-<i>``, then begins another,
writes OPEN records ``open-<i>`` to the log (flushed: the broker has them) and prints
``STALLED``. Record ``i`` goes to partition ``i % PARTITIONS``.

Then it waits for a line on stdin (a test SIGKILLs it here, or lets it go on as a zombie
after a successor took its transactional.id): it produces ``zombie-<i>`` records, tries
to commit, and prints ``RESULT ok`` or ``RESULT <error name> fatal=<0|1>``.
"""

from __future__ import annotations

import sys

from kafka_fast import KafkaException, Producer


def main(bootstrap: str, topic: str, tid: str, partitions: int, committed: int,
         open_count: int) -> None:
    producer = Producer({"bootstrap.servers": bootstrap, "transactional.id": tid,
                         "transaction.timeout.ms": 120000, "linger.ms": 2})
    producer.init_transactions(60)
    producer.begin_transaction()
    for i in range(committed):
        producer.produce(topic, b"committed-%d" % i, partition=i % partitions)
    producer.commit_transaction(60)
    producer.begin_transaction()
    for i in range(open_count):
        producer.produce(topic, b"open-%d" % i, partition=i % partitions)
    if producer.flush(60) != 0:
        raise SystemExit("open transaction's records not written within 60s")
    print("STALLED", flush=True)
    sys.stdin.readline()
    try:
        for i in range(partitions):
            producer.produce(topic, b"zombie-%d" % i, partition=i)
        producer.commit_transaction(60)
        print("RESULT ok", flush=True)
    except KafkaException as exc:
        err = exc.args[0]
        print(f"RESULT {err.name()} fatal={int(err.fatal())}", flush=True)
    producer.close(5)


if __name__ == "__main__":
    main(*sys.argv[1:4], *map(int, sys.argv[4:7]))
