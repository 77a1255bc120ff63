"""``RecordBatchView`` over several decoded batches: the joined columns hold exactly the
records of every piece, from either record engine, and a view kept by the caller never
changes while later views are built and dropped."""

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


def make_batch(engine, base: int, n: int, salt: int, headers: bool):
    keys = [None if i % 5 == 0 else b"k%d-%d" % (salt, base + i) for i in range(n)]
    values = [None if i % 11 == 3 else bytes([salt, i % 256]) * (i % 40) for i in range(n)]
    hdrs = ([[("i", b"%d" % (base + i))] if i % 2 else [] for i in range(n)]
            if headers else None)
    ts = [1_700_000_000_000 + 10 * (base + i) for i in range(n)]
    data = engine.encode_batch(values, keys, timestamps=ts, headers=hdrs, base_offset=base,
                               partition_leader_epoch=salt)
    (batch,) = engine.decode_batches(data)
    rows = [(base + i, ts[i], keys[i], values[i], (hdrs[i] or None) if hdrs else None)
            for i in range(n)]
    return batch.columns(), rows


def pieces_of(engine, salt: int):
    """Three batches of partition 2 and two of partition 0 (topic 1), runs cut inside
    batches; returns the pieces and the expected rows (partition, topic no, offset, ts, key,
    value, headers, epoch)."""
    pieces, expected = [], []
    specs = [(0, 2, 0, 40, 5, 40, True), (0, 2, 40, 60, 0, 60, False),
             (0, 2, 100, 30, 0, 12, True), (1, 0, 7, 50, 3, 50, True),
             (1, 0, 57, 20, 0, 20, False)]
    for topic_no, part, base, n, start, stop, headers in specs:
        cols, rows = make_batch(engine, base, n, salt + part, headers)
        pieces.append((topic_no, part, Segment(cols, start, stop, 1, salt + part)))
        expected += [(part, topic_no, *row[:4], row[4], salt + part)
                     for row in rows[start:stop]]
    return pieces, expected


def rows_of(view: RecordBatchView) -> list[tuple]:
    assert view.headers is not None
    return [(int(view.partitions[i]), int(view.topic_index[i]), int(view.offsets[i]),
             int(view.timestamps[i]), view.keys[i], view.values[i], view.headers[i],
             int(view.leader_epochs[i])) for i in range(len(view))]


def test_joined_columns_hold_every_piece_exactly(engine):
    pieces, expected = pieces_of(engine, 1)
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


def test_a_kept_view_never_changes(engine):
    pieces, expected = pieces_of(engine, 1)
    kept = RecordBatchView(pieces, ["a", "b"], with_headers=True)
    kept_values = kept.values.data.copy()
    del pieces
    for salt in (3, 5, 7, 9):
        pieces, want = pieces_of(engine, salt)
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
