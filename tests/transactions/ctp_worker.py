"""A consume-transform-produce process for the crash test: the loop of
examples/exactly_once.py, optionally stalled in the middle of one transaction (its results
written and flushed, its offsets not sent yet) until the test kills it.

    python ctp_worker.py BOOTSTRAP SOURCE TARGET GROUP TRANSACTIONAL_ID STALL_AT
(STALL_AT: the transaction to stall in, counting from 1; 0 runs to the end.)
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "examples"))

from exactly_once import run

from kafka_fast import Consumer, Producer


def main(bootstrap: str, source: str, target: str, group: str, tid: str, stall_at: int) -> None:
    consumer = Consumer({
        "bootstrap.servers": bootstrap, "group.id": group, "enable.auto.commit": False,
        "auto.offset.reset": "earliest", "session.timeout.ms": 6000,
        "heartbeat.interval.ms": 500})
    producer = Producer({"bootstrap.servers": bootstrap, "transactional.id": tid,
                         "transaction.timeout.ms": 60000})
    transactions = 0

    def before_commit(msgs: list) -> None:
        nonlocal transactions
        transactions += 1
        if transactions == stall_at:
            assert producer.flush(10) == 0
            print(f"STALLED {len(msgs)}", flush=True)
            time.sleep(120)  # killed here

    consumer.subscribe([source])
    processed = run(consumer, producer, target, batch=10, idle=3.0,
                    before_commit=before_commit)
    producer.close()
    consumer.close()
    print(f"PROCESSED {processed}", flush=True)


if __name__ == "__main__":
    main(*sys.argv[1:6], int(sys.argv[6]))
