"""Run every selected client path on one broker and collect results."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field

from .clients import CLIENTS, FUNCTIONS
from .result import Result, process_cpu

#: The peer path each kafka_fast path is compared with.
BASELINE = {"produce": ("confluent", "produce()"), "consume": ("confluent", "consume(10000)")}


@dataclass
class BenchConfig:
    """What to run: sizes, codecs, acks, which peers, how often; where and how to make topics."""

    bootstrap: str
    records: int = 200_000
    size: int = 100
    key_size: int = 10
    partitions: int = 3
    compressions: list[str] = field(default_factory=lambda: ["none"])
    acks: str = "1"
    against: list[str] = field(default_factory=lambda: ["confluent"])
    directions: tuple[str, ...] = ("produce", "consume")
    repeat: int = 1
    broker_pid: int | None = None
    create_topic: Callable[[str, int], None] | None = None
    paths: list[str] | None = None


def available(client: str) -> bool:
    """True if the client's module can be imported."""
    return importlib.util.find_spec(CLIENTS[client][0]) is not None


def admin_create_topic(bootstrap: str) -> Callable[[str, int], None]:
    """A topic creator that uses kafka_fast's AdminClient against ``bootstrap``."""

    def create(name: str, partitions: int) -> None:
        from ..admin import AdminClient, NewTopic

        with AdminClient({"bootstrap.servers": bootstrap}) as admin:
            for fut in admin.create_topics([NewTopic(name, partitions, 1)]).values():
                fut.result(60)

    return create


def run_case(cfg: BenchConfig, fn: Callable, topic: str, compression: str,
             direction: str) -> Result:
    """Run ``fn`` in a fresh process; add the broker CPU it caused."""
    spec = {"fn": fn.__name__, "bootstrap": cfg.bootstrap, "topic": topic,
            "partitions": cfg.partitions, "compression": compression, "acks": cfg.acks,
            "records": cfg.records, "size": cfg.size, "key_size": cfg.key_size}
    broker0 = process_cpu(cfg.broker_pid)
    try:
        proc = subprocess.run([sys.executable, "-m", "kafka_fast.bench.worker", json.dumps(spec)],
                              capture_output=True, text=True, timeout=1800)
    except subprocess.TimeoutExpired:
        return _failed(fn, direction, "did not finish within 30 minutes")
    broker_cpu = process_cpu(cfg.broker_pid) - broker0
    for line in proc.stdout.splitlines():
        if line.startswith("RESULT "):
            result = Result(**json.loads(line[7:]))
            result.broker_cpu_s = broker_cpu
            return result
    tail = (proc.stderr.strip().splitlines() or [f"exited with status {proc.returncode}"])[-1]
    return _failed(fn, direction, tail)


def _failed(fn: Callable, direction: str, error: str) -> Result:
    client = next(name for name, (_, produce, consume) in CLIENTS.items()
                  if fn in produce or fn in consume)
    return Result(client, fn.__name__, direction, 0, 0, 0.0, 0.0, error)


def _median(results: list[Result]) -> Result:
    ok = sorted((r for r in results if not r.error), key=lambda r: r.records_per_s)
    return ok[len(ok) // 2] if ok else results[-1]


def run_all(cfg: BenchConfig, on_result: Callable[[Result], None] | None = None) -> list[Result]:
    """Run the benchmark matrix; ``on_result`` sees each (median) result as it arrives.

    Each produce path writes into a fresh topic; the consume paths all read the topic that
    kafka_fast's ``produce_batch`` wrote (or a topic filled for them when only consuming).
    """
    clients = ["kafka_fast"] + [c for c in cfg.against if c != "kafka_fast" and available(c)]
    create = cfg.create_topic or admin_create_topic(cfg.bootstrap)
    results: list[Result] = []

    def wanted(fn: Callable) -> bool:
        return cfg.paths is None or fn.__name__ in cfg.paths

    def measure(fn: Callable, compression: str, direction: str, topic: str | None) -> Result:
        runs = []
        for _ in range(max(1, cfg.repeat)):
            name = topic or f"bench-{uuid.uuid4().hex[:10]}"
            if topic is None:
                create(name, cfg.partitions)
            runs.append(run_case(cfg, fn, name, compression, direction))
        result = _median(runs)
        if len(cfg.compressions) > 1:
            result.path = f"{result.path} [{compression}]"
        return result

    for compression in cfg.compressions:
        if "produce" in cfg.directions:
            for client in clients:
                for fn in filter(wanted, CLIENTS[client][1]):
                    result = measure(fn, compression, "produce", None)
                    results.append(result)
                    if on_result:
                        on_result(result)
        if "consume" in cfg.directions:
            source = f"bench-source-{uuid.uuid4().hex[:10]}"
            create(source, cfg.partitions)
            fill = run_case(cfg, FUNCTIONS["kafka_fast_produce_batch"], source, compression,
                            "produce")
            if fill.error:
                raise RuntimeError(f"could not fill the consume topic: {fill.error}")
            for client in clients:
                for fn in filter(wanted, CLIENTS[client][2]):
                    result = measure(fn, compression, "consume", source)
                    results.append(result)
                    if on_result:
                        on_result(result)
    return results


def ratios(results: list[Result]) -> dict[int, tuple[float, float]]:
    """For each result index: (records/s ratio, CPU/M ratio) against its confluent baseline."""
    out = {}
    for i, r in enumerate(results):
        client, path = BASELINE[r.direction]
        suffix = r.path[r.path.find(" ["):] if " [" in r.path else ""
        base = next((b for b in results if b.client == client and b.path == path + suffix
                     and b.direction == r.direction and not b.error), None)
        if base and base.records_per_s and r.cpu_per_million:
            out[i] = (r.records_per_s / base.records_per_s,
                      r.cpu_per_million / base.cpu_per_million)
    return out


def format_table(results: list[Result]) -> str:
    """A plain-text table with ratios against confluent-kafka."""
    rel = ratios(results)
    head = (f"{'direction':<8} {'client / path':<34} {'records/s':>11} {'MB/s':>8} "
            f"{'CPU s/M':>8} {'x rate':>7} {'x CPU':>6} {'client':>6} {'broker':>6}")
    lines = [head, "-" * len(head)]
    for i, r in enumerate(results):
        rate, cpu = rel.get(i, (None, None))
        lines.append(
            f"{r.direction:<8} {r.label:<34} {r.records_per_s:>11,.0f} {r.mb_per_s:>8.1f} "
            f"{r.cpu_per_million:>8.2f} {'' if rate is None else f'{rate:.2f}':>7} "
            f"{'' if cpu is None else f'{cpu:.2f}':>6} {r.client_cores:>6.2f} "
            f"{r.broker_cores:>6.2f}" + (f"  ERROR: {r.error}" if r.error else ""))
    lines.append("x rate: records/s relative to confluent-kafka's produce() / consume(10000); "
                 "x CPU: CPU seconds per million records relative to the same (lower is better);\n"
                 "client / broker: CPU cores busy during the run (a single-threaded broker near "
                 "1.0 is the bottleneck).")
    return "\n".join(lines)


def plot(results: list[Result], path: str) -> None:
    """Write a bar chart of records/s and CPU per million records to ``path`` (PNG)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (ax_rate, ax_cpu) = plt.subplots(1, 2, figsize=(13, 0.5 * len(results) + 2))
    labels = [f"{r.direction}: {r.label}" for r in results][::-1]
    colors = ["#d62728" if r.client == "kafka_fast" else "#7f7f7f" for r in results][::-1]
    ax_rate.barh(labels, [r.records_per_s for r in results][::-1], color=colors)
    ax_rate.set_xlabel("records per second (higher is better)")
    ax_cpu.barh(labels, [r.cpu_per_million for r in results][::-1], color=colors)
    ax_cpu.set_xlabel("client CPU seconds per million records (lower is better)")
    ax_cpu.set_yticklabels([])
    fig.suptitle("kafka_fast vs peers, same broker, same run")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
