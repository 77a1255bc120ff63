"""Apache Kafka itself (KRaft) as a test peer: one node with every listener, or three brokers.

The jars come from ``tools/fetch_kafka.sh`` (Maven, ``tests/harness/kafka/pom.xml``) in a
cache outside the repository. Each node is one JVM (broker and controller combined) with
a small heap and a quiet log4j2 configuration; its storage is formatted with
``kafka.tools.StorageTool`` first. A node is ready when its PLAINTEXT listener answers
ApiVersions and Metadata lists every broker of the cluster.
"""

from __future__ import annotations

import base64
import os
import re
import shutil
import signal
import subprocess
import tempfile
import time
import uuid
import warnings
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from harness import jvm_start
from harness.brokers import Broker, ProcessBroker
from harness.certs import TlsFiles
from harness.ports import LOOPBACK, free_port
from harness.probe import api_versions
from harness.process import ManagedProcess

POM = Path(__file__).with_name("kafka") / "pom.xml"
START_TIMEOUT = 120.0
START_ATTEMPTS = 3
FORMAT_TIMEOUT = 60.0
HEAP = "-Xmx512m"
JVM_OPTIONS = [HEAP, "-Xms64m", "-XX:+UseSerialGC", "-Xss512k", "-Djava.awt.headless=true"]
#: In test sessions (this module loaded as a pytest plugin), which start and stop many nodes
#: under light load: the client compiler only (HotSpot's optimising compiler costs more CPU
#: than its faster code gives back there), and the classes from a trained class-data archive
#: (one node measured: 6.9 CPU s to start and 2.2 for 200k records at HotSpot's defaults,
#: 2.6 and 1.1 this way): ``jvm_start.QUICK_OPTIONS``. Benchmarks, which import this module
#: but are no pytest session, run the nodes at HotSpot's defaults.
_quick_start = False
_archives: dict[Path, Path | None] = {}

LOG4J2 = """\
Configuration:
  Appenders:
    Console:
      name: STDOUT
      PatternLayout:
        pattern: "[%d] %p %m (%c)%n"
  Loggers:
    Root:
      level: WARN
      AppenderRef:
        - ref: STDOUT
    Logger:
      - name: kafka.server.BrokerServer
        level: INFO
      - name: kafka.server.ControllerServer
        level: INFO
      - name: org.apache.kafka.common.utils.AppInfoParser
        level: ERROR
"""

# Kafka 3.x logs through reload4j (log4j 1.2), which does not read LOG4J2: the same levels.
LOG4J1 = """\
log4j.rootLogger=WARN, stdout
log4j.appender.stdout=org.apache.log4j.ConsoleAppender
log4j.appender.stdout.layout=org.apache.log4j.PatternLayout
log4j.appender.stdout.layout.ConversionPattern=[%d] %p %m (%c)%n
log4j.logger.kafka.server.BrokerServer=INFO
log4j.logger.kafka.server.ControllerServer=INFO
log4j.logger.org.apache.kafka.common.utils.AppInfoParser=ERROR
"""

# Settings shared by every node: small thread pools and buffers, fast group and
# liveness timings, no delays that only make sense in production.
COMMON_SETTINGS = {
    "num.network.threads": "2",
    "num.io.threads": "4",
    "background.threads": "2",
    "num.recovery.threads.per.data.dir": "1",
    "num.replica.fetchers": "1",
    "log.cleaner.threads": "1",
    "log.cleaner.dedupe.buffer.size": str(4 << 20),
    "socket.request.max.bytes": str(100 << 20),
    # Batches up to 2 MiB, as the tests' producers allow (Kafka's default is 1 MiB).
    "message.max.bytes": str(2 << 20),
    "group.initial.rebalance.delay.ms": "0",
    "group.min.session.timeout.ms": "1000",
    "group.consumer.min.session.timeout.ms": "3000",
    "group.consumer.session.timeout.ms": "10000",
    "group.consumer.min.heartbeat.interval.ms": "500",
    "group.consumer.heartbeat.interval.ms": "1000",
    "offsets.topic.num.partitions": "3",
    "transaction.state.log.num.partitions": "3",
    "broker.heartbeat.interval.ms": "500",
    "broker.session.timeout.ms": "4000",
    "replica.lag.time.max.ms": "10000",
    "unclean.leader.election.enable": "false",
    "auto.create.topics.enable": "true",
    # Tests write records with fixed historical timestamps (2020, 2023): with the default
    # seven-day retention the broker's periodic check would delete them (rolling even the
    # active segment) between a test's produce and its read-back.
    "log.retention.ms": "-1",
}

# SASL users (SCRAM-SHA-256 and -512, and PLAIN): admin is a super user, alice is
# allowed everything by ACLs, noaccess has no ACL at all.
USERS = {"admin": "admin-secret", "alice": "alice-secret", "noaccess": "noaccess-secret"}
SUPER_USERS = "User:admin;User:ANONYMOUS"


class KafkaUnavailable(RuntimeError):
    """Java or the Kafka jars are missing (the message says what to install)."""


def cache_dir() -> Path:
    """Where tools/fetch_kafka.sh keeps the jars (KAFKA_FAST_CACHE overrides)."""
    base = os.environ.get("KAFKA_FAST_CACHE") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "kafka_fast")
    return Path(base)


def _pom_property(name: str) -> str:
    """The text of the pom's ``<name>`` property."""
    match = re.search(rf"<{re.escape(name)}>([^<]+)</{re.escape(name)}>", POM.read_text())
    if match is None:
        raise RuntimeError(f"{POM} names no <{name}>")
    return match.group(1)


def pytest_configure(config: pytest.Config) -> None:
    """A test session starts its nodes quickly (``jvm_start.QUICK_OPTIONS``, the archive)."""
    global _quick_start
    _quick_start = True


def _start_options(java: str, libs: Path) -> list[str]:
    """The JVM options that make a node of ``libs`` start quickly in a test session."""
    if not _quick_start:
        return []
    if libs not in _archives:
        try:
            _archives[libs] = jvm_start.archive_for(
                java, libs, cache_dir() / "class-archives",
                lambda path: _train_archive(libs, path))
        except Exception as exc:  # a node starts without the archive, only slower
            warnings.warn(f"no class-data archive for {libs}: {exc}", stacklevel=1)
            _archives[libs] = None
    archive = _archives[libs]
    return [*jvm_start.QUICK_OPTIONS,
            *([f"-XX:SharedArchiveFile={archive}"] if archive else [])]


def _train_archive(libs: Path, path: Path) -> None:
    """Format, start and stop one throwaway node that writes its classes to ``path``."""
    with tempfile.TemporaryDirectory(prefix="kafka-class-archive-") as tmp:
        ports = {"PLAINTEXT": free_port(), "CONTROLLER": free_port()}
        voters = f"1@{LOOPBACK}:{ports['CONTROLLER']}"
        settings = _listener_settings(1, ports, voters, Path(tmp) / "data", {})
        settings.update({"offsets.topic.replication.factor": "1",
                         "transaction.state.log.replication.factor": "1",
                         "transaction.state.log.min.isr": "1"})
        node = KafkaNode(1, Path(tmp) / "node", ports, settings, libs,
                         (f"-XX:ArchiveClassesAtExit={path}",), quick_start=False)
        node.format(new_cluster_id())
        node.start()
        try:
            node.wait_ready()
        finally:
            node.signal(signal.SIGTERM)


def kafka_version() -> str:
    """The Apache Kafka version the pom resolves."""
    return _pom_property("kafka.version")


def tools_v4_version() -> str:
    """The release whose Java perf tools run against brokers advertising ApiVersions v4
    (kafka_fast/bench/java.py); tools/fetch_kafka.sh fetches it."""
    return _pom_property("kafka.tools.v4.version")


def matrix_versions() -> list[str]:
    """The Apache Kafka releases the broker-version matrix runs on (tests/compat), oldest
    first; tools/fetch_kafka.sh fetches each."""
    return [v.strip() for v in _pom_property("kafka.matrix.versions").split(",") if v.strip()]


def java_binary() -> str | None:
    """The ``java`` to run the broker with (JAVA_HOME first), or None."""
    home = os.environ.get("JAVA_HOME")
    if home and os.access(os.path.join(home, "bin", "java"), os.X_OK):
        return os.path.join(home, "bin", "java")
    return shutil.which("java")


#: The oldest Apache Kafka the share-group tests start: 4.4 finalizes share.version 2 in a
#: new cluster (share groups on, RENEW acknowledgements).
SHARE_KAFKA_MIN = "4.4.0"


def share_kafka_version() -> str:
    """The Apache Kafka version the share-group tests start: the pom's kafka.version, or
    ``SHARE_KAFKA_MIN`` while the pom names an older release."""
    version = kafka_version()
    key = [int(x) for x in re.findall(r"\d+", version)[:3]]
    return version if key >= [int(x) for x in SHARE_KAFKA_MIN.split(".")] else SHARE_KAFKA_MIN


def kafka_libs(version: str | None = None) -> Path:
    """The directory of broker jars of ``version`` (default: the pom's kafka.version);
    raises KafkaUnavailable saying what to do."""
    version = version or kafka_version()
    if java_binary() is None:
        raise KafkaUnavailable(
            "Apache Kafka tests need Java 17+: install a JDK (apt-get install "
            "openjdk-17-jre-headless) and Maven, then run tools/fetch_kafka.sh")
    libs = cache_dir() / f"kafka-{version}" / "libs"
    if not (libs / ".complete").exists():
        raise KafkaUnavailable(
            f"Apache Kafka {version} jars not in {libs}: run tools/fetch_kafka.sh "
            "(needs Maven and network access to Maven Central)")
    return libs


def new_cluster_id() -> str:
    """A random KRaft cluster id (a UUID in URL-safe base64)."""
    return base64.urlsafe_b64encode(uuid.uuid4().bytes).rstrip(b"=").decode()


def _properties(settings: dict[str, str]) -> str:
    return "".join(f"{k}={v}\n" for k, v in settings.items())


class KafkaNode:
    """One Kafka JVM (broker and controller) with its storage directory and ports.

    ``ports`` maps listener names (PLAINTEXT, CONTROLLER, SASL, SSL, CLIENT) to ports, fixed
    for the node's lifetime so a restarted node comes back at the same addresses;
    ``advertised`` maps a listener to the port it is advertised at when another (a proxy's);
    ``quick_start`` False starts it without the quick start's options even in a test session.
    """

    def __init__(self, node_id: int, workdir: Path, ports: dict[str, int],
                 settings: dict[str, str], libs: Path,
                 jvm_options: tuple[str, ...] = (),
                 advertised: dict[str, int] | None = None, quick_start: bool = True) -> None:
        self.node_id = node_id
        self.quick_start = quick_start
        self.advertised = dict(advertised or {})
        self.jvm_options = list(jvm_options)
        self.workdir = workdir
        self.ports = ports
        self.libs = libs
        self.config_path = workdir / "server.properties"
        self.log4j_path = workdir / "log4j2.yaml"
        self.log4j1_path = workdir / "log4j.properties"
        self.log_path = workdir / "kafka.log"
        self.process: ManagedProcess | None = None
        workdir.mkdir(parents=True, exist_ok=True)
        self.config_path.write_text(_properties(settings))
        self.log4j_path.write_text(LOG4J2)
        self.log4j1_path.write_text(LOG4J1)

    @property
    def port(self) -> int:
        return self.ports["PLAINTEXT"]

    @property
    def pid(self) -> int:
        if self.process is None:
            raise RuntimeError(f"kafka node {self.node_id} is not running")
        return self.process.pid

    def _java(self, main: str, *args: str) -> list[str]:
        java = java_binary()
        if java is None:
            raise KafkaUnavailable("java not found")
        quick = _start_options(java, self.libs) if self.quick_start else []
        return [java, *JVM_OPTIONS, *quick, *self.jvm_options,
                f"-Dlog4j2.configurationFile={self.log4j_path}",
                f"-Dlog4j.configuration=file:{self.log4j1_path}", "-cp", f"{self.libs}/*", main, *args]

    def format(self, cluster_id: str) -> None:
        """Format the node's KRaft storage (bounded by FORMAT_TIMEOUT)."""
        # "--cluster-id=ID": a base64 id may begin with "-", which would read as an option.
        argv = self._java("kafka.tools.StorageTool", "format", f"--cluster-id={cluster_id}",
                          f"--config={self.config_path}")
        done = subprocess.run(argv, capture_output=True, text=True, timeout=FORMAT_TIMEOUT,
                              check=False)
        if done.returncode != 0:
            raise RuntimeError(f"kafka storage format of node {self.node_id} failed "
                               f"({done.returncode}):\n{done.stdout}\n{done.stderr}")

    def start(self) -> None:
        """Start the JVM (no wait; see ``wait_ready``)."""
        if self.alive():
            raise RuntimeError(f"kafka node {self.node_id} is already running")
        with open(self.log_path, "a") as log:
            log.write(f"=== start node {self.node_id} at {time.strftime('%H:%M:%S')} ===\n")
        self.process = ManagedProcess(self._java("kafka.Kafka", str(self.config_path)),
                                      self.log_path)

    def wait_ready(self, timeout: float = START_TIMEOUT) -> None:
        """Wait until the PLAINTEXT listener answers ApiVersions; raise with the log if not."""
        deadline = time.monotonic() + timeout
        last: object = None
        while time.monotonic() < deadline:
            if not self.alive():
                raise RuntimeError(f"kafka node {self.node_id} exited during start-up\n"
                                   f"{self.log_tail()}")
            try:
                api_versions(LOOPBACK, self.port, timeout=2.0)
                return
            except (OSError, RuntimeError) as exc:
                last = exc
                time.sleep(0.1)
        raise TimeoutError(f"kafka node {self.node_id} gave no ApiVersions answer on "
                           f"{self.port} within {timeout:.0f}s ({last})\n{self.log_tail()}")

    def alive(self) -> bool:
        return self.process is not None and self.process.alive()

    def signal(self, sig: int = signal.SIGTERM, timeout: float = 30.0) -> int | None:
        """Send ``sig`` (SIGTERM: controlled shutdown; SIGKILL: crash) and wait for the exit.

        Returns the exit code; SIGKILLs after ``timeout`` if SIGTERM was not enough.
        """
        if self.process is None:
            return None
        proc, self.process = self.process, None
        if proc.alive():
            proc.popen.send_signal(sig)
            try:
                proc.popen.wait(timeout)
            except subprocess.TimeoutExpired:
                pass
        return proc.stop(grace=5.0)

    def log_tail(self, limit: int = 6000) -> str:
        try:
            data = self.log_path.read_bytes()
        except OSError as exc:
            return f"<log {self.log_path} unreadable: {exc}>"
        return data[-limit:].decode("utf-8", "replace")


def _listener_settings(node_id: int, ports: dict[str, int], voters: str, log_dir: Path,
                       security: dict[str, str],
                       advertised: dict[str, int] | None = None) -> dict[str, str]:
    """Server settings of one node; ``advertised`` maps a listener to the port it is
    advertised at when that is not its own (the CLIENT listener behind a proxy)."""
    names = list(ports)
    shown = {**ports, **(advertised or {})}
    protocols = {"PLAINTEXT": "PLAINTEXT", "CONTROLLER": "PLAINTEXT",
                 "SASL": "SASL_PLAINTEXT", "SSL": "SSL", "CLIENT": "PLAINTEXT"}
    settings = {
        "process.roles": "broker,controller",
        "node.id": str(node_id),
        "controller.quorum.voters": voters,
        "listeners": ",".join(f"{n}://{LOOPBACK}:{ports[n]}" for n in names),
        "advertised.listeners": ",".join(
            f"{n}://{LOOPBACK}:{shown[n]}" for n in names if n != "CONTROLLER"),
        "listener.security.protocol.map": ",".join(f"{n}:{protocols[n]}" for n in names),
        "controller.listener.names": "CONTROLLER",
        "inter.broker.listener.name": "PLAINTEXT",
        "log.dirs": str(log_dir),
    }
    settings.update(COMMON_SETTINGS)
    settings.update(security)
    return settings


def _security_settings(tls_pem: Path | None) -> dict[str, str]:
    """SASL (SCRAM-SHA-256/512, PLAIN, unsecured OAUTHBEARER), SSL and StandardAuthorizer."""
    plain_users = " ".join(f'user_{u}="{p}"' for u, p in USERS.items())
    settings = {
        "sasl.enabled.mechanisms": "SCRAM-SHA-256,SCRAM-SHA-512,PLAIN,OAUTHBEARER",
        "listener.name.sasl.scram-sha-256.sasl.jaas.config":
            "org.apache.kafka.common.security.scram.ScramLoginModule required;",
        "listener.name.sasl.scram-sha-512.sasl.jaas.config":
            "org.apache.kafka.common.security.scram.ScramLoginModule required;",
        "listener.name.sasl.plain.sasl.jaas.config":
            f"org.apache.kafka.common.security.plain.PlainLoginModule required {plain_users};",
        "listener.name.sasl.oauthbearer.sasl.jaas.config":
            "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required "
            'unsecuredLoginStringClaim_sub="admin";',
        "authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
        "super.users": SUPER_USERS,
        "allow.everyone.if.no.acl.found": "false",
    }
    if tls_pem is not None:
        settings.update({
            "listener.name.ssl.ssl.keystore.type": "PEM",
            "listener.name.ssl.ssl.keystore.location": str(tls_pem),
            "listener.name.ssl.ssl.client.auth": "none",
        })
    return settings


class ApacheKafka(ProcessBroker):
    """A running Apache Kafka cluster started by the harness (``kind`` "kafka").

    ``.bootstrap`` is every node's PLAINTEXT address; ``.nodes`` the KafkaNode objects
    by node id; ``.version`` the Kafka version. Single-node clusters started with
    ``secure=True`` also serve SASL_PLAINTEXT (``.sasl_bootstrap``) and SSL
    (``.ssl_bootstrap``, ``.ca_path``) with StandardAuthorizer; see ``as_user``.
    """

    kind = "kafka"

    def __init__(self, nodes: dict[int, KafkaNode], version: str,
                 ca_path: str | None = None, wrong_ca_path: str | None = None) -> None:
        self.nodes = nodes
        self.version = version
        bootstrap = ",".join(f"{LOOPBACK}:{n.port}" for n in nodes.values())
        super().__init__(bootstrap, [])
        self.tls_ca_path = ca_path
        self.wrong_ca_path = wrong_ca_path

    # -- ProcessBroker ---------------------------------------------------------------------
    @property
    def pid(self) -> int:
        return next(iter(self.nodes.values())).pid

    @property
    def port(self) -> int:
        return next(iter(self.nodes.values())).port

    @property
    def log_path(self) -> Path:
        return next(iter(self.nodes.values())).log_path

    def alive(self) -> bool:
        return all(n.alive() for n in self.nodes.values())

    def stop(self, sig: int = signal.SIGTERM) -> None:
        """Stop every node in parallel: SIGTERM (a controlled shutdown, SIGKILL after a grace
        period) or, e.g., SIGKILL."""
        with ThreadPoolExecutor(len(self.nodes)) as pool:
            list(pool.map(lambda n: n.signal(sig, timeout=15.0), self.nodes.values()))

    def discard(self) -> None:
        """Kill every node at once: for the end of a session, whose data nobody reads again
        (a controlled shutdown of three nodes takes up to half a minute)."""
        self.stop(signal.SIGKILL)

    def log_tail(self) -> str:
        return "\n".join(f"--- node {i}: {n.log_path} ---\n{n.log_tail()}"
                         for i, n in self.nodes.items())

    # -- listeners ------------------------------------------------------------------------
    def _addresses(self, listener: str) -> str:
        return ",".join(f"{LOOPBACK}:{n.ports[listener]}" for n in self.nodes.values()
                        if listener in n.ports)

    @property
    def client_bootstrap(self) -> str:
        """The CLIENT listeners' advertised addresses (their proxies), '' without them."""
        return ",".join(f"{LOOPBACK}:{n.advertised['CLIENT']}" for n in self.nodes.values()
                        if "CLIENT" in n.advertised)

    def through_proxies(self) -> Broker:
        """This cluster reached only through the CLIENT listeners' proxies."""
        if not self.client_bootstrap:
            raise RuntimeError("this cluster has no CLIENT listener (start it with client_ports)")
        return ApacheKafkaView(self, self.client_bootstrap)

    @property
    def sasl_bootstrap(self) -> str:
        return self._addresses("SASL")

    @property
    def ssl_bootstrap(self) -> str:
        return self._addresses("SSL")

    def as_user(self, user: str, mechanism: str = "SCRAM-SHA-256",
                password: str | None = None) -> Broker:
        """This cluster seen through its SASL_PLAINTEXT listener as ``user``.

        ``password`` defaults to the user's real one (pass another to fail the login).
        """
        if not self.sasl_bootstrap:
            raise RuntimeError("this cluster has no SASL listener (start it with secure=True)")
        return ApacheKafkaView(
            self, self.sasl_bootstrap, security_protocol="SASL_PLAINTEXT",
            sasl_mechanism=mechanism, sasl_username=user,
            sasl_password=USERS.get(user, "") if password is None else password)

    def over_ssl(self, ca_path: str | None = None) -> Broker:
        """This cluster through its SSL listener, verified with ``ca_path`` (default: right CA)."""
        if not self.ssl_bootstrap:
            raise RuntimeError("this cluster has no SSL listener (start it with secure=True)")
        return ApacheKafkaView(self, self.ssl_bootstrap, security_protocol="SSL",
                               ca_path=ca_path or self.tls_ca_path)

    # -- node control ---------------------------------------------------------------------
    def stop_node(self, node_id: int, sig: int = signal.SIGTERM) -> int | None:
        """Stop one node with ``sig`` (SIGTERM: controlled shutdown, SIGKILL: crash)."""
        return self.nodes[node_id].signal(sig)

    def start_node(self, node_id: int, timeout: float = START_TIMEOUT) -> None:
        """Start a stopped node again (same ports and storage) and wait until it answers."""
        node = self.nodes[node_id]
        node.start()
        node.wait_ready(timeout)

    def wait_for_brokers(self, count: int | None = None, timeout: float = START_TIMEOUT) -> None:
        """Wait until Metadata from every running node lists ``count`` brokers (default all)."""
        from confluent_kafka.admin import AdminClient

        want = len(self.nodes) if count is None else count
        deadline = time.monotonic() + timeout
        last: object = None
        running = [n for n in self.nodes.values() if n.alive()]
        for node in running:
            admin = AdminClient({"bootstrap.servers": f"{LOOPBACK}:{node.port}"})
            while True:
                try:
                    seen = len(admin.list_topics(timeout=2).brokers)
                    if seen >= want:
                        break
                    last = f"node {node.node_id} sees {seen} brokers"
                except Exception as exc:  # KafkaException while the node starts
                    last = exc
                if time.monotonic() > deadline:
                    raise TimeoutError(f"cluster not complete within {timeout:.0f}s: {last}\n"
                                       f"{self.log_tail()}")
                time.sleep(0.2)

    def wait_in_sync(self, topic: str, replicas: int | None = None,
                     timeout: float = START_TIMEOUT) -> dict[int, list[int]]:
        """Wait until every partition of ``topic`` has ``replicas`` in-sync replicas
        (default: all its replicas) and a leader; returns ``{partition: isr}``."""
        from confluent_kafka.admin import AdminClient

        admin = AdminClient({"bootstrap.servers": self.bootstrap})
        deadline = time.monotonic() + timeout
        last: object = None
        while time.monotonic() < deadline:
            try:
                md = admin.list_topics(topic, timeout=2).topics[topic]
                if md.error is None and md.partitions:
                    isr = {p.id: sorted(p.isrs) for p in md.partitions.values()}
                    want = {p.id: len(p.replicas) if replicas is None else replicas
                            for p in md.partitions.values()}
                    last = isr
                    if all(p.leader >= 0 for p in md.partitions.values()) and all(
                            len(isr[p]) >= want[p] for p in isr):
                        return isr
                else:
                    last = md.error
            except Exception as exc:  # KafkaException while a broker is down
                last = exc
            time.sleep(0.2)
        raise TimeoutError(f"{topic}: replicas not in sync within {timeout:.0f}s: {last}")

    def create_topic(self, name: str, partitions: int = 1,
                     replication_factor: int | None = None) -> None:
        """CreateTopics; ``replication_factor`` None uses the cluster default."""
        super().create_topic(name, partitions,
                             -1 if replication_factor is None else replication_factor)


class ApacheKafkaView(Broker):
    """An ApacheKafka cluster reached through another listener (SASL, SSL)."""

    kind = "kafka"

    def __init__(self, cluster: ApacheKafka, bootstrap: str, **kwargs) -> None:
        super().__init__(bootstrap, **kwargs)
        self.cluster = cluster

    def log_tail(self) -> str:
        return self.cluster.log_tail()


def start_apache_kafka(workdir: Path, brokers: int = 1, secure: bool = False,
                       tls_pem: Path | None = None, ca_path: str | None = None,
                       wrong_ca_path: str | None = None,
                       settings: dict[str, str] | None = None,
                       node_settings: dict[int, dict[str, str]] | None = None,
                       timeout: float = START_TIMEOUT,
                       jvm_options: tuple[str, ...] = (),
                       version: str | None = None,
                       client_ports: dict[int, int] | None = None) -> ApacheKafka:
    """Format and start ``brokers`` combined broker/controller nodes and wait until ready.

    ``secure`` adds the SASL listener and StandardAuthorizer (one node only), and the
    SSL listener when ``tls_pem`` (key and certificate chain in one PEM file) is given.
    With several nodes, topics default to replication factor 3 and min.insync.replicas 2
    (``settings`` overrides any server setting; ``node_settings`` maps a node id, from 1,
    to settings of that node alone, e.g. its ``broker.rack``; ``jvm_options`` are added to the
    java command, e.g. ``-D`` system properties; ``version`` picks the fetched Kafka release,
    default the pom's kafka.version; ``client_ports`` maps each node id to a port, e.g. a
    proxy's, at which a CLIENT listener of that node is advertised, so clients bootstrapped
    there reach every broker through it while the brokers talk on PLAINTEXT). A port taken
    by someone else between choosing and binding it is retried with new ports. Raises
    KafkaUnavailable when Java or the jars are missing.
    """
    for attempt in range(1, START_ATTEMPTS + 1):
        try:
            return _start_once(workdir / f"attempt{attempt}", brokers, secure, tls_pem,
                               ca_path, wrong_ca_path, settings or {}, node_settings or {},
                               timeout, jvm_options, version or kafka_version(),
                               client_ports or {})
        except _PortTaken:
            if attempt == START_ATTEMPTS:
                raise
    raise AssertionError("unreachable")


def start_single_node(workdir: Path, ports: dict[str, int], settings: dict[str, str],
                      jvm_options: tuple[str, ...] = ()) -> ApacheKafka:
    """Format and start one node with exactly ``settings`` (listeners and all) and wait
    until it answers; for tests that lay out their own listeners."""
    node = KafkaNode(1, workdir / "node1", ports, settings, kafka_libs(kafka_version()),
                     jvm_options)
    cluster = ApacheKafka({1: node}, kafka_version())
    node.format(new_cluster_id())
    node.start()
    try:
        node.wait_ready()
        cluster.wait_for_brokers()
    except BaseException:
        cluster.discard()
        raise
    return cluster


class _PortTaken(RuntimeError):
    """A node could not bind one of its ports."""


def _start_once(workdir: Path, brokers: int, secure: bool, tls_pem: Path | None,
                ca_path: str | None, wrong_ca_path: str | None, settings: dict[str, str],
                per_node: dict[int, dict[str, str]], timeout: float,
                jvm_options: tuple[str, ...], version: str,
                client_ports: dict[int, int]) -> ApacheKafka:
    libs = kafka_libs(version)
    ids = list(range(1, brokers + 1))
    names = ["PLAINTEXT", "CONTROLLER"]
    if secure:
        names.append("SASL")
        if tls_pem is not None:
            names.append("SSL")
    if client_ports:
        names.append("CLIENT")
    ports = {i: {name: free_port() for name in names} for i in ids}
    voters = ",".join(f"{i}@{LOOPBACK}:{ports[i]['CONTROLLER']}" for i in ids)
    replication = str(min(brokers, 3))
    min_isr = "2" if brokers >= 3 else "1"
    topic_defaults = {
        "default.replication.factor": replication,
        "min.insync.replicas": min_isr,
        "offsets.topic.replication.factor": replication,
        "transaction.state.log.replication.factor": replication,
        "transaction.state.log.min.isr": min_isr,
        "share.coordinator.state.topic.replication.factor": replication,
        "share.coordinator.state.topic.min.isr": min_isr,
    }
    security = _security_settings(tls_pem) if secure else {}
    nodes = {}
    for i in ids:
        advertised = {"CLIENT": client_ports[i]} if client_ports else {}
        node_settings = _listener_settings(i, ports[i], voters, workdir / f"node{i}" / "data",
                                           security, advertised)
        node_settings.update(topic_defaults)
        node_settings.update(settings)
        node_settings.update(per_node.get(i, {}))
        nodes[i] = KafkaNode(i, workdir / f"node{i}", ports[i], node_settings, libs,
                             jvm_options, advertised)
    cluster = ApacheKafka(nodes, version, ca_path, wrong_ca_path)
    cluster_id = new_cluster_id()
    with ThreadPoolExecutor(len(ids)) as pool:
        list(pool.map(lambda n: n.format(cluster_id), nodes.values()))
    try:
        for node in nodes.values():
            node.start()
        deadline = time.monotonic() + timeout
        for node in nodes.values():
            node.wait_ready(max(1.0, deadline - time.monotonic()))
        cluster.wait_for_brokers(timeout=max(1.0, deadline - time.monotonic()))
    except BaseException as exc:
        cluster.stop()
        if any("Address already in use" in n.log_tail(200_000) for n in nodes.values()):
            raise _PortTaken(str(exc)) from exc
        raise
    return cluster


# -- set-up of users and ACLs ---------------------------------------------------------------

def create_users(cluster: Broker, users: dict[str, str] = USERS, iterations: int = 4096) -> None:
    """Create SCRAM-SHA-256 and -512 credentials for ``users`` with kafka_fast's AdminClient."""
    from kafka_fast.admin import (
        AdminClient,
        ScramCredentialInfo,
        ScramMechanism,
        UserScramCredentialUpsertion,
    )

    # The broker accepts one alteration per user and request (DUPLICATE_RESOURCE otherwise).
    with AdminClient(cluster.client_config()) as admin:
        for mechanism in (ScramMechanism.SCRAM_SHA_256, ScramMechanism.SCRAM_SHA_512):
            alterations = [
                UserScramCredentialUpsertion(user, ScramCredentialInfo(mechanism, iterations),
                                             password.encode())
                for user, password in users.items()]
            for fut in admin.alter_user_scram_credentials(alterations).values():
                fut.result(30)


def allow_everything(cluster: Broker, user: str) -> None:
    """ACLs (through confluent-kafka) allowing ``user`` every operation on every topic,
    group, transactional id and the cluster."""
    from confluent_kafka.admin import (
        AclBinding,
        AclOperation,
        AclPermissionType,
        AdminClient,
        ResourcePatternType,
        ResourceType,
    )

    resources = [(ResourceType.TOPIC, "*"), (ResourceType.GROUP, "*"),
                 (ResourceType.TRANSACTIONAL_ID, "*"), (ResourceType.BROKER, "kafka-cluster")]
    bindings = [AclBinding(rtype, name, ResourcePatternType.LITERAL, f"User:{user}", "*",
                           AclOperation.ALL, AclPermissionType.ALLOW)
                for rtype, name in resources]
    admin = AdminClient(cluster.client_config())
    for fut in admin.create_acls(bindings, request_timeout=30).values():
        fut.result(30)


def wait_for_login(view: Broker, timeout: float = 30.0) -> None:
    """Wait until ``view``'s user can log in (SCRAM credentials reach the broker's cache
    through the metadata log, a moment after AlterUserScramCredentials answered)."""
    from confluent_kafka.admin import AdminClient

    deadline = time.monotonic() + timeout
    while True:
        try:
            AdminClient(view.client_config()).list_topics(timeout=3)
            return
        except Exception as exc:  # KafkaException: authentication failed so far
            if time.monotonic() > deadline:
                raise TimeoutError(f"{view.sasl_username} cannot log in: {exc}") from exc
            time.sleep(0.2)


# -- fixtures -------------------------------------------------------------------------------

def apache_kafka_missing(version: str | None = None) -> str | None:
    """Why the real broker (of ``version``, default the pom's) cannot start here (None when
    it can)."""
    try:
        kafka_libs(version)
    except KafkaUnavailable as exc:
        return str(exc)
    return None


def require_apache_kafka(version: str | None = None) -> None:
    """Skip the test (fail it under CI=true) when Java or the Kafka jars are missing."""
    reason = apache_kafka_missing(version)
    if reason is None:
        return
    if os.environ.get("CI", "").lower() in ("1", "true", "yes"):
        pytest.fail(reason)
    pytest.skip(reason)


def _keystore_pem(tls: TlsFiles, directory: Path) -> Path:
    """The server key and certificate in one PEM file (Kafka's PEM keystore)."""
    path = directory / "server-keystore.pem"
    path.write_text(tls.server_key.read_text() + tls.server_cert.read_text())
    path.chmod(0o600)
    return path


@pytest.fixture(scope="session")
def apache_kafka(tmp_path_factory, tls_files) -> ApacheKafka:
    """One Apache Kafka node for the session: PLAINTEXT (``.bootstrap``), SASL_PLAINTEXT
    with SCRAM-SHA-256/512, PLAIN and unsecured OAUTHBEARER (``.as_user(...)``), SSL
    (``.over_ssl()``), StandardAuthorizer: admin and ANONYMOUS are super users, alice is
    allowed everything by ACLs, noaccess nothing."""
    require_apache_kafka()
    workdir = tmp_path_factory.mktemp("apache-kafka")
    cluster = start_apache_kafka(
        workdir, brokers=1, secure=True, tls_pem=_keystore_pem(tls_files, workdir),
        ca_path=str(tls_files.ca), wrong_ca_path=str(tls_files.wrong_ca))
    try:
        create_users(cluster)
        allow_everything(cluster, "alice")
        wait_for_login(cluster.as_user("alice", "SCRAM-SHA-512"))
    except BaseException:
        cluster.stop()
        raise
    yield cluster
    cluster.discard()


@pytest.fixture(scope="session")
def apache_cluster_session(tmp_path_factory) -> ApacheKafka:
    """Three Apache Kafka nodes (broker and controller each) for the session."""
    require_apache_kafka()
    cluster = start_apache_kafka(tmp_path_factory.mktemp("apache-cluster"), brokers=3)
    yield cluster
    cluster.discard()


def _restart_stopped(cluster: ApacheKafka) -> None:
    stopped = [i for i, n in cluster.nodes.items() if not n.alive()]
    for node_id in stopped:
        cluster.start_node(node_id)
    if stopped:
        cluster.wait_for_brokers()


@pytest.fixture
def apache_cluster(apache_cluster_session) -> ApacheKafka:
    """The session's 3-broker cluster (replication factor 3, min.insync.replicas 2);
    nodes a test stopped are started again after it."""
    cluster = apache_cluster_session
    yield cluster
    _restart_stopped(cluster)


#: Racks of the rack-aware cluster's nodes (node id -> broker.rack).
RACKS = {1: "rack-a", 2: "rack-b", 3: "rack-c"}
RACK_AWARE_SELECTOR = "org.apache.kafka.common.replica.RackAwareReplicaSelector"


@pytest.fixture(scope="session")
def apache_rack_cluster_session(tmp_path_factory) -> ApacheKafka:
    """Three Apache Kafka nodes in racks ``RACKS`` whose leaders name a replica in the
    consumer's rack as preferred read replica (KIP-392 follower fetching)."""
    require_apache_kafka()
    cluster = start_apache_kafka(
        tmp_path_factory.mktemp("apache-rack-cluster"), brokers=3,
        settings={"replica.selector.class": RACK_AWARE_SELECTOR},
        node_settings={i: {"broker.rack": rack} for i, rack in RACKS.items()})
    yield cluster
    cluster.discard()


@pytest.fixture
def apache_rack_cluster(apache_rack_cluster_session) -> ApacheKafka:
    """The session's rack-aware 3-broker cluster; nodes a test stopped are started again
    after it."""
    cluster = apache_rack_cluster_session
    yield cluster
    _restart_stopped(cluster)


#: Milliseconds a share group's consumer holds a record it acquired (the broker's
#: group.share.record.lock.duration.ms in the share-group fixture).
SHARE_LOCK_MS = 4000

#: Share groups (KIP-932): on by default in a Kafka 4.4 cluster (share.version 2, finalized
#: when the storage is formatted), with timings shortened to the brokers' minimums where
#: tests wait for them.
SHARE_SETTINGS = {
    "share.coordinator.state.topic.num.partitions": "3",
    "group.share.min.heartbeat.interval.ms": "500",
    "group.share.heartbeat.interval.ms": "500",
    "group.share.min.session.timeout.ms": "3000",
    "group.share.session.timeout.ms": "10000",
    "group.share.min.record.lock.duration.ms": "1000",
    "group.share.record.lock.duration.ms": str(SHARE_LOCK_MS),
}


@pytest.fixture(scope="session")
def apache_share_kafka(tmp_path_factory) -> ApacheKafka:
    """One Apache Kafka node of ``share_kafka_version()`` with share groups enabled
    (``SHARE_SETTINGS``: acquisition locks of ``SHARE_LOCK_MS``)."""
    version = share_kafka_version()
    require_apache_kafka(version)
    cluster = start_apache_kafka(tmp_path_factory.mktemp("apache-share-kafka"),
                                 settings=SHARE_SETTINGS, version=version)
    yield cluster
    cluster.discard()
