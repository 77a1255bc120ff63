"""Run by an installed kafka_fast's own interpreter (a fresh virtualenv): a produce/consume round
trip of exact records on one partition, compressed and not.

    python smoke.py BOOTSTRAP TOPIC

Prints one JSON line: whether the compiled record engine is in use, the interpreter version
and the records read back as ``[partition, offset, key, value]``.
"""

from __future__ import annotations

import json
import sys
import time

from kafka_fast import Consumer, Producer, TopicPartition
from kafka_fast.records import NATIVE

COUNT = 300


def expected(topic: str) -> list[list]:
    """The records produced: keys k0..k299, values v<i> repeated i % 7 + 1 times."""
    return [[0, i, f"k{i}", f"v{i}-" * (i % 7 + 1)] for i in range(COUNT)]


def main(bootstrap: str, topic: str) -> None:
    producer = Producer({"bootstrap.servers": bootstrap, "compression.type": "lz4",
                         "linger.ms": 5})
    for index, (_, _, key, value) in enumerate(expected(topic)):
        if index == COUNT // 2:
            producer.flush(30)
        producer.produce(topic, value=value.encode(), key=key.encode(), partition=0)
    assert producer.flush(30) == 0, "records left unsent"
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"{topic}-g",
                         "enable.auto.commit": False})
    consumer.assign([TopicPartition(topic, 0, 0)])
    got: list[list] = []
    deadline = time.monotonic() + 60
    while len(got) < COUNT and time.monotonic() < deadline:
        for msg in consumer.consume(1000, 1.0):
            assert msg.error() is None, msg.error()
            got.append([msg.partition(), msg.offset(), msg.key().decode(),
                        msg.value().decode()])
    consumer.close()
    print(json.dumps({"native": NATIVE, "python": "{}.{}".format(*sys.version_info[:2]),
                      "records": got}))


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
