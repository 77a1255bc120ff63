"""Runs one benchmark case in a fresh process and prints its result as ``RESULT {json}``.

A fresh process per case keeps one client's threads, caches and garbage out of the next
client's measurement. Used by ``kafka_fast.bench.runner``; not meant to be run by hand.
"""

from __future__ import annotations

import importlib
import json
import resource
import sys
from dataclasses import asdict

from .clients import CASE, Target
from .payload import Payload
from .result import Result

#: Modules loaded before timing starts, so a throughput figure does not include one-off import
#: work (the message codecs are loaded on first use).
WARM = ("producer", "consumer", "admin", "protocol.messages.produce_request",
        "protocol.messages.produce_response", "protocol.messages.fetch_request",
        "protocol.messages.fetch_response", "protocol.messages.list_offsets_request",
        "protocol.messages.list_offsets_response", "protocol.messages.metadata_request",
        "protocol.messages.metadata_response", "protocol.messages.api_versions_request",
        "protocol.messages.api_versions_response", "protocol.messages.init_producer_id_request",
        "protocol.messages.init_producer_id_response")


def main(argv: list[str]) -> int:
    spec = json.loads(argv[1])
    case = CASE[spec["case"]]
    if case.client == "kafka_fast":
        for name in WARM:
            importlib.import_module(f"kafka_fast.{name}")
    held = hold_objects(spec.get("hold", 0))
    payload = Payload.make(spec["records"], spec["size"], spec["key_size"])
    target = Target(spec["bootstrap"], spec["topic"], spec["partitions"], spec["compression"],
                    spec["acks"], producers=spec.get("producers", 1))
    wall, cpu, error = case.run(target, payload)
    result = Result(case.client, case.path, case.direction, len(payload), payload.nbytes, wall,
                    cpu, error,
                    max_rss_mb=peak_rss_mb())
    if held:
        result.path += f" +{len(held) / 1e6:g}M held" if len(held) >= 100_000 \
            else f" +{len(held):,} held"
    print("RESULT " + json.dumps(asdict(result)), flush=True)
    return 0


def peak_rss_mb() -> float:
    """This program's peak resident memory in MiB: Linux's VmHWM, which starts afresh at exec
    (``ru_maxrss`` carries the peak of the process that started this one)."""
    try:
        with open("/proc/self/status", encoding="ascii") as status:
            for line in status:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def hold_objects(count: int, size: int = 100) -> list[bytes]:
    """``count`` distinct ``size``-byte bytes objects, the data a host application keeps alive
    (a realistic process is not empty): made before the case and kept until it ends."""
    reps = size // 8 + 1
    return [(i.to_bytes(8, "little") * reps)[:size] for i in range(count)]


if __name__ == "__main__":
    sys.exit(main(sys.argv))
