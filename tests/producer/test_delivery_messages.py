"""Delivery-report messages of produce_batch batches: the compiled builder against its
pure-Python twin, for every column form."""

from __future__ import annotations

import numpy as np
import pytest

from kafka_fast._impl import FORCED_PURE
from kafka_fast._pure import columns as pure
from kafka_fast.errors import KafkaError
from kafka_fast.message import TIMESTAMP_CREATE_TIME, TIMESTAMP_LOG_APPEND_TIME

try:
    # the compiled builders make the compiled Message: not under KAFKA_FAST_NO_EXTENSIONS=1
    from kafka_fast._native import _columns as native
except ImportError:  # not built: the pure twin is still tested
    native = None
if FORCED_PURE:
    native = None

IMPLS = [pytest.param(pure, id="pure")]
if native is not None:
    IMPLS.append(pytest.param(native, id="native"))

VALUES = [b"v0", None, b"", b"value-3", bytearray(b"v4"), memoryview(b"v5")]
N = len(VALUES)
WANT = [b"v0", None, b"", b"value-3", b"v4", b"v5"]


def _packed(items, data_type=bytes, nulls=True):
    data = b"".join(bytes(x) for x in items if x is not None)
    offsets = np.zeros(len(items) + 1, dtype=np.int64)
    offsets[1:] = np.cumsum([0 if x is None else len(x) for x in items])
    null_mask = np.array([x is None for x in items])
    return (data_type(data), offsets, null_mask) if nulls else (data_type(data), offsets)


def _fields(msgs):
    return [(m.topic(), m.partition(), m.offset(), m.key(), m.value(), m.headers(),
             m.timestamp(), m.error()) for m in msgs]


def _build(impl, values, keys=None, headers=None, base=100, fixed=-1, err=None):
    out: list = []
    ts = np.arange(1_700_000_000_000, 1_700_000_000_000 + N, dtype=np.int64)
    tstype = TIMESTAMP_LOG_APPEND_TIME if fixed >= 0 else TIMESTAMP_CREATE_TIME
    assert impl.delivery_messages(out, "t", 3, base, values, keys, headers, ts, tstype,
                                  fixed, err, N) == N
    return out


@pytest.mark.parametrize("impl", IMPLS)
@pytest.mark.parametrize("form", ["list", "packed-bytes", "packed-bytearray", "packed-no-nulls",
                                  "array"])
def test_every_column_form_gives_the_records(impl, form):
    if form == "list":
        values, want = VALUES, WANT
    elif form == "packed-bytes":
        values, want = _packed(VALUES), WANT
    elif form == "packed-bytearray":
        values, want = _packed(VALUES, bytearray), WANT
    elif form == "packed-no-nulls":
        values, want = _packed(WANT[2:] * 2, nulls=False), (WANT[2:] * 2)[:N]
    else:
        values = np.arange(N * 4, dtype=np.uint8).reshape(N, 4)
        want = [bytes(row) for row in values]
    keys = [b"k%d" % i for i in range(N)]
    headers = [[("h", b"%d" % i)] if i % 2 else None for i in range(N)]
    msgs = _build(impl, values, keys, headers)
    assert _fields(msgs) == [
        ("t", 3, 100 + i, keys[i], want[i], headers[i],
         (TIMESTAMP_CREATE_TIME, 1_700_000_000_000 + i), None) for i in range(N)]
    assert all(type(m.value()) in (bytes, type(None)) for m in msgs)


@pytest.mark.parametrize("impl", IMPLS)
def test_failed_batch_and_log_append_time(impl):
    err = KafkaError(KafkaError._MSG_TIMED_OUT)
    msgs = _build(impl, VALUES, base=-1, err=err)
    assert [(m.offset(), m.error(), m.key()) for m in msgs] == [(None, err, None)] * N
    assert {m.__reduce__()[1][2] for m in msgs} == {-1001}
    msgs = _build(impl, VALUES, fixed=1_234)
    assert {m.timestamp() for m in msgs} == {(TIMESTAMP_LOG_APPEND_TIME, 1_234)}


@pytest.mark.parametrize("impl", IMPLS)
def test_short_columns_are_refused(impl):
    with pytest.raises(ValueError, match="values has 2 rows for 6 records"):
        _build(impl, VALUES[:2])
    with pytest.raises(ValueError, match="keys has"):
        _build(impl, VALUES, keys=[b"k"])
    with pytest.raises(ValueError, match="headers has"):
        _build(impl, VALUES, headers=[None])
    with pytest.raises(ValueError):
        _build(impl, (b"abc", np.array([0, 1], dtype=np.int64)))


def test_twins_agree_on_random_columns():
    if native is None:
        pytest.skip("the compiled builders are not in use (not built, or KAFKA_FAST_NO_EXTENSIONS=1)")
    rng = np.random.default_rng(11)
    items = [None if rng.random() < 0.1 else rng.bytes(int(rng.integers(0, 40)))
             for _ in range(N)]
    for values in (items, _packed(items)):
        assert _fields(_build(native, values, items)) == _fields(_build(pure, values, items))
