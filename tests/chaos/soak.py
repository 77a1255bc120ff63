"""The soak: hours-style load on a 3-node Apache Kafka cluster behind Toxiproxy, squeezed into
``seconds``, with the brokers restarted in turn and toxics switched on a schedule.

The client process (soak_client.py: an idempotent producer, examples/exactly_once.py's
consume-transform-produce loop and a consumer group, all kafka_fast) reaches the brokers only
through the proxies. Meanwhile this process

- restarts every broker in turn (stop, start, wait until every replica is back in sync)
  every ``restart_every`` seconds, stopping them alternately with SIGTERM (a controlled
  shutdown) and SIGKILL (a crash): across two rounds each broker gets both;
- puts one fault of toxiproxy_schedule.FAULTS at a time (latency with jitter, bandwidth,
  timeout, reset_peer, slicer, limit_data, slow_close; each in turn, in a seeded order) on a
  seeded random broker's proxy for ``fault_window`` seconds, then ``fault_gap`` seconds clear;
- samples the client process every second: RSS, threads, file descriptors, established TCP
  connections and its progress.

At the end it checks: every record delivered once, in order per partition, and stored so
(read back directly by confluent-kafka); every input's result exactly once, in input order,
in the read_committed target; nothing missed by the group; soak_checks' growth bounds and
stall limit. ``run_soak`` returns everything as one JSON-ready dict (``violations`` empty
when all held). Used by tests/chaos/test_soak.py (3 minutes) and tools/soak_report.py
(``make soak``, 30 minutes).
"""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import threading
import time
from collections import Counter
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, TextIO

import soak_checks
import toxiproxy_schedule as sched
from harness.proc_usage import usage
from harness.process import ManagedProcess
from harness.toxiproxy import ProxiedCluster, ToxiproxyError
from paced_producer import expected_partitions, value_of
from sequence_check import delivery_problems, read_back

CLIENT = Path(__file__).with_name("soak_client.py")
REPO = Path(__file__).resolve().parents[2]
PARTITIONS = 3
INTERNAL_TOPICS = ("__consumer_offsets", "__transaction_state")
#: Seconds a restarted broker may take to answer and to have its replicas back in sync (a
#: JVM start on a busy machine takes a minute).
RESTART_TIMEOUT = 180.0
#: How brokers are stopped, in turn: a controlled shutdown, then a crash.
SIGNALS = (signal.SIGTERM, signal.SIGKILL)
#: Seconds the client may take past its production time (its own drain plus closing).
CLIENT_GRACE = 360.0


@dataclass(frozen=True)
class SoakSettings:
    seconds: float = 1800.0
    rate: int = 50  # records per second
    restart_every: float = 120.0
    fault_window: float = 8.0
    fault_gap: float = 4.0
    seed: int = 0

    @property
    def records(self) -> int:
        return int(self.seconds * self.rate)


class _Clock:
    def __init__(self) -> None:
        self.start = time.monotonic()

    def now(self) -> float:
        return round(time.monotonic() - self.start, 1)


class _Progress(threading.Thread):
    """The client's latest progress line."""

    def __init__(self, process: ManagedProcess) -> None:
        super().__init__(name="soak-progress", daemon=True)
        self.process = process
        self.latest = {"delivered": 0, "transformed": 0, "grouped": 0}

    def run(self) -> None:
        stdout = self.process.popen.stdout
        assert stdout is not None
        try:
            for line in stdout:
                try:
                    self.latest = json.loads(line)
                except ValueError:
                    continue
        except (OSError, ValueError):
            return  # the pipe closed under us as the client was stopped


class _Sampler(threading.Thread):
    """Every second: the client's usage, progress and the fault and restart going on."""

    def __init__(self, pid: int, clock: _Clock, progress: _Progress, state: dict[str, Any],
                 stop: threading.Event, trace: TextIO | None = None) -> None:
        super().__init__(name="soak-sampler", daemon=True)
        self.pid, self.clock, self.progress, self.state, self.stop = (
            pid, clock, progress, state, stop)
        self.trace = trace  # every sample as a JSON line, as it is taken
        self.samples: list[dict[str, Any]] = []

    def run(self) -> None:
        while not self.stop.wait(1.0):
            used = usage(self.pid)
            if used is None:
                return
            sample = {"t": self.clock.now(), **asdict(used), **self.progress.latest,
                      "fault": self.state["fault"], "down": self.state["down"]}
            self.samples.append(sample)
            if self.trace is not None:
                self.trace.write(json.dumps(sample) + "\n")
                self.trace.flush()


class _Restarts:
    """Rounds of restarts: each broker in turn stopped, started again, and waited for until
    the cluster is whole and every replica of ``topics`` is in sync. The stops alternate
    between SIGTERM and SIGKILL (``SIGNALS``), the first one of a run a SIGTERM.

    Run from the thread that lives as long as the cluster: a broker started by a thread
    gets SIGKILL when that thread ends (harness.process asks for it with PR_SET_PDEATHSIG,
    which Linux ties to the starting thread)."""

    def __init__(self, soak: ProxiedCluster, topics: list[str], clock: _Clock,
                 state: dict[str, Any]) -> None:
        self.kafka = soak.cluster
        self.topics = [*topics, *INTERNAL_TOPICS]
        self.clock, self.state = clock, state
        self.rounds = 0
        self.restarts = 0
        self.stops = 0
        #: Restarts completed, by the signal that stopped the broker.
        self.by_signal: Counter[str] = Counter()
        self.log: list[str] = []
        self.errors: list[str] = []

    def round(self) -> None:
        self.rounds += 1
        for node in sorted(self.kafka.nodes):
            self._restart(node)

    def _restart(self, node: int) -> None:
        sig = SIGNALS[self.stops % len(SIGNALS)]
        self.stops += 1
        self.state["down"] = node
        self.log.append(f"{self.clock.now()}s stop broker {node} ({sig.name})")
        try:
            self.kafka.stop_node(node, sig)
            time.sleep(1.0)
            self.kafka.start_node(node, RESTART_TIMEOUT)
            self.state["down"] = 0
            self.kafka.wait_for_brokers(timeout=RESTART_TIMEOUT)
            for topic in self.topics:
                self.kafka.wait_in_sync(topic, timeout=RESTART_TIMEOUT)
            self.restarts += 1
            self.by_signal[sig.name] += 1
            self.log.append(f"{self.clock.now()}s broker {node} back, replicas in sync")
        except Exception as exc:  # recorded as a violation; the next restart still runs
            self.errors.append(f"broker {node}: {type(exc).__name__}: {exc}"[:300])
            self.state["down"] = 0


class _Toxics(threading.Thread):
    """One fault at a time on a random broker's proxy, every fault in turn (seeded order),
    until ``until``."""

    def __init__(self, soak: ProxiedCluster, settings: SoakSettings, clock: _Clock,
                 state: dict[str, Any], stop: threading.Event) -> None:
        super().__init__(name="soak-toxics", daemon=True)
        self.soak, self.settings, self.clock, self.state, self.stop = (
            soak, settings, clock, state, stop)
        self.rng = random.Random(f"{settings.seed}:soak")
        self.applied: Counter[str] = Counter()
        self.log: list[str] = []
        self.errors: list[str] = []

    def run(self) -> None:
        names: list[str] = []
        s = self.settings
        while self.clock.now() < s.seconds and not self.stop.is_set():
            if not names:
                names = self.rng.sample(list(sched.FAULTS), len(sched.FAULTS))
            name = names.pop()
            node = self.rng.choice(sorted(self.soak.proxies))
            proxy = self.soak.proxies[node]
            try:
                sched.apply(proxy, sched.FAULTS[name])
                self.state["fault"] = f"{name}@{node}"
                self.applied[name] += 1
                self.log.append(f"{self.clock.now()}s {name} on broker {node}")
                self.stop.wait(s.fault_window)
            except (ToxiproxyError, OSError) as exc:
                self.errors.append(f"{name}: {exc}"[:300])
            finally:
                self._clear(proxy)
                self.state["fault"] = ""
            self.stop.wait(s.fault_gap)

    def _clear(self, proxy: Any) -> None:
        try:
            proxy.clear()
        except (ToxiproxyError, OSError):
            self.soak.server.reset()


def _check_target(direct_log: dict[int, list[tuple[bytes, bytes]]],
                  expected: dict[int, list[bytes]]) -> list[str]:
    """Every input ``p:offset`` exactly once in the target, with the input's value, and the
    results of one input partition in input order within each target partition."""
    problems = []
    keys: Counter[bytes] = Counter()
    for tp, rows in direct_log.items():
        last: dict[int, int] = {}
        for k, v in rows:
            keys[k] += 1
            p, o = (int(x) for x in k.split(b":"))
            if o >= len(expected.get(p, [])) or v != expected[p][o]:
                problems.append(f"target [{tp}] {k!r} holds {v!r}")
            elif o <= last.get(p, -1):
                problems.append(f"target [{tp}] {k!r} after offset {last[p]} of input [{p}]")
            last[p] = o
    want = {f"{p}:{o}".encode() for p, values in expected.items() for o in range(len(values))}
    missing = want - set(keys)
    twice = {k: c for k, c in keys.items() if c > 1}
    if missing:
        problems.append(f"target: {len(missing)} inputs without a result, e.g. "
                        f"{sorted(missing)[:5]}")
    if twice:
        problems.append(f"target: {len(twice)} inputs with more than one result, e.g. "
                        f"{sorted(twice.items())[:5]}")
    return problems[:20]


def run_soak(soak: ProxiedCluster, workdir: Path, settings: SoakSettings) -> dict[str, Any]:
    """Run the soak on a started proxied cluster; returns the result (see module doc)."""
    import confluent_kafka

    began = time.time()
    source, target = soak.topic("soak-in", PARTITIONS), soak.topic("soak-out", PARTITIONS)
    records = settings.records
    workdir.mkdir(parents=True, exist_ok=True)
    result_path = workdir / "client-result.json"
    env = {"PYTHONPATH": os.pathsep.join(
        p for p in (str(REPO), os.environ.get("PYTHONPATH")) if p)}
    process = ManagedProcess(
        [sys.executable, str(CLIENT), soak.bootstrap, source, target, str(records),
         str(settings.seconds), str(result_path)],
        workdir / "client.log", env=env, stdout_pipe=True)
    clock = _Clock()
    state: dict[str, Any] = {"fault": "", "down": 0}
    stop = threading.Event()
    progress = _Progress(process)
    trace = open(workdir / "samples.jsonl", "w")  # closed below
    sampler = _Sampler(process.pid, clock, progress, state, stop, trace)
    restarts = _Restarts(soak, [source, target], clock, state)
    toxics = _Toxics(soak, settings, clock, state, stop)
    for t in (progress, sampler, toxics):
        t.start()
    try:
        due = settings.restart_every
        while clock.now() < settings.seconds and process.alive():
            if clock.now() >= due:
                restarts.round()
                due = max(due + settings.restart_every, clock.now())
            time.sleep(0.5)
        process.popen.wait(max(1.0, settings.seconds + CLIENT_GRACE - clock.now()))
    except subprocess.TimeoutExpired:
        pass  # a client still running is stopped and reported below
    finally:
        stop.set()
        toxics.join(120)
        soak.server.reset()
        code = process.stop()
        sampler.join(5)
        progress.join(5)
        trace.close()

    violations: list[str] = []
    client: dict[str, Any] = {}
    if code != 0 or not result_path.exists():
        violations.append(f"client process ended with {code} (wedged past its drain?): "
                          f"{process.log_tail()[-2000:]}")
    else:
        client = json.loads(result_path.read_text())
    expected = expected_partitions(records, PARTITIONS)
    if client:
        delivered = {int(p): [(value_of(v), o) for v, o in rows]
                     for p, rows in client.pop("delivered").items()}
        for key in ("producer_exception", "transformer_exception", "group_exception"):
            if client[key]:
                violations.append(f"{key}: {client[key]}")
        if client["failed"] or client["unflushed"]:
            violations.append(f"producer: failed {client['failed']}, "
                              f"unflushed {client['unflushed']}")
        violations += delivery_problems(delivered, expected)[:10]
        if client["group_missing"]:
            violations.append(f"group missed {client['group_missing']} records, e.g. "
                              f"{client['group_missing_first']}")
    _, problems = read_back(soak.cluster, source, expected, timeout=300)
    violations += problems[:10]
    committed = sched.read_log(confluent_kafka, soak.direct, target, PARTITIONS, timeout=300,
                               committed=True)
    violations += _check_target(committed, expected)
    violations += [f"restart: {e}" for e in restarts.errors]
    violations += [f"toxiproxy: {e}" for e in toxics.errors]
    samples = sampler.samples
    violations += soak_checks.violations(samples, records, settings.seconds)
    return {
        "settings": asdict(settings), "records": records, "started": began,
        "wall_s": round(time.time() - began, 1),
        "restart_rounds": restarts.rounds, "broker_restarts": restarts.restarts,
        "restarts_by_signal": dict(sorted(restarts.by_signal.items())),
        "toxics": dict(sorted(toxics.applied.items())),
        "toxics_applied": sum(toxics.applied.values()),
        "target_records": sum(len(v) for v in committed.values()),
        "growth": soak_checks.growth(samples, settings.seconds),
        "stalls": soak_checks.stalls(samples, records),
        "stall_limit": soak_checks.STALL_LIMIT,
        "client": client, "violations": violations,
        "events": sorted(restarts.log + toxics.log, key=lambda e: float(e.split("s ")[0])),
        "samples": samples,
    }
