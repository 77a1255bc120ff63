"""``RecordBatchView`` over several decoded batches: the joined columns hold exactly the
records of every piece, from either record engine, with the key and value bytes copied at
once or left in the fetched batches until the view copies them (``columns(defer=True)``), and
a view kept by the caller never changes while later views are built and dropped."""

from __future__ import annotations

import importlib

import numpy as np
import pytest

from kafka_fast._impl import FORCED_PURE
from kafka_fast.consumer.batch_view import RecordBatchView
from kafka_fast.consumer.fetch_decode import Segment

ENGINES = {"native": "kafka_fast._native._records", "pure": "kafka_fast._pure.records"}


@pytest.fixture(params=["pure"] if FORCED_PURE else sorted(ENGINES))
def engine(request):
    return importlib.import_module(ENGINES[request.param])


@pytest.fixture(params=[False, True], ids=["copied", "deferred"])
def defer(request):
    return request.param


def make_batch(engine, base: int, n: int, salt: int, headers: bool, defer: bool = False,
               compression: str = "none"):
    keys = [None if i % 5 == 0 else b"k%d-%d" % (salt, base + i) for i in range(n)]
    values = [None if i % 11 == 3 else bytes([salt, i % 256]) * (i % 40) for i in range(n)]
    hdrs = ([[("i", b"%d" % (base + i))] if i % 2 else [] for i in range(n)]
            if headers else None)
    ts = [1_700_000_000_000 + 10 * (base + i) for i in range(n)]
    data = engine.encode_batch(values, keys, timestamps=ts, headers=hdrs, base_offset=base,
                               partition_leader_epoch=salt, compression=compression)
    (batch,) = engine.decode_batches(data)
    rows = [(base + i, ts[i], keys[i], values[i], (hdrs[i] or None) if hdrs else None)
            for i in range(n)]
    return batch.columns(defer=defer), rows


def pieces_of(engine, salt: int, defer: bool = False):
    """Three batches of partition 2 (one lz4-compressed) and two of partition 0 (topic 1),
    runs cut inside batches; returns the pieces and the expected rows (partition, topic no,
    offset, ts, key, value, headers, epoch)."""
    pieces, expected = [], []
    specs = [(0, 2, 0, 40, 5, 40, True, "none"), (0, 2, 40, 60, 0, 60, False, "lz4"),
             (0, 2, 100, 30, 0, 12, True, "none"), (1, 0, 7, 50, 3, 50, True, "none"),
             (1, 0, 57, 20, 0, 20, False, "none")]
    for topic_no, part, base, n, start, stop, headers, codec in specs:
        cols, rows = make_batch(engine, base, n, salt + part, headers, defer, codec)
        pieces.append((topic_no, part, Segment(cols, start, stop, 1, salt + part)))
        expected += [(part, topic_no, *row[:4], row[4], salt + part)
                     for row in rows[start:stop]]
    return pieces, expected


def rows_of(view: RecordBatchView) -> list[tuple]:
    assert view.headers is not None
    return [(int(view.partitions[i]), int(view.topic_index[i]), int(view.offsets[i]),
             int(view.timestamps[i]), view.keys[i], view.values[i], view.headers[i],
             int(view.leader_epochs[i])) for i in range(len(view))]


def test_joined_columns_hold_every_piece_exactly(engine, defer):
    pieces, expected = pieces_of(engine, 1, defer)
    view = RecordBatchView(pieces, ["a", "b"], with_headers=True)
    assert len(view) == len(expected) == 35 + 60 + 12 + 47 + 20
    assert rows_of(view) == expected
    assert view.timestamp_types.tolist() == [1] * len(view)
    assert (view.partitions.dtype, view.topic_index.dtype, view.offsets.dtype,
            view.timestamps.dtype, view.leader_epochs.dtype) == (
        np.int32, np.int32, np.int64, np.int64, np.int32)
    assert view.keys.offsets[0] == 0 and view.keys.offsets[-1] == len(view.keys.data)
    assert view.values.nulls is not None and view.keys.nulls is not None
    assert [m.value() for m in view] == [row[5] for row in expected]


def test_compiled_and_pure_engines_give_equal_views():
    views = []
    for name in sorted(ENGINES):
        pieces, _ = pieces_of(importlib.import_module(ENGINES[name]), 4)
        views.append(rows_of(RecordBatchView(pieces, ["a", "b"], with_headers=True)))
    assert views[0] == views[1]


def test_a_kept_view_never_changes(engine, defer):
    pieces, expected = pieces_of(engine, 1, defer)
    kept = RecordBatchView(pieces, ["a", "b"], with_headers=True)
    kept_values = kept.values.data.copy()
    del pieces
    for salt in (3, 5, 7, 9):
        pieces, want = pieces_of(engine, salt, defer)
        view = RecordBatchView(pieces, ["a", "b"], with_headers=True)
        assert rows_of(view) == want
        del view, pieces
    assert rows_of(kept) == expected
    assert np.array_equal(kept.values.data, kept_values)


def test_one_piece_shares_the_batch_columns():
    engine = importlib.import_module(ENGINES["pure" if FORCED_PURE else "native"])
    cols, rows = make_batch(engine, 0, 30, 1, False)
    view = RecordBatchView([(0, 1, Segment(cols, 0, 30, 1, -1))], ["t"])
    assert view.values.data is cols.values[0]
    assert [view.values[i] for i in range(30)] == [r[3] for r in rows]


@pytest.mark.skipif(FORCED_PURE, reason="the compiled record engine's deferred columns")
def test_deferred_columns_equal_copied_ones_and_check_every_range():
    engine = importlib.import_module(ENGINES["native"])
    copied, rows = make_batch(engine, 10, 50, 2, True)
    deferred, _ = make_batch(engine, 10, 50, 2, True, defer=True)
    assert type(deferred).__name__ == "DeferredColumns"
    # a run copied straight from the batch equals the same run of the copied columns
    out = np.full(2000, 0xEE, dtype=np.uint8)
    ends = deferred.field_ends("values")
    size = int(ends[30] - ends[7])
    assert deferred.copy_fields("values", 7, 30, out, 5) == size
    data, offs = copied.values
    assert bytes(out[5:5 + size]) == bytes(data[offs[7]:offs[30]])
    assert out[:5].tolist() == [0xEE] * 5 and out[5 + size] == 0xEE
    for name in ("offsets", "timestamps", "key_nulls", "value_nulls", "headers"):
        assert np.array_equal(np.asarray(copied[name], dtype=object),
                              np.asarray(deferred[name], dtype=object))
    for field in ("keys", "values"):
        assert all(np.array_equal(a, b) for a, b in zip(copied[field], deferred[field], strict=True))
    assert deferred.value_list() == [r[3] for r in rows]
    # bad ranges are refused, naming what was wrong (from the batch, then once copied out)
    fresh, _ = make_batch(engine, 10, 50, 2, True, defer=True)
    for cols in (fresh, deferred):
        _refuses_bad_ranges(cols, out, size)


def _refuses_bad_ranges(deferred, out, size):
    with pytest.raises(ValueError, match="outside a batch of 50"):
        deferred.copy_fields("keys", 40, 51, out, 0)
    with pytest.raises(ValueError, match="do not fit"):
        deferred.copy_fields("values", 0, 50, np.zeros(3, np.uint8), 0)
    with pytest.raises(ValueError, match="do not fit"):
        deferred.copy_fields("values", 7, 30, out, 2000 - size + 1)


@pytest.mark.skipif(FORCED_PURE, reason="the compiled record engine's deferred columns")
def test_field_positions_outside_the_batch_are_refused():
    engine = importlib.import_module(ENGINES["native"])
    data = engine.encode_batch([b"v%d" % i for i in range(20)], [b"k"] * 20)
    (batch,) = engine.decode_batches(data)
    ends = np.arange(21, dtype=np.int64) * 2
    out = np.zeros(100, dtype=np.uint8)
    with pytest.raises(ValueError, match="record 0 lies outside the batch"):
        batch.copy_fields(np.full(20, 1 << 40, dtype=np.int64), ends, 0, 20, out, 0)
    with pytest.raises(ValueError, match="lies outside the batch"):
        batch.copy_fields(np.full(20, -1, dtype=np.int64), ends, 3, 9, out, 0)
    unordered = ends.copy()
    unordered[5] = 90  # a length that goes back: no byte may land outside the run
    with pytest.raises(ValueError, match="record 4 lies outside the batch"):
        batch.copy_fields(np.zeros(20, dtype=np.int64), unordered, 0, 20, out, 0)
    with pytest.raises(ValueError, match="do not match"):
        batch.copy_fields(np.zeros(20, dtype=np.int64), ends[:-1], 0, 19, out, 0)
    compressed = engine.decode_batches(engine.encode_batch([b"v"], compression="lz4"))[0]
    with pytest.raises(ValueError, match="uncompressed batches only"):
        compressed.copy_fields(np.zeros(1, np.int64), np.zeros(2, np.int64), 0, 1, out, 0)
