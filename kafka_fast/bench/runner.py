"""Run the selected cases on one broker, each in a fresh process, and collect results."""

from __future__ import annotations

import importlib.util
import json
import os
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from . import java
from .clients import CASE, CASES, MODULES, ON_UVLOOP, Case
from .result import Result, process_cpu

if TYPE_CHECKING:
    from ..admin import AdminClient

#: The peer case each kafka_fast case is compared with.
BASELINE = {"produce": CASE["confluent.produce"], "consume": CASE["confluent.consume"]}
#: asyncio producers (kafka_fast's and confluent's AIOProducer, aiokafka) compare with this
ASYNC_BASELINE = CASE["confluent.aio_produce"]


def _is_async(r: Result) -> bool:
    return r.direction == "produce" and (r.path.startswith("AIOProducer")
                                         or r.client in ("aiokafka", "asyncio"))


@dataclass
class BenchConfig:
    """What to run: sizes, codecs, acks, which cases, how often; where and how to make topics.

    ``cases`` names cases (``clients.CASES``); when None, the default cases of kafka_fast and
    of every client in ``against`` run.
    """

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
    cases: list[str] | None = None
    producers: int = 1
    #: bytes objects each worker process makes and keeps before the case (a host's own data)
    hold: int = 0
    #: the longest one case's process may run (its start, payload, client set-up and
    #: measurement); past it the process and its children are killed and the case is
    #: recorded as timed out
    case_timeout_s: float = 900.0
    #: records for the named cases instead of ``records`` (the slow pure-Python peers); a
    #: consume case reads the first of the records the topic holds
    case_records: dict[str, int] = field(default_factory=dict)
    #: read the consume cases' topic once, untimed, after filling it (:func:`warm_read`)
    warm_read: bool = False


def available(client: str) -> bool:
    """True if the client's module can be imported (for "java": the JVM and jars exist)."""
    if client == "java":
        return java.missing() is None
    return importlib.util.find_spec(MODULES[client]) is not None


def selected(cfg: BenchConfig) -> list[Case]:
    """The cases ``cfg`` asks for whose client is installed, in table order."""
    if cfg.cases is not None:
        unknown = [name for name in cfg.cases if name not in CASE]
        if unknown:
            raise ValueError(f"unknown case {', '.join(unknown)} "
                             f"(choose from {', '.join(CASE)})")
        chosen = [case for case in CASES if case.name in cfg.cases]
    else:
        clients = {"kafka_fast", *cfg.against}
        chosen = [case for case in CASES if case.default and case.client in clients]
    return [case for case in chosen
            if case.direction in cfg.directions and available(case.client)]


def admin_create_topic(bootstrap: str, replication: int = 1) -> Callable[[str, int], None]:
    """A topic creator that uses kafka_fast's AdminClient against ``bootstrap`` (``replication``
    replicas per partition) and returns once every partition of the new topic can be written
    (:func:`wait_writable`)."""

    def create(name: str, partitions: int) -> None:
        from ..admin import AdminClient, NewTopic

        with AdminClient({"bootstrap.servers": bootstrap}) as admin:
            for fut in admin.create_topics(
                    [NewTopic(name, partitions, replication)]).values():
                fut.result(60)
        wait_writable(bootstrap, name, partitions)

    return create


def wait_writable(bootstrap: str, topic: str, partitions: int, timeout: float = 600) -> None:
    """Wait until every partition of ``topic`` can be written: the metadata shows
    ``partitions`` partitions, each with a leader and no error, and each leader answers a
    ListOffsets request for it (raises TimeoutError after ``timeout`` seconds).

    Metadata alone is not enough: an Apache Kafka node names itself leader of a new partition
    before it has made the partition's files and refuses writes with NOT_LEADER_OR_FOLLOWER
    until then (for seconds with a thousand partitions), which a timed produce case into a
    fresh topic would otherwise wait out."""
    from ..admin import AdminClient

    deadline = time.monotonic() + timeout
    with AdminClient({"bootstrap.servers": bootstrap}) as admin:
        while True:
            meta = admin.list_topics(topic, timeout=60).topics.get(topic)
            parts = meta.partitions.values() if meta is not None and meta.error is None else []
            good = sum(1 for p in parts if p.leader >= 0 and p.error is None)
            if good >= partitions:
                good = answering(admin, topic, partitions)
                if good >= partitions:
                    return
            if time.monotonic() > deadline:
                raise TimeoutError(f"{topic}: {good} of {partitions} partitions writable after "
                                   f"{timeout:.0f} s")
            time.sleep(0.2)


#: Apache Kafka's default ``index.interval.bytes``: an append after more bytes than this
#: since a partition's last index entry adds one to its offset and time indexes
INDEX_INTERVAL_BYTES = 4096
#: partitions :func:`warm_indexes` writes to at a time: their index faults (a few ms each on a
#: busy machine) stay far below a request's 30 s timeout
WARM_PARTITIONS_PER_FLUSH = 500


def warm_indexes(bootstrap: str, topic: str, partitions: int, timeout: float = 600) -> None:
    """Have Apache Kafka write the first offset and time index entry of every partition of
    ``topic``, then delete the records that made them (the topic reads as empty again).

    A new partition's index files are sparse files the broker maps into memory; its first
    index entry, written by the first append after ``index.interval.bytes`` of records, faults
    their first pages in (two page faults per partition, each reading ahead what the block
    device's read-ahead allows: 8 MB, about 2.5 ms of broker time, on the benchmark machines).
    The broker serves a connection's requests one at a time, so with a thousand fresh
    partitions a producer waits seconds for it, and how long depends on how many appends each
    partition gets, not on the client. Paid here, before a timed case, it is left out."""
    from .. import OFFSET_END, Producer, TopicPartition
    from ..admin import AdminClient

    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 0,
                         "enable.idempotence": False, "acks": "1"})
    try:
        # one append of more than the interval, then one more: its append adds the entry;
        # a few hundred partitions per flush, so that no request waits out its timeout
        for value in (b"w" * (INDEX_INTERVAL_BYTES + 1), b"w"):
            for first in range(0, partitions, WARM_PARTITIONS_PER_FLUSH):
                for p in range(first, min(partitions, first + WARM_PARTITIONS_PER_FLUSH)):
                    producer.produce(topic, value, partition=p)
                left = producer.flush(timeout)
                if left:
                    raise TimeoutError(f"{topic}: {left} warm-up records not written "
                                       f"after {timeout:.0f} s")
    finally:
        producer.close()
    with AdminClient({"bootstrap.servers": bootstrap}) as admin:
        futures = admin.delete_records(
            [TopicPartition(topic, p, OFFSET_END) for p in range(partitions)],
            request_timeout=timeout)
        for fut in futures.values():
            fut.result(timeout)


#: how long :func:`warm_read` waits for one Fetch answer: the first read of ten thousand
#: partitions can take the broker over the default 30 s
WARM_READ_REQUEST_TIMEOUT_MS = 180_000


def warm_read(bootstrap: str, topic: str, records: int, timeout: float = 900) -> int:
    """Read ``records`` records of ``topic`` from the start once, untimed; the number read.

    The first Fetch of each partition makes the broker look its start offset up in the
    partition's offset index, whose pages a busy machine may have dropped from memory since
    they were written (with 8 MB of read-ahead each fault is milliseconds: seconds for
    thousands of partitions). Whichever consume case ran first paid that; after this read
    every case finds them in memory."""
    from .. import Consumer

    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"warm-{uuid.uuid4().hex}",
                         "enable.auto.commit": False, "auto.offset.reset": "earliest",
                         "request.timeout.ms": WARM_READ_REQUEST_TIMEOUT_MS})
    read = 0
    try:
        consumer.subscribe([topic])
        deadline = time.monotonic() + timeout
        while read < records and time.monotonic() < deadline:
            read += len(consumer.consume_batch(max_records=100_000, timeout=1.0))
    finally:
        consumer.close()
    return read


def answering(admin: AdminClient, topic: str, partitions: int) -> int:
    """How many partitions of ``topic`` their leader answers a ListOffsets request for."""
    from .. import TopicPartition
    from ..admin import OffsetSpec

    futures = admin.list_offsets(
        {TopicPartition(topic, p): OffsetSpec.latest() for p in range(partitions)},
        request_timeout=60)
    good = 0
    for fut in futures.values():
        try:
            fut.result(120)
        except Exception:  # not led yet (NOT_LEADER_OR_FOLLOWER ...): asked again
            continue
        good += 1
    return good


def run_case(cfg: BenchConfig, case: Case, topic: str, compression: str) -> Result:
    """Run ``case`` in a fresh process, bounded by ``cfg.case_timeout_s``; add the broker CPU
    it caused."""
    spec = {"case": case.name, "bootstrap": cfg.bootstrap, "topic": topic,
            "partitions": cfg.partitions, "compression": compression, "acks": cfg.acks,
            "records": cfg.case_records.get(case.name, cfg.records), "size": cfg.size,
            "key_size": cfg.key_size,
            "producers": cfg.producers, "hold": cfg.hold}
    broker0 = process_cpu(cfg.broker_pid)
    # A session of its own: at the bound the whole group goes (a Java tool's JVM with it).
    proc = subprocess.Popen([sys.executable, "-m", "kafka_fast.bench.worker", json.dumps(spec)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            start_new_session=True)
    try:
        stdout, stderr = proc.communicate(timeout=cfg.case_timeout_s)
    except subprocess.TimeoutExpired:
        _kill_group(proc)
        return timed_out(case, cfg.case_timeout_s)
    except BaseException:
        _kill_group(proc)
        raise
    broker_cpu = process_cpu(cfg.broker_pid) - broker0
    for line in stdout.splitlines():
        if line.startswith("RESULT "):
            result = Result(**json.loads(line[7:]))
            result.broker_cpu_s = broker_cpu
            return result
    tail = (stderr.strip().splitlines() or [f"exited with status {proc.returncode}"])[-1]
    return _failed(case, tail)


def _kill_group(proc: subprocess.Popen) -> None:
    """Kill the process group ``proc`` leads and reap ``proc``."""
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    proc.communicate()


def timed_out(case: Case, bound_s: float) -> Result:
    """The result of a case stopped at its bound."""
    result = _failed(case, f"after {bound_s:g} s (the per-case bound)")
    result.timed_out = True
    return result


def _failed(case: Case, error: str) -> Result:
    return Result(case.client, case.path, case.direction, 0, 0, 0.0, 0.0, error)


def _median(results: list[Result]) -> Result:
    """The median run by records/s of those that finished; a case that timed out in any run
    is recorded as timed out (with the median of the runs that finished, if any)."""
    ok = sorted((r for r in results if not r.error), key=lambda r: r.records_per_s)
    late = [r for r in results if r.timed_out]
    if not late:
        return ok[len(ok) // 2] if ok else results[-1]
    if not ok:
        return late[0]
    result = ok[len(ok) // 2]
    result.timed_out = True
    result.error = f"{late[0].error.removesuffix(' (the per-case bound)')} in " \
                   f"{len(late)} of {len(results)} runs (the per-case bound)"
    return result


def run_all(cfg: BenchConfig, on_result: Callable[[Result], None] | None = None) -> list[Result]:
    """Run the selected cases for every codec; ``on_result`` sees each (median) result.

    Each produce run writes into a fresh topic; the consume cases all read one topic per codec
    that kafka_fast's ``produce_batch`` filled with the same records.
    """
    cases = selected(cfg)
    create = cfg.create_topic or admin_create_topic(cfg.bootstrap)
    results: list[Result] = []

    def fresh_topic(prefix: str) -> str:
        name = f"{prefix}-{uuid.uuid4().hex[:10]}"
        create(name, cfg.partitions)
        return name

    for compression in cfg.compressions:
        for direction in ("produce", "consume"):
            todo = [case for case in cases if case.direction == direction]
            source = None
            unfilled = ""
            if todo and direction == "consume":
                source = fresh_topic("bench-source")
                fill = run_case(cfg, CASE["kafka_fast.produce_batch"], source, compression)
                if fill.error:
                    unfilled = f"the topic to read was not filled: {fill.remark}"
                elif cfg.warm_read:
                    warm_read(cfg.bootstrap, source, cfg.records)
            for case in todo:
                runs: list[Result] = []
                while not unfilled and len(runs) < max(1, cfg.repeat):
                    runs.append(run_case(cfg, case, source or fresh_topic("bench"),
                                         compression))
                    if runs[-1].timed_out:
                        break  # another run would only wait out the bound again
                result = _median(runs) if runs else _failed(case, unfilled)
                if len(cfg.compressions) > 1:
                    result.path = f"{result.path} [{compression}]"
                results.append(result)
                if on_result:
                    on_result(result)
    return results


def ratios(results: list[Result]) -> dict[int, tuple[float, float]]:
    """For each result index: (records/s ratio, CPU/M ratio) against its confluent baseline."""
    out = {}
    for i, r in enumerate(results):
        # what follows the path proper: the event loop (" on uvloop"), the codec (" [lz4]")
        # and objects held (" +1M held")
        cut = min((i for i in (r.path.find(ON_UVLOOP), r.path.find(" ["), r.path.find(" +"))
                   if i >= 0), default=len(r.path))
        suffix = r.path[cut:]
        base = None
        for baseline in ([ASYNC_BASELINE] if _is_async(r) else []) + [BASELINE[r.direction]]:
            base = next((b for b in results if b.client == baseline.client
                         and b.path == baseline.path + suffix
                         and b.direction == r.direction and not b.error), None)
            if base is not None:
                break
        if base and base.records_per_s and r.cpu_per_million:
            out[i] = (r.records_per_s / base.records_per_s,
                      r.cpu_per_million / base.cpu_per_million)
    return out


#: table columns: heading and plain-text alignment/width
COLUMNS = (("direction", "<8"), ("client / path", "<34"), ("records/s", ">11"), ("MB/s", ">8"),
           ("CPU s/M", ">8"), ("x rate", ">7"), ("x CPU", ">6"), ("client", ">6"),
           ("broker", ">6"))


def format_table(results: list[Result], markdown: bool = False) -> str:
    """A table with ratios against confluent-kafka: plain text, or Markdown for the docs."""
    rel = ratios(results)
    rows = []
    for i, r in enumerate(results):
        rate, cpu = rel.get(i, (None, None))
        rows.append(([r.direction, r.label, f"{r.records_per_s:,.0f}", f"{r.mb_per_s:.1f}",
                      f"{r.cpu_per_million:.2f}", "" if rate is None else f"{rate:.2f}",
                      "" if cpu is None else f"{cpu:.2f}", f"{r.client_cores:.2f}",
                      f"{r.broker_cores:.2f}"], r.remark))
    if markdown:
        lines = ["| " + " | ".join(name for name, _ in COLUMNS) + " |",
                 "|" + "|".join("---:" if spec[0] == ">" else "---" for _, spec in COLUMNS) + "|"]
        lines += ["| " + " | ".join(cells) + " |" + (f" {error} |" if error else "")
                  for cells, error in rows]
        lines.append("")
    else:
        head = " ".join(f"{name:{spec}}" for name, spec in COLUMNS)
        lines = [head, "-" * len(head)]
        specs = [spec for _, spec in COLUMNS]
        lines += [" ".join(f"{cell:{spec}}" for cell, spec in zip(cells, specs, strict=True))
                  + (f"  {error}" if error else "") for cells, error in rows]
    if rel:
        lines.append("x rate: records/s relative to confluent-kafka's produce() / "
                     "consume(10000) (asyncio producers: to its AIOProducer.produce()); x CPU: "
                     "CPU seconds per million records relative to the same (lower is better);")
    else:
        lines.append("x rate / x CPU: blank, as confluent-kafka did not run to compare with;")
    lines.append("client / broker: CPU cores busy during the run (a single-threaded broker "
                 "near 1.0 is the bottleneck).")
    return "\n".join(lines)


#: bar colour of each client in the chart
CLIENT_COLORS = {"kafka_fast": "#d62728", "confluent": "#1f77b4", "aiokafka": "#2ca02c",
                 "kafka-python": "#7f7f7f", "java": "#ff7f0e"}


def plot(results: list[Result], path: str, settings: str = "") -> None:
    """Write a bar chart of records/s and CPU per million records to ``path`` (PNG).

    Both axes are logarithmic, so clients a hundred times apart (kafka-python beside
    kafka_fast and confluent-kafka) stay readable; each bar carries its value, a legend names
    the clients and the title gives the run's settings.
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.patches import Patch

    shown = [r for r in results if not r.error][::-1]
    fig, (ax_rate, ax_cpu) = plt.subplots(1, 2, figsize=(14, 0.55 * len(shown) + 2.6))
    labels = [f"{r.direction}: {r.label}" for r in shown]
    rows = list(range(len(shown)))
    colors = [CLIENT_COLORS.get(r.client, "#9467bd") for r in shown]
    for ax, values, text, xlabel in (
            (ax_rate, [r.records_per_s for r in shown], "{:,.0f}",
             "records per second, log scale (higher is better)"),
            (ax_cpu, [r.cpu_per_million for r in shown], "{:.2f}",
             "client CPU seconds per million records, log scale (lower is better)")):
        bars = ax.barh(rows, values, color=colors)
        ax.set_yticks(rows, labels if ax is ax_rate else [""] * len(rows))
        ax.set_xscale("log")
        ax.bar_label(bars, labels=[text.format(v) for v in values], padding=3, fontsize=8)
        positive = [v for v in values if v > 0]
        if positive:
            ax.set_xlim(min(positive) / 2, max(positive) * 4)
        ax.set_xlabel(xlabel)
        ax.grid(axis="x", which="major", alpha=0.3)
    clients = list(dict.fromkeys(r.client for r in results))
    fig.legend(handles=[Patch(color=CLIENT_COLORS.get(c, "#9467bd"), label=c) for c in clients],
               loc="lower center", ncol=len(clients), frameon=False)
    failed = [r.label for r in results if r.error]
    title = "kafka_fast and its peers on one broker, one run"
    if settings:
        title += "\n" + settings
    if failed:
        title += "\nfailed (not shown): " + ", ".join(failed)
    fig.suptitle(title, fontsize=10)
    fig.tight_layout(rect=(0, 0.06, 1, 1))
    fig.savefig(path, dpi=110)
    plt.close(fig)
