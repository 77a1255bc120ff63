"""A walk over confluent-kafka's public API: every public name of its package and of its
``serialization``, ``error`` and ``aio`` modules exists in kafka_fast, every public method and
attribute of its classes exists on ours, and every parameter confluent-kafka documents is
taken, in the same position for positional ones. The admin API has its own walk (tests/admin/test_api_compat).

What is deliberately different is in ``ALLOWED`` with the reason.
"""

from __future__ import annotations

import inspect
import re
from types import ModuleType
from typing import Any

import confluent_kafka
import confluent_kafka.aio
import confluent_kafka.error
import confluent_kafka.serialization
import pytest

import kafka_fast
import kafka_fast.aio
import kafka_fast.error
import kafka_fast.serialization

#: (module, name) -> why kafka_fast does not have it
ALLOWED = {
    ("confluent_kafka.serialization", "HeadersType"): "a typing alias, not an API",
}

#: (qualified method, parameter) -> why its position differs
RENAMED = {
    ("Producer.produce_batch", "messages"): "positional parameter 1 is `values`: a list of "
    "message dicts (confluent-kafka's form) or columns; `messages=` is also taken by keyword",
    ("SerializingProducer.produce_batch", "messages"): "inherited from Producer.produce_batch",
}

PAIRS = [
    (confluent_kafka, kafka_fast),
    (confluent_kafka.serialization, kafka_fast.serialization),
    (confluent_kafka.error, kafka_fast.error),
    (confluent_kafka.aio, kafka_fast.aio),
]
_SPHINX = re.compile(r"\.\. py:function::?\s*\w+\((?P<params>.*)\)")


def _public(module: ModuleType) -> list[str]:
    names = getattr(module, "__all__", None) or [n for n in dir(module) if not n.startswith("_")]
    out = []
    for name in names:
        obj = getattr(module, name, None)
        if obj is None or isinstance(obj, ModuleType):
            continue
        origin = getattr(obj, "__module__", "") or ""
        if origin.startswith("typing") or name in {"Any", "Dict", "List", "Optional", "Tuple"}:
            continue
        inside = origin == module.__name__ or (
            origin.startswith(module.__name__ + ".") and hasattr(module, "__path__"))
        if module is not confluent_kafka and inspect.isclass(obj) and not inside:
            continue  # a name the submodule imports from elsewhere (checked where it lives)
        out.append(name)
    return sorted(out)


def _names() -> list[tuple[str, str]]:
    return [(theirs.__name__, name) for theirs, _ in PAIRS for name in _public(theirs)]


def _ours(module_name: str) -> ModuleType:
    return next(ours for theirs, ours in PAIRS if theirs.__name__ == module_name)


def _theirs(module_name: str) -> ModuleType:
    return next(theirs for theirs, _ in PAIRS if theirs.__name__ == module_name)


def _their_params(fn: Any) -> list[tuple[str, bool]] | None:
    """confluent-kafka's parameters of ``fn`` as (name, positional), from its signature or,
    for the compiled methods, from the ``.. py:function::`` line of its docstring."""
    try:
        sig = inspect.signature(fn)
    except (TypeError, ValueError):
        match = _SPHINX.search(fn.__doc__ or "")
        if match is None:
            return None
        params = []
        for raw in match.group("params").split(","):
            name = raw.strip().strip("[]").split("=")[0].strip()
            if name and name not in ("self", "*args", "**kwargs"):
                params.append((name, True))
        return params
    return [(p.name, p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD))
            for p in sig.parameters.values()
            if p.name != "self" and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)]


def _our_params(fn: Any) -> list[tuple[str, bool]]:
    sig = inspect.signature(fn)
    return [(p.name, p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD))
            for p in sig.parameters.values()
            if p.name != "self" and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)]


def _check_params(what: str, theirs: Any, ours: Any) -> None:
    wanted = _their_params(theirs)
    if wanted is None:
        return  # confluent-kafka documents no parameters for it
    have = _our_params(ours)
    names = [n for n, _ in have]
    for i, (name, positional) in enumerate(wanted):
        assert name in names, f"{what}: confluent-kafka's parameter {name!r} is missing"
        if positional and (what, name) not in RENAMED:
            assert names.index(name) == i and have[i][1], (
                f"{what}: {name!r} is positional parameter {i} in confluent-kafka, "
                f"not in kafka_fast ({names})")


@pytest.mark.parametrize("module_name,name", _names())
def test_every_public_name_exists(module_name, name):
    if (module_name, name) in ALLOWED:
        # a documented difference (ALLOWED says why): it must still be one
        assert not hasattr(_ours(module_name), name), \
            f"{name} exists now: drop it from ALLOWED"
        return
    theirs = getattr(_theirs(module_name), name)
    ours = getattr(_ours(module_name), name, None)
    assert ours is not None, f"kafka_fast has no {module_name}.{name}"
    if inspect.isclass(theirs):
        assert inspect.isclass(ours), f"{name} is a class in confluent-kafka"
        missing = [a for a in dir(theirs) if not a.startswith("_") and not hasattr(ours, a)]
        assert not missing, f"{name} lacks {missing}"
        for attr in dir(theirs):
            if attr.startswith("_") and attr != "__init__":
                continue
            their_attr = getattr(theirs, attr)
            if not callable(their_attr) or inspect.isclass(their_attr):
                continue
            if attr == "__init__" and their_attr is object.__init__:
                continue
            _check_params(f"{name}.{attr}", their_attr, getattr(ours, attr))
    elif callable(theirs):
        _check_params(name, theirs, ours)
    else:
        assert ours == theirs, f"{name}: {ours!r} != confluent-kafka's {theirs!r}"


@pytest.mark.parametrize("fn", ["murmur2", "consistent", "fnv1a"])
def test_partitioner_functions_place_keys_as_confluent_kafka(fn):
    import random

    rng = random.Random(11)
    keys = [bytes(rng.getrandbits(8) for _ in range(rng.randrange(0, 40))) for _ in range(2000)]
    for count in (1, 2, 6, 7, 100, 1000):
        assert [getattr(kafka_fast, fn)(k, count) for k in keys] == \
            [getattr(confluent_kafka, fn)(k, count) for k in keys]
    for bad, error in (((None, 3), TypeError), ((b"k", 0), ValueError), ((b"k", "3"), TypeError)):
        with pytest.raises(error):
            getattr(confluent_kafka, fn)(*bad)
        with pytest.raises(error):
            getattr(kafka_fast, fn)(*bad)


def _defaults_table() -> list[list[str]]:
    from pathlib import Path

    text = (Path(__file__).resolve().parents[1] / "docs" /
            "migrating-from-confluent-kafka.md").read_text(encoding="utf-8")
    section = text.split("## Defaults that differ from librdkafka's", 1)[1].split("\n## ", 1)[0]
    rows = [line for line in section.splitlines() if line.startswith("| `")]
    return [[cell.strip().strip("`") for cell in row.strip("|").split("|")] for row in rows]


def test_the_defaults_table_states_kafka_fasts_defaults():
    from kafka_fast.config import make_config

    rows = _defaults_table()
    assert {row[0] for row in rows} >= {"enable.idempotence", "partitioner",
                                        "socket.nagle.disable", "connections.max.idle.ms"}
    producer = make_config({"bootstrap.servers": "x"}, "producer")
    for key, librdkafka, ours, _why in rows:
        value = producer[key]
        shown = str(value).lower() if isinstance(value, bool) else str(value)
        assert shown == ours, f"{key}: the table says {ours}, the default is {value!r}"
        assert librdkafka != ours
