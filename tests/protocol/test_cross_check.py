"""Our encodings read back by an independent codec: kafka-python 3's protocol classes.

For every message both implement, at every version both know, kafka-python decodes our bytes
and re-encodes them to exactly the same bytes (all fields set, then nullable fields null).
"""

from __future__ import annotations

import importlib
import inspect
import pkgutil
import warnings

import pytest

from kafka_fast.protocol import messages

from .values import populated

with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    import kafka.protocol as kafka_protocol
    from kafka.protocol.api_message import ApiMessage


def _kafka_python_classes() -> dict[str, type]:
    found = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for info in pkgutil.walk_packages(kafka_protocol.__path__, "kafka.protocol."):
            if ".old" in info.name or "generate" in info.name:
                continue
            module = importlib.import_module(info.name)
            for value in vars(module).values():
                if (inspect.isclass(value) and issubclass(value, ApiMessage)
                        and value is not ApiMessage and getattr(value, "_json", None)):
                    found[value.name] = value
    return found


KAFKA_PYTHON = _kafka_python_classes()
COMMON = sorted(name for name in KAFKA_PYTHON if name in messages.MODULES)


def test_kafka_python_covers_the_main_apis():
    for name in ("ProduceRequest", "FetchResponse", "MetadataResponse", "ApiVersionsResponse",
                 "FindCoordinatorResponse", "JoinGroupRequest", "OffsetCommitRequest"):
        assert name in COMMON


@pytest.mark.parametrize("name", COMMON)
def test_kafka_python_reads_and_rewrites_our_bytes(name):
    ours = getattr(messages, name)
    theirs = KAFKA_PYTHON[name]
    low = max(ours.MIN_VERSION, theirs.valid_versions[0])
    high = min(ours.MAX_VERSION, theirs.max_version)
    assert low <= high
    for version in range(low, high + 1):
        for nulls in (False, True):
            obj = populated(ours, version, nulls=nulls)
            if name == "ApiVersionsResponse":
                obj.error_code = 0  # kafka-python reads error replies as v0, as Kafka does
            data = obj.encode(version)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                decoded = theirs.decode(data, version=version)
                decoded._header = None
                again = bytes(decoded.encode(version=version))
            assert again == data, f"{name} v{version} nulls={nulls}"
