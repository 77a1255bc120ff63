"""What every broker fixture yields: a bootstrap string, a kind and client settings."""

from __future__ import annotations

import os
import time

from harness.process import ManagedProcess

#: Seconds CreateTopics is tried again for while a broker times it out.
CREATE_TIMEOUT = 90.0
#: confluent-kafka error codes of a CreateTopics worth trying again.
_CREATE_RETRIABLE_NAMES = ("_TIMED_OUT", "REQUEST_TIMED_OUT", "NOT_CONTROLLER", "_TRANSPORT")


class Broker:
    """A reachable Kafka cluster.

    ``kind`` is "tansu", "mock" or "external". ``client_config()`` gives the
    librdkafka-style settings (bootstrap, security, SASL, CA) that confluent-kafka
    and kafka_fast both accept.
    """

    kind = "broker"

    def __init__(
        self,
        bootstrap: str,
        security_protocol: str = "PLAINTEXT",
        sasl_mechanism: str | None = None,
        sasl_username: str | None = None,
        sasl_password: str | None = None,
        ca_path: str | None = None,
    ) -> None:
        self.bootstrap = bootstrap
        self.security_protocol = security_protocol
        self.sasl_mechanism = sasl_mechanism
        self.sasl_username = sasl_username
        self.sasl_password = sasl_password
        self.ca_path = ca_path

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.kind} {self.bootstrap}>"

    def client_config(self, extra: dict[str, object] | None = None) -> dict[str, object]:
        """Client settings for this cluster, updated with ``extra``."""
        conf: dict[str, object] = {"bootstrap.servers": self.bootstrap}
        if self.security_protocol != "PLAINTEXT":
            conf["security.protocol"] = self.security_protocol
        if self.sasl_mechanism:
            conf["sasl.mechanism"] = self.sasl_mechanism
        if self.sasl_username is not None:
            conf["sasl.username"] = self.sasl_username
        if self.sasl_password is not None:
            conf["sasl.password"] = self.sasl_password
        if self.ca_path:
            conf["ssl.ca.location"] = self.ca_path
        conf.update(extra or {})
        return conf

    def create_topic(self, name: str, partitions: int = 1, replication_factor: int = 1) -> None:
        """Create a topic through the admin API (CreateTopics) with confluent-kafka."""
        from confluent_kafka import KafkaError, KafkaException
        from confluent_kafka.admin import AdminClient, NewTopic

        admin = AdminClient(self.client_config())
        # Kafka brokers delete records whose timestamps are older than the retention time;
        # tests write fixed historical timestamps, so their topics keep records for ever.
        config = {"retention.ms": "-1"} if self.kind in ("kafka", "external") else {}
        # A broker just (re)started on a loaded machine may time out the first requests while
        # its controller catches up: those are tried again for up to CREATE_TIMEOUT seconds
        # (an attempt that timed out may have created the topic).
        retriable = {getattr(KafkaError, n) for n in _CREATE_RETRIABLE_NAMES}
        deadline = time.monotonic() + CREATE_TIMEOUT
        retried = False
        while True:
            futures = admin.create_topics(
                [NewTopic(name, num_partitions=partitions,
                          replication_factor=replication_factor, config=config)],
                operation_timeout=10,
                request_timeout=15,
            )
            try:
                futures[name].result(timeout=20)
                return
            except KafkaException as exc:
                code = exc.args[0].code()
                if retried and code == KafkaError.TOPIC_ALREADY_EXISTS:
                    return
                if code not in retriable or time.monotonic() > deadline:
                    raise
            retried = True
            time.sleep(0.5)

    def log_tail(self) -> str:
        """Recent log output of the processes behind this broker ('' when none)."""
        return ""


class ProcessBroker(Broker):
    """A broker served by processes the harness started and stops."""

    def __init__(self, bootstrap: str, processes: list[ManagedProcess], **kwargs) -> None:
        super().__init__(bootstrap, **kwargs)
        self.processes = processes

    @property
    def pid(self) -> int:
        """PID of the broker process itself."""
        return self.processes[0].pid

    @property
    def port(self) -> int:
        return int(self.bootstrap.rsplit(":", 1)[1])

    @property
    def log_path(self):
        return self.processes[0].log_path

    def alive(self) -> bool:
        return all(p.alive() for p in self.processes)

    def stop(self) -> None:
        for proc in reversed(self.processes):
            proc.stop()

    def log_tail(self) -> str:
        return "\n".join(f"--- {p.log_path} ---\n{p.log_tail()}" for p in self.processes)


class ExternalCluster(Broker):
    """A cluster given by KAFKA_BOOTSTRAP (and optional KAFKA_SASL_*, KAFKA_SECURITY_PROTOCOL)."""

    kind = "external"


def external_from_env(environ: os._Environ | dict | None = None) -> ExternalCluster | None:
    """The external cluster described by the environment, or None when KAFKA_BOOTSTRAP is unset.

    KAFKA_SECURITY_PROTOCOL defaults to SASL_PLAINTEXT when KAFKA_SASL_MECHANISM is
    set and to PLAINTEXT otherwise; KAFKA_SSL_CA_LOCATION names a CA file for SSL.
    """
    env = os.environ if environ is None else environ
    bootstrap = env.get("KAFKA_BOOTSTRAP", "").strip()
    if not bootstrap:
        return None
    mechanism = env.get("KAFKA_SASL_MECHANISM") or None
    protocol = env.get("KAFKA_SECURITY_PROTOCOL") or ("SASL_PLAINTEXT" if mechanism else "PLAINTEXT")
    return ExternalCluster(
        bootstrap,
        security_protocol=protocol.upper(),
        sasl_mechanism=mechanism,
        sasl_username=env.get("KAFKA_SASL_USERNAME"),
        sasl_password=env.get("KAFKA_SASL_PASSWORD"),
        ca_path=env.get("KAFKA_SSL_CA_LOCATION") or None,
    )
