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
        ({"request.timeout.ms": 0}, "outside allowed range 1..900000"),
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


def test_share_consumer_keys_warn_on_a_plain_consumer_and_consumer_keys_on_a_share_consumer():
    import warnings

    from kafka_fast import Consumer, ShareConsumer

    base = {"bootstrap.servers": "127.0.0.1:1", "group.id": "g"}
    for name, value in (("max.poll.records", 100), ("share.acknowledgement.mode", "explicit")):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            Consumer({**base, name: value}).close()
        assert [str(w.message) for w in caught if f'"{name}"' in str(w.message)] == [
            f'Configuration property "{name}" does not apply to a consumer and is ignored']
        assert all(w.filename == __file__ for w in caught if f'"{name}"' in str(w.message))
    # A ShareConsumer is checked under its own role: the keys it reads are taken, a plain
    # Consumer's (or a producer's) warn.
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        c = ShareConsumer({**base, "max.poll.records": 100, "fetch.max.bytes": 1000000,
                           "share.acknowledgement.mode": "explicit",
                           "auto.commit.interval.ms": 1000, "linger.ms": 5})
        c.close()
    assert [str(w.message) for w in caught if "Configuration property" in str(w.message)] == [
        f'Configuration property "{name}" does not apply to a share consumer and is ignored'
        for name in ("auto.commit.interval.ms", "linger.ms")]
    assert all(w.filename == __file__ for w in caught if "Configuration property" in str(w.message))


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


#: Where kafka_fast's range knowingly differs from librdkafka's, and why.
RANGE_DIFFERENCES = {
    # the CLI bounds one connection attempt by a shorter --timeout; the Java client has no
    # lower bound either
    "socket.connection.setup.timeout.ms": (1, 2147483647),
    # zstd's levels go to 22 (librdkafka stops at lz4's 12)
    "compression.level": (-1, 22),
    # read as request.timeout.ms (librdkafka's is a property of its own, 10..300000)
    "socket.timeout.ms": (1, 900000),
}


#: Keys librdkafka 2.16 checks against a wide range when set and against its documented range
#: when the client is created ("fetch.min.bytes ... outside allowed range 1..100000000").
TWO_STAGE_CHECKS = {"fetch.min.bytes"}


def test_numeric_keys_have_librdkafkas_ranges():
    """Every numeric key librdkafka also has refuses a value out of range exactly as
    confluent-kafka (librdkafka 2.16) does: the same range in the same words, e.g.
    'Configuration property "statistics.interval.ms" value -1000000 is outside allowed range
    0..86400000' (RANGE_DIFFERENCES lists the deliberate exceptions)."""
    import warnings

    import confluent_kafka

    probe = -1_000_000
    checked = []
    for key in REGISTRY.keys.values():
        if key.kind not in ("int", "float") or not key.librdkafka:
            continue
        for name in (key.name, *key.aliases):
            conf = {name: probe}
            if "producer" not in key.roles:
                conf["group.id"] = "g"
            client_class = (confluent_kafka.Producer if "producer" in key.roles
                            else confluent_kafka.Consumer)
            with pytest.raises(confluent_kafka.KafkaException) as theirs:
                client_class(conf)
            text = theirs.value.args[0].str().strip()
            if "No such configuration property" in text:
                continue  # a Java name librdkafka does not know
            with warnings.catch_warnings(), pytest.raises(ConfigError) as ours:
                warnings.simplefilter("ignore")
                make_config(conf, next(r for r in ("producer", "consumer", "share")
                                       if r in key.roles))
            our_text = ours.value.args[0].str()
            if name in RANGE_DIFFERENCES:
                low, high = RANGE_DIFFERENCES[name]
                assert our_text == (f'Configuration property "{name}" value {probe} is outside '
                                    f"allowed range {low}..{high}")
                assert text != our_text
            elif our_text.split(" value ")[1] != text.split(" value ")[1]:
                # librdkafka checks some keys twice: a wide range when the property is set,
                # the documented one when the client is created; both ends of ours are refused
                assert key.name in TWO_STAGE_CHECKS, (name, text, our_text)
                for outside in (key.minimum - 1, key.maximum + 1):
                    with pytest.raises(confluent_kafka.KafkaException):
                        client_class({**conf, name: outside})
            else:
                # librdkafka names an alias's property; kafka_fast the name as written
                assert our_text.startswith(f'Configuration property "{name}"'), our_text
            checked.append(name)
    assert {"statistics.interval.ms", "log_level", "retry.backoff.ms", "metadata.max.age.ms",
            "socket.send.buffer.bytes", "linger.ms", "queue.buffering.max.ms",
            "fetch.wait.max.ms", "request.timeout.ms"} <= set(checked)


def test_statistics_interval_above_a_day_is_refused_like_librdkafka():
    import confluent_kafka

    conf = {"statistics.interval.ms": 86_400_001}
    with pytest.raises(confluent_kafka.KafkaException) as theirs:
        confluent_kafka.Producer(conf)
    with pytest.raises(ConfigError) as ours:
        make_config(conf, "producer")
    assert ours.value.args[0].code() == theirs.value.args[0].code() == KafkaError._INVALID_ARG
    assert ours.value.args[0].str() == theirs.value.args[0].str().strip() == (
        'Configuration property "statistics.interval.ms" value 86400001 is outside allowed '
        "range 0..86400000")
    assert make_config({"statistics.interval.ms": 86_400_000}, "producer")[
        "statistics.interval.ms"] == 86_400_000
