"""How throughput, CPU per record and memory change with record size, partition count and
producers per process: kafka_fast against confluent-kafka on one broker.

Three sweeps, each case in a fresh process on the same broker (an embedded Tansu unless
--bootstrap is given):

- record size (10 B to 100 KB, --partitions partitions), records per run chosen so each run
  moves about --megabytes of values;
- partition count (1 to 1,000), --records records of 100 bytes;
- producers in one process (1, 2, 4), each in its own thread, sharing --records records;
- application threads (1, 2, 4) calling produce_batch, and produce(), on ONE producer,
  sharing --records records.

The first point runs once unstored before the sweep (a fresh broker is slower for its first
cases). Every sweep point is one stored run (``docs/bench/results/scaling.jsonl``, with the
sweep and its value in the settings); peak client memory (max RSS) is in each result.

    .venv/bin/python benchmarks/bench_scaling.py                      # every sweep
    .venv/bin/python benchmarks/bench_scaling.py --sweep partitions --records 200000
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from benchmarks.brokers import KINDS, broker_for  # noqa: E402
from kafka_fast.bench import store  # noqa: E402
from kafka_fast.bench.clients import CLIENT_SETTINGS  # noqa: E402
from kafka_fast.bench.runner import BenchConfig, format_table, run_all  # noqa: E402

SIZES = (10, 100, 1_000, 10_000, 100_000)
PARTITIONS = (1, 10, 100, 1_000)
PRODUCERS = (1, 2, 4)
CASES = ["kafka_fast.produce", "kafka_fast.produce_batch", "confluent.produce"]


def points(args: argparse.Namespace) -> list[tuple[str, int, dict]]:
    """(sweep, value, BenchConfig overrides) of every point asked for."""
    out: list[tuple[str, int, dict]] = []
    if args.sweep in ("all", "size"):
        for size in SIZES:
            records = max(1_000, min(args.records, args.megabytes * 1_000_000 // size))
            out.append(("size", size, {"size": size, "records": records}))
    if args.sweep in ("all", "partitions"):
        out += [("partitions", n, {"partitions": n}) for n in PARTITIONS]
    if args.sweep in ("all", "threads"):
        out += [("threads", n, {"producers": n,
                                "cases": ["kafka_fast.produce_batch_shared",
                                          "kafka_fast.produce_shared"]})
                for n in PRODUCERS]
    if args.sweep in ("all", "producers"):
        out += [("producers", n, {"producers": n,
                                  "cases": ["kafka_fast.produce_batch_threads"]})
                for n in PRODUCERS]
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--bootstrap", help="an existing broker (default: an embedded Tansu)")
    ap.add_argument("--broker", choices=KINDS, default="tansu",
                    help="what to start when no --bootstrap is given")
    ap.add_argument("--sweep", choices=("all", "size", "partitions", "producers", "threads"),
                    default="all")
    ap.add_argument("--records", type=int, default=1_000_000)
    ap.add_argument("--megabytes", type=int, default=200,
                    help="value bytes per run in the size sweep (in MB)")
    ap.add_argument("--partitions", type=int, default=6)
    ap.add_argument("--repeat", type=int, default=1)
    ap.add_argument("--results", default=str(store.DEFAULT_DIR))
    ap.add_argument("--no-store", action="store_true")
    args = ap.parse_args()
    with broker_for(args.bootstrap, args.broker) as broker:

        def config(overrides: dict, repeat: int) -> BenchConfig:
            conf = {"records": args.records, "size": 100, "key_size": 10,
                    "partitions": args.partitions, "cases": CASES, **overrides}
            return BenchConfig(bootstrap=broker.bootstrap, compressions=["none"],
                               directions=("produce",), repeat=repeat,
                               broker_pid=broker.pid, create_topic=broker.create_topic, **conf)

        todo = points(args)
        if todo:
            # A broker started for the run is slower for its first cases (the JVM compiles
            # its hot paths): the first point once, not stored, so it is not measured cold.
            run_all(config(todo[0][2], 1))
        for sweep, value, overrides in todo:
            cfg = config(overrides, args.repeat)
            results = run_all(cfg)
            print(f"\n{sweep} = {value}: {cfg.records:,} records of {cfg.size} bytes, "
                  f"{cfg.partitions} partitions\n{format_table(results)}", flush=True)
            if not args.no_store:
                settings = {"sweep": sweep, "value": value, "records": cfg.records,
                            "value_bytes": cfg.size, "key_bytes": cfg.key_size,
                            "partitions": cfg.partitions, "producers": cfg.producers,
                            "codecs": ["none"], "acks": [cfg.acks], "repeat": args.repeat,
                            "cases": cfg.cases, "client_settings": CLIENT_SETTINGS}
                store.append(Path(args.results), store.record(
                    "scaling", broker.name or broker.bootstrap, settings,
                    [dict(r.as_dict(), acks=cfg.acks) for r in results]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
