"""An MIT Kerberos KDC for tests: realm, principals and keytabs made in a temporary
directory, the KDC on a loopback port, configuration through KRB5_CONFIG and
KRB5_KDC_PROFILE files of its own (nothing under /etc is read or written).

Needs Debian's krb5-kdc, krb5-admin-server and krb5-user (tools/install_system_deps.sh)."""

from __future__ import annotations

import os
import shutil
import subprocess
import time
from pathlib import Path
from typing import Any

from harness.ports import LOOPBACK, free_port

REALM = "KAFKA.TEST"
KDC_TOOLS = ("krb5kdc", "kdb5_util", "kadmin.local")


def kdc_missing() -> str | None:
    """Why a KDC cannot be started here (None when it can)."""
    for tool in KDC_TOOLS:
        if shutil.which(tool) is None and not Path("/usr/sbin", tool).exists():
            return (f"{tool} not found (Debian: krb5-kdc krb5-admin-server krb5-user; "
                    "tools/install_system_deps.sh installs them)")
    return None


def _tool(name: str) -> str:
    return shutil.which(name) or str(Path("/usr/sbin", name))


class Kdc:
    """A running KDC for ``REALM`` (``.port``); ``.env`` holds KRB5_CONFIG and
    KRB5_KDC_PROFILE for processes that talk to it; ``.krb5_conf`` is the client file."""

    def __init__(self, workdir: Path) -> None:
        self.workdir = workdir
        workdir.mkdir(parents=True, exist_ok=True)
        self.port = free_port()
        self.krb5_conf = workdir / "krb5.conf"
        self.kdc_conf = workdir / "kdc.conf"
        self.krb5_conf.write_text(
            "[libdefaults]\n"
            f" default_realm = {REALM}\n"
            " dns_lookup_realm = false\n dns_lookup_kdc = false\n"
            " rdns = false\n dns_canonicalize_hostname = false\n"
            " udp_preference_limit = 1\n"
            " ticket_lifetime = 1h\n forwardable = true\n"
            f"[realms]\n {REALM} = {{\n  kdc = {LOOPBACK}:{self.port}\n }}\n"
            f"[domain_realm]\n localhost = {REALM}\n")
        self.kdc_conf.write_text(
            "[kdcdefaults]\n"
            f" kdc_ports = {self.port}\n kdc_tcp_ports = {self.port}\n"
            f"[realms]\n {REALM} = {{\n"
            f"  database_name = {workdir / 'principal'}\n"
            f"  key_stash_file = {workdir / 'stash'}\n"
            f"  acl_file = {workdir / 'kadm5.acl'}\n"
            "  supported_enctypes = aes256-cts-hmac-sha1-96:normal "
            "aes128-cts-hmac-sha1-96:normal\n"
            " }\n"
            f"[logging]\n kdc = FILE:{workdir / 'kdc.log'}\n")
        (workdir / "kadm5.acl").write_text("")
        self.env = {**os.environ, "KRB5_CONFIG": str(self.krb5_conf),
                    "KRB5_KDC_PROFILE": str(self.kdc_conf)}
        self._run(_tool("kdb5_util"), "create", "-s", "-r", REALM, "-P", "master-secret")
        self.proc: subprocess.Popen | None = None

    def _run(self, *argv: str) -> str:
        done = subprocess.run(argv, env=self.env, capture_output=True, text=True, timeout=60,
                              stdin=subprocess.DEVNULL)
        if done.returncode != 0:
            raise RuntimeError(f"{' '.join(argv)} failed: {done.stdout}{done.stderr}")
        return done.stdout

    def add_principal(self, principal: str, keytab: Path) -> Path:
        """Create ``principal`` (in REALM) with a random key written to ``keytab``."""
        self._run(_tool("kadmin.local"), "-r", REALM, "-q", f"addprinc -randkey {principal}")
        self._run(_tool("kadmin.local"), "-r", REALM, "-q",
                  f"ktadd -k {keytab} {principal}")
        return keytab

    def start(self, timeout: float = 20.0) -> None:
        log = open(self.workdir / "krb5kdc.out", "wb")
        self.proc = subprocess.Popen([_tool("krb5kdc"), "-n", "-r", REALM], env=self.env,
                                     stdout=log, stderr=subprocess.STDOUT,
                                     stdin=subprocess.DEVNULL)
        log.close()
        deadline = time.monotonic() + timeout
        import socket

        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError("krb5kdc exited: "
                                   + (self.workdir / "krb5kdc.out").read_text())
            try:
                socket.create_connection((LOOPBACK, self.port), 0.5).close()
                return
            except OSError:
                time.sleep(0.1)
        self.stop()
        raise TimeoutError(f"krb5kdc not listening on {self.port} within {timeout:.0f}s")

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(10)


class GssapiKafka:
    """Apache Kafka with a SASL_PLAINTEXT listener taking GSSAPI (service principal
    ``kafka/localhost``) beside PLAINTEXT, and the KDC it trusts. ``.client_keytab`` holds
    the client principal ``.client_principal``; ``.gss_bootstrap`` is ``localhost:PORT``."""

    def __init__(self, cluster: Any, kdc: Kdc, gss_port: int, client_keytab: Path,
                 client_principal: str) -> None:
        self.cluster = cluster
        self.kdc = kdc
        self.gss_bootstrap = f"localhost:{gss_port}"
        self.client_keytab = client_keytab
        self.client_principal = client_principal

    def client_config(self, extra: dict[str, Any] | None = None) -> dict[str, Any]:
        return {"bootstrap.servers": self.gss_bootstrap, "security.protocol": "SASL_PLAINTEXT",
                "sasl.mechanism": "GSSAPI", "sasl.kerberos.service.name": "kafka",
                "sasl.kerberos.principal": self.client_principal,
                "sasl.kerberos.keytab": str(self.client_keytab), **(extra or {})}

    def stop(self) -> None:
        try:
            self.cluster.discard()
        finally:
            self.kdc.stop()


def start_gssapi_kafka(workdir: Path) -> GssapiKafka:
    """A KDC, the broker's and a client's keytabs, and one Apache Kafka node using them."""
    from harness.apache_kafka import COMMON_SETTINGS, start_single_node

    kdc = Kdc(workdir / "kdc")
    try:
        server_keytab = kdc.add_principal("kafka/localhost", workdir / "kafka.keytab")
        client_keytab = kdc.add_principal("alice", workdir / "alice.keytab")
        kdc.start()
        ports = {n: free_port() for n in ("PLAINTEXT", "CONTROLLER", "GSS")}
        settings = {
            "process.roles": "broker,controller", "node.id": "1",
            "controller.quorum.voters": f"1@{LOOPBACK}:{ports['CONTROLLER']}",
            "listeners": f"PLAINTEXT://{LOOPBACK}:{ports['PLAINTEXT']},"
                         f"CONTROLLER://{LOOPBACK}:{ports['CONTROLLER']},"
                         f"GSS://localhost:{ports['GSS']}",
            "advertised.listeners": f"PLAINTEXT://{LOOPBACK}:{ports['PLAINTEXT']},"
                                    f"GSS://localhost:{ports['GSS']}",
            "listener.security.protocol.map":
                "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT,GSS:SASL_PLAINTEXT",
            "controller.listener.names": "CONTROLLER", "inter.broker.listener.name": "PLAINTEXT",
            "log.dirs": str(workdir / "data"),
            **COMMON_SETTINGS,
            "offsets.topic.replication.factor": "1",
            "transaction.state.log.replication.factor": "1",
            "transaction.state.log.min.isr": "1",
            "sasl.enabled.mechanisms": "GSSAPI",
            "sasl.kerberos.service.name": "kafka",
            "listener.name.gss.gssapi.sasl.jaas.config":
                "com.sun.security.auth.module.Krb5LoginModule required useKeyTab=true "
                f'storeKey=true keyTab="{server_keytab}" principal="kafka/localhost@{REALM}";',
        }
        cluster = start_single_node(workdir, ports, settings,
                                    (f"-Djava.security.krb5.conf={kdc.krb5_conf}",))
    except BaseException:
        kdc.stop()
        raise
    return GssapiKafka(cluster, kdc, ports["GSS"], client_keytab, f"alice@{REALM}")
