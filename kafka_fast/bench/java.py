"""The Java client's own perf tools as anchors: ``ProducerPerformance`` and
``ConsumerPerformance`` from Apache Kafka's ``kafka-tools`` jar.

The jars are the ones ``tools/fetch_kafka.sh`` caches for the test harness
(``$KAFKA_FAST_CACHE`` or ``~/.cache/kafka_fast``, ``kafka-<version>/libs``). Each run is one
JVM: its CPU is the child process's user+system time, JVM start-up and JIT included (what the
client costs a machine); its rate is the one the tool reports, which leaves JVM start-up and,
for the consumer, the group join out (``fetch.nMsg.sec``). ProducerPerformance sends values of
the payload's size without keys; ConsumerPerformance reads through a consumer group.

A broker is run with the newest cached client whose ApiVersions request it can read: Apache
Kafka 4.4's client sends ApiVersions v5 (cluster and node id), which a broker advertising up to
v4 must answer with UNSUPPORTED_VERSION; Tansu 0.6.0 closes the connection instead, so the
4.4 tools never reach a broker by its node id there (the consumer never joins its group) and
run with the newest client that speaks v4 (4.3) instead.
"""

from __future__ import annotations

import json
import os
import re
import resource
import shutil
import socket
import subprocess
import uuid
import zipfile
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


def _cache() -> Path:
    return Path(os.environ.get("KAFKA_FAST_CACHE") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "kafka_fast"))


#: the oldest release whose tools take the option names used here (``--num-records``,
#: ``--command-property``: Apache Kafka 4.2)
OLDEST_TOOLS = (4, 2)


def _release(libs: Path) -> tuple[int, ...]:
    return tuple(int(x) for x in re.findall(r"\d+", libs.parent.name))


def _all_libs() -> list[Path]:
    """Every complete jar directory fetched by tools/fetch_kafka.sh whose tools take this
    module's options, oldest release first."""
    found = sorted((p.parent for p in _cache().glob("kafka-*/libs/.complete")), key=_release)
    return [libs for libs in found if _release(libs)[:2] >= OLDEST_TOOLS]


def client_api_versions_max(libs: Path) -> int | None:
    """The newest ApiVersions request version the client in ``libs`` sends (from its
    kafka-clients jar's message schema), or None when it cannot be read."""
    for jar in sorted(libs.glob("kafka-clients-*.jar")):
        try:
            with zipfile.ZipFile(jar) as zf:
                text = zf.read("common/message/ApiVersionsRequest.json").decode("utf-8")
        except (OSError, KeyError, zipfile.BadZipFile):
            continue
        body = "\n".join(line for line in text.splitlines()
                         if not line.lstrip().startswith("//"))
        try:
            versions = str(json.loads(body)["validVersions"])
        except (ValueError, KeyError):
            continue
        return int(versions.split("-")[-1])
    return None


def kafka_libs(api_versions_max: int | None = None) -> Path | None:
    """The newest complete jar directory fetched by tools/fetch_kafka.sh (with
    ``api_versions_max``: the newest whose client sends no newer ApiVersions request), or
    None."""
    found = _all_libs()
    if api_versions_max is not None:
        found = [libs for libs in found
                 if (client_api_versions_max(libs) or 0) <= api_versions_max]
    return found[-1] if found else None


def broker_api_versions_max(bootstrap: str, timeout: float = 5.0) -> int | None:
    """The newest ApiVersions version the broker at ``bootstrap`` (its first address)
    advertises, asked with an ApiVersions v0 request; None when it does not answer."""
    host, _, port = bootstrap.split(",")[0].strip().rpartition(":")
    body = (18).to_bytes(2, "big") + (0).to_bytes(2, "big") + (7).to_bytes(4, "big")
    body += (5).to_bytes(2, "big") + b"bench"
    try:
        with socket.create_connection((host.strip("[]"), int(port)), timeout=timeout) as s:
            s.sendall(len(body).to_bytes(4, "big") + body)
            size = int.from_bytes(_read(s, 4), "big")
            if not 10 <= size <= 1 << 20:
                return None
            reply = _read(s, size)
    except (OSError, ValueError):
        return None
    # correlation id, error code, then [api key, min version, max version] int16s
    if int.from_bytes(reply[0:4], "big") != 7 or int.from_bytes(reply[4:6], "big") != 0:
        return None
    count = int.from_bytes(reply[6:10], "big", signed=True)
    for i in range(max(0, min(count, (len(reply) - 10) // 6))):
        key, _low, high = (int.from_bytes(reply[10 + 6 * i + j:12 + 6 * i + j], "big")
                           for j in (0, 2, 4))
        if key == 18:
            return high
    return None


def _read(sock: socket.socket, n: int) -> bytes:
    out = b""
    while len(out) < n:
        chunk = sock.recv(n - len(out))
        if not chunk:
            raise OSError("connection closed")
        out += chunk
    return out


def libs_for(bootstrap: str) -> Path | None:
    """The jars to run against ``bootstrap``: the newest client the broker's ApiVersions
    accepts (every client when the broker does not answer the probe)."""
    return kafka_libs(broker_api_versions_max(bootstrap))


def missing() -> str | None:
    """What to install for the Java anchors, or None when they can run."""
    if java_binary() is None:
        return "Java 17+ (apt-get install openjdk-17-jre-headless)"
    if kafka_libs() is None:
        return "the Apache Kafka 4.2+ jars (tools/fetch_kafka.sh)"
    return None


def _run(tool: str, args: list[str], timeout: float, bootstrap: str) -> tuple[str, float]:
    """Run ``org.apache.kafka.tools.<tool>`` with the jars :func:`libs_for` picks for
    ``bootstrap``; (stdout, CPU seconds of the JVM)."""
    java, libs = java_binary(), libs_for(bootstrap)
    if java is None or libs is None:
        raise RuntimeError("the Java anchors need " + (
            missing() or "a cached Apache Kafka 4.2+ client whose ApiVersions request this "
                         "broker reads (tools/fetch_kafka.sh)"))
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
                     batch_size="1000000", compression_type=compression)], timeout_s,
        bootstrap)
    # a progress line every 5 s, then the summary: the last such line
    match = (re.findall(r"(\d+) records sent, ([\d.]+) records/sec", out) or [None])[-1]
    if match is None or int(match[0]) != len(p):
        raise RuntimeError(f"ProducerPerformance printed no summary: {out.strip()[-300:]}")
    return len(p) / float(match[1]), cpu, ""


#: the consumer tool's settings besides bootstrap, topic and group (docs/bench/settings.md)
CONSUMER_SETTINGS: dict[str, object] = {
    "auto.offset.reset": "earliest", "fetch.max.bytes": 52_428_800,
    "max.partition.fetch.bytes": 10_485_760, "max.poll.records": 10_000,
    "session.timeout.ms": 6_000, "heartbeat.interval.ms": 1_000}
#: the longest the consumer tool waits without a record before it gives up (its --timeout):
#: the group join on Tansu takes about half the session timeout
IDLE_TIMEOUT_S = 30.0


def consumer_performance(bootstrap: str, topic: str, p: Payload, timeout_s: float) -> Timing:
    """ConsumerPerformance reading ``len(p)`` records from the start, in a fresh group
    (``fetch.max.bytes`` and, through the tool's ``--fetch-size`` which overrides
    ``max.partition.fetch.bytes``, the per-partition size raised as for the Python cases; a
    6 s session timeout, under which Tansu completes a join in seconds rather than ~23 s).
    The tool gives up after ``min(timeout_s, IDLE_TIMEOUT_S)`` without a record; reading
    fewer than ``len(p)`` records raises."""
    idle_ms = int(min(timeout_s, IDLE_TIMEOUT_S) * 1000)
    out, cpu = _run("ConsumerPerformance", [
        "--topic", topic, "--num-records", str(len(p)), "--bootstrap-server", bootstrap,
        "--timeout", str(idle_ms), "--group", f"bench-{uuid.uuid4().hex[:10]}",
        "--fetch-size", str(CONSUMER_SETTINGS["max.partition.fetch.bytes"]),
        *[arg for key, value in CONSUMER_SETTINGS.items()
          for arg in ("--command-property", f"{key}={value}")]], timeout_s, bootstrap)
    lines = [line for line in out.splitlines() if line.strip()]
    if len(lines) < 2 or not lines[-2].startswith("start.time"):
        raise RuntimeError(f"ConsumerPerformance printed no summary: {out.strip()[-300:]}")
    row = dict(zip([h.strip() for h in lines[-2].split(",")],
                   [v.strip() for v in lines[-1].split(",")], strict=True))
    if int(row["data.consumed.in.nMsg"]) < len(p):
        raise RuntimeError(f"ConsumerPerformance read {row['data.consumed.in.nMsg']} of "
                           f"{len(p)} records (no record for {idle_ms} ms)")
    return len(p) / float(row["fetch.nMsg.sec"]), cpu, ""
