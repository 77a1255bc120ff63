"""``append_messages`` (compiled: writes Message slots at the offsets the slot descriptors
report) against its pure twin: the same messages, every slot set, references counted right."""

from __future__ import annotations

import gc
import sys

import numpy as np
import pytest

from kafka_fast._native import _columns as native_columns
from kafka_fast._pure import columns as pure_columns
from kafka_fast._pure import records as pure_records
from kafka_fast.message import Message

IMPLS = {"native": native_columns, "pure": pure_columns}


def state(msg: Message) -> tuple:
    """Every slot of a message (AttributeError if one was left unset)."""
    return tuple(getattr(msg, slot) for slot in Message.__slots__)


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
