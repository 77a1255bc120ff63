"""Running the kafka-fast command as a process, and writing records with confluent-kafka."""

from __future__ import annotations

import os
import random
import subprocess
import sys
from pathlib import Path

import pytest
from harness.brokers import Broker

ROOT = str(Path(__file__).resolve().parents[2])


def kf(*args: str, stdin: bytes | None = None, timeout: float = 120,
       env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    """``python -m kafka_fast ARGS`` with this checkout's kafka_fast (in ``env``, default
    this process's environment)."""
    env = dict(env if env is not None else os.environ)
    env["PYTHONPATH"] = ROOT + os.pathsep + env.get("PYTHONPATH", "")
    return subprocess.run([sys.executable, "-m", "kafka_fast", *args], input=stdin,
                          capture_output=True, timeout=timeout, env=env)


def kf_popen(*args: str, **kwargs) -> subprocess.Popen:
    env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    return subprocess.Popen([sys.executable, "-m", "kafka_fast", *args], env=env, **kwargs)


def base(broker: Broker) -> list[str]:
    """``-b`` and ``-X`` options that reach ``broker``."""
    out = ["-b", broker.bootstrap]
    for key, value in broker.client_config().items():
        if key != "bootstrap.servers":
            out += ["-X", f"{key}={value}"]
    return out


Record = tuple[bytes | None, bytes | None, list[tuple[str, bytes | None]]]


def random_records(n: int, seed: int) -> list[Record]:
    """Binary keys, values and header values (every byte value appears), with null and empty
    cases of each spelled out first."""
    rng = random.Random(seed)

    def blob() -> bytes:
        return bytes(rng.randrange(256) for _ in range(rng.randrange(1, 300)))

    fixed: list[Record] = [
        (None, None, []), (b"", b"", []), (None, b"", [("h", None)]), (b"", None, [("h", b"")]),
        (bytes(range(256)), bytes(range(255, -1, -1)), [("all", bytes(range(256)))]),
        (b"\xff\xfe", "caf\u00e9 \u2603".encode(), [("text", b"plain"), ("dup", b"1"),
                                                  ("dup", b"\x00")]),
        (b"k", bytes(200), []),
    ]
    rows = [(blob(), blob(), [(f"h{j}", blob() if j % 3 else None)
                              for j in range(rng.randrange(3))]) for _ in range(n)]
    return fixed + rows


def produce_confluent(broker: Broker, topic: str, records: list[Record],
                      timestamps: list[int] | None = None) -> None:
    """Write ``records`` to partition 0 of ``topic`` in order, with confluent-kafka."""
    from confluent_kafka import Producer

    producer = Producer(broker.client_config({"linger.ms": 5}))
    errors = []
    for i, (key, value, headers) in enumerate(records):
        extra = {"timestamp": timestamps[i]} if timestamps else {}
        producer.produce(topic, key=key, value=value, headers=headers or None, partition=0,
                         on_delivery=lambda err, _m: err and errors.append(err), **extra)
    assert producer.flush(30) == 0 and not errors, errors


def need_kcat(kcat: str | None) -> str:
    """kcat's path, or skip (fail under CI=true) when it is not installed."""
    if kcat is None:
        if os.environ.get("CI") == "true":
            pytest.fail("kcat is required under CI=true (apt-get install kcat)")
        pytest.skip("kcat not installed (apt-get install kcat)")
    return kcat
