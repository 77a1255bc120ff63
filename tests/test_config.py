"""The configuration table: parsing, validation errors, and the generated reference page."""

from __future__ import annotations

import os
import sys

import pytest

from kafka_fast import ConfigError, KafkaError, KafkaException
from kafka_fast.config import REGISTRY, make_config

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def test_values_are_converted_and_aliases_resolve():
    conf = make_config(
        {"metadata.broker.list": "a:1, b:2", "max.in.flight": "3", "socket.nagle.disable": "false"},
        "producer",
    )
    assert conf["bootstrap.servers"] == ["a:1", "b:2"]
    assert conf["max.in.flight.requests.per.connection"] == 3
    assert conf["socket.nagle.disable"] is False
    assert conf["request.timeout.ms"] == 30000
    assert conf.is_set("bootstrap.servers") and not conf.is_set("client.id")


def test_unknown_key_names_the_key():
    with pytest.raises(KafkaException) as info:
        make_config({"bootstrap.servers": "x:1", "no.such.key": 1}, "consumer")
    err = info.value.args[0]
    assert err.code() == KafkaError._INVALID_ARG
    assert '"no.such.key"' in err.str()


@pytest.mark.parametrize(
    "conf, fragment",
    [
        ({"request.timeout.ms": "soon"}, '"request.timeout.ms"'),
        ({"request.timeout.ms": 0}, "below the minimum"),
        ({"security.protocol": "CARRIER_PIGEON"}, "one of PLAINTEXT"),
        ({"socket.nagle.disable": "maybe"}, "true or false"),
        ({"error_cb": 5}, "callable"),
    ],
)
def test_bad_values_raise_config_error(conf, fragment):
    with pytest.raises(ConfigError) as info:
        make_config(conf, "admin")
    assert fragment in info.value.args[0].str()


def test_config_must_be_a_mapping():
    with pytest.raises(TypeError):
        make_config([("bootstrap.servers", "x")], "producer")


def test_every_key_has_a_doc_and_a_parseable_default():
    for key in REGISTRY.keys.values():
        assert key.doc.strip(), key.name
        if key.default is not None and key.kind not in ("callable", "any"):
            assert key.parse(key.default) == key.default or key.kind == "list", key.name


def test_configuration_reference_is_generated_from_the_table():
    sys.path.insert(0, os.path.join(ROOT, "tools"))
    try:
        import gen_config_docs
    finally:
        sys.path.pop(0)
    with open(os.path.join(ROOT, "docs", "configuration.md"), encoding="utf-8") as fh:
        committed = fh.read()
    assert committed == gen_config_docs.render(), (
        "docs/configuration.md is stale: run python tools/gen_config_docs.py"
    )


def test_keys_accepted_without_effect_warn():
    import warnings

    from kafka_fast.config import make_config

    for name, value in (("log_level", 7), ("coordinator.query.interval.ms", 5),
                        ("fetch.queue.backoff.ms", 5), ("debug", "all")):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            make_config({"bootstrap.servers": "x:1", "group.id": "g", name: value}, "consumer")
        assert [str(w.message) for w in caught] == [
            f'Configuration property "{name}" is accepted for compatibility and has no effect']
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        conf = make_config({"socket.keepalive.enable": True,
                            "client.dns.lookup": "use_all_dns_ips"}, "producer")
    assert conf["socket.keepalive.enable"] is True


def test_socket_keepalive_enable_sets_so_keepalive(kafka):
    """``ss -o`` shows a keepalive timer only on sockets with SO_KEEPALIVE."""
    import os
    import subprocess

    from harness.peers import require_tool

    from kafka_fast import Producer

    ss = require_tool("ss")

    def ours() -> dict[str, str]:
        """This process's connections to the broker, by local address."""
        out = subprocess.run([ss, "-tnop", "state", "established", f"dport = :{kafka.port}"],
                             capture_output=True, text=True, check=True).stdout
        return {line.split()[2]: line for line in out.splitlines()
                if f"pid={os.getpid()}," in line}

    def timers(keepalive: bool) -> list[str]:
        before = ours()  # other clients of this process (earlier tests) are left out
        with Producer(kafka.client_config({"socket.keepalive.enable": keepalive})) as p:
            p.list_topics(timeout=10)
            return [line for local, line in ours().items() if local not in before]

    with_keepalive, without = timers(True), timers(False)
    assert with_keepalive and all("timer:(keepalive" in line for line in with_keepalive)
    assert without and not any("keepalive" in line for line in without)
