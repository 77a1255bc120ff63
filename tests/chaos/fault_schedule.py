"""A seeded schedule of faults for librdkafka's mock cluster, and a thread that plays it.

Faults: partition leader moves, a broker down for a while then up (one at a time; the
mock keeps leaders on a down broker, so their partitions wait for it), pushed retriable
Produce errors (refusals the mock answers without storing the records), short response
delays, and once per schedule a refusal while every broker is slow. Nothing that times a request out: the mock would store a retried
request twice.
"""

from __future__ import annotations

import random
import threading
import time
from dataclasses import dataclass

from harness.mock_cluster import MockCluster

from kafka_fast import KafkaError

PRODUCE = 0  # API key
RETRIABLE_REFUSALS = (KafkaError.NOT_LEADER_OR_FOLLOWER, KafkaError.NOT_ENOUGH_REPLICAS,
                      KafkaError.LEADER_NOT_AVAILABLE)


@dataclass(frozen=True)
class Fault:
    """One action at ``at`` seconds after the start."""

    at: float
    kind: str  # leader, down, up, errors, rtt
    broker: int = -1
    partition: int = -1
    codes: tuple[int, ...] = ()
    rtt_ms: int = 0

    def describe(self) -> str:
        if self.kind == "leader":
            return f"leader of [{self.partition}] -> broker {self.broker}"
        if self.kind in ("down", "up"):
            return f"broker {self.broker} {self.kind}"
        if self.kind == "errors":
            return "next Produce requests fail with " + ", ".join(
                KafkaError(c).name() for c in self.codes)
        who = "every broker" if self.broker < 0 else f"broker {self.broker}"
        return f"{who} answers after {self.rtt_ms} ms"


WEIGHTS = {"leader": 5, "down": 1, "errors": 3, "rtt": 1}


def random_schedule(rng: random.Random, brokers: list[int], partitions: int,
                    duration: float, weights: dict[str, int] | None = None) -> list[Fault]:
    """Faults spread over ``duration`` seconds, ending with every broker up and quick;
    ``weights`` gives each kind's share (default WEIGHTS). With errors, a slow refusal
    comes at a random time with no other fault from 0.5 s before it until it is over."""
    weights = weights or WEIGHTS
    quiet_from = rng.uniform(0.3, 0.6) * duration
    quiet_to = quiet_from + 0.5 + SLOW_REFUSAL
    faults: list[Fault] = slow_refusal(quiet_from + 0.5) if "errors" in weights else []
    t = 0.0
    down_until = 0.0
    while True:
        t += rng.uniform(0.05, 0.4)
        if quiet_from <= t < quiet_to:
            t = quiet_to
        if t >= duration:
            break
        # A fault that lasts ends before the quiet time (or the schedule) does.
        limit = quiet_from if t < quiet_from else duration
        kind = rng.choices(list(weights), weights=list(weights.values()))[0]
        if kind == "leader":
            faults.append(Fault(t, "leader", broker=rng.choice(brokers),
                                partition=rng.randrange(partitions)))
        elif kind == "down" and t >= down_until:
            broker = rng.choice(brokers)
            down_until = min(limit, t + rng.uniform(0.3, 2.0))
            faults.append(Fault(t, "down", broker=broker))
            faults.append(Fault(down_until, "up", broker=broker))
        elif kind == "errors":
            codes = tuple(rng.choice(RETRIABLE_REFUSALS) for _ in range(rng.randint(1, 4)))
            faults.append(Fault(t, "errors", codes=codes))
        elif kind == "rtt":
            broker = rng.choice(brokers)
            faults.append(Fault(t, "rtt", broker=broker, rtt_ms=rng.randint(20, 300)))
            faults.append(Fault(min(limit, t + rng.uniform(0.2, 1.0)), "rtt", broker=broker))
    return sorted(faults, key=lambda f: f.at)


SLOW_REFUSAL = 0.8


def slow_refusal(at: float) -> list[Fault]:
    """Every broker slow for 0.8 s, one Produce refusal 0.3 s into it: the producer's
    batches pile up behind the slow answers and go out in a burst, whose first request is
    refused while the next ones of the same partitions wait to be written."""
    return [Fault(at, "rtt", rtt_ms=400),
            Fault(at + 0.3, "errors", codes=(KafkaError.NOT_ENOUGH_REPLICAS,)),
            Fault(at + SLOW_REFUSAL, "rtt", rtt_ms=0)]


def apply(cluster: MockCluster, topic: str, fault: Fault) -> None:
    if fault.kind == "leader":
        cluster.set_leader(topic, fault.partition, fault.broker)
    elif fault.kind == "down":
        cluster.broker_down(fault.broker)
    elif fault.kind == "up":
        cluster.broker_up(fault.broker)
    elif fault.kind == "errors":
        cluster.push_errors(PRODUCE, list(fault.codes))
    elif fault.kind == "rtt":
        cluster.set_rtt(fault.broker, fault.rtt_ms)
    else:
        raise ValueError(f"unknown fault {fault.kind!r}")


class FaultPlayer(threading.Thread):
    """Applies a schedule at its times; ``note`` is told each fault as it happens."""

    def __init__(self, cluster: MockCluster, topic: str, faults: list[Fault], note) -> None:
        super().__init__(name=f"faults-{topic}", daemon=True)
        self.cluster = cluster
        self.topic = topic
        self.faults = faults
        self.note = note
        self.applied = 0
        self.exception: BaseException | None = None
        self._halt = threading.Event()

    def run(self) -> None:
        start = time.monotonic()
        try:
            for fault in self.faults:
                if self._halt.wait(max(0.0, fault.at - (time.monotonic() - start))):
                    return
                apply(self.cluster, self.topic, fault)
                self.applied += 1
                self.note(fault.describe())
        except BaseException as exc:  # handed to the test by finish()
            self.exception = exc

    def finish(self, timeout: float, early: bool = False) -> None:
        """Wait for the schedule to end (``early``: stop it now), then bring every broker up
        and quick again; raises what a fault raised."""
        if early:
            self._halt.set()
        self.join(timeout)
        self._halt.set()
        self.join(5.0)
        self.cluster.broker_up(-1)
        self.cluster.set_rtt(-1, 0)
        if self.exception is not None:
            raise self.exception
