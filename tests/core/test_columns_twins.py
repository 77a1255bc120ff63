"""``append_messages`` (compiled: writes the compiled Message's fields directly) against its
pure twin: the same messages, every field set, references counted right."""

from __future__ import annotations

import gc
import sys

import numpy as np
import pytest

from kafka_fast._impl import FORCED_PURE
from kafka_fast._native import _columns as native_columns
from kafka_fast._pure import columns as pure_columns
from kafka_fast._pure import records as pure_records
from kafka_fast.errors import KafkaError
from kafka_fast.message import Message

IMPLS = {"native": native_columns, "pure": pure_columns}

# The compiled builders make the compiled Message: with KAFKA_FAST_NO_EXTENSIONS=1 (the pure
# pass, where kafka_fast.message.Message is the twin) there is nothing compiled to compare.
pytestmark = pytest.mark.skipif(FORCED_PURE, reason="compares the compiled builders with "
                                "their twins; the pure pass loads no compiled module")


def state(msg: Message) -> tuple:
    """Every field of a message, as stored (its pickle's arguments, "none" as None): topic,
    partition, offset, key, value, headers, timestamp type, timestamp, error, latency, leader
    epoch, delivery count."""
    assert type(msg) is Message
    topic, part, off, key, value, hdrs, err, (tstype, ts), lat, epoch, count = msg.__reduce__()[1]
    return (topic, part, off, key, value, hdrs, tstype, ts, err, None if lat < 0 else lat,
            None if epoch < 0 else epoch, None if count < 0 else count)


def accessors(msg: Message) -> tuple:
    return (msg.topic(), msg.partition(), msg.offset(), msg.key(), msg.value(), msg.headers(),
            msg.timestamp(), msg.error(), msg.latency(), msg.leader_epoch(), len(msg))


def columns_of(values, keys, headers, codec="none", base_offset=100):
    data = pure_records.encode_batch(values, keys, timestamps=[1_000 + i for i in
                                                                range(len(values))],
                                     headers=headers, compression=codec,
                                     base_offset=base_offset)
    (batch,) = pure_records.decode_batches(data)
    return batch.columns()


CASES = {
    "plain": ([b"v%d" % i for i in range(20)], [b"k%d" % i for i in range(20)], None),
    "nulls_and_empty": ([None, b"", b"x", None, b"yy"], [b"", None, None, b"k", b""], None),
    "headers": ([b"a", b"b", b"c"], [None, b"k", None],
                [[("h", b"1")], None, [("h", None), ("i", b"")]]),
    "one": ([b"only"], None, [("s", b"v")]),
}


@pytest.mark.parametrize("case", sorted(CASES))
@pytest.mark.parametrize("epoch", [-1, 0, 7])
def test_native_equals_pure(case, epoch):
    cols = columns_of(*CASES[case])
    n = len(cols)
    for start, stop in [(0, n), (0, 0), (n - 1, n), (n // 2, n)]:
        got = {}
        for name, impl in IMPLS.items():
            out = ["before"]
            assert impl.append_messages(out, "topic-a", 3, cols, start, stop, 1, epoch) == \
                stop - start
            assert out[0] == "before"
            got[name] = [(state(m), accessors(m)) for m in out[1:]]
        assert got["native"] == got["pure"]
        assert len(got["native"]) == stop - start
    msgs = []
    native_columns.append_messages(msgs, "topic-a", 3, cols, 0, n, 1, epoch)
    assert [m.offset() for m in msgs] == list(range(100, 100 + n))
    assert [m.value() for m in msgs] == cols.value_list()
    assert [m.key() for m in msgs] == cols.key_list()
    assert [m.timestamp() for m in msgs] == [(1, 1_000 + i) for i in range(n)]
    assert all(m.leader_epoch() == (None if epoch < 0 else epoch) for m in msgs)


@pytest.mark.parametrize("impl", sorted(IMPLS))
def test_references_and_gc_tracking(impl):
    topic = "".join(["topic-", "refs"])  # a fresh string object
    cols = columns_of(*CASES["headers"])
    before = sys.getrefcount(topic)
    msgs = []
    IMPLS[impl].append_messages(msgs, topic, 0, cols, 0, len(cols), 1, -1)
    assert sys.getrefcount(topic) == before + len(msgs)
    # messages with headers stay tracked (their lists could close a cycle)
    assert all(gc.is_tracked(m) for m in msgs if m.headers())
    del msgs
    gc.collect()
    assert sys.getrefcount(topic) == before


class _Finalised:
    """Says when the cyclic collector freed it."""

    def __init__(self, freed: list[str], name: str) -> None:
        self.freed, self.name, self.ref = freed, name, None

    def __del__(self) -> None:
        self.freed.append(self.name)


@pytest.mark.parametrize("impl", sorted(IMPLS))
@pytest.mark.parametrize("setter", ["set_headers", "set_key", "set_value", "set_topic",
                                    "set_error"])
def test_a_message_given_a_container_by_a_setter_is_collected_in_a_cycle(impl, setter):
    """A consumed message of bytes is kept out of the cycle collector; a setter that gives it
    anything that could refer back to it puts it under the collector again, so a reference
    cycle through it is freed."""
    msgs: list = []
    IMPLS[impl].append_messages(msgs, "t", 0, columns_of(*CASES["plain"]), 0, 1, 1, -1)
    msg = msgs.pop()
    if impl == "native":
        assert not gc.is_tracked(msg)
        msg.set_value(b"still bytes")
        msg.set_topic("still a str")
        assert not gc.is_tracked(msg)
    freed: list[str] = []
    holder = _Finalised(freed, setter)
    holder.ref = msg
    getattr(msg, setter)([("h", holder)] if setter == "set_headers" else holder)
    assert gc.is_tracked(msg)
    del msg, holder
    gc.collect()
    assert freed == [setter]


@pytest.mark.parametrize("impl", sorted(IMPLS))
@pytest.mark.parametrize("field", ["topic", "key", "value", "headers", "error"])
def test_a_consumed_message_initialised_again_with_a_container_is_collected_in_a_cycle(
        impl, field):
    """``__init__`` called again on a consumed message of bytes puts it under the collector
    when a field could refer back to it, as the setters do."""
    msgs: list = []
    IMPLS[impl].append_messages(msgs, "t", 0, columns_of(*CASES["plain"]), 0, 1, 1, -1)
    msg = msgs.pop()
    freed: list[str] = []
    holder = _Finalised(freed, field)
    holder.ref = msg
    type(msg).__init__(msg, **{field: [("h", holder)] if field == "headers" else holder})
    assert gc.is_tracked(msg)
    del msg, holder
    gc.collect()
    assert freed == [field]


@pytest.mark.parametrize("impl", sorted(IMPLS))
def test_set_key_value_headers_after_append(impl):
    msgs = []
    IMPLS[impl].append_messages(msgs, "t", 0, columns_of(*CASES["plain"]), 0, 2, 1, -1)
    msgs[0].set_value(b"new")
    msgs[0].set_key(None)
    msgs[0].set_headers([("a", b"b")])
    assert (msgs[0].value(), msgs[0].key(), msgs[0].headers()) == (b"new", None, [("a", b"b")])
    assert msgs[1].value() == b"v1"


@pytest.mark.parametrize("impl", sorted(IMPLS))
@pytest.mark.parametrize("start,stop", [(-1, 2), (0, 21), (3, 2)])
def test_bad_range(impl, start, stop):
    out = []
    with pytest.raises(ValueError, match="outside a batch of 20"):
        IMPLS[impl].append_messages(out, "t", 0, columns_of(*CASES["plain"]), start, stop, 1,
                                    -1)
    assert out == []


@pytest.mark.parametrize("impl", sorted(IMPLS))
def test_inconsistent_columns(impl):
    cols = columns_of(*CASES["plain"])
    cols.timestamps = cols.timestamps[:-1]
    with pytest.raises(ValueError, match="inconsistent lengths"):
        IMPLS[impl].append_messages([], "t", 0, cols, 0, 5, 1, -1)
    cols = columns_of(*CASES["plain"])
    cols.values = (cols.values[0], np.array([0] + [10**9] * 20, dtype=np.int64))
    with pytest.raises(ValueError, match="out of bounds at record 0"):
        IMPLS[impl].append_messages([], "t", 0, cols, 0, 5, 1, -1)
    cols = columns_of(*CASES["plain"])
    cols.keys = (cols.keys[0], np.concatenate([cols.keys[1][:4], [-1] * 17]))
    out = []
    with pytest.raises(ValueError, match="out of bounds at record 3"):
        IMPLS[impl].append_messages(out, "t", 0, cols, 0, 5, 1, -1)
    assert out == []  # all records or none


# ---- the compiled builders against their twins on varied, seeded inputs ----------------------


TIMESTAMPS = [0, -1, 1, 1_700_000_000_000, (1 << 62), -(1 << 62)]


def _random_records(rng, n):
    def blob(p_none=0.2, size=40):
        if rng.random() < p_none:
            return None
        return rng.bytes(int(rng.integers(0, size)))

    keys = [blob() for _ in range(n)]
    values = [blob(0.1, 300) for _ in range(n)]
    headers = []
    for _ in range(n):
        kind = rng.integers(0, 3)
        if kind == 0:
            headers.append(None)
        elif kind == 1:
            headers.append([])
        else:
            headers.append([(f"h{j}", blob(0.3, 10)) for j in range(int(rng.integers(1, 4)))])
    timestamps = [TIMESTAMPS[i % len(TIMESTAMPS)] if rng.random() < 0.3
                  else int(rng.integers(-(1 << 40), 1 << 40)) for i in range(n)]
    return keys, values, headers, timestamps


def _both(fn_name, *args):
    """Run one builder of each implementation on the same arguments: (fields of the appended
    messages, or the exception raised as (type, text) with what was appended until then)."""
    got = {}
    for name, impl in IMPLS.items():
        out = ["before"]
        try:
            result = getattr(impl, fn_name)(out, *args)
        except Exception as exc:  # compared between the twins
            got[name] = ("raised", type(exc), str(exc), [state(m) for m in out[1:]])
        else:
            assert out[0] == "before"
            assert result == len(out) - 1
            for m in out[1:]:
                assert m.key() is None or type(m.key()) is bytes
                assert m.value() is None or type(m.value()) is bytes
            got[name] = [(state(m), accessors(m)) for m in out[1:]]
    return got


@pytest.mark.parametrize("seed", range(12))
def test_append_messages_twins_on_random_batches(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 60))
    keys, values, headers, timestamps = _random_records(rng, n)
    data = pure_records.encode_batch(
        values, keys, timestamps=timestamps,
        headers=None if seed % 4 == 0 else headers,
        compression=["none", "lz4", "zstd", "gzip"][seed % 4],
        base_offset=int(rng.integers(0, 1 << 40)))
    (batch,) = pure_records.decode_batches(data)
    cols = batch.columns()
    assert cols.timestamps.tolist() == timestamps
    for tstype in (0, 1, 2):
        for epoch in (-1, 0, int(rng.integers(1, 1 << 31))):
            start = int(rng.integers(0, n))
            stop = int(rng.integers(start, n + 1))
            got = _both("append_messages", f"topic-{seed}", seed, cols, start, stop, tstype,
                        epoch)
            assert got["native"] == got["pure"]
            msgs = got["native"]
            assert [s[3] for s, _ in msgs] == keys[start:stop]
            assert [s[4] for s, _ in msgs] == values[start:stop]
            assert [s[7] for s, _ in msgs] == timestamps[start:stop]
            assert {(s[6], s[8], s[9], s[10]) for s, _ in msgs} <= {
                (tstype, None, None, None if epoch < 0 else epoch)}


def _broken(what):
    cols = columns_of(*CASES["headers"])
    if what == "key offset past the data":
        cols.keys = (cols.keys[0], np.array([0, 0, 1, 50], dtype=np.int64))
    elif what == "negative value offset":
        cols.values = (cols.values[0], np.array([0, -1, 2, 3], dtype=np.int64))
    elif what == "decreasing value offsets":
        cols.values = (cols.values[0], np.array([0, 2, 1, 3], dtype=np.int64))
    elif what == "short key nulls":
        cols.key_nulls = cols.key_nulls[:2]
    elif what == "short value offsets":
        cols.values = (cols.values[0], cols.values[1][:3])
    elif what == "short headers":
        cols.headers = cols.headers[:2]
    elif what == "short offsets":
        cols.offsets = cols.offsets[:2]
    return cols


@pytest.mark.parametrize("what", ["key offset past the data", "negative value offset",
                                  "decreasing value offsets", "short key nulls",
                                  "short value offsets", "short headers", "short offsets"])
def test_append_messages_twins_refuse_the_same_columns(what):
    for start, stop in [(0, 3), (2, 3), (0, 1)]:
        got = _both("append_messages", "t", 0, _broken(what), start, stop, 1, -1)
        assert got["native"] == got["pure"], (start, stop)
        if (start, stop) == (0, 3):  # every record: the broken one too
            assert got["native"][:2] == ("raised", ValueError)
            assert got["native"][3] == []  # all records or none


def _forms(rng, items):
    """The same rows as each column form produce_batch hands over."""
    data = b"".join(x for x in items if x is not None)
    offsets = np.zeros(len(items) + 1, dtype=np.int64)
    offsets[1:] = np.cumsum([0 if x is None else len(x) for x in items])
    nulls = np.array([x is None for x in items])
    yield "list", items, items
    yield "list-of-buffers", [x if x is None or i % 2 else bytearray(x) if i % 4 else
                              memoryview(x) for i, x in enumerate(items)], items
    yield "packed", (data, offsets, nulls), items
    yield "packed-bytearray", (bytearray(data), offsets, nulls), items
    yield "packed-nulls-none", (data, offsets, None), [b"" if x is None else x for x in items]
    yield "packed-no-nulls", (np.frombuffer(data, np.uint8), offsets), [
        b"" if x is None else x for x in items]
    width = int(rng.integers(0, 9))
    rows = rng.integers(0, 256, size=(len(items), width), dtype=np.uint8)
    yield "array", rows, [bytes(r) for r in rows]


@pytest.mark.parametrize("seed", range(8))
def test_delivery_messages_twins_on_random_columns(seed):
    rng = np.random.default_rng(100 + seed)
    n = int(rng.integers(1, 40))
    keys, values, headers, timestamps = _random_records(rng, n)
    ts = np.array(timestamps, dtype=np.int64)
    errors = [None, KafkaError(KafkaError._MSG_TIMED_OUT), KafkaError(6, "not leader")]
    for (vform, vcol, vwant), (kform, kcol, kwant) in zip(
            _forms(rng, values), [*_forms(rng, keys)][::-1], strict=True):
        for base, fixed, err, hdrs in [(0, -1, None, headers), (1 << 40, -1, None, None),
                                       (-1, -1, errors[seed % 3], headers),
                                       (5, 1_234, errors[(seed + 1) % 3], None)]:
            tstype = 2 if fixed >= 0 else 1
            got = _both("delivery_messages", "t", seed, base, vcol, kcol, hdrs, ts, tstype,
                        fixed, err, n)
            assert got["native"] == got["pure"], (vform, kform, base, fixed)
            msgs = [s for s, _ in got["native"]]
            assert [s[4] for s in msgs] == vwant
            assert [s[3] for s in msgs] == kwant
            assert [s[2] for s in msgs] == ([base + i for i in range(n)] if base >= 0
                                            else [-1001] * n)
            assert [s[7] for s in msgs] == ([fixed] * n if fixed >= 0 else timestamps)
            assert [s[5] for s in msgs] == (hdrs if hdrs is not None else [None] * n)
            assert all(s[8] is err and s[6] == tstype and s[9] is None and s[10] is None
                       for s in msgs)


TS3 = np.arange(3, dtype=np.int64)
BAD_DELIVERY = {
    "packed offset past the data": ((b"abc", np.array([0, 1, 2, 5])), None, None, TS3, -1),
    "packed negative offset": ((b"abc", np.array([0, 1, -1, 2])), None, None, TS3, -1),
    "packed decreasing offsets": ((b"abc", np.array([0, 2, 1, 3])), None, None, TS3, -1),
    "packed offsets as a list": ((b"abc", [0, 1, 2, 3]), None, None, TS3, -1),
    "packed short nulls": ((b"abc", np.array([0, 1, 2, 3]), np.array([0, 1])), None, None,
                           TS3, -1),
    "packed uint8 nulls": ((b"abc", np.array([0, 1, 2, 3]), np.array([0, 2, 0], np.uint8)),
                           None, None, TS3, -1),
    "int32 rows": (np.arange(6, dtype=np.int32).reshape(3, 2), None, None, TS3, -1),
    "1-D rows": (np.arange(3, dtype=np.uint8), None, None, TS3, -1),
    "strided rows": (np.zeros((3, 4), np.uint8)[:, ::2], None, None, TS3, -1),
    "short rows": (np.zeros((2, 4), np.uint8), None, None, TS3, -1),
    "tuple of lists": (([b"a"], [b"b"], [b"c"], [b"d"]), None, None, TS3, -1),
    "str items": (["a", "b", "c"], None, None, TS3, -1),
    "short keys": ([b"a"] * 3, [b"k"], None, TS3, -1),
    "short headers": ([b"a"] * 3, None, [None], TS3, -1),
    "short timestamps": ([b"a"] * 3, None, None, TS3[:1], -1),
    "short timestamps, fixed time": ([b"a"] * 3, None, None, TS3[:1], 9),
    "no timestamps, fixed time": ([b"a"] * 3, None, None, None, 9),
    "float timestamps": ([b"a"] * 3, None, None, [1.5, 2.0, -3.7], -1),
}


@pytest.mark.parametrize("case", sorted(BAD_DELIVERY))
def test_delivery_messages_twins_agree_on_odd_columns(case):
    values, keys, headers, timestamps, fixed = BAD_DELIVERY[case]
    got = _both("delivery_messages", "t", 0, 10, values, keys, headers, timestamps,
                2 if fixed >= 0 else 1, fixed, None, 3)
    if got["native"] and got["native"][0] == "raised":
        # the same error; the text may differ only where it is numpy's or Cython's own
        assert got["pure"][0] == "raised", got["pure"]
        assert (got["native"][1], got["native"][3]) == (got["pure"][1], got["pure"][3])
        if "rows for" in got["native"][2] or "out of bounds" in got["native"][2]:
            assert got["native"][2] == got["pure"][2]
    else:
        assert got["native"] == got["pure"]


def _entries(callbacks, keys, values, headers, timestamps) -> list:
    """A flat ``RecordEntries.items`` list."""
    items: list = []
    for record in zip(callbacks, keys, values, headers, timestamps, strict=True):
        items += record
    return items


@pytest.mark.parametrize("seed", range(6))
def test_entry_messages_twins(seed):
    rng = np.random.default_rng(300 + seed)
    n = int(rng.integers(1, 40))
    keys, values, headers, timestamps = _random_records(rng, n)
    callbacks = [print if rng.random() < 0.8 else None for _ in range(n)]
    items = _entries(callbacks, keys, values, headers, timestamps)
    err = KafkaError(KafkaError._MSG_TIMED_OUT)
    for base, tstype, fixed, error in [(0, 1, -1, None), (1 << 40, 2, 77, None),
                                       (-1, 1, -1, err)]:
        got = {}
        for name, impl in IMPLS.items():
            out = ["before"]
            assert impl.entry_messages(out, items, "t", seed, base, tstype, fixed, error) == n
            assert out[0] == "before"
            got[name] = [None if m is None else (state(m), accessors(m)) for m in out[1:]]
        assert got["native"] == got["pure"]
        built = got["native"]
        assert [m is None for m in built] == [cb is None for cb in callbacks]
        want = [(("t", seed, base + i if base >= 0 else -1001, keys[i], values[i], headers[i],
                  tstype, fixed if fixed >= 0 else timestamps[i], error, None, None, None))
                for i in range(n) if callbacks[i] is not None]
        assert [m[0] for m in built if m is not None] == want


@pytest.mark.parametrize("impl", sorted(IMPLS))
def test_entry_messages_references_and_tracking(impl):
    topic = "".join(["topic-", "entries"])
    value = b"".join([b"value-", b"1"])
    headers = [("h", b"1")]
    items = _entries([print] * 4, [None, b"k", bytearray(b"k"), "text"],
                     [value, value, value, value], [None, headers, None, None], [1, 2, 3, 4])
    before = sys.getrefcount(topic), sys.getrefcount(value)
    msgs: list = []
    IMPLS[impl].entry_messages(msgs, items, topic, 0, 5, 1, -1, None)
    assert (sys.getrefcount(topic), sys.getrefcount(value)) == (before[0] + 4, before[1] + 4)
    assert [m.offset() for m in msgs] == [5, 6, 7, 8]
    if impl == "native":
        # Bytes, str and None only: untracked. Headers, or a key of a mutable type, could
        # close a reference cycle: those stay tracked.
        assert [gc.is_tracked(m) for m in msgs] == [False, True, True, False]
    del msgs
    gc.collect()
    assert (sys.getrefcount(topic), sys.getrefcount(value)) == before


@pytest.mark.parametrize("impl", sorted(IMPLS))
def test_entry_messages_reject_a_ragged_list(impl):
    with pytest.raises(ValueError, match="not five per record"):
        IMPLS[impl].entry_messages([], [print, b"k", b"v", None], "t", 0, 0, 1, -1, None)
