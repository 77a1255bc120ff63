"""How cost grows: kafka_fast against confluent-kafka on the same broker while one thing
changes at a time, from a base point of 100-byte values, 6 partitions, acks=1, no compression,
one Apache Kafka node.

Dimensions (``--dimension``, default all):

- ``partitions``: 1, 10, 100, 1,000, 10,000;
- ``size``: values of 10 B, 100 B, 1 KB, 10 KB and 999,000 B (a 1 MB record under both
  clients' default ``message.max.bytes`` of 1,000,000 with its key);
- ``brokers``: 1 and 3 Apache Kafka nodes (topics replicated 3 times on 3);
- ``acks``: 1 and all;
- ``codec``: none, gzip, snappy, lz4, zstd;
- ``held``: 0 and 1,000,000: every case's process first makes and keeps a million 100-byte
  ``bytes`` objects of its own (an application's heap), so each bulk path runs once inside a
  process that is not empty.

At every point kafka_fast's ``produce_batch`` and ``produce()`` and confluent-kafka's
``produce()`` write into fresh topics; for the size, partition and held dimensions (every
dimension with ``--consume-all``) kafka_fast's ``consume_batch`` and confluent-kafka's
``consume(10000)`` (``fetch.queue.backoff.ms=0``, docs/bench/settings.md) then read one topic
filled with the same records. On Apache Kafka every topic's partitions first get their first
index entries, and the records that made them are deleted, and the topic the consume cases
read is read once untimed (``--cold-indexes``: neither), so that no timed case waits for the
broker's first write into each partition's index files or for its first read of them. Each
case is a fresh process (``kafka_fast.bench.runner``):
client CPU is its user+system time, peak RSS its maximum resident memory. Records per point
follow the value size (``--megabytes`` of records, between ``--min-records`` and
``--max-records``) so that each point takes seconds. The base point is run once and serves
every dimension.

Every point appends one JSON line to ``docs/bench/results/sweep.jsonl`` (commit, machine,
broker, the point and the base, the machine's state: "loaded" when processes other than the
benchmark's used over 15% of the CPUs during it, as the Spark benchmark labels its runs);
``tools/bench_report.py`` draws ``docs/bench/sweep-<dimension>.png`` and the tables of
docs/benchmarks.md from those lines.

    .venv/bin/python benchmarks/bench_sweep.py                    # everything (~20 min quiet)
    .venv/bin/python benchmarks/bench_sweep.py --dimension size --dimension codec
    .venv/bin/python benchmarks/bench_sweep.py --estimate         # points and time, no run
"""

from __future__ import annotations

import argparse
import os
import resource
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from benchmarks.brokers import apache_kafka, broker_for  # noqa: E402
from benchmarks.command import Broker  # noqa: E402
from kafka_fast.bench import store  # noqa: E402
from kafka_fast.bench.clients import CLIENT_SETTINGS  # noqa: E402
from kafka_fast.bench.result import proc_stat  # noqa: E402
from kafka_fast.bench.runner import (  # noqa: E402
    BenchConfig,
    format_table,
    run_all,
    wait_writable,
    warm_indexes,
)

#: the values of each dimension, in chart order
DIMENSIONS: dict[str, tuple[Any, ...]] = {
    "partitions": (1, 10, 100, 1_000, 10_000),
    "size": (10, 100, 1_000, 10_000, 999_000),
    "brokers": (1, 3),
    "acks": ("1", "all"),
    "codec": ("none", "gzip", "snappy", "lz4", "zstd"),
    "held": (0, 1_000_000),
}
#: every other dimension stays here while one changes
BASE: dict[str, Any] = {"partitions": 6, "size": 100, "brokers": 1, "acks": "1",
                        "codec": "none", "held": 0}
KEY_BYTES = 10
PRODUCE_CASES = ["kafka_fast.produce_batch", "kafka_fast.produce", "confluent.produce"]
CONSUME_CASES = ["kafka_fast.consume_batch", "confluent.consume"]
#: dimensions whose points also read (all of them with --consume-all)
CONSUMED = ("partitions", "size", "held")

#: rough costs behind the time estimate (a quiet 2-core machine): a case process's start,
#: payload and connection; topic creation per partition; bytes and records per second
CASE_START_S = 2.5
TOPIC_S_PER_PARTITION = 0.003
BYTES_PER_S = 80e6
RECORDS_PER_S = 400_000
#: making a million held objects in a case's process
HOLD_S_PER_MILLION = 0.5


@dataclass
class Point:
    """One point of the sweep: its settings, the dimensions it serves and what it runs."""

    settings: dict[str, Any]
    dimensions: list[str]
    records: int
    consume: bool

    @property
    def label(self) -> str:
        changed = [f"{k}={v}" for k, v in self.settings.items() if BASE[k] != v]
        return ", ".join(changed) or "base"

    def cases(self) -> list[str]:
        return PRODUCE_CASES + (CONSUME_CASES if self.consume else [])

    def estimate_s(self) -> float:
        """A rough duration on a quiet machine: each case's start and transfer, topics."""
        runs = len(PRODUCE_CASES) + (len(CONSUME_CASES) + 1 if self.consume else 0)
        nbytes = self.records * (self.settings["size"] + KEY_BYTES)
        transfer = max(nbytes / BYTES_PER_S, self.records / RECORDS_PER_S)
        topics = (len(PRODUCE_CASES) + self.consume) * (
            1 + self.settings["partitions"] * TOPIC_S_PER_PARTITION)
        held = HOLD_S_PER_MILLION * self.settings["held"] / 1e6
        return runs * (CASE_START_S + held + transfer) + topics


def records_for(size: int, megabytes: float, least: int, most: int) -> int:
    """Records per point: ``megabytes`` of records of ``size``-byte values and 10-byte keys,
    kept between ``least`` and ``most``; from 5,000 on rounded to a multiple of 10,000, so
    that confluent-kafka's ``consume(10000, 1.0)`` never waits out its timeout for a last
    short batch."""
    n = max(least, min(most, int(megabytes * 1e6) // (size + KEY_BYTES)))
    return max(10_000, round(n / 10_000) * 10_000) if n >= 5_000 else n


def plan(dimensions: list[str], megabytes: float, least: int, most: int,
         consume_all: bool) -> list[Point]:
    """The points of ``dimensions``, each once (the base point serves every dimension it lies
    on), single-node points first."""
    points: dict[tuple, Point] = {}
    for dim in dimensions:
        for value in DIMENSIONS[dim]:
            settings = {**BASE, dim: value}
            key = tuple(settings.items())
            point = points.get(key)
            if point is None:
                point = points[key] = Point(
                    settings, [], records_for(settings["size"], megabytes, least, most), False)
            point.dimensions.append(dim)
            point.consume |= consume_all or dim in CONSUMED
    return sorted(points.values(), key=lambda p: p.settings["brokers"])


def chosen(points: list[Point], values: list[str]) -> list[Point]:
    """The points ``--values`` keeps: a point stays when, in one of its dimensions, its value
    is among those given for that dimension (``DIM=V,V``), or among those given for every
    dimension (``V,V``), or that dimension is not restricted at all."""
    every: set[str] = set()
    per: dict[str, set[str]] = {}
    for item in values:
        dim, sep, listed = item.partition("=")
        if sep:
            if dim not in DIMENSIONS:
                raise ValueError(f"unknown dimension {dim!r} (choose from "
                                 f"{', '.join(DIMENSIONS)})")
            per.setdefault(dim, set()).update(v.strip() for v in listed.split(","))
        else:
            every.update(v.strip() for v in item.split(","))

    def keep(point: Point) -> bool:
        for dim in point.dimensions:
            allowed = per.get(dim, every)
            if not allowed or str(point.settings[dim]) in allowed:
                return True
        return False

    return [p for p in points if keep(p)]


def _minutes(seconds: float) -> str:
    return f"{seconds / 60:.1f} min" if seconds >= 90 else f"{seconds:.0f} s"


#: a point is labelled as from a loaded machine when processes other than the benchmark's used
#: more than this share of the CPUs (the Spark benchmark's threshold)
LOADED_SHARE = 0.15


def machine_cpu() -> float:
    """Busy CPU seconds of the whole machine since boot (/proc/stat's user, nice, system, irq
    and softirq), as the Spark benchmark counts them. (Not imported from it: Spark's modules
    would swell this process, and a case process reports at least its parent's peak RSS.)"""
    with open("/proc/stat", encoding="ascii") as fh:
        fields = [int(x) for x in fh.readline().split()[1:]]
    user, nice, system, _idle, _iowait, irq, softirq = (fields + [0] * 7)[:7]
    return (user + nice + system + irq + softirq) / os.sysconf("SC_CLK_TCK")


class CpuShare:
    """The share of the machine's CPU used by processes other than this one and its
    descendants (the broker, the case processes) between ``start()`` and ``stop()``."""

    loaded_share = LOADED_SHARE

    @staticmethod
    def ours() -> float:
        """CPU seconds of this process, its children waited for, and its live descendants."""
        own = resource.getrusage(resource.RUSAGE_SELF)
        waited = resource.getrusage(resource.RUSAGE_CHILDREN)
        total = own.ru_utime + own.ru_stime + waited.ru_utime + waited.ru_stime
        parents: dict[int, int] = {}
        cpu: dict[int, float] = {}
        for name in os.listdir("/proc"):
            if name.isdigit():
                stat = proc_stat(int(name))
                if stat is not None:
                    parents[int(name)], cpu[int(name)] = stat[0], stat[1]
        mine = {os.getpid()}
        changed = True
        while changed:
            new = {pid for pid, ppid in parents.items() if ppid in mine and pid not in mine}
            mine |= new
            changed = bool(new)
        return total + sum(cpu[pid] for pid in mine if pid != os.getpid())

    def start(self) -> None:
        self.t0, self.busy0, self.ours0 = time.monotonic(), machine_cpu(), self.ours()

    def stop(self) -> float:
        wall = time.monotonic() - self.t0
        other = (machine_cpu() - self.busy0) - (self.ours() - self.ours0)
        return max(0.0, other) / (wall * (os.cpu_count() or 1)) if wall > 0 else 0.0


@contextmanager
def tracked(broker: Broker, warm: bool = False) -> Iterator[tuple[Broker, list[str]]]:
    """``broker`` with a topic creator that remembers each topic made, and deletes the topic
    of the previous produce case before it makes the next (the topic the consume cases read is
    deleted after the point): a node of Apache Kafka keeps a file open per partition, and two
    topics of ten thousand partitions exceed a common limit of 20,000 open files. With
    ``warm``, every partition's first index entries are written before a case starts
    (:func:`kafka_fast.bench.runner.warm_indexes`)."""
    made: list[str] = []
    create: Callable[[str, int], None]
    if broker.create_topic is not None:
        create = broker.create_topic
    else:
        from kafka_fast.bench.runner import admin_create_topic

        create = admin_create_topic(broker.bootstrap)

    def creating(name: str, partitions: int) -> None:
        delete_topics(broker.bootstrap, made)
        create(name, min(partitions, PARTITIONS_PER_REQUEST))
        made.append(name)
        if partitions > PARTITIONS_PER_REQUEST:
            grow(broker.bootstrap, name, partitions)
        # every partition writable before a case starts (admin_create_topic waits too, but
        # not for partitions added by ``grow``; a creator of the broker's own may not wait)
        wait_writable(broker.bootstrap, name, partitions)
        if warm:
            warm_indexes(broker.bootstrap, name, partitions)

    yield Broker(broker.bootstrap, broker.pid, creating, broker.name), made


#: Apache Kafka's server settings besides the harness's: a deleted topic's files are closed
#: and removed at once (default: a minute later, its open files counting until then)
KAFKA_SETTINGS = {"log.segment.delete.delay.ms": "0"}

#: Apache Kafka's controller refuses to make more than 10,000 records in one operation (a
#: topic of 10,000 partitions is 10,001): larger topics are made in steps of this many
PARTITIONS_PER_REQUEST = 5_000


def grow(bootstrap: str, topic: str, partitions: int) -> None:
    """Add partitions to ``topic`` until it has ``partitions``, at most
    :data:`PARTITIONS_PER_REQUEST` per request."""
    from kafka_fast.admin import AdminClient, NewPartitions

    with AdminClient({"bootstrap.servers": bootstrap}) as admin:
        total = PARTITIONS_PER_REQUEST
        while total < partitions:
            total = min(partitions, total + PARTITIONS_PER_REQUEST)
            for fut in admin.create_partitions([NewPartitions(topic, total)],
                                               operation_timeout=60).values():
                fut.result(120)


def delete_topics(bootstrap: str, names: list[str]) -> None:
    """Delete the topics a point made (errors are reported, not raised)."""
    if not names:
        return
    from kafka_fast.admin import AdminClient

    with AdminClient({"bootstrap.servers": bootstrap}) as admin:
        for name, fut in admin.delete_topics(list(names), operation_timeout=60).items():
            try:
                fut.result(120)
            except Exception as exc:  # a leftover topic only costs the broker space
                print(f"  could not delete {name}: {exc}", file=sys.stderr)
    names.clear()


def run_point(point: Point, broker: Broker, made: list[str], args: argparse.Namespace,
              share: CpuShare, sweep_id: str) -> dict[str, Any]:
    """Run one point's cases; the stored line."""
    s = point.settings
    cfg = BenchConfig(bootstrap=broker.bootstrap, records=point.records, size=s["size"],
                      key_size=KEY_BYTES, partitions=s["partitions"], compressions=[s["codec"]],
                      acks=s["acks"], directions=("produce", "consume"), repeat=args.repeat,
                      broker_pid=broker.pid, create_topic=broker.create_topic,
                      cases=point.cases(), case_timeout_s=args.case_timeout, hold=s["held"],
                      warm_read=warmed_first(broker, args))
    share.start()
    try:
        results = run_all(cfg)
    finally:
        delete_topics(broker.bootstrap, made)
    other = share.stop()
    state = args.machine_state
    if state == "auto":
        state = "loaded" if other > share.loaded_share else "quiet"
    print(format_table(results), flush=True)
    settings = {"sweep_id": sweep_id, "dimensions": point.dimensions, "point": s,
                "base": BASE, "records": point.records, "value_bytes": s["size"],
                "key_bytes": KEY_BYTES, "partitions": s["partitions"], "nodes": s["brokers"],
                "acks": [s["acks"]], "codecs": [s["codec"]], "repeat": args.repeat,
                "case_timeout_s": args.case_timeout,
                "cases": cfg.cases, "client_settings": CLIENT_SETTINGS,
                "machine_state": state, "other_cpu_share": round(other, 3),
                "warm_indexes": warmed_first(broker, args)}
    return store.record("sweep", broker.name or broker.bootstrap, settings,
                        [dict(r.as_dict(), acks=s["acks"]) for r in results])


@contextmanager
def broker_of(nodes: int, args: argparse.Namespace) -> Iterator[Broker]:
    if nodes == 1 and (args.bootstrap or args.broker == "tansu"):
        with broker_for(args.bootstrap, args.broker) as broker:
            yield broker
    else:
        with apache_kafka(nodes, KAFKA_SETTINGS) as broker:
            yield broker


def warmed_first(broker: Broker, args: argparse.Namespace) -> bool:
    """Whether each partition's first index entries and the first read of a consumed topic
    are done before the timed cases: on Apache Kafka started by the sweep (whose index files
    :func:`warm_indexes` is for; it uses DeleteRecords) unless ``--cold-indexes``."""
    return (broker.name or "").startswith("Apache Kafka") and not args.cold_indexes


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--dimension", action="append", choices=list(DIMENSIONS),
                    help="a dimension to run (repeatable; default: all)")
    ap.add_argument("--values", action="append",
                    help="comma-separated: only these values of the dimensions (e.g. "
                         "--dimension partitions --values 1000,10000); DIM=V,V... restricts "
                         "one dimension only (repeatable: --values partitions=1,100,1000 "
                         "--values size=10,100,10000)")
    ap.add_argument("--broker", choices=("kafka", "tansu"), default="kafka",
                    help="the single node (the 3-node points are always Apache Kafka)")
    ap.add_argument("--bootstrap", help="an existing single-node broker instead of --broker")
    ap.add_argument("--megabytes", type=float, default=100,
                    help="records per point: about this many MB of keys and values")
    ap.add_argument("--min-records", type=int, default=100)
    ap.add_argument("--max-records", type=int, default=1_000_000)
    ap.add_argument("--consume-all", action="store_true",
                    help="read at every point (default: the size and partition dimensions)")
    ap.add_argument("--repeat", type=int, default=1, help="runs per case (the median is kept)")
    ap.add_argument("--case-timeout", type=float, default=600.0, metavar="SECONDS",
                    help="the longest one run of a case may take; past it the case is stored "
                         "as timed out and the sweep goes on (default: %(default)g)")
    ap.add_argument("--machine-state", choices=("auto", "quiet", "loaded"), default="auto",
                    help="label of the stored lines; auto: loaded when other processes used "
                         "over 15%% of the CPUs during a point")
    ap.add_argument("--results", default=str(store.DEFAULT_DIR))
    ap.add_argument("--no-store", action="store_true")
    ap.add_argument("--cold-indexes", action="store_true",
                    help="leave each partition's first index entries and the first read of "
                         "the consumed topic to the timed cases (default on Apache Kafka: "
                         "both done before)")
    ap.add_argument("--estimate", action="store_true", help="print the points and stop")
    args = ap.parse_args()
    points = plan(args.dimension or list(DIMENSIONS), args.megabytes, args.min_records,
                  args.max_records, args.consume_all)
    if args.values:
        try:
            points = chosen(points, args.values)
        except ValueError as exc:
            ap.error(f"--values: {exc}")
    if args.broker == "tansu" or args.bootstrap:
        # a 3-node point beside a different single node would compare two brokers
        dropped = [p for p in points if p.settings["brokers"] != 1]
        points = [p for p in points if p.settings["brokers"] == 1]
        if dropped:
            print("skipped the 3-node point: it runs beside Apache Kafka's single node only",
                  file=sys.stderr)
    estimate = sum(p.estimate_s() for p in points) + 30 * len({p.settings["brokers"]
                                                                for p in points})
    print(f"{len(points)} points, about {_minutes(estimate)} on a quiet 2-core machine "
          "(broker starts included)", flush=True)
    if args.estimate:
        for p in points:
            print(f"  {p.label}: {p.records:,} records, {len(p.cases())} cases, "
                  f"~{p.estimate_s():.0f} s")
        return 0
    share = CpuShare()
    sweep_id = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime()) + "-" + uuid.uuid4().hex[:6]
    started, planned_done = time.monotonic(), 0.0
    failed: list[str] = []
    for nodes in sorted({p.settings["brokers"] for p in points}):
        with broker_of(nodes, args) as given, \
                tracked(given, warm=warmed_first(given, args)) as (broker, made):
            for p in (p for p in points if p.settings["brokers"] == nodes):
                index = points.index(p) + 1
                print(f"\n[{index}/{len(points)}] {p.label} on {broker.name}: "
                      f"{p.records:,} records of {p.settings['size']:,} bytes", flush=True)
                try:
                    line = run_point(p, broker, made, args, share, sweep_id)
                except Exception as exc:  # one failed point does not end the sweep
                    print(f"[{index}/{len(points)}] FAILED, nothing stored: {exc}",
                          file=sys.stderr, flush=True)
                    failed.append(p.label)
                    continue
                planned_done += p.estimate_s()
                spent = time.monotonic() - started
                left = sum(q.estimate_s() for q in points[index:]) * spent / planned_done
                print(f"[{index}/{len(points)}] done, {_minutes(spent)} so far, about "
                      f"{_minutes(left)} left ({line['settings']['machine_state']} machine)",
                      flush=True)
                if not args.no_store:
                    store.append(Path(args.results), line)
    print(f"\nsweep {sweep_id}: {len(points)} points in "
          f"{_minutes(time.monotonic() - started)}"
          + (f"; failed: {', '.join(failed)}" if failed else ""), flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
