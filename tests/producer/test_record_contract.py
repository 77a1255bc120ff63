"""The record contract, differentially: the same random record arguments go to every way a
record enters (produce() with and without a callback, produce_batch as a list, a 2-D array
and a packed column, AIOProducer.produce and produce_batch, SerializingProducer with
pass-through serializers, the Spark Arrow writer) and each must give the same outcome as
produce(): the same error class naming the same field, the same delivery error code, or the
same stored record, read back from Apache Kafka by offset at the end.

An entry point that cannot express an argument (a float timestamp in an Arrow timestamp
column, a None value in a 2-D array) sits that example out. The Spark writers' partition
column takes integers >= 0 and null (the partitioner chooses, as -1 does in produce()) and
refuses other negative numbers with a TypeError, as Spark's own Kafka sink fails the task.
"""

from __future__ import annotations

import asyncio
import re
import time
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa
import pytest
from harness.topics import create_topic, unique_topic
from hypothesis import HealthCheck, example, given, note, settings
from hypothesis import strategies as st
from readback import read_confluent

from kafka_fast import KafkaException, Producer, SerializingProducer
from kafka_fast.aio import AIOProducer
from kafka_fast.producer.arguments import MAX_TIMESTAMP, is_integral
from kafka_fast.spark.writer import send_arrow_batches

NA = "n/a"  # the entry point cannot express the arguments
_FIELD = re.compile(r"(partition|timestamp|header|key|value)")
_INT_KINDS = ["int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64"]
_ARROW_MS = (1 << 63) // 1000  # Arrow (and Spark) timestamps are int64 microseconds


@dataclass
class Field:
    """A key or value: how it is given and the bytes produce() stores for it."""

    kind: str
    raw: Any

    def obj(self) -> Any:
        """A fresh argument (buffers are not shared between entry points)."""
        if self.kind == "bytes":
            return self.raw
        if self.kind == "str":
            return self.raw
        if self.kind == "bytearray":
            return bytearray(self.raw)
        if self.kind == "memoryview":
            return memoryview(bytearray(self.raw))
        if self.kind == "numpy":
            return np.frombuffer(self.raw, np.uint8).copy()
        if self.kind == "int":
            return 5
        if self.kind == "object":
            return object()
        return None

    @property
    def stored(self) -> bytes | None:
        return self.raw.encode() if self.kind == "str" else self.raw

    @property
    def bytes_like(self) -> bool:
        return self.kind in ("bytes", "str", "bytearray", "memoryview", "numpy")


@st.composite
def fields(draw) -> Field:
    kind = draw(st.sampled_from(["bytes", "bytes", "str", "bytearray", "memoryview", "numpy",
                                 "none", "int", "object"]))
    if kind == "str":
        return Field(kind, draw(st.text(max_size=4)))
    if kind in ("none", "int", "object"):
        return Field(kind, None)
    return Field(kind, draw(st.binary(max_size=6)))


@st.composite
def timestamps(draw) -> Any:
    kind = draw(st.sampled_from(["int", "int", "int", "bool", "float"] + _INT_KINDS))
    if kind == "bool":
        return draw(st.booleans())
    if kind == "float":
        return draw(st.sampled_from([0.0, 1.9, 1_600_000_000_000.0, -5.0]))
    value = draw(st.sampled_from([
        0, 0, 1, 127, 255, 1_600_000_000_000, 1_700_000_000_123, MAX_TIMESTAMP,
        MAX_TIMESTAMP + 1, -1, -5, 1 << 62, (1 << 63) - 1, 1 << 63, (1 << 64) - 1,
        (1 << 64) + 5]))
    if kind == "int":
        return value
    info = np.iinfo(kind)
    return np.dtype(kind).type(min(max(value, info.min), info.max))


partitions = st.one_of(
    st.sampled_from([-1, -1, 0, 0, 1, -2, -5, 1 << 31, -(1 << 31) - 1, True, 0.0, None, "0"]),
    st.sampled_from(["int8", "int32", "uint8", "int64"]).flatmap(
        lambda k: st.sampled_from([0, 1, 5] if k.startswith("u") else [0, -1, -5]).map(
            lambda v: np.dtype(k).type(v))),
)

HEADERS: list[Any] = [
    None, [], [("a", b"x")], [("a", None), ("b", "s")], {"k": b"v"}, [("a", b"x"), ("a", b"")],
    "abc", [("a",)], [(1, b"x")], [("a", 5)], 5, {"k": 5},
]


@dataclass
class Record:
    value: Field
    key: Field
    partition: Any
    timestamp: Any
    headers: Any

    def stored_headers(self) -> tuple:
        pairs = self.headers.items() if isinstance(self.headers, dict) else self.headers or ()
        return tuple((k, v.encode() if isinstance(v, str) else v) for k, v in pairs)

    def array(self, field: Field) -> Any:
        return np.frombuffer(field.stored, np.uint8).reshape(1, len(field.stored))

    def packed(self, field: Field) -> Any:
        data = field.stored or b""
        return (data, np.array([0, len(data)], dtype=np.int64),
                np.array([field.kind == "none"]))

    def columns(self, form: str) -> dict | str:
        """produce_batch's arguments for this one record in ``form``."""
        if form == "list":
            return {"values": [self.value.obj()], "keys": [self.key.obj()],
                    "timestamps": [self.timestamp], "headers": [self.headers]}
        if not all(f.bytes_like or f.kind == "none" for f in (self.value, self.key)):
            return NA
        if form == "array":
            if not self.value.bytes_like:
                return NA
            return {"values": self.array(self.value),
                    "keys": self.array(self.key) if self.key.bytes_like else None,
                    "timestamps": np.array([self.timestamp]),
                    # as one header list for every record
                    "headers": self.headers}
        return {"values": self.packed(self.value), "keys": self.packed(self.key),
                "timestamps": self.timestamp, "headers": [self.headers]}

    def arrow(self) -> Any:
        """The record as a batch shaped like ``df_to_kafka_columns`` output, or NA."""
        if not all(f.bytes_like or f.kind == "none" for f in (self.value, self.key)):
            return NA
        p, ts = self.partition, self.timestamp
        if not is_integral(p) or not -(1 << 31) <= p < (1 << 31):
            return NA
        if not is_integral(ts) or not -_ARROW_MS < ts < _ARROW_MS:
            return NA
        h = self.headers
        pairs = list(h.items()) if isinstance(h, dict) else h
        if pairs is None:
            pairs = []
        if not isinstance(pairs, list) or not all(
                isinstance(x, tuple) and len(x) == 2 and isinstance(x[0], str)
                and isinstance(x[1], (bytes, str, type(None))) for x in pairs):
            return NA
        header_type = pa.list_(pa.struct([("key", pa.string()), ("value", pa.binary())]))
        return pa.record_batch([
            pa.array([self.value.stored], pa.binary()),
            pa.array([self.key.stored], pa.binary()),
            pa.array([None if p == -1 else int(p)], pa.int32()),
            pa.array([int(ts)], pa.timestamp("ms")),
            pa.array([[{"key": k, "value": v.encode() if isinstance(v, str) else v}
                       for k, v in pairs]], header_type),
        ], names=["value", "key", "partition", "timestamp", "headers"])


valid_fields = fields().filter(lambda f: f.kind not in ("int", "object"))
valid_partitions = st.sampled_from([-1, 0, np.int32(0), np.uint8(0), np.int64(-1)])
valid_timestamps = st.sampled_from([0, 1, 127, 1_600_000_000_000]).flatmap(
    lambda v: st.sampled_from(["int"] + [k for k in _INT_KINDS if np.iinfo(k).max >= v]).map(
        lambda k: v if k == "int" else np.dtype(k).type(v)))
# Half the examples are records every entry point should store, half anything at all.
records = st.one_of(
    st.builds(Record, valid_fields, valid_fields, valid_partitions, valid_timestamps,
              st.sampled_from(HEADERS[:6])),
    st.builds(Record, fields(), fields(), partitions, timestamps(), st.sampled_from(HEADERS)),
)


def outcome(call) -> tuple:
    """("refused", class, field), ("kafka", code), ("stored", reported offset or None), or
    (NA,) when the entry point cannot express the record."""
    try:
        result = call()
        if result is NA:
            return (NA,)
        err, offset = result
    except KafkaException as exc:
        return ("kafka", exc.args[0].code())
    except (TypeError, ValueError, OverflowError) as exc:
        found = _FIELD.search(str(exc))
        return ("refused", type(exc).__name__, found.group(1) if found else str(exc))
    if err is not None:
        return ("kafka", err.code())
    return ("stored", offset)


class EntryPoints:
    """Every way in, each producing one record and waiting for its delivery."""

    def __init__(self, kafka, topic: str) -> None:
        conf = kafka.client_config({"linger.ms": 0})
        self.topic = topic
        self.conf = conf
        self.producer = Producer(conf)
        self.serializing = SerializingProducer(dict(
            conf, **{"key.serializer": lambda obj, ctx: obj,
                     "value.serializer": lambda obj, ctx: obj}))
        self.loop = asyncio.new_event_loop()

        async def start() -> AIOProducer:
            return AIOProducer(conf)

        self.aio = self.loop.run_until_complete(start())

    def close(self) -> None:
        self.producer.close()
        self.serializing.close()
        self.loop.run_until_complete(self.aio.close())
        self.loop.close()

    def _reported(self, produce) -> tuple:
        reports: list = []
        produce(lambda err, msg: reports.append((err, msg)))
        assert self.producer.flush(30) == 0 and self.serializing.flush(30) == 0
        [(err, msg)] = reports
        return err, (msg.offset() if err is None else None)

    def produce(self, r: Record) -> tuple:
        return self._reported(lambda cb: self.producer.produce(
            self.topic, r.value.obj(), r.key.obj(), r.partition, cb, r.timestamp, r.headers))

    def produce_no_callback(self, r: Record) -> tuple:
        self.producer.produce(self.topic, r.value.obj(), r.key.obj(), r.partition,
                              timestamp=r.timestamp, headers=r.headers)
        assert self.producer.flush(30) == 0  # raises a delivery failure
        return None, None

    def batch(self, form: str):
        def call(r: Record) -> tuple | str:
            cols = r.columns(form)
            if cols == NA:
                return NA
            assert isinstance(cols, dict)
            return self._reported(lambda cb: self.producer.produce_batch(
                self.topic, cols["values"], r.partition, cb, keys=cols["keys"],
                timestamps=cols["timestamps"], headers=cols["headers"]))
        return call

    def aio_produce(self, r: Record) -> tuple:
        async def go() -> tuple:
            future = await self.aio.produce(self.topic, r.value.obj(), r.key.obj(),
                                            r.partition, timestamp=r.timestamp,
                                            headers=r.headers)
            return None, (await future).offset()
        return self.loop.run_until_complete(go())

    def aio_produce_batch(self, r: Record) -> tuple:
        cols = r.columns("list")
        assert isinstance(cols, dict)
        self.loop.run_until_complete(self.aio.produce_batch(
            self.topic, cols["values"], r.partition, keys=cols["keys"],
            timestamps=cols["timestamps"], headers=cols["headers"]))
        return None, None

    def serializing_produce(self, r: Record) -> tuple:
        return self._reported(lambda cb: self.serializing.produce(
            self.topic, key=r.key.obj(), value=r.value.obj(), partition=r.partition,
            on_delivery=cb, timestamp=r.timestamp, headers=r.headers))

    def spark_arrow(self, r: Record) -> tuple | str:
        batch = r.arrow()
        if batch is NA:
            return NA
        tally = send_arrow_batches([batch], self.conf, self.topic, producer=self.producer)
        if tally.failed:
            raise KafkaException(tally.first_error)
        return None, None


@pytest.fixture(scope="module")
def contract_topic(kafka) -> str:
    topic = unique_topic("contract")
    create_topic(kafka, topic, 1)
    return topic


def test_every_entry_point_keeps_the_same_record_contract(kafka, contract_topic):
    ways = EntryPoints(kafka, contract_topic)
    entries = {
        "produce(no callback)": ways.produce_no_callback,
        "produce_batch(list)": ways.batch("list"),
        "produce_batch(array)": ways.batch("array"),
        "produce_batch(packed)": ways.batch("packed"),
        "AIOProducer.produce": ways.aio_produce,
        "AIOProducer.produce_batch": ways.aio_produce_batch,
        "SerializingProducer.produce": ways.serializing_produce,
        "spark Arrow writer": ways.spark_arrow,
    }
    stored: list[tuple[str, Record, int | None]] = []
    started = int(time.time() * 1000)
    seen: dict[str, set] = {name: set() for name in entries}

    @settings(max_examples=100, derandomize=True, database=None, deadline=None,
              suppress_health_check=[HealthCheck.function_scoped_fixture,
                                     HealthCheck.too_slow])
    @given(r=records)
    # and, always, a stored record and one refusal of each kind every way in can express
    @example(r=Record(Field("bytes", b"v"), Field("str", "k"), 0, 1_600_000_000_000,
                      [("h", b"x")]))
    @example(r=Record(Field("bytes", b"v"), Field("none", None), -5, 0, None))
    @example(r=Record(Field("bytes", b"v"), Field("none", None), 1, 0, None))
    @example(r=Record(Field("bytes", b"v"), Field("none", None), -1, -5, None))
    @example(r=Record(Field("bytes", b"v"), Field("bytes", b"k"), -1, 0, [("h", 5)]))
    def check(r: Record) -> None:
        note(repr(r))
        want = outcome(lambda: ways.produce(r))
        if want[0] == "stored":
            stored.append(("produce", r, want[1]))
            want = ("stored", None)
        for name, call in entries.items():
            if name == "spark Arrow writer" and is_integral(r.partition) and r.partition < -1:
                expected = ("refused", "TypeError", "partition")  # the Spark column rule
            else:
                expected = want
            got = outcome(lambda call=call: call(r))
            if got == (NA,):
                continue
            seen[name].add(expected[0])
            if got[0] == "stored":
                stored.append((name, r, got[1]))
                got = ("stored", None)
            assert got == expected, name

    try:
        check()
    finally:
        ways.close()
    finished = int(time.time() * 1000)
    # every way in was tried with accepted and refused records
    for name, kinds in seen.items():
        assert {"stored", "refused", "kafka"} <= kinds, name
    got = read_confluent(kafka, contract_topic, 1, len(stored))
    assert len(got) == len(stored)
    for i, (g, (name, r, offset)) in enumerate(zip(got, stored, strict=True)):
        where = f"offset {i} by {name}: {r!r}"
        assert (g.partition, g.offset) == (0, i), where
        if offset is not None:
            assert offset == i, where
        assert (g.key, g.value, g.headers) == (r.key.stored, r.value.stored,
                                               r.stored_headers()), where
        if int(r.timestamp) == 0:
            assert started <= g.timestamp <= finished, where
        else:
            assert g.timestamp == int(r.timestamp), where
