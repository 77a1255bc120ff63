"""Faults between the client and a 3-node Apache Kafka cluster, kafka_fast beside
confluent-kafka: run the schedule of tests/chaos/toxiproxy_schedule.py for both clients,
store the outcomes, and render the table of docs/faults.md from the stored runs.

    python tools/fault_table.py [--records 200000] [--faults latency,timeout] [--note TEXT]
    python tools/fault_table.py --render     # only rewrite docs/faults.md from the results

A run starts Toxiproxy and its own cluster (tools/fetch_kafka.sh and
tools/fetch_toxiproxy.sh must have run), appends one JSON line to
docs/bench/results/faults.jsonl (commit, machine, settings, per fault per client: lost,
duplicated, out of order, wedged, recovery time, ...) and rewrites the block between
``<!-- faults -->`` and ``<!-- /faults -->`` in docs/faults.md from the newest run.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
for _p in (ROOT, ROOT / "tests", ROOT / "tests" / "chaos"):
    sys.path.insert(0, str(_p))

from kafka_fast.bench import store  # noqa: E402

RESULTS = ROOT / "docs" / "bench" / "results"
DOC = ROOT / "docs" / "faults.md"
BEGIN, END = "<!-- faults -->", "<!-- /faults -->"
COLUMNS = ("lost", "duplicated", "out_of_order", "wedged", "recovery_s", "group_lost",
           "group_duplicated", "failed")


def run(records: int, faults: list[str], clients: list[str], note: str) -> dict[str, Any]:
    import confluent_kafka
    import toxiproxy_schedule as sched
    from harness.toxiproxy import start_proxied_cluster

    import kafka_fast

    libs = {"kafka_fast": kafka_fast, "confluent_kafka": confluent_kafka}
    results: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="fault-table-") as tmp:
        cluster = start_proxied_cluster(Path(tmp))
        try:
            for name in faults:
                for client in clients:
                    cluster.server.reset()
                    began = time.monotonic()
                    try:
                        out, _, _ = sched.run_fault(libs[client], client, cluster,
                                                    sched.FAULTS[name], records)
                        row = out.as_dict()
                    except Exception as exc:  # a wedged read-back or set-up: stored as such
                        row = {"client": client, "fault": name, "records": records,
                               "wedged": True, "error": f"{type(exc).__name__}: {exc}"[:300]}
                    row["wall_s"] = round(time.monotonic() - began, 1)
                    print(row, flush=True)
                    results.append(row)
        finally:
            cluster.stop()
    settings = {"records": records, "faults": faults, "clients": clients,
                "confluent_kafka": confluent_kafka.version()[0],
                "librdkafka": confluent_kafka.libversion()[0], "note": note,
                "toxics": {n: [vars(t) for t in sched.FAULTS[n].toxics] for n in faults}}
    return store.record("faults", "Apache Kafka (3 nodes, one Toxiproxy per broker)",
                        settings, results)


def _cell(row: dict[str, Any], column: str) -> str:
    value = row.get(column)
    if value is None:
        return "-"
    if isinstance(value, dict):
        return ", ".join(f"{k} {v}" for k, v in sorted(value.items())) or "0"
    if isinstance(value, bool):
        return "yes" if value else "no"
    return str(value)


def render(runs: list[dict[str, Any]]) -> str:
    """The Markdown table of the newest run."""
    latest = runs[-1]
    lines = ["| fault | client | " + " | ".join(COLUMNS) + " |",
             "|---|---|" + "---|" * len(COLUMNS)]
    for row in latest["results"]:
        cells = [_cell(row, c) for c in COLUMNS]
        lines.append(f"| {row['fault']} | {row['client']} | " + " | ".join(cells) + " |")
    s = latest["settings"]
    m = latest["machine"]
    lines.append("")
    lines.append(f"Run of {latest['time']} at commit {latest['commit']}, {m['cpus']} x "
                 f"{m['cpu']}, Python {m['python']}; {s['records']} records per fault and "
                 f"client; confluent-kafka {s['confluent_kafka']} (librdkafka "
                 f"{s['librdkafka']}). {s.get('note', '')}".rstrip())
    return "\n".join(lines)


def write_doc(runs: list[dict[str, Any]]) -> None:
    text = DOC.read_text()
    head, rest = text.split(BEGIN, 1)
    _, tail = rest.split(END, 1)
    DOC.write_text(f"{head}{BEGIN}\n{render(runs)}\n{END}{tail}")


def main(argv: list[str] | None = None) -> int:
    import toxiproxy_schedule as sched

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--records", type=int, default=200_000)
    ap.add_argument("--faults", default=",".join(sched.FAULTS))
    ap.add_argument("--clients", default="kafka_fast,confluent_kafka")
    ap.add_argument("--note", default="", help="stored with the run (e.g. a busy machine)")
    ap.add_argument("--render", action="store_true", help="only rewrite docs/faults.md")
    args = ap.parse_args(argv)
    path = RESULTS / "faults.jsonl"
    if not args.render:
        faults = [f for f in args.faults.split(",") if f]
        unknown = sorted(set(faults) - set(sched.FAULTS))
        if unknown:
            raise SystemExit(f"--faults: unknown {unknown}; known: {sorted(sched.FAULTS)}")
        path = store.append(RESULTS, run(args.records, faults, args.clients.split(","),
                                         args.note))
    write_doc(store.load(path))
    return 0


if __name__ == "__main__":
    sys.exit(main())
