"""The Java client's own perf tools as anchors: ``ProducerPerformance`` and
``ConsumerPerformance`` from Apache Kafka's ``kafka-tools`` jar.

The jars are the ones ``tools/fetch_kafka.sh`` caches for the test harness
(``$KAFKA_FAST_CACHE`` or ``~/.cache/kafka_fast``, ``kafka-<version>/libs``). Each run is one
JVM: its CPU is the child process's user+system time, JVM start-up and JIT included (what the
client costs a machine); its rate is the one the tool reports, which leaves JVM start-up and,
for the consumer, the group join out (``fetch.nMsg.sec``). ProducerPerformance sends values of
the payload's size without keys; ConsumerPerformance reads through a consumer group.
"""

from __future__ import annotations

import os
import re
import resource
import shutil
import subprocess
import uuid
from pathlib import Path

from .payload import Payload

#: (wall seconds, process CPU seconds, error or "")
Timing = tuple[float, float, str]


def java_binary() -> str | None:
    """``$JAVA_HOME/bin/java`` or the ``java`` on PATH, or None."""
    home = os.environ.get("JAVA_HOME")
    if home and os.access(os.path.join(home, "bin", "java"), os.X_OK):
        return os.path.join(home, "bin", "java")
    return shutil.which("java")


def kafka_libs() -> Path | None:
    """The newest complete jar directory fetched by tools/fetch_kafka.sh, or None."""
    base = Path(os.environ.get("KAFKA_FAST_CACHE") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "kafka_fast"))
    done = sorted(base.glob("kafka-*/libs/.complete"),
                  key=lambda p: [int(x) if x.isdigit() else x
                                 for x in re.split(r"[.-]", p.parent.parent.name)])
    return done[-1].parent if done else None


def missing() -> str | None:
    """What to install for the Java anchors, or None when they can run."""
    if java_binary() is None:
        return "Java 17+ (apt-get install openjdk-17-jre-headless)"
    if kafka_libs() is None:
        return "the Apache Kafka jars (tools/fetch_kafka.sh)"
    return None


def _run(tool: str, args: list[str], timeout: float) -> tuple[str, float]:
    """Run ``org.apache.kafka.tools.<tool>``; (stdout, CPU seconds of the JVM)."""
    java, libs = java_binary(), kafka_libs()
    if java is None or libs is None:
        raise RuntimeError(f"the Java anchors need {missing()}")
    classpath = os.pathsep.join(str(p) for p in sorted(libs.glob("*.jar")))
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    try:
        proc = subprocess.run([java, "-Xmx1g", "-cp", classpath,
                               f"org.apache.kafka.tools.{tool}", *args],
                              capture_output=True, text=True, timeout=timeout + 60)
    except subprocess.TimeoutExpired:
        raise RuntimeError(f"{tool} did not finish within {timeout + 60:g} s") from None
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    if proc.returncode != 0:
        tail = (proc.stderr.strip().splitlines() or [f"exit status {proc.returncode}"])[-1]
        raise RuntimeError(f"{tool}: {tail}")
    return proc.stdout, cpu


def _properties(**props: str) -> list[str]:
    return [f"{key.replace('_', '.')}={value}" for key, value in props.items()]


def producer_performance(bootstrap: str, topic: str, p: Payload, compression: str, acks: str,
                         timeout_s: float) -> Timing:
    """ProducerPerformance with the settings the Python cases use (linger.ms=5,
    batch.size=1000000, the same acks and compression)."""
    out, cpu = _run("ProducerPerformance", [
        "--topic", topic, "--num-records", str(len(p)), "--record-size", str(p.values.shape[1]),
        "--throughput", "-1", "--command-property",
        *_properties(bootstrap_servers=bootstrap, acks=acks, linger_ms="5",
                     batch_size="1000000", compression_type=compression)], timeout_s)
    match = re.search(r"(\d+) records sent, ([\d.]+) records/sec", out)
    if match is None or int(match.group(1)) != len(p):
        raise RuntimeError(f"ProducerPerformance printed no summary: {out.strip()[-300:]}")
    return len(p) / float(match.group(2)), cpu, ""


def consumer_performance(bootstrap: str, topic: str, p: Payload, timeout_s: float) -> Timing:
    """ConsumerPerformance reading ``len(p)`` records from the start, in a fresh group
    (``fetch.max.bytes``/``max.partition.fetch.bytes`` raised as for the Python cases)."""
    out, cpu = _run("ConsumerPerformance", [
        "--topic", topic, "--num-records", str(len(p)), "--bootstrap-server", bootstrap,
        "--timeout", str(int(timeout_s * 1000)), "--group", f"bench-{uuid.uuid4().hex[:10]}",
        *[arg for prop in _properties(
            auto_offset_reset="earliest", fetch_max_bytes="52428800",
            max_partition_fetch_bytes="10485760", max_poll_records="10000")
          for arg in ("--command-property", prop)]], timeout_s)
    lines = [line for line in out.splitlines() if line.strip()]
    if len(lines) < 2 or not lines[-2].startswith("start.time"):
        raise RuntimeError(f"ConsumerPerformance printed no summary: {out.strip()[-300:]}")
    row = dict(zip([h.strip() for h in lines[-2].split(",")],
                   [v.strip() for v in lines[-1].split(",")], strict=True))
    if int(row["data.consumed.in.nMsg"]) < len(p):
        raise RuntimeError(f"ConsumerPerformance read {row['data.consumed.in.nMsg']} of "
                           f"{len(p)} records")
    return len(p) / float(row["fetch.nMsg.sec"]), cpu, ""
