"""Rows and Arrow batches into producer columns, and consumed columns into Spark's Arrow shape
(no Spark session or broker: Row objects, pyarrow and the record engine only)."""

from __future__ import annotations

import datetime as dt

import numpy as np
import pyarrow as pa
import pytest
from pyspark.sql import Row

from kafka_fast.consumer.batch_view import RecordBatchView
from kafka_fast.consumer.fetch_decode import decode_partition
from kafka_fast.records import decode_batches, encode_batch
from kafka_fast.spark.columns import (
    Columns,
    ColumnSpec,
    chunks,
    column_reader,
    encode_headers,
    encode_value,
    timestamp_ms,
)
from kafka_fast.spark.reader import spark_arrow
from kafka_fast.spark.writer import arrow_partition_groups, coalesced, packed


def test_encode_value_bytes_str_none_and_json_only_on_request():
    assert encode_value(b"x", "v") == b"x"
    assert encode_value(bytearray(b"ab"), "v") == b"ab"
    assert encode_value(memoryview(b"cd"), "v") == b"cd"
    assert encode_value("é", "v") == "é".encode()
    assert encode_value(None, "v") is None
    with pytest.raises(TypeError, match=r"column 'payload' must be bytes, str or None, not dict "
                                        r"\(pass value_format='json'"):
        encode_value({"a": 1}, "payload")
    with pytest.raises(TypeError, match="column 'v' must be bytes, str or None, not int"):
        encode_value(3, "v")
    assert encode_value({"a": [1, "é"]}, "v", "json") == '{"a":[1,"é"]}'.encode()
    assert encode_value([1, 2], "v", "json") == b"[1,2]"
    assert encode_value(Row(a=1, b=Row(c="x")), "v", "json") == b'{"a":1,"b":{"c":"x"}}'
    assert encode_value({"t": dt.date(2024, 1, 2)}, "v", "json") == b'{"t":"2024-01-02"}'
    assert encode_value("already text", "v", "json") == b"already text"
    with pytest.raises(ValueError, match="value_format must be None or 'json'"):
        ColumnSpec(value_format="avro")


def test_encode_headers_forms():
    assert encode_headers(None, "h") is None
    assert encode_headers([], "h") is None
    assert encode_headers([("a", b"1"), ("b", "2"), ("c", None)], "h") == [
        ("a", b"1"), ("b", b"2"), ("c", None)]
    assert encode_headers([Row(key="a", value=b"1")], "h") == [("a", b"1")]
    assert encode_headers({"a": "1"}, "h") == [("a", b"1")]
    assert encode_headers([{"key": "a", "value": b"1"}], "h") == [("a", b"1")]
    with pytest.raises(TypeError, match=r"column 'h' headers entries must be \(name, value\) tuples"):
        encode_headers([("a", b"1", b"2")], "h")
    with pytest.raises(TypeError, match="column 'h' headers names must be str, not int"):
        encode_headers([(1, b"x")], "h")
    with pytest.raises(TypeError, match="column 'h' headers value of 'a' must be bytes, str or None"):
        encode_headers([("a", 1.5)], "h")


def test_timestamps():
    assert timestamp_ms(None, "t") == 0
    assert timestamp_ms(1_700_000_000_123, "t") == 1_700_000_000_123
    when = dt.datetime(2024, 5, 6, 7, 8, 9, 123000, tzinfo=dt.timezone.utc)
    assert timestamp_ms(when, "t") == 1714979289123
    with pytest.raises(TypeError, match="column 't': a timestamp must be"):
        timestamp_ms("2024", "t")


def test_column_reader_reads_rows_dicts_and_tuples():
    rows = [Row(key=b"k", value=b"v"), Row(key=b"k2", value=b"v2")]
    assert column_reader(rows[0], "value")(rows) == [b"v", b"v2"]
    assert column_reader({"value": 1}, "value")([{"value": 1}, {"value": 2}]) == [1, 2]
    assert column_reader((1, 2), 1)([(1, 2), (3, 4)]) == [2, 4]
    assert column_reader([1, 2], 0)([[1, 2], [3, 4]]) == [1, 3]
    with pytest.raises(KeyError, match=r"column 'nope' is not in the rows \(columns: \['key', 'value'\]\)"):
        column_reader(rows[0], "nope")
    with pytest.raises(KeyError, match="column 5 is not in rows of 2 fields"):
        column_reader((1, 2), 5)
    with pytest.raises(KeyError, match="unnamed"):
        column_reader((1, 2), "value")
    with pytest.raises(KeyError, match=r"keys: \['a'\]"):
        column_reader({"a": 1}, "value")
    with pytest.raises(TypeError, match="cannot read column 'value' from a bytes"):
        column_reader(b"raw", "value")


def test_chunks_split_rows_into_columns():
    rows = [Row(k=f"k{i}", v=b"v%d" % i, h=[("n", str(i))], p=i % 2, t=i) for i in range(5)]
    spec = ColumnSpec("v", "k", "h", "p", "t")
    got = list(chunks(iter(rows), spec, 2))
    assert [len(c) for c in got] == [2, 2, 1]
    assert got[1].values == [b"v2", b"v3"]
    assert got[1].keys == [b"k2", b"k3"]
    assert got[1].headers == [[("n", b"2")], [("n", b"3")]]
    assert got[1].partitions == [0, 1]
    assert got[1].timestamps == [2, 3]
    assert list(chunks(iter([]), spec, 2)) == []
    only_values = list(chunks([Row(value="a"), Row(value=None)], ColumnSpec(), 10))
    assert only_values[0].values == [b"a", None]
    assert only_values[0].keys is None and only_values[0].headers is None
    with pytest.raises(TypeError, match="column 'p': a partition must be an integer >= 0"):
        list(chunks([Row(value=b"x", p=-3)], ColumnSpec(partition_col="p"), 10))


def test_by_partition_keeps_order_inside_groups():
    cols = Columns(values=[b"a", b"b", b"c", b"d"], keys=[b"1", b"2", b"3", b"4"],
                   partitions=[1, 0, 1, -1])
    groups = [(p, c.values, c.keys) for p, c in cols.by_partition()]
    assert groups == [(1, [b"a", b"c"], [b"1", b"3"]), (0, [b"b"], [b"2"]), (-1, [b"d"], [b"4"])]
    plain = Columns(values=[b"a"])
    assert [(p, c) for p, c in plain.by_partition()] == [(-1, plain)]


def test_packed_from_arrow_with_nulls_offset_slices_and_large_binary():
    arr = pa.array([b"ab", None, b"", b"cde"], pa.binary())
    data, offsets, nulls = packed(arr)
    assert offsets.dtype == np.int64 and list(offsets) == [0, 2, 2, 2, 5]
    assert list(nulls) == [False, True, False, False]
    assert bytes(data)[offsets[3]:offsets[4]] == b"cde"
    data, offsets = packed(arr.slice(2, 2))
    assert [bytes(data)[a:b] for a, b in zip(offsets[:-1], offsets[1:], strict=True)] == [b"", b"cde"]
    data, offsets = packed(pa.array([b"x", b"yz"], pa.large_binary()))
    assert list(offsets) == [0, 1, 3]
    # what packed() yields encodes to exactly the records it came from
    values = packed(arr)
    [batch] = decode_batches(encode_batch(values, keys=packed(pa.array([b"k"] * 4))))
    assert [r.value for r in batch.records()] == [b"ab", None, b"", b"cde"]


def test_spark_arrow_from_a_record_batch_view():
    headers = [[("a", b"1")], None, [("b", None), ("c", b"")]]
    raw = encode_batch([b"v0", None, b"v2"], keys=[None, b"k1", b"k2"],
                       timestamps=[1000, 2000, 3000], headers=headers, base_offset=40)
    segments = decode_partition(raw, 40).segments
    view = RecordBatchView([(0, 3, s) for s in segments], ["tp"], with_headers=True)
    [out] = spark_arrow(view, 1, 3, include_headers=True)
    assert out.schema.names == ["key", "value", "topic", "partition", "offset", "timestamp",
                                "timestampType", "headers"]
    assert out.column("key").to_pylist() == [b"k1", b"k2"]
    assert out.column("value").to_pylist() == [None, b"v2"]
    assert out.column("topic").type == pa.string()
    assert out.column("topic").to_pylist() == ["tp", "tp"]
    assert out.column("partition").type == pa.int32()
    assert out.column("partition").to_pylist() == [3, 3]
    assert out.column("offset").to_pylist() == [41, 42]
    assert out.column("timestamp").type == pa.timestamp("us", tz="UTC")
    assert out.column("timestamp").cast(pa.int64()).to_pylist() == [2_000_000, 3_000_000]
    assert out.column("timestampType").type == pa.int32()
    assert out.column("timestampType").to_pylist() == [0, 0]
    assert out.column("headers").to_pylist() == [
        None, [{"key": "b", "value": None}, {"key": "c", "value": b""}]]
    [plain] = spark_arrow(RecordBatchView([(0, 3, s) for s in segments], ["tp"]), 0, 3)
    assert "headers" not in plain.schema.names
    assert plain.column("key").to_pylist() == [None, b"k1", b"k2"]


def test_arrow_partition_groups_keep_order_inside_each_partition():
    batch = pa.RecordBatch.from_arrays(
        [pa.array([b"a", b"b", b"c", b"d", b"e"]), pa.array([2, 0, 2, None, 0], pa.int32())],
        names=["value", "partition"])
    groups = [(t, p, g.column("value").to_pylist())
              for t, p, g in arrow_partition_groups(batch, "t")]
    assert groups == [("t", -1, [b"d"]), ("t", 0, [b"b", b"e"]), ("t", 2, [b"a", b"c"])]
    plain = pa.RecordBatch.from_arrays([pa.array([b"x"])], names=["value"])
    assert arrow_partition_groups(plain, "t") == [("t", -1, plain)]
    assert arrow_partition_groups(plain.slice(0, 0), "t") == []


def test_arrow_partition_groups_by_topic_column():
    batch = pa.RecordBatch.from_arrays(
        [pa.array([b"a", b"b", b"c", b"d"]), pa.array(["x", "y", "x", "y"]),
         pa.array([1, 1, 0, 1], pa.int32())], names=["value", "topic", "partition"])
    groups = [(t, p, g.column("value").to_pylist())
              for t, p, g in arrow_partition_groups(batch)]
    assert groups == [("x", 0, [b"c"]), ("x", 1, [b"a"]), ("y", 1, [b"b", b"d"])]
    assert [t for t, _, _ in arrow_partition_groups(batch, "z")] == ["z", "z"]
    with pytest.raises(ValueError, match="'topic' option"):
        arrow_partition_groups(batch.drop_columns(["topic"]))


def test_coalesced_joins_small_batches_in_order_and_passes_large_ones_uncopied():
    def batch(lo: int, hi: int) -> pa.RecordBatch:
        return pa.RecordBatch.from_arrays(
            [pa.array([b"%d" % i for i in range(lo, hi)]),
             pa.array([b"k%d" % i if i % 3 else None for i in range(lo, hi)])],
            names=["value", "key"])

    small = [batch(0, 4), batch(4, 7), batch(7, 9), batch(9, 14), batch(14, 15)]
    big = batch(15, 40)
    out = list(coalesced([*small, big, batch(40, 41)], rows=8, nbytes=1 << 20))
    assert [b.num_rows for b in out] == [9, 6, 25, 1]
    assert out[2] is big  # large enough alone: not copied
    joined = pa.Table.from_batches(out)
    assert joined.column("value").to_pylist() == [b"%d" % i for i in range(41)]
    assert joined.column("key").to_pylist() == [b"k%d" % i if i % 3 else None
                                                for i in range(41)]
    # each joined batch is one contiguous batch that packed() reads as one column
    data, offsets, nulls = packed(out[0].column("key"))
    assert offsets.tolist()[:3] == [0, 0, 2] and nulls.tolist()[:4] == [True, False, False, True]
    # the byte bound joins fewer rows; a batch over it alone ends what is pending first
    sizes = [b.num_rows for b in coalesced(small, rows=1000, nbytes=small[0].nbytes + 1)]
    assert sizes == [7, 2, 5, 1]
    assert list(coalesced([], rows=8)) == []
    empty = batch(0, 0)
    assert [b.num_rows for b in coalesced([empty, empty], rows=8)] == [0]


_NO_PANDAS = """
import sys
import numpy as np
import pyarrow as pa
from kafka_fast.consumer.batch_view import RecordBatchView
from kafka_fast.consumer.fetch_decode import decode_partition
from kafka_fast.records import encode_batch
from kafka_fast.spark.reader import spark_arrow
from kafka_fast.spark.writer import ArrowPartitionWriter, arrow_partition_groups

raw = encode_batch([b"v0", b"v1", b"v2"], keys=[b"k0", None, b"k2"], timestamps=[5, 6, 7],
                   base_offset=9)
segs = decode_partition(raw, 9).segments
one = spark_arrow(RecordBatchView([(0, 1, s) for s in segs], ["a"]), 0, 3)[0]
two = spark_arrow(RecordBatchView([(1, 2, s) for s in segs], ["a", "bb"]), 1, 3)[0]
table = RecordBatchView([(0, 4, s) for s in segs], ["c"]).to_arrow()
batch = pa.RecordBatch.from_arrays(
    [pa.Array.from_buffers(pa.binary(), 3, [None, pa.py_buffer(np.array([0, 1, 2, 3], np.int32)),
                                            pa.py_buffer(b"xyz")]),
     pa.Array.from_buffers(pa.int32(), 3, [None, pa.py_buffer(np.array([1, 0, 1], np.int32))])],
    names=["value", "partition"])
groups = [(t, p, g.column("value").to_pylist()) for t, p, g in arrow_partition_groups(batch, "t")]
assert one.column("partition").to_pylist() == [1, 1, 1]
assert one.column("offset").to_pylist() == [9, 10, 11]
assert one.column("timestamp").cast(pa.int64()).to_pylist() == [5000, 6000, 7000]
assert one.column("timestampType").to_pylist() == [0, 0, 0]
assert one.column("key").to_pylist() == [b"k0", None, b"k2"]
assert two.column("topic").to_pylist() == ["bb", "bb"]
assert two.column("offset").to_pylist() == [10, 11]
assert table.column("topic").to_pylist() == ["c"] * 3
assert table.column("partition").to_pylist() == [4] * 3
assert table.column("timestamp").cast(pa.int64()).to_pylist() == [5, 6, 7]
assert groups == [("t", 0, [b"y"]), ("t", 1, [b"x", b"z"])], groups
print("pandas" in sys.modules)
"""


def test_the_arrow_paths_do_not_import_pandas():
    """A Spark Python worker's first read or write paid pandas' import (0.6-0.9 CPU s) when
    ``pyarrow.array`` was used: the read and write paths build Arrow arrays without it."""
    import subprocess
    import sys

    out = subprocess.run([sys.executable, "-c", _NO_PANDAS], capture_output=True, text=True,
                         check=False)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "False"
