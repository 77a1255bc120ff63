"""Run every selected client path on one broker and collect results."""

from __future__ import annotations

import importlib.util
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field

from .clients import CLIENTS, Target
from .payload import Payload
from .result import Result

#: The peer path each kafka_fast path is compared with.
BASELINE = {"produce": ("confluent", "produce()"), "consume": ("confluent", "consume(10000)")}


@dataclass
class BenchConfig:
    """What to run: sizes, codecs, acks and which peers."""

    bootstrap: str
    records: int = 200_000
    size: int = 100
    key_size: int = 10
    partitions: int = 3
    compressions: list[str] = field(default_factory=lambda: ["none"])
    acks: str = "1"
    against: list[str] = field(default_factory=lambda: ["confluent"])
    directions: tuple[str, ...] = ("produce", "consume")


def available(client: str) -> bool:
    """True if the client's module can be imported."""
    return importlib.util.find_spec(CLIENTS[client][0]) is not None


def _create_topic(bootstrap: str, name: str, partitions: int) -> None:
    from ..admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": bootstrap})
    try:
        for fut in admin.create_topics([NewTopic(name, partitions, 1)]).values():
            fut.result(60)
    finally:
        close = getattr(admin, "close", None)
        if close:
            close()


def _measure(fn: Callable, target: Target, payload: Payload, direction: str) -> Result:
    """Run one path; a peer that fails is reported as an error row, not a crash."""
    try:
        return fn(target, payload)
    except Exception as exc:  # a peer's own error, reported in the table
        client = fn.__name__.split("_")[0]
        return Result(client, fn.__name__, direction, 0, 0, 0.0, 0.0, f"{type(exc).__name__}: {exc}")


def run_all(cfg: BenchConfig, on_result: Callable[[Result], None] | None = None) -> list[Result]:
    """Run the benchmark matrix; ``on_result`` sees each result as it arrives."""
    payload = Payload.make(cfg.records, cfg.size, cfg.key_size)
    clients = ["kafka_fast"] + [c for c in cfg.against if c != "kafka_fast" and available(c)]
    results: list[Result] = []

    def record(result: Result, compression: str) -> None:
        result.path = f"{result.path} [{compression}]" if len(cfg.compressions) > 1 \
            else result.path
        results.append(result)
        if on_result:
            on_result(result)

    for compression in cfg.compressions:
        source_topic = None
        if "produce" in cfg.directions or "consume" in cfg.directions:
            for client in clients:
                for fn in CLIENTS[client][1]:
                    topic = f"bench-{uuid.uuid4().hex[:10]}"
                    _create_topic(cfg.bootstrap, topic, cfg.partitions)
                    target = Target(cfg.bootstrap, topic, cfg.partitions, compression, cfg.acks)
                    result = _measure(fn, target, payload, "produce")
                    if fn.__name__ == "kafka_fast_produce_batch" and not result.error:
                        source_topic = topic
                    if "produce" in cfg.directions:
                        record(result, compression)
        if "consume" in cfg.directions and source_topic:
            for client in clients:
                for fn in CLIENTS[client][2]:
                    target = Target(cfg.bootstrap, source_topic, cfg.partitions, compression,
                                    cfg.acks)
                    record(_measure(fn, target, payload, "consume"), compression)
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
            f"{'CPU s/M':>8} {'x rate':>7} {'x CPU':>6}")
    lines = [head, "-" * len(head)]
    for i, r in enumerate(results):
        rate, cpu = rel.get(i, (None, None))
        lines.append(
            f"{r.direction:<8} {r.label:<34} {r.records_per_s:>11,.0f} {r.mb_per_s:>8.1f} "
            f"{r.cpu_per_million:>8.2f} {'' if rate is None else f'{rate:.2f}':>7} "
            f"{'' if cpu is None else f'{cpu:.2f}':>6}"
            + (f"  ERROR: {r.error}" if r.error else ""))
    lines.append("x rate: records/s relative to confluent-kafka's produce() / consume(10000); "
                 "x CPU: CPU seconds per million records relative to the same (lower is better).")
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
