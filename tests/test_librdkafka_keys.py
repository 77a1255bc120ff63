"""Every librdkafka property (CONFIGURATION.md of the pinned librdkafka) is accounted for, and
docs/librdkafka-keys.md says what the clients do with it: each property is given to a real
Producer and Consumer, which accept it, accept it with the no-effect warning, or refuse it
with the reason, exactly as the page lists."""

from __future__ import annotations

import os
import re
import sys
import warnings

import pytest

from kafka_fast import ConfigError, Consumer, Producer
from kafka_fast.config import REGISTRY, make_config
from kafka_fast.config.librdkafka_only import REFUSED_BY_CONFLUENT_TOO

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tools"))
try:
    import gen_librdkafka_keys as gen
finally:
    sys.path.pop(0)

PROPERTIES = gen.properties()
BASE = {"bootstrap.servers": "127.0.0.1:1"}
#: A value each accepted key can be built with where its default is not one.
VALUES = {"bootstrap.servers": "127.0.0.1:1", "metadata.broker.list": "127.0.0.1:1",
          "group.id": "g"}


_TESTS_CELL = re.compile(r"\| tests: [^|]*\|")


def test_the_page_is_generated_from_configuration_md_and_the_table():
    """The page equals a fresh rendering; the tests column may lag behind new test files
    (then each test file it lists still exists and names the property)."""
    with open(os.path.join(ROOT, "docs", "librdkafka-keys.md"), encoding="utf-8") as fh:
        committed = fh.read()
    assert _TESTS_CELL.sub("| tests |", committed) == _TESTS_CELL.sub("| tests |", gen.render()), (
        "docs/librdkafka-keys.md is stale: run python tools/gen_librdkafka_keys.py")
    for line in committed.splitlines():
        cell = _TESTS_CELL.search(line)
        if cell:
            name = line.split("`")[1]
            for path in re.findall(r"`([^`]+)`", cell.group()):
                with open(os.path.join(ROOT, path), encoding="utf-8") as fh:
                    assert re.search(r"(?<![\w.])" + re.escape(name) + r"(?![\w.])",
                                     fh.read()), (name, path)


def test_every_librdkafka_property_is_accounted_for():
    assert len(PROPERTIES) == 199   # librdkafka 2.16.0's rows, global and topic
    unaccounted = [p.name for p in PROPERTIES if gen.status(p, {}).kind == "unaccounted"]
    assert unaccounted == []
    # a refused name is never also a key (the refusal would be dead)
    assert [n for n in REGISTRY.refused if REGISTRY.lookup(n) is not None] == []
    assert REFUSED_BY_CONFLUENT_TOO <= set(REGISTRY.refused)


def _build(role: str, name: str, value: object) -> list[str]:
    """Create and close a client of ``role`` with ``name=value``; the warnings about it."""
    conf = {**BASE, name: value}
    if role == "consumer":
        conf.setdefault("group.id", "g")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        client = Producer(conf) if role == "producer" else Consumer(conf)
        client.close()
    return [str(w.message) for w in caught if f'"{name}"' in str(w.message)]


def _confluent_refuses(role: str, name: str) -> None:
    """confluent-kafka refuses ``name`` too, with librdkafka's reason."""
    import confluent_kafka

    conf = {**BASE, name: "x"}
    if role == "consumer":
        conf["group.id"] = "g"
    make = confluent_kafka.Producer if role == "producer" else confluent_kafka.Consumer
    with pytest.raises(confluent_kafka.KafkaException) as info:
        make(conf)
    said = info.value.args[0].str()
    assert f'"{name}"' in said and ("must be set through dedicated" in said
                                    or "not settable" in said
                                    or "configuration only valid on Windows" in said), said


@pytest.mark.parametrize("prop", PROPERTIES, ids=[f"{p.section[:5]}-{p.name}" for p in PROPERTIES])
def test_each_client_does_what_the_page_says(prop):
    st = gen.status(prop, {})
    for role in gen.ROLES[prop.roles]:
        if st.kind in ("refused", "as_confluent"):
            with pytest.raises(ConfigError) as info:
                _build(role, prop.name, "x")
            assert info.value.args[0].str() == (
                f'Configuration property "{prop.name}" is not supported: {st.detail}')
            if st.kind == "as_confluent":
                _confluent_refuses(role, prop.name)
            continue
        key = REGISTRY.lookup(prop.name)
        assert key is not None
        value = VALUES.get(prop.name, key.default)
        said = _build(role, prop.name, value)
        if role not in key.roles:   # librdkafka's role, not this key's here: "only here"
            assert said == [f'Configuration property "{prop.name}" does not apply to a {role} '
                            "and is ignored"]
        elif st.kind == "ignored":
            assert said == [f'Configuration property "{prop.name}" is accepted for '
                            "compatibility and has no effect"]
        else:
            assert said == []
            if st.kind == "mapped":
                assert make_config({prop.name: value}, role).is_set(st.detail)
